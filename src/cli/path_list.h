// Trace lists on the command line: "a1.mtrace,a2.mtrace" (match: one per
// model input; diff, gate: repeated recordings of one program).
#pragma once

#include <string>
#include <vector>

namespace magneton::cli {

// The non-empty comma-separated parts of `s`, in order.
std::vector<std::string> SplitCommas(const std::string& s);

}  // namespace magneton::cli
