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

#include "magneton/detect.h"
#include "magneton/diagnose.h"
#include "magneton/energy_attribution.h"
#include "magneton/line_diagnosis.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "report/diff_report.h"
#include "test_util.h"

namespace magneton::report {
namespace {

struct Side {
  std::string path;
  Trace trace;
  FingerprintMap fps;
};

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// y = x W^T (+ b): x 4x6, W 6x6.
std::vector<float> Affine(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>* b) {
  std::vector<float> y(24);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) {
      float s = b ? (*b)[j] : 0.f;
      for (int k = 0; k < 6; ++k) s += x[i * 6 + k] * w[j * 6 + k];
      y[i * 6 + j] = s;
    }
  return y;
}

Fingerprint Fp(const std::vector<float>& v, std::vector<int64_t> shape) {
  TensorBuffer buf{v.data(), DType::kFloat32, std::move(shape), {}};
  auto fp = ComputeFingerprint(buf);
  EXPECT_TRUE(fp.ok());
  return fp.ok() ? std::move(fp).value() : Fingerprint{};
}

// Two layers of y = x W^T + b, then relu. A (fused) runs one op per layer,
// B (decomposed) two. `evil` names ops and files with markup.
Side Record(const std::string& name, bool fused, bool evil) {
  Side s;
  s.path = testing::TempPath(name);
  RunMetadata meta;
  meta.label = evil ? "<b>label</b>" : name;
  EXPECT_TRUE(Recorder::Start(s.path, meta).ok());
  Recorder* rec = Recorder::Active();
  const std::string user_file = evil ? "/src/<script>alert(1)</script>.py" : "/src/net.py";
  const std::string lib_file = "/py/site-packages/torch/functional.py";
  int64_t uf = rec->InternString(user_file), lf = rec->InternString(lib_file);
  int64_t main_path = rec->InternCallPath(kNoId, rec->InternFrame(uf, 3, rec->InternString("main")));
  // The branch: A takes line 11 of forward, B line 13.
  int64_t fwd = rec->InternCallPath(main_path, rec->InternFrame(uf, fused ? 11 : 13, rec->InternString("forward")));
  auto lib_path = [&](int64_t line, const char* fn) {
    return rec->InternCallPath(fwd, rec->InternFrame(lf, line, rec->InternString(fn)));
  };
  const std::string fused_name = evil ? "aten::<script>alert('x')</script>" : "aten::linear";

  std::vector<int64_t> shape = {4, 6}, wshape = {6, 6}, bshape = {6};
  std::vector<int64_t> strides = {6, 1}, wstrides = {6, 1}, bstrides = {1};
  uint64_t next_addr = 0x1000000;
  auto view = [&](uint64_t addr, std::vector<int64_t>& sh, std::vector<int64_t>& st) {
    return TensorView{addr, 0, sh.data(), st.data(), static_cast<int32_t>(sh.size()), "float32", "cpu", 0};
  };
  std::vector<std::pair<uint64_t, Fingerprint>> fps;  // by address, resolved to ids after reading
  std::vector<float> x = Random(24, 1);
  uint64_t x_addr = next_addr += 0x10000;
  fps.emplace_back(x_addr, Fp(x, shape));
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<float> w = Random(36, 10 + layer), b = Random(6, 20 + layer);
    uint64_t w_addr = next_addr += 0x10000, b_addr = next_addr += 0x10000, y_addr = next_addr += 0x10000;
    fps.emplace_back(w_addr, Fp(w, wshape));
    fps.emplace_back(b_addr, Fp(b, bshape));
    std::vector<float> y = Affine(x, w, &b);
    if (fused) {
      rec->BeginOp(rec->InternString(fused_name), lib_path(100, "linear"));
      rec->AddInput(0, view(x_addr, shape, strides));
      rec->AddInput(1, view(w_addr, wshape, wstrides));
      rec->AddInput(2, view(b_addr, bshape, bstrides));
      rec->AddOutput(0, view(y_addr, shape, strides));
      rec->EndOp(R"([{"t":0},{"t":1},{"t":2}])");
    } else {
      uint64_t m_addr = next_addr += 0x10000;
      rec->BeginOp(rec->InternString("aten::mm"), lib_path(200, "mm"));
      rec->AddInput(0, view(x_addr, shape, strides));
      rec->AddInput(1, view(w_addr, wshape, wstrides));
      rec->AddOutput(0, view(m_addr, shape, strides));
      rec->EndOp(R"([{"t":0},{"t":1}])");
      fps.emplace_back(m_addr, Fp(Affine(x, w, nullptr), shape));
      rec->BeginOp(rec->InternString("aten::add"), lib_path(210, "add"));
      rec->AddInput(0, view(m_addr, shape, strides));
      rec->AddInput(1, view(b_addr, bshape, bstrides));
      rec->AddOutput(0, view(y_addr, shape, strides));
      rec->EndOp(R"([{"t":0},{"t":1}])");
    }
    fps.emplace_back(y_addr, Fp(y, shape));
    x = y;
    x_addr = y_addr;
  }
  uint64_t z_addr = next_addr += 0x10000;
  rec->BeginOp(rec->InternString("aten::relu"), lib_path(300, "relu"));
  rec->AddInput(0, view(x_addr, shape, strides));
  rec->AddOutput(0, view(z_addr, shape, strides));
  rec->EndOp(R"([{"t":0}])");
  for (auto& v : x) v = std::max(v, 0.f);
  fps.emplace_back(z_addr, Fp(x, shape));
  rec->SetConfig("env.OMP_NUM_THREADS", "2", "env");
  rec->SetConfig("model_config.Net.fuse_linear", fused ? "True" : "False", "model_config");
  rec->SetConfig("torch.backends.mkldnn.enabled", fused ? "True" : "False", "global_flag");
  rec->SetConfig(evil ? "call.run.<img src=x onerror=alert(1)>" : "call.run.batch", "1", "call_arg");
  EXPECT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(s.path);
  EXPECT_TRUE(trace.ok());
  s.trace = std::move(trace).value();
  for (const auto& [addr, fp] : fps) {
    for (const TensorMeta& m : s.trace.tensors) {
      if (m.storage_addr == addr) s.fps[m.id] = fp;
    }
  }
  EXPECT_TRUE(WriteFingerprints(s.path, s.fps).ok());
  // Scripted time and energy: fused ops take 3 µs, mm 1 µs, add 0.5 µs, relu
  // 1 µs, 0.2 µs between ops; a constant 10 W (0.01 µJ/ns).
  int64_t t = 1000;
  for (OpEvent& op : s.trace.ops) {
    const std::string& n = s.trace.str(op.name_id);
    const int64_t d = n == "aten::mm" ? 1000 : n == "aten::add" ? 500 : n == "aten::relu" ? 1000 : 3000;
    op.start_ns = t;
    op.end_ns = t + d;
    t += d + 200;
  }
  s.trace.energy_samples.clear();
  for (int64_t ts = 0; ts <= t + 1000; ts += 100) {
    s.trace.energy_samples.push_back(
        {"cpu-estimate", ts, 0.01 * static_cast<double>(ts), std::nan(""), Provenance::kEstimated, "scripted"});
  }
  return s;
}

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
  auto res = detect::DetectFromMatch(a.trace, a.fps, *ea, b.trace, b.fps, *eb, *m, {});
  EXPECT_TRUE(res.ok()) << res.status().message();
  r.result = std::move(res).value();
  r.diagnoses = diagnose::Diagnose(a.trace, b.trace, r.result);
  return r;
}

TEST(ReportDiff, GoldenJson) {
  Side a = Record("fused.mtrace", true, false), b = Record("decomposed.mtrace", false, false);
  Report r = RunDiff(a, b);
  DiffReportInput in{"fused.mtrace", "decomposed.mtrace", &a.trace, &b.trace, &r.result, &r.diagnoses};
  const std::string got = DiffToJson(in).dump(2) + "\n";
  const std::string golden = std::string(MAGNETON_GOLDEN_DIR) + "/diff_fused_vs_decomposed.json";
  if (const char* update = std::getenv("MAGNETON_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(golden) << got;
    GTEST_SKIP() << "rewrote " << golden;
  }
  std::ifstream in_file(golden);
  ASSERT_TRUE(in_file) << golden << " missing; run with MAGNETON_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << in_file.rdbuf();
  EXPECT_EQ(got, want.str()) << "diff output changed; if intended, regenerate with MAGNETON_UPDATE_GOLDEN=1";
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
  DiffReportInput in{"a", "b", &a.trace, &b.trace, &r.result, &r.diagnoses};
  const nlohmann::json j = DiffToJson(in)["findings"][0]["diagnosis"]["line_diagnosis"];
  EXPECT_EQ(j["mode"], "branch");
  EXPECT_EQ(j["branch_line"], 10);
  EXPECT_EQ(j["line_a"], 11);
  EXPECT_EQ(j["origin"]["kind"], "config_field");
  EXPECT_EQ(j["origin"]["value_b"], "False");
  EXPECT_EQ(j["config_key"], "model_config.Net.fuse_linear");
  const std::string text = RenderDiffTerminal(in);
  EXPECT_NE(text.find("A next  11: y = fused(x)"), std::string::npos) << text;
  EXPECT_NE(text.find("origin: config_field `self.config.fuse_linear`"), std::string::npos) << text;
  const std::string html = RenderDiffHtml(in);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Origin: config_field"), std::string::npos);
}

}  // namespace
}  // namespace magneton::report
