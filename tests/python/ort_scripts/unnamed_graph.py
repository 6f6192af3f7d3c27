"""A hand-built ONNX graph whose nodes have no names, run once in ONNX
Runtime (an unmodified script; recorded by the test):

    python unnamed_graph.py {path,external,bytes,proto} {disable_all,enable_all} {base,extra} WORKDIR

path: InferenceSession(file); external: the same with the weights in an
external data file beside it; bytes: the file's bytes; proto: the in-memory
ModelProto's SerializeToString(). `extra` adds one node (a second Relu, same
values) the base graph does not run. Weights and input come from fixed seeds,
so every process builds the same model and feeds the same input."""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

kind, level, variant, workdir = sys.argv[1:5]
rng = np.random.default_rng(0)
init = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name=name)
        for name, shape in (("W1", (8, 16)), ("B1", (16,)), ("W2", (16, 4)))]
nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),  # no name=: unnamed, as hand-built graphs are
         helper.make_node("Add", ["h", "B1"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["a"])]
if variant == "extra":
    nodes.append(helper.make_node("Relu", ["a"], ["a2"]))
nodes += [helper.make_node("MatMul", ["a2" if variant == "extra" else "a", "W2"], ["logits"]),
          helper.make_node("Softmax", ["logits"], ["p"], axis=-1)]
graph = helper.make_graph(nodes, "unnamed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 4])], initializer=init)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(workdir, f"unnamed_{variant}.onnx")
if kind == "external":
    onnx.save(model, path, save_as_external_data=True, location="weights.bin", size_threshold=0)
else:
    onnx.save(model, path)

if kind in ("path", "external"):
    source = path
elif kind == "bytes":
    with open(path, "rb") as f:
        source = f.read()
else:
    source = model.SerializeToString()
options = ort.SessionOptions()
options.graph_optimization_level = {"disable_all": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                                    "enable_all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
options.intra_op_num_threads = 1
session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
print(session.run(None, {"x": x})[0].sum())
assert all(not n.name for n in onnx.load(path).graph.node), "the user's model file must stay unnamed"
# Nothing was written beside the model (the renamed copy lives in magneton's temp dir); the trace is the test's.
written = {f for f in os.listdir(workdir) if not f.startswith("trace.mtrace")}
assert written == {os.path.basename(path)} | ({"weights.bin"} if kind == "external" else set()), written
