"""One HF Transformers forward pass of the tiny GPT-2 (recorded by the test)."""

import torch

import gpt2_tiny

model = gpt2_tiny.build()
with torch.no_grad():
    gpt2_tiny.Logits(model)(gpt2_tiny.input_ids())
