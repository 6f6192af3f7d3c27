"""Efficient: the same session with ONNX Runtime's default graph optimizations (ORT_ENABLE_ALL): constant
folding of the transposed weights, LayerNormalization and GELU fusion."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnxruntime as ort
from common import serve

options = ort.SessionOptions()
serve(options)
