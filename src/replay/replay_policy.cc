#include "replay/replay_policy.h"

#include <algorithm>
#include <array>

namespace magneton::replay {
namespace {

// Substrings of a name that mean the op reaches outside its tensors: files,
// printing, the RNG's state, streams/events/sync, the profiler, assertions,
// futures and process groups. Matched against the name without namespace
// and overload ("from_file", "_print", "record_stream").
constexpr std::array<std::string_view, 17> kDeniedParts = {
    "file", "print", "save", "load", "seed", "rng_state", "stream", "event", "profil", "record_function",
    "assert", "sync", "wait", "storage", "_debug", "dump", "pin_memory"};

// Whole names refused for the same reasons that no substring catches.
constexpr std::array<std::string_view, 8> kDeniedNames = {
    "set_", "set", "to_mkldnn", "sym_constrain_range", "sym_constrain_range_for_size", "lift_fresh_copy_",
    "_nested_tensor_from_mask", "data"};

// `_`-private ops that are plain kernels models run (softmax, attention,
// copies, views): replayed; any other private op is refused.
constexpr std::array<std::string_view, 34> kPrivateAllowed = {
    "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "_to_copy", "_unsafe_view",
    "_reshape_alias", "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_cudnn_attention", "_efficient_attention_forward",
    "_flash_attention_forward", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "_embedding_bag", "_embedding_bag_forward_only", "_conj", "_conj_physical", "_neg_view", "_addmm_activation",
    "_index_put_impl_", "_unsafe_index", "_convolution", "_batch_norm_impl_index", "_weight_norm",
    "_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_log_softmax_backward", "_cdist_forward", "_pdist_forward",
    "_masked_softmax", "_transformer_encoder_layer_fwd"};

// `_foreach_add_` and the like: the optimiser's fused list kernels.
constexpr std::string_view kPrivateAllowedPrefix = "_foreach_";

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

Status Refuse(const std::string& name, const std::string& why) {
  return PermissionDenied(std::string(kRefusedPrefix) + name + ": " + why);
}

}  // namespace

Status CheckReplayOpName(const std::string& name) {
  const size_t sep = name.find("::");
  if (sep == std::string::npos) return Refuse(name, "not a namespaced ATen operator name");
  const std::string ns = name.substr(0, sep);
  if (ns != "aten") return Refuse(name, "replay calls only aten:: operators, not " + ns + "::");
  std::string base = name.substr(sep + 2);
  if (size_t dot = base.find('.'); dot != std::string::npos) base.resize(dot);
  if (base.empty()) return Refuse(name, "no operator name");
  for (std::string_view part : kDeniedParts) {
    if (Contains(base, part)) {
      return Refuse(name, "may reach outside its tensors (name contains '" + std::string(part) +
                              "': files, printing, RNG state, streams, sync or the profiler)");
    }
  }
  if (std::find(kDeniedNames.begin(), kDeniedNames.end(), base) != kDeniedNames.end()) {
    return Refuse(name, "on replay's denylist (changes a tensor's storage or the tracer's state)");
  }
  if (base[0] == '_' && base.rfind(kPrivateAllowedPrefix, 0) != 0 &&
      std::find(kPrivateAllowed.begin(), kPrivateAllowed.end(), base) == kPrivateAllowed.end()) {
    return Refuse(name, "a private (_-prefixed) operator that is not on replay's allowlist of kernels");
  }
  return Status::Ok();
}

bool ReplayAllowsStringArg(const std::string& op_base_name, const std::string& arg_name, const std::string& value) {
  struct Allowed {
    std::string_view op, arg;
  };
  static constexpr std::array<Allowed, 11> kAllowed = {{{"gelu", "approximate"},
                                                        {"gelu_", "approximate"},
                                                        {"gelu_backward", "approximate"},
                                                        {"div", "rounding_mode"},
                                                        {"div_", "rounding_mode"},
                                                        {"einsum", "equation"},
                                                        {"searchsorted", "side"},
                                                        {"pad", "mode"},
                                                        {"scatter", "reduce"},
                                                        {"scatter_reduce", "reduce"},
                                                        {"index_reduce", "reduce"}}};
  bool listed = false;
  for (const Allowed& a : kAllowed) listed |= a.op == op_base_name && a.arg == arg_name;
  if (!listed || value.size() > 64) return false;
  return std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ',' ||
           c == '.' || c == '-' || c == '>' || c == ' ';
  });
}

}  // namespace magneton::replay
