"""Efficient: the chunks' features are collected in a list and concatenated once after the loop."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import encoder_and_chunks, report

encoder, chunks = encoder_and_chunks()
parts = []
with torch.no_grad():
    for chunk in chunks:
        parts.append(encoder(chunk))
    features = torch.cat(parts)
report(features)
