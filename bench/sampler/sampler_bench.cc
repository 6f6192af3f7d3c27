// The sampler thread's own cost, measured side by side in one run:
//   sampler_bench [seconds]            (default: 2 per meter)
// A counter that changes every millisecond (RAPL's rate) and the estimate
// meter at its own rate. The cost is the sampler thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID) over the wall time, so a loaded machine shows
// as fewer reads per second, not as a higher share. Target: < 1% of a core.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/clock.h"
#include "energy/energy.h"
#include "energy/sampler.h"

namespace {

using magneton::energy::Meter;

// A counter that changes on every read, with RAPL's 1 ms update period.
class MillisecondCounter : public Meter {
 public:
  std::string_view name() const override { return "1 kHz counter"; }
  const std::vector<magneton::energy::MeterDomain>& domains() const override { return domains_; }
  magneton::energy::MeterKind kind() const override { return magneton::energy::MeterKind::kEnergyCounter; }
  int64_t update_period_ns() const override { return 1'000'000; }
  int64_t max_poll_period_ns() const override { return INT64_MAX; }
  magneton::Provenance provenance() const override { return magneton::Provenance::kMeasured; }
  magneton::StatusOr<magneton::energy::MeterReading> Read() override {
    magneton::energy::MeterReading r;
    r.t_ns = magneton::MonotonicNowNs();
    r.domains.push_back({static_cast<double>(++reads_), magneton::energy::kNaN});
    return r;
  }

 private:
  int64_t reads_ = 0;
  std::vector<magneton::energy::MeterDomain> domains_ = {{"counter-0", true}};
};

int Measure(Meter* meter, double seconds) {
  int64_t sunk = 0;
  magneton::energy::Sampler sampler(meter, [&](magneton::EnergySample) { ++sunk; });
  if (!sampler.Start().ok()) {
    std::fprintf(stderr, "sampler_bench: could not start the sampler on %s\n", std::string(meter->name()).c_str());
    return 1;
  }
  usleep(static_cast<useconds_t>(seconds * 1e6));
  if (!sampler.Stop().ok()) return 1;
  const magneton::energy::SamplerStats s = sampler.stats();
  std::printf("%-16s %10.0f %12.0f %10.3f %9.2f%% %s\n", std::string(meter->name()).c_str(),
              1e9 / static_cast<double>(sampler.period_ns()), s.reads_per_second(), s.thread_cpu_ns / 1e6,
              100 * s.cpu_fraction(), s.cpu_fraction() < 0.01 ? "under 1%" : "OVER 1%");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  if (seconds <= 0) {
    std::fprintf(stderr, "usage: sampler_bench [seconds > 0]\n");
    return 2;
  }
  std::printf("%-16s %10s %12s %10s %10s\n", "meter", "nominal/s", "reads/s", "thread ms", "of a core");
  MillisecondCounter counter;
  if (Measure(&counter, seconds) != 0) return 1;
  auto estimate = magneton::energy::OpenEstimateMeter();
  if (!estimate.ok()) {
    std::fprintf(stderr, "sampler_bench: %s\n", std::string(estimate.status().message()).c_str());
    return 1;
  }
  return Measure(estimate->get(), seconds);
}
