// magneton._analysis: the Python edge of the analysis stages, for notebooks
// and scripts. Never imported by a traced process (which loads only
// magneton._core). No logic of its own.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings/status_exception.h"
#include "magneton/trace_reader.h"
#include "report/summary.h"

namespace nb = nanobind;
using namespace nb::literals;

using magneton::ThrowIfError;

NB_MODULE(_analysis, m) {
  m.doc() = "Magneton's analysis (trace summaries and diffs)";
  m.def("summarize", [](const std::string& path, int top) {
    auto trace = magneton::ReadTrace(path);
    ThrowIfError(trace.status());
    return magneton::FormatSummary(*trace, top);
  }, "path"_a, "top"_a = 15, "The text of `magneton show`.");
  m.def("validate", [](const std::string& path) {
    auto trace = magneton::ReadTrace(path);
    ThrowIfError(trace.status());
    return trace->ops.size();
  }, "path"_a, "Reads and validates a trace; returns its op count or raises.");
}
