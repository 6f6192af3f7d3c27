// What `magneton diff --confirm` may flip (docs/DIFF.md, "--confirm"): the
// variable and the value both come from traces, so only what can be validated
// is set — an environment variable from an allowlist of documented
// performance knobs with a typed value, a torch/JAX flag through a known
// setter, a literal keyword argument or model config field. Everything else
// is printed for the user to run. python/magneton/overrides.py checks the same
// again in the re-run (defense in depth: MAGNETON_OVERRIDES is trace data).
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::diagnose {

// The type an allowlisted environment knob's value must have, or kNone when
// `name` is not an allowlisted knob.
enum class EnvValueType { kNone, kBool, kCount, kWord, kCpuList };
EnvValueType AllowedEnvKnob(const std::string& name);

// Ok when `value` is a value of that type: kBool 0/1/true/false (any case),
// kCount a decimal count below 10^12 (or "infinite" where the knob takes
// it), kWord one identifier-like word of letters, digits and '_' (an enum like
// ACTIVE, AVX512_CORE), kCpuList letters, digits and ",=:._+" (KMP_AFFINITY's
// "granularity=fine,compact,1,0", CUBLAS_WORKSPACE_CONFIG's ":4096:8"). "" is
// allowed for all (the knob unset in effect). Never a path, URL, space, quote
// or shell character.
Status CheckEnvValue(const std::string& name, EnvValueType type, const std::string& value);

// Ok when --confirm may set config key `key` (source `source`) to `value`
// with the wasteful run's value `old_value`; otherwise FailedPrecondition
// saying why ("... is not an allowlisted performance knob", ...).
Status ValidateFlip(const std::string& key, const std::string& source, const std::string& old_value,
                    const std::string& value);

}  // namespace magneton::diagnose
