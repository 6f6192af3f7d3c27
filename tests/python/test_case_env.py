"""Cases that need their own library versions (env.json, e.g. hf-29206:
transformers 4.38.1 vs 4.39.3): `magneton eval --prepare-envs` builds one cached
virtual environment per side on top of the main one (torch pinned to the main
version), and the two scripts, run in their environments, agree.

Slow (pip installs on first use, then the cache is reused): runs only with
MAGNETON_SLOW_TESTS=1. The environments go to build/test-envs (MAGNETON_ENV_CACHE)."""

import json
import os
import subprocess

import pytest

from conftest import REPO, require, run_cli

CASES = os.path.join(REPO, "cases")
ENV_CASES = sorted(d for d in os.listdir(CASES) if os.path.exists(os.path.join(CASES, d, "env.json")))

pytestmark = pytest.mark.skipif(os.environ.get("MAGNETON_SLOW_TESTS") != "1",
                                reason="builds pip environments (minutes on first use): set MAGNETON_SLOW_TESTS=1")


@pytest.mark.parametrize("case", ENV_CASES)
def test_sides_run_in_their_own_environments_and_agree(case, magneton_bin, tmp_path):
    torch = require("torch")
    cache = os.path.join(REPO, "build", "test-envs")
    r = run_cli("eval", CASES, "--case", case, "--prepare-envs", env={"MAGNETON_ENV_CACHE": cache})
    if r.returncode != 0 and ("Could not find a version" in r.stderr or "NewConnectionError" in r.stderr
                              or "Temporary failure in name resolution" in r.stderr):
        pytest.skip(f"pip cannot reach a package index: {r.stderr.strip()[-300:]}")
    assert r.returncode == 0, r.stderr[-3000:]
    pythons = dict(line.split(" ", 2)[1:] for line in r.stdout.strip().splitlines())
    env = json.load(open(os.path.join(CASES, case, "env.json")))
    outputs = []
    for side in ("a", "b"):
        python = pythons[side]
        if env.get(side):
            assert python.startswith(cache), python  # its own environment, not the main one
            # Reused on the second call, not rebuilt.
            assert os.path.exists(os.path.join(os.path.dirname(os.path.dirname(python)), ".magneton-env-ready"))
        check = subprocess.run([python, "-c", "import torch, transformers; print(torch.__version__)"],
                               capture_output=True, text=True)
        assert check.stdout.strip() == torch.__version__, check.stderr[-1000:]  # torch from the main environment
        run = subprocess.run([python, os.path.join(CASES, case, f"{side}.py")], capture_output=True, text=True,
                             timeout=900, env=dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1"))
        assert run.returncode == 0, run.stderr[-3000:]
        outputs.append(run.stdout.strip().splitlines()[-1])
    assert outputs[0] == outputs[1]
    again = run_cli("eval", CASES, "--case", case, "--prepare-envs", env={"MAGNETON_ENV_CACHE": cache})
    assert again.returncode == 0 and again.stdout == r.stdout
    assert "creating the environment" not in again.stderr  # cached
