"""Wasteful: the session is created with graph_optimization_level=ORT_DISABLE_ALL, so every run executes the
graph as exported: the weight Transposes (constant subgraphs) run on every call and LayerNorm/GELU stay
decomposed into a dozen elementwise kernels per layer."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnxruntime as ort
from common import serve

options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
serve(options)
