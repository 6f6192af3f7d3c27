"""Wasteful: the stock single blocks concatenate and split text and image states in every block."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import denoise, model

denoise(model())
