"""The HTML diff report, rendered in headless Chromium (Debian's package) with
no network: what a reader sees on the page, read from the rendered DOM over
the DevTools protocol (tests/python/headless.py), against the JSON report of
the same diff run. The screenshot is written for review (report.png under the
test's temporary folder)."""

import json
import struct
import sys

import pytest

from conftest import require, run_cli
from headless import Browser, find_browser

require("torch")
require("transformers")

SCRIPT = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
# The same size as test_diff_hf's "gen" pair: without the cache each of 8 steps recomputes a 2x256-token prefix at
# n_embd 512, compute-bound, ~3.5-4x the cached job. At n_embd 256 and 48 tokens (~2x) one run's machine slowdown made
# the real region inconclusive and a 0.0%-of-the-job single-op region the top finding.
m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=512, n_head=4, vocab_size=500, n_positions=512,
                               bos_token_id=499, eos_token_id=499)).eval()
ids = torch.randint(0, 500, (2, 256), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    m.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False, pad_token_id=0,
               use_cache=sys.argv[1] == "cache")
"""

WIDTH = 1200  # the browser window; the page is as tall as it needs

# One evaluation reads everything the tests look at from the laid-out page.
# `visible`: rendered (not display:none / visibility:hidden / transparent),
# with a box of non-zero size that lies on the page.
READ_PAGE = r"""
(() => {
  const pageWidth = document.documentElement.scrollWidth;
  const visible = el => {
    if (!el || !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= pageWidth + 1 && r.top + window.scrollY >= 0;
  };
  const text = el => el ? el.innerText.trim() : null;
  const tableRows = table => table ? [...table.rows].map(tr => ({
    cells: [...tr.cells].map(text), visible: visible(tr),
    href: tr.querySelector('a') ? tr.querySelector('a').getAttribute('href') : null})) : [];
  const heading = name => [...document.querySelectorAll('h2')].find(h => text(h) === name);
  const summary = heading('Summary');
  // The picture of both runs (src/report/diff_timeline.cc): SVG text has no innerText.
  const svgText = el => el ? el.textContent.trim() : null;
  const figure = document.querySelector('figure.tl');
  const boxes = side => figure ? [...figure.querySelectorAll(`rect.bx.${side}`)].map(r => ({
    visible: visible(r), cls: r.getAttribute('class'), width: r.getBoundingClientRect().width,
    href: r.closest('a') ? r.closest('a').getAttribute('href') : null,
    pair: r.closest('.pr') ? [...r.closest('.pr').querySelectorAll('rect.bx')].map(x => x.classList[1]) : null})) : [];
  const timeline = figure ? {
    visible: visible(figure.querySelector('svg')),
    width: figure.querySelector('svg').getBoundingClientRect().width,
    strips: ['#tl-a', '#tl-b'].map(id => visible(figure.querySelector(id))),
    a_above_b: figure.querySelector('#tl-a').getBoundingClientRect().bottom <=
               figure.querySelector('#tl-b').getBoundingClientRect().top,
    above_summary: !!summary && figure.getBoundingClientRect().bottom <= summary.getBoundingClientRect().top,
    a: boxes('A'), b: boxes('B'),
    power: [...figure.querySelectorAll('text.lbl')].map(svgText),
    caption: text(figure.querySelector('figcaption')),
  } : null;
  return {
    timeline,
    title: document.title,
    body: document.body.innerText,
    width: pageWidth,
    height: document.documentElement.scrollHeight,
    summary_visible: visible(summary),
    summary: tableRows(summary && summary.nextElementSibling && summary.nextElementSibling.tagName === 'TABLE'
                       ? summary.nextElementSibling : null),
    findings: [...document.querySelectorAll('div.finding')].map(d => ({
      id: d.id, text: text(d), visible: visible(d),
      sentence: text(d.querySelector('.sentence')), sentence_visible: visible(d.querySelector('.sentence')),
      tables: [...d.querySelectorAll('table')].map(tableRows),
      codes: [...d.querySelectorAll('code')].filter(visible).map(text),
    })),
  };
})()
"""

# The centre of the top finding's first box on A, in viewport coordinates.
HOVER_TARGET = r"""
(() => {
  const r = document.querySelector('figure.tl a[href="#f1"] rect.bx.A');
  if (!r) return null;
  const b = r.getBoundingClientRect();
  return {x: b.left + b.width / 2, y: b.top + b.height / 2};
})()
"""

# The stroke of every box of the hovered pair and of one other box, and whether the band joining the pair shows.
READ_HOVER = r"""
(() => {
  const pair = document.querySelector('figure.tl a[href="#f1"]:hover');
  const other = [...document.querySelectorAll('figure.tl rect.bx')].find(r => !pair || !pair.contains(r));
  const stroke = r => parseFloat(getComputedStyle(r).strokeWidth);
  return pair ? {
    boxes: [...pair.querySelectorAll('rect.bx')].map(r => ({side: r.classList[1], stroke: stroke(r)})),
    band_visible: getComputedStyle(pair.querySelector('.ln')).visibility === 'visible',
    other_stroke: other ? stroke(other) : null,
  } : null;
})()
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Both recordings and one `magneton diff` run writing the HTML and JSON reports."""
    d = tmp_path_factory.mktemp("report_html")
    script = d / "gen.py"
    script.write_text(SCRIPT)
    traces = {}
    for mode in ("nocache", "cache"):
        traces[mode] = str(d / f"{mode}.mtrace")
        r = run_cli("record", "--values", "-o", traces[mode], "--", sys.executable, str(script), mode)
        assert r.returncode == 0, r.stderr
    html, out_json = d / "report.html", d / "report.json"
    r = run_cli("diff", traces["nocache"], traces["cache"], "--html", str(html), "--json", str(out_json))
    assert r.returncode == 0, r.stderr
    return {"dir": d, "html": html, "json": json.loads(out_json.read_text()), "stdout": r.stdout}


@pytest.fixture(scope="module")
def page(report):
    """The rendered page as READ_PAGE sees it; report.png is written beside the report."""
    browser = find_browser()
    if browser is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    with Browser(browser, width=WIDTH, height=900) as b:
        b.open(report["html"].as_uri())
        model = b.evaluate(READ_PAGE)
        # Hover the top finding's box on A (the page is at its top): what CSS alone does to its partner on B.
        box = b.evaluate(HOVER_TARGET)
        if box:
            b.hover(box["x"], box["y"])
            model["hovered"] = b.evaluate(READ_HOVER)
        b.screenshot(str(report["dir"] / "report.png"))
    model["screenshot"] = report["dir"] / "report.png"
    return model


def test_report_is_self_contained(report):
    text = report["html"].read_text()
    assert "<script" not in text.lower()           # nothing executable
    # No network needed: no external resources (source snippets may mention URLs as text).
    for pattern in ('src="http', "src='http", 'href="http', "href='http", "@import", "url("):
        assert pattern not in text, pattern


def test_the_diff_found_the_cache_waste(report):
    # What the page is checked against: use_cache=False recomputes the whole
    # prefix at every step, so A wastes energy and the cause is named.
    top = report["json"]["findings"][0]
    assert top["verdict"] == "waste" and top["costlier_side"] == "A", top
    assert top["diagnosis"] and "use_cache" in top["diagnosis"]["candidates"][0]["key"], top["diagnosis"]


def test_summary_table_has_one_visible_row_per_finding(report, page):
    findings = report["json"]["findings"]
    assert page["summary_visible"]
    header, *rows = page["summary"]
    assert header["cells"] == ["#", "verdict", "region", "reps", "A energy", "B energy", "A/B [interval]", "could save",
                               "share"]
    assert len(rows) == len(findings)
    provenance = report["json"]["energy"]["provenance"]
    for row, f in zip(rows, findings):
        assert row["visible"], row
        rank, verdict, region, reps, a_energy, b_energy, ratio, save, share = row["cells"]
        assert rank == str(f["rank"])
        # Equal only by the share floor reads "small" (its ratio may be large).
        assert verdict == ("small" if f["below_noise_floor"] else f["verdict"])
        assert region.startswith(f["name"]), (region, f)
        assert reps == str(f["instances"])
        assert a_energy.endswith(f"({provenance})") and b_energy.endswith(f"({provenance})")
        # The ratio and, beside it, its interval (docs/DIFF.md, "Uncertainty").
        interval = f["uncertainty"]["energy_ratio"]
        want_interval = f"[{interval['low']:.2f}, {interval['high']:.2f}]" if interval else "[n/a]"
        # Work only one side runs (an unmatched part with ops on one side): the ratio is infinite, null in JSON.
        want_ratio = "inf" if f["energy_ratio"] is None else f"{f['energy_ratio']:.2f}"
        assert ratio == f"{want_ratio} {want_interval}", (ratio, f["uncertainty"])
        assert save.startswith((f["costlier_side"] or "-") + ":")
        assert share == f"{100 * f['share_of_total']:.1f}%"
        # A finding with a diagnosis has its section, and the rank links to it.
        if f["diagnosis"]:
            assert row["href"] == f"#f{f['rank']}"
    assert [s["id"] for s in page["findings"]] == [f"f{f['rank']}" for f in findings if f["diagnosis"]]


def test_top_finding_shows_its_region_and_root_cause(report, page):
    top = report["json"]["findings"][0]
    section = page["findings"][0]
    assert section["id"] == "f1" and section["visible"]
    # Its name: rank, verdict, what the region is and the diagnosis kind, then the region's ops on both sides.
    assert section["text"].startswith(f"#1 {top['verdict']} — {top['name']} — {top['diagnosis']['kind']}"), \
        section["text"][:200]
    # On a real GPT-2 trace the region is named by what it is (a module scope or the user's line), not by its first op.
    assert top["name_basis"] in ("module_scope", "source_line"), top["name"]
    for op in top["a"]["ops"][:5] + top["b"]["ops"][:5]:
        assert op in section["text"], op
    # The sentence that says what to do, rendered in full.
    assert section["sentence_visible"]
    assert section["sentence"] == top["diagnosis"]["sentence"]
    # The root cause: the top candidate's key, visible in the candidates table (its first row).
    cause = top["diagnosis"]["candidates"][0]
    candidates = next(t for t in section["tables"] if t and t[0]["cells"][0] == "candidate")
    assert candidates[1]["visible"]
    assert candidates[1]["cells"][:3] == [cause["key"], cause["value_a"], cause["value_b"]]
    assert cause["key"] in section["codes"]
    # ... and the line trace's origin of it, when diff traced the lines.
    line = top["diagnosis"]["line_diagnosis"]
    if line and line["found"]:
        assert f"Origin: {line['origin']['kind']} {line['origin']['name']}" in section["text"]


def test_timeline_shows_both_runs_with_linked_regions(report, page):
    # Both runs' jobs as strips, A above B, before the Summary table, as wide as the report's column.
    tl = page["timeline"]
    assert tl and tl["visible"] and tl["strips"] == [True, True], tl and {k: tl[k] for k in ("visible", "strips")}
    assert tl["a_above_b"] and tl["above_summary"]
    assert tl["width"] >= WIDTH - 100, tl["width"]
    assert tl["a"] and tl["b"], "no region boxes"
    assert all(box["visible"] for box in tl["a"] + tl["b"])
    # The top finding (waste on A, docs above) has red boxes on both runs, each one link to its section #f1 that
    # holds its partner on the other run.
    top = report["json"]["findings"][0]
    top_a = [box for box in tl["a"] if box["href"] == "#f1"]
    top_b = [box for box in tl["b"] if box["href"] == "#f1"]
    assert top_a and top_b
    assert all("was" in box["cls"].split() for box in top_a + top_b)
    paired = [box for box in top_a if box["pair"]]
    assert paired and all(box["pair"] == ["A", "B"] for box in paired)
    if "Aggregated" not in tl["caption"]:  # one pair per instance
        assert len(top_a) == len(top_b) == top["instances"], (len(top_a), len(top_b), top["instances"])
    # A's boxes of the top finding are wider in all than B's: A is the run that recomputes the prefix.
    assert sum(box["width"] for box in top_a) > sum(box["width"] for box in top_b)
    # Hovering the A box outlines its partner on B too, and shows the band joining them; other boxes stay as they were.
    hovered = page.get("hovered")
    assert hovered, "no #f1 box on A was under the pointer"
    assert [b["side"] for b in hovered["boxes"]] == ["A", "B"]
    assert all(b["stroke"] >= 2 for b in hovered["boxes"]), hovered
    assert hovered["band_visible"]
    assert hovered["other_stroke"] is None or hovered["other_stroke"] < 2, hovered
    # The power strips: the diff's domain, with the report's provenance.
    energy = report["json"]["energy"]
    assert len(tl["power"]) == 2
    for side, label in zip("AB", tl["power"]):
        assert label.startswith(f"{side} power, {energy['domain']} ({energy['provenance']})"), label
    assert f"Power: domain {energy['domain']}, {energy['provenance']}" in tl["caption"]


def test_provenance_is_on_the_page(report, page):
    provenance = report["json"]["energy"]["provenance"]
    assert f"Energy domain {report['json']['energy']['domain']}: {provenance}" in page["body"]
    assert page["title"] == "magneton diff"


def test_screenshot_is_written_for_review(page):
    data = page["screenshot"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert (width, height) == (WIDTH, page["height"])  # the whole page, not the first screen
