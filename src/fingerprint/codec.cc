// The "mfp3" blob: the fingerprint's fields in order, every bit of them
// kept (decode gives back the very doubles encoded), in as few bytes as they
// need. Values on their storage grid (value_grid.h: every quantile, chunk sum
// and singular value a fingerprint is made with) are stored as integer steps
// of the grid, the first whole and the rest as differences from the one
// before; arrays not on it (fingerprints of older traces, or values too large
// for the grid) as tagged doubles. A 64x64 float32 value's fingerprint took
// 755 bytes as mfp2 and takes about a third as mfp3 (docs/PERFORMANCE.md,
// "Trace size"). Layout (ints, doubles and runs as in codec_io.h):
//   u8 head: dtype_class (bits 0-1), has_strong (bit 2), quantiles on grid (bit 3), other bits 0;
//   int element_count, nan_count, pos_inf_count, neg_inf_count, quantile_sample_size;
//   doubles[6]: mean, variance, skewness, kurtosis, min, max;
//   values[32] quantiles (grid: QuantileScale);
//   if has_strong: u8 rank, int dims[rank], int core_dims[rank],
//     per axis: int axis_size, u8 n, runs[n] chunk_elements, u8 on_grid, values[n] chunk_sums (grid: ChunkSumScale),
//     u8 n_spectra, per spectrum: int rows, int cols, u8 k, u8 on_grid, values[k] singular_values (grid: SpectrumScale).
// values[n] on grid: int steps of the first, then packed[n-1] differences (n > 1); else doubles[n].
// An array whose values are all on its grid is always stored on it, so a
// fingerprint has one blob: the decoder refuses any other spelling
// (fuzz/fingerprint_codec_fuzzer checks decode then encode gives the same bytes).
#include <array>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "fingerprint/codec_io.h"
#include "fingerprint/codec_mfp1.h"
#include "fingerprint/codec_mfp2.h"
#include "fingerprint/fingerprint.h"
#include "fingerprint/strong_codec.h"
#include "fingerprint/value_grid.h"

namespace magneton {
namespace {

using fingerprint_codec::Reader;
using fingerprint_codec::Writer;
namespace grid = fingerprint_internal;

// Every value's steps on the array's grid, or nullopt when there is no grid
// or a value is off it (then the array is stored as doubles).
template <typename Range>
std::optional<std::vector<int64_t>> StepsOnGrid(const Range& values, double scale, int bits) {
  const std::optional<int> e = grid::GridExponent(scale, bits);
  if (!e) return std::nullopt;
  std::vector<int64_t> steps(std::size(values));
  size_t i = 0;
  for (double v : values) {
    if (!grid::GridSteps(v, *e, &steps[i++])) return std::nullopt;
  }
  return steps;
}

// Writes an array as StepsOnGrid found it: on its grid, the first value's
// steps and the bit-packed differences of the rest; else tagged doubles. The
// caller has written the grid flag already, where its layout puts it.
template <typename Range>
void WriteValues(Writer& w, const Range& values, std::optional<std::vector<int64_t>> steps) {
  if (!steps) {
    w.Doubles(values);
    return;
  }
  if (steps->empty()) return;
  w.Int(steps->front());
  // Each step count after the first becomes its difference from the one before.
  for (size_t i = steps->size(); i-- > 1;) (*steps)[i] -= (*steps)[i - 1];
  if (steps->size() > 1) w.Packed(std::span<const int64_t>(*steps).subspan(1));
}

// Reads values written by WriteValues; refuses an array stored as doubles that
// the encoder would have put on the grid.
template <typename Range>
bool ReadValues(Reader& r, Range& values, bool on_grid, double scale, int bits) {
  if (!on_grid) return r.Doubles(values) && !StepsOnGrid(values, scale, bits);
  const std::optional<int> e = grid::GridExponent(scale, bits);
  const size_t n = std::size(values);
  if (!e) return false;
  if (n == 0) return true;
  constexpr int64_t kLimit = int64_t{1} << 53;
  int64_t steps = 0;
  thread_local std::vector<int64_t> deltas;  // its capacity kept: a decode allocates nothing once warm
  if (!r.Int(&steps) || (n > 1 && !r.Packed(n - 1, &deltas))) return false;
  size_t i = 0;
  for (double& v : values) {
    if (i > 0) {
      const int64_t delta = deltas[i - 1];
      if (delta <= -2 * kLimit || delta >= 2 * kLimit) return false;
      steps += delta;
    }
    if (steps <= -kLimit || steps >= kLimit) return false;
    v = grid::FromGridSteps(steps, *e);
    ++i;
  }
  return true;
}

// Counts and dims that no tensor has (negative, more special values than
// elements, dims whose product overflows or exceeds the element count) are a
// corrupt blob: the comparison's arithmetic on them would overflow (found by
// fuzz/fingerprint_codec_fuzzer; fuzz/corpus/fingerprint_codec/counts_*).
Status CheckCounts(const Fingerprint& fp) {
  const Status bad = Corrupt("fingerprint blob has inconsistent counts or dims");
  const LayoutInvariantPart& p = fp.invariant;
  const int64_t n = p.element_count;
  if (n < 0 || p.nan_count < 0 || p.pos_inf_count < 0 || p.neg_inf_count < 0 || p.quantile_sample_size < 0) return bad;
  if (p.nan_count > n || p.pos_inf_count > n - p.nan_count || p.neg_inf_count > n - p.nan_count - p.pos_inf_count) {
    return bad;
  }
  if (!fp.strong.present) return Status::Ok();
  const StrongPart& s = fp.strong;
  int64_t full = 1, core = 1;
  for (size_t k = 0; k < s.dims.size(); ++k) {
    if (s.core_dims[k] < 0 || s.core_dims[k] > s.dims[k]) return bad;
    if (__builtin_mul_overflow(full, s.dims[k], &full) || full > n) return bad;
    core *= s.core_dims[k];  // <= full: no overflow
  }
  for (const AxisMarginal& m : s.marginals) {
    if (m.axis_size < 0) return bad;
    for (const ChunkCounts::Run& run : m.chunk_elements.runs()) {
      if (run.value < 0 || run.value > n) return bad;
    }
  }
  for (const UnfoldingSpectrum& sp : s.spectra) {
    if (sp.rows < 0 || sp.cols < 0 || sp.rows > core || sp.cols > core) return bad;
  }
  return Status::Ok();
}

// The strong part, after the invariant part in mfp3 and on its own in an
// analysis' FingerprintMap (strong_codec.h): its grids scale by the rms.
void WriteStrong(Writer& w, const StrongPart& s, double rms) {
  w.StrongDims(s);
  for (const AxisMarginal& m : s.marginals) {
    w.Int(m.axis_size);
    w.Byte(static_cast<uint8_t>(m.chunk_sums.size()));
    w.Runs(m.chunk_elements);
    auto steps = StepsOnGrid(m.chunk_sums, grid::ChunkSumScale(m, rms), grid::kChunkSumGridBits);
    w.Byte(steps ? 1 : 0);
    WriteValues(w, m.chunk_sums, std::move(steps));
  }
  w.Byte(static_cast<uint8_t>(s.spectra.size()));
  const double spectrum_scale = grid::SpectrumScale(s, rms);
  for (const UnfoldingSpectrum& sp : s.spectra) {
    w.Int(sp.rows);
    w.Int(sp.cols);
    w.Byte(static_cast<uint8_t>(sp.singular_values.size()));
    auto steps = StepsOnGrid(sp.singular_values, spectrum_scale, grid::kSpectrumGridBits);
    w.Byte(steps ? 1 : 0);
    WriteValues(w, sp.singular_values, std::move(steps));
  }
}

// Into *s, whose vectors keep their capacity (a decode per comparison
// allocates nothing once warm).
bool ReadStrong(Reader& r, double rms, StrongPart* s) {
  if (!r.StrongDims(s)) return false;
  for (AxisMarginal& m : s->marginals) {
    uint8_t n = 0, on_grid = 0;
    if (!r.Int(&m.axis_size) || !r.Byte(&n) || !r.Runs(&m.chunk_elements, n) || !r.Byte(&on_grid) || on_grid > 1) {
      return false;
    }
    m.chunk_sums.resize(n);
    if (!ReadValues(r, m.chunk_sums, on_grid, grid::ChunkSumScale(m, rms), grid::kChunkSumGridBits)) return false;
  }
  uint8_t n_spectra = 0;
  if (!r.Byte(&n_spectra)) return false;
  s->spectra.resize(n_spectra);
  const double spectrum_scale = grid::SpectrumScale(*s, rms);
  for (UnfoldingSpectrum& sp : s->spectra) {
    uint8_t k = 0, on_grid = 0;
    if (!r.Int(&sp.rows) || !r.Int(&sp.cols) || !r.Byte(&k) || !r.Byte(&on_grid) || on_grid > 1) return false;
    sp.singular_values.resize(k);
    if (!ReadValues(r, sp.singular_values, on_grid, spectrum_scale, grid::kSpectrumGridBits)) return false;
  }
  return true;
}

StatusOr<Fingerprint> DecodeMfp3(std::string_view data) {
  const Status truncated = Corrupt("fingerprint blob is truncated or malformed");
  Reader r(data);
  Fingerprint fp;
  LayoutInvariantPart& p = fp.invariant;
  uint8_t head = 0;
  if (!r.Byte(&head) || (head & 3) > 2 || (head >> 4) != 0) return truncated;
  fp.dtype_class = static_cast<DTypeClass>(head & 3);
  if (!r.Counts(&p)) return truncated;
  std::array<double, 6> moments{};
  if (!r.Doubles(moments)) return truncated;
  std::tie(p.mean, p.variance, p.skewness, p.kurtosis, p.min, p.max) =
      std::tie(moments[0], moments[1], moments[2], moments[3], moments[4], moments[5]);
  if (!ReadValues(r, p.quantiles, head & 8, grid::QuantileScale(p), grid::kQuantileGridBits)) return truncated;
  if ((head & 4) && !ReadStrong(r, p.rms(), &fp.strong)) return truncated;
  if (!r.AtEnd()) return truncated;
  return fp;
}

}  // namespace

std::string EncodeFingerprint(const Fingerprint& fp) {
  Writer w;
  const LayoutInvariantPart& p = fp.invariant;
  const double rms = p.rms();
  auto quantile_steps = StepsOnGrid(p.quantiles, grid::QuantileScale(p), grid::kQuantileGridBits);
  w.Byte(static_cast<uint8_t>(static_cast<uint8_t>(fp.dtype_class) & 3) | (fp.strong.present ? 4 : 0) |
         (quantile_steps ? 8 : 0));
  w.Counts(p);
  w.Doubles(std::array<double, 6>{p.mean, p.variance, p.skewness, p.kurtosis, p.min, p.max});
  WriteValues(w, p.quantiles, std::move(quantile_steps));
  if (fp.strong.present) WriteStrong(w, fp.strong, rms);
  return w.Take();
}

std::string EncodeStrongPart(const StrongPart& strong, double rms) {
  Writer w;
  WriteStrong(w, strong, rms);
  return w.Take();
}

bool DecodeStrongPart(std::string_view data, double rms, StrongPart* strong) {
  Reader r(data);
  return ReadStrong(r, rms, strong) && r.AtEnd();
}

bool SameStrongDims(std::string_view a, std::string_view b) {
  Reader ra(a), rb(b);
  uint8_t rank_a = 0, rank_b = 0;
  if (!ra.Byte(&rank_a) || !rb.Byte(&rank_b) || rank_a != rank_b) return false;
  for (int k = 0; k < rank_a; ++k) {
    int64_t da = 0, db = 0;
    if (!ra.Int(&da) || !rb.Int(&db) || da != db) return false;
  }
  return true;
}

StatusOr<Fingerprint> DecodeFingerprint(std::string_view kind, std::string_view data) {
  StatusOr<Fingerprint> fp = kind == kFingerprintKind       ? DecodeMfp3(data)
                             : kind == kFingerprintKindMfp2 ? DecodeMfp2(data)
                             : kind == kFingerprintKindMfp1 ? DecodeMfp1(data)
                                                            : StatusOr<Fingerprint>(InvalidArgument(
                                                                  "unknown fingerprint kind '" + std::string(kind) +
                                                                  "' (this build reads '" +
                                                                  std::string(kFingerprintKind) + "', 'mfp2' and 'mfp1')"));
  if (!fp.ok()) return fp;
  MAGNETON_RETURN_IF_ERROR(CheckCounts(*fp));
  return fp;
}

}  // namespace magneton
