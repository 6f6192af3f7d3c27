// Stable spellings used by every report (JSON schema values, docs/REPORT_FORMAT.md).
#include "detect/detect.h"

namespace magneton::detect {

const char* RegionKindName(RegionKind kind) {
  switch (kind) {
    case RegionKind::kMatched: return "matched";
    case RegionKind::kOutsideOps: return "outside_ops";
    case RegionKind::kUnmatched: return "unmatched";
    case RegionKind::kDeviceIdle: return "device_idle";
  }
  return "?";
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kWaste: return "waste";
    case Verdict::kTradeOff: return "trade_off";
    case Verdict::kInconclusive: return "inconclusive";
    case Verdict::kEqual: return "equal";
  }
  return "?";
}

}  // namespace magneton::detect
