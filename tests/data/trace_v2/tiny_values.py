import torch
torch.manual_seed(0)
torch.set_num_threads(1)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(3, 4)
for _ in range(2):
    y = net(x).softmax(dim=-1)
    x = torch.cat([y, y], dim=1).t().contiguous().t()[:, :4] * 0.5
print(float(y.sum()))
