#include "ggml_hook/ggml_node.h"

#include <cctype>

namespace magneton::ggml_hook {
namespace {

// "CPU" -> "cpu", "CUDA0" -> "cuda:0": the device spelling the rest of the
// trace uses; other backends keep their (lower-cased) buffer name.
std::string DeviceName(std::string_view buffer_name) {
  std::string lower;
  for (char c : buffer_name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t digits = lower.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(lower[digits - 1]))) --digits;
  if (digits > 0 && digits < lower.size()) return lower.substr(0, digits) + ":" + lower.substr(digits);
  return lower;
}

}  // namespace

bool DescribeTensor(const ggml_tensor* t, const GgmlApi& api, TensorDesc* out) {
  if (t == nullptr || t->data == nullptr) return false;
  GgmlLayoutIn in;
  for (int i = 0; i < kGgmlMaxDims && i < GGML_MAX_DIMS; ++i) {
    in.ne[i] = t->ne[i];
    in.nb[i] = t->nb[i];
  }
  in.type_size_bytes = api.type_size(t->type);
  in.block_elements = api.blck_size(t->type);
  in.data_addr = reinterpret_cast<uintptr_t>(t->data);
  if (t->view_src != nullptr && t->view_src->data != nullptr) {
    in.view_root_addr = reinterpret_cast<uintptr_t>(t->view_src->data);
    in.view_offset_bytes = t->view_offs;
  }
  TensorDesc desc;
  if (!ToTensorLayout(in, &desc.layout)) return false;
  desc.dtype = DtypeName(api.type_name(t->type));
  const ggml_tensor* owner = t->view_src != nullptr ? t->view_src : t;
  ggml_backend_buffer_t buffer = t->buffer != nullptr ? t->buffer : owner->buffer;
  if (buffer != nullptr) {
    const bool host = api.buffer_is_host(buffer);
    desc.device = host ? "cpu" : DeviceName(api.buffer_name(buffer));
    if (host) desc.host_data = t->data;
    desc.is_weight = api.buffer_get_usage(buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
  } else {
    desc.device = "unknown";
  }
  *out = std::move(desc);
  return true;
}

magneton_tensor ToCTensor(const TensorDesc& desc) {
  magneton_tensor c{};
  c.storage_addr = desc.layout.storage_addr;
  c.storage_offset = desc.layout.storage_offset;
  c.ndim = desc.layout.ndim;
  c.sizes = desc.layout.sizes;
  c.strides = desc.layout.strides;
  c.dtype = desc.dtype.c_str();
  c.device = desc.device.c_str();
  c.version = 0;  // ggml has no version counter: buffers are reused without one
  c.host_data = desc.host_data;
  return c;
}

}  // namespace magneton::ggml_hook
