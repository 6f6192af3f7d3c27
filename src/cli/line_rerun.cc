#include "cli/line_rerun.h"

#include <cstdlib>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/subprocess.h"
#include "trust/trace_trust.h"

namespace magneton::cli {
namespace {

// Runs one side's recorded command with the tracer request; its output goes
// to a log file so the diff report stays readable.
Status RunTraced(const Trace& t, char side, const std::string& request, const std::string& log,
                 bool rerun_untrusted) {
  if (t.meta.command_line.empty()) {
    return FailedPrecondition(std::string("trace ") + side + " recorded no command line to re-run");
  }
  // The caller asked the user already (cmd_diff.cc); this is the last door.
  if (const trust::RerunAuthority auth = trust::VerifyRerunAuthority(t); !auth.trusted && !rerun_untrusted) {
    return PermissionDenied(std::string("trace ") + side + "'s command is not re-run: " + auth.reason);
  }
  std::string error;
  auto bootstrap = FindBootstrapDir(FindPython(), &error);
  if (!bootstrap) return FailedPrecondition(error);
  std::map<std::string, std::string> env = {{"MAGNETON_LINE_TRACE", request}};
  const char* old_path = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = *bootstrap + (old_path && *old_path ? std::string(":") + old_path : std::string());
  const std::string shell = "exec >" + ShellQuote({log}) + " 2>&1; " + t.meta.command_line;
  const int code = RunChild({"/bin/sh", "-c", shell}, env, &error, t.meta.cwd);
  if (code < 0) return Internal(error);
  if (code != 0) {
    return Internal(std::string("the re-run of ") + side + " exited with code " + std::to_string(code) + " (see " +
                    log + ")");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<diagnose::LineDiagnosis> RunLineDiagnosis(const Trace& a, const Trace& b,
                                                   const diagnose::DeviationPoint& deviation,
                                                   const std::string& work_prefix, bool rerun_untrusted) {
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
  const diagnose::SourceRoots roots = diagnose::SourceRoots::Of(a, b);
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
    MAGNETON_RETURN_IF_ERROR(RunTraced(s == 0 ? a : b, side, request.dump(), work_prefix + ".lines." + side + ".log",
                                       rerun_untrusted));
    MAGNETON_ASSIGN_OR_RETURN(traces[s], diagnose::ReadLineTrace(out));
  }
  return diagnose::AnalyzeCallPath(frames, traces[0], traces[1], diagnose::DiffConfig(a, b));
}

}  // namespace magneton::cli
