// The "mfp2" blob: the fingerprint's fields in order, every bit of them kept,
// each in as few bytes as it needs (an mfp1 blob spent 8 bytes on every field:
// 2.4 kB for a 64x64 tensor, half of it chunk element counts that are all
// equal). Layout:
//   u8 head: dtype_class (bits 0-1), has_strong (bit 2), other bits 0;
//   int element_count, nan_count, pos_inf_count, neg_inf_count, quantile_sample_size;
//   doubles[38]: mean, variance, skewness, kurtosis, min, max, quantiles[32];
//   if has_strong: u8 rank, int dims[rank], int core_dims[rank],
//     per axis: int axis_size, u8 n, doubles[n] chunk_sums, runs[n] chunk_elements,
//     u8 n_spectra, per spectrum: int rows, int cols, u8 k, doubles[k] singular_values.
// int: zigzag LEB128 varint (1 byte below 64). doubles[n]: ceil(n/4) tag bytes,
// 2 bits per value from the low bits up (unused bits 0), then the values'
// bytes; each value takes the first tag that holds it exactly:
//   0: the group's previous value again (0 bytes)   1: +0.0 (0 bytes)
//   2: a float32 that widens to it (4 bytes)         3: the 8 bytes of the double.
// runs[n]: int number of runs, then per run int value and int length >= 1;
// neighbouring runs differ and the lengths sum to n.
// Every choice above is forced, so a fingerprint has one blob: the decoder
// refuses any other spelling (fuzz/fingerprint_codec_fuzzer checks decode then
// encode gives the same bytes).
#include <array>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "fingerprint/codec_mfp1.h"
#include "fingerprint/fingerprint.h"

namespace magneton {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the mfp2 codec copies native little-endian values");

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// Whether v is a float32 widened: then it is stored as that float.
bool AsFloat(double v, float* f) {
  if (std::isnan(v) || (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())) return false;
  *f = static_cast<float>(v);
  return Bits(static_cast<double>(*f)) == Bits(v);
}

enum Tag : uint8_t { kRepeat = 0, kZero = 1, kFloat = 2, kRaw = 3 };

Tag TagOf(double v, bool has_previous, double previous) {
  float f;
  if (has_previous && Bits(v) == Bits(previous)) return kRepeat;
  if (Bits(v) == 0) return kZero;
  if (AsFloat(v, &f)) return kFloat;
  return kRaw;
}

class Writer {
 public:
  void Byte(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void Int(int64_t v) {
    uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
    while (z >= 0x80) {
      Byte(static_cast<uint8_t>(z | 0x80));
      z >>= 7;
    }
    Byte(static_cast<uint8_t>(z));
  }
  template <typename Range>
  void Doubles(const Range& values) {
    const size_t n = std::size(values);
    const size_t tags_at = out_.size();
    out_.append((n + 3) / 4, '\0');
    size_t i = 0;
    double previous = 0;
    for (double v : values) {
      const Tag tag = TagOf(v, i > 0, previous);
      out_[tags_at + i / 4] = static_cast<char>(static_cast<uint8_t>(out_[tags_at + i / 4]) | (tag << (2 * (i % 4))));
      if (tag == kFloat) {
        const float f = static_cast<float>(v);
        Raw(&f, sizeof(f));
      } else if (tag == kRaw) {
        Raw(&v, sizeof(v));
      }
      previous = v;
      ++i;
    }
  }
  void Runs(const ChunkCounts& counts) {
    Int(static_cast<int64_t>(counts.runs().size()));
    for (const ChunkCounts::Run& r : counts.runs()) {
      Int(r.value);
      Int(r.length);
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool Byte(uint8_t* v) {
    if (pos_ >= in_.size()) return false;
    *v = static_cast<uint8_t>(in_[pos_++]);
    return true;
  }
  // Refuses a varint longer than it needs to be, or beyond 64 bits.
  bool Int(int64_t* v) {
    uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b;
      if (shift > 63 || !Byte(&b)) return false;
      if (shift == 63 && b > 1) return false;
      z |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        if (b == 0 && shift > 0) return false;
        break;
      }
    }
    *v = static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
    return true;
  }
  template <typename Range>
  bool Doubles(Range& values) {
    const size_t n = std::size(values);
    if (in_.size() - pos_ < (n + 3) / 4) return false;
    const std::string_view tags = in_.substr(pos_, (n + 3) / 4);
    pos_ += tags.size();
    if (n % 4 != 0 && (static_cast<uint8_t>(tags.back()) >> (2 * (n % 4))) != 0) return false;
    size_t i = 0;
    double previous = 0;
    for (double& v : values) {
      const Tag tag = static_cast<Tag>((static_cast<uint8_t>(tags[i / 4]) >> (2 * (i % 4))) & 3);
      if (tag == kRepeat) {
        if (i == 0) return false;
        v = previous;
      } else if (tag == kZero) {
        v = 0.0;
      } else if (tag == kFloat) {
        float f;
        if (!Raw(&f, sizeof(f))) return false;
        v = static_cast<double>(f);
      } else if (!Raw(&v, sizeof(v))) {
        return false;
      }
      if (TagOf(v, i > 0, previous) != tag) return false;  // not the encoder's spelling
      previous = v;
      ++i;
    }
    return true;
  }
  bool Runs(ChunkCounts* counts, size_t n) {
    int64_t runs;
    if (!Int(&runs) || runs < 0 || static_cast<uint64_t>(runs) > n) return false;
    counts->clear();
    for (int64_t r = 0; r < runs; ++r) {
      int64_t value, length;
      if (!Int(&value) || !Int(&length) || length < 1 || static_cast<uint64_t>(length) > n - counts->size()) {
        return false;
      }
      if (r > 0 && value == counts->back()) return false;
      for (int64_t k = 0; k < length; ++k) counts->push_back(value);
    }
    return counts->size() == n;
  }

  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  bool Raw(void* p, size_t n) {
    if (in_.size() - pos_ < n) return false;
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
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
    for (const ChunkCounts::Run& run : m.chunk_elements.runs()) {
      if (run.value < 0 || run.value > n) return bad;
    }
  }
  for (const UnfoldingSpectrum& sp : s.spectra) {
    if (sp.rows < 0 || sp.cols < 0 || sp.rows > core || sp.cols > core) return bad;
  }
  return Status::Ok();
}

// The 38 doubles of the layout-invariant part, in blob order.
std::array<double*, 6 + kFingerprintQuantiles> InvariantDoubles(LayoutInvariantPart& p) {
  std::array<double*, 6 + kFingerprintQuantiles> out{&p.mean, &p.variance, &p.skewness, &p.kurtosis, &p.min, &p.max};
  for (int i = 0; i < kFingerprintQuantiles; ++i) out[6 + i] = &p.quantiles[i];
  return out;
}

StatusOr<Fingerprint> DecodeMfp2(std::string_view data) {
  const Status truncated = Corrupt("fingerprint blob is truncated or malformed");
  Reader r(data);
  Fingerprint fp;
  LayoutInvariantPart& p = fp.invariant;
  uint8_t head = 0;
  if (!r.Byte(&head) || (head & 3) > 2 || (head >> 3) != 0) return truncated;
  fp.dtype_class = static_cast<DTypeClass>(head & 3);
  for (int64_t* v : {&p.element_count, &p.nan_count, &p.pos_inf_count, &p.neg_inf_count, &p.quantile_sample_size}) {
    if (!r.Int(v)) return truncated;
  }
  std::array<double, 6 + kFingerprintQuantiles> invariant{};
  if (!r.Doubles(invariant)) return truncated;
  auto fields = InvariantDoubles(p);
  for (size_t i = 0; i < fields.size(); ++i) *fields[i] = invariant[i];
  if (head & 4) {
    StrongPart& s = fp.strong;
    s.present = true;
    uint8_t rank = 0;
    if (!r.Byte(&rank) || rank > 16) return truncated;
    s.dims.resize(rank);
    s.core_dims.resize(rank);
    for (auto& d : s.dims) {
      if (!r.Int(&d)) return truncated;
    }
    for (auto& d : s.core_dims) {
      if (!r.Int(&d)) return truncated;
    }
    s.marginals.resize(rank);
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

}  // namespace

std::string EncodeFingerprint(const Fingerprint& fp) {
  Writer w;
  LayoutInvariantPart p = fp.invariant;
  w.Byte(static_cast<uint8_t>(static_cast<uint8_t>(fp.dtype_class) & 3) | (fp.strong.present ? 4 : 0));
  for (int64_t v : {p.element_count, p.nan_count, p.pos_inf_count, p.neg_inf_count, p.quantile_sample_size}) w.Int(v);
  std::array<double, 6 + kFingerprintQuantiles> invariant{};
  auto fields = InvariantDoubles(p);
  for (size_t i = 0; i < fields.size(); ++i) invariant[i] = *fields[i];
  w.Doubles(invariant);
  if (fp.strong.present) {
    const StrongPart& s = fp.strong;
    w.Byte(static_cast<uint8_t>(s.dims.size()));
    for (int64_t d : s.dims) w.Int(d);
    for (int64_t d : s.core_dims) w.Int(d);
    for (const AxisMarginal& m : s.marginals) {
      w.Int(m.axis_size);
      w.Byte(static_cast<uint8_t>(m.chunk_sums.size()));
      w.Doubles(m.chunk_sums);
      w.Runs(m.chunk_elements);
    }
    w.Byte(static_cast<uint8_t>(s.spectra.size()));
    for (const UnfoldingSpectrum& sp : s.spectra) {
      w.Int(sp.rows);
      w.Int(sp.cols);
      w.Byte(static_cast<uint8_t>(sp.singular_values.size()));
      w.Doubles(sp.singular_values);
    }
  }
  return w.Take();
}

StatusOr<Fingerprint> DecodeFingerprint(std::string_view kind, std::string_view data) {
  StatusOr<Fingerprint> fp = kind == kFingerprintKind       ? DecodeMfp2(data)
                             : kind == kFingerprintKindMfp1 ? DecodeMfp1(data)
                                                            : StatusOr<Fingerprint>(InvalidArgument(
                                                                  "unknown fingerprint kind '" + std::string(kind) +
                                                                  "' (this build reads '" +
                                                                  std::string(kFingerprintKind) + "' and 'mfp1')"));
  if (!fp.ok()) return fp;
  MAGNETON_RETURN_IF_ERROR(CheckCounts(*fp));
  return fp;
}

}  // namespace magneton
