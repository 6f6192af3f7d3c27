// Tensor identity for one recording: which value a tensor that a hook shows
// is (the one an earlier op produced or read, or a new one), through views,
// in-place writes (version counters), addresses the allocator hands out again
// (storage uids) and buffers that hold no values yet; and forgetting the
// values whose storage was freed or written, so that the recorder's memory
// follows what is live rather than what ran.
//
// A lock of its own, taken for every tensor of every op on any thread. It
// decides whether a value is fingerprinted now; the fingerprint itself is
// computed by the caller after the lock is released (FingerprintCache).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "magneton/recorder.h"
#include "magneton/trace.h"
#include "magneton/trace_writer.h"
#include "base/hash_mix.h"

namespace magneton::record {

class FingerprintCache;

class TensorIdentity {
 public:
  // fingerprints: drops what it kept for a value this forgets (taken under
  // this part's lock). sweep_due: the flag hooks read (Recorder::
  // StorageSweepDue), raised here when the table has grown. record_values:
  // the recording fingerprints values (--values).
  TensorIdentity(TraceWriter* writer, FingerprintCache* fingerprints, std::atomic<bool>* sweep_due,
                 bool record_values)
      : writer_(writer), fingerprints_(fingerprints), sweep_due_(sweep_due), record_values_(record_values) {}
  TensorIdentity(const TensorIdentity&) = delete;
  TensorIdentity& operator=(const TensorIdentity&) = delete;

  struct Resolved {
    int64_t id = kNoId;
    // The value is to be fingerprinted now, by the caller (--values only).
    bool fingerprint = false;
  };
  // The value `t` is for op op_id: an input is whatever value last lived
  // under its key; an output is a new value unless the op (or one nested in
  // it) made it already or it is a view identical to its input. viewed_id:
  // for a view output, the id of the input value it aliases, else kNoId.
  // buffer_write: an output the op wrote into a buffer one of its inputs held.
  Resolved Resolve(const TensorView& t, bool is_output, int64_t op_id, int64_t viewed_id = kNoId,
                   bool buffer_write = false);
  // An argument op_id only writes (Recorder::AddOverwrittenInput): always a
  // new value, produced by op_id, not fingerprinted.
  int64_t AddOverwritten(const TensorView& t, int64_t op_id);
  // A value an engine names itself (Recorder::AddTensor): meta.id is assigned.
  int64_t AddNamed(TensorMeta meta);

  // Forgets the values on these storages (freed), then lowers the flag.
  void ForgetStorages(const std::vector<uint64_t>& storage_uids);
  // Forgets every value (the window closed: nothing watches them meanwhile).
  void ForgetAll();

  struct Counts {
    int64_t held = 0;                 // values a later op may still read
    int64_t forgotten = 0;            // values let go of (storage freed or written)
    int64_t fresh_nested_inputs = 0;  // --values: inputs first seen inside a nested op
    int64_t uninitialized = 0;        // --values: values that hold no values yet
  };
  Counts counts() const;

  // When the table reaches this size the flag is raised (and after a sweep,
  // at twice what is left, never lower).
  static constexpr size_t kSweepFloor = 16384;

 private:
  struct TensorKey {
    uint64_t storage_addr;
    uint64_t storage_uid;  // TensorView::storage_uid
    int64_t storage_offset;
    int64_t version;
    uint64_t layout_hash;  // shape, strides, dtype, device
    bool operator==(const TensorKey&) const = default;
  };
  struct TensorKeyHash {
    size_t operator()(const TensorKey& k) const {
      return Mix(Mix(Mix(Mix(k.storage_addr, k.storage_uid), static_cast<uint64_t>(k.storage_offset)),
                     static_cast<uint64_t>(k.version)),
                 k.layout_hash);
    }
  };
  struct TensorEntry {
    int64_t id;
    int64_t producer_op_id;
    // --values: whether the value has its fingerprint. A buffer from a nested
    // allocation (aten::empty) or a write-only argument is registered before
    // its values exist; the op that hands it back as its output fingerprints it.
    bool fingerprinted = false;
    // The producing op wrote the value into a buffer that existed before it
    // (copy_'s or add_'s self, an out= argument). An op that hands back such a
    // value made by an op nested in it may have written it again since:
    // addmm copies the bias in with a nested copy_, then its BLAS call adds
    // the product, with no recorded op and no version bump. Its values are
    // final only at the enclosing op's end (Resolve).
    bool buffer_write = false;
  };

  static TensorKey KeyOf(const TensorView& t);
  // Registers a new value; mu_ held. fingerprinted: the caller fingerprints
  // it now (else the op that returns it does, once its values exist).
  int64_t NewTensorLocked(const TensorView& t, bool is_output, int64_t op_id, const TensorKey& key,
                          bool fingerprinted, bool buffer_write);
  // Drops the value under `key`, with the fingerprints kept for its views;
  // mu_ held. Its id is never looked up again (ids are 1:1 with keys).
  void ForgetLocked(const TensorKey& key);

  TraceWriter* const writer_;
  FingerprintCache* const fingerprints_;
  std::atomic<bool>* const sweep_due_;
  const bool record_values_;

  mutable std::mutex mu_;
  // The values a later op may still read, by key. Memory follows what is
  // live, not what ran: a value is forgotten when its storage is freed
  // (ForgetStorages) or written (a newer version under the storage's shared
  // version counter), so a forgotten key can only come back as a new value.
  // Forgetting never aliases: storage_uid is never reused, so a new buffer
  // at a freed address has keys of its own.
  std::unordered_map<TensorKey, TensorEntry, TensorKeyHash> tensors_;
  // The keys in `tensors_` per storage (storage_uid != 0).
  std::unordered_map<uint64_t, std::vector<TensorKey>> keys_by_storage_;
  int64_t next_tensor_id_ = 0;
  int64_t tensors_forgotten_ = 0;
  // Inputs first seen inside a nested op: buffers their parent allocated
  // without a recorded op, not fingerprinted (Resolve).
  int64_t fresh_nested_inputs_ = 0;
  // Values that hold no values yet (Resolve): their views are not
  // fingerprinted either. Ids leave with their value (ForgetLocked).
  std::unordered_set<int64_t> uninitialized_ids_;
  // The map then stays within about twice the values on live storages, plus
  // the floor.
  size_t sweep_at_ = kSweepFloor;
};

}  // namespace magneton::record
