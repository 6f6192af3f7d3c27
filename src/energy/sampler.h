// A thread that polls one Meter and hands EnergySample records to a sink.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "energy/energy.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {
class Clock;  // base/clock.h
}  // namespace magneton

namespace magneton::energy {

struct SamplerOptions {
  // 0: the meter's update period (1 ms for RAPL: 1 kHz), capped by its
  // max_poll_period_ns so a wrapping counter is never missed.
  int64_t period_ns = 0;
  // Back off (double the period, up to max_backoff x) after this many reads in
  // a row saw no change: a meter slower than it claims is not polled in vain.
  int unchanged_reads_before_backoff = 8;
  int max_backoff = 8;
  // The clocks the thread reads and sleeps on; null: the system clocks.
  // Tests pass a scripted clock to check the schedule exactly. Must outlive the sampler.
  Clock* clock = nullptr;
};

struct SamplerStats {
  int64_t reads = 0;          // successful Meter::Read calls
  int64_t read_errors = 0;
  int64_t samples_emitted = 0;  // EnergySample records handed to the sink
  int64_t wall_ns = 0;        // from Start to Stop (or now)
  int64_t thread_cpu_ns = 0;  // CPU time of the sampler thread itself
  double reads_per_second() const { return wall_ns > 0 ? reads * 1e9 / wall_ns : 0; }
  double cpu_fraction() const { return wall_ns > 0 ? double(thread_cpu_ns) / wall_ns : 0; }
};

class Sampler {
 public:
  using Sink = std::function<void(EnergySample)>;

  // The meter must outlive the sampler. The sink runs on the sampler thread.
  Sampler(Meter* meter, Sink sink, SamplerOptions options = {});
  ~Sampler();  // stops
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  Status Start();
  // Takes one final reading, so the window ends at Stop, then joins.
  Status Stop();
  bool running() const { return running_.load(); }
  int64_t period_ns() const { return base_period_ns_; }
  // Valid while running (approximate) and after Stop (exact).
  SamplerStats stats() const;
  // The last read error, if any (a meter that fails is not retried silently).
  Status last_error() const;

 private:
  void Loop();
  void ReadAndEmit(bool force_emit);

  Meter* meter_;
  Sink sink_;
  Clock* clock_;
  SamplerOptions options_;
  int64_t base_period_ns_ = 0;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<int64_t> reads_{0}, read_errors_{0}, samples_emitted_{0};
  std::atomic<int64_t> thread_cpu_ns_{0};
  int64_t start_ns_ = 0;
  std::atomic<int64_t> stop_ns_{0};
  mutable std::mutex error_mu_;
  Status last_error_;
  // Previous reading, to emit only changes (a counter that has not updated
  // yet would otherwise add flat steps that distort interpolation).
  MeterReading previous_;
  bool have_previous_ = false;
  int unchanged_run_ = 0;
};

}  // namespace magneton::energy
