"""Efficient: TensorFlow's default on x86 (oneDNN on)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve()
