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

template <typename T>
void LoadTyped(const T* p, int64_t count, int64_t stride, double* out) {
  if (stride == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(p[i]);  // vectorised
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(p[i * stride]);
  }
}

template <typename T>
void LoadTypedAt(const T* p, const int64_t* offsets, int64_t count, double* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(p[offsets[i]]);
}

template <typename Convert>
void Load16At(const uint16_t* p, const int64_t* offsets, int64_t count, double* out, Convert convert) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(convert(p[offsets[i]]));
}

template <typename Convert>
void Load16(const uint16_t* p, int64_t count, int64_t stride, double* out, Convert convert) {
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(convert(p[i * stride]));
}

}  // namespace

void LoadElements(DType dtype, const void* data, int64_t offset, int64_t count, int64_t stride, double* out) {
  switch (dtype) {
    case DType::kFloat32:
      return LoadTyped(static_cast<const float*>(data) + offset, count, stride, out);
    case DType::kFloat64:
      return LoadTyped(static_cast<const double*>(data) + offset, count, stride, out);
    case DType::kFloat16:
      return Load16(static_cast<const uint16_t*>(data) + offset, count, stride, out, HalfToFloat);
    case DType::kBFloat16:
      return Load16(static_cast<const uint16_t*>(data) + offset, count, stride, out, BFloat16ToFloat);
    case DType::kInt64:
      return LoadTyped(static_cast<const int64_t*>(data) + offset, count, stride, out);
    case DType::kInt32:
      return LoadTyped(static_cast<const int32_t*>(data) + offset, count, stride, out);
    case DType::kInt16:
      return LoadTyped(static_cast<const int16_t*>(data) + offset, count, stride, out);
    case DType::kInt8:
      return LoadTyped(static_cast<const int8_t*>(data) + offset, count, stride, out);
    case DType::kUInt8:
      return LoadTyped(static_cast<const uint8_t*>(data) + offset, count, stride, out);
    case DType::kBool: {
      const uint8_t* p = static_cast<const uint8_t*>(data) + offset;
      for (int64_t i = 0; i < count; ++i) out[i] = p[i * stride] != 0 ? 1.0 : 0.0;
      return;
    }
  }
}

void LoadAtOffsets(DType dtype, const void* data, int64_t base, const int64_t* offsets, int64_t count, double* out) {
  switch (dtype) {
    case DType::kFloat32:
      return LoadTypedAt(static_cast<const float*>(data) + base, offsets, count, out);
    case DType::kFloat64:
      return LoadTypedAt(static_cast<const double*>(data) + base, offsets, count, out);
    case DType::kFloat16:
      return Load16At(static_cast<const uint16_t*>(data) + base, offsets, count, out, HalfToFloat);
    case DType::kBFloat16:
      return Load16At(static_cast<const uint16_t*>(data) + base, offsets, count, out, BFloat16ToFloat);
    case DType::kInt64:
      return LoadTypedAt(static_cast<const int64_t*>(data) + base, offsets, count, out);
    case DType::kInt32:
      return LoadTypedAt(static_cast<const int32_t*>(data) + base, offsets, count, out);
    case DType::kInt16:
      return LoadTypedAt(static_cast<const int16_t*>(data) + base, offsets, count, out);
    case DType::kInt8:
      return LoadTypedAt(static_cast<const int8_t*>(data) + base, offsets, count, out);
    case DType::kUInt8:
      return LoadTypedAt(static_cast<const uint8_t*>(data) + base, offsets, count, out);
    case DType::kBool: {
      const uint8_t* p = static_cast<const uint8_t*>(data) + base;
      for (int64_t i = 0; i < count; ++i) out[i] = p[offsets[i]] != 0 ? 1.0 : 0.0;
      return;
    }
  }
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
