// Scoring of `magneton eval` on synthetic diff results: detection, root cause,
// false positives on controls, and precision / recall / F1 over cases.
#include <gtest/gtest.h>

#include "eval/eval.h"

namespace magneton::eval {
namespace {

// A trace with ops: 0 permute (scope Net/norm, frame a.py:10:forward), 1 contiguous (nested in 0),
// 2 addmm (scope Net/fc, frame a.py:20:forward).
Trace SmallTrace() {
  Trace t;
  t.strings = {"aten::permute", "aten::contiguous", "aten::addmm", "norm", "fc", "Net", "/x/cases/c/a.py",
               "forward"};
  t.scopes = {{0, 5, kNoId, kNoId}, {1, 3, kNoId, 0}, {2, 4, kNoId, 0}};
  t.frames = {{0, 6, 10, 7}, {1, 6, 20, 7}};
  t.call_paths = {{0, 0, kNoId}, {1, 1, kNoId}};
  OpEvent o0;
  o0.id = 0, o0.name_id = 0, o0.scope_id = 1, o0.call_path_id = 0;
  OpEvent o1;
  o1.id = 1, o1.name_id = 1, o1.parent_id = 0, o1.scope_id = 1, o1.call_path_id = 0;
  OpEvent o2;
  o2.id = 2, o2.name_id = 2, o2.scope_id = 2, o2.call_path_id = 1;
  t.ops = {o0, o1, o2};
  return t;
}

detect::Finding Waste(char side, std::vector<int64_t> ops, std::vector<std::string> names) {
  detect::Finding f;
  f.verdict = detect::Verdict::kWaste;
  f.wasteful_side = side;
  f.saving_uj = 100;
  f.share_of_total = 0.2;
  detect::RegionInstance inst;
  (side == 'B' ? inst.ops_b : inst.ops_a) = ops;
  f.instances.push_back(inst);
  (side == 'B' ? f.names_b : f.names_a) = names;
  return f;
}

Expected Positive() {
  auto e = ParseExpected(R"({"id": "p", "category": "A", "waste_side": "a",
    "region": {"ops": ["aten::contiguous"], "source_contains": "a.py"},
    "root_cause": {"kind": "api", "variable": "permute + contiguous around F.layer_norm"}})");
  EXPECT_TRUE(e.ok());
  return *e;
}

TEST(EvalExpected, ParsesCasesAndControls) {
  Expected p = Positive();
  EXPECT_EQ(p.waste_side, 'A');
  EXPECT_EQ(p.region_ops, std::vector<std::string>{"aten::contiguous"});
  EXPECT_EQ(p.source_contains, "a.py");
  auto c = ParseExpected(R"({"id": "identical", "category": "control", "waste_side": null, "region": null,
    "root_cause": null})");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->is_control());
  EXPECT_FALSE(ParseExpected(R"({"id": "x", "category": "Q"})").ok());
  EXPECT_FALSE(ParseExpected(R"({"id": "x", "category": "M"})").ok());  // no waste side
  EXPECT_FALSE(ParseExpected("not json").ok());
}

TEST(EvalScore, NestedOpOfTheTopWasteFindingDetects) {
  Trace t = SmallTrace();
  detect::DetectResult r;
  r.findings.push_back(Waste('A', {0}, {"aten::permute"}));
  Evidence ev = ExtractEvidence(t, t, r, nullptr);
  EXPECT_TRUE(ev.has_waste);
  EXPECT_EQ(ev.op_names, (std::vector<std::string>{"aten::contiguous", "aten::permute"}));
  EXPECT_EQ(ev.scopes, std::vector<std::string>{"Net/norm"});
  CaseScore s = ScoreDetection(Positive(), ev);
  EXPECT_TRUE(s.detected) << s.note;
}

TEST(EvalScore, WrongSideOrWrongRegionIsMissed) {
  Trace t = SmallTrace();
  detect::DetectResult r;
  r.findings.push_back(Waste('B', {0}, {"aten::permute"}));
  EXPECT_FALSE(ScoreDetection(Positive(), ExtractEvidence(t, t, r, nullptr)).detected);

  Expected e = Positive();
  e.source_contains = "b.py";
  r.findings = {Waste('A', {2}, {"aten::addmm"})};
  EXPECT_FALSE(ScoreDetection(e, ExtractEvidence(t, t, r, nullptr)).detected);
  e.scope_contains = "Net/fc";  // the scope rule alone suffices
  EXPECT_TRUE(ScoreDetection(e, ExtractEvidence(t, t, r, nullptr)).detected);
  e.scope_contains.clear();
  e.source_contains = "a.py";  // so does the source rule
  EXPECT_TRUE(ScoreDetection(e, ExtractEvidence(t, t, r, nullptr)).detected);
}

TEST(EvalScore, OnlyTheTopWasteFindingCounts) {
  Trace t = SmallTrace();
  detect::DetectResult r;
  detect::Finding equal = Waste('A', {0}, {"aten::permute"});
  equal.verdict = detect::Verdict::kEqual;
  r.findings = {Waste('A', {2}, {"aten::addmm"}), Waste('A', {0}, {"aten::permute"}), equal};
  Expected e = Positive();
  e.source_contains.clear();
  Evidence ev = ExtractEvidence(t, t, r, nullptr);
  EXPECT_EQ(ev.waste_findings, 2);
  EXPECT_FALSE(ScoreDetection(e, ev).detected);
  EXPECT_EQ(ExpectedWasteRank(e, t, t, r), 2);  // but it is the second waste finding
  r.findings = {equal};  // equal findings are not detections
  EXPECT_FALSE(ScoreDetection(e, ExtractEvidence(t, t, r, nullptr)).detected);
  EXPECT_EQ(ExpectedWasteRank(e, t, t, r), 0);
}

TEST(EvalScore, ControlWithAnyWasteIsAFalsePositive) {
  auto c = ParseExpected(R"({"id": "identical", "category": "control"})");
  ASSERT_TRUE(c.ok());
  Trace t = SmallTrace();
  detect::DetectResult r;
  detect::Finding tradeoff = Waste('A', {2}, {"aten::addmm"});
  tradeoff.verdict = detect::Verdict::kTradeOff;
  r.findings = {tradeoff};
  EXPECT_FALSE(ScoreCase(*c, ExtractEvidence(t, t, r, nullptr)).false_positive);
  r.findings.push_back(Waste('B', {2}, {"aten::addmm"}));
  CaseScore s = ScoreCase(*c, ExtractEvidence(t, t, r, nullptr));
  EXPECT_TRUE(s.false_positive);
  EXPECT_FALSE(s.detected);
}

TEST(EvalScore, RootCauseFromCandidatesForConfig) {
  auto e = ParseExpected(R"({"id": "kv", "category": "M", "waste_side": "a", "region": {"ops": ["aten::addmm"]},
    "root_cause": {"kind": "model_config", "variable": "_attn_implementation"}})");
  ASSERT_TRUE(e.ok());
  Trace t = SmallTrace();
  detect::DetectResult r;
  r.findings = {Waste('A', {2}, {"aten::addmm"})};
  diagnose::Diagnosis d;
  d.finding_index = 0;
  for (const char* key : {"env.OMP_NUM_THREADS", "generate.max_new_tokens", "x.y", "config._attn_implementation"}) {
    diagnose::Candidate c;
    c.config.key = key;
    d.candidates.push_back(c);
  }
  std::vector<diagnose::Diagnosis> ds = {d};
  CaseScore s = ScoreCase(*e, ExtractEvidence(t, t, r, &ds));
  EXPECT_TRUE(s.detected);
  EXPECT_FALSE(s.root_cause_right) << "the 4th candidate is not a top candidate";
  std::swap(ds[0].candidates[0], ds[0].candidates[3]);
  EXPECT_TRUE(ScoreCase(*e, ExtractEvidence(t, t, r, &ds)).root_cause_right);
  // Named in the sentence instead.
  ds[0].candidates.clear();
  ds[0].sentence = "A spends more; attn_implementation is 'eager' in A and 'sdpa' in B";
  EXPECT_TRUE(ScoreCase(*e, ExtractEvidence(t, t, r, &ds)).root_cause_right);
  ds[0].sentence = "A spends more; my_attn_implementation_x differs";  // not a whole word
  EXPECT_FALSE(ScoreCase(*e, ExtractEvidence(t, t, r, &ds)).root_cause_right);
}

TEST(EvalScore, RootCauseFromOpNamesForApi) {
  auto e = ParseExpected(R"({"id": "t", "category": "A", "waste_side": "a", "region": {"ops": ["aten::sort"]},
    "root_cause": {"kind": "api", "variable": "Tensor.sort for top-k"}})");
  ASSERT_TRUE(e.ok());
  Evidence ev;
  ev.has_waste = true;
  ev.waste_findings = 1;
  ev.wasteful_side = 'A';
  ev.op_names = {"aten::sort", "aten::slice"};
  std::string why;
  EXPECT_TRUE(RootCauseNamed(*e, ev, &why));
  EXPECT_EQ(why, "op sort");
  ev.op_names = {"aten::argsort"};
  EXPECT_FALSE(RootCauseNamed(*e, ev, nullptr));
  ev.diagnosis_text = "issued at /x/a.py:12:sample\naten::sort";
  EXPECT_TRUE(RootCauseNamed(*e, ev, nullptr));
  // A dotted API matches its ATen name (namespaces joined with '_').
  e->root_cause_variable = "torch.linalg.eigvals";
  ev.diagnosis_text.clear();
  ev.op_names = {"aten::linalg_eigvals", "aten::real"};
  EXPECT_TRUE(RootCauseNamed(*e, ev, &why));
  EXPECT_EQ(why, "op linalg_eigvals");
  ev.op_names = {"aten::linalg_eigvalsh"};
  EXPECT_FALSE(RootCauseNamed(*e, ev, nullptr));
  // No identifier: plain words of 4+ letters.
  e->root_cause_variable = "batch order (padding to the longest)";
  ev.diagnosis_text = "the padded batches";
  EXPECT_FALSE(RootCauseNamed(*e, ev, nullptr));
  ev.diagnosis_text = "sort the batch by length";
  EXPECT_TRUE(RootCauseNamed(*e, ev, nullptr));
  // A dotted API is named by its function in a call-path frame (the api_frame
  // of a site): the function's own name, not a longer identifier.
  e->root_cause_variable = "jax.scipy.linalg.expm on a batch";
  ev.op_names = {"jax::dot_general"};
  ev.diagnosis_text = "issued at /x/a.py:14:<module> through /site-packages/jax/_src/scipy/linalg.py:312:expm";
  EXPECT_TRUE(RootCauseNamed(*e, ev, &why));
  EXPECT_EQ(why, "diagnosis names expm");
  ev.diagnosis_text = "issued at /x/a.py:14:<module> through /site-packages/jax/_src/scipy/linalg.py:312:expm_frechet";
  EXPECT_FALSE(RootCauseNamed(*e, ev, nullptr));
  // Beside an identifier, a plain word names the API only as an op of the
  // region: the copy, not the layer norm it surrounds; never "around".
  e->root_cause_variable = "permute + contiguous around F.layer_norm";
  ev.op_names = {"aten::permute", "aten::contiguous", "aten::clone", "aten::copy_"};
  ev.diagnosis_text = "A runs [aten::contiguous] where B runs [nothing]";
  EXPECT_TRUE(RootCauseNamed(*e, ev, &why));
  EXPECT_EQ(why, "op permute");
  ev.op_names = {"aten::add"};
  ev.diagnosis_text = "the work around it; permute the batch";
  EXPECT_FALSE(RootCauseNamed(*e, ev, nullptr));
  // The case folder's name in a path does not count.
  e->root_cause_variable = "batch order (padding to the longest)";
  e->id = "padding";
  ev.diagnosis_text = "issued at /x/cases/padding/common.py:26:encode";
  EXPECT_FALSE(RootCauseNamed(*e, ev, nullptr));
}

TEST(EvalCounts, PrecisionRecallF1) {
  auto make = [](const char* category, bool detected, bool fp) {
    CaseResult r;
    r.expected.category = category;
    r.ok = true;
    CaseScore s;
    s.detected = detected;
    s.false_positive = fp;
    r.scores = {s};
    return r;
  };
  std::vector<CaseResult> cases = {make("M", true, false), make("A", true, false), make("R", false, false),
                                   make("control", false, true), make("control", false, false)};
  CaseResult failed;
  failed.expected.category = "A";
  cases.push_back(failed);  // a case that did not run is a miss
  Counts c = CountAt(cases, 0);
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(c.fn, 2);
  EXPECT_EQ(c.fp, 1);
  EXPECT_NEAR(c.precision(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(c.recall(), 0.5, 1e-12);
  EXPECT_NEAR(c.f1(), 2 * (2.0 / 3) * 0.5 / (2.0 / 3 + 0.5), 1e-12);
  EXPECT_EQ(Counts{}.f1(), 0.0);
}

TEST(EvalReport, MarkdownAndJsonCarryProvenance) {
  Report rep;
  rep.command = "magneton eval cases/";
  rep.date = "2026-01-01 00:00:00 UTC";
  rep.options.epsilons = {1e-2};
  rep.options.taus = {0.1};
  CaseResult c;
  c.expected.id = "kv";
  c.expected.category = "M";
  c.ok = true;
  c.energy_a_uj = 2e6;
  c.energy_b_uj = 5e5;
  c.settings = {{1e-2, 0.1}};
  c.scores = {CaseScore{true, false, false, "x"}};
  c.waste_findings = {1};
  c.headline = c.scores[0];
  rep.cases = {c};
  const std::string md = RenderMarkdown(rep);
  EXPECT_NE(md.find("+75.0% (estimated)"), std::string::npos) << md;
  EXPECT_NE(md.find("2 J (estimated)"), std::string::npos) << md;
  EXPECT_NE(md.find("`magneton eval cases/`"), std::string::npos);
  EXPECT_NE(md.find("precision 1.00, recall 1.00, F1 1.00"), std::string::npos) << md;
  nlohmann::json j = ToJson(rep);
  EXPECT_EQ(j["cases"][0]["energy"]["provenance"], "estimated");
  EXPECT_EQ(j["sweep"][0]["tp"], 1);
}

}  // namespace
}  // namespace magneton::eval
