#include "magneton/analysis.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "analysis/confirm.h"
#include "analysis/domain.h"
#include "analysis/line_rerun.h"
#include "analysis/region_differences.h"
#include "analysis/rerun_authority.h"
#include "analysis/session_data.h"
#include "analysis/source_access.h"
#include "analysis/step_window.h"
#include "base/both_at_once.h"
#include "base/format.h"
#include "diagnose/counterfactual.h"
#include "diagnose/line_diagnosis.h"
#include "magneton/clock.h"
#include "magneton/trace_reader.h"
#include "trace/redact.h"
#include "trace/rerun_plan.h"

namespace magneton {
namespace analysis {
namespace {

StatusOr<LoadedRun> Load(const std::string& path) {
  LoadedRun run;
  run.path = path;
  MAGNETON_ASSIGN_OR_RETURN(run.trace, ReadTrace(path));
  MAGNETON_ASSIGN_OR_RETURN(run.fingerprints, LoadFingerprints(path));
  // A fingerprint is of one of the trace's tensors (the writer commits a
  // tensor's row before its value's), as every lookup by tensor id assumes.
  for (const auto& [tensor_id, fp] : run.fingerprints) {
    if (tensor_id < 0 || static_cast<size_t>(tensor_id) >= run.trace.tensors.size()) {
      return Corrupt(path + ": table fingerprints, row tensor_id " + std::to_string(tensor_id) +
                     ": names no tensor (the trace has " + std::to_string(run.trace.tensors.size()) + ")");
    }
  }
  if (run.fingerprints.empty()) {
    return InvalidArgument(path + " has no tensor fingerprints; the analysis compares tensor values, so record it "
                                  "with `magneton record --values ...`");
  }
  return run;
}

// Both sides' runs at once, each on its own core (they share nothing).
StatusOr<std::pair<LoadedRun, LoadedRun>> LoadPair(const std::string& path_a, const std::string& path_b) {
  return BothOkAtOnce([&] { return Load(path_a); }, [&] { return Load(path_b); });
}

std::string Thousands(size_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ' ';
    out += digits[i];
  }
  return out;
}

std::string ReadLine(const LoadedRun& a, const LoadedRun& b) {
  auto one = [](const LoadedRun& run) {
    return run.path + " (" + Thousands(run.trace.ops.size()) + " ops, " + Thousands(run.fingerprints.size()) +
           " values)";
  };
  return "read " + one(a) + " and " + one(b);
}

StatusOr<std::pair<energy::Attribution, energy::Attribution>> AttributePair(const Trace& a, const Trace& b,
                                                                             const std::string& domain) {
  return BothOkAtOnce([&] { return energy::AttributeEnergy(a, domain); },
                      [&] { return energy::AttributeEnergy(b, domain); });
}

std::string Joined(const std::vector<LoadedRun>& runs, const std::vector<RepeatPair>& repeats, bool side_a) {
  std::string out;
  for (const LoadedRun& r : runs) out += (out.empty() ? "" : ",") + r.path;
  for (const RepeatPair& p : repeats) out += "," + (side_a ? p.a : p.b).path;
  return out;
}

}  // namespace

bool SessionData::long_runs() const {
  size_t ops = 0;
  for (const auto* side : {&a, &b}) {
    for (const LoadedRun& run : *side) ops = std::max(ops, run.trace.ops.size());
  }
  for (const RepeatPair& p : repeats) ops = std::max({ops, p.a.trace.ops.size(), p.b.trace.ops.size()});
  return static_cast<int64_t>(ops) >= options.progress_min_ops;
}

void SessionData::SayStep(const std::string& what, int64_t since_ns) const {
  if (!options.progress || !long_runs()) return;
  options.progress(what + " (" + FormatDuration(MonotonicNowNs() - since_ns) + ")");
}

Status SessionData::Attribute() {
  if (!energy_status.ok() || energy_attributed) return energy_status;
  const int64_t start_ns = MonotonicNowNs();
  energy_status = [&]() -> Status {
    MAGNETON_ASSIGN_OR_RETURN(std::tie(energy_a, energy_b), AttributePair(trace_a(), trace_b(), domain));
    for (RepeatPair& p : repeats) {
      MAGNETON_ASSIGN_OR_RETURN(std::tie(p.energy_a, p.energy_b), AttributePair(p.a.trace, p.b.trace, domain));
      if (p.energy_a.provenance != energy_a.provenance || p.energy_b.provenance != energy_b.provenance) {
        return FailedPrecondition("the repeated recordings " + p.a.path + " and " + p.b.path +
                                  " were metered differently from the first pair; record every run on the same meter");
      }
    }
    return Status::Ok();
  }();
  energy_attributed = true;
  if (energy_status.ok()) SayStep("energy attributed to every op in " + domain, start_ns);
  return energy_status;
}

MatchOptions SessionData::match_options() const {
  MatchOptions m;
  m.epsilon = options.epsilon;
  m.graph.leaf_ops = options.leaf_ops;
  return m;
}

detect::Options SessionData::detect_options() const {
  detect::Options o;
  o.tau = options.tau;
  o.max_slowdown = options.max_slowdown;
  o.output_epsilon = options.epsilon;  // one tolerance for matching and for comparing region outputs
  o.min_share = options.min_share;
  o.min_same_work_share = options.min_same_work_share;
  o.domain = domain;
  o.match = match_options();
  for (const diagnose::ConfigDifference& d : diagnose::DiffConfig(trace_a(), trace_b())) {
    if (d.source == "global_flag" || d.source == "runtime" || d.source == "env") {
      o.differing_settings.push_back(d.key + ": " + d.value_a + " -> " + d.value_b);
    }
  }
  o.region_differences = RegionDifferences;
  return o;
}

report::DiffReportInput SessionData::report_input() const {
  report::DiffReportInput in{Joined(a, repeats, true), Joined(b, repeats, false), &trace_a(), &trace_b(),
                             detection ? &*detection : nullptr, &diagnoses};
  in.source_roots = &source_roots;
  return in;
}

StatusOr<MatchResult> MatchRuns(const SessionData& data, const MatchOptions& options) {
  if (data.a.size() == 1) {
    return MatchTraces(data.trace_a(), data.a.front().fingerprints, data.trace_b(), data.b.front().fingerprints,
                       options);
  }
  std::vector<TracePairInput> pairs;
  for (size_t i = 0; i < data.a.size(); ++i) {
    pairs.push_back({&data.a[i].trace, &data.a[i].fingerprints, &data.b[i].trace, &data.b[i].fingerprints});
  }
  return MatchAcrossInputs(pairs, options);
}

StatusOr<std::vector<MatchResult>> MatchRepeats(const SessionData& data, const MatchOptions& options) {
  std::vector<MatchResult> out;
  for (const RepeatPair& p : data.repeats) {
    MAGNETON_ASSIGN_OR_RETURN(MatchResult m,
                              MatchTraces(p.a.trace, p.a.fingerprints, p.b.trace, p.b.fingerprints, options));
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<detect::DetectResult> DetectRuns(const SessionData& data, const MatchResult& match,
                                          const std::vector<MatchResult>& repeat_matches,
                                          const detect::Options& options) {
  MAGNETON_ASSIGN_OR_RETURN(detect::DetectResult first,
                            detect::DetectFromMatch(data.trace_a(), data.a.front().fingerprints, data.energy_a,
                                                    data.trace_b(), data.b.front().fingerprints, data.energy_b, match,
                                                    options));
  if (data.repeats.empty()) return first;
  if (repeat_matches.size() != data.repeats.size()) return Internal("DetectRuns: one match per repeated pair");
  std::vector<detect::DetectResult> others;
  for (size_t k = 0; k < data.repeats.size(); ++k) {
    const RepeatPair& p = data.repeats[k];
    MAGNETON_ASSIGN_OR_RETURN(detect::DetectResult one,
                              detect::DetectFromMatch(p.a.trace, p.a.fingerprints, p.energy_a, p.b.trace,
                                                      p.b.fingerprints, p.energy_b, repeat_matches[k], options));
    others.push_back(std::move(one));
  }
  return detect::CombineRuns(std::move(first), others, options);
}

}  // namespace analysis

AnalysisSession::AnalysisSession(std::unique_ptr<analysis::SessionData> data) : data_(std::move(data)) {}
AnalysisSession::~AnalysisSession() = default;

StatusOr<std::unique_ptr<AnalysisSession>> AnalysisSession::Open(const std::vector<std::string>& traces_a,
                                                                 const std::vector<std::string>& traces_b,
                                                                 const AnalysisOptions& options) {
  if (traces_a.empty() || traces_a.size() != traces_b.size()) {
    return InvalidArgument("give the same number of traces on each side (one per model input), comma-separated");
  }
  auto data = std::make_unique<analysis::SessionData>();
  data->options = options;
  for (size_t i = 0; i < traces_a.size(); ++i) {
    const int64_t start_ns = MonotonicNowNs();
    MAGNETON_ASSIGN_OR_RETURN(auto pair, analysis::LoadPair(traces_a[i], traces_b[i]));
    data->a.push_back(std::move(pair.first));
    data->b.push_back(std::move(pair.second));
    data->SayStep(analysis::ReadLine(data->a.back(), data->b.back()), start_ns);
  }
  return FromData(std::move(data));
}

StatusOr<std::unique_ptr<AnalysisSession>> AnalysisSession::OpenRuns(const std::vector<std::string>& runs_a,
                                                                     const std::vector<std::string>& runs_b,
                                                                     const AnalysisOptions& options) {
  if (runs_a.empty() || runs_a.size() != runs_b.size()) {
    return InvalidArgument("give the same number of recordings on each side (paired in order: A1 with B1, ...); got " +
                           std::to_string(runs_a.size()) + " and " + std::to_string(runs_b.size()));
  }
  auto data = std::make_unique<analysis::SessionData>();
  data->options = options;
  for (size_t i = 0; i < runs_a.size(); ++i) {
    const int64_t start_ns = MonotonicNowNs();
    MAGNETON_ASSIGN_OR_RETURN(auto pair, analysis::LoadPair(runs_a[i], runs_b[i]));
    analysis::LoadedRun a = std::move(pair.first), b = std::move(pair.second);
    const std::string read = analysis::ReadLine(a, b);
    if (i == 0) {
      data->a.push_back(std::move(a));
      data->b.push_back(std::move(b));
    } else {
      data->repeats.push_back({std::move(a), std::move(b), {}, {}});
    }
    data->SayStep(read, start_ns);
  }
  return FromData(std::move(data));
}

StatusOr<std::unique_ptr<AnalysisSession>> AnalysisSession::FromData(std::unique_ptr<analysis::SessionData> data) {
  if (data->a.empty() || data->a.size() != data->b.size()) {
    return InvalidArgument("give the same number of traces on each side (one per model input)");
  }
  // Windows of equal step counts: each pair compares the same number of recorded steps.
  for (size_t i = 0; i < data->a.size(); ++i) {
    std::string note = analysis::EqualizeSteps(data->a[i].trace, data->a[i].fingerprints, data->b[i].trace,
                                               data->b[i].fingerprints);
    if (!note.empty()) data->notes.push_back(std::move(note));
  }
  for (analysis::RepeatPair& p : data->repeats) {
    std::string note = analysis::EqualizeSteps(p.a.trace, p.a.fingerprints, p.b.trace, p.b.fingerprints);
    if (!note.empty()) data->notes.push_back(p.a.path + " vs " + p.b.path + ": " + std::move(note));
  }
  {
    std::error_code ec;
    const std::string cwd = std::filesystem::current_path(ec).string();
    std::vector<const Trace*> traces;
    for (const auto& run : data->a) traces.push_back(&run.trace);
    for (const auto& run : data->b) traces.push_back(&run.trace);
    MAGNETON_ASSIGN_OR_RETURN(data->source_roots,
                              analysis::ReportSourceRoots(traces, ec ? "" : cwd, data->options.source_roots));
  }
  // Matching needs no energy; a pair without a common domain fails only the
  // steps that compare energy. The domain is chosen now (a missing one is
  // said before any long step); the ops' energy is attributed when a step
  // first needs it (Attribute), after matching: the matcher's peak then
  // holds no per-op energy (docs/PERFORMANCE.md, "At scale").
  data->energy_status = [&]() -> Status {
    MAGNETON_ASSIGN_OR_RETURN(data->domain,
                              analysis::ChooseDomain(data->trace_a(), data->trace_b(), data->options.domain));
    return Status::Ok();
  }();
  return std::unique_ptr<AnalysisSession>(new AnalysisSession(std::move(data)));
}

const std::string& AnalysisSession::domain() const { return data_->domain; }
const std::vector<std::string>& AnalysisSession::notes() const { return data_->notes; }
const AnalysisOptions& AnalysisSession::options() const { return data_->options; }

void AnalysisSession::SetProgress(std::function<void(const std::string&)> progress) {
  data_->options.progress = std::move(progress);
}

void AnalysisSession::Say(const std::string& line) const {
  if (data_->options.progress) data_->options.progress(line);
}

Status AnalysisSession::Match() {
  const int64_t start_ns = MonotonicNowNs();
  MAGNETON_ASSIGN_OR_RETURN(data_->match, analysis::MatchRuns(*data_, data_->match_options()));
  MAGNETON_ASSIGN_OR_RETURN(data_->repeat_matches, analysis::MatchRepeats(*data_, data_->match_options()));
  data_->SayStep("matched " + analysis::Thousands(data_->match->regions.size()) + " region pairs", start_ns);
  return Status::Ok();
}

Status AnalysisSession::Diff() {
  MAGNETON_RETURN_IF_ERROR(data_->energy_status);  // no common domain: said before matching
  if (!data_->match) MAGNETON_RETURN_IF_ERROR(Match());
  MAGNETON_RETURN_IF_ERROR(data_->Attribute());
  int64_t start_ns = MonotonicNowNs();
  MAGNETON_ASSIGN_OR_RETURN(data_->detection, analysis::DetectRuns(*data_, *data_->match, data_->repeat_matches,
                                                                     data_->detect_options()));
  data_->SayStep("compared the energy of " + analysis::Thousands(data_->detection->findings.size()) + " findings",
                 start_ns);
  start_ns = MonotonicNowNs();
  diagnose::Options options;
  options.source_roots = &data_->source_roots;
  data_->diagnoses = diagnose::Diagnose(data_->trace_a(), data_->trace_b(), *data_->detection, options);
  data_->SayStep("diagnosed", start_ns);
  return Status::Ok();
}

Status AnalysisSession::TraceLines(ProcessRunner& runner, const RerunPolicy& policy) {
  if (!data_->detection) return FailedPrecondition("TraceLines needs Diff() first");
  const Trace& a = data_->trace_a();
  const Trace& b = data_->trace_b();
  // Nothing to say about traces that name no command at all (the C ABI's);
  // one without a plan is refused below with its command printed.
  auto names_command = [](const Trace& t) {
    return !t.meta.command_line.empty() || t.meta.extra.count(kRerunPlanKey) > 0;
  };
  if (!names_command(a) || !names_command(b)) return Status::Ok();
  diagnose::Diagnosis* chosen = analysis::ChooseLineTraceTarget(data_->diagnoses, data_->detection->findings);
  if (chosen == nullptr) return Status::Ok();
  auto note = [&](const std::string& why) {
    diagnose::LineDiagnosis failed;
    failed.note = why;
    chosen->line = std::make_shared<const diagnose::LineDiagnosis>(std::move(failed));
  };
  const std::vector<std::pair<std::string, const Trace*>> sides = {{data_->a.front().path, &a},
                                                                    {data_->b.front().path, &b}};
  const auto say = [this](const std::string& line) { Say(line); };
  if (const std::string refused =
          analysis::RefuseUntrusted(sides, "the line-level step", analysis::WouldRun(sides), policy, say);
      !refused.empty()) {
    note(refused);
    return Status::Ok();
  }
  std::error_code ec;
  const std::string prefix = std::filesystem::absolute(data_->a.front().path, ec).string();
  Say("re-running A and B with " + chosen->deviation.frame_a + " traced line by line (--no-rerun skips this)");
  // The step may run both commands (they are this user's, or --rerun said so): it may read their folders too.
  // A copy shares the list of files read, so the report still names them.
  diagnose::SourceRoots roots = data_->source_roots;
  roots.AddFoldersOf(a);
  roots.AddFoldersOf(b);
  auto line = analysis::RunLineDiagnosis(a, b, chosen->deviation, prefix, runner, policy, roots);
  if (!line.ok()) {
    Say("no line-level diagnosis: " + line.status().message());
    note(line.status().message());
    return Status::Ok();
  }
  diagnose::ApplyLineDiagnosis(std::move(*line), diagnose::DiffConfig(a, b), chosen);
  return Status::Ok();
}

StatusOr<ConfirmOutcome> AnalysisSession::Confirm(ProcessRunner& runner, const RerunPolicy& policy,
                                                  double min_saving, size_t runs) {
  if (!data_->detection) return FailedPrecondition("Confirm needs Diff() first");
  ConfirmOutcome out;
  auto plan = diagnose::PlanCounterfactual(data_->trace_a(), data_->trace_b(), *data_->detection, data_->diagnoses);
  if (!plan.ok()) {
    out.sentence = "nothing to re-run: " + plan.status().message();
    return out;
  }
  const analysis::LoadedRun& wasteful = plan->rerun_side == 'A' ? data_->a.front() : data_->b.front();
  const std::string by_hand = analysis::FlipForUser(*plan, wasteful.trace);
  if (!plan->refused.empty()) {
    // The variable or value is not one --confirm can validate: printed, never run.
    Say("--confirm does not set " + plan->variable.key + " = " + plan->new_value + ": " + plan->refused);
    Say("to try it yourself, run\n" + by_hand);
    out.sentence = "nothing re-run: " + plan->refused + "; the command to try it by hand is printed above";
    return out;
  }
  // The command is the wasteful side's, the value the other side's: both
  // must be trusted.
  const auto say = [this](const std::string& line) { Say(line); };
  if (const std::string refused = analysis::RefuseUntrusted(
          {{data_->a.front().path, &data_->trace_a()}, {data_->b.front().path, &data_->trace_b()}}, "--confirm",
          by_hand, policy, say);
      !refused.empty()) {
    out.sentence = "nothing re-run: " + refused;
    return out;
  }
  auto rerun_plan = analysis::PlanToRerun(wasteful.trace, policy);  // the last door
  if (!rerun_plan.ok()) {
    out.sentence = "nothing re-run: " + rerun_plan.status().message();
    return out;
  }
  const RecordRunRequest req = analysis::ConfirmRequest(*plan, *rerun_plan, wasteful.path);
  Say(std::string("--confirm: re-running ") + plan->rerun_side + " (" + ShellQuoteArgv(req.plan.argv) + ") with " +
      plan->variable.key + " = " + plan->new_value);
  // Controls (the command as recorded) and flipped runs interleaved, so that
  // both kinds share the machine's state; each counts by its lowest run.
  const size_t pairs = std::max<size_t>(1, runs);
  std::vector<Trace> controls, flipped;
  std::string last_flipped_path;
  for (size_t k = 1; k <= pairs; ++k) {
    const std::string suffix = k == 1 ? "" : "." + std::to_string(k);
    RecordRunRequest control_req = analysis::ControlRequest(*rerun_plan, wasteful.path);
    control_req.output = wasteful.path + ".control" + suffix + ".mtrace";
    MAGNETON_ASSIGN_OR_RETURN(const RecordRunResult control_run, runner.Record(control_req));
    if (control_run.exit_code != 0) {
      return Internal("the control re-run (as recorded) failed (exit code " +
                      std::to_string(control_run.exit_code) + "); nothing confirmed");
    }
    RecordRunRequest flip_req = req;
    flip_req.output = wasteful.path + ".confirm" + suffix + ".mtrace";
    MAGNETON_ASSIGN_OR_RETURN(const RecordRunResult recorded, runner.Record(flip_req));
    if (recorded.exit_code != 0) {
      return Internal("the re-run failed (exit code " + std::to_string(recorded.exit_code) + "); nothing confirmed");
    }
    MAGNETON_ASSIGN_OR_RETURN(Trace control, ReadTrace(control_req.output));
    MAGNETON_ASSIGN_OR_RETURN(Trace after, ReadTrace(flip_req.output));
    controls.push_back(std::move(control));
    flipped.push_back(std::move(after));
    if (k == 1) last_flipped_path = flip_req.output;
  }
  std::vector<const Trace*> control_ptrs, flipped_ptrs;
  for (const Trace& t : controls) control_ptrs.push_back(&t);
  for (const Trace& t : flipped) flipped_ptrs.push_back(&t);
  MAGNETON_ASSIGN_OR_RETURN(
      const diagnose::CounterfactualOutcome outcome,
      diagnose::EvaluateCounterfactual(*plan, control_ptrs, flipped_ptrs, data_->domain, min_saving));
  out.ran = true;
  out.confirmed = outcome.confirmed;
  out.sentence = outcome.sentence;
  out.trace_path = last_flipped_path;
  return out;
}

// Reports are shared like traces: whatever a trace (possibly recorded by an
// older magneton) or a source line holds, no URL credential or token-shaped
// word reaches a report (trace/redact.h; the marker keeps JSON and HTML valid).
std::string AnalysisSession::TerminalReport(bool verbose) const {
  report::DiffReportInput in = data_->report_input();
  in.verbose = verbose;
  return RedactSecretsInText(report::RenderDiffTerminal(in));
}
// Text from a trace (op, file and meta values) need not be UTF-8: invalid
// bytes become U+FFFD rather than an exception out of the report.
std::string AnalysisSession::JsonReport() const {
  return RedactSecretsInText(
      report::DiffToJson(data_->report_input()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}
std::string AnalysisSession::HtmlReport() const {
  return RedactSecretsInText(report::RenderDiffHtml(data_->report_input()));
}

}  // namespace magneton
