// How a ggml tensor looks in Magneton's trace model, computed from plain
// numbers so that it is testable without ggml: ggml lists dimensions
// innermost first (ne[0] is the contiguous one) with strides in bytes (nb[]),
// Magneton lists them outermost first with strides in elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace magneton::ggml_hook {

inline constexpr int kGgmlMaxDims = 4;

// The fields of one ggml tensor that decide its layout.
struct GgmlLayoutIn {
  int64_t ne[kGgmlMaxDims] = {1, 1, 1, 1};  // elements per dim, innermost first
  uint64_t nb[kGgmlMaxDims] = {0, 0, 0, 0};  // bytes per step along each dim
  uint64_t type_size_bytes = 4;  // bytes per block (ggml_type_size)
  int64_t block_elements = 1;    // elements per block (ggml_blck_size; > 1 for quantized types)
  uint64_t data_addr = 0;        // t->data
  uint64_t view_root_addr = 0;   // t->view_src->data for a view, else 0
  uint64_t view_offset_bytes = 0;  // t->view_offs
};

struct TensorLayout {
  int32_t ndim = 0;
  int64_t sizes[kGgmlMaxDims] = {};    // outermost first
  int64_t strides[kGgmlMaxDims] = {};  // in elements, outermost first
  uint64_t storage_addr = 0;  // the root allocation: a view and its source share it
  int64_t storage_offset = 0;  // in elements
};

// Reverses the dimensions, drops trailing size-1 dims as ggml_n_dims does
// (a [C, T, 1, 1] activation becomes [T, C]; at least one dim stays), turns
// byte strides into element strides, and resolves a view to its root
// allocation. False when a stride or view offset is not a whole number of
// elements (a byte view into a quantized block), which cannot be expressed.
bool ToTensorLayout(const GgmlLayoutIn& in, TensorLayout* out);

// Magneton's dtype name for a ggml type name (ggml_type_name: "f32" ->
// "float32", "i32" -> "int32"); types without an equivalent (quantized
// blocks) keep ggml's name under a "ggml." prefix, which the fingerprinter
// does not read.
std::string DtypeName(std::string_view ggml_type_name);

// The layer a llama.cpp node belongs to, from the name llama.cpp's graph
// callback gives it: "attn_norm-3", "cache_k_l3 (view)" and the weight
// "blk.3.attn_output.weight" are layer 3;
// ggml's " (view)", " (permuted)", " (copy of ...)" suffixes are ignored.
// -1 for nodes outside the layers ("inp_embd", "result_output").
int LayerOfNodeName(std::string_view name);

// The node's name without ggml's derived-tensor suffixes and layer index
// ("Qcur-0 (view) (permuted)" -> "Qcur"); "" for an unnamed node.
std::string BaseNodeName(std::string_view name);

}  // namespace magneton::ggml_hook
