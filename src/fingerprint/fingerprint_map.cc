// FingerprintMap (fingerprint_map.h): entries in a deque, the strong parts'
// bytes in an arena, ids to entries through a dense array.
#include "fingerprint/fingerprint_map.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "fingerprint/strong_codec.h"
#include "fingerprint/value_grid.h"

namespace magneton {

bool StoredQuantiles::SetOnGrid(const std::array<double, kFingerprintQuantiles>& values, double scale) {
  namespace grid = fingerprint_internal;
  const std::optional<int> e = grid::GridExponent(scale, grid::kQuantileGridBits);
  if (!e) return false;
  const double step = grid::FromGridSteps(1, *e);
  std::array<int32_t, kFingerprintQuantiles> steps;
  for (int i = 0; i < kFingerprintQuantiles; ++i) {
    int64_t n = 0;
    if (!grid::GridSteps(values[i], *e, &n) || n < std::numeric_limits<int32_t>::min() ||
        n > std::numeric_limits<int32_t>::max()) {
      return false;
    }
    // Bit for bit, as operator[] computes it (GridSteps takes -0.0 for 0
    // steps, which come back as +0.0).
    if (std::bit_cast<uint64_t>(static_cast<double>(n) * step) != std::bit_cast<uint64_t>(values[i])) return false;
    steps[i] = static_cast<int32_t>(n);
  }
  steps_ = steps;
  step_ = step;
  doubles_ = nullptr;
  return true;
}

Fingerprint StoredFingerprint::Full() const {
  Fingerprint fp;
  fp.dtype_class = dtype_class;
  static_cast<InvariantMoments&>(fp.invariant) = invariant;
  for (int i = 0; i < kFingerprintQuantiles; ++i) fp.invariant.quantiles[i] = quantiles[i];
  // Encoded by insert_or_assign from a strong part it decoded: decodes again.
  if (has_strong) DecodeStrongPart(strong_bytes(), invariant.rms(), &fp.strong);
  return fp;
}

bool SameStrongDims(const StoredFingerprint& a, const StoredFingerprint& b) {
  return a.has_strong && b.has_strong && SameStrongDims(a.strong_bytes(), b.strong_bytes());
}

const char* FingerprintMap::Arena::Add(std::string_view bytes) {
  if (bytes.empty()) return nullptr;
  if (blocks.empty() || used + bytes.size() > block_size) {
    // Blocks grow to 1 MiB: a map of a few values stays small.
    block_size = std::max(bytes.size(), std::min<size_t>(size_t{1} << 20, std::max<size_t>(4096, 2 * block_size)));
    blocks.push_back(std::make_unique<char[]>(block_size));
    used = 0;
  }
  char* at = blocks.back().get() + used;
  std::memcpy(at, bytes.data(), bytes.size());
  used += bytes.size();
  return at;
}

FingerprintMap::FingerprintMap(std::initializer_list<std::pair<int64_t, Fingerprint>> entries) {
  for (const auto& [id, fp] : entries) insert_or_assign(id, fp);
}

void FingerprintMap::insert_or_assign(int64_t id, const Fingerprint& fp) {
  StoredFingerprint stored;
  stored.dtype_class = fp.dtype_class;
  stored.invariant = fp.invariant;
  stored.has_strong = fp.strong.present;
  if (!arena_) arena_ = std::make_shared<Arena>();  // a map moved from and used again
  if (!stored.quantiles.SetOnGrid(fp.invariant.quantiles, fingerprint_internal::QuantileScale(fp.invariant))) {
    stored.quantiles.SetDoubles(arena_->Add(std::string_view(reinterpret_cast<const char*>(fp.invariant.quantiles.data()),
                                                             sizeof fp.invariant.quantiles)));
  }
  if (fp.strong.present) {
    const std::string bytes = EncodeStrongPart(fp.strong, fp.invariant.rms());
    stored.strong_size = static_cast<uint32_t>(bytes.size());
    stored.strong_data = arena_->Add(bytes);
  }
  const size_t slot = SlotOf(id);
  if (slot != kNoSlot) {
    entries_[slot].second = stored;
    return;
  }
  entries_.push_back({id, stored});
  SetSlot(id, entries_.size() - 1);
}

FingerprintMap::const_iterator FingerprintMap::find(int64_t id) const {
  const size_t slot = SlotOf(id);
  return slot == kNoSlot ? entries_.end() : entries_.begin() + static_cast<std::ptrdiff_t>(slot);
}

size_t FingerprintMap::SlotOf(int64_t id) const {
  if (id >= 0 && static_cast<uint64_t>(id) < dense_.size()) {
    const uint32_t s = dense_[static_cast<size_t>(id)];
    if (s != std::numeric_limits<uint32_t>::max()) return s;
    // Not set densely: it may have been set before the dense array reached it.
    if (sparse_.empty()) return kNoSlot;
  }
  auto it = sparse_.find(id);
  return it == sparse_.end() ? kNoSlot : it->second;
}

void FingerprintMap::SetSlot(int64_t id, size_t slot) {
  // Dense up to 16 ids an entry (a trace's tensor ids are 0 .. n-1, a third
  // or more of them with values): at most 64 bytes an entry of ~370, and a
  // forged id costs no memory. An id beyond goes to the hash map.
  const size_t dense_limit = 16 * entries_.size() + 4096;
  if (id >= 0 && static_cast<uint64_t>(id) < dense_limit && slot < std::numeric_limits<uint32_t>::max()) {
    if (static_cast<size_t>(id) >= dense_.size()) {
      dense_.resize(std::max(static_cast<size_t>(id) + 1, std::min(dense_limit, 2 * dense_.size())),
                    std::numeric_limits<uint32_t>::max());
    }
    dense_[static_cast<size_t>(id)] = static_cast<uint32_t>(slot);
    return;
  }
  sparse_[id] = slot;
}

void FingerprintMap::Reindex() {
  dense_.clear();
  sparse_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) SetSlot(entries_[i].first, i);
}

}  // namespace magneton
