// TensorIndex: tolerant hashing of fingerprints. Each statistic x gets cells
// of width 4d, where d bounds how far x can move between two fingerprints
// that Equivalent() accepts; a query probes the cells [x-d, x+d] overlaps,
// so the partner is always found while unrelated tensors rarely share a cell.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "base/hash_mix.h"
#include "match/match.h"

namespace magneton {
namespace {

constexpr int64_t kWildcard = INT64_MIN / 2;  // statistic not keyed (not comparable)
// Cell width in units of how far a partner can move: a query's interval
// [x-d, x+d] overlaps 1 or 2 cells per statistic. Narrower cells hold fewer
// unrelated entries but need more probes (hash lookups, each a cache miss);
// with the moment pre-filter making a rejected entry cheap, the 1 M-op
// match_bench was fastest at 4 (3.4 s CPU; 2: 4.4 s; 3: 3.6 s).
constexpr double kCellWidth = 4;

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
void Coords(const StoredFingerprint& fp, double eps, const Band& band, std::array<Coord, TensorIndex::kDims>* c) {
  const InvariantMoments& p = fp.invariant;
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

bool Degenerate(const StoredFingerprint& fp) {
  const double rms = fp.invariant.rms();
  return !(rms > 0) || !std::isfinite(rms) || fp.invariant.finite_count() == 0;
}

double Amp(const StoredFingerprint& fp) {
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

uint64_t TensorIndex::BucketKey(const StoredFingerprint& fp, const Cell& cell) const {
  const InvariantMoments& p = fp.invariant;
  uint64_t h = std::hash<int64_t>{}(p.element_count);
  h = Mix(h, static_cast<uint64_t>(fp.dtype_class));
  h = Mix(h, static_cast<uint64_t>(p.nan_count));
  h = Mix(h, static_cast<uint64_t>(p.pos_inf_count) * 31 + static_cast<uint64_t>(p.neg_inf_count));
  for (int64_t c : cell) h = Mix(h, static_cast<uint64_t>(c));
  return h;
}

void TensorIndex::Add(const StoredFingerprint* fp, int64_t payload) {
  Cell cell;
  cell.fill(kWildcard);
  if (!Degenerate(*fp)) {
    std::array<Coord, kDims> c;
    const Band band = BandOf(BandId(Amp(*fp), epsilon_));
    Coords(*fp, epsilon_, band, &c);
    cell[0] = band.id;
    for (int k = 0; k < kDims; ++k) cell[k + 1] = c[k].keyed ? CellOf(c[k].x, kCellWidth * c[k].move) : kWildcard;
  }
  buckets_[BucketKey(*fp, cell)].push_back(
      {fp, payload, SummarizeMoments(fp->invariant), fp->invariant.finite_count() > 0});
}

bool TensorIndex::Matches(const StoredFingerprint& fp, const MomentSummary& moments, const Entry& e) const {
  ++comparisons_;
  // CheckMoments and CheckExtremes are the first things Equivalent() decides
  // on, by the same code; they do not apply where Equivalent() decides before
  // them (no finite values, both all zeros), and there the full comparison runs.
  const bool moments_apply =
      e.has_finite && fp.invariant.finite_count() > 0 && std::max(moments.rms, e.moments.rms) > 0;
  if (moments_apply && (CheckMoments(moments, e.moments, epsilon_) != MomentCheck::kAgree ||
                        CheckExtremes(moments, e.moments, epsilon_) != ExtremeCheck::kAgree)) {
    return false;
  }
  return Equivalent(fp, *e.fp, epsilon_);
}

std::vector<TensorIndex::Cell> TensorIndex::Probes(const StoredFingerprint& fp) const {
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
        const double w = kCellWidth * c[k].move;
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

void TensorIndex::Find(const StoredFingerprint& fp, size_t limit, std::vector<int64_t>* out) const {
  out->clear();
  std::vector<int64_t> found;
  const MomentSummary moments = SummarizeMoments(fp.invariant);
  for (const Cell& cell : Probes(fp)) {
    auto it = buckets_.find(BucketKey(fp, cell));
    if (it == buckets_.end()) continue;
    for (const Entry& e : it->second) {
      if (found.size() >= limit) break;
      if (Matches(fp, moments, e)) found.push_back(e.payload);
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  *out = std::move(found);
}

bool TensorIndex::FindNear(const StoredFingerprint& fp, size_t limit, int64_t near, std::vector<int64_t>* out,
                           size_t max_scan) const {
  out->clear();
  // One walk outward from `near` over all probed buckets together (payloads
  // ascend within a bucket: the caller adds them in order), nearest entry
  // first, until `limit` are equivalent. Walking each bucket on its own until
  // it gave `limit` read all of a crowded bucket that held few equivalents
  // (a long run's other tensors with like statistics): quadratic over a run.
  struct Cursor {
    const std::vector<Entry>* entries;
    ptrdiff_t lo, hi;  // next entry below / at-or-above near
  };
  std::vector<Cursor> cursors;
  for (const Cell& cell : Probes(fp)) {
    auto it = buckets_.find(BucketKey(fp, cell));
    if (it == buckets_.end()) continue;
    const std::vector<Entry>* entries = &it->second;
    // Two cells may hash to one bucket: walk it once.
    if (std::any_of(cursors.begin(), cursors.end(), [&](const Cursor& c) { return c.entries == entries; })) continue;
    const ptrdiff_t hi = std::lower_bound(entries->begin(), entries->end(), near,
                                          [](const Entry& e, int64_t p) { return e.payload < p; }) -
                         entries->begin();
    cursors.push_back({entries, hi - 1, hi});
  }
  const MomentSummary moments = SummarizeMoments(fp.invariant);
  std::vector<int64_t> found;
  size_t total = 0;
  for (const Cursor& c : cursors) total += c.entries->size();
  if (total <= max_scan) {
    // Every entry fits the budget: read them in memory order and keep the
    // `limit` nearest equivalents, as the walk would (ties: lower payload).
    for (const Cursor& c : cursors) {
      for (const Entry& e : *c.entries) {
        if (Matches(fp, moments, e)) found.push_back(e.payload);
      }
    }
    if (found.size() > limit) {
      auto nearer = [near](int64_t x, int64_t y) {
        const int64_t dx = std::llabs(x - near), dy = std::llabs(y - near);
        return dx != dy ? dx < dy : x < y;
      };
      std::nth_element(found.begin(), found.begin() + static_cast<ptrdiff_t>(limit), found.end(), nearer);
      found.resize(limit);
    }
    std::sort(found.begin(), found.end());
    *out = std::move(found);
    return true;
  }
  size_t scanned = 0;
  bool complete = true;
  while (found.size() < limit) {
    // The nearest unread entry over all cursors (ties: the lower payload).
    const Entry* next = nullptr;
    ptrdiff_t* advance = nullptr;
    ptrdiff_t step = 0;
    int64_t best = INT64_MAX;
    for (Cursor& c : cursors) {
      const ptrdiff_t n = static_cast<ptrdiff_t>(c.entries->size());
      if (c.lo >= 0) {
        const Entry& e = (*c.entries)[c.lo];
        if (near - e.payload < best || (near - e.payload == best && next && e.payload < next->payload)) {
          best = near - e.payload, next = &e, advance = &c.lo, step = -1;
        }
      }
      if (c.hi < n) {
        const Entry& e = (*c.entries)[c.hi];
        if (e.payload - near < best || (e.payload - near == best && next && e.payload < next->payload)) {
          best = e.payload - near, next = &e, advance = &c.hi, step = 1;
        }
      }
    }
    if (!next) break;
    if (scanned++ == max_scan) {
      complete = false;
      break;
    }
    *advance += step;
    if (Matches(fp, moments, *next)) found.push_back(next->payload);
  }
  std::sort(found.begin(), found.end());
  *out = std::move(found);
  return complete;
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
