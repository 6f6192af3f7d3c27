// Fingerprint throughput next to memcpy, measured side by side in one run:
//   fingerprint_bench [MiB ...]        (default: 1 16 64 256)
// Prints, per size, the best of several repetitions of memcpy, the
// layout-invariant fingerprint (compute_strong = false) and the full one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fingerprint/fingerprint.h"

namespace {

double BestSeconds(int reps, auto&& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes_mib = {1, 16, 64, 256};
  if (argc > 1) {
    sizes_mib.clear();
    for (int i = 1; i < argc; ++i) sizes_mib.push_back(std::atoi(argv[i]));
  }
  std::printf("%8s %12s %14s %8s %14s %8s\n", "MiB", "memcpy GB/s", "invariant GB/s", "ratio", "full GB/s", "ratio");
  for (int mib : sizes_mib) {
    const size_t n = static_cast<size_t>(mib) * (1 << 20) / sizeof(float);
    std::vector<float> src(n), dst(n);
    uint32_t s = 12345;
    for (auto& x : src) {
      s = s * 1664525u + 1013904223u;
      x = static_cast<float>(static_cast<int32_t>(s)) * 4.6566e-10f;
    }
    std::memset(dst.data(), 1, n * sizeof(float));  // fault the pages in
    const int reps = mib <= 16 ? 20 : 5;
    const double bytes = static_cast<double>(n * sizeof(float));
    const double t_copy = BestSeconds(reps, [&] { std::memcpy(dst.data(), src.data(), n * sizeof(float)); });
    magneton::TensorBuffer buf{src.data(), magneton::DType::kFloat32, {static_cast<int64_t>(n)}, {}};
    magneton::FingerprintOptions light;
    light.compute_strong = false;
    double sink = 0;
    const double t_inv = BestSeconds(reps, [&] { sink += magneton::ComputeFingerprint(buf, light)->invariant.mean; });
    const double t_full = BestSeconds(reps, [&] { sink += magneton::ComputeFingerprint(buf)->invariant.mean; });
    std::printf("%8d %12.2f %14.2f %7.0f%% %14.2f %7.0f%%\n", mib, bytes / t_copy / 1e9, bytes / t_inv / 1e9,
                100 * t_copy / t_inv, bytes / t_full / 1e9, 100 * t_copy / t_full);
    if (sink == 12345.678) std::puts("");  // keep the work
  }
  return 0;
}
