// What a known case needs from the machine it runs on (issue 6): a CUDA GPU
// (expected.json "needs_gpu"), or its own version of a library per side
// (env.json), installed into a cached virtual environment on top of the main
// one instead of into it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "eval/eval.h"
#include "magneton/status.h"

namespace magneton::eval {

// ---- GPU visibility (src/eval/gpu.cc) -------------------------------------

struct GpuVisibility {
  bool visible = false;
  std::string reason;  // why not (or which GPUs were seen), one line
};
// Whether an NVIDIA GPU is visible to child processes: a GPU listed under
// <proc_root>/driver/nvidia/gpus/ or a <dev_root>/nvidiaN device node, and
// CUDA_VISIBLE_DEVICES (`cuda_visible_devices`, null = unset) not hiding all
// of them. The roots are parameters for tests.
GpuVisibility DetectGpu(const std::string& proc_root = "/proc", const std::string& dev_root = "/dev",
                        const char* cuda_visible_devices = nullptr);
// DetectGpu on this machine with the current CUDA_VISIBLE_DEVICES.
GpuVisibility DetectGpuHere();

// Removes from `cases` those that need a GPU when `gpu` is not visible and
// returns them as skipped results (CaseResult::skipped holds the reason).
// Cases whose expected.json cannot be read stay in `cases` (RunSuite reports
// the error).
std::vector<CaseResult> SkipCasesNeedingGpu(std::vector<CaseDir>* cases, const GpuVisibility& gpu);

// ---- Per-side environments (src/eval/case_env.cc) -------------------------

// env.json of a case folder: pip requirement specifiers per side, e.g.
// {"a": ["transformers==4.38.1"], "b": ["transformers==4.38.2"]}. A side that
// is absent or empty runs in the main environment.
struct CaseEnv {
  std::vector<std::string> a, b;
  const std::vector<std::string>& side(char s) const { return s == 'a' || s == 'A' ? a : b; }
};
// The case folder's env.json; an empty CaseEnv when there is none.
StatusOr<CaseEnv> ReadCaseEnv(const std::string& case_dir);

// Where cached environments live: $MAGNETON_ENV_CACHE, else
// $XDG_CACHE_HOME/magneton/envs, else ~/.cache/magneton/envs.
std::string DefaultEnvCacheRoot();

// The facts about the main interpreter a cached environment depends on.
struct BasePython {
  std::string python;                      // the interpreter that runs magneton's recordings
  std::string version;                     // e.g. "3.11.7"
  std::string torch_version;               // without the local label, e.g. "2.13.0"
  std::vector<std::string> site_packages;  // its site-packages folders, in sys.path order
};

// Runs argv to completion; returns its exit code (-1 if it could not start)
// and, when `output` is given, its stdout and stderr merged.
using CommandRunner = std::function<int(const std::vector<std::string>& argv, std::string* output)>;

StatusOr<BasePython> QueryBasePython(const std::string& python, const CommandRunner& run);

// The cache key of an environment: a hash of the sorted requirements and the
// base interpreter's path, Python and torch versions (16 hex digits).
std::string EnvKey(const std::vector<std::string>& requirements, const BasePython& base);

// The python of a cached environment holding `requirements` on top of the main
// one, creating it when missing: `python -m venv --system-site-packages`, a .pth
// file naming the main interpreter's site-packages (so magneton and torch of
// the main environment, a venv itself, stay importable), then
// `pip install -c constraints.txt <requirements>` with torch pinned to the main
// environment's version so that pip can never replace it. Reused when its
// ready marker exists; pip's output goes to <env>/install.log.
StatusOr<std::string> EnsureCaseEnv(const std::vector<std::string>& requirements, const BasePython& base,
                                    const std::string& cache_root, const CommandRunner& run,
                                    const Progress& progress);

}  // namespace magneton::eval
