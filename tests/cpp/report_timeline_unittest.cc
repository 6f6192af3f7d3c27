// The HTML diff report's picture of both runs (src/report/diff_timeline.cc):
// on the recorded fixture pair, every matched instance as a linked pair of
// boxes and the power strips with their provenance; on a synthetic pair of
// many thousands of tiny regions, merged boxes under the element cap and a
// caption that says so (the positive twin of the fixture's "not aggregated").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

#include "detect/detect.h"
#include "diagnose/diagnose.h"
#include "energy/attribution.h"
#include "report/diff_report.h"
#include "report/diff_timeline.h"
#include "diff_fixture.h"
#include "test_util.h"

namespace magneton::report {
namespace {

using testing::Record;
using testing::Side;

struct Diff {
  detect::DetectResult result;
  std::vector<diagnose::Diagnosis> diagnoses;
};

Diff RunDiff(const Side& a, const Side& b) {
  Diff d;
  auto ea = energy::AttributeEnergy(a.trace, "cpu-estimate");
  auto eb = energy::AttributeEnergy(b.trace, "cpu-estimate");
  EXPECT_TRUE(ea.ok() && eb.ok());
  auto m = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  EXPECT_TRUE(m.ok());
  detect::Options options;
  options.min_share = 0.01;
  auto res = detect::DetectFromMatch(a.trace, a.fps, *ea, b.trace, b.fps, *eb, *m, options);
  EXPECT_TRUE(res.ok()) << res.status().message();
  d.result = std::move(res).value();
  d.diagnoses = diagnose::Diagnose(a.trace, b.trace, d.result);
  return d;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Opening tags inside the <svg>: what a browser has to lay out.
size_t SvgElements(const std::string& html) {
  const size_t begin = html.find("<svg"), end = html.find("</svg>");
  if (begin == std::string::npos || end == std::string::npos) return 0;
  size_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    if (html[i] == '<' && i + 1 < end && std::isalpha(static_cast<unsigned char>(html[i + 1]))) ++n;
  }
  return n;
}

TEST(ReportTimeline, FixturePairHasBothRunsLinkedRegionsAndEstimatedPower) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Diff d = RunDiff(a, b);
  const DiffReportInput in{"fused.mtrace", "decomposed.mtrace", &a.trace, &b.trace, &d.result, &d.diagnoses};
  const Timeline t = RenderDiffTimeline(in);
  ASSERT_FALSE(t.html.empty());
  // Both runs' strips.
  EXPECT_NE(t.html.find("id=\"tl-a\""), std::string::npos);
  EXPECT_NE(t.html.find("id=\"tl-b\""), std::string::npos);
  // Every matched instance: one link holding a box on A and a box on B, to its finding's anchor when it has one.
  size_t matched = 0;
  for (size_t i = 0; i < d.result.findings.size(); ++i) {
    const detect::Finding& f = d.result.findings[i];
    if (f.kind != detect::RegionKind::kMatched) continue;
    matched += f.instances.size();
    if (DiagnosisFor(in, i)) {
      EXPECT_EQ(Count(t.html, "<a class=\"pr f" + std::to_string(i + 1) + "\" href=\"#f" + std::to_string(i + 1) +
                                  "\">"),
                f.instances.size());
    }
  }
  ASSERT_GT(matched, 0u);
  EXPECT_EQ(t.pairs, matched);
  EXPECT_EQ(Count(t.html, "class=\"bx A "), matched);
  EXPECT_EQ(Count(t.html, "class=\"bx B "), matched);
  // The top finding is waste: its boxes are red, and hovering its link outlines both.
  ASSERT_EQ(d.result.findings[0].verdict, detect::Verdict::kWaste);
  const std::regex first_pair(
      "<a class=\"pr f1\" href=\"#f1\"><title>#1 waste: [^<]*</title><polygon class=\"ln\"[^>]*/>"
      "<rect class=\"bx A was\" x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\"[^>]*/>"
      "<rect class=\"bx B was\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(t.html, m, first_pair)) << t.html;
  // Its A box spans its op's time at the shared scale (A's job is the longer: it fills the plot).
  const detect::RegionInstance& inst = d.result.findings[0].instances[0];
  ASSERT_EQ(inst.ops_a.size(), 1u);
  const OpEvent& op = a.trace.ops[static_cast<size_t>(inst.ops_a[0])];
  const double job_ns = static_cast<double>(a.trace.ops.back().end_ns - a.trace.ops.front().start_ns);
  const double plot_w = TimelineOptions{}.width_px - 72 - 12;
  EXPECT_NEAR(std::stod(m[2].str()), static_cast<double>(op.end_ns - op.start_ns) / job_ns * plot_w, 0.01);
  // Region names as the report gives them, in the tooltips.
  EXPECT_NE(t.html.find(RegionNameOf(in, d.result.findings[0]).text), std::string::npos);
  // Power per run from the samples of the diff's domain, labelled estimated, never measured.
  EXPECT_EQ(Count(t.html, "<path class=\"pw\""), 2u);
  EXPECT_NE(t.html.find("A power, cpu-estimate (estimated): up to 10 W"), std::string::npos) << t.html;
  EXPECT_NE(t.html.find("B power, cpu-estimate (estimated): up to 10 W"), std::string::npos);
  EXPECT_EQ(t.html.find("measured"), std::string::npos);
  // Few regions: nothing merged, and the caption does not claim it.
  EXPECT_FALSE(t.aggregated);
  EXPECT_EQ(t.merged_boxes, 0u);
  EXPECT_EQ(t.html.find("Aggregated"), std::string::npos);
  EXPECT_EQ(SvgElements(t.html), t.elements);
  // In the report: after the summary paragraph, before the Summary table; no script.
  const std::string html = RenderDiffHtml(in);
  const size_t figure = html.find("<figure class=\"tl\">");
  ASSERT_NE(figure, std::string::npos);
  EXPECT_LT(html.find("Energy domain"), figure);
  EXPECT_LT(figure, html.find("<h2>Summary</h2>"));
  EXPECT_NE(html.find("id=\"f1\""), std::string::npos);  // the boxes' target
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing fetched (http-equiv is the CSP)
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

// A synthetic pair (hand-built traces and findings: what the renderer is
// given, at a scale no recorded fixture reaches): `regions` one-op matched
// instances spread over three findings, plus unmatched ops, on jobs of
// 1.1 µs per op with power sampled every op.
struct Synthetic {
  Trace a, b;
  detect::DetectResult result;
  std::vector<diagnose::Diagnosis> diagnoses;
  DiffReportInput input() const { return {"a.mtrace", "b.mtrace", &a, &b, &result, &diagnoses}; }
};

void AddOps(Trace& t, size_t n, int64_t duration_ns) {
  t.strings = {"aten::add", "aten::mul"};
  for (size_t i = 0; i < n; ++i) {
    OpEvent op;
    op.id = static_cast<int64_t>(i);
    op.name_id = static_cast<int64_t>(i % 2);
    op.start_ns = 1'000'000 + static_cast<int64_t>(i) * (duration_ns + 100);
    op.end_ns = op.start_ns + duration_ns;
    t.ops.push_back(op);
  }
  const int64_t end_ns = t.ops.back().end_ns + 1000;
  for (int64_t ts = 0; ts <= end_ns; ts += duration_ns + 100) {
    t.energy_samples.push_back({"cpu-estimate", ts, 0.01 * static_cast<double>(ts), std::nan(""),
                                Provenance::kEstimated, "scripted"});
  }
}

Synthetic ManyTinyRegions(size_t regions, size_t unmatched) {
  Synthetic s;
  AddOps(s.a, regions + unmatched, 1000);
  AddOps(s.b, regions + unmatched, 500);
  s.result.domain = "cpu-estimate";
  const detect::Verdict verdicts[] = {detect::Verdict::kWaste, detect::Verdict::kInconclusive,
                                      detect::Verdict::kEqual};
  for (detect::Verdict v : verdicts) {
    detect::Finding f;
    f.verdict = v;
    f.names_a = f.names_b = {"aten::add"};
    s.result.findings.push_back(f);
  }
  for (size_t i = 0; i < regions; ++i) {
    detect::RegionInstance inst;
    inst.ops_a = inst.ops_b = {static_cast<int64_t>(i)};
    s.result.findings[i % 3].instances.push_back(inst);
  }
  detect::Finding un;
  un.kind = detect::RegionKind::kUnmatched;
  un.instances.emplace_back();
  for (size_t i = regions; i < regions + unmatched; ++i) {
    un.instances[0].ops_a.push_back(static_cast<int64_t>(i));
    un.names_a.push_back(s.a.str(s.a.ops[i].name_id));
  }
  s.result.findings.push_back(un);
  for (size_t i = 0; i < 2; ++i) {
    diagnose::Diagnosis d;
    d.finding_index = i;
    s.diagnoses.push_back(d);
  }
  return s;
}

TEST(ReportTimeline, ManyTinyRegionsAreMergedUnderTheElementCap) {
  const Synthetic s = ManyTinyRegions(30000, 3000);
  const Timeline t = RenderDiffTimeline(s.input());
  EXPECT_LE(t.elements, 4000u);
  EXPECT_EQ(SvgElements(t.html), t.elements);
  EXPECT_TRUE(t.aggregated);
  EXPECT_GT(t.merged_boxes, 0u);
  EXPECT_NE(t.html.find("<b>Aggregated</b>"), std::string::npos);
  EXPECT_NE(t.html.find("30000 region instance(s) narrower than 1 px are drawn merged"), std::string::npos);
  EXPECT_NE(t.html.find("3000 unmatched op(s) are drawn as merged spans"), std::string::npos) << t.html.substr(t.html.find("<figcaption>"));
  // Every waste-coloured column links to the waste finding; the most severe colour wins a column it shares.
  EXPECT_NE(t.html.find("<a href=\"#f1\"><rect class=\"bx A was\""), std::string::npos);
  EXPECT_NE(t.html.find("<a href=\"#f1\"><rect class=\"bx B was\""), std::string::npos);
  EXPECT_NE(t.html.find("class=\"bx A un\""), std::string::npos);
  EXPECT_EQ(t.html.find("class=\"bx B un\""), std::string::npos);  // B has no unmatched ops
  // Power is still drawn from 33000 samples, as one path per run.
  EXPECT_EQ(Count(t.html, "<path class=\"pw\""), 2u);
  // For a look in a browser: the whole report of a 100k-op pair.
  if (const char* out = std::getenv("MAGNETON_TIMELINE_HTML_OUT")) {
    const Synthetic big = ManyTinyRegions(90000, 10000);
    std::ofstream(out) << RenderDiffHtml(big.input());
  }
}

TEST(ReportTimeline, ASmallerCapMergesWiderPiecesAndStillHolds) {
  // Instances ~2 px wide at 1150 px: drawn as pairs under the default cap, merged under a cap of 300.
  const Synthetic s = ManyTinyRegions(400, 0);
  const Timeline wide = RenderDiffTimeline(s.input());
  EXPECT_EQ(wide.pairs, 400u);
  EXPECT_FALSE(wide.aggregated);
  TimelineOptions tight;
  tight.max_elements = 300;
  const Timeline t = RenderDiffTimeline(s.input(), tight);
  EXPECT_LE(t.elements, 300u);
  EXPECT_EQ(SvgElements(t.html), t.elements);
  EXPECT_GT(t.merge_px, 1.0);
  EXPECT_TRUE(t.aggregated);
  EXPECT_LT(t.pairs, 400u);
  EXPECT_NE(t.html.find("<b>Aggregated</b> to keep the picture light (300 SVG elements at most)"), std::string::npos);
}

TEST(ReportTimeline, RecorderOpsInsideTheStripAreSaid) {
  Synthetic s = ManyTinyRegions(30, 0);
  const Timeline plain = RenderDiffTimeline(s.input());
  EXPECT_EQ(plain.html.find("recorder's own ops"), std::string::npos);
  // A value fingerprint between two ops of A: wall time in the strip, out of the job time.
  s.a.strings.push_back("magneton::fingerprint");
  OpEvent fp;
  fp.id = static_cast<int64_t>(s.a.ops.size());
  fp.name_id = static_cast<int64_t>(s.a.strings.size() - 1);
  fp.start_ns = s.a.ops[10].end_ns + 10;
  fp.end_ns = fp.start_ns + 50;
  s.a.ops.push_back(fp);
  const Timeline t = RenderDiffTimeline(s.input());
  EXPECT_NE(t.html.find("include the recorder's own ops (<code>magneton::</code>, A 50 ns, B 0 ns)"),
            std::string::npos);
}

TEST(ReportTimeline, NothingWithoutTraces) {
  const Synthetic s = ManyTinyRegions(3, 0);
  DiffReportInput in = s.input();
  in.b = nullptr;
  EXPECT_TRUE(RenderDiffTimeline(in).html.empty());
}

}  // namespace
}  // namespace magneton::report
