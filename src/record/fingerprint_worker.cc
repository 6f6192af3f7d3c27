// The recorder's fingerprint thread (fingerprint_worker.h).
#include "record/fingerprint_worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <utility>

#include "base/clock.h"
#include "magneton/clock.h"
#include "record/cpu_bins.h"

namespace magneton::record {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// Copies start on a cache line, as a fresh allocation would.
constexpr size_t kRingAlign = 64;
// The worker wakes on its own this often while jobs wait, so the traced
// thread need not wake it (a futex call) for every value it queues.
constexpr auto kPollPeriod = std::chrono::milliseconds(2);
// ...and is woken at once when this many wait.
constexpr size_t kWakeAtJobs = 64;
// This many queued, the traced thread waits for them (~10 MB of jobs).
constexpr size_t kMaxQueuedJobs = 1 << 16;

// The first and one-past-last element offsets a strided value reads,
// relative to element [0, ..., 0] (strides may be negative). False: no
// elements.
bool ElementExtent(const SmallVector<int64_t, 6>& shape, const SmallVector<int64_t, 6>& strides, int64_t* lo,
                   int64_t* hi) {
  int64_t low = 0, high = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 0) return false;
    const int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? low : high) += reach;
  }
  *lo = low;
  *hi = high + 1;
  return true;
}

}  // namespace

FingerprintWorker::FingerprintWorker(TraceWriter* writer, std::atomic<int64_t>* next_op_id, Run run, void* context,
                                     bool idle_class)
    : writer_(writer),
      next_op_id_(next_op_id),
      run_(run),
      context_(context),
      idle_class_wanted_(idle_class),
      at_stop_from_ns_(kNever) {}

FingerprintWorker::~FingerprintWorker() { Finish(); }

bool FingerprintWorker::ReserveLocked(size_t n, size_t* offset) {
  const uint64_t cap = kRingBytes;
  // Empty: start again at offset 0, the whole ring in one piece.
  if (ring_tail_ == ring_head_) ring_head_ = ring_tail_ = ring_done_ = (ring_head_ + cap - 1) / cap * cap;
  const uint64_t at = ring_head_ % cap;
  // What does not fit before the ring's end starts at offset 0; the end is
  // skipped, held until the job is done.
  const uint64_t skip = cap - at >= n ? 0 : cap - at;
  if (ring_head_ - ring_tail_ + skip + n > cap) return false;
  *offset = static_cast<size_t>(skip ? 0 : at);
  ring_head_ += skip + n;
  return true;
}

void FingerprintWorker::ReleaseLocked() {
  ring_tail_ = ring_pins_.empty() ? ring_done_ : std::min(ring_done_, *ring_pins_.begin());
}

bool FingerprintWorker::PushCopy(Job job, const void* data, size_t element_bytes) {
  if (job.strides.empty()) {  // contiguous, row-major: innermost first, then reversed
    int64_t stride = 1;
    for (size_t d = job.shape.size(); d-- > 0;) {
      job.strides.push_back(stride);
      stride *= job.shape[d];
    }
    std::reverse(job.strides.begin(), job.strides.end());
  }
  int64_t lo = 0, hi = 0;
  if (!ElementExtent(job.shape, job.strides, &lo, &hi)) return false;
  const size_t bytes = static_cast<size_t>(hi - lo) * element_bytes;
  if (bytes > kMaxCopyBytes) return false;
  const size_t n = (bytes + kRingAlign - 1) / kRingAlign * kRingAlign;
  const auto* first = static_cast<const std::byte*>(data) + lo * static_cast<int64_t>(element_bytes);

  std::unique_lock<std::mutex> lock(mu_);
  if (!ring_) ring_ = std::make_unique_for_overwrite<std::byte[]>(kRingBytes);
  size_t offset = 0;
  if (!ReserveLocked(n, &offset)) {
    // The thread is behind (the machine's cores busy with the program):
    // the caller computes this one in place rather than wait for it.
    lock.unlock();
    work_cv_.notify_one();
    return false;
  }
  // Copied under the lock, so that the ring's order is the queue's when
  // several threads record values at once.
  std::memcpy(ring_.get() + offset, first, bytes);
  job.data = ring_.get() + offset - lo * static_cast<int64_t>(element_bytes);
  job.ring_end = ring_head_;
  job.result->copy_element0 = job.data;
  job.result->copy_from = ring_head_ - n;
  PushLocked(std::move(job), lock);
  return true;
}

bool FingerprintWorker::PushView(Job&& job, const KeptFingerprint& base) {
  std::unique_lock<std::mutex> lock(mu_);
  // Still in the ring: not freed (below the tail), and the ring not
  // emptied and started again since (positions only grow).
  if (base.copy_element0 == nullptr || base.copy_from < ring_tail_) return false;
  job.data = base.copy_element0;
  job.pins = true;
  job.pin_from = base.copy_from;
  ring_pins_.insert(base.copy_from);
  // Views of this view read the same copy.
  job.result->copy_element0 = base.copy_element0;
  job.result->copy_from = base.copy_from;
  PushLocked(std::move(job), lock);
  return true;
}

void FingerprintWorker::WriteInOrder(Job job) {
  job.data = nullptr;
  std::unique_lock<std::mutex> lock(mu_);
  if (!jobs_.empty()) {
    PushLocked(std::move(job), lock);
    return;
  }
  lock.unlock();
  run_(job, writer_, context_);
}

void FingerprintWorker::PushLocked(Job job, std::unique_lock<std::mutex>& lock) {
  jobs_.push_back(std::move(job));
  ++jobs_pushed_;
  if (!thread_.joinable()) {
    stopping_ = false;
    thread_ = std::thread([this] { Loop(); });
    // Only the cores the program leaves idle: a thread of the idle class
    // runs when nothing else wants the core, so it never slows the program's
    // own threads (torch's intra-op pool on a machine with few cores). When
    // it falls behind, the traced thread computes in place (PushCopy says no).
    SetIdleClassLocked(true);
  }
  const size_t queued = jobs_.size();
  if (queued < kWakeAtJobs) return;
  lock.unlock();
  work_cv_.notify_one();
  // A thread that gets no time (the machine's cores all busy) must not let
  // the queue grow without bound: aliases take no ring bytes.
  if (queued >= kMaxQueuedJobs) Drain();
}

void FingerprintWorker::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  // Only what was queued before this call: threads that go on recording
  // meanwhile (a flush while the recording runs) would keep the queue from
  // ever being empty.
  const uint64_t target = jobs_pushed_;
  if (jobs_done_ >= target) return;
  // Someone waits for it now: it runs as a normal thread until it is done,
  // or a machine busy with other processes would leave it next to no time.
  SetIdleClassLocked(false);
  while (jobs_done_ < target) {
    work_cv_.notify_one();
    done_cv_.wait(lock);
  }
  SetIdleClassLocked(true);
}

void FingerprintWorker::SetIdleClassLocked(bool idle) {
  if (!thread_.joinable() || !idle_class_wanted_) return;
  const sched_param param{};
  const int error = pthread_setschedparam(thread_.native_handle(), idle ? SCHED_IDLE : SCHED_OTHER, &param);
  if (idle) idle_class_.store(error == 0 ? 1 : -error, std::memory_order_relaxed);
}

void FingerprintWorker::Finish() {
  at_stop_from_ns_.store(MonotonicNowNs(), std::memory_order_relaxed);
  Drain();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  at_stop_from_ns_.store(kNever, std::memory_order_relaxed);
}

void FingerprintWorker::Loop() {
  os_tid_ = static_cast<int64_t>(syscall(SYS_gettid));
  // Named, like the writer's thread, for whoever looks at the process (top -H, perf).
  pthread_setname_np(pthread_self(), "magneton-values");
  CpuBins bins([this](int64_t start_ns, int64_t end_ns, bool at_stop) { WriteWork(start_ns, end_ns, at_stop); });
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (jobs_.empty()) {
      if (stopping_) return;
      work_cv_.wait_for(lock, kPollPeriod);
      continue;
    }
    // One CPU clock reading a job: each job's time runs from the last one's end.
    int64_t cpu_ns = ThreadCpuNowNs();
    while (!jobs_.empty()) {
      // The front job stays queued (its copy reserved) while it runs; a
      // deque's push_back leaves references to it valid.
      const Job& job = jobs_.front();
      lock.unlock();
      run_(job, writer_, context_);
      const int64_t cpu_end_ns = ThreadCpuNowNs();
      bins.Add(MonotonicNowNs(), cpu_end_ns - cpu_ns, at_stop_from_ns_.load(std::memory_order_relaxed));
      cpu_ns = cpu_end_ns;
      jobs_run_.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
      if (job.ring_end > 0) ring_done_ = job.ring_end;  // an alias or a view holds no copy of its own
      if (job.pins) ring_pins_.erase(ring_pins_.find(job.pin_from));
      ReleaseLocked();
      jobs_.pop_front();
      ++jobs_done_;
      // Only a Drain waits on it, rarely: a notify with no waiter is cheap.
      done_cv_.notify_all();
    }
    lock.unlock();
    bins.Flush(at_stop_from_ns_.load(std::memory_order_relaxed));
    lock.lock();
  }
}

void FingerprintWorker::WriteWork(int64_t start_ns, int64_t end_ns, bool at_stop) {
  const int64_t name_id = span_name_id_.load(std::memory_order_relaxed);
  if (name_id < 0) return;
  OpEvent op;
  op.id = next_op_id_->fetch_add(1, std::memory_order_relaxed);
  op.name_id = name_id;
  op.thread_id = os_tid_;
  op.start_ns = start_ns;
  op.end_ns = end_ns;
  writer_->AppendOp(std::move(op), {}, at_stop ? R"({"at_stop":true})" : "");
}

}  // namespace magneton::record
