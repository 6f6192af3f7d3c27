// Config snapshot diff: the flags, env vars, model config fields and call
// arguments that differ between the two runs (candidate root causes).
#include <algorithm>
#include <map>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {

namespace {

// The flags of a framework ("jax.", "torch.") that only one run imported
// (JAX vs PyTorch) are that framework, not a setting the other run chose.
bool OtherRunLacksFramework(const std::string& key, const std::map<std::string, const ConfigEntry*>& other) {
  for (const char* prefix : {"jax.", "torch."}) {
    const std::string p(prefix);
    if (key.rfind(p, 0) != 0) continue;
    auto it = other.lower_bound(p);
    return it == other.end() || it->first.rfind(p, 0) != 0;
  }
  return false;
}

}  // namespace

std::vector<ConfigDifference> DiffConfig(const Trace& a, const Trace& b) {
  constexpr const char* kAbsent = "<absent>";
  std::map<std::string, const ConfigEntry*> ca, cb;
  for (const ConfigEntry& e : a.config) ca[e.key] = &e;  // last write wins, as in the recorder
  for (const ConfigEntry& e : b.config) cb[e.key] = &e;
  std::vector<ConfigDifference> out;
  for (const auto& [key, ea] : ca) {
    auto it = cb.find(key);
    if (it == cb.end()) {
      if (OtherRunLacksFramework(key, cb)) continue;
      out.push_back({key, ea->value, kAbsent, ea->source});
    } else if (it->second->value != ea->value) {
      out.push_back({key, ea->value, it->second->value, ea->source});
    }
  }
  for (const auto& [key, eb] : cb) {
    if (!ca.count(key) && !OtherRunLacksFramework(key, ca)) out.push_back({key, kAbsent, eb->value, eb->source});
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.key < y.key; });
  return out;
}

}  // namespace magneton::diagnose
