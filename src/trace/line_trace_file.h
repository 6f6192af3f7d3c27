// The line trace of one re-run (docs/DIFF.md): a small JSON side file
// (schema magneton.linetrace/1) written once at the traced program's exit by
// the Python hook through _core.write_line_trace, read by `magneton diff`'s
// line-level diagnosis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/status.h"

namespace magneton {

struct LineTraceTarget {
  std::string file;
  std::string function;  // co_qualname, as in call-path frames
  int64_t line = 0;      // a line inside the function (the recorded frame's)
};
struct WatchedValue {
  size_t event = 0;  // index into LineCall::lines: the value before that line ran
  std::string expr;
  std::string value;  // short repr; "<unbound>" when the name was not bound
};
struct LineCall {
  int target = 0;
  std::vector<int64_t> lines;  // executed line numbers, in order
  std::vector<WatchedValue> values;
};
struct LineTrace {
  std::vector<LineTraceTarget> targets;
  std::vector<LineCall> calls;  // in call order
};
Status WriteLineTrace(const std::string& path, const LineTrace& trace);
StatusOr<LineTrace> ReadLineTrace(const std::string& path);
}  // namespace magneton
