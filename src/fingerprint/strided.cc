#include "fingerprint/strided.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace magneton::fingerprint_internal {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: renormalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

// An element's value as a double, for each stored type.
struct AsIs {
  template <typename T>
  double operator()(T x) const { return static_cast<double>(x); }
};
struct Half {
  double operator()(uint16_t x) const { return HalfToFloat(x); }
};
struct BFloat16 {
  double operator()(uint16_t x) const { return BFloat16ToFloat(x); }
};
struct Bool {
  double operator()(uint8_t x) const { return x != 0 ? 1.0 : 0.0; }
};

// Calls load(p, convert) with the data typed as the dtype's storage and its
// conversion: the one dtype switch of every loader below.
template <typename Load>
void WithStorage(DType dtype, const void* data, int64_t offset, Load&& load) {
  switch (dtype) {
    case DType::kFloat32:
      return load(static_cast<const float*>(data) + offset, AsIs{});
    case DType::kFloat64:
      return load(static_cast<const double*>(data) + offset, AsIs{});
    case DType::kFloat16:
      return load(static_cast<const uint16_t*>(data) + offset, Half{});
    case DType::kBFloat16:
      return load(static_cast<const uint16_t*>(data) + offset, BFloat16{});
    case DType::kInt64:
      return load(static_cast<const int64_t*>(data) + offset, AsIs{});
    case DType::kInt32:
      return load(static_cast<const int32_t*>(data) + offset, AsIs{});
    case DType::kInt16:
      return load(static_cast<const int16_t*>(data) + offset, AsIs{});
    case DType::kInt8:
      return load(static_cast<const int8_t*>(data) + offset, AsIs{});
    case DType::kUInt8:
      return load(static_cast<const uint8_t*>(data) + offset, AsIs{});
    case DType::kBool:
      return load(static_cast<const uint8_t*>(data) + offset, Bool{});
  }
}

}  // namespace

void LoadElements(DType dtype, const void* data, int64_t offset, int64_t count, int64_t stride, double* out) {
  WithStorage(dtype, data, offset, [&](const auto* p, auto convert) {
    if (stride == 1) {
      for (int64_t i = 0; i < count; ++i) out[i] = convert(p[i]);  // vectorised where the type allows
    } else {
      for (int64_t i = 0; i < count; ++i) out[i] = convert(p[i * stride]);
    }
  });
}

void LoadAtOffsets(DType dtype, const void* data, int64_t base, const int64_t* offsets, int64_t count, double* out) {
  WithStorage(dtype, data, base, [&](const auto* p, auto convert) {
    for (int64_t i = 0; i < count; ++i) out[i] = convert(p[offsets[i]]);
  });
}

double LoadElement(DType dtype, const void* data, int64_t offset) {
  double v;
  LoadElements(dtype, data, offset, 1, 1, &v);
  return v;
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(shape[i], 1);
  return strides;
}

RunLayout CoalesceForTraversal(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return RunLayout{{0}, {1}};
    if (shape[d] != 1) dims.push_back(d);
  }
  if (dims.empty()) return RunLayout{{1}, {1}};
  // Memory order: the smallest |stride| innermost, so runs are as long as possible.
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t a, size_t b) { return std::llabs(strides[a]) > std::llabs(strides[b]); });
  RunLayout out;
  for (size_t d : dims) {
    if (!out.sizes.empty() && out.strides.back() == strides[d] * shape[d]) {
      // The previous (outer) dim steps exactly over this one: merge.
      out.sizes.back() *= shape[d];
      out.strides.back() = strides[d];
    } else {
      out.sizes.push_back(shape[d]);
      out.strides.push_back(strides[d]);
    }
  }
  return out;
}

}  // namespace magneton::fingerprint_internal
