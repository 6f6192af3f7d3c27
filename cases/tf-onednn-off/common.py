import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up banner off stderr
import keras
import numpy as np
import tensorflow as tf

STEPS = 10


def serve():
    """A bfloat16 (mixed precision) Keras MLP answering batches of 256 eagerly."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((1024,))] +
                             [keras.layers.Dense(1024, activation="relu", name=f"fc{i}") for i in range(4)] +
                             [keras.layers.Dense(16, name="head")])
    x = tf.constant(np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32))
    total = 0.0
    for _ in range(STEPS):
        total += float(tf.reduce_sum(tf.cast(model(x), tf.float32)))
    print("sum", round(total, 3))
