// Rendering of a MatchResult for `magneton match`: side-by-side text and a
// machine-readable JSON document (for tests and scripts).
#pragma once

#include <string>

#include "match/match.h"
#include "magneton/trace.h"

namespace magneton::report {

std::string MatchText(const Trace& a, const Trace& b, const std::string& label_a, const std::string& label_b,
                      double epsilon, size_t inputs, const MatchResult& r);
std::string MatchJson(const Trace& a, const Trace& b, const std::string& label_a, const std::string& label_b,
                      double epsilon, size_t inputs, const MatchResult& r);

}  // namespace magneton::report
