#include <algorithm>
#include <cmath>
#include <functional>

#include "magneton/match.h"

namespace magneton {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

// Equivalent() bounds |d mean| and |d std| by epsilon * rms, so log(rms) and
// mean/rms move by at most ~2 epsilon between equivalent tensors: cells 4
// epsilon wide plus the neighbouring cells always contain the partner.
TensorIndex::TensorIndex(double epsilon) : epsilon_(epsilon), cell_width_(std::max(4.0 * epsilon, 1e-9)) {}

void TensorIndex::Cells(const Fingerprint& fp, int64_t* log_cell, int64_t* mean_cell) const {
  const double rms = fp.invariant.rms();
  if (!(rms > 0) || !std::isfinite(rms)) {
    *log_cell = INT64_MIN / 2;  // all zeros / no finite values: one cell
    *mean_cell = 0;
    return;
  }
  *log_cell = static_cast<int64_t>(std::floor(std::log(rms) / cell_width_));
  *mean_cell = static_cast<int64_t>(std::floor(fp.invariant.mean / rms / cell_width_));
}

uint64_t TensorIndex::BucketKey(const Fingerprint& fp, int64_t log_cell, int64_t mean_cell) const {
  const LayoutInvariantPart& p = fp.invariant;
  uint64_t h = std::hash<int64_t>{}(p.element_count);
  h = Mix(h, static_cast<uint64_t>(fp.dtype_class));
  h = Mix(h, static_cast<uint64_t>(p.nan_count));
  h = Mix(h, static_cast<uint64_t>(p.pos_inf_count) * 31 + static_cast<uint64_t>(p.neg_inf_count));
  h = Mix(h, static_cast<uint64_t>(log_cell));
  h = Mix(h, static_cast<uint64_t>(mean_cell));
  return h;
}

void TensorIndex::Add(const Fingerprint* fp, int64_t payload) {
  int64_t lc, mc;
  Cells(*fp, &lc, &mc);
  buckets_[BucketKey(*fp, lc, mc)].push_back({fp, payload});
}

void TensorIndex::Find(const Fingerprint& fp, size_t limit, std::vector<int64_t>* out) const {
  out->clear();
  int64_t lc, mc;
  Cells(fp, &lc, &mc);
  std::vector<std::pair<int64_t, int64_t>> found;  // (payload order key, payload)
  for (int64_t dl = -1; dl <= 1; ++dl) {
    for (int64_t dm = -1; dm <= 1; ++dm) {
      if (lc == INT64_MIN / 2 && (dl != 0 || dm != 0)) continue;
      auto it = buckets_.find(BucketKey(fp, lc + dl, mc + dm));
      if (it == buckets_.end()) continue;
      for (const Entry& e : it->second) {
        if (found.size() >= limit) break;
        ++comparisons_;
        if (Equivalent(fp, *e.fp, epsilon_)) found.emplace_back(e.payload, e.payload);
      }
    }
  }
  std::sort(found.begin(), found.end());
  for (const auto& f : found) out->push_back(f.second);
}

std::vector<TensorPair> FindEquivalentTensors(const FingerprintMap& a, const FingerprintMap& b, double epsilon,
                                              size_t max_per_tensor) {
  TensorIndex index(epsilon);
  for (const auto& [id, fp] : b) index.Add(&fp, id);
  std::vector<int64_t> ids_a;
  for (const auto& [id, fp] : a) ids_a.push_back(id);
  std::sort(ids_a.begin(), ids_a.end());
  std::vector<TensorPair> out;
  std::vector<int64_t> hits;
  for (int64_t id : ids_a) {
    index.Find(a.at(id), max_per_tensor, &hits);
    for (int64_t h : hits) out.push_back({id, h});
  }
  return out;
}

}  // namespace magneton
