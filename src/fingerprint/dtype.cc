#include <algorithm>
#include <cctype>
#include <string>

#include "fingerprint/fingerprint.h"

namespace magneton {

StatusOr<DType> ParseDType(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  if (s == "float32" || s == "float" || s == "f32" || s == "fp32") return DType::kFloat32;
  if (s == "float16" || s == "half" || s == "f16" || s == "fp16") return DType::kFloat16;
  if (s == "bfloat16" || s == "bf16") return DType::kBFloat16;
  if (s == "float64" || s == "double" || s == "f64" || s == "fp64") return DType::kFloat64;
  if (s == "int64" || s == "long" || s == "i64") return DType::kInt64;
  if (s == "int32" || s == "int" || s == "i32") return DType::kInt32;
  if (s == "int16" || s == "short" || s == "i16") return DType::kInt16;
  if (s == "int8" || s == "i8") return DType::kInt8;
  if (s == "uint8" || s == "u8" || s == "byte") return DType::kUInt8;
  if (s == "bool") return DType::kBool;
  return InvalidArgument("unsupported dtype for fingerprints: '" + std::string(name) + "'");
}

DTypeClass ClassOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64:
      return DTypeClass::kFloating;
    case DType::kBool:
      return DTypeClass::kBool;
    default:
      return DTypeClass::kIntegral;
  }
}

size_t ElementSizeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    default:
      return 1;
  }
}

}  // namespace magneton
