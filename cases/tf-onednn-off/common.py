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
    finite = True
    for _ in range(STEPS):
        y = model(x)
        finite = finite and bool(tf.reduce_all(tf.math.is_finite(tf.cast(y, tf.float32))))
    # Eigen's and oneDNN's bfloat16 kernels round differently (output sums about 1% apart), so the two runs are
    # compared on what they produced, not on bits.
    print("outputs", tuple(y.shape), "x", STEPS, "finite" if finite else "NOT FINITE")
