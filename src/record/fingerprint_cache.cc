// --values fingerprints and their per-view cache (fingerprint_cache.h).
#include "record/fingerprint_cache.h"

#include "fingerprint/fingerprint.h"
#include "fingerprint/value_parts.h"
#include "record/view_layout.h"

namespace magneton::record {

StatusOr<std::string> EncodeValueFingerprint(const TensorBuffer& buffer) {
  MAGNETON_ASSIGN_OR_RETURN(magneton::Fingerprint fp, ComputeFingerprint(buffer, ValueFingerprintOptions()));
  return EncodeFingerprint(fp);
}

StatusOr<std::string> EncodeDeviceValueFingerprint(const DeviceValueReader& reader, std::string_view dtype,
                                                   const std::vector<int64_t>& shape) {
  MAGNETON_ASSIGN_OR_RETURN(DType parsed, ParseDType(dtype));
  const FingerprintOptions options = ValueFingerprintOptions();
  const DeviceValueRequest request = MakeDeviceValueRequest(shape, options);
  DeviceValueParts parts;
  MAGNETON_RETURN_IF_ERROR(reader.ReadParts(request, &parts));
  MAGNETON_ASSIGN_OR_RETURN(magneton::Fingerprint fp, FingerprintFromParts(parsed, request, parts, options));
  return EncodeFingerprint(fp);
}

namespace {

// The fingerprint of `buffer` with the invariant part of `kept` (an encoded
// fingerprint of the same elements read in another order).
StatusOr<std::string> EncodeWithKnownInvariant(const TensorBuffer& buffer, const std::string& kept) {
  MAGNETON_ASSIGN_OR_RETURN(const magneton::Fingerprint known, DecodeFingerprint(kFingerprintKind, kept));
  MAGNETON_ASSIGN_OR_RETURN(magneton::Fingerprint fp,
                            ComputeFingerprintWithInvariant(buffer, known.invariant, ValueFingerprintOptions()));
  return EncodeFingerprint(fp);
}

}  // namespace

std::optional<RecorderSpan> FingerprintCache::FingerprintValue(int64_t tensor_id, const TensorView& t,
                                                                int64_t viewed_id) {
  const uint64_t layout_hash = ValueLayoutHash(t);
  // Reuse needs a version counter that moves on every write: inference-mode
  // tensors have none, so their values may have changed under the same id.
  const bool cacheable = t.version_tracked;
  const bool reusable = viewed_id != kNoId && cacheable;
  const std::vector<int64_t> elements = cacheable && t.host_data ? ElementSet(t) : std::vector<int64_t>{};
  // A kept fingerprint of the same elements in another order, whose
  // invariant part this view takes.
  std::shared_ptr<const std::string> same_elements;
  if (reusable) {
    std::shared_ptr<const std::string> cached;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (const ViewFingerprint* v = FindLocked(viewed_id, t.storage_offset, layout_hash)) {
        cached = v->encoded;
        ++fingerprints_reused_;
        // The view's own views (view(...).t()) find it under its id too.
        CacheLocked(tensor_id, t.storage_offset, layout_hash, elements, cached);
      } else if (!elements.empty()) {
        if (const ViewFingerprint* v = FindSameElementsLocked(viewed_id, t.storage_offset, elements)) {
          same_elements = v->encoded;
        }
      }
    }
    if (cached) {
      writer_->AppendFingerprint(tensor_id, std::string(kFingerprintKind), *cached);
      return std::nullopt;
    }
  }
  // Computed here, on the thread that owns the value, while it is alive;
  // only the fingerprint travels, never the values.
  auto dtype = ParseDType(t.dtype);
  if (!dtype.ok()) return std::nullopt;  // complex, fp8, ...: no fingerprint, no match
  TensorBuffer buffer;
  buffer.data = t.host_data;
  buffer.dtype = *dtype;
  buffer.shape.assign(t.sizes, t.sizes + t.ndim);
  if (t.strides) buffer.strides.assign(t.strides, t.strides + t.ndim);
  // On a device, the span also covers waiting for the work that produces the
  // value (the reader synchronises with it): the recorder's time either way.
  const int64_t start_ns = MonotonicNowNs();
  StatusOr<std::string> fp = Unavailable("not computed");
  if (same_elements) {
    fp = EncodeWithKnownInvariant(buffer, *same_elements);
    if (fp.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++invariants_reused_;
    }
  }
  if (!fp.ok()) {
    fp = t.host_data ? EncodeValueFingerprint(buffer)
                     : EncodeDeviceValueFingerprint(*t.device_values, t.dtype, buffer.shape);
  }
  const int64_t end_ns = MonotonicNowNs();
  const RecorderSpan span{start_ns, end_ns};
  if (!t.host_data) NoteDeviceFingerprint(fp.status());
  if (!fp.ok()) return span;
  auto encoded = std::make_shared<const std::string>(std::move(fp).value());
  writer_->AppendFingerprint(tensor_id, std::string(kFingerprintKind), *encoded);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(mu_);
    CacheLocked(tensor_id, t.storage_offset, layout_hash, elements, encoded);
    if (reusable) CacheLocked(viewed_id, t.storage_offset, layout_hash, elements, encoded);
  }
  return span;
}

template <typename Match>
FingerprintCache::ViewFingerprint* FingerprintCache::FindIfLocked(int64_t id, Match&& match) {
  auto it = fingerprints_.find(id);
  if (it == fingerprints_.end()) return nullptr;
  for (ViewFingerprint& v : it->second) {
    if (match(v)) return &v;
  }
  return nullptr;
}

const FingerprintCache::ViewFingerprint* FingerprintCache::FindSameElementsLocked(
    int64_t id, int64_t storage_offset, const std::vector<int64_t>& elements) {
  return FindIfLocked(id, [&](const ViewFingerprint& v) {
    return v.storage_offset == storage_offset && v.elements == elements;
  });
}

FingerprintCache::ViewFingerprint* FingerprintCache::FindLocked(int64_t id, int64_t storage_offset,
                                                                uint64_t layout_hash) {
  return FindIfLocked(id, [&](const ViewFingerprint& v) {
    return v.storage_offset == storage_offset && v.layout_hash == layout_hash;
  });
}

void FingerprintCache::CacheLocked(int64_t value_id, int64_t storage_offset, uint64_t layout_hash,
                                   const std::vector<int64_t>& elements,
                                   const std::shared_ptr<const std::string>& encoded) {
  // Entries go with their value (Drop), so the cache holds the live values'
  // fingerprints; this bound is for a program that keeps very many values
  // alive, or one value viewed in ever new layouts. Clearing costs only
  // recomputation, never a wrong fingerprint.
  constexpr size_t kMaxCachedBytes = 32u << 20;
  if (bytes_cached_ + encoded->size() > kMaxCachedBytes) {
    fingerprints_.clear();
    bytes_cached_ = 0;
  }
  if (ViewFingerprint* v = FindLocked(value_id, storage_offset, layout_hash)) {
    bytes_cached_ -= v->encoded->size();
    v->encoded = encoded;
  } else {
    fingerprints_[value_id].push_back({storage_offset, layout_hash, elements, encoded});
  }
  bytes_cached_ += encoded->size();
}

void FingerprintCache::DropLocked(int64_t id) {
  if (auto f = fingerprints_.find(id); f != fingerprints_.end()) {
    for (const ViewFingerprint& v : f->second) bytes_cached_ -= v.encoded->size();
    fingerprints_.erase(f);
  }
}

void FingerprintCache::Drop(int64_t value_id) {
  std::lock_guard<std::mutex> lock(mu_);
  DropLocked(value_id);
}

void FingerprintCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  fingerprints_.clear();
  bytes_cached_ = 0;
}

void FingerprintCache::NoteDeviceFingerprint(const Status& status) {
  if (status.ok()) {
    device_fingerprints_.fetch_add(1, std::memory_order_relaxed);
  } else if (status.code() == StatusCode::kUnavailable) {
    device_fingerprints_skipped_.fetch_add(1, std::memory_order_relaxed);
  } else {
    device_fingerprint_errors_.fetch_add(1, std::memory_order_relaxed);
    // The first failure says why; the count says how often.
    if (!device_error_noted_.exchange(true)) writer_->SetMeta("recorder.device_fingerprint_error", status.message());
  }
}

void FingerprintCache::WriteStopMeta() {
  writer_->SetMeta("recorder.device_fingerprints", std::to_string(device_fingerprints_.load()));
  writer_->SetMeta("recorder.device_fingerprints_skipped", std::to_string(device_fingerprints_skipped_.load()));
  writer_->SetMeta("recorder.device_fingerprint_errors", std::to_string(device_fingerprint_errors_.load()));
  std::lock_guard<std::mutex> lock(mu_);
  writer_->SetMeta("recorder.fingerprints_reused", std::to_string(fingerprints_reused_));
  writer_->SetMeta("recorder.fingerprint_invariants_reused", std::to_string(invariants_reused_));
}

int64_t FingerprintCache::fingerprints_reused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fingerprints_reused_;
}

int64_t FingerprintCache::invariants_reused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return invariants_reused_;
}

size_t FingerprintCache::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_cached_;
}

}  // namespace magneton::record
