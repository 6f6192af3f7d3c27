// Windows of equal step counts (docs/DIFF.md, "Windows"): two recordings made
// with `--window` or `magneton.step()` mark each recorded step's end with a
// `magneton::step` op. When one side holds more recorded steps than the
// other, the diff compares the first N of each, N the smaller count: a
// 5-step window against a 3-step one would otherwise report two steps of
// work as waste.
#pragma once

#include <cstdint>
#include <string>

#include "fingerprint/fingerprint_map.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// How many recorded steps the trace marks (its `magneton::step` ops).
int64_t RecordedSteps(const Trace& trace);
// Drops every op that began after the end of recorded step `steps` (ops are
// in start order: a suffix), the links to them, and the fingerprints of
// values only they touched. Returns how many ops it dropped.
size_t KeepRecordedSteps(Trace& trace, FingerprintMap& fingerprints, int64_t steps);
// Trims the side with more recorded steps to the other's count, when both are
// windowed recordings (meta window.configured); "" when it did nothing, else
// what it did, for the report.
std::string EqualizeSteps(Trace& a, FingerprintMap& fa, Trace& b, FingerprintMap& fb);

}  // namespace magneton::analysis
