"""Exports the tiny GPT-2 to ONNX (not recorded): python export_onnx.py out.onnx"""

import sys

import torch

import gpt2_tiny

model = gpt2_tiny.Logits(gpt2_tiny.build())
torch.onnx.export(model, (gpt2_tiny.input_ids(),), sys.argv[1], dynamo=False, input_names=["input_ids"],
                  output_names=["logits"], opset_version=17)
