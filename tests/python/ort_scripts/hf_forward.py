"""One HF Transformers forward pass of the tiny GPT-2, recorded with values:
python hf_forward.py out.mtrace. Recorded in code (magneton.record) around the
forward only, so the weight initialisation's ops stay out of the trace."""

import sys

import torch

import gpt2_tiny
import magneton

model = gpt2_tiny.Logits(gpt2_tiny.build())
ids = gpt2_tiny.input_ids()
with magneton.record(sys.argv[1], values=True), torch.no_grad():
    model(ids)
