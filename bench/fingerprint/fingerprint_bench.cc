// Fingerprint throughput next to memcpy, measured side by side in one run:
//   fingerprint_bench [MiB ...]        (default: 1 16 64 256)
// Prints, per size, the best of several repetitions of memcpy, the
// layout-invariant fingerprint (compute_strong = false) and the full one.
//   fingerprint_bench --small [SHAPE ...]     (SHAPE: 1x12x64)
// Per-value cost of `record --values` on the activation shapes of a GPT-2
// decode step (the recorder's options: exact quantiles up to 8k elements,
// then the encoded blob): microseconds per fingerprint, and the parts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

// "1x12x64" -> {1, 12, 64}
std::vector<int64_t> ParseShape(const char* text) {
  std::vector<int64_t> shape;
  for (const char* p = text; *p != 0;) {
    char* end = nullptr;
    shape.push_back(std::strtoll(p, &end, 10));
    p = *end == 'x' ? end + 1 : end;
    if (end == p && *p != 0) break;
  }
  return shape;
}

int SmallTensors(int argc, char** argv) {
  std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 768}, {1, 1, 3072}, {1, 12, 1, 64}, {1, 12, 128, 64}, {1, 128, 768}, {1, 50257}};
  if (argc > 2) {
    shapes.clear();
    for (int i = 2; i < argc; ++i) shapes.push_back(ParseShape(argv[i]));
  }
  std::printf("%-16s %10s %14s %14s %12s %10s\n", "shape", "elements", "invariant us", "full us", "+encode us",
              "memcpy us");
  for (const auto& shape : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
    uint32_t s = 12345;
    for (auto& x : src) {
      s = s * 1664525u + 1013904223u;
      x = static_cast<float>(static_cast<int32_t>(s)) * 4.6566e-10f;
    }
    magneton::TensorBuffer buf{src.data(), magneton::DType::kFloat32, shape, {}};
    magneton::FingerprintOptions light = magneton::ValueFingerprintOptions();
    light.compute_strong = false;
    const magneton::FingerprintOptions full = magneton::ValueFingerprintOptions();
    constexpr int kCalls = 200;
    double sink = 0;
    auto per_call_us = [&](auto&& fn) {
      return 1e6 / kCalls * BestSeconds(5, [&] {
               for (int i = 0; i < kCalls; ++i) fn();
             });
    };
    const double t_copy = per_call_us([&] { std::memcpy(dst.data(), src.data(), src.size() * sizeof(float)); });
    const double t_inv = per_call_us([&] { sink += magneton::ComputeFingerprint(buf, light)->invariant.mean; });
    const double t_full = per_call_us([&] { sink += magneton::ComputeFingerprint(buf, full)->invariant.mean; });
    const double t_enc = per_call_us([&] {
      auto fp = magneton::ComputeFingerprint(buf, full);
      sink += static_cast<double>(magneton::EncodeFingerprint(*fp).size());
    });
    std::string name;
    for (int64_t d : shape) name += (name.empty() ? "" : "x") + std::to_string(d);
    std::printf("%-16s %10lld %14.2f %14.2f %12.2f %10.2f\n", name.c_str(), static_cast<long long>(n), t_inv, t_full,
                t_enc, t_copy);
    if (sink == 12345.678) std::puts("");  // keep the work
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--small") == 0) return SmallTensors(argc, argv);
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
