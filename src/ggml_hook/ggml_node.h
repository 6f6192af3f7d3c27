// One ggml graph node's tensors as Magneton records them: layout (reversed
// dims, element strides, view root), dtype, device, host data, and whether
// the tensor is a model weight.
#pragma once

#include <string>

#include "ggml.h"
#include "ggml_hook/ggml_api.h"
#include "ggml_hook/ggml_layout.h"
#include "magneton/c_api.h"

namespace magneton::ggml_hook {

struct TensorDesc {
  TensorLayout layout;
  std::string dtype;
  std::string device;
  const void* host_data = nullptr;  // only for host buffers: the fingerprinter reads it
  bool is_weight = false;           // lives in a weights buffer (loaded parameters)
};

// False when the tensor cannot be described (no data yet, or a byte view
// that is not a whole number of elements).
bool DescribeTensor(const ggml_tensor* t, const GgmlApi& api, TensorDesc* out);

// The C ABI view of `desc`, borrowing its arrays and strings.
magneton_tensor ToCTensor(const TensorDesc& desc);

}  // namespace magneton::ggml_hook
