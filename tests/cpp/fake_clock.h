// A scripted Clock for the sampler and estimate-meter tests: time
// moves only when a test (or a sleep) moves it, so schedules and estimates
// are asserted exactly instead of against how busy this machine is.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"

namespace magneton::energy {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 1'000'000'000) : now_ns_(start_ns) {}

  int64_t MonotonicNowNs() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_ns_;
  }
  int64_t ProcessCpuNowNs() override {
    std::lock_guard<std::mutex> lock(mu_);
    return process_cpu_ns_;
  }
  // Per thread: what the thread was charged by its own sleeps (see cpu_per_wake_ns).
  int64_t ThreadCpuNowNs() override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = thread_cpu_ns_.find(std::this_thread::get_id());
    return it == thread_cpu_ns_.end() ? 0 : it->second;
  }

  // Jumps to the deadline (never back) and returns, unless the deadline lies
  // past park_after_ns: then the caller blocks there, with the time unchanged,
  // until Release(); after that every sleep returns at once.
  void SleepUntilNs(int64_t deadline_ns) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!released_ && deadline_ns > park_after_ns_) {
      parked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    if (!released_) deadlines_.push_back(deadline_ns);
    now_ns_ = std::max(now_ns_, deadline_ns);
    thread_cpu_ns_[std::this_thread::get_id()] += cpu_per_wake_ns_;
    sleeper_ = std::this_thread::get_id();
  }

  // Test side.
  void Advance(int64_t wall_ns, int64_t process_cpu_ns = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ns_ += wall_ns;
    process_cpu_ns_ += process_cpu_ns;
  }
  void ParkAfter(int64_t t_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    park_after_ns_ = t_ns;
  }
  void set_cpu_per_wake_ns(int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    cpu_per_wake_ns_ = ns;
  }
  // Blocks until a sleeper parked; everything it did before is then visible.
  void WaitParked() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return parked_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Deadlines slept to before the park (the one that parked is not included).
  std::vector<int64_t> deadlines() {
    std::lock_guard<std::mutex> lock(mu_);
    return deadlines_;
  }
  // The thread CPU time charged to the (last) thread that slept.
  int64_t sleeper_cpu_ns() {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = thread_cpu_ns_.find(sleeper_);
    return it == thread_cpu_ns_.end() ? 0 : it->second;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t now_ns_;
  int64_t process_cpu_ns_ = 0;
  int64_t cpu_per_wake_ns_ = 0;
  int64_t park_after_ns_ = INT64_MAX;
  bool parked_ = false, released_ = false;
  std::vector<int64_t> deadlines_;
  std::map<std::thread::id, int64_t> thread_cpu_ns_;
  std::thread::id sleeper_;
};

}  // namespace magneton::energy
