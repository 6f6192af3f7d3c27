"""Wasteful: tf.math.count_nonzero as TensorFlow shipped it up to 2.13 (tensorflow#60772): on an input
that is already boolean it still compares every element with zero (a NotEqual over the whole mask)
before casting and summing. TF 2.21 has the fix, so the pre-fix body is written out here."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run, tf


def count_nonzero_before_fix(x):
    zero = tf.zeros([], dtype=x.dtype)
    return tf.reduce_sum(tf.cast(tf.math.not_equal(x, zero), tf.int64))


run(count_nonzero_before_fix)
