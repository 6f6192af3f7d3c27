"""An ONNX Runtime session over a small hand-built MLP graph (named nodes), run 10 times."""
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
nodes, inits, prev = [], [], "x"
for i in range(4):
    inits.append(numpy_helper.from_array(rng.standard_normal((128, 128)).astype(np.float32) * 0.1, f"w{i}"))
    nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"matmul_{i}"))
    nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu_{i}"))
    prev = f"r{i}"
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 128])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [64, 128])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(tempfile.mkdtemp(), "mlp.onnx")
onnx.save(model, path)
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
x = rng.standard_normal((64, 128)).astype(np.float32)
for _ in range(10):
    out = session.run(None, {"x": x})[0]
print(float(out.sum()))
