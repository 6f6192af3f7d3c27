// --values fingerprints and their per-view cache (fingerprint_cache.h).
#include "record/fingerprint_cache.h"

#include <cstring>

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

FingerprintCache::FingerprintCache(TraceWriter* writer, std::atomic<int64_t>* next_op_id)
    : writer_(writer), worker_(writer, next_op_id, &FingerprintCache::RunJob, this) {}

void FingerprintCache::RunJob(const FingerprintWorker::Job& job, TraceWriter* writer, void* context) {
  auto* cache = static_cast<FingerprintCache*>(context);
  KeptFingerprint& kept = *job.result;
  if (!job.data) {
    // An alias: its value's job ran before it (queued first).
    if (kept.Ready()) writer->AppendFingerprint(job.tensor_id, std::string(kFingerprintKind), kept.encoded);
    return;
  }
  TensorBuffer buffer;
  buffer.data = job.data;
  buffer.dtype = job.dtype;
  buffer.shape.assign(job.shape.begin(), job.shape.end());
  buffer.strides.assign(job.strides.begin(), job.strides.end());
  StatusOr<std::string> fp = cache->EncodeHostValue(buffer, job.known.get());
  if (fp.ok()) {
    kept.encoded = std::move(fp).value();
    kept.ok = true;
    writer->AppendFingerprint(job.tensor_id, std::string(kFingerprintKind), kept.encoded);
  }
  cache->computed_off_thread_.fetch_add(1, std::memory_order_relaxed);
  kept.done.store(true, std::memory_order_release);
}

StatusOr<std::string> FingerprintCache::EncodeHostValue(const TensorBuffer& buffer, const KeptFingerprint* known) {
  if (known && known->Ready()) {
    StatusOr<std::string> fp = EncodeWithKnownInvariant(buffer, known->encoded);
    if (fp.ok()) {
      invariants_reused_.fetch_add(1, std::memory_order_relaxed);
      return fp;
    }
  }
  return EncodeValueFingerprint(buffer);
}

void FingerprintCache::WriteInOrder(int64_t tensor_id, std::shared_ptr<KeptFingerprint> kept) {
  FingerprintWorker::Job alias;
  alias.tensor_id = tensor_id;
  alias.result = std::move(kept);
  worker_.WriteInOrder(std::move(alias));
}

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
  std::shared_ptr<const KeptFingerprint> same_elements;
  if (reusable) {
    std::shared_ptr<KeptFingerprint> cached;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ViewFingerprint* v = FindLocked(viewed_id, t.storage_offset, layout_hash);
      // One that could not be computed is not taken: this view computes its own.
      if (v && v->kept->Failed()) v = nullptr;
      if (v) {
        cached = v->kept;
        ++fingerprints_reused_;
        // The view's own views (view(...).t()) find it under its id too.
        CacheLocked(tensor_id, t.storage_offset, layout_hash, elements, cached);
      } else if (!elements.empty()) {
        if (const ViewFingerprint* same = FindSameElementsLocked(viewed_id, t.storage_offset, elements)) {
          same_elements = same->kept;
        }
      }
    }
    if (cached) {
      // Written once computed (it may still be queued).
      WriteInOrder(tensor_id, std::move(cached));
      return std::nullopt;
    }
  }
  auto dtype = ParseDType(t.dtype);
  if (!dtype.ok()) return std::nullopt;  // complex, fp8, ...: no fingerprint, no match
  auto kept = std::make_shared<KeptFingerprint>();
  // On a device, the span also covers waiting for the work that produces the
  // value (the reader synchronises with it): the recorder's time either way.
  const int64_t start_ns = MonotonicNowNs();
  bool queued = false;
  if (t.host_data) {
    // Host values are copied now and fingerprinted on the fingerprint thread.
    FingerprintWorker::Job job;
    job.tensor_id = tensor_id;
    job.result = kept;
    job.known = same_elements;
    job.dtype = *dtype;
    job.shape.assign(t.sizes, t.sizes + t.ndim);
    if (t.strides) job.strides.assign(t.strides, t.strides + t.ndim);
    // The same elements in another order as a value whose copy is still in
    // the ring: this view reads that copy.
    if (same_elements && worker_.PushView(std::move(job), *same_elements)) {
      queued = true;
      copies_shared_.fetch_add(1, std::memory_order_relaxed);
    } else {
      queued = worker_.PushCopy(std::move(job), t.host_data, ElementSizeBytes(*dtype));
    }
  }
  if (!queued) {
    // Computed here, while the value is alive: device values (only the
    // fingerprint travels, never the values), values too large to copy, and
    // those with no elements.
    TensorBuffer buffer;
    buffer.data = t.host_data;
    buffer.dtype = *dtype;
    buffer.shape.assign(t.sizes, t.sizes + t.ndim);
    if (t.strides) buffer.strides.assign(t.strides, t.strides + t.ndim);
    // A kept one still queued is not waited for: computed whole, the
    // fingerprint is the same bit for bit.
    StatusOr<std::string> fp = t.host_data
                                   ? EncodeHostValue(buffer, same_elements.get())
                                   : EncodeDeviceValueFingerprint(*t.device_values, t.dtype, buffer.shape);
    if (t.host_data) {
      computed_in_place_.fetch_add(1, std::memory_order_relaxed);
    } else {
      NoteDeviceFingerprint(fp.status());
    }
    if (!fp.ok()) return RecorderSpan{start_ns, MonotonicNowNs()};
    kept->encoded = std::move(fp).value();
    kept->ok = true;
    kept->done.store(true, std::memory_order_release);
    WriteInOrder(tensor_id, kept);
  }
  const RecorderSpan span{start_ns, MonotonicNowNs()};
  // Kept after the job is queued, so that a view that takes it queues its
  // alias after that job.
  if (cacheable) {
    std::lock_guard<std::mutex> lock(mu_);
    CacheLocked(tensor_id, t.storage_offset, layout_hash, elements, kept);
    if (reusable) CacheLocked(viewed_id, t.storage_offset, layout_hash, elements, kept);
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
                                   const std::shared_ptr<KeptFingerprint>& kept) {
  // Entries go with their value (Drop), so the cache holds the live values'
  // fingerprints; this bound is for a program that keeps very many values
  // alive, or one value viewed in ever new layouts. Clearing costs only
  // recomputation, never a wrong fingerprint.
  // An entry is counted when it is kept, its fingerprint maybe not computed
  // yet: at the largest an encoded one takes (~370 bytes; 150 on average).
  constexpr size_t kMaxCachedBytes = 32u << 20;
  constexpr size_t kEncodedBytesBound = 384;
  const size_t bytes = kEncodedBytesBound + elements.size() * sizeof(int64_t);
  if (bytes_cached_ + bytes > kMaxCachedBytes) {
    fingerprints_.clear();
    bytes_cached_ = 0;
  }
  if (ViewFingerprint* v = FindLocked(value_id, storage_offset, layout_hash)) {
    bytes_cached_ -= v->bytes;
    v->kept = kept;
    v->elements = elements;
    v->bytes = bytes;
  } else {
    fingerprints_[value_id].push_back({storage_offset, layout_hash, elements, kept, bytes});
  }
  bytes_cached_ += bytes;
}

void FingerprintCache::DropLocked(int64_t id) {
  if (auto f = fingerprints_.find(id); f != fingerprints_.end()) {
    for (const ViewFingerprint& v : f->second) bytes_cached_ -= v.bytes;
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
  writer_->SetMeta("recorder.fingerprint_invariants_reused", std::to_string(invariants_reused_.load()));
  writer_->SetMeta("recorder.fingerprints_off_thread", std::to_string(computed_off_thread_.load()));
  writer_->SetMeta("recorder.fingerprints_in_place", std::to_string(computed_in_place_.load()));
  writer_->SetMeta("recorder.fingerprint_copies_shared", std::to_string(copies_shared_.load()));
  if (const int idle = worker_.idle_class(); idle < 0) {
    writer_->SetMeta("recorder.fingerprint_thread_class_error", std::strerror(-idle));
  }
}

int64_t FingerprintCache::fingerprints_reused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fingerprints_reused_;
}

int64_t FingerprintCache::invariants_reused() const { return invariants_reused_.load(); }

int64_t FingerprintCache::computed_off_thread() const { return computed_off_thread_.load(); }

int64_t FingerprintCache::computed_in_place() const { return computed_in_place_.load(); }

int64_t FingerprintCache::copies_shared() const { return copies_shared_.load(); }

size_t FingerprintCache::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_cached_;
}

}  // namespace magneton::record
