"""The known-case suite: every case folder is complete, and its two runs are
plain scripts (no magneton) that compute the same result. GPU cases (expected.json
"needs_gpu") must say so and exit 77 on a machine without a CUDA GPU; cases with
their own library versions (env.json) run in tests/python/test_case_env.py."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, require

CASES = os.path.join(REPO, "cases")
IDS = sorted(d for d in os.listdir(CASES) if os.path.isdir(os.path.join(CASES, d)))
FIELDS = {"id", "category", "waste_side", "region", "root_cause", "fix", "upstream", "needs_gpu"}
NEEDS_GPU_EXIT = 77  # the scripts' exit code for "needs a CUDA GPU"
EXTRA_FRAMEWORK = {"diffusers-12131": "diffusers", "tensorflow-60772": "tensorflow",  # beyond torch and transformers
                   "tf-onednn-off": "tensorflow", "tf-vs-torch-layernorm": "tensorflow"}


def root_cause_kinds():
    """The report format's kinds, from the one C++ name table (src/diagnose/root_cause_kind.h)."""
    from magneton import _analysis

    return set(_analysis.root_cause_kinds())


def expected(case):
    return json.load(open(os.path.join(CASES, case, "expected.json")))


def has_env(case):
    return os.path.exists(os.path.join(CASES, case, "env.json"))


def cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.parametrize("case", IDS)
def test_case_folder_is_complete(case):
    folder = os.path.join(CASES, case)
    for name in ("a.py", "b.py", "expected.json", "README.md"):
        assert os.path.exists(os.path.join(folder, name)), name
    e = expected(case)
    assert FIELDS <= set(e), FIELDS - set(e)
    assert e["id"] == case
    assert e["category"] in {"M", "A", "R", "control"}
    assert isinstance(e["needs_gpu"], bool)
    if e["category"] != "control":
        assert e["waste_side"] in {"a", "b"}
        # ROOT_CAUSE_FORMAT (docs/EVALUATION.md): scored on kind and name only.
        rc = e["root_cause"]
        assert rc["kind"] in root_cause_kinds(), rc
        assert rc["name"] and rc["description"], rc
        assert "variable" not in rc, rc
        assert all(isinstance(a, str) and a for a in rc.get("aliases", [])), rc
    for script in ("a.py", "b.py"):
        assert "magneton" not in open(os.path.join(folder, script)).read()
    if has_env(case):
        env = json.load(open(os.path.join(folder, "env.json")))
        assert set(env) <= {"a", "b"} and env, env
        for reqs in env.values():
            # torch always comes from the main environment (eval pins it; env.json may not name it).
            assert all(isinstance(r, str) and r and not re.match(r"torch($|[=<>!~\[ ;])", r) for r in reqs), reqs


def start_script(case, script):
    return subprocess.Popen([sys.executable, os.path.join(CASES, case, script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))


def finish_script(proc):
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("case", IDS)
def test_both_runs_compute_the_same_result(case):
    require("torch")
    if has_env(case):
        pytest.skip("runs with its own library versions (env.json): tests/python/test_case_env.py, "
                    "MAGNETON_SLOW_TESTS=1")
    # A GPU case that also runs on a CPU (its effect is too small to detect
    # there, README.md) is checked on the CPU like any other.
    gpu_case = expected(case)["needs_gpu"] and not (expected(case).get("cpu_runnable") and not cuda_available())
    if not gpu_case:
        require("transformers")
        if case in EXTRA_FRAMEWORK:
            require(EXTRA_FRAMEWORK[case])
        if any("import jax" in open(os.path.join(CASES, case, s)).read() for s in ("a.py", "b.py")):
            require("jax")
    outputs = []
    # Both sides at once: most of each run is the interpreter importing torch and the frameworks, one CPU each.
    procs = {script: start_script(case, script) for script in ("a.py", "b.py")}
    try:
        results = {script: finish_script(p) for script, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    for script in ("a.py", "b.py"):
        r = results[script]
        if gpu_case and not cuda_available():
            # Without a GPU the script must stop early and say why, not fail or fake a result.
            assert r.returncode == NEEDS_GPU_EXIT, (r.returncode, r.stderr[-2000:])
            assert "needs a CUDA GPU: " in r.stderr, r.stderr[-2000:]
            continue
        if gpu_case and r.returncode == NEEDS_GPU_EXIT:
            pytest.skip(f"{case}/{script} cannot run on this GPU machine: {r.stderr.strip()[-300:]}")
        assert r.returncode == 0, r.stderr[-2000:]
        outputs.append(r.stdout.strip().splitlines()[-1])
    if not outputs:
        return  # a GPU case on a machine without one: checked above
    a, b = outputs
    try:
        assert float(a) == pytest.approx(float(b), rel=1e-3, abs=1e-4)
    except ValueError:
        assert a == b
