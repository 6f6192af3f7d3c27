"""A traced process loads only what recording needs (docs/ARCHITECTURE.md,
"Stages and the analysis session"): recording a torch program maps the
recording core and the torch hook, never the analysis module."""
import subprocess
import sys

from conftest import require

require("torch")

_PROGRAM = r"""
import sys
import torch
import magneton

with magneton.record(sys.argv[1]):
    torch.tanh(torch.randn(8, 8) @ torch.randn(8, 8))
    maps = open("/proc/self/maps").read()
loaded = sorted({line.rsplit("/", 1)[-1] for line in maps.splitlines() if "/magneton/" in line})
print("\n".join(loaded))
print("modules:", " ".join(sorted(m for m in sys.modules if m.startswith("magneton."))))
"""


def test_recording_maps_the_recording_core_and_not_the_analysis(tmp_path):
    out = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path / "t.mtrace")],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    # The positive side: the recording really went through the native hook.
    assert "libmagneton.so" in out, out
    assert any(name.startswith("_torch_hook") for name in out.split()), out
    assert any(name.startswith("_core") for name in out.split()), out
    # What analysis is made of stays out of the traced process.
    assert "_analysis" not in out, out
    assert "magneton._analysis" not in out, out
