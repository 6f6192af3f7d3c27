// TensorIndex: tolerant hashing of fingerprints. Each statistic x gets cells
// of width 4d, where d bounds how far x can move between two fingerprints
// that Equivalent() accepts; a query probes the cells [x-d, x+d] overlaps,
// so the partner is always found while unrelated tensors rarely share a cell.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "match/match.h"

namespace magneton {
namespace {

constexpr int64_t kWildcard = INT64_MIN / 2;  // statistic not keyed (not comparable)

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

struct Coord {
  double x = 0;
  double move = 0;  // how far an equivalent partner's x can be, absolute
  bool keyed = false;
};

// Equivalent() scales the skewness/kurtosis tolerances by amp = rms/std, so
// tensors are split into bands amp in [2^b, 2^(b+1)) and each band keys the
// shape statistics with cells sized for its largest amp. Past the point where
// the tolerance swamps the statistic (mean-dominated tensors) it is not keyed.
struct Band {
  int64_t id = kWildcard;
  double amp_max = 0;
};

Band BandOf(int64_t id) { return {id, std::ldexp(1.0, static_cast<int>(id) + 1) * 1.1}; }

// Movement bounds, from CompareFingerprints (scale = the larger rms):
//  log rms:  |d rms| <= sqrt(2) eps rms      -> 1.5 eps
//  mean/rms: eps (1 + sqrt 2)                -> 2.5 eps
//  g = sign(s) log1p|s|: 3 eps amp (1+|s|)/(1+|s'|) -> 3 eps A / (1 - 3 eps A)
//  log kurtosis: 4 eps amp (1+k)/k' <= 8 eps A / (1 - 8 eps A)
void Coords(const Fingerprint& fp, double eps, const Band& band, std::array<Coord, TensorIndex::kDims>* c) {
  const LayoutInvariantPart& p = fp.invariant;
  const double rms = p.rms();
  (*c)[0] = {std::log(rms), 1.5 * eps, true};
  (*c)[1] = {p.mean / rms, 2.5 * eps, true};
  const double s = std::isfinite(p.skewness) ? p.skewness : 0.0;
  const double k = std::isfinite(p.kurtosis) ? std::max(p.kurtosis, 1.0) : 1.0;
  const double ds = 3 * eps * band.amp_max, dk = 8 * eps * band.amp_max;
  const bool keyed = band.id != kWildcard;
  (*c)[2] = {std::copysign(std::log1p(std::fabs(s)), s), ds / std::max(1 - ds, 1e-9), keyed && ds <= 0.5};
  (*c)[3] = {std::log(k), dk / std::max(1 - dk, 1e-9), keyed && dk <= 0.5};
}

bool Degenerate(const Fingerprint& fp) {
  const double rms = fp.invariant.rms();
  return !(rms > 0) || !std::isfinite(rms) || fp.invariant.finite_count() == 0;
}

double Amp(const Fingerprint& fp) {
  const double sd = std::sqrt(std::max(fp.invariant.variance, 0.0));
  return sd > 0 ? fp.invariant.rms() / sd : INFINITY;
}

// Bands worth keying: beyond amp ~ 1/(3 eps) neither statistic is keyed.
int64_t BandId(double amp, double eps) {
  if (!(amp < 1 / (3 * eps))) return kWildcard;
  return static_cast<int64_t>(std::floor(std::log2(std::max(amp, 1.0))));
}

int64_t CellOf(double x, double width) { return static_cast<int64_t>(std::floor(x / width)); }

}  // namespace

TensorIndex::TensorIndex(double epsilon) : epsilon_(std::max(epsilon, 1e-9)) {}

uint64_t TensorIndex::BucketKey(const Fingerprint& fp, const Cell& cell) const {
  const LayoutInvariantPart& p = fp.invariant;
  uint64_t h = std::hash<int64_t>{}(p.element_count);
  h = Mix(h, static_cast<uint64_t>(fp.dtype_class));
  h = Mix(h, static_cast<uint64_t>(p.nan_count));
  h = Mix(h, static_cast<uint64_t>(p.pos_inf_count) * 31 + static_cast<uint64_t>(p.neg_inf_count));
  for (int64_t c : cell) h = Mix(h, static_cast<uint64_t>(c));
  return h;
}

void TensorIndex::Add(const Fingerprint* fp, int64_t payload) {
  Cell cell;
  cell.fill(kWildcard);
  if (!Degenerate(*fp)) {
    std::array<Coord, kDims> c;
    const Band band = BandOf(BandId(Amp(*fp), epsilon_));
    Coords(*fp, epsilon_, band, &c);
    cell[0] = band.id;
    for (int k = 0; k < kDims; ++k) cell[k + 1] = c[k].keyed ? CellOf(c[k].x, 4 * c[k].move) : kWildcard;
  }
  buckets_[BucketKey(*fp, cell)].push_back({fp, payload});
}

std::vector<TensorIndex::Cell> TensorIndex::Probes(const Fingerprint& fp) const {
  // The bands a partner can be in, and per band and statistic the 1-2 cells
  // the tolerance interval overlaps.
  std::vector<Cell> probes;
  if (Degenerate(fp)) {
    Cell all;
    all.fill(kWildcard);
    probes.push_back(all);
  } else {
    // A partner's rms is within 1.5 eps rms and its std within eps rms, so
    // its amp = rms/std lies in [amp_lo, amp_hi].
    const double amp = Amp(fp);
    const double shrink = 1 - 1.1 * epsilon_ * amp;
    const double amp_lo = amp * (1 - 1.5 * epsilon_) / (1 + 1.1 * epsilon_ * amp);
    const double amp_hi = shrink > 0 ? amp * (1 + 1.5 * epsilon_) / shrink : INFINITY;
    std::vector<int64_t> bands;
    const int64_t lo = BandId(amp_lo, epsilon_), hi = BandId(amp_hi, epsilon_);
    if (lo != kWildcard) {
      for (int64_t b = lo; b <= (hi == kWildcard ? BandId(1 / (3 * epsilon_) * 0.999, epsilon_) : hi); ++b) {
        bands.push_back(b);
      }
    }
    if (hi == kWildcard) bands.push_back(kWildcard);
    for (int64_t b : bands) {
      const Band band = b == kWildcard ? Band{} : BandOf(b);
      std::array<Coord, kDims> c;
      Coords(fp, epsilon_, band, &c);
      std::array<std::pair<int64_t, int64_t>, kDims> range;
      for (int k = 0; k < kDims; ++k) {
        const double w = 4 * c[k].move;
        range[k] = c[k].keyed ? std::pair{CellOf(c[k].x - c[k].move, w), CellOf(c[k].x + c[k].move, w)}
                              : std::pair{kWildcard, kWildcard};
      }
      Cell cell;
      cell[0] = b;
      // Odometer over the (at most 2^4) cell combinations.
      for (cell[1] = range[0].first; cell[1] <= range[0].second; ++cell[1]) {
        for (cell[2] = range[1].first; cell[2] <= range[1].second; ++cell[2]) {
          for (cell[3] = range[2].first; cell[3] <= range[2].second; ++cell[3]) {
            for (cell[4] = range[3].first; cell[4] <= range[3].second; ++cell[4]) probes.push_back(cell);
          }
        }
      }
    }
  }
  return probes;
}

void TensorIndex::Find(const Fingerprint& fp, size_t limit, std::vector<int64_t>* out) const {
  out->clear();
  std::vector<int64_t> found;
  for (const Cell& cell : Probes(fp)) {
    auto it = buckets_.find(BucketKey(fp, cell));
    if (it == buckets_.end()) continue;
    for (const Entry& e : it->second) {
      if (found.size() >= limit) break;
      ++comparisons_;
      if (Equivalent(fp, *e.fp, epsilon_)) found.push_back(e.payload);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  *out = std::move(found);
}

void TensorIndex::FindNear(const Fingerprint& fp, size_t limit, int64_t near, std::vector<int64_t>* out) const {
  out->clear();
  std::vector<int64_t> found;
  for (const Cell& cell : Probes(fp)) {
    auto it = buckets_.find(BucketKey(fp, cell));
    if (it == buckets_.end()) continue;
    const std::vector<Entry>& entries = it->second;
    // Payloads ascend within a bucket (the caller adds them in order): start
    // at `near` and widen one entry at a time toward the closer side.
    auto start = std::lower_bound(entries.begin(), entries.end(), near,
                                  [](const Entry& e, int64_t p) { return e.payload < p; });
    ptrdiff_t hi = start - entries.begin(), lo = hi - 1;
    const ptrdiff_t n = static_cast<ptrdiff_t>(entries.size());
    size_t in_bucket = 0;
    while (in_bucket < limit && (lo >= 0 || hi < n)) {
      const bool take_hi = lo < 0 || (hi < n && entries[hi].payload - near <= near - entries[lo].payload);
      const Entry& e = take_hi ? entries[hi++] : entries[lo--];
      ++comparisons_;
      if (Equivalent(fp, *e.fp, epsilon_)) {
        found.push_back(e.payload);
        ++in_bucket;
      }
    }
  }
  // The `limit` nearest over all probed buckets.
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::stable_sort(found.begin(), found.end(),
                   [near](int64_t x, int64_t y) { return std::llabs(x - near) < std::llabs(y - near); });
  if (found.size() > limit) found.resize(limit);
  std::sort(found.begin(), found.end());
  *out = std::move(found);
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
