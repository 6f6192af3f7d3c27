"""The Keras side (TensorFlow backend): a subclassed keras.Model MLP whose hidden layers are Dense →
LayerNormalization → ReLU. Keras 3's LayerNormalization has no fused kernel on TensorFlow: it runs the moments,
rsqrt, scale and shift as separate ops, each a pass over the activations (keras-team/keras#20003)."""
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras
import tensorflow as tf
from common import EPS, SIZES, STEPS, weights

tf.config.threading.set_intra_op_parallelism_threads(1)  # one thread per side, as b.py (README)
tf.config.threading.set_inter_op_parallelism_threads(1)


class MLP(keras.Model):
    def __init__(self):
        super().__init__()
        hidden = SIZES[1:-1]
        # zeros: the weights are set from common.py below, no random draw
        self.fcs = [keras.layers.Dense(o, kernel_initializer="zeros", name=f"fc{i}") for i, o in enumerate(SIZES[1:])]
        self.norms = [keras.layers.LayerNormalization(epsilon=EPS, name=f"ln{i}") for i in range(len(hidden))]
        self.relu = keras.layers.ReLU()

    def build(self, input_shape):
        for fc, i in zip(self.fcs, SIZES[:-1]):
            fc.build((None, i))
        for norm, o in zip(self.norms, SIZES[1:-1]):
            norm.build((None, o))

    def call(self, x):
        for fc, norm in zip(self.fcs, self.norms):
            x = self.relu(norm(fc(x)))
        return self.fcs[-1](x)


dense, norms, x = weights()
model = MLP()
model.build((None, SIZES[0]))
for fc, (w, b) in zip(model.fcs, dense):
    fc.set_weights([w, b])
for norm, (gamma, beta) in zip(model.norms, norms):
    norm.set_weights([gamma, beta])
batches = tf.constant(x)
total = 0.0
for step in range(STEPS):
    y = model(batches[step])
    total += float(tf.reduce_sum(y))
print(round(total, 2))  # the two frameworks agree to rounding (tests/python/test_cases.py)
