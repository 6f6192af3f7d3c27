// Evaluation on the known-case suite (`magneton eval cases/`, issue 6): every
// case folder holds a wasteful run a.py, an efficient run b.py and the ground
// truth expected.json. Each case is recorded (by a caller-supplied recorder),
// diffed in-process over a sweep of the tensor tolerance epsilon and the energy
// threshold tau (matching once per epsilon, re-classifying per tau), and
// scored: detection, root cause, job saving, false positives on the
// negative controls; precision / recall / F1 per (epsilon, tau).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "detect/detect.h"
#include "diagnose/diagnose.h"
#include "magneton/analysis.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::eval {

// expected.json (cases/README.md).
struct Expected {
  std::string id;
  std::string category;    // "M", "A", "R" or "control"
  char waste_side = 0;     // 'A' or 'B' (upper case, as detect::Finding::wasteful_side); 0 for controls
  std::vector<std::string> region_ops;  // op names of the waste region
  std::string scope_contains;           // module scope path substring ("" = not given)
  std::string source_contains;          // call-path frame substring ("" = not given)
  // The structured root cause (ROOT_CAUSE_FORMAT / docs/EVALUATION.md): kind
  // and name are scored, aliases are other spellings of the name;
  // description is for humans and never scored.
  diagnose::RootCauseKind root_cause_kind = diagnose::RootCauseKind::kNone;  // kNone: none given (controls)
  std::string root_cause_name;
  std::vector<std::string> root_cause_aliases;
  std::string root_cause_value_a, root_cause_value_b;
  std::string root_cause_description;
  std::string fix;
  bool needs_gpu = false;
  bool is_control() const { return category == "control"; }
};
StatusOr<Expected> ParseExpected(const std::string& json_text);

struct CaseDir {
  std::string id;    // folder name
  std::string path;  // the folder
};
// Every sub-folder of `root` holding a.py, b.py and expected.json, by id.
StatusOr<std::vector<CaseDir>> FindCases(const std::string& root);

// The `--quick` subset: small cases that together fit CI (about 5 minutes on
// two cores, recording included): two positives with a clear single-op waste
// and two controls.
const std::vector<std::string>& QuickCaseIds();

// What scoring looks at in a diff result, extracted from the top waste finding
// (rank 1 among verdict "waste") and its diagnosis.
struct Evidence {
  bool has_waste = false;   // any finding with verdict waste
  int waste_findings = 0;   // how many
  char wasteful_side = 0;   // of the top waste finding
  std::string kind;         // detect::RegionKindName of the top waste finding
  double saving_uj = 0;
  double share_of_total = 0;
  std::vector<std::string> op_names;  // costly side: the region's ops and their nested ops
  std::vector<std::string> scopes;    // costly side: scope paths of those ops
  std::vector<std::string> frames;    // costly side: call-path frames of the region's ops
  bool has_diagnosis = false;
  diagnose::RootCause root_cause;  // of the top waste finding's diagnosis (kind "" : none)
};

// The evidence of `result`; `diagnoses` may be null (no root-cause evidence).
Evidence ExtractEvidence(const Trace& a, const Trace& b, const detect::DetectResult& result,
                         const std::vector<diagnose::Diagnosis>* diagnoses);

struct CaseScore {
  bool detected = false;          // positives: the top waste finding is the expected region on the expected side
  bool root_cause_right = false;  // positives: the root cause is named by the diagnosis
  bool false_positive = false;    // controls: any waste finding
  std::string note;               // why (one line)
};
// The 1-based rank among waste findings of the first one that would count as
// detected (the expected region on the expected side); 0 when none does.
int ExpectedWasteRank(const Expected& expected, const Trace& a, const Trace& b, const detect::DetectResult& result);
// Detection and false positive (no root cause).
CaseScore ScoreDetection(const Expected& expected, const Evidence& evidence);
// Detection, false positive and root cause.
CaseScore ScoreCase(const Expected& expected, const Evidence& evidence);
// norm(s): the last component after '.', '::' or '/', lower case, leading
// underscores stripped ("model_config._attn_implementation" -> "attn_implementation").
std::string NormalizeName(const std::string& name);
// A name's components split at '.', '::' and '/', lower-case, leading
// underscores stripped: "model_config.GPT2LMHeadModel._attn_implementation"
// -> {model_config, gpt2lmheadmodel, attn_implementation}; a leading "aten" or
// "Tensor" reads as "torch" (one ATen op under its three spellings).
std::vector<std::string> NameComponents(const std::string& name);
// Whether two names say the same thing: the shorter's components end the
// longer's ("use_cache" and "call.generate.use_cache"), so a bare last word
// does not match a different namespace's ("torch.backends.mkldnn.enabled" is
// not "torch.backends.cudnn.enabled", "torch.stft" not "jax.scipy.signal.stft").
bool NamesAgree(const std::string& x, const std::string& y);
// Whether the top waste finding's structured root cause is the expected one:
// the finding on the expected waste side, the same kind, and norm(name) equal to norm of the expected name or of one
// alias. Only the structured object counts, never words of a sentence.
bool RootCauseRight(const Expected& expected, const Evidence& evidence, std::string* why);

struct Counts {
  int tp = 0, fn = 0, fp = 0;
  double precision() const { return tp + fp ? static_cast<double>(tp) / (tp + fp) : 0.0; }
  double recall() const { return tp + fn ? static_cast<double>(tp) / (tp + fn) : 0.0; }
  double f1() const {
    const double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

struct Setting {
  double epsilon = defaults::kEpsilon;
  double tau = defaults::kTau;
};

struct SweepOptions {
  std::vector<double> epsilons = {1e-7, 1e-5, 1e-4, 1e-3, 1e-2, 5e-2, 0.2};
  std::vector<double> taus = {0.01, 0.05, 0.10, 0.20, 0.50};
  Setting headline;       // the setting of the per-case table (the diff defaults)
  double min_share = defaults::kMinShare;  // detect::Options::min_share (noise floor for estimated energy)
  double max_slowdown = defaults::kMaxSlowdown;
};

// One case's outcome.
struct CaseResult {
  Expected expected;
  bool ok = false;       // recorded and diffed
  std::string error;     // when not ok
  // Why the case was not run on this machine (e.g. it needs a GPU; see
  // eval_env.h); a skipped case counts in no score. Empty = not skipped.
  std::string skipped;
  double record_seconds = 0, diff_seconds = 0;
  // Job energy (first op to last op) of the two recordings (the detect domain), and the saving
  // (A - B) / A.
  std::string domain;
  Provenance provenance = Provenance::kEstimated;
  double energy_a_uj = 0, energy_b_uj = 0;
  double saving_share() const { return energy_a_uj > 0 ? (energy_a_uj - energy_b_uj) / energy_a_uj : 0.0; }
  size_t ops_a = 0, ops_b = 0;
  // Per setting, in SweepOptions order (epsilon-major).
  std::vector<Setting> settings;
  std::vector<CaseScore> scores;
  std::vector<int> waste_findings;
  std::vector<double> top_saving_uj;  // the top waste finding's saving per setting (0: no waste)
  // At the headline setting, with root cause.
  CaseScore headline;
  Evidence headline_evidence;
  std::string headline_sentence;  // the top waste finding's diagnosis sentence
  int expected_waste_rank = 0;    // ExpectedWasteRank at the headline setting
  // Recorded pairs behind this result (RunOptions::repeats), diffed together:
  // every finding's verdict rests on its interval over the pairs.
  int repeats = 1;
  // A distributed case (job_case.cc): the rank pairs diffed (0: not a job)
  // and the rank whose top waste finding stands for the job at the headline.
  int ranks = 0;
  int headline_rank = -1;
};

// Diffs repeated recordings of a case (paired in order) over the sweep and
// scores them.
CaseResult EvaluateRecordings(const Expected& expected, const std::vector<std::string>& traces_a,
                              const std::vector<std::string>& traces_b, const SweepOptions& options);
// Same on an opened analysis session (its traces, fingerprints, domain and
// energy); the sweep replaces the session's epsilon and tau.
CaseResult EvaluateSession(const Expected& expected, AnalysisSession& session, const SweepOptions& options);

// Distributed cases (job_case.cc): whether `magneton record` wrote a job
// (a manifest next to trace_path) rather than one trace.
bool IsJobRecording(const std::string& trace_path);
// Diffs repeated job recordings of a case (the a/b trace paths whose
// manifests list the ranks) rank with rank over the sweep, and scores the
// union of the ranks' findings.
CaseResult EvaluateJobRecordings(const Expected& expected, const std::vector<std::string>& traces_a,
                                 const std::vector<std::string>& traces_b, const SweepOptions& options);
// One result from the ranks' (rank, result): at each setting the rank whose
// top waste finding saves the most stands for the job; a control is a false
// positive when any rank has waste; energies and op counts are summed.
CaseResult MergeRankResults(const Expected& expected, const std::vector<std::pair<int, CaseResult>>& ranks);

// Counts over cases at setting index `i` (failed cases count as FN / nothing;
// skipped cases count nowhere).
Counts CountAt(const std::vector<CaseResult>& cases, size_t i);

struct Report {
  std::string command;  // the exact command line
  std::string date;     // UTC, ISO 8601
  std::string machine;  // one line
  SweepOptions options;
  std::vector<CaseResult> cases;
  double total_seconds = 0;
};

// Records `script` to `trace_path` (with tensor values); returns ok or why not.
using CaseRecorder = std::function<Status(const std::string& script, const std::string& trace_path)>;
// "[3/12] kv-cache: recording a.py" and the like.
using Progress = std::function<void(const std::string& line)>;

struct RunOptions {
  std::string work_dir;  // traces go to <work_dir>/<id>/{a,b}.mtrace
  bool reuse = false;    // keep traces newer than their scripts
  int repeats = 1;       // recorded pairs per case, interleaved A B, B A, ..., diffed together
  SweepOptions sweep;
};
std::vector<CaseResult> RunSuite(const std::vector<CaseDir>& cases, const RunOptions& options,
                                 const CaseRecorder& record, const Progress& progress);

std::string RenderTable(const Report& report);     // terminal
// docs/EVALUATION.md; `after_headline`: a section placed right after the
// headline (the run-to-run spread, spread.h), "" for none.
std::string RenderMarkdown(const Report& report, const std::string& after_headline = "");
nlohmann::json ToJson(const Report& report);

}  // namespace magneton::eval
