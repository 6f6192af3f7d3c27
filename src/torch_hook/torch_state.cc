#include "torch_hook/torch_state.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <atomic>
#include <mutex>

#include "torch_hook/torch_names.h"

namespace magneton {
namespace {

std::atomic<int32_t> g_num_interop_threads{0};

std::mutex g_python_mu;
std::map<std::string, std::string> g_python_state;  // guarded by g_python_mu
std::atomic<uint64_t> g_python_version{0};

const char* PrecisionName(int8_t p) {
  switch (static_cast<at::Float32MatmulPrecision>(p)) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
  }
  return "unknown";
}

const char* Bool(bool b) { return b ? "true" : "false"; }

}  // namespace

void RefreshSlowTorchState() {
  g_num_interop_threads.store(static_cast<int32_t>(at::get_num_interop_threads()), std::memory_order_relaxed);
}

TorchStateView ReadTorchState() {
  const at::Context& ctx = at::globalContext();
  TorchStateView v;
  v.num_threads = at::get_num_threads();
  v.num_interop_threads = g_num_interop_threads.load(std::memory_order_relaxed);
  v.default_dtype = static_cast<int8_t>(c10::typeMetaToScalarType(c10::get_default_dtype()));
  v.float32_matmul_precision = static_cast<int8_t>(ctx.float32MatmulPrecision());
  v.grad_enabled = c10::GradMode::is_enabled();
  v.inference_mode = c10::InferenceMode::is_enabled();
  v.allow_tf32_cublas = ctx.allowTF32CuBLAS();
  v.allow_tf32_cudnn = ctx.allowTF32CuDNN();
  v.allow_fp16_reduction_cpu = ctx.allowFP16ReductionCPU();
  v.mkldnn_enabled = ctx.userEnabledMkldnn();
  v.cudnn_enabled = ctx.userEnabledCuDNN();
  v.cudnn_benchmark = ctx.benchmarkCuDNN();
  v.flash_sdp = ctx.userEnabledFlashSDP();
  v.mem_efficient_sdp = ctx.userEnabledMemEfficientSDP();
  v.math_sdp = ctx.userEnabledMathSDP();
  v.cudnn_sdp = ctx.userEnabledCuDNNSDP();
  v.deterministic = ctx.deterministicAlgorithms();
  v.deterministic_warn_only = ctx.deterministicAlgorithmsWarnOnly();
  v.autocast_cpu = at::autocast::is_autocast_enabled(at::kCPU);
  v.autocast_cuda = at::autocast::is_autocast_enabled(at::kCUDA);
  v.autocast_cpu_dtype = static_cast<int8_t>(at::autocast::get_autocast_dtype(at::kCPU));
  v.autocast_cuda_dtype = static_cast<int8_t>(at::autocast::get_autocast_dtype(at::kCUDA));
  v.python_version = g_python_version.load(std::memory_order_acquire);
  return v;
}

void SetPythonState(std::map<std::string, std::string> values) {
  std::lock_guard<std::mutex> lock(g_python_mu);
  if (values == g_python_state) return;
  g_python_state = std::move(values);
  g_python_version.fetch_add(1, std::memory_order_release);
}

std::map<std::string, std::string> TorchStateValues(const TorchStateView& v) {
  std::map<std::string, std::string> values = NativeTorchStateValues(v);
  std::lock_guard<std::mutex> lock(g_python_mu);
  // A key read here wins: it is exact per thread (a context manager's value).
  for (const auto& [key, value] : g_python_state) values.emplace(key, value);
  return values;
}

std::map<std::string, std::string> NativeTorchStateValues(const TorchStateView& v) {
  auto dtype = [](int8_t t) { return DtypeName(static_cast<c10::ScalarType>(t)); };
  return {
      {"torch.num_threads", std::to_string(v.num_threads)},
      {"torch.num_interop_threads", std::to_string(v.num_interop_threads)},
      {"torch.default_dtype", dtype(v.default_dtype)},
      {"torch.float32_matmul_precision", PrecisionName(v.float32_matmul_precision)},
      {"torch.grad_enabled", Bool(v.grad_enabled)},
      {"torch.inference_mode", Bool(v.inference_mode)},
      {"torch.backends.cuda.matmul.allow_tf32", Bool(v.allow_tf32_cublas)},
      {"torch.backends.cudnn.allow_tf32", Bool(v.allow_tf32_cudnn)},
      {"torch.backends.cpu.allow_fp16_reduced_precision_reduction", Bool(v.allow_fp16_reduction_cpu)},
      {"torch.backends.mkldnn.enabled", Bool(v.mkldnn_enabled)},
      {"torch.backends.cudnn.enabled", Bool(v.cudnn_enabled)},
      {"torch.backends.cudnn.benchmark", Bool(v.cudnn_benchmark)},
      {"torch.backends.cuda.flash_sdp_enabled", Bool(v.flash_sdp)},
      {"torch.backends.cuda.mem_efficient_sdp_enabled", Bool(v.mem_efficient_sdp)},
      {"torch.backends.cuda.math_sdp_enabled", Bool(v.math_sdp)},
      {"torch.backends.cuda.cudnn_sdp_enabled", Bool(v.cudnn_sdp)},
      {"torch.deterministic_algorithms", Bool(v.deterministic)},
      {"torch.deterministic_algorithms.warn_only", Bool(v.deterministic_warn_only)},
      {"torch.autocast.cpu.enabled", Bool(v.autocast_cpu)},
      {"torch.autocast.cpu.dtype", dtype(v.autocast_cpu_dtype)},
      {"torch.autocast.cuda.enabled", Bool(v.autocast_cuda)},
      {"torch.autocast.cuda.dtype", dtype(v.autocast_cuda_dtype)},
  };
}

}  // namespace magneton
