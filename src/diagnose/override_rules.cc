#include "diagnose/override_rules.h"

#include <map>
#include <regex>

namespace magneton::diagnose {
namespace {

// Documented performance knobs of thread pools, OpenMP/BLAS/oneDNN, the
// framework dispatch and CUDA math libraries: each changes how fast the same
// work runs, none names a file, a library or code. Free-text knobs (XLA_FLAGS,
// PYTORCH_CUDA_ALLOC_CONF) and every path-valued one (TORCHINDUCTOR_CACHE_DIR,
// HOME, CC, GCONV_PATH, OPENSSL_CONF, ...) are left out on purpose.
const std::map<std::string, EnvValueType>& Knobs() {
  static const auto* knobs = new std::map<std::string, EnvValueType>{
      {"OMP_NUM_THREADS", EnvValueType::kCount},
      {"MKL_NUM_THREADS", EnvValueType::kCount},
      {"OPENBLAS_NUM_THREADS", EnvValueType::kCount},
      {"VECLIB_MAXIMUM_THREADS", EnvValueType::kCount},
      {"NUMEXPR_NUM_THREADS", EnvValueType::kCount},
      {"OMP_THREAD_LIMIT", EnvValueType::kCount},
      {"OMP_MAX_ACTIVE_LEVELS", EnvValueType::kCount},
      {"GOMP_SPINCOUNT", EnvValueType::kCount},
      {"KMP_BLOCKTIME", EnvValueType::kCount},
      {"OMP_DYNAMIC", EnvValueType::kBool},
      {"MKL_DYNAMIC", EnvValueType::kBool},
      {"OMP_PROC_BIND", EnvValueType::kWord},
      {"OMP_WAIT_POLICY", EnvValueType::kWord},
      {"MKL_THREADING_LAYER", EnvValueType::kWord},
      {"MKL_ENABLE_INSTRUCTIONS", EnvValueType::kWord},
      {"ONEDNN_MAX_CPU_ISA", EnvValueType::kWord},
      {"DNNL_MAX_CPU_ISA", EnvValueType::kWord},
      {"ATEN_CPU_CAPABILITY", EnvValueType::kWord},
      {"KMP_AFFINITY", EnvValueType::kCpuList},
      {"OMP_PLACES", EnvValueType::kWord},
      {"TF_ENABLE_ONEDNN_OPTS", EnvValueType::kBool},
      {"TOKENIZERS_PARALLELISM", EnvValueType::kBool},
      {"NVIDIA_TF32_OVERRIDE", EnvValueType::kBool},
      {"CUDA_LAUNCH_BLOCKING", EnvValueType::kBool},
      {"CUDA_MODULE_LOADING", EnvValueType::kWord},
      {"CUBLAS_WORKSPACE_CONFIG", EnvValueType::kCpuList},
      {"CUBLASLT_ALLOW_TF32", EnvValueType::kBool},
      {"TORCH_CUDNN_V8_API_ENABLED", EnvValueType::kBool},
      {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", EnvValueType::kBool},
  };
  return *knobs;
}

bool Matches(const std::string& s, const char* pattern) { return std::regex_match(s, std::regex(pattern)); }

// A literal a keyword argument or config field may take: a truth value,
// None, a number, or one short identifier-like word (quoted as repr stores
// it, or bare). Never a container, a call, a path.
bool IsSimpleLiteral(const std::string& v) {
  return Matches(v, "True|False|None|-?[0-9]{1,18}|-?[0-9]{1,18}\\.[0-9]{0,18}(e-?[0-9]{1,3})?|"
                    "'[A-Za-z_][A-Za-z0-9_.-]{0,63}'|\"[A-Za-z_][A-Za-z0-9_.-]{0,63}\"|[A-Za-z_][A-Za-z0-9_.-]{0,63}");
}

// torch getters snapshot records (python/magneton/config_snapshot.py) that
// have a setter the override hook calls: the only non-torch.backends torch
// keys --confirm flips.
bool KnownTorchGetter(const std::string& key) {
  for (const char* k : {"torch.get_num_threads", "torch.get_num_interop_threads", "torch.get_float32_matmul_precision",
                        "torch.is_grad_enabled", "torch.get_default_dtype", "torch.are_deterministic_algorithms_enabled",
                        "torch.backends.cuda.flash_sdp_enabled", "torch.backends.cuda.mem_efficient_sdp_enabled",
                        "torch.backends.cuda.math_sdp_enabled"}) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace

EnvValueType AllowedEnvKnob(const std::string& name) {
  auto it = Knobs().find(name);
  if (it != Knobs().end()) return it->second;
  // TORCH_<...>_ENABLE(D) / _DISABLE(D): boolean framework switches.
  if (Matches(name, "TORCH_[A-Z0-9_]+_(ENABLE|ENABLED|DISABLE|DISABLED)")) return EnvValueType::kBool;
  return EnvValueType::kNone;
}

Status CheckEnvValue(const std::string& name, EnvValueType type, const std::string& value) {
  if (value.empty()) return Status::Ok();
  bool ok = false;
  const char* what = "";
  switch (type) {
    case EnvValueType::kNone:
      return FailedPrecondition(name + " is not an allowlisted performance knob");
    case EnvValueType::kBool:
      ok = Matches(value, "0|1|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]");
      what = "0, 1, true or false";
      break;
    case EnvValueType::kCount:
      ok = Matches(value, "[0-9]{1,12}|[Ii][Nn][Ff][Ii][Nn][Ii][Tt][Ee]");
      what = "a count";
      break;
    case EnvValueType::kWord:
      ok = Matches(value, "[A-Za-z0-9_]{1,32}");
      what = "one word of letters, digits and '_'";
      break;
    case EnvValueType::kCpuList:
      ok = Matches(value, "[A-Za-z0-9_,=:.+]{1,64}");
      what = "letters, digits and ,=:._+";
      break;
  }
  if (ok) return Status::Ok();
  return FailedPrecondition("the value for " + name + " is not " + what);
}

Status ValidateFlip(const std::string& key, const std::string& source, const std::string& old_value,
                    const std::string& value) {
  if (source == "env" || key.rfind("env.", 0) == 0) {
    if (key.rfind("env.", 0) != 0) return FailedPrecondition(key + " is not an environment key");
    const std::string name = key.substr(4);
    const EnvValueType type = AllowedEnvKnob(name);
    if (type == EnvValueType::kNone) {
      return FailedPrecondition(name + " is not an allowlisted performance knob (docs/DIFF.md, \"--confirm\")");
    }
    return CheckEnvValue(name, type, value);
  }
  const bool literal = IsSimpleLiteral(value);
  if (key.rfind("call.", 0) == 0) {
    if (!Matches(key, "call\\.[A-Za-z_][A-Za-z0-9_.]{0,127}\\.[A-Za-z_][A-Za-z0-9_]{0,63}")) {
      return FailedPrecondition(key + " is not a keyword argument of a recorded call");
    }
    if (!literal) return FailedPrecondition("the value for " + key + " is not a plain literal");
    return Status::Ok();
  }
  if (key.rfind("model_config.", 0) == 0) {
    if (!Matches(key, "model_config\\.[A-Za-z_][A-Za-z0-9_]{0,127}\\.[A-Za-z_][A-Za-z0-9_]{0,63}")) {
      return FailedPrecondition(key + " is not a field of a recorded model config");
    }
    if (old_value == "<absent>") return FailedPrecondition(key + " is not a field the wasteful run's config has");
    if (!literal) return FailedPrecondition("the value for " + key + " is not a plain literal");
    return Status::Ok();
  }
  if (key.rfind("torch.", 0) == 0 || key.rfind("jax.", 0) == 0) {
    const bool known = KnownTorchGetter(key) ||
                       Matches(key, "torch\\.backends(\\.[a-z_][a-z0-9_]{0,63}){2,4}") ||
                       Matches(key, "jax\\.config\\.jax_[a-z0-9_]{1,63}");
    if (!known) return FailedPrecondition(key + " is not a flag with a known setter (torch.backends.*, torch.set_*)");
    if (!literal) return FailedPrecondition("the value for " + key + " is not a plain literal");
    return Status::Ok();
  }
  return FailedPrecondition(key + " (" + source + ") is not something --confirm can set: not an allowlisted "
                            "environment knob, a flag with a known setter, a call's keyword argument or a model "
                            "config field");
}

}  // namespace magneton::diagnose
