// Whether the GPU cases can run here (expected.json "needs_gpu"): looked up in
// the NVIDIA driver's files instead of by loading CUDA, so that eval needs no
// GPU library and answers the same as the child processes it starts would.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "eval/eval_env.h"

namespace magneton::eval {
namespace {

namespace fs = std::filesystem;

// GPUs the driver lists (one folder per PCI address), else /dev/nvidiaN nodes
// (containers often get the device nodes without /proc/driver/nvidia).
int CountNvidiaGpus(const std::string& proc_root, const std::string& dev_root, std::string* seen) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(proc_root) / "driver" / "nvidia" / "gpus", ec)) {
    (void)e;
    ++n;
  }
  if (n > 0) {
    *seen = std::to_string(n) + " GPU(s) under " + (fs::path(proc_root) / "driver/nvidia/gpus").string();
    return n;
  }
  static const std::regex kNode("nvidia[0-9]+");
  for (const auto& e : fs::directory_iterator(dev_root, ec)) {
    if (std::regex_match(e.path().filename().string(), kNode)) ++n;
  }
  if (n > 0) *seen = std::to_string(n) + " /dev/nvidiaN device node(s)";
  return n;
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

GpuVisibility DetectGpu(const std::string& proc_root, const std::string& dev_root, const char* cuda_visible_devices) {
  GpuVisibility g;
  std::string seen;
  const int n = CountNvidiaGpus(proc_root, dev_root, &seen);
  if (n == 0) {
    g.reason = "no NVIDIA GPU visible (nothing under " + (fs::path(proc_root) / "driver/nvidia/gpus").string() +
               ", no " + (fs::path(dev_root) / "nvidia0").string() + ")";
    return g;
  }
  if (cuda_visible_devices) {
    // CUDA reads the list up to the first invalid entry: "" and "-1" hide every GPU.
    std::string v = cuda_visible_devices;
    v.erase(std::remove_if(v.begin(), v.end(), ::isspace), v.end());
    if (v.empty() || v.rfind("-1", 0) == 0 || v.rfind("NoDevFiles", 0) == 0) {
      g.reason = seen + ", but CUDA_VISIBLE_DEVICES=\"" + std::string(cuda_visible_devices) + "\" hides them";
      return g;
    }
  }
  g.visible = true;
  g.reason = seen;
  return g;
}

GpuVisibility DetectGpuHere() { return DetectGpu("/proc", "/dev", std::getenv("CUDA_VISIBLE_DEVICES")); }

std::vector<CaseResult> SkipCasesNeedingGpu(std::vector<CaseDir>* cases, const GpuVisibility& gpu) {
  std::vector<CaseResult> skipped;
  if (gpu.visible) return skipped;
  std::vector<CaseDir> keep;
  for (const CaseDir& c : *cases) {
    auto expected = ParseExpected(ReadText(fs::path(c.path) / "expected.json"));
    if (expected.ok() && expected->needs_gpu) {
      CaseResult r;
      r.expected = *expected;
      r.skipped = "needs a GPU: " + gpu.reason;
      skipped.push_back(std::move(r));
    } else {
      keep.push_back(c);
    }
  }
  *cases = std::move(keep);
  return skipped;
}

}  // namespace magneton::eval
