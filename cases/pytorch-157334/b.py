"""Efficient: channels_last convolutions on the NHWC data as it is."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run(channels_last=True)
