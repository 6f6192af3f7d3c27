// Fingerprints by tensor id, as an analysis holds them: each value's
// layout-invariant part decoded (what the index keys and most comparisons
// read), its strong part still encoded (strong_codec.h) in an arena shared by
// the map's copies, decoded only for a comparison that gets that far (about
// one in twenty on a long run). A decoded Fingerprint took ~920 bytes, its
// strong part in a dozen small vectors; an entry here takes ~250 (the quantiles
// as grid steps) plus the strong part's ~130 encoded bytes (docs/PERFORMANCE.md, "At scale").
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fingerprint/fingerprint.h"
#include "magneton/status.h"

namespace magneton {

// The 32 quantiles of a stored fingerprint as whole steps of their grid
// (value_grid.h), an int32 each, which is what a recorder wrote: 128 bytes
// instead of 256 (a third of an entry). A fingerprint whose quantiles are off
// their grid or beyond int32 steps (older traces, extreme outliers) keeps
// them as doubles in the map's arena. Either way q[i] is the very double.
class StoredQuantiles {
 public:
  double operator[](int i) const {
    if (doubles_ != nullptr) {
      double v;
      std::memcpy(&v, doubles_ + sizeof(double) * static_cast<size_t>(i), sizeof v);  // the arena is unaligned
      return v;
    }
    return static_cast<double>(steps_[i]) * step_;  // exact: SetOnGrid checked every value comes back so
  }
  // Keeps the values as steps of the quantile grid for values of this scale
  // (QuantileScale) when every one comes back bit for bit; else false.
  bool SetOnGrid(const std::array<double, kFingerprintQuantiles>& values, double scale);
  void SetDoubles(const char* arena_bytes) { doubles_ = arena_bytes; }
  bool on_grid() const { return doubles_ == nullptr; }

 private:
  std::array<int32_t, kFingerprintQuantiles> steps_{};
  double step_ = 0;  // the grid's step, a power of two
  const char* doubles_ = nullptr;  // kFingerprintQuantiles doubles in the arena, or null
};

struct StoredFingerprint {
  DTypeClass dtype_class = DTypeClass::kFloating;
  bool has_strong = false;
  uint32_t strong_size = 0;
  const char* strong_data = nullptr;  // in the map's arena
  InvariantMoments invariant;
  StoredQuantiles quantiles;

  std::string_view strong_bytes() const { return {strong_data, strong_size}; }
  // The whole fingerprint, its strong part decoded.
  Fingerprint Full() const;
};

// The comparisons of fingerprint.h, on stored fingerprints: the same checks
// in the same order, the strong parts decoded (into per-thread scratch) only
// when the invariant parts agree.
bool Equivalent(const StoredFingerprint& a, const StoredFingerprint& b, double epsilon);
EquivalenceVerdict CompareFingerprints(const StoredFingerprint& a, const StoredFingerprint& b, double epsilon);
// Both have a strong part and its dims are the same (StrongPart::dims ==).
bool SameStrongDims(const StoredFingerprint& a, const StoredFingerprint& b);

// Entries stay where they are while the map lives (an index may point at
// them); `for (const auto& [id, fp] : map)` visits them in insertion order.
class FingerprintMap {
 public:
  struct value_type {
    int64_t first;  // tensor id
    StoredFingerprint second;
  };
  using const_iterator = std::deque<value_type>::const_iterator;

  FingerprintMap() = default;
  FingerprintMap(std::initializer_list<std::pair<int64_t, Fingerprint>> entries);

  // Adds the fingerprint of tensor `id`, replacing one it had.
  void insert_or_assign(int64_t id, const Fingerprint& fp);
  // map[id] = fp: the same, written as for a std::unordered_map.
  class Slot {
   public:
    // Gives back fp, so that a[i] = b[i] = fp stores fp in both.
    const Fingerprint& operator=(const Fingerprint& fp) const {
      map_->insert_or_assign(id_, fp);
      return fp;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    friend class FingerprintMap;
    Slot(FingerprintMap* map, int64_t id) : map_(map), id_(id) {}
    FingerprintMap* map_;
    int64_t id_;
  };
  Slot operator[](int64_t id) { return Slot(this, id); }

  const_iterator find(int64_t id) const;
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t count(int64_t id) const { return find(id) == end() ? 0 : 1; }
  bool contains(int64_t id) const { return count(id) != 0; }
  // Requires the id (as std::unordered_map::at, without the exception: a
  // missing id is a caller's bug).
  const StoredFingerprint& at(int64_t id) const { return find(id)->second; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  // Keeps the entries for which keep(id) holds (a step window cut the trace).
  template <typename Keep>
  void KeepIf(Keep keep) {
    std::deque<value_type> kept;
    for (value_type& e : entries_) {
      if (keep(e.first)) kept.push_back(e);
    }
    entries_ = std::move(kept);
    Reindex();
  }

 private:
  // Appends bytes that live as long as any copy of the map.
  struct Arena {
    std::vector<std::unique_ptr<char[]>> blocks;
    size_t used = 0;  // in the last block
    size_t block_size = 0;
    const char* Add(std::string_view bytes);
  };
  static constexpr size_t kNoSlot = ~size_t{0};
  size_t SlotOf(int64_t id) const;
  void SetSlot(int64_t id, size_t slot);
  void Reindex();

  std::deque<value_type> entries_;
  // id -> entry: dense for the ids a trace gives (0 .. tensors - 1), a hash
  // map for any other.
  std::vector<uint32_t> dense_;
  std::unordered_map<int64_t, size_t> sparse_;
  std::shared_ptr<Arena> arena_ = std::make_shared<Arena>();
};

// Reads the fingerprints table of a .mtrace file (opened read-only). An empty
// map means the run was recorded without values.
StatusOr<FingerprintMap> LoadFingerprints(const std::string& trace_path);
// Inserts or replaces rows of the fingerprints table (for recorders and tests).
Status WriteFingerprints(const std::string& trace_path, const FingerprintMap& fingerprints);

}  // namespace magneton
