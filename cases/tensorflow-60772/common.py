import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up banner off stderr
import numpy as np
import tensorflow as tf

REPEATS = 8


def masks():
    """Boolean masks as a data pipeline has them (valid-token masks, 8M entries each)."""
    rng = np.random.default_rng(0)
    return [tf.constant(rng.random((2048, 4096)) < 0.3) for _ in range(2)]


def run(count):
    total = 0
    for _ in range(REPEATS):
        for m in masks_cache:
            total += int(count(m))
    print("nonzero", total)


masks_cache = masks()
