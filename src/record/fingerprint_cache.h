// --values fingerprints for one recording: a new value's fingerprint is
// taken while the value is alive, on the thread that owns it: a host value is
// copied there and fingerprinted from the copy on the recorder's fingerprint
// thread (fingerprint_worker.h); a value too large to copy, or taken while
// that thread is behind, is fingerprinted in place, and a device value
// through the hook's reader. Only the fingerprint is written, never the
// values. Encoded fingerprints are kept by (value, offset, layout) so that
// views made again every step (weight.t() in each forward) take their value's
// fingerprint instead of computing it again.
//
// A lock of its own (fingerprint computation runs outside it; the fingerprint
// thread never takes it). Tensor identity drops a value's entries when it
// forgets the value, holding its own lock: the lock order is tensor
// identity's, then this one; never the reverse.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "magneton/recorder.h"
#include "magneton/status.h"
#include "magneton/trace_writer.h"
#include "record/fingerprint_worker.h"
#include "record/op_stacks.h"

namespace magneton::record {

// The fingerprint --values records for a value (same options for every
// engine, so traces of different engines compare), encoded; and the same
// from parts read where the values live (same options, same sample grid).
StatusOr<std::string> EncodeValueFingerprint(const TensorBuffer& buffer);
StatusOr<std::string> EncodeDeviceValueFingerprint(const DeviceValueReader& reader, std::string_view dtype,
                                                   const std::vector<int64_t>& shape);

class FingerprintCache {
 public:
  // next_op_id: the session's op id counter (the worker's recorder ops).
  FingerprintCache(TraceWriter* writer, std::atomic<int64_t>* next_op_id);
  FingerprintCache(const FingerprintCache&) = delete;
  FingerprintCache& operator=(const FingerprintCache&) = delete;

  // Writes the fingerprint of value tensor_id, read through t (its values
  // readable: TensorView::has_readable_values), now or from a copy taken now.
  // viewed_id: for a view output, the id of the input value it aliases, else
  // kNoId. Returns the time this thread spent on it (the copy, or computing
  // it in place), which the caller charges to the recorder (RecorderSpan);
  // none when a kept one was taken or the dtype has no fingerprint.
  std::optional<RecorderSpan> FingerprintValue(int64_t tensor_id, const TensorView& t, int64_t viewed_id);

  // Drops what was kept for views of value_id (the value is gone or was
  // written anew).
  void Drop(int64_t value_id);
  // Drops everything kept (every value was forgotten).
  void Clear();

  // The name id of the fingerprint thread's recorder ops (kFingerprintOpName).
  void set_span_name_id(int64_t name_id) { worker_.set_span_name_id(name_id); }
  // Waits until every fingerprint taken so far is written.
  void Drain() { worker_.Drain(); }
  // Drain, then the fingerprint thread ends (Stop: before the writer closes).
  void Finish() { worker_.Finish(); }

  // The recorder.device_fingerprint* and recorder.fingerprints_reused meta, at Stop.
  void WriteStopMeta();

  int64_t fingerprints_reused() const;
  // Views whose invariant part was taken from a kept fingerprint of the same
  // elements in another order (their strong part computed).
  int64_t invariants_reused() const;
  // Fingerprints computed from a copy on the fingerprint thread.
  int64_t computed_off_thread() const;
  // Host fingerprints computed on the traced thread: too large to copy, or
  // taken while the fingerprint thread was behind.
  int64_t computed_in_place() const;
  // Views fingerprinted on the thread from their value's copy, not a copy of their own.
  int64_t copies_shared() const;
  size_t bytes_cached() const;

 private:
  // A value read through one layout, and its encoded fingerprint: reused for
  // a view that reads the same elements in the same order (weight.t() made
  // again in every forward; view(1, 1, n) of an op's (1, n) result). Found
  // by the value's id, not by address, because freed memory is reused at
  // once by new values; dropped when that value is forgotten.
  // A view that reads the same elements in another order (a transpose of
  // the KV cache every decode step) takes the kept one's invariant part.
  struct ViewFingerprint {
    int64_t storage_offset;
    uint64_t layout_hash;  // ValueLayoutHash
    std::vector<int64_t> elements;  // ElementSet; empty: none usable
    std::shared_ptr<KeptFingerprint> kept;  // maybe still being computed
    size_t bytes = 0;  // what bytes_cached_ counts for it
  };

  // The first kept for value `id` that `match` accepts, or null; mu_ held.
  template <typename Match>
  ViewFingerprint* FindIfLocked(int64_t id, Match&& match);
  // The fingerprint kept for value `id` read at this offset and layout, or null; mu_ held.
  ViewFingerprint* FindLocked(int64_t id, int64_t storage_offset, uint64_t layout_hash);
  // One kept for value `id` read at this offset through the same elements, or null; mu_ held.
  const ViewFingerprint* FindSameElementsLocked(int64_t id, int64_t storage_offset,
                                                const std::vector<int64_t>& elements);
  // Keeps `kept` for views of value_id read at this offset and layout; mu_ held.
  void CacheLocked(int64_t value_id, int64_t storage_offset, uint64_t layout_hash,
                   const std::vector<int64_t>& elements, const std::shared_ptr<KeptFingerprint>& kept);
  // The fingerprint of host `buffer`, with `known`'s invariant part when that
  // one is computed (the same elements in another order: the same bits as
  // computing it whole, for less), else whole.
  StatusOr<std::string> EncodeHostValue(const TensorBuffer& buffer, const KeptFingerprint* known);
  // Writes `kept` for tensor_id once computed, after the rows queued before it.
  void WriteInOrder(int64_t tensor_id, std::shared_ptr<KeptFingerprint> kept);
  // The fingerprint thread's work: one job (FingerprintWorker::Run).
  static void RunJob(const FingerprintWorker::Job& job, TraceWriter* writer, void* context);
  void DropLocked(int64_t id);
  // Counts a device fingerprint's outcome (meta recorder.device_fingerprint*).
  void NoteDeviceFingerprint(const Status& status);

  TraceWriter* const writer_;
  // Encoded fingerprints by (value, offset, layout), for the views of that
  // value: a value's own and those of its views. A view that reads its
  // value's elements in the value's own order (HF's view(1, 1, n) of a
  // Conv1D's addmm result) takes the value's fingerprint. Nothing else is
  // reused: an address with the same layout and version can hold a new value
  // (freed and reallocated memory, writes by nested ops that bump no version
  // counter).
  mutable std::mutex mu_;
  std::unordered_map<int64_t, std::vector<ViewFingerprint>> fingerprints_;  // by value id
  size_t bytes_cached_ = 0;
  int64_t fingerprints_reused_ = 0;
  std::atomic<int64_t> invariants_reused_{0};
  std::atomic<int64_t> computed_off_thread_{0};
  std::atomic<int64_t> computed_in_place_{0};
  std::atomic<int64_t> copies_shared_{0};  // views that read their value's copy (PushView)
  // Device tensors: fingerprints computed there, skipped (the reader said
  // Unavailable) and failed; the first failure's message goes to the meta.
  std::atomic<int64_t> device_fingerprints_{0};
  std::atomic<int64_t> device_fingerprints_skipped_{0};
  std::atomic<int64_t> device_fingerprint_errors_{0};
  std::atomic<bool> device_error_noted_{false};
  // Last: its destructor finishes the jobs, which use the members above.
  FingerprintWorker worker_;
};

}  // namespace magneton::record
