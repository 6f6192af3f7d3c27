// `magneton show`: a plain-text summary of one trace.
#pragma once

#include <string>

#include "magneton/trace.h"

namespace magneton {

struct OpStats {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;  // inclusive of nested ops
  int64_t self_ns = 0;   // exclusive of nested ops
};

// Per op name, sorted by self time, largest first.
std::vector<OpStats> OpStatsByName(const Trace& trace);

std::string FormatSummary(const Trace& trace, int top);

// Per energy domain: total, attributed to ops, outside ops, and the top ops
// by exclusive energy, each labelled MEASURED or ESTIMATED.
std::string FormatEnergySummary(const Trace& trace, int top);

}  // namespace magneton
