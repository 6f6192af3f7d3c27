// Tensor identity and the storage sweep (tensor_identity.h).
#include "record/tensor_identity.h"

#include <algorithm>
#include <span>
#include <string>

#include "record/fingerprint_cache.h"
#include "record/view_layout.h"

namespace magneton::record {

TensorIdentity::TensorKey TensorIdentity::KeyOf(const TensorView& t) {
  return TensorKey{t.storage_addr, t.storage_uid, t.storage_offset, t.version, LayoutHash(t)};
}

TensorIdentity::Resolved TensorIdentity::Resolve(const TensorView& t, bool is_output, int64_t op_id,
                                                 int64_t viewed_id, bool buffer_write) {
  const TensorKey key = KeyOf(t);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tensors_.find(key);
  if (it != tensors_.end()) {
    // An input is whatever value last lived under this key. An output is new,
    // unless this op or one nested in it (a later id) already produced it, or
    // it is a view identical to the input it views (view(same shape),
    // contiguous() of a contiguous tensor): the same value, so later reads of
    // the input do not seem to depend on the op that made the alias.
    if (!is_output) return {it->second.id, false};
    if (it->second.producer_op_id >= op_id) {
      // Made by this op or a nested one. Its values are final now: a buffer
      // that a nested aten::empty allocated and this op's kernel filled
      // (native_layer_norm's result), or copy_'s written self, gets its
      // fingerprint here, or it would have none.
      const int64_t id = it->second.id;
      if (it->second.producer_op_id > op_id && it->second.buffer_write) {
        // Written into its buffer by a nested op, and maybe again by this
        // op's kernel since (TensorEntry::buffer_write): fingerprinted anew,
        // as this op's output. The row is replaced (the program reads the
        // final values), and what was kept for the earlier values goes.
        it->second.producer_op_id = op_id;
        it->second.buffer_write = false;
        if (it->second.fingerprinted) {
          it->second.fingerprinted = false;
          fingerprints_->Drop(id);
        }
      }
      if (!record_values_ || !t.has_readable_values() || it->second.fingerprinted || t.uninitialized) {
        return {id, false};
      }
      // A view op handing back its nested view of an unwritten buffer
      // (select over as_strided inside index_select) wrote nothing either.
      if (t.is_view && uninitialized_ids_.count(id)) return {id, false};
      it->second.fingerprinted = true;
      uninitialized_ids_.erase(id);  // written: its views hold values now
      return {id, true};
    }
    if (t.is_view && viewed_id != kNoId && it->second.id == viewed_id) return {it->second.id, false};
  }
  // An input first seen inside a nested op, that no outer op's inputs held,
  // was made inside its parent without a recorded op: an output buffer the
  // kernel allocated (cat's result before narrow(...).copy_, all's result
  // before as_strided). Its values are whatever the allocator left there, so
  // fingerprinting it gave the same program different fingerprints from run
  // to run (290 of 3 317 tensors of one GPT-2 generate, with one thread or
  // two). The op that fills it fingerprints the result.
  const bool fresh_nested_input = !is_output && t.nested_input;
  if (fresh_nested_input && record_values_) ++fresh_nested_inputs_;
  // Such a buffer, an allocation's output, and any view of either, hold no
  // values yet: narrow(result) inside cat reads garbage as much as result.
  const bool uninitialized = fresh_nested_input || t.uninitialized ||
                             (t.is_view && viewed_id != kNoId && uninitialized_ids_.count(viewed_id));
  const bool fingerprint = record_values_ && t.has_readable_values() && !uninitialized;
  const int64_t id = NewTensorLocked(t, is_output, op_id, key, fingerprint, is_output && buffer_write);
  if (uninitialized && record_values_) uninitialized_ids_.insert(id);
  return {id, fingerprint};
}

int64_t TensorIdentity::AddOverwritten(const TensorView& t, int64_t op_id) {
  const TensorKey key = KeyOf(t);
  std::lock_guard<std::mutex> lock(mu_);
  return NewTensorLocked(t, /*is_output=*/true, op_id, key, /*fingerprinted=*/false, /*buffer_write=*/true);
}

int64_t TensorIdentity::NewTensorLocked(const TensorView& t, bool is_output, int64_t op_id, const TensorKey& key,
                                        bool fingerprinted, bool buffer_write) {
  // Shape and strides go to the writer as spans of the view (no vector per
  // tensor on the traced thread).
  TensorMeta meta;
  meta.id = next_tensor_id_++;
  meta.storage_addr = t.storage_addr;
  meta.storage_offset = t.storage_offset;
  meta.dtype = std::string(t.dtype);
  meta.device = std::string(t.device);
  meta.version = t.version;
  meta.producer_op_id = is_output ? op_id : kNoId;
  const TensorEntry entry{meta.id, meta.producer_op_id, fingerprinted, buffer_write};
  auto [slot, inserted] = tensors_.try_emplace(key, entry);
  if (!inserted) {
    // A new value under the same key (written without a version bump): the
    // old id is never looked up again, nor is what was kept for its views.
    fingerprints_->Drop(slot->second.id);
    slot->second = entry;
  }
  if (key.storage_uid != 0) {
    // A write bumps the version counter that all views of a storage share,
    // so this storage's values at older versions can no longer be read
    // through it. (A tensor with a counter of its own on the same storage,
    // x.data, then reads as a new value: a lost edge, never a stale one.)
    std::vector<TensorKey>& keys = keys_by_storage_[key.storage_uid];
    std::erase_if(keys, [&](const TensorKey& k) {
      if (k.version >= key.version) return false;
      ForgetLocked(k);
      return true;
    });
    if (inserted) keys.push_back(key);
  }
  if (tensors_.size() >= sweep_at_) sweep_due_->store(true, std::memory_order_relaxed);
  writer_->AppendTensor(meta, std::span<const int64_t>(t.sizes, t.ndim),
                        t.strides ? std::span<const int64_t>(t.strides, t.ndim) : std::span<const int64_t>());
  return meta.id;
}

void TensorIdentity::ForgetLocked(const TensorKey& key) {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) return;
  const int64_t id = it->second.id;
  tensors_.erase(it);
  uninitialized_ids_.erase(id);
  ++tensors_forgotten_;
  fingerprints_->Drop(id);
}

int64_t TensorIdentity::AddNamed(TensorMeta meta) {
  std::lock_guard<std::mutex> lock(mu_);
  meta.id = next_tensor_id_++;
  const int64_t id = meta.id;
  writer_->AppendTensor(std::move(meta));
  return id;
}

void TensorIdentity::ForgetStorages(const std::vector<uint64_t>& storage_uids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t uid : storage_uids) {
    auto it = keys_by_storage_.find(uid);
    if (it == keys_by_storage_.end()) continue;
    for (const TensorKey& k : it->second) ForgetLocked(k);
    keys_by_storage_.erase(it);
  }
  // What is left is on live storages: ask again once it has doubled.
  sweep_at_ = std::max(kSweepFloor, 2 * tensors_.size());
  sweep_due_->store(false, std::memory_order_relaxed);
}

void TensorIdentity::ForgetAll() {
  std::lock_guard<std::mutex> lock(mu_);
  tensors_forgotten_ += static_cast<int64_t>(tensors_.size());
  tensors_.clear();
  keys_by_storage_.clear();
  uninitialized_ids_.clear();
  sweep_at_ = kSweepFloor;
  fingerprints_->Clear();
}

TensorIdentity::Counts TensorIdentity::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Counts{static_cast<int64_t>(tensors_.size()), tensors_forgotten_, fresh_nested_inputs_,
                static_cast<int64_t>(uninitialized_ids_.size())};
}

}  // namespace magneton::record
