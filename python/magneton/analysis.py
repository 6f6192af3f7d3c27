"""The notebook API: ``magneton.open`` a trace, ``magneton.diff`` two runs.

Thin over the C++ analysis (``magneton._analysis``): the tables and reports
are built there; this module only chooses their Python shape. ``import
magneton`` happens in every traced process, so the analysis module is
imported here only when one of these functions is called, never at import
time (tests/python/test_traced_process.py).
"""

from __future__ import annotations

import html as _html
import json as _json
import os as _os

__all__ = ["open", "diff", "default_options", "Trace", "Diff", "Record"]


def _pandas(as_frames):
    """pandas when tables should be DataFrames; None for plain lists of dicts."""
    if as_frames is False:
        return None
    try:
        import pandas
    except ImportError:
        if as_frames:
            raise ImportError("as_frames=True needs pandas (pip install pandas); "
                              "as_frames=None gives lists of dicts without it") from None
        return None
    return pandas


def _path(p) -> str:
    if not isinstance(p, (str, _os.PathLike)):
        raise TypeError(f"a trace is named by a path, got {type(p).__name__}")
    return _os.fspath(p)


class Trace:
    """One recorded run.

    ``ops``, ``tensors``, ``energy`` and ``config`` are pandas DataFrames when
    pandas is installed (or ``as_frames=True``), lists of dicts otherwise.
    Units are in the column names (``start_ns``, ``duration_ns``,
    ``energy_uj``); ids of "none" (a top-level op's ``parent_id``, a model
    input's ``producer_op_id``) are -1. ``energy`` holds one row per op in the
    domain ``energy_domain`` (the one with the most energy unless ``domain``
    was given), each row with its ``provenance``: ``"measured"`` or
    ``"estimated"`` -- an estimate is never a measurement. ``device_activities``
    holds one row per GPU kernel, copy or fill with the op that launched it and
    its energy in its GPU's domain (NaN without samples of that GPU;
    docs/ENERGY.md, "GPU attribution"); a kernel a CUDA graph ran also has its
    ``graph_id`` and ``graph_node_id`` and the captured op that created its node
    (``captured_op_id``, ``captured_op_name``; -1 and "" otherwise;
    docs/TRACE_FORMAT.md, "CUDA graphs").
    """

    def __init__(self, tables: dict, pandas):
        self.path: str = tables["path"]
        #: label, command_line, host, cwd, engine, start_unix_ns, versions; and extra: every other meta key as the
        #: trace stores it (energy.*, window.*, gpu.*, recorder.*; docs/TRACE_FORMAT.md "meta")
        self.meta: dict = tables["meta"]
        #: domain, provenance, domains, total_uj, attributed_uj, unattributed_uj, job_uj, window_*_ns, note
        self.energy_info: dict = tables["energy_info"]
        self.energy_domain = self.energy_info["domain"]
        self.energy_provenance = self.energy_info["provenance"]
        shape = pandas.DataFrame if pandas is not None else (lambda rows: rows)
        self.ops = shape(tables["ops"])
        self.tensors = shape(tables["tensors"])
        self.energy = shape(tables["energy"])
        self.config = shape(tables["config"])
        self.device_activities = shape(tables["device_activities"])

    def __repr__(self) -> str:
        energy = (f"{self.energy_info['total_uj'] / 1e6:.3f} J {self.energy_provenance} in {self.energy_domain}"
                  if self.energy_domain else "no energy")
        return f"<magneton.Trace {self.path!r}: {len(self.ops)} ops, {len(self.tensors)} tensors, {energy}>"


def open(path, domain: str | None = None, as_frames: bool | None = None) -> Trace:  # noqa: A001 (magneton.open)
    """Reads a trace (``.mtrace``) into tables; raises with the reader's message when it cannot.

    domain: the energy domain of the ``energy`` table (None: the one with the most energy).
    as_frames: None -- DataFrames if pandas is installed; True -- DataFrames or ImportError; False -- lists of dicts.
    """
    from magneton import _analysis

    pandas = _pandas(as_frames)
    # Columns for pandas (one list per column), rows otherwise: both built in C++.
    tables = _analysis.read_tables(_path(path), domain or "", as_rows=pandas is None)
    return Trace(tables, pandas)


def _wrap(value):
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Record:
    """A JSON object of the diff report (docs/REPORT_FORMAT.md) with attribute access:
    ``finding.root_cause.name``, ``finding.a.energy_uj``. ``to_dict()`` gives the JSON back."""

    __slots__ = ("_data",)

    def __init__(self, data: dict):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name):
        if name.startswith("__"):  # copy/pickle probing for hooks, before _data may exist
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"no field {name!r} here (fields: {', '.join(self._data)})") from None

    def __getitem__(self, name):
        return _wrap(self._data[name])

    def __setattr__(self, name, value):
        raise AttributeError("a report record is read-only")

    def __contains__(self, name) -> bool:
        return name in self._data

    def __eq__(self, other) -> bool:
        return isinstance(other, Record) and self._data == other._data

    __hash__ = None

    def __dir__(self):
        return list(self._data)

    def to_dict(self) -> dict:
        return self._data

    def __repr__(self) -> str:
        return f"Record({self._data!r})"


class Diff:
    """The report of ``magneton diff`` on two runs.

    ``findings``: Records with the fields of the JSON report's findings; ``json``: the whole report as a dict;
    ``text``: the terminal report (``verbose_text``: with every finding's evidence); ``html``: the
    self-contained HTML report, shown inline in Jupyter.
    """

    def __init__(self, result: dict):
        self.domain: str = result["domain"]
        self.json: dict = _json.loads(result["json"])
        self.text: str = result["text"]
        self.verbose_text: str = result["verbose_text"]
        self.html: str = result["html"]
        self.findings: list[Record] = [Record(f) for f in self.json["findings"]]

    def _repr_html_(self) -> str:
        # The report is a whole document with its own CSP and styles: in an
        # iframe's srcdoc they apply to it alone, not to the notebook, and the
        # empty sandbox gives it no scripts and no access to the notebook.
        return ('<iframe sandbox="" style="width:100%;height:640px;border:1px solid #ddd" '
                f'srcdoc="{_html.escape(self.html, quote=True)}"></iframe>')

    def __repr__(self) -> str:
        return self.text


def _runs(side) -> list[str]:
    if isinstance(side, (list, tuple)):
        if not side:
            raise ValueError("a side of a diff needs at least one trace")
        return [_path(p) for p in side]
    return [_path(side)]


def default_options() -> dict:
    """The defaults of ``diff``'s options, from their one C++ definition (include/magneton/analysis_defaults.h):
    ``{tau, epsilon, max_slowdown, min_share, min_same_work_share, leaf_ops}``."""
    from magneton import _analysis

    return dict(_analysis.default_options())


def diff(a, b, tau: float | None = None, epsilon: float | None = None, min_share: float | None = None,
         max_slowdown: float | None = None, min_same_work_share: float | None = None, domain: str | None = None,
         leaf_ops: bool | None = None, rerun: bool = False, progress=None, source_roots=()) -> Diff:
    """``magneton diff a b``: where one run spends more energy than the other for the same results, and why.

    a, b: a trace path, or a list of repeated recordings of each side (paired in order), which gives every
    finding an interval over the runs. The options are the CLI's (docs/DIFF.md); None takes the C++ default,
    the same as ``magneton diff``'s (``default_options()``). Recorded commands are never
    started again unless ``rerun=True`` (the line-level step of the top finding: a trace's command line is
    code, run it only for traces you trust). progress: called with each line the analysis says (re-runs).
    source_roots: folders source snippets may be read from besides the current directory (``--source-root``);
    a trace's own recorded folders count only when it is this user's signed recording. The report lists the
    files it read (``sources_read``).
    """
    from magneton import _analysis

    given = {"tau": tau, "epsilon": epsilon, "max_slowdown": max_slowdown, "min_share": min_share,
             "min_same_work_share": min_same_work_share, "leaf_ops": leaf_ops}
    options = {k: v for k, v in given.items() if v is not None}  # the rest: the binding's C++ defaults
    result = _analysis.diff(_runs(a), _runs(b), domain=domain or "", rerun=rerun, progress=progress,
                            source_roots=[_os.fspath(p) for p in source_roots], **options)
    return Diff(result)
