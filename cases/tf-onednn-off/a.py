"""Wasteful: TF_ENABLE_ONEDNN_OPTS=0 (set before TensorFlow is imported, as TF's start-up message
suggests for bit-exact results): bfloat16 matmuls run on Eigen's kernels instead of oneDNN's."""
import os, sys
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve()
