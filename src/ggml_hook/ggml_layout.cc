#include "ggml_hook/ggml_layout.h"

#include <cctype>

namespace magneton::ggml_hook {
namespace {

// Bytes -> elements for a step of `bytes`; false when it is not whole.
bool BytesToElements(uint64_t bytes, const GgmlLayoutIn& in, int64_t* elements) {
  if (in.type_size_bytes == 0 || bytes % in.type_size_bytes != 0) return false;
  *elements = static_cast<int64_t>(bytes / in.type_size_bytes) * in.block_elements;
  return true;
}

}  // namespace

bool ToTensorLayout(const GgmlLayoutIn& in, TensorLayout* out) {
  int ndim = 1;
  for (int i = kGgmlMaxDims - 1; i >= 1; --i) {
    if (in.ne[i] > 1) {
      ndim = i + 1;
      break;
    }
  }
  TensorLayout layout;
  layout.ndim = ndim;
  for (int i = 0; i < ndim; ++i) {
    const int out_dim = ndim - 1 - i;  // ggml dim i is Magneton dim ndim-1-i
    layout.sizes[out_dim] = in.ne[i];
    if (i == 0 && in.block_elements > 1) {
      // Quantized: elements of a row are packed in blocks, nb[0] is a block.
      layout.strides[out_dim] = 1;
    } else if (!BytesToElements(in.nb[i], in, &layout.strides[out_dim])) {
      return false;
    }
  }
  if (in.view_root_addr != 0) {
    layout.storage_addr = in.view_root_addr;
    if (!BytesToElements(in.view_offset_bytes, in, &layout.storage_offset)) return false;
  } else {
    layout.storage_addr = in.data_addr;
    layout.storage_offset = 0;
  }
  *out = layout;
  return true;
}

std::string DtypeName(std::string_view t) {
  struct Pair {
    std::string_view ggml, magneton;
  };
  static constexpr Pair kNames[] = {
      {"f32", "float32"}, {"f16", "float16"}, {"bf16", "bfloat16"}, {"f64", "float64"},
      {"i8", "int8"},     {"i16", "int16"},   {"i32", "int32"},     {"i64", "int64"},
  };
  for (const Pair& p : kNames) {
    if (p.ggml == t) return std::string(p.magneton);
  }
  return "ggml." + std::string(t);
}

std::string BaseNodeName(std::string_view name) {
  // Derived tensors are named "<source> (view)", "<a> (copy of <b>)", ...
  if (size_t paren = name.find(" ("); paren != std::string_view::npos) name = name.substr(0, paren);
  // llama.cpp appends the layer as "-<il>"; KV-cache tensors carry "_l<il>".
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits < name.size() && digits > 0 && name[digits - 1] == '-') name = name.substr(0, digits - 1);
  return std::string(name);
}

int LayerOfNodeName(std::string_view name) {
  // Weights are named after their GGUF tensor: "blk.<il>.attn_output.weight".
  if (name.rfind("blk.", 0) == 0) {
    size_t end = 4;
    while (end < name.size() && end < 10 && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end > 4 && end < name.size() && name[end] == '.') return std::stoi(std::string(name.substr(4, end - 4)));
    return -1;
  }
  if (size_t paren = name.find(" ("); paren != std::string_view::npos) name = name.substr(0, paren);
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits == name.size() || digits == 0 || name.size() - digits > 6) return -1;
  const bool dash = name[digits - 1] == '-';
  const bool cache = digits >= 2 && name[digits - 1] == 'l' && name[digits - 2] == '_';
  if (!dash && !cache) return -1;
  return std::stoi(std::string(name.substr(digits)));
}

}  // namespace magneton::ggml_hook
