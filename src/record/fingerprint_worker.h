// --values fingerprints computed on a thread of the recorder's own, from a
// copy of the value taken on the traced thread at the moment the fingerprint
// would have been computed there. The copy is what the fingerprint reads, so
// no later write to the tensor (seen by a hook or not: a NumPy view, an
// extension's data_ptr) can change it: the fingerprint is the one computed in
// place, bit for bit. What the traced thread pays is the copy (a memcpy of the
// elements' extent) instead of the fingerprint (moments, quantile ranks, the
// sample grid): ~0.3 against ~9 µs for a 768-element activation.
//
// Copies live in one ring of kRingBytes, freed in the order they were taken
// (jobs run in order), so the traced thread allocates nothing per value. A
// view that reads the same elements as a value whose copy is still in the
// ring (a transpose of a KV cache's cat) reads that copy, which stays until
// the view's job is done (a pin), instead of copying them again. The
// thread runs in the idle scheduling class: only on cores the program leaves
// idle, never slowing its threads; when it falls behind and the ring is full,
// the traced thread computes the next values in place, as it would without
// the thread, and never waits for it. The thread's CPU time is written as
// recorder ops on its own thread (kFingerprintOpName; in 1 ms bins of wall
// time, cpu_bins.h, since it is preempted often), so attribution charges that
// energy to the recorder and not to the op that ran beside it; what runs
// after Stop asked for the rest is marked "at_stop" (outside the job).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/small_vector.h"
#include "fingerprint/fingerprint.h"
#include "magneton/trace_writer.h"

namespace magneton::record {

// A fingerprint computed or still queued: the worker fills `encoded` and
// `ok`, then sets `done` (release), so a reader that sees done sees both.
struct KeptFingerprint {
  std::atomic<bool> done{false};
  bool ok = false;
  std::string encoded;
  // The copy its job reads (FingerprintWorker::PushCopy, or the value's copy
  // a view job shares): element [0, ..., 0] and the ring position of the
  // copy's first byte; null: none. The worker's, under its lock.
  const void* copy_element0 = nullptr;
  uint64_t copy_from = 0;

  // Computed, and `encoded` holds it.
  bool Ready() const { return done.load(std::memory_order_acquire) && ok; }
  // Computed, and it could not be.
  bool Failed() const { return done.load(std::memory_order_acquire) && !ok; }
};

class FingerprintWorker {
 public:
  // The ring the copies live in; a value whose elements span more than
  // kMaxCopyBytes is fingerprinted on the traced thread instead.
  static constexpr size_t kRingBytes = 16u << 20;
  static constexpr size_t kMaxCopyBytes = kRingBytes / 4;

  // What the worker does with a job: compute `result` from `buffer` (with
  // `known`'s invariant part when it is done and ok), or, for an alias job
  // (buffer.data null), write `result` again under another tensor id.
  struct Job {
    int64_t tensor_id = 0;
    std::shared_ptr<KeptFingerprint> result;
    std::shared_ptr<const KeptFingerprint> known;  // same elements, another order; may be null
    DType dtype = DType::kFloat32;
    const void* data = nullptr;  // element [0, ..., 0] inside the ring; null: an alias job
    SmallVector<int64_t, 6> shape;
    SmallVector<int64_t, 6> strides;
    // Ring positions (bytes reserved since the ring was made; the offset is
    // the position modulo kRingBytes): past this job's copy, 0 for none; and
    // the first byte of the copy a view job reads, which stays until it is done.
    uint64_t ring_end = 0;
    uint64_t pin_from = 0;
    bool pins = false;
  };
  using Run = void (*)(const Job& job, TraceWriter* writer, void* context);

  // next_op_id: the session's op id counter, which the worker's recorder ops
  // draw from. run(job, writer, context) computes and writes a job.
  // idle_class: the thread runs in the idle scheduling class (the recorder's
  // choice); false, as a normal thread (a test that needs it to progress on
  // a machine busy with other work).
  FingerprintWorker(TraceWriter* writer, std::atomic<int64_t>* next_op_id, Run run, void* context,
                    bool idle_class = true);
  FingerprintWorker(const FingerprintWorker&) = delete;
  FingerprintWorker& operator=(const FingerprintWorker&) = delete;
  ~FingerprintWorker();  // Finish()

  // The name id of the worker's recorder ops (kFingerprintOpName, interned
  // at Start); none set: its work is not written as ops.
  void set_span_name_id(int64_t name_id) { span_name_id_.store(name_id, std::memory_order_relaxed); }

  // Copies the elements `data` points at (element [0, ..., 0] of a strided
  // value) into the ring and queues the job that fingerprints them. False,
  // and nothing queued, when the elements' extent is over kMaxCopyBytes or
  // the ring has no room now: the caller computes it in place.
  bool PushCopy(Job job, const void* data, size_t element_bytes);
  // A view job: reads the copy `base` has (base.copy_element0 is element
  // [0, ..., 0] of the view too: the same elements at the same offset, maybe
  // in another order) while that copy is still in the ring, and keeps it
  // there until the job is done. False, and `job` untouched, when `base` has
  // no copy or its copy is freed: the caller copies.
  bool PushView(Job&& job, const KeptFingerprint& base);
  // An alias job (job.data null): written after every job queued before it,
  // at once when none is. Every fingerprint the traced thread has in hand
  // goes this way, so that the rows of one tensor id (a value written again
  // by a nested op is fingerprinted again) are written in the order taken.
  void WriteInOrder(Job job);
  // Waits until every job queued before the call is written (the thread in
  // the normal scheduling class meanwhile); jobs queued meanwhile by threads
  // that go on recording are not waited for.
  void Drain();
  // Drain, the work from now on marked "at_stop", and the thread ended.
  void Finish();

  int64_t jobs_run() const { return jobs_run_.load(std::memory_order_relaxed); }
  // 1: the thread runs in the idle scheduling class; 0: not started; < 0:
  // -errno of the refusal (it then runs as a normal thread).
  int idle_class() const { return idle_class_.load(std::memory_order_relaxed); }

 private:
  // Reserves n bytes of the ring (and the end before it, when they do not
  // fit there) and sets *offset to where they start; mu_ held. False: no room now.
  bool ReserveLocked(size_t n, size_t* offset);
  // Frees what no job reads any more: everything below the end of the last
  // copy job done and below every pinned copy; mu_ held.
  void ReleaseLocked();
  void PushLocked(Job job, std::unique_lock<std::mutex>& lock);
  // The thread's scheduling class: idle, or normal while someone waits for it; mu_ held.
  void SetIdleClassLocked(bool idle);
  void Loop();
  // Writes an interval of the thread's CPU time as a recorder op (cpu_bins.h).
  void WriteWork(int64_t start_ns, int64_t end_ns, bool at_stop);

  TraceWriter* const writer_;
  std::atomic<int64_t>* const next_op_id_;
  const Run run_;
  void* const context_;
  const bool idle_class_wanted_;
  std::atomic<int64_t> span_name_id_{-1};
  std::atomic<int64_t> at_stop_from_ns_;
  std::atomic<int64_t> jobs_run_{0};
  std::atomic<int> idle_class_{0};
  int64_t os_tid_ = 0;  // the worker's, set on its thread before its first op

  std::mutex mu_;
  std::condition_variable work_cv_;  // jobs queued, Drain or Finish
  std::condition_variable done_cv_;  // a job done (Drain)
  std::deque<Job> jobs_;             // the front one runs while it stays here
  uint64_t jobs_pushed_ = 0;         // queued so far, and done so far (Drain waits for a count)
  uint64_t jobs_done_ = 0;
  bool stopping_ = false;
  std::unique_ptr<std::byte[]> ring_;
  // Ring positions: the next byte to reserve; the first byte still held;
  // the end of the last copy job done; the first bytes of the copies queued
  // view jobs read.
  uint64_t ring_head_ = 0;
  uint64_t ring_tail_ = 0;
  uint64_t ring_done_ = 0;
  std::multiset<uint64_t> ring_pins_;
  std::thread thread_;    // started with the first job
};

}  // namespace magneton::record
