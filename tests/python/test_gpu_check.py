"""bench/gpu_check is the one script a device session runs (CONTRIBUTING.md,
"Benchmarks"). It cannot run here; what can be checked is that it parses,
passes shellcheck, that its Python steps compile, and that without a GPU it
measures nothing and says so."""

import glob
import os
import py_compile
import shutil
import subprocess

import pytest

from conftest import REPO

SCRIPT = os.path.join(REPO, "bench", "gpu_check")


def _has_gpu():
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def test_the_script_and_its_steps_are_well_formed(tmp_path):
    assert subprocess.run(["bash", "-n", SCRIPT]).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    r = subprocess.run(["shellcheck", SCRIPT], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    steps = glob.glob(os.path.join(REPO, "bench", "gpu", "*.py")) + [os.path.join(REPO, "bench", "overhead")]
    assert len(steps) >= 4
    for path in steps:
        py_compile.compile(path, cfile=str(tmp_path / "c.pyc"), doraise=True)


def test_without_a_gpu_it_measures_nothing_and_says_so(tmp_path):
    if _has_gpu():
        pytest.skip("a GPU is visible: the script would run for minutes (run bench/gpu_check itself)")
    r = subprocess.run([SCRIPT], capture_output=True, text=True, env={**os.environ, "OUT": str(tmp_path)}, timeout=60)
    assert r.returncode == 2
    assert "no NVIDIA GPU visible here" in r.stderr and "Nothing was measured" in r.stderr
    assert not os.path.exists(tmp_path / "gpu_check.txt")
