// Root causes as typed rules (issue 34): the kind and strength name tables
// (and that docs/REPORT_FORMAT.md lists exactly the kinds), each rule on a
// hand-built diagnosis (its evidence present, and absent: the rule proposes
// nothing), and the choice: the strongest proposal, ties in rule order, the
// others as runners-up. diagnose_root_cause_unittest.cc runs the same rules
// through Diagnose on traces built in memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "diagnose/diagnose.h"
#include "diagnose/line_diagnosis.h"
#include "diagnose/root_cause_rules.h"

namespace magneton::diagnose {
namespace {

TEST(RootCauseKindTable, NamesRoundTripAndAreTheReportFormatsStrings) {
  const std::vector<std::string> want = {"config",     "call_arg",   "env_var",   "runtime_state", "api_choice",
                                         "dtype_layout", "data_shape", "code_path", "version"};
  std::vector<std::string> got;
  for (RootCauseKind k : AllRootCauseKinds()) {
    got.push_back(RootCauseKindName(k));
    StatusOr<RootCauseKind> back = ParseRootCauseKind(RootCauseKindName(k));
    ASSERT_TRUE(back.ok()) << RootCauseKindName(k);
    EXPECT_EQ(*back, k);
  }
  EXPECT_EQ(got, want);  // the JSON contract: these strings never change silently
  EXPECT_STREQ(RootCauseKindName(RootCauseKind::kNone), "");
  EXPECT_EQ(RootCauseKindList(), "config, call_arg, env_var, runtime_state, api_choice, dtype_layout, data_shape, "
                                 "code_path or version");
}

TEST(RootCauseKindTable, AnUnknownNameIsAnErrorThatListsTheKnownOnes) {
  for (const std::string bad : {"", "api", "model_config", "Config", "kernel"}) {
    StatusOr<RootCauseKind> k = ParseRootCauseKind(bad);
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_NE(k.status().message().find("\"" + bad + "\""), std::string::npos) << k.status().message();
    EXPECT_NE(k.status().message().find(RootCauseKindList()), std::string::npos) << k.status().message();
  }
}

TEST(RootCauseKindTable, StrengthNamesAreDistinctAndOrdered) {
  std::set<std::string> names;
  for (int s = static_cast<int>(CauseStrength::kReachesEveryOp); s <= static_cast<int>(CauseStrength::kDirect); ++s) {
    const std::string name = CauseStrengthName(static_cast<CauseStrength>(s));
    EXPECT_FALSE(name.empty()) << s;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_STREQ(CauseStrengthName(CauseStrength::kNone), "");
  EXPECT_GT(CauseStrength::kDirect, CauseStrength::kLineTrace);
  EXPECT_GT(CauseStrength::kLineTrace, CauseStrength::kNamedAtDeviation);
  EXPECT_GT(CauseStrength::kOpSequence, CauseStrength::kReachesEveryOp);
}

// The backticked names at the top level of a table cell (not those inside
// parentheses, which explain them).
std::vector<std::string> TopLevelCodeNames(const std::string& cell) {
  std::vector<std::string> out;
  int depth = 0;
  for (size_t i = 0; i < cell.size(); ++i) {
    const char c = cell[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c != '`') continue;
    const size_t end = cell.find('`', i + 1);
    if (end == std::string::npos) break;
    if (depth == 0) out.push_back(cell.substr(i + 1, end - i - 1));
    i = end;
  }
  return out;
}

// The second cell of the RootCause table's row for `field`.
std::string RootCauseRow(const std::string& doc, const std::string& field) {
  const size_t section = doc.find("**RootCause**");
  if (section == std::string::npos) return "";
  const size_t row = doc.find("\n| `" + field + "` | ", section);
  if (row == std::string::npos) return "";
  const size_t start = row + field.size() + 8;
  return doc.substr(start, doc.find('\n', start) - start);
}

TEST(RootCauseKindTable, ReportFormatListsExactlyTheTablesNames) {
  std::ifstream in(std::string(MAGNETON_DOCS_DIR) + "/REPORT_FORMAT.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> kinds;
  for (RootCauseKind k : AllRootCauseKinds()) kinds.push_back(RootCauseKindName(k));
  EXPECT_EQ(TopLevelCodeNames(RootCauseRow(text.str(), "kind")), kinds);
  std::vector<std::string> strengths;
  for (int s = static_cast<int>(CauseStrength::kDirect); s > static_cast<int>(CauseStrength::kNone); --s) {
    strengths.push_back(CauseStrengthName(static_cast<CauseStrength>(s)));
  }
  EXPECT_EQ(TopLevelCodeNames(RootCauseRow(text.str(), "strength")), strengths);  // strongest first
}

TEST(RootCauseKindTable, TheCasesReadmeListsExactlyTheTablesNames) {
  std::ifstream in(std::string(MAGNETON_DOCS_DIR) + "/../cases/README.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t start = doc.find("`kind` one of ");
  ASSERT_NE(start, std::string::npos);
  const size_t end = doc.find("(docs/REPORT_FORMAT.md", start);
  ASSERT_NE(end, std::string::npos);
  std::vector<std::string> kinds;
  for (RootCauseKind k : AllRootCauseKinds()) kinds.push_back(RootCauseKindName(k));
  const std::vector<std::string> listed = TopLevelCodeNames(doc.substr(start, end - start));
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(std::vector<std::string>(listed.begin() + 1, listed.end()), kinds);  // past `kind` itself
}

// Evidence of every contrast at once, each as Diagnose would have gathered it.
Diagnosis EveryContrast() {
  Diagnosis d;
  d.kind = Kind::kSameApiDifferentKernel;
  d.costly_side = 'A';
  d.states = {{"torch.num_threads", "1", "4", "/src/a.py:5", 'A', 3, 3}};
  d.constructor_args = {{"DistributedDataParallel", "find_unused_parameters", "True", "False", "/src/train.py:17"}};
  Candidate named;
  named.config = {"model_config.Net.fuse", "False", "True", "model_config"};
  named.frame_distance = 0;
  named.evidence = "/src/net.py:10: if self.config.fuse:";
  Candidate every;
  every.config = {"env.OMP_NUM_THREADS", "1", "4", "env"};
  d.candidates = {named, every};
  d.call_args = {{"torch.linalg.svd", "full_matrices", "<default>", "False", "/src/a.py:3"}};
  d.versions = {{"transformers", "4.38.1", "4.39.3", "version"}};
  d.kernel = {true, "aten::addmm", {"aten::mm", "aten::add"}, {"kernel:fused_addmm"}};
  d.layout.found = true;
  d.layout.producer_api = "torch.to";
  d.layout.value_a = "float64";
  d.layout.value_b = "float32";
  d.layout.where = "/src/a.py:7";
  d.shapes = "A's ops read 4.0x the input elements";
  d.shape_cause = {true, "sequence_length", "128", "32", "/src/a.py:12"};
  return d;
}

TEST(RootCauseRules, EachRuleProposesItsOwnContrastAtItsStrength) {
  const Diagnosis d = EveryContrast();
  auto one = [&](CauseRule rule) {
    std::vector<RootCause> got = rule(d);
    EXPECT_FALSE(got.empty());
    return got.empty() ? RootCause{} : got.front();
  };
  RootCause r = one(RuntimeStateRule);
  EXPECT_EQ(r.kind, RootCauseKind::kRuntimeState);
  EXPECT_EQ(r.name, "torch.num_threads");
  EXPECT_EQ(r.where, "/src/a.py:5");
  EXPECT_EQ(r.strength, CauseStrength::kDirect);
  r = one(ConstructorArgRule);
  EXPECT_EQ(r.kind, RootCauseKind::kCallArg);
  EXPECT_EQ(r.name, "DistributedDataParallel.find_unused_parameters");
  EXPECT_EQ(r.where, "/src/train.py:17");
  EXPECT_EQ(r.strength, CauseStrength::kDirect);
  r = one(DeviationConfigRule);
  EXPECT_EQ(r.kind, RootCauseKind::kConfig);
  EXPECT_EQ(r.name, "model_config.Net.fuse");
  EXPECT_EQ(r.where, "/src/net.py:10");
  EXPECT_EQ(r.strength, CauseStrength::kNamedAtDeviation);
  EXPECT_EQ(DeviationConfigRule(d).size(), 1u);  // the env entry is named nowhere
  r = one(CallArgRule);
  EXPECT_EQ(r.kind, RootCauseKind::kCallArg);
  EXPECT_EQ(r.name, "full_matrices");
  EXPECT_EQ(r.strength, CauseStrength::kIssuingPath);
  r = one(VersionRule);
  EXPECT_EQ(r.kind, RootCauseKind::kVersion);
  EXPECT_EQ(r.name, "transformers");
  EXPECT_EQ(r.strength, CauseStrength::kIssuingPath);
  r = one(KernelRule);
  EXPECT_EQ(r.kind, RootCauseKind::kApiChoice);
  EXPECT_EQ(r.name, "torch.addmm");
  EXPECT_EQ(r.value_a, "aten::mm, aten::add");
  EXPECT_EQ(r.strength, CauseStrength::kOpContrast);
  r = one(LayoutRule);
  EXPECT_EQ(r.kind, RootCauseKind::kDtypeLayout);
  EXPECT_EQ(r.name, "torch.to");
  EXPECT_EQ(r.strength, CauseStrength::kOpContrast);
  r = one(DataShapeRule);
  EXPECT_EQ(r.kind, RootCauseKind::kDataShape);
  EXPECT_EQ(r.name, "sequence_length");
  EXPECT_EQ(r.value_a, "128");
  EXPECT_EQ(r.strength, CauseStrength::kOpContrast);
  r = one(ReachesEveryOpRule);
  EXPECT_EQ(r.kind, RootCauseKind::kEnvVar);
  EXPECT_EQ(r.name, "env.OMP_NUM_THREADS");
  EXPECT_EQ(r.strength, CauseStrength::kReachesEveryOp);
  // Same ops: no op-sequence rule applies.
  EXPECT_TRUE(SameCallConfigRule(d).empty());
  EXPECT_TRUE(SubstitutedOpsRule(d).empty());
  EXPECT_TRUE(ExtraWorkRule(d).empty());
}

TEST(RootCauseRules, WithoutItsEvidenceARuleProposesNothing) {
  Diagnosis none;
  for (const NamedCauseRule& rule : RootCauseRules()) EXPECT_TRUE(rule.propose(none).empty()) << rule.name;
  EXPECT_FALSE(ChooseRootCause(none).found());
  // A candidate named nowhere is no deviation-point cause, and a model config
  // field does not reach every op.
  Candidate c;
  c.config = {"model_config.Net.fuse", "False", "True", "model_config"};
  none.candidates = {c};
  EXPECT_TRUE(DeviationConfigRule(none).empty());
  EXPECT_TRUE(ReachesEveryOpRule(none).empty());
  // Larger inputs of different ops are no data shape.
  Diagnosis different = EveryContrast();
  different.kind = Kind::kDifferentOps;
  EXPECT_TRUE(DataShapeRule(different).empty());
}

TEST(RootCauseRules, TheLineTraceStrengthensTheEntryItFollowedBackTo) {
  Diagnosis d = EveryContrast();
  auto line = std::make_shared<LineDiagnosis>();
  line->found = true;
  line->config_key = "model_config.Net.fuse";
  line->file = "/src/net.py";
  line->divergence.branch_line = 10;
  line->origin = {OriginKind::kConfigField, "self.config.fuse", "/src/config.py", 4, "False", "True"};
  d.line = line;
  std::vector<RootCause> got = DeviationConfigRule(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].strength, CauseStrength::kLineTrace);
  EXPECT_EQ(got[0].where, "/src/config.py:4");
  EXPECT_NE(got[0].evidence.find("line trace"), std::string::npos) << got[0].evidence;
}

TEST(RootCauseRules, DifferentOpsRules) {
  Diagnosis d;
  d.kind = Kind::kDifferentOps;
  d.costly_side = 'B';
  d.only_costly = {"aten::linalg_eigvals"};
  d.only_cheap = {"aten::linalg_eigvalsh"};
  d.costly_op = "aten::linalg_eigvals";
  SourceSite s;
  s.user_frame = "/src/b.py:4:main";
  s.op_count = 1;
  d.sites_costly = {s};
  std::vector<RootCause> got = SubstitutedOpsRule(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, RootCauseKind::kApiChoice);
  EXPECT_EQ(got[0].name, "torch.linalg.eigvals");
  EXPECT_EQ(got[0].value_b, "torch.linalg.eigvals");  // B is the costly side
  EXPECT_EQ(got[0].value_a, "torch.linalg.eigvalsh");
  EXPECT_EQ(got[0].strength, CauseStrength::kOpSequence);
  EXPECT_TRUE(ExtraWorkRule(d).empty());  // substituted, not extra
  // Only the costly side's ops: extra work.
  d.only_cheap.clear();
  EXPECT_TRUE(SubstitutedOpsRule(d).empty());
  got = ExtraWorkRule(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, RootCauseKind::kCodePath);
  EXPECT_EQ(got[0].value_b, "runs aten::linalg_eigvals");
  EXPECT_EQ(got[0].value_a, "does not");
  // The same op kinds, one more often.
  d.only_costly.clear();
  d.count_op = "aten::mm";
  got = ExtraWorkRule(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "torch.mm");
  // Both sides' ops issued through the same call: what it was given decides.
  Candidate c;
  c.config = {"call.generate.use_cache", "True", "False", "call_arg"};
  d.candidates = {c};
  EXPECT_TRUE(SameCallConfigRule(d).empty());  // the cheaper side has no site there
  d.sites_efficient = {s};
  got = SameCallConfigRule(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, RootCauseKind::kCallArg);
  EXPECT_EQ(got[0].name, "call.generate.use_cache");
  EXPECT_EQ(got[0].where, "/src/b.py:4");  // the user's call, not where the library reads it
  EXPECT_EQ(got[0].strength, CauseStrength::kOpSequence);
  // Ranked ahead of the count's code_path, which has the same strength.
  EXPECT_EQ(ChooseRootCause(d).kind, RootCauseKind::kCallArg);
}

TEST(RootCauseRules, TheStrongestProposalWinsAndTheOthersAreRunnersUp) {
  Diagnosis d = EveryContrast();
  d.situation = "A spends more";
  FinishDiagnosis(&d);
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kRuntimeState);
  EXPECT_EQ(d.root_cause.strength, CauseStrength::kDirect);
  std::vector<std::string> runners;
  for (const RootCause& r : d.cause_alternatives) runners.push_back(r.name);
  EXPECT_EQ(runners, (std::vector<std::string>{"DistributedDataParallel.find_unused_parameters",
                                               "model_config.Net.fuse", "full_matrices", "transformers", "torch.addmm",
                                               "torch.to", "sequence_length", "env.OMP_NUM_THREADS"}));
  for (size_t i = 1; i < d.cause_alternatives.size(); ++i) {
    EXPECT_GE(d.cause_alternatives[i - 1].strength, d.cause_alternatives[i].strength) << i;
  }
  EXPECT_NE(CauseStrengthLine(d, 2).find("strength: direct; runners-up: call_arg "
                                         "`DistributedDataParallel.find_unused_parameters` (direct), config "
                                         "`model_config.Net.fuse` (deviation_point), 6 more"),
            std::string::npos)
      << CauseStrengthLine(d, 2);
  // Take the evidence away one contrast at a time: the next in line is the cause.
  d.states.clear();
  EXPECT_EQ(ChooseRootCause(d).name, "DistributedDataParallel.find_unused_parameters");
  d.constructor_args.clear();
  EXPECT_EQ(ChooseRootCause(d).name, "model_config.Net.fuse");
  d.candidates.erase(d.candidates.begin());
  EXPECT_EQ(ChooseRootCause(d).name, "full_matrices");
  d.call_args.clear();
  EXPECT_EQ(ChooseRootCause(d).kind, RootCauseKind::kVersion);
  d.versions.clear();
  EXPECT_EQ(ChooseRootCause(d).name, "torch.addmm");
  d.kernel.found = false;
  EXPECT_EQ(ChooseRootCause(d).name, "torch.to");
  d.layout.found = false;
  EXPECT_EQ(ChooseRootCause(d).name, "sequence_length");
  d.shapes.clear();
  EXPECT_EQ(ChooseRootCause(d).name, "env.OMP_NUM_THREADS");
  d.candidates.clear();
  EXPECT_FALSE(ChooseRootCause(d).found());
}

TEST(RootCauseRules, RuleOrderFollowsStrength) {
  // RootCauseRules() lists the rules by the strength they propose, so the
  // tie-break (rule order) reads the same as the strengths.
  const Diagnosis d = EveryContrast();
  CauseStrength last = CauseStrength::kDirect;
  for (const NamedCauseRule& rule : RootCauseRules()) {
    for (const RootCause& r : rule.propose(d)) {
      EXPECT_LE(r.strength, last) << rule.name;
      last = std::min(last, r.strength);
    }
  }
}

TEST(RootCauseRules, OneProposalPerKindAndName) {
  Diagnosis d;
  d.kind = Kind::kDifferentOps;
  Candidate c;
  c.config = {"env.OMP_NUM_THREADS", "1", "4", "env"};
  c.frame_distance = 0;
  c.evidence = "/src/a.py:2: os.environ['OMP_NUM_THREADS']";
  d.candidates = {c};
  // Named at the deviation point and reaching every op: proposed once, at the stronger.
  std::vector<RootCause> got = ProposeCauses(d);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].strength, CauseStrength::kNamedAtDeviation);
}

}  // namespace
}  // namespace magneton::diagnose
