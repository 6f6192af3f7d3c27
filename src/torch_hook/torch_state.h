// The torch settings that select kernels, read at each top-level op
// (Trace::runtime_states): a POD of a few loads, compared with the thread's
// last one, so that only a change costs a map and an intern.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace magneton {

struct TorchStateView {
  int32_t num_threads = 0;
  int32_t num_interop_threads = 0;  // cached: see RefreshSlowTorchState
  int8_t default_dtype = 0;         // c10::ScalarType
  int8_t float32_matmul_precision = 0;
  bool grad_enabled = false;
  bool inference_mode = false;
  bool allow_tf32_cublas = false;
  bool allow_tf32_cudnn = false;
  bool allow_fp16_reduction_cpu = false;
  bool mkldnn_enabled = false;
  bool cudnn_enabled = false;
  bool cudnn_benchmark = false;
  bool flash_sdp = false;
  bool mem_efficient_sdp = false;
  bool math_sdp = false;
  bool cudnn_sdp = false;
  bool deterministic = false;
  bool deterministic_warn_only = false;
  bool autocast_cpu = false;
  bool autocast_cuda = false;
  int8_t autocast_cpu_dtype = 0;
  int8_t autocast_cuda_dtype = 0;
  // Bumped by SetPythonState when the settings read in Python changed.
  uint64_t python_version = 0;
  bool operator==(const TorchStateView&) const = default;
};

// The current thread's view: thread-local modes (grad, inference, autocast)
// and the process's global flags.
TorchStateView ReadTorchState();
// As RuntimeState values: "torch.num_threads" -> "4", "torch.grad_enabled" -> "true",
// then the settings read in Python (SetPythonState) under keys not read here.
std::map<std::string, std::string> TorchStateValues(const TorchStateView& view);
// The keys TorchStateValues reads in C++ (the Python side leaves them out).
std::map<std::string, std::string> NativeTorchStateValues(const TorchStateView& view);
// The settings the Python side introspects (torch.backends.*, torch.get_X
// with a set_X twin: python/magneton/recorders/torch_state_introspect.py),
// process-wide. Python reads them at install and after each setter, never per
// op: an op pays one atomic load to see whether they changed. Replaces the
// whole set; bumps the version only when a value differs.
void SetPythonState(std::map<std::string, std::string> values);
// Re-reads the fields too slow for every op (the inter-op pool size asks the
// OS for the CPU count until it is set): at install and after a Python setter.
void RefreshSlowTorchState();

}  // namespace magneton
