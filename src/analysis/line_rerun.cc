#include "analysis/line_rerun.h"

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "analysis/rerun_authority.h"

namespace magneton::analysis {
namespace {

// Runs one side's recorded command with the tracer request; its output goes
// to a log file so the diff report stays readable.
Status RunTraced(const Trace& t, char side, const std::string& request, const std::string& log,
                 ProcessRunner& runner, const RerunPolicy& policy) {
  // The session asked already (RefuseUntrusted); this is the last door.
  auto plan = PlanToRerun(t, policy);
  if (!plan.ok()) {
    return Status(plan.status().code(), std::string("trace ") + side + "'s command is not re-run: " +
                                            plan.status().message());
  }
  RunRequest run;
  run.plan = std::move(*plan);
  run.plan.env["MAGNETON_LINE_TRACE"] = request;
  run.log_path = log;
  run.with_python_hooks = true;
  MAGNETON_ASSIGN_OR_RETURN(const int code, runner.Run(run));
  if (code != 0) {
    return Internal(std::string("the re-run of ") + side + " exited with code " + std::to_string(code) + " (see " +
                    log + ")");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<diagnose::LineDiagnosis> RunLineDiagnosis(const Trace& a, const Trace& b,
                                                   const diagnose::DeviationPoint& deviation,
                                                   const std::string& work_prefix, ProcessRunner& runner,
                                                   const RerunPolicy& policy, const diagnose::SourceRoots& roots) {
  if (!deviation.found) return NotFound("no deviation point to trace");
  // The deviation-point function, then its callers on the recorded path,
  // nearest first; one target per distinct function.
  constexpr size_t kMaxFrames = 16;
  std::vector<std::string> path{deviation.frame_a};
  for (size_t k = deviation.common_path.size(); k-- > 0 && path.size() < kMaxFrames;) {
    if (k + 1 == deviation.common_path.size() && deviation.common_path[k] == deviation.frame_a) continue;
    path.push_back(deviation.common_path[k]);
  }
  std::vector<diagnose::TracedFrame> frames;
  nlohmann::json targets = nlohmann::json::array();
  std::map<std::pair<std::string, std::string>, int> target_of;
  for (const std::string& text : path) {
    const diagnose::FrameRef frame = diagnose::ParseFrame(text);
    auto fn = diagnose::ReadPyFunction(roots, frame.file, frame.line, frame.function);
    if (!fn.ok()) {
      if (frames.empty()) return fn.status();  // the deviation point itself cannot be traced
      break;  // the walk cannot cross a frame it cannot read (a module body, a lambda)
    }
    auto [it, inserted] = target_of.try_emplace({frame.file, frame.function}, static_cast<int>(targets.size()));
    if (inserted) {
      nlohmann::json watch = nlohmann::json::object();
      for (const auto& [line, exprs] : diagnose::WatchList(*fn)) watch[std::to_string(line)] = exprs;
      targets.push_back({{"file", frame.file}, {"function", frame.function}, {"line", frame.line}, {"watch", watch}});
    }
    frames.push_back({std::move(*fn), frame.line, it->second});
  }
  diagnose::LineTrace traces[2];
  for (int s = 0; s < 2; ++s) {
    const char side = s == 0 ? 'A' : 'B';
    const std::string out = work_prefix + ".lines." + side + ".json";
    std::error_code ec;
    std::filesystem::remove(out, ec);  // never read an old re-run's lines
    nlohmann::json request = {{"out", out}, {"targets", targets}};
    // Trace text (file names) need not be UTF-8: such bytes become U+FFFD.
    const std::string request_text = request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    MAGNETON_RETURN_IF_ERROR(RunTraced(s == 0 ? a : b, side, request_text, work_prefix + ".lines." + side + ".log",
                                       runner, policy));
    MAGNETON_ASSIGN_OR_RETURN(traces[s], diagnose::ReadLineTrace(out));
  }
  return diagnose::AnalyzeCallPath(frames, traces[0], traces[1], diagnose::DiffConfig(a, b));
}

diagnose::Diagnosis* ChooseLineTraceTarget(std::vector<diagnose::Diagnosis>& diagnoses,
                                           const std::vector<detect::Finding>& findings) {
  // The line trace explains what the user is told to act on. Once an
  // inconclusive set-up region (noise on model construction) took it from the
  // top waste finding because its paths branched. A branch inside one
  // function is where a line trace finds something; identical paths down to
  // the innermost frame differ only in tensor sizes.
  auto flagged = [&](const diagnose::Diagnosis& d) {
    if (d.finding_index >= findings.size()) return false;
    const detect::Verdict v = findings[d.finding_index].verdict;
    return v == detect::Verdict::kWaste || v == detect::Verdict::kTradeOff;
  };
  for (bool want_flagged : {true, false}) {
    diagnose::Diagnosis* chosen = nullptr;
    for (diagnose::Diagnosis& d : diagnoses) {
      if (!d.deviation.found || flagged(d) != want_flagged) continue;
      if (chosen == nullptr) chosen = &d;
      if (d.deviation.frame_a != d.deviation.frame_b) return &d;
    }
    if (chosen != nullptr) return chosen;
  }
  return nullptr;
}

}  // namespace magneton::analysis
