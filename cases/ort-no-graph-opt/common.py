"""A 6-layer pre-LayerNorm MLP stack as ONNX, built node by node the way exporters write it: LayerNorm and erf-GELU
decomposed into elementwise ops, and Linear weights stored [out, in] and transposed in the graph (a Transpose
of an initializer, i.e. a constant subgraph). Random weights, fixed seed; no torch."""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

D, LAYERS = 384, 6


def build_model():
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
        return name

    for name, value in (("eps", 1e-5), ("two", 2.0), ("half", 0.5), ("one", 1.0), ("sqrt2", np.sqrt(2.0))):
        init(name, value)
    x = "x"
    for layer in range(LAYERS):
        p = f"/layers.{layer}"

        def node(op, inputs, name, **attrs):
            out = f"{p}/{name}_output_0"
            nodes.append(helper.make_node(op, inputs, [out], name=f"{p}/{name}", **attrs))
            return out

        mean = node("ReduceMean", [x], "norm/ReduceMean", axes=[-1])
        centred = node("Sub", [x, mean], "norm/Sub")
        var = node("ReduceMean", [node("Pow", [centred, "two"], "norm/Pow")], "norm/ReduceMean_1", axes=[-1])
        std = node("Sqrt", [node("Add", [var, "eps"], "norm/Add")], "norm/Sqrt")
        h = node("Div", [centred, std], "norm/Div")
        h = node("Mul", [h, init(f"{p}.norm.weight", np.ones(D))], "norm/Mul")
        h = node("Add", [h, init(f"{p}.norm.bias", np.zeros(D))], "norm/Add_1")
        for fc in ("fc1", "fc2"):
            w = node("Transpose", [init(f"{p}.{fc}.weight", rng.standard_normal((D, D)) * 0.05)], f"{fc}/Transpose",
                     perm=[1, 0])
            h = node("Add", [node("MatMul", [h, w], f"{fc}/MatMul"), init(f"{p}.{fc}.bias", np.zeros(D))], f"{fc}/Add")
            if fc == "fc1":  # GELU(h) = h * (erf(h / sqrt 2) + 1) * 0.5
                g = node("Add", [node("Erf", [node("Div", [h, "sqrt2"], "act/Div")], "act/Erf"), "one"], "act/Add")
                h = node("Mul", [node("Mul", [h, g], "act/Mul"), "half"], "act/Mul_1")
        x = node("Add", [x, h], "residual/Add")
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", D])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", D])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def serve(options, requests=80):
    """Online inference: many small batches (16 rows) through one session."""
    session = ort.InferenceSession(build_model(), options, providers=["CPUExecutionProvider"])
    batch = np.random.default_rng(1).standard_normal((16, D)).astype(np.float32)
    total = 0.0
    for _ in range(requests):
        total += float(np.abs(session.run(None, {"x": batch})[0]).mean())
    print(round(total, 3))
