"""--values on tensors outside host memory (docs/TRACE_FORMAT.md, "Device
fingerprints"): thin wrappers over magneton._torch_hook, where the work is
(src/torch_hook/device_values.cc), and the CUDA graph capture bracket that
keeps device fingerprints out of a capture."""

from __future__ import annotations

from magneton.recorders.torch_recorder import _load_hook


def _view(t):
    return (t.data_ptr(), list(t.shape), list(t.stride()), str(t.dtype).removeprefix("torch."), str(t.device))


def value_path(t) -> str:
    """'host', 'device', 'device (side stream)' or 'none': how --values reads `t`."""
    return _load_hook().value_path(*_view(t))


def fingerprint(t, path: str) -> bytes:
    """The encoded (mfp3) fingerprint --values would record for `t`, through 'host' or 'device'."""
    return _load_hook().fingerprint_values(*_view(t), path)


def decode(data: bytes, kind: str | None = None) -> dict:
    """A fingerprint's fields; `kind` is its fingerprints row's ('mfp3', the default: what this build writes;
    'mfp2' in earlier traces, 'mfp1' in schema version 2 traces)."""
    hook = _load_hook()
    return hook.decode_fingerprint(data) if kind is None else hook.decode_fingerprint(data, kind)


def compare(a: bytes, b: bytes, epsilon: float) -> tuple[bool, str]:
    return _load_hook().compare_fingerprints(a, b, epsilon)


_graph_patches: list[tuple[object, str, object]] = []


def install_graph_capture_bracket(torch, hook) -> None:
    """Brackets torch.cuda.CUDAGraph captures (torch.cuda.graph, cudagraph
    trees, direct capture_begin/capture_end): reading values during a capture
    would synchronise a capturing stream and break it, so device fingerprints
    are skipped meanwhile (counted in meta recorder.device_fingerprints_skipped)."""
    graph = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    if graph is None or _graph_patches:
        return
    begin, end = graph.capture_begin, graph.capture_end

    def capture_begin(self, *args, **kwargs):
        hook.note_graph_capture(True)
        try:
            return begin(self, *args, **kwargs)
        except BaseException:
            hook.note_graph_capture(False)
            raise

    def capture_end(self, *args, **kwargs):
        try:
            return end(self, *args, **kwargs)
        finally:
            hook.note_graph_capture(False)

    capture_begin.__wrapped__ = begin
    capture_end.__wrapped__ = end
    _graph_patches.extend([(graph, "capture_begin", begin), (graph, "capture_end", end)])
    graph.capture_begin = capture_begin
    graph.capture_end = capture_end


def uninstall_graph_capture_bracket() -> None:
    for owner, name, original in reversed(_graph_patches):
        setattr(owner, name, original)
    _graph_patches.clear()
