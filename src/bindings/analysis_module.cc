// magneton._analysis: the Python edge of the analysis stages, for notebooks
// and scripts. Never imported by a traced process (which loads only
// magneton._core). No logic of its own.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "magneton/trace_reader.h"
#include "report/summary.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

void ThrowIfError(const magneton::Status& st) {
  if (st.ok()) return;
  switch (st.code()) {
    case magneton::StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, st.message().c_str());
      throw nb::python_error();
    case magneton::StatusCode::kInvalidArgument:
      throw nb::value_error(st.message().c_str());
    default:
      throw std::runtime_error(st.message());
  }
}

}  // namespace

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
