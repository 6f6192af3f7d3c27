// The "mfp2" blob (decoded only; mfp3 in codec.cc replaced it): the
// fingerprint's fields in order, every bit kept, each in as few bytes as it
// needs (codec_io.h for ints, doubles and runs). Layout:
//   u8 head: dtype_class (bits 0-1), has_strong (bit 2), other bits 0;
//   int element_count, nan_count, pos_inf_count, neg_inf_count, quantile_sample_size;
//   doubles[38]: mean, variance, skewness, kurtosis, min, max, quantiles[32];
//   if has_strong: u8 rank, int dims[rank], int core_dims[rank],
//     per axis: int axis_size, u8 n, doubles[n] chunk_sums, runs[n] chunk_elements,
//     u8 n_spectra, per spectrum: int rows, int cols, u8 k, doubles[k] singular_values.
#include <array>

#include "fingerprint/codec_io.h"
#include "fingerprint/codec_mfp2.h"

namespace magneton {

using fingerprint_codec::Reader;

StatusOr<Fingerprint> DecodeMfp2(std::string_view data) {
  const Status truncated = Corrupt("fingerprint blob is truncated or malformed");
  Reader r(data);
  Fingerprint fp;
  LayoutInvariantPart& p = fp.invariant;
  uint8_t head = 0;
  if (!r.Byte(&head) || (head & 3) > 2 || (head >> 3) != 0) return truncated;
  fp.dtype_class = static_cast<DTypeClass>(head & 3);
  if (!r.Counts(&p)) return truncated;
  std::array<double, 6 + kFingerprintQuantiles> invariant{};
  if (!r.Doubles(invariant)) return truncated;
  auto fields = fingerprint_codec::InvariantDoubles(p);
  for (size_t i = 0; i < fields.size(); ++i) *fields[i] = invariant[i];
  if (head & 4) {
    StrongPart& s = fp.strong;
    if (!r.StrongDims(&s)) return truncated;
    for (AxisMarginal& m : s.marginals) {
      uint8_t n = 0;
      if (!r.Int(&m.axis_size) || !r.Byte(&n)) return truncated;
      m.chunk_sums.resize(n);
      if (!r.Doubles(m.chunk_sums) || !r.Runs(&m.chunk_elements, n)) return truncated;
    }
    uint8_t n_spectra = 0;
    if (!r.Byte(&n_spectra)) return truncated;
    s.spectra.resize(n_spectra);
    for (UnfoldingSpectrum& sp : s.spectra) {
      uint8_t k = 0;
      if (!r.Int(&sp.rows) || !r.Int(&sp.cols) || !r.Byte(&k)) return truncated;
      sp.singular_values.resize(k);
      if (!r.Doubles(sp.singular_values)) return truncated;
    }
  }
  if (!r.AtEnd()) return truncated;
  return fp;
}


}  // namespace magneton
