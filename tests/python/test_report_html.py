"""The HTML diff report renders in headless Chromium (Debian's package), with no
network, and shows the finding."""

import os
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

from conftest import require, run_cli

require("torch")
require("transformers")

SCRIPT = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=128,
                               bos_token_id=499, eos_token_id=499)).eval()
ids = torch.randint(0, 500, (1, 32), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    m.generate(ids, max_new_tokens=12, min_new_tokens=12, do_sample=False, pad_token_id=0,
               use_cache=sys.argv[1] == "cache")
"""


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _non_white_fraction(png_path):
    """Decodes an 8-bit RGB/RGBA PNG with the standard library."""
    data = open(png_path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, color = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    non_white = 0
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        non_white += sum(1 for x in range(0, stride, bpp) if min(line[x:x + 3]) < 200)
        prev = line
    return non_white / (width * height)


def test_html_report_screenshot(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    script = tmp_path / "gen.py"
    script.write_text(SCRIPT)
    traces = {}
    for mode in ("nocache", "cache"):
        traces[mode] = str(tmp_path / f"{mode}.mtrace")
        r = run_cli("record", "--values", "-o", traces[mode], "--", sys.executable, str(script), mode)
        assert r.returncode == 0, r.stderr
    html = tmp_path / "report.html"
    r = run_cli("diff", traces["nocache"], traces["cache"], "--html", str(html))
    assert r.returncode == 0, r.stderr
    text = html.read_text()
    assert "<script" not in text.lower()           # self-contained, nothing executable
    # No network needed: no external resources (source snippets may mention URLs as text).
    for pattern in ('src="http', "src='http", 'href="http', "href='http", "@import", "url("):
        assert pattern not in text, pattern
    assert "estimated" in text
    png = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={png}",
                    "--window-size=1200,900", html.as_uri()], capture_output=True, timeout=120, check=False)
    assert png.exists() and png.stat().st_size > 10_000
    # A rendered report, not a blank or error page: text, tables and bars cover part of the page.
    assert 0.01 < _non_white_fraction(str(png)) < 0.9
