// The one name table of RootCauseKind, and CauseStrength's.
#include "diagnose/root_cause_kind.h"

#include <ostream>
#include <utility>

namespace magneton::diagnose {
namespace {

// The report format's names, in the order docs/REPORT_FORMAT.md lists them.
constexpr std::pair<RootCauseKind, const char*> kNames[] = {
    {RootCauseKind::kConfig, "config"},
    {RootCauseKind::kCallArg, "call_arg"},
    {RootCauseKind::kEnvVar, "env_var"},
    {RootCauseKind::kRuntimeState, "runtime_state"},
    {RootCauseKind::kApiChoice, "api_choice"},
    {RootCauseKind::kDtypeLayout, "dtype_layout"},
    {RootCauseKind::kDataShape, "data_shape"},
    {RootCauseKind::kCodePath, "code_path"},
    {RootCauseKind::kVersion, "version"},
};

constexpr std::pair<CauseStrength, const char*> kStrengthNames[] = {
    {CauseStrength::kDirect, "direct"},
    {CauseStrength::kLineTrace, "line_trace"},
    {CauseStrength::kNamedAtDeviation, "deviation_point"},
    {CauseStrength::kIssuingPath, "issuing_path"},
    {CauseStrength::kOpContrast, "op_contrast"},
    {CauseStrength::kOpSequence, "op_sequence"},
    {CauseStrength::kReachesEveryOp, "reaches_every_op"},
};

}  // namespace

const char* RootCauseKindName(RootCauseKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "";
}

StatusOr<RootCauseKind> ParseRootCauseKind(const std::string& name) {
  for (const auto& [k, n] : kNames) {
    if (name == n) return k;
  }
  return InvalidArgument("unknown root cause kind \"" + name + "\" (one of " + RootCauseKindList() + ")");
}

const std::vector<RootCauseKind>& AllRootCauseKinds() {
  static const std::vector<RootCauseKind> kAll = [] {
    std::vector<RootCauseKind> out;
    for (const auto& [k, name] : kNames) out.push_back(k);
    return out;
  }();
  return kAll;
}

std::string RootCauseKindList() {
  std::string out;
  const size_t n = std::size(kNames);
  for (size_t i = 0; i < n; ++i) {
    out += i == 0 ? "" : i + 1 == n ? " or " : ", ";
    out += kNames[i].second;
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, RootCauseKind kind) {
  const char* name = RootCauseKindName(kind);
  return os << (*name ? name : "<none>");
}

const char* CauseStrengthName(CauseStrength strength) {
  for (const auto& [s, name] : kStrengthNames) {
    if (s == strength) return name;
  }
  return "";
}

std::ostream& operator<<(std::ostream& os, CauseStrength strength) {
  const char* name = CauseStrengthName(strength);
  return os << (*name ? name : "<none>");
}

}  // namespace magneton::diagnose
