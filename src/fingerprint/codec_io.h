// The byte-level pieces the mfp2 and mfp3 fingerprint blobs share
// (internal): zigzag LEB128 varints, tagged doubles and runs of chunk
// counts, each with exactly one spelling (the readers refuse any other).
//   int: zigzag LEB128 varint (1 byte below 64).
//   doubles[n]: ceil(n/4) tag bytes, 2 bits per value from the low bits up
//     (unused bits 0), then the values' bytes; each value takes the first tag
//     that holds it exactly:
//       0: the group's previous value again (0 bytes)   1: +0.0 (0 bytes)
//       2: a float32 that widens to it (4 bytes)         3: the 8 bytes of the double.
//   packed[n]: u8 width (the bits of the largest zigzag value, 0-64), then
//     ceil(n * width / 8) bytes holding each value's zigzag in `width` bits,
//     low bits first; the padding bits are 0.
//   runs[n]: int number of runs, then per run int value and int length >= 1;
//     neighbouring runs differ and the lengths sum to n.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <span>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprint/fingerprint.h"

namespace magneton::fingerprint_codec {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the fingerprint codecs copy native little-endian values");

inline uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// Whether v is a float32 widened: then it is stored as that float.
inline bool AsFloat(double v, float* f) {
  if (std::isnan(v) || (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())) return false;
  *f = static_cast<float>(v);
  return Bits(static_cast<double>(*f)) == Bits(v);
}

enum Tag : uint8_t { kRepeat = 0, kZero = 1, kFloat = 2, kRaw = 3 };

inline Tag TagOf(double v, bool has_previous, double previous) {
  float f;
  if (has_previous && Bits(v) == Bits(previous)) return kRepeat;
  if (Bits(v) == 0) return kZero;
  if (AsFloat(v, &f)) return kFloat;
  return kRaw;
}

inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

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

  // The five counts of the layout-invariant part (mfp2 and mfp3 alike).
  void Counts(const LayoutInvariantPart& p) {
    for (int64_t v : {p.element_count, p.nan_count, p.pos_inf_count, p.neg_inf_count, p.quantile_sample_size}) Int(v);
  }
  void StrongDims(const StrongPart& s) {
    Byte(static_cast<uint8_t>(s.dims.size()));
    for (int64_t d : s.dims) Int(d);
    for (int64_t d : s.core_dims) Int(d);
  }
  void Packed(std::span<const int64_t> values) {
    int width = 0;
    for (int64_t v : values) width = std::max(width, 64 - std::countl_zero(ZigZag(v)));
    Byte(static_cast<uint8_t>(width));
    unsigned __int128 acc = 0;
    int bits = 0;
    for (int64_t v : values) {
      acc |= static_cast<unsigned __int128>(ZigZag(v)) << bits;
      bits += width;
      for (; bits >= 8; bits -= 8, acc >>= 8) Byte(static_cast<uint8_t>(acc));
    }
    if (bits > 0) Byte(static_cast<uint8_t>(acc));
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

  bool Counts(LayoutInvariantPart* p) {
    for (int64_t* v : {&p->element_count, &p->nan_count, &p->pos_inf_count, &p->neg_inf_count, &p->quantile_sample_size}) {
      if (!Int(v)) return false;
    }
    return true;
  }

  // The strong part's head (mfp2 and mfp3): u8 rank (at most 16), int
  // dims[rank], int core_dims[rank]; marks it present and sizes the marginals.
  bool StrongDims(StrongPart* s) {
    uint8_t rank = 0;
    if (!Byte(&rank) || rank > 16) return false;
    s->present = true;
    s->dims.resize(rank);
    s->core_dims.resize(rank);
    for (auto& d : s->dims) {
      if (!Int(&d)) return false;
    }
    for (auto& d : s->core_dims) {
      if (!Int(&d)) return false;
    }
    s->marginals.resize(rank);
    return true;
  }

  // Refuses a width wider than the largest value needs, or padding bits set.
  bool Packed(size_t n, std::vector<int64_t>* values) {
    uint8_t width = 0;
    if (!Byte(&width) || width > 64) return false;
    if (in_.size() - pos_ < (n * width + 7) / 8) return false;
    values->clear();
    unsigned __int128 acc = 0;
    int bits = 0;
    uint64_t all = 0;
    for (size_t i = 0; i < n; ++i) {
      for (; bits < width; bits += 8) acc |= static_cast<unsigned __int128>(static_cast<uint8_t>(in_[pos_++])) << bits;
      const uint64_t z = width == 64 ? static_cast<uint64_t>(acc) : static_cast<uint64_t>(acc) & ((uint64_t{1} << width) - 1);
      acc >>= width;
      bits -= width;
      all |= z;
      values->push_back(static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1)));
    }
    if (acc != 0) return false;  // padding bits
    return 64 - std::countl_zero(all) == width;
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

// The 38 doubles of the layout-invariant part, in mfp1/mfp2 blob order.
inline std::array<double*, 6 + kFingerprintQuantiles> InvariantDoubles(LayoutInvariantPart& p) {
  std::array<double*, 6 + kFingerprintQuantiles> out{&p.mean, &p.variance, &p.skewness, &p.kurtosis, &p.min, &p.max};
  for (int i = 0; i < kFingerprintQuantiles; ++i) out[6 + i] = &p.quantiles[i];
  return out;
}

}  // namespace magneton::fingerprint_codec
