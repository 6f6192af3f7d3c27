// Stable spellings used by every report (JSON schema values, docs/REPORT_FORMAT.md).
#include <fmt/format.h>

#include "magneton/detect.h"

namespace magneton::detect {

const char* RegionKindName(RegionKind kind) {
  switch (kind) {
    case RegionKind::kMatched: return "matched";
    case RegionKind::kOutsideOps: return "outside_ops";
    case RegionKind::kUnmatched: return "unmatched";
  }
  return "?";
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kWaste: return "waste";
    case Verdict::kTradeOff: return "trade_off";
    case Verdict::kEqual: return "equal";
  }
  return "?";
}

const char* ProvenanceName(Provenance provenance) {
  return provenance == Provenance::kMeasured ? "measured" : "estimated";
}

}  // namespace magneton::detect

namespace magneton::detect {

std::string FormatEnergy(double energy_uj, Provenance provenance) {
  const double abs_uj = energy_uj < 0 ? -energy_uj : energy_uj;
  std::string number = abs_uj >= 1e6   ? fmt::format("{:.3g} J", energy_uj / 1e6)
                       : abs_uj >= 1e3 ? fmt::format("{:.3g} mJ", energy_uj / 1e3)
                                       : fmt::format("{:.3g} µJ", energy_uj);
  return number + " (" + ProvenanceName(provenance) + ")";
}

std::string FormatDuration(int64_t duration_ns) {
  const double ns = static_cast<double>(duration_ns);
  if (ns >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3g} µs", ns / 1e3);
  return fmt::format("{} ns", duration_ns);
}

}  // namespace magneton::detect
