"""A small fp16 conv net fed channels-last (N, H, W, C) images, as image pipelines
and JAX/TF code produce them. Either the data is converted to NCHW around every
convolution, or the convolutions run on channels_last memory directly."""
import sys

import torch

BATCH, HW, CHANNELS, BLOCKS, STEPS = 32, 128, 128, 4, 20


def require_cuda():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU: the layout transposes around cuDNN convolutions are the waste measured",
              file=sys.stderr)
        sys.exit(77)


def net():
    torch.manual_seed(0)
    layers = [torch.nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1) for _ in range(BLOCKS)]
    return torch.nn.ModuleList(layers).cuda().half().eval()


def run(channels_last):
    require_cuda()
    convs = net()
    if channels_last:
        convs = convs.to(memory_format=torch.channels_last)
    g = torch.Generator(device="cuda").manual_seed(1)
    x_nhwc = torch.randn(BATCH, HW, HW, CHANNELS, device="cuda", dtype=torch.float16, generator=g)
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    with torch.no_grad():
        for _ in range(STEPS):
            h = x_nhwc
            for conv in convs:
                if channels_last:
                    # a permuted view: NCHW shape with channels-last strides, no copy
                    h = torch.relu(conv(h.permute(0, 3, 1, 2))).permute(0, 2, 3, 1)
                else:
                    h = torch.relu(conv(h.permute(0, 3, 1, 2).contiguous())).permute(0, 2, 3, 1).contiguous()
            total += h.float().norm()
    print(f"{total.item():.5g}")
