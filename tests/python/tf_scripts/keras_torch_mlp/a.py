"""The MLP in Keras (TensorFlow backend), weights copied from common.py, run eagerly."""
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras
import tensorflow as tf
from common import SIZES, STEPS, weights

layers, x = weights()
model = keras.Sequential([keras.layers.Input((SIZES[0],))] +
                         [keras.layers.Dense(o, activation="relu" if i < len(layers) - 1 else None, name=f"fc{i}",
                                             kernel_initializer="zeros")  # overwritten below: no random draw
                          for i, (_, o) in enumerate(zip(SIZES[:-1], SIZES[1:]))])
for layer, (w, b) in zip(model.layers, layers):
    layer.set_weights([w, b])
for step in range(STEPS):
    y = model(tf.constant(x[step]))
print("sum", round(float(tf.reduce_sum(y)), 3))
