"""The MLP in Keras (TensorFlow backend), weights copied from common.py, run eagerly."""
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras
import tensorflow as tf
from common import EPS, SIZES, STEPS, weights

dense, norms, x = weights()
layers = [keras.layers.Input((SIZES[0],))]
for i, o in enumerate(SIZES[1:]):
    layers.append(keras.layers.Dense(o, name=f"fc{i}", kernel_initializer="zeros"))  # overwritten below: no random draw
    if i < len(norms):
        layers += [keras.layers.LayerNormalization(epsilon=EPS, name=f"ln{i}"), keras.layers.ReLU(name=f"relu{i}")]
model = keras.Sequential(layers)
for i, (w, b) in enumerate(dense):
    model.get_layer(f"fc{i}").set_weights([w, b])
for i, (gamma, beta) in enumerate(norms):
    model.get_layer(f"ln{i}").set_weights([gamma, beta])
for step in range(STEPS):
    y = model(tf.constant(x[step]))
print("sum", round(float(tf.reduce_sum(y)), 3))
