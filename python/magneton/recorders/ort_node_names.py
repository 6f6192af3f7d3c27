"""Unique node names for the models magneton hands ONNX Runtime.

ORT's profile names each kernel event after its graph node. A node without a
name (hand-built graphs, some exporters) is profiled as ``<OpType>_<index in
ORT's graph>``, an index the saved optimised graph does not keep, and two
nodes sharing a name cannot be told apart; either way the ingest cannot link
the event to its node's tensors. So before a recorded session is created,
every unnamed node, and every repeat of a name, gets a unique name in a copy
of the model (never in the user's file or bytes). The names depend only on
the model, so two recordings of the same model get the same names.
See docs/ARCHITECTURE.md ("ONNX Runtime").
"""

from __future__ import annotations

import os

# ORT-format models (flatbuffers) carry this file identifier at byte 4; they
# are not ONNX protobuf and keep their names as ORT saved them.
_ORT_FORMAT_ID = b"ORTM"


def _graphs(graph, prefix=""):
    """The graph and every subgraph below it, outer first, each with the
    prefix its generated names get ("" at the top, "<node>/<attr>/" below)."""
    yield graph, prefix
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
            for k, sub in enumerate(subgraphs):
                tag = attr.name if len(subgraphs) == 1 else f"{attr.name}.{k}"
                yield from _graphs(sub, f"{prefix}{node.name}/{tag}/")


def name_nodes(model) -> int:
    """Names every unnamed node of `model` (an onnx.ModelProto, changed in
    place) ``<prefix><OpType>_<index>`` — ORT's own spelling for an unnamed
    node, so the trace reads like ORT's profile — and renames repeats of a
    name (the first node keeps it). Returns how many nodes were renamed."""
    taken = {n.name for g, _ in _graphs(model.graph) for n in g.node if n.name}
    claimed = set()
    renamed = 0
    # _graphs walks lazily, so a subgraph's prefix uses its parent's new name.
    for graph, prefix in _graphs(model.graph):
        for i, node in enumerate(graph.node):
            if node.name and node.name not in claimed:
                claimed.add(node.name)
                continue
            base = f"{prefix}{node.op_type}_{i}" if not node.name else f"{node.name}_{i}"
            name, k = base, 1
            while name in taken or name in claimed:
                name, k = f"{base}_{k}", k + 1
            node.name = name
            claimed.add(name)
            renamed += 1
    return renamed


def _external_bytes(model, base_dir: str) -> int:
    """How many bytes of the model's tensors live in external data files."""
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors

    total = 0
    for tensor in _get_all_tensors(model):
        if tensor.data_location == tensor.EXTERNAL:
            info = ExternalDataInfo(tensor)
            # No length: the tensor runs from its offset to the file's end.
            total += info.length or os.path.getsize(os.path.join(base_dir, info.location)) - (info.offset or 0)
    return total


# A serialised ModelProto cannot exceed 2 GiB.
_PROTO_LIMIT_BYTES = 2**31 - 1


def prepare(path_or_bytes):
    """What to hand InferenceSession instead of `path_or_bytes`, and how many
    nodes were renamed: the input itself when no node needs a name (or the
    model is not ONNX protobuf), else serialised bytes of a renamed copy. A
    model file's external data is read into that copy: ORT refuses data
    reached through a symbolic link out of the model's folder, and onnx
    refuses a file with a second hard link (the user's own onnx.load would
    fail while it exists). Raises ValueError when the copy would pass the
    protobuf limit (2 GiB); the caller then runs the model as given."""
    import onnx

    if isinstance(path_or_bytes, bytes):
        if path_or_bytes[4:8] == _ORT_FORMAT_ID:
            return path_or_bytes, 0
        model = onnx.load_from_string(path_or_bytes)
        renamed = name_nodes(model)
        return (model.SerializeToString() if renamed else path_or_bytes), renamed
    path = os.fspath(path_or_bytes)
    with open(path, "rb") as f:
        if f.read(8)[4:8] == _ORT_FORMAT_ID:
            return path_or_bytes, 0
    model = onnx.load(path, load_external_data=False)
    renamed = name_nodes(model)
    if not renamed:
        return path_or_bytes, 0
    base_dir = os.path.dirname(os.path.abspath(path))
    external_bytes = _external_bytes(model, base_dir)
    if external_bytes:
        if model.ByteSize() + external_bytes > _PROTO_LIMIT_BYTES:
            raise ValueError(f"a renamed copy with its {external_bytes} bytes of external data would pass the "
                             "2 GiB protobuf limit")
        onnx.load_external_data_for_model(model, base_dir)
    return model.SerializeToString(), renamed
