"""Efficient: tf.math.count_nonzero after PR #60782: a boolean input is cast and summed directly."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run, tf

run(tf.math.count_nonzero)
