import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
MODEL = BertModel(BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=4, intermediate_size=256,
                             vocab_size=1000)).eval()
gen = torch.Generator().manual_seed(1)
LENGTHS = [int(x) for x in torch.randint(8, 256, (64,), generator=gen)]
SENTENCES = [torch.randint(1, 1000, (n,), generator=gen) for n in LENGTHS]
BATCH = 8


def encode(order):
    out = {}
    with torch.no_grad():
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            longest = max(LENGTHS[j] for j in idx)
            ids = torch.zeros(len(idx), longest, dtype=torch.long)
            mask = torch.zeros(len(idx), longest, dtype=torch.long)
            for row, j in enumerate(idx):
                ids[row, :LENGTHS[j]] = SENTENCES[j]
                mask[row, :LENGTHS[j]] = 1
            hidden = MODEL(input_ids=ids, attention_mask=mask).last_hidden_state
            for row, j in enumerate(idx):
                out[j] = hidden[row, 0]
    return torch.stack([out[j] for j in range(len(LENGTHS))])
