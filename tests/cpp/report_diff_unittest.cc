// The diff reports on a recorded trace pair (the real Recorder, real
// fingerprints, scripted op times and energy so the output is reproducible):
// the JSON golden file, HTML escaping of hostile names, the terminal table.
//
// Regenerate the golden file after an intended change, then review the diff:
//   MAGNETON_UPDATE_GOLDEN=1 build/diff/tests/cpp/report_diff_unittest
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "detect/detect.h"
#include "diagnose/diagnose.h"
#include "energy/attribution.h"
#include "diagnose/line_diagnosis.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "report/diff_report.h"
#include "diff_fixture.h"
#include "test_util.h"

namespace magneton::report {
namespace {

using testing::Record;
using testing::Side;

struct Report {
  detect::DetectResult result;
  std::vector<diagnose::Diagnosis> diagnoses;
};

Report RunDiff(const Side& a, const Side& b) {
  Report r;
  auto ea = energy::AttributeEnergy(a.trace, "cpu-estimate");
  auto eb = energy::AttributeEnergy(b.trace, "cpu-estimate");
  EXPECT_TRUE(ea.ok() && eb.ok());
  auto m = MatchTraces(a.trace, a.fps, b.trace, b.fps);
  EXPECT_TRUE(m.ok());
  // The diff command's defaults (AnalysisOptions): the golden file is shared with AnalysisSession's test.
  detect::Options options;
  options.min_share = 0.01;
  auto res = detect::DetectFromMatch(a.trace, a.fps, *ea, b.trace, b.fps, *eb, *m, options);
  EXPECT_TRUE(res.ok()) << res.status().message();
  r.result = std::move(res).value();
  r.diagnoses = diagnose::Diagnose(a.trace, b.trace, r.result);
  return r;
}

// Each rendering of one fixed trace pair against its golden file; regenerate
// all three with MAGNETON_UPDATE_GOLDEN=1 and review the diff.
void ExpectGolden(const std::string& got, const std::string& name) {
  const std::string golden = std::string(MAGNETON_GOLDEN_DIR) + "/" + name;
  if (const char* update = std::getenv("MAGNETON_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(golden) << got;
    GTEST_SKIP() << "rewrote " << golden;
  }
  std::ifstream in_file(golden);
  ASSERT_TRUE(in_file) << golden << " missing; run with MAGNETON_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << in_file.rdbuf();
  EXPECT_EQ(got, want.str()) << name << " changed; if intended, regenerate with MAGNETON_UPDATE_GOLDEN=1";
}

TEST(ReportDiff, GoldenJson) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Report r = RunDiff(a, b);
  DiffReportInput in{"fused.mtrace", "decomposed.mtrace", &a.trace, &b.trace, &r.result, &r.diagnoses};
  ExpectGolden(DiffToJson(in).dump(2) + "\n", "diff_fused_vs_decomposed.json");
}

TEST(ReportDiff, GoldenTerminal) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Report r = RunDiff(a, b);
  DiffReportInput in{"fused.mtrace", "decomposed.mtrace", &a.trace, &b.trace, &r.result, &r.diagnoses};
  ExpectGolden(RenderDiffTerminal(in), "diff_fused_vs_decomposed.txt");
  in.verbose = true;
  ExpectGolden(RenderDiffTerminal(in), "diff_fused_vs_decomposed.verbose.txt");
}

TEST(ReportDiff, GoldenHtml) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Report r = RunDiff(a, b);
  DiffReportInput in{"fused.mtrace", "decomposed.mtrace", &a.trace, &b.trace, &r.result, &r.diagnoses};
  ExpectGolden(RenderDiffHtml(in), "diff_fused_vs_decomposed.html");
}

TEST(ReportDiff, FusedSideIsFlaggedAndDiagnosed) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Report r = RunDiff(a, b);
  ASSERT_FALSE(r.result.findings.empty());
  const detect::Finding& top = r.result.findings[0];
  EXPECT_EQ(top.verdict, detect::Verdict::kWaste);
  EXPECT_EQ(top.wasteful_side, 'A');
  ASSERT_FALSE(r.diagnoses.empty());
  const diagnose::Diagnosis& d = r.diagnoses[0];
  EXPECT_EQ(d.finding_index, 0u);
  EXPECT_TRUE(d.deviation.found);
  EXPECT_EQ(d.deviation.frame_a, "/src/net.py:11:forward");
  EXPECT_EQ(d.deviation.frame_b, "/src/net.py:13:forward");
  ASSERT_FALSE(d.sites_costly.empty());
  EXPECT_EQ(d.sites_costly[0].user_frame, "/src/net.py:11:forward");
  EXPECT_EQ(d.sites_costly[0].library_frame, "/py/site-packages/torch/functional.py:100:linear");
  EXPECT_NE(d.sentence.find("(estimated)"), std::string::npos);
  const std::string text = RenderDiffTerminal({"a", "b", &a.trace, &b.trace, &r.result, &r.diagnoses});
  EXPECT_NE(text.find("ESTIMATED"), std::string::npos);
  EXPECT_NE(text.find("waste"), std::string::npos);
  // Fused linear vs mm + add: the two sides substitute ops for the same values.
  EXPECT_EQ(d.root_cause.kind, diagnose::RootCauseKind::kApiChoice);
  // The root cause leads the finding, before the sentence.
  const size_t cause = text.find(std::string("    root cause: ") + diagnose::RootCauseKindName(d.root_cause.kind));
  ASSERT_NE(cause, std::string::npos) << text;
  EXPECT_LT(cause, text.find("    " + d.sentence.substr(0, 20))) << text;
  const nlohmann::json j = DiffToJson({"a", "b", &a.trace, &b.trace, &r.result, &r.diagnoses});
  EXPECT_EQ(j["schema"], "magneton.diff/2");
  EXPECT_EQ(j["findings"][0]["root_cause"]["kind"], diagnose::RootCauseKindName(d.root_cause.kind));
  EXPECT_EQ(j["findings"][0]["root_cause"]["name"], d.root_cause.name);
  const std::string html = RenderDiffHtml({"a", "b", &a.trace, &b.trace, &r.result, &r.diagnoses});
  const size_t html_cause = html.find("<p class=\"cause\"><b>Root cause</b>");
  ASSERT_NE(html_cause, std::string::npos);
  EXPECT_LT(html_cause, html.find("<p class=\"sentence\">"));
}

TEST(ReportDiff, HtmlEscapesEverythingFromTraces) {
  Side a = Record("evil_a.mtrace", true, true), b = Record("evil_b.mtrace", false, true);
  Report r = RunDiff(a, b);
  ASSERT_FALSE(r.diagnoses.empty());
  DiffReportInput in{"<script>a.mtrace", "b\".mtrace", &a.trace, &b.trace, &r.result, &r.diagnoses};
  const std::string html = RenderDiffHtml(in);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // self-contained: nothing fetched
  EXPECT_EQ(html.find("https://"), std::string::npos);
  std::ofstream(testing::TempPath("evil.html")) << html;
  if (const char* out = std::getenv("MAGNETON_HTML_OUT")) std::ofstream(out) << html;  // for a manual look
}

// A line-level result (as `diff` attaches after its re-runs) in all three
// renderings; its source text comes from someone's program, so HTML escapes it.
TEST(ReportDiff, LineDiagnosisInEveryRendering) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Report r = RunDiff(a, b);
  ASSERT_FALSE(r.diagnoses.empty());
  diagnose::LineDiagnosis l;
  l.found = true;
  l.mode = "branch";
  l.function = "/src/net.py:Net.forward";
  l.file = "/src/net.py";
  l.divergence = {true, 0, 3, 11, 13, 10, 2, 2};
  l.text_a = "y = fused(x)";
  l.text_b = "y = mm(x) + b";
  l.branch_text = "if self.config.fuse_linear and \"<script>\":";
  l.condition = "self.config.fuse_linear";
  l.key_variables = {"self.config.fuse_linear"};
  l.chain = {{"self.config.fuse_linear", 10, l.branch_text, "branch", "True", "False"}};
  l.origin = {diagnose::OriginKind::kConfigField, "self.config.fuse_linear", "/src/net.py", 10, "True", "False"};
  diagnose::ApplyLineDiagnosis(l, diagnose::DiffConfig(a.trace, b.trace), &r.diagnoses[0]);
  const diagnose::Diagnosis& d = r.diagnoses[0];
  ASSERT_TRUE(d.line);
  EXPECT_EQ(d.line->config_key, "model_config.Net.fuse_linear");
  EXPECT_EQ(d.candidates.front().config.key, "model_config.Net.fuse_linear");
  EXPECT_NE(d.candidates.front().evidence.find("(line trace)"), std::string::npos);
  EXPECT_NE(d.sentence.find("Line trace:"), std::string::npos);
  // The line trace's config entry becomes the root cause, at the origin's line.
  EXPECT_EQ(d.root_cause.kind, diagnose::RootCauseKind::kConfig);
  EXPECT_EQ(d.root_cause.name, "model_config.Net.fuse_linear");
  EXPECT_EQ(d.root_cause.where, "/src/net.py:10");
  EXPECT_NE(d.sentence.find("Root cause (config)"), std::string::npos) << d.sentence;
  DiffReportInput in{"a", "b", &a.trace, &b.trace, &r.result, &r.diagnoses};
  const nlohmann::json j = DiffToJson(in)["findings"][0]["diagnosis"]["line_diagnosis"];
  EXPECT_EQ(j["mode"], "branch");
  EXPECT_EQ(j["branch_line"], 10);
  EXPECT_EQ(j["line_a"], 11);
  EXPECT_EQ(j["origin"]["kind"], "config_field");
  EXPECT_EQ(j["origin"]["value_b"], "False");
  EXPECT_EQ(j["config_key"], "model_config.Net.fuse_linear");
  // Terse: the line trace's conclusion in one line, the chain only with -v.
  const std::string terse = RenderDiffTerminal(in);
  EXPECT_NE(terse.find("line trace: /src/net.py:Net.forward → config_field `self.config.fuse_linear`"),
            std::string::npos) << terse;
  EXPECT_EQ(terse.find("A next  11: y = fused(x)"), std::string::npos) << terse;
  in.verbose = true;
  const std::string text = RenderDiffTerminal(in);
  EXPECT_NE(text.find("A next  11: y = fused(x)"), std::string::npos) << text;
  EXPECT_NE(text.find("origin: config_field `self.config.fuse_linear`"), std::string::npos) << text;
  const std::string html = RenderDiffHtml(in);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Origin: config_field"), std::string::npos);
}

}  // namespace
}  // namespace magneton::report
