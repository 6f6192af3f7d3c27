"""Wasteful: the ResNeXt-style conv stack runs with oneDNN (MKLDNN) switched off, so every conv2d falls back to
PyTorch's native im2col + GEMM kernel (aten::_slow_conv2d_forward)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import classify, model_and_images

net, images = model_and_images()
with torch.backends.mkldnn.flags(enabled=False):
    classify(net, images)
