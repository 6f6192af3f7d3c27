#include "runner/record_child.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "magneton/trace_reader.h"
#include "runner/record_job.h"
#include "trace/rerun_plan.h"
#include "runner/subprocess.h"

namespace magneton::runner {
namespace {

// The plan the recording stores (trace/rerun_plan.h): the argv as given, the
// working directory made absolute, the environment changes the caller asked
// for — not magneton's own MAGNETON_* controls (the recording window, an
// override hook's input), which a re-run sets for itself.
RunPlan StoredPlanOf(const RunPlan& plan, const std::string& python) {
  RunPlan stored;
  stored.argv = plan.argv;
  std::error_code ec;
  stored.cwd = std::filesystem::absolute(std::filesystem::path(plan.cwd.empty() ? "." : plan.cwd), ec)
                   .lexically_normal()
                   .string();
  if (stored.cwd.size() > 1 && stored.cwd.back() == '/') stored.cwd.pop_back();
  for (const auto& [k, v] : plan.env) {
    if (k.rfind("MAGNETON_", 0) != 0) stored.env[k] = v;
  }
  stored.interpreter = python;
  return stored;
}

}  // namespace

StatusOr<RecordRunResult> RecordChild(const RecordRunRequest& req) {
  if (req.plan.argv.empty()) {
    return InvalidArgument("record needs a command to run, e.g. magneton record -- python script.py");
  }
  std::string python = req.plan.argv[0];
  if (std::filesystem::path(python).filename().string().rfind("python", 0) != 0) python = FindPython();
  std::string error;
  auto bootstrap = FindBootstrapDir(python, &error);
  if (!bootstrap) return FailedPrecondition(error);

  std::error_code ec;
  std::filesystem::path out = std::filesystem::absolute(req.output, ec);
  std::filesystem::remove(out, ec);  // never mistake an old trace for this run's
  RemoveOldJob(out.string());
  std::map<std::string, std::string> env = {
      {"MAGNETON_RECORD_PATH", out.string()},
      {"MAGNETON_RECORD_LABEL", req.label},
      {"MAGNETON_COMMAND_LINE", ShellQuoteArgv(req.plan.argv)},
      {"MAGNETON_RECORD_VALUES", req.values ? "1" : "0"},
  };
  for (const auto& [k, v] : req.plan.env) env[k] = v;
  env["MAGNETON_RERUN_PLAN"] = EncodeRunPlan(StoredPlanOf(req.plan, python));
  const char* old_path = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = *bootstrap + (old_path && *old_path ? std::string(":") + old_path : std::string());
  // The getenv interposer, installed beside the package's libraries, notes
  // the environment names native code reads (docs/TRACE_FORMAT.md,
  // "Environment"). It is for Python processes only: LD_PRELOAD goes into the
  // child's environment only when the child is Python itself; otherwise the
  // path travels in MAGNETON_GETENV_LIB_PATH and the bootstrap of the Python
  // process that records (through `sh -c`, `env`, torchrun) re-executes
  // itself once with it preloaded. The library takes itself out of
  // LD_PRELOAD when it loads, so no process it runs in passes it on.
  std::filesystem::path interposer = std::filesystem::path(*bootstrap).parent_path() / "libmagneton_getenv.so";
  if (const char* override_path = std::getenv("MAGNETON_GETENV_LIB")) interposer = override_path;
  if (std::filesystem::exists(interposer, ec)) {
    env["MAGNETON_GETENV_LIB_PATH"] = interposer.string();
    if (python == req.plan.argv[0]) {
      const char* old_preload = std::getenv("LD_PRELOAD");
      env["LD_PRELOAD"] = interposer.string() + (old_preload && *old_preload ? std::string(":") + old_preload : "");
      env["MAGNETON_GETENV_REEXEC"] = "0";  // preloaded already: the bootstrap does not re-execute
    }
  }

  const int code = RunChild(req.plan.argv, env, &error, req.plan.cwd, req.log_path);
  if (code < 0) return Internal(error);

  RecordRunResult result;
  result.exit_code = code;
  auto job = CollectJob(out.string(), ShellQuoteArgv(req.plan.argv), code);
  if (!job.ok()) {
    result.trace_status = job.status();
    return result;
  }
  if (job->has_value()) {
    // Each rank wrote its own trace; the manifest lists them and how each ended.
    result.job_manifest = JobManifestPath(out.string());
    for (const RankEntry& r : (*job)->ranks) result.ops += r.ops;
    return result;
  }
  if (!std::filesystem::exists(out, ec)) {
    result.trace_status = FailedPrecondition("'" + req.plan.argv[0] + "' exited with code " + std::to_string(code) +
                                             " and wrote no trace (is it a Python program that imports torch?)");
    return result;
  }
  // Counts only: a trace of an hour's job never has to fit in memory to be summarised.
  auto trace = ReadTraceCounts(out.string());
  if (!trace.ok()) {
    result.trace_status = Status(trace.status().code(),
                                 "the trace " + out.string() + " cannot be read: " + trace.status().message());
    return result;
  }
  result.ops = trace->ops;
  result.tensors = trace->tensors;
  auto meta = [&](const char* key) {
    auto it = trace->meta.extra.find(key);
    return it == trace->meta.extra.end() ? std::string() : it->second;
  };
  auto meta_int = [&](const char* key) -> int64_t { return std::strtoll(meta(key).c_str(), nullptr, 10); };
  result.writer_waits = meta_int("trace.backpressure_waits");
  result.writer_wait_ms = meta_int("trace.backpressure_wait_ms");
  result.forked_children = meta_int("recorder.forked_children");
  if (!meta("gpu.error").empty()) {
    result.gpu_note = "GPU kernels not recorded: " + meta("gpu.error");
  } else if (!meta("gpu.source").empty()) {
    result.gpu_note = std::to_string(trace->device_activities) + " GPU activities (kernels, copies, fills), " +
                      std::to_string(trace->device_activities_linked) + " linked to the ops that launched them; clock " +
                      meta("gpu.clock_method") + ", error <= " + meta("gpu.clock_error_ns") + " ns";
  } else if (!meta("gpu.off").empty()) {
    result.gpu_note = "GPU kernels: off (" + meta("gpu.off") + ")";
  }
  return result;
}

}  // namespace magneton::runner
