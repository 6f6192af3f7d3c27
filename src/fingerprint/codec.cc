// The "mfp1" blob: a versionless little-endian record (the kind string is the
// version). Layout, in order:
//   u8 dtype_class, u8 has_strong,
//   i64 element_count, nan_count, pos_inf_count, neg_inf_count, quantile_sample_size,
//   f64 mean, variance, skewness, kurtosis, min, max, f64 quantiles[32],
//   if has_strong: u8 rank, i64 dims[rank], i64 core_dims[rank],
//     per axis: i64 axis_size, u8 n, f64 chunk_sums[n], i64 chunk_elements[n],
//     u8 n_spectra, per spectrum: i64 rows, i64 cols, u8 k, f64 singular_values[k].
#include <cstring>

#include "fingerprint/fingerprint.h"

namespace magneton {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the mfp1 codec copies native little-endian values");

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

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
    for (int64_t c : m.chunk_elements) {
      if (c < 0 || c > n) return bad;
    }
  }
  for (const UnfoldingSpectrum& sp : s.spectra) {
    if (sp.rows < 0 || sp.cols < 0 || sp.rows > core || sp.cols > core) return bad;
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeFingerprint(const Fingerprint& fp) {
  Writer w;
  const LayoutInvariantPart& p = fp.invariant;
  w.Put<uint8_t>(static_cast<uint8_t>(fp.dtype_class));
  w.Put<uint8_t>(fp.strong.present ? 1 : 0);
  for (int64_t v : {p.element_count, p.nan_count, p.pos_inf_count, p.neg_inf_count, p.quantile_sample_size}) {
    w.Put<int64_t>(v);
  }
  for (double v : {p.mean, p.variance, p.skewness, p.kurtosis, p.min, p.max}) w.Put<double>(v);
  for (double q : p.quantiles) w.Put<double>(q);
  if (fp.strong.present) {
    const StrongPart& s = fp.strong;
    w.Put<uint8_t>(static_cast<uint8_t>(s.dims.size()));
    for (int64_t d : s.dims) w.Put<int64_t>(d);
    for (int64_t d : s.core_dims) w.Put<int64_t>(d);
    for (const AxisMarginal& m : s.marginals) {
      w.Put<int64_t>(m.axis_size);
      w.Put<uint8_t>(static_cast<uint8_t>(m.chunk_sums.size()));
      for (double v : m.chunk_sums) w.Put<double>(v);
      for (int64_t c : m.chunk_elements) w.Put<int64_t>(c);
    }
    w.Put<uint8_t>(static_cast<uint8_t>(s.spectra.size()));
    for (const UnfoldingSpectrum& sp : s.spectra) {
      w.Put<int64_t>(sp.rows);
      w.Put<int64_t>(sp.cols);
      w.Put<uint8_t>(static_cast<uint8_t>(sp.singular_values.size()));
      for (double v : sp.singular_values) w.Put<double>(v);
    }
  }
  return w.Take();
}

StatusOr<Fingerprint> DecodeFingerprint(std::string_view kind, std::string_view data) {
  if (kind != kFingerprintKind) {
    return InvalidArgument("unknown fingerprint kind '" + std::string(kind) + "' (this build reads '" +
                           std::string(kFingerprintKind) + "')");
  }
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
      m.chunk_elements.resize(n);
      for (double& v : m.chunk_sums) {
        if (!r.Get(&v)) return truncated;
      }
      for (int64_t& c : m.chunk_elements) {
        if (!r.Get(&c)) return truncated;
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
  MAGNETON_RETURN_IF_ERROR(CheckCounts(fp));
  return fp;
}

}  // namespace magneton
