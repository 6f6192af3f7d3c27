// Reads Magneton's NVML meter: `nvml_check once` prints one reading
// (t_ns and cumulative µJ per GPU); `nvml_check poll SECONDS PERIOD_MS`
// prints one line per read, then the meter's notes (its power source per
// GPU, the instant power's refresh period and its check against the energy
// counter) as "# note KEY: TEXT" lines. $MAGNETON_NVML_SOURCE chooses the
// source (auto, counter-first, instant, counter, average); `once` defaults
// to counter-first. Built by bench/gpu_check with plain g++, so it
// needs nothing but libc and the NVIDIA driver on the GPU machine.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "energy/energy.h"

int main(int argc, char** argv) {
  const bool poll = argc >= 2 && std::strcmp(argv[1], "poll") == 0;
  magneton::energy::NvmlOptions options;
  // `once` is read seconds apart by its callers: the energy counter, which
  // is right at any spacing (integrated power needs frequent reads).
  if (!poll && !std::getenv("MAGNETON_NVML_SOURCE")) options.source = "counter-first";
  auto meter = magneton::energy::OpenNvmlMeter(options);
  if (!meter.ok()) {
    std::fprintf(stderr, "nvml meter unavailable: %s\n", meter.status().message().c_str());
    return 2;
  }
  auto print = [&](const magneton::energy::MeterReading& r) {
    std::printf("%lld", static_cast<long long>(r.t_ns));
    for (const auto& d : r.domains) std::printf(" %.1f %.1f", d.energy_uj, d.power_mw);
    std::printf("\n");
    std::fflush(stdout);
  };
  if (poll) {
    double seconds = argc > 2 ? std::atof(argv[2]) : 10;
    long period_ms = argc > 3 ? std::atol(argv[3]) : 10;
    std::printf("# domains:");
    for (const auto& d : (*meter)->domains()) std::printf(" %s", d.name.c_str());
    std::printf(" (energy_uj power_mw per domain)\n");
    timespec start{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (true) {
      auto r = (*meter)->Read();
      if (!r.ok()) {
        std::fprintf(stderr, "read failed: %s\n", r.status().message().c_str());
        return 3;
      }
      print(*r);
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 > seconds) break;
      timespec sleep{0, period_ms * 1'000'000};
      nanosleep(&sleep, nullptr);
    }
    for (const auto& [key, text] : (*meter)->Notes()) std::printf("# note %s: %s\n", key.c_str(), text.c_str());
    return 0;
  }
  auto r = (*meter)->Read();
  if (!r.ok()) return 3;
  print(*r);
  return 0;
}
