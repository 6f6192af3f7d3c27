#include "energy/sampler.h"

#include <pthread.h>

#include <algorithm>

#include "base/clock.h"

namespace magneton::energy {
namespace {

bool SameValues(const MeterReading& a, const MeterReading& b) {
  if (a.domains.size() != b.domains.size()) return false;
  for (size_t i = 0; i < a.domains.size(); ++i) {
    const auto& x = a.domains[i];
    const auto& y = b.domains[i];
    // NaN != NaN, so compare "both NaN" explicitly.
    bool e_same = x.energy_uj == y.energy_uj || (x.energy_uj != x.energy_uj && y.energy_uj != y.energy_uj);
    bool p_same = x.power_mw == y.power_mw || (x.power_mw != x.power_mw && y.power_mw != y.power_mw);
    if (!e_same || !p_same) return false;
  }
  return true;
}

}  // namespace

Sampler::Sampler(Meter* meter, Sink sink, SamplerOptions options)
    : meter_(meter),
      sink_(std::move(sink)),
      clock_(options.clock ? options.clock : &SystemClock()),
      options_(options) {
  int64_t period = options_.period_ns > 0 ? options_.period_ns : meter_->update_period_ns();
  base_period_ns_ = std::max<int64_t>(1, std::min(period, meter_->max_poll_period_ns()));
}

Sampler::~Sampler() {
  if (running_.load()) (void)Stop();
}

Status Sampler::Start() {
  if (running_.load()) return FailedPrecondition("sampler already running");
  if (thread_.joinable()) return FailedPrecondition("a sampler cannot be restarted; create a new one");
  stop_requested_ = false;
  start_ns_ = clock_->MonotonicNowNs();
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

Status Sampler::Stop() {
  if (!running_.load()) return FailedPrecondition("sampler not running");
  stop_requested_ = true;
  thread_.join();
  running_ = false;
  return Status::Ok();
}

SamplerStats Sampler::stats() const {
  SamplerStats s;
  s.reads = reads_.load();
  s.read_errors = read_errors_.load();
  s.samples_emitted = samples_emitted_.load();
  int64_t end = stop_ns_.load();
  s.wall_ns = (end ? end : clock_->MonotonicNowNs()) - start_ns_;
  s.thread_cpu_ns = thread_cpu_ns_.load();
  return s;
}

Status Sampler::last_error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void Sampler::ReadAndEmit(bool force_emit) {
  auto reading = meter_->Read();
  if (!reading.ok()) {
    read_errors_.fetch_add(1);
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = reading.status();
    return;
  }
  reads_.fetch_add(1);
  bool changed = !have_previous_ || !SameValues(previous_, *reading);
  unchanged_run_ = changed ? 0 : unchanged_run_ + 1;
  if (changed || force_emit) {
    for (auto& sample : ToEnergySamples(*meter_, *reading)) {
      sink_(std::move(sample));
      samples_emitted_.fetch_add(1);
    }
  }
  previous_ = std::move(reading).value();
  have_previous_ = true;
}

void Sampler::Loop() {
  pthread_setname_np(pthread_self(), "magneton-energy");
  int64_t period = base_period_ns_;
  int64_t max_period = std::min(meter_->max_poll_period_ns(), base_period_ns_ * std::max(1, options_.max_backoff));
  int64_t next = clock_->MonotonicNowNs();
  ReadAndEmit(/*force_emit=*/true);  // the window starts at Start
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    next += period;
    int64_t now = clock_->MonotonicNowNs();
    if (next < now) next = now;  // fell behind (preempted): do not burst to catch up
    // Absolute deadlines keep the rate steady: a slow read shortens the next
    // sleep instead of drifting the period.
    clock_->SleepUntilNs(next);
    if (stop_requested_.load(std::memory_order_relaxed)) break;
    ReadAndEmit(/*force_emit=*/false);
    // Adaptive rate: a meter that has not changed for a while updates slower
    // than it claims, so poll it less; any change returns to the base rate.
    if (unchanged_run_ == 0) {
      period = base_period_ns_;
    } else if (unchanged_run_ >= options_.unchanged_reads_before_backoff) {
      period = std::min(period * 2, std::max(base_period_ns_, max_period));
      unchanged_run_ = 0;
    }
    thread_cpu_ns_.store(clock_->ThreadCpuNowNs(), std::memory_order_relaxed);
  }
  ReadAndEmit(/*force_emit=*/true);  // ...and ends at Stop
  thread_cpu_ns_.store(clock_->ThreadCpuNowNs());
  stop_ns_.store(clock_->MonotonicNowNs());
}

}  // namespace magneton::energy
