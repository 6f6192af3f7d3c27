// The "mfp1" blob (decoded only; mfp2 in codec.cc replaced it): a versionless
// little-endian record (the kind string is the version). Layout, in order:
//   u8 dtype_class, u8 has_strong,
//   i64 element_count, nan_count, pos_inf_count, neg_inf_count, quantile_sample_size,
//   f64 mean, variance, skewness, kurtosis, min, max, f64 quantiles[32],
//   if has_strong: u8 rank, i64 dims[rank], i64 core_dims[rank],
//     per axis: i64 axis_size, u8 n, f64 chunk_sums[n], i64 chunk_elements[n],
//     u8 n_spectra, per spectrum: i64 rows, i64 cols, u8 k, f64 singular_values[k].
#include <cstring>

#include "fingerprint/codec_mfp1.h"

namespace magneton {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the mfp1 codec copies native little-endian values");

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<Fingerprint> DecodeMfp1(std::string_view data) {
  const Status truncated = Corrupt("fingerprint blob is truncated or malformed");
  Reader r(data);
  Fingerprint fp;
  LayoutInvariantPart& p = fp.invariant;
  uint8_t cls = 0, has_strong = 0;
  // A flag other than 0/1 is no blob the encoder writes (fuzz/corpus/fingerprint_codec/strong_flag_ff).
  if (!r.Get(&cls) || !r.Get(&has_strong) || cls > 2 || has_strong > 1) return truncated;
  fp.dtype_class = static_cast<DTypeClass>(cls);
  for (int64_t* v : {&p.element_count, &p.nan_count, &p.pos_inf_count, &p.neg_inf_count, &p.quantile_sample_size}) {
    if (!r.Get(v)) return truncated;
  }
  for (double* v : {&p.mean, &p.variance, &p.skewness, &p.kurtosis, &p.min, &p.max}) {
    if (!r.Get(v)) return truncated;
  }
  for (double& q : p.quantiles) {
    if (!r.Get(&q)) return truncated;
  }
  if (has_strong) {
    StrongPart& s = fp.strong;
    s.present = true;
    uint8_t rank = 0;
    if (!r.Get(&rank) || rank > 16) return truncated;
    s.dims.resize(rank);
    s.core_dims.resize(rank);
    for (auto& d : s.dims) {
      if (!r.Get(&d)) return truncated;
    }
    for (auto& d : s.core_dims) {
      if (!r.Get(&d)) return truncated;
    }
    s.marginals.resize(rank);
    for (AxisMarginal& m : s.marginals) {
      uint8_t n = 0;
      if (!r.Get(&m.axis_size) || !r.Get(&n)) return truncated;
      m.chunk_sums.resize(n);
      for (double& v : m.chunk_sums) {
        if (!r.Get(&v)) return truncated;
      }
      for (uint8_t k = 0; k < n; ++k) {
        int64_t c = 0;
        if (!r.Get(&c)) return truncated;
        m.chunk_elements.push_back(c);
      }
    }
    uint8_t n_spectra = 0;
    if (!r.Get(&n_spectra)) return truncated;
    s.spectra.resize(n_spectra);
    for (UnfoldingSpectrum& sp : s.spectra) {
      uint8_t k = 0;
      if (!r.Get(&sp.rows) || !r.Get(&sp.cols) || !r.Get(&k)) return truncated;
      sp.singular_values.resize(k);
      for (double& v : sp.singular_values) {
        if (!r.Get(&v)) return truncated;
      }
    }
  }
  if (!r.AtEnd()) return truncated;
  return fp;
}

}  // namespace magneton
