"""Wasteful: NHWC data made contiguous NCHW before and NHWC after every convolution."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run(channels_last=False)
