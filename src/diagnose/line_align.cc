// The first line where two runs of one function part ways. Calls are
// aligned in order (generate calls a model's forward once per step, the same
// number of times on both sides until they diverge).
#include <algorithm>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {

LineDivergence FirstDifferingLine(const std::vector<const LineCall*>& a, const std::vector<const LineCall*>& b) {
  LineDivergence d;
  d.calls_a = a.size();
  d.calls_b = b.size();
  const size_t n = std::min(a.size(), b.size());
  for (size_t c = 0; c < n; ++c) {
    const std::vector<int64_t>& la = a[c]->lines;
    const std::vector<int64_t>& lb = b[c]->lines;
    const size_t m = std::min(la.size(), lb.size());
    size_t k = 0;
    while (k < m && la[k] == lb[k]) ++k;
    if (k == la.size() && k == lb.size()) continue;  // this call ran the same lines
    d.found = true;
    d.call = c;
    d.event = k;
    d.line_a = k < la.size() ? la[k] : -1;
    d.line_b = k < lb.size() ? lb[k] : -1;
    d.branch_line = k > 0 ? la[k - 1] : 0;
    return d;
  }
  return d;  // same lines in every call both ran (the call counts may differ)
}

}  // namespace magneton::diagnose
