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
    "root_cause": {"kind": "code_path", "name": "Tensor.contiguous", "description": "permute + contiguous around F.layer_norm"}})");
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

TEST(EvalExpected, RootCauseNeedsAKindFromTheListAndAName) {
  auto e = ParseExpected(R"({"id": "x", "category": "A", "waste_side": "a",
    "root_cause": {"kind": "api_choice", "name": "torch.linalg.eigvals", "aliases": ["aten::linalg_eigvals"],
                   "value_a": "eigvals", "value_b": "eigvalsh", "description": "eigvals on a symmetric matrix"}})");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->root_cause_kind, diagnose::RootCauseKind::kApiChoice);
  EXPECT_EQ(e->root_cause_name, "torch.linalg.eigvals");
  EXPECT_EQ(e->root_cause_aliases, std::vector<std::string>{"aten::linalg_eigvals"});
  EXPECT_EQ(e->root_cause_description, "eigvals on a symmetric matrix");
  // The old free-text form is refused with a reason, as is a kind not in the list.
  auto old = ParseExpected(R"({"id": "x", "category": "A", "waste_side": "a",
    "root_cause": {"kind": "api", "variable": "Tensor.sort for top-k"}})");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("root_cause needs"), std::string::npos) << old.status().message();
  auto unknown = ParseExpected(R"({"id": "x", "category": "M", "waste_side": "a",
    "root_cause": {"kind": "model_config", "name": "use_cache"}})");
  ASSERT_FALSE(unknown.ok());
  // The message names the kind it did not know and the ones it knows (the one table).
  EXPECT_NE(unknown.status().message().find("\"model_config\""), std::string::npos) << unknown.status().message();
  EXPECT_NE(unknown.status().message().find(diagnose::RootCauseKindList()), std::string::npos);
  // A control need not name a cause, but a kind it names must be one.
  EXPECT_TRUE(ParseExpected(R"({"id": "c", "category": "control", "root_cause": null})").ok());
  EXPECT_FALSE(ParseExpected(R"({"id": "c", "category": "control", "root_cause": {"kind": "api"}})").ok());
}

TEST(EvalScore, NamesAgreeOnlyWhenOneEndsTheOther) {
  EXPECT_TRUE(NamesAgree("use_cache", "call.generate.use_cache"));
  EXPECT_TRUE(NamesAgree("model_config.GPT2LMHeadModel._attn_implementation", "_attn_implementation"));
  EXPECT_TRUE(NamesAgree("torch.backends.mkldnn.enabled", "Torch.Backends.MKLDNN.enabled"));
  EXPECT_TRUE(NamesAgree("aten::linalg_eigvals", "linalg_eigvals"));
  EXPECT_FALSE(NamesAgree("torch.backends.mkldnn.enabled", "torch.backends.cudnn.enabled"));
  EXPECT_FALSE(NamesAgree("torch.stft", "jax.scipy.signal.stft"));
  EXPECT_FALSE(NamesAgree("torch.linalg.eigvals", "aten::linalg_eigvals"));
  EXPECT_FALSE(NamesAgree("", "x"));
  EXPECT_TRUE(NamesAgree("torch.contiguous", "Tensor.contiguous"));
  EXPECT_TRUE(NamesAgree("aten::repeat_interleave", "torch.repeat_interleave"));
  EXPECT_FALSE(NamesAgree("torch.contiguous", "numpy.contiguous"));
}

TEST(EvalScore, NormalizeName) {
  EXPECT_EQ(NormalizeName("model_config.GPT2LMHeadModel._attn_implementation"), "attn_implementation");
  EXPECT_EQ(NormalizeName("aten::linalg_eigvals"), "linalg_eigvals");
  EXPECT_EQ(NormalizeName("torch.linalg.eigvals"), "eigvals");
  EXPECT_EQ(NormalizeName("jax._src/scipy/linalg.expm"), "expm");
  EXPECT_EQ(NormalizeName("env.OMP_NUM_THREADS"), "omp_num_threads");
}

// Evidence of one waste finding whose diagnosis has `cause` and `sentence`.
Evidence WithCause(const Expected& e, diagnose::RootCause cause, const std::string& sentence) {
  Trace t = SmallTrace();
  detect::DetectResult r;
  r.findings = {Waste('A', {2}, {"aten::addmm"})};
  diagnose::Diagnosis d;
  d.finding_index = 0;
  d.root_cause = std::move(cause);
  d.sentence = sentence;
  std::vector<diagnose::Diagnosis> ds = {d};
  (void)e;
  return ExtractEvidence(t, t, r, &ds);
}

TEST(EvalScore, RootCauseRightOnKindAndNameOnly) {
  auto e = ParseExpected(R"({"id": "kv", "category": "M", "waste_side": "a", "region": {"ops": ["aten::addmm"]},
    "root_cause": {"kind": "call_arg", "name": "use_cache", "aliases": ["generate.use_cache"],
                   "description": "use_cache in generate"}})");
  ASSERT_TRUE(e.ok()) << e.status().message();
  // Right kind and name (another spelling of the same key).
  std::string why;
  Evidence ev = WithCause(*e, {diagnose::RootCauseKind::kCallArg, "call.generate.use_cache", "False", "True", "", ""}, "");
  EXPECT_TRUE(RootCauseRight(*e, ev, &why)) << why;
  CaseScore s = ScoreCase(*e, ev);
  EXPECT_TRUE(s.detected);
  EXPECT_TRUE(s.root_cause_right) << s.note;
  // The right name under the wrong kind is wrong.
  ev = WithCause(*e, {diagnose::RootCauseKind::kConfig, "call.generate.use_cache", "False", "True", "", ""}, "");
  EXPECT_FALSE(RootCauseRight(*e, ev, &why));
  EXPECT_NE(why.find("expected kind call_arg"), std::string::npos) << why;
  // The right kind with another name is wrong, though the sentence names use_cache.
  ev = WithCause(*e, {diagnose::RootCauseKind::kCallArg, "call.generate.max_new_tokens", "4", "8", "", ""},
                 "A spends more; use_cache is False in A and True in B");
  EXPECT_FALSE(RootCauseRight(*e, ev, nullptr));
  EXPECT_FALSE(ScoreCase(*e, ev).root_cause_right);
  // No structured cause at all: the name only in sentence text is not right.
  ev = WithCause(*e, {}, "Most likely cause: `call.generate.use_cache`; set use_cache as B does");
  EXPECT_FALSE(RootCauseRight(*e, ev, &why));
  EXPECT_EQ(why, "no root cause");
  // A longer identifier that contains the name is not the name.
  ev = WithCause(*e, {diagnose::RootCauseKind::kCallArg, "use_cache_hint", "", "", "", ""}, "");
  EXPECT_FALSE(RootCauseRight(*e, ev, nullptr));
}

TEST(EvalScore, AliasesAreOtherSpellings) {
  auto e = ParseExpected(R"({"id": "h", "category": "A", "waste_side": "a",
    "root_cause": {"kind": "api_choice", "name": "torch.linalg.eigvals", "aliases": ["aten::linalg_eigvals"],
                   "description": "x"}})");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(RootCauseRight(*e, WithCause(*e, {diagnose::RootCauseKind::kApiChoice, "aten::linalg_eigvals", "", "", "", ""}, ""), nullptr));
  EXPECT_TRUE(RootCauseRight(*e, WithCause(*e, {diagnose::RootCauseKind::kApiChoice, "torch.linalg.eigvals", "", "", "", ""}, ""), nullptr));
  EXPECT_FALSE(RootCauseRight(*e, WithCause(*e, {diagnose::RootCauseKind::kApiChoice, "torch.linalg.eigvalsh", "", "", "", ""}, ""), nullptr));
  // The right name on the other side's waste finding is not this case's cause.
  Trace t = SmallTrace();
  detect::DetectResult r;
  r.findings = {Waste('B', {2}, {"aten::addmm"})};
  diagnose::Diagnosis d;
  d.root_cause = {diagnose::RootCauseKind::kApiChoice, "torch.linalg.eigvals", "", "", "", ""};
  std::vector<diagnose::Diagnosis> ds = {d};
  std::string why;
  EXPECT_FALSE(RootCauseRight(*e, ExtractEvidence(t, t, r, &ds), &why));
  EXPECT_EQ(why, "top waste finding on side B");
  // The right cause on a finding that is not waste scores nothing.
  Evidence none;
  none.root_cause = {diagnose::RootCauseKind::kApiChoice, "torch.linalg.eigvals", "", "", "", ""};
  EXPECT_FALSE(RootCauseRight(*e, none, nullptr));
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

// A distributed case (job_case.cc): the ranks' results merged, scored on the
// union of their findings.
CaseResult RankResult(bool detected, int waste, double top_uj, double energy_a_uj, double energy_b_uj) {
  CaseResult r;
  r.ok = true;
  r.domain = "cpu-estimate";
  r.energy_a_uj = energy_a_uj;
  r.energy_b_uj = energy_b_uj;
  r.ops_a = 10;
  r.ops_b = 8;
  r.settings = {{1e-2, 0.1}, {1e-2, 0.5}};
  CaseScore s;
  s.detected = detected;
  s.false_positive = waste > 0;
  r.scores = {s, CaseScore{}};
  r.waste_findings = {waste, 0};
  r.top_saving_uj = {top_uj, 0};
  r.headline = s;
  r.headline.note = detected ? "found" : "missed";
  r.headline_evidence.has_waste = waste > 0;
  r.headline_evidence.saving_uj = top_uj;
  r.headline_sentence = detected ? "A runs the search" : "";
  return r;
}

TEST(EvalJob, TheRankWithTheLargestTopFindingStandsForTheJob) {
  // Rank 0 has a small unrelated waste finding; rank 1 the expected region, saving more.
  const CaseResult merged = MergeRankResults(Positive(), {{0, RankResult(false, 1, 50, 1000, 900)},
                                                          {1, RankResult(true, 2, 400, 3000, 1000)}});
  ASSERT_TRUE(merged.ok) << merged.error;
  EXPECT_EQ(merged.ranks, 2);
  EXPECT_EQ(merged.headline_rank, 1);
  EXPECT_TRUE(merged.headline.detected);
  EXPECT_TRUE(merged.scores[0].detected);
  EXPECT_EQ(merged.waste_findings[0], 3);  // the union
  EXPECT_EQ(merged.waste_findings[1], 0);
  EXPECT_DOUBLE_EQ(merged.energy_a_uj, 4000);
  EXPECT_DOUBLE_EQ(merged.energy_b_uj, 1900);
  EXPECT_EQ(merged.ops_a, 20u);
  EXPECT_EQ(merged.headline_sentence, "rank 1: A runs the search");
  EXPECT_NE(merged.headline.note.find("rank 1 of 2"), std::string::npos) << merged.headline.note;

  // The other way round: the unrelated finding saves more, so the job's top finding is not the expected one.
  const CaseResult missed = MergeRankResults(Positive(), {{0, RankResult(false, 1, 900, 1000, 900)},
                                                          {1, RankResult(true, 1, 400, 3000, 1000)}});
  EXPECT_EQ(missed.headline_rank, 0);
  EXPECT_FALSE(missed.headline.detected);
  EXPECT_FALSE(missed.scores[0].detected);
}

TEST(EvalJob, AControlWithWasteOnAnyRankIsAFalsePositive) {
  auto control = ParseExpected(R"({"id": "c", "category": "control"})");
  ASSERT_TRUE(control.ok());
  const CaseResult clean = MergeRankResults(*control, {{0, RankResult(false, 0, 0, 1, 1)},
                                                       {1, RankResult(false, 0, 0, 1, 1)}});
  EXPECT_FALSE(clean.headline.false_positive);
  EXPECT_FALSE(clean.scores[0].false_positive);
  const CaseResult fp = MergeRankResults(*control, {{0, RankResult(false, 0, 0, 1, 1)},
                                                    {1, RankResult(false, 1, 10, 1, 1)}});
  EXPECT_TRUE(fp.headline.false_positive);
  EXPECT_TRUE(fp.scores[0].false_positive);
}

TEST(EvalJob, ARankThatFailedFailsTheCase) {
  CaseResult bad;
  bad.error = "cannot load the recordings: x";
  const CaseResult merged = MergeRankResults(Positive(), {{0, RankResult(true, 1, 10, 1, 1)}, {1, bad}});
  EXPECT_FALSE(merged.ok);
  EXPECT_NE(merged.error.find("rank 1: cannot load"), std::string::npos) << merged.error;
  EXPECT_FALSE(MergeRankResults(Positive(), {}).ok);
}

}  // namespace
}  // namespace magneton::eval
