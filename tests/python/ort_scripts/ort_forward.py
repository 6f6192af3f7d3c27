"""One ONNX Runtime forward pass of the exported tiny GPT-2 (an unmodified
script as a user would write it; recorded by the test). The ids are the same
as gpt2_tiny.input_ids(), saved by the exporter's caller as .npy."""

import sys

import numpy as np
import onnxruntime as ort

options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.add_session_config_entry("session.intra_op.allow_spinning", "0")
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
session.run(None, {"input_ids": np.load(sys.argv[2])})
