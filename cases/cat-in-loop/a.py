"""Wasteful: the features of each chunk are appended by concatenating them to everything gathered so far, so every
step copies the whole (growing) result again: quadratic in the number of chunks."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import encoder_and_chunks, report

encoder, chunks = encoder_and_chunks()
features = torch.empty(0, 512)
with torch.no_grad():
    for chunk in chunks:
        features = torch.cat([features, encoder(chunk)])
report(features)
