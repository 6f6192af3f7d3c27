// The program's set-up, apart from its job (docs/DIFF.md, "Set-up"). Model
// construction, weight initialisation and input preparation run before the
// first forward pass; a user asks about the forward pass, and a region that
// starts in `Parameter.__new__` and ends in the decode loop answers neither
// question. The rule is one line: an op is set-up when it starts before the
// first op that runs inside a module scope (an nn.Module's forward, a JAX
// named scope, an ONNX node scope). A program without module scopes has no
// set-up. Set-up work is still matched and diffed, as regions of its own.
#include <algorithm>
#include <limits>

#include "detect/detect.h"

namespace magneton::detect {

int64_t SetupEndNs(const Trace& trace) {
  int64_t first_scoped_ns = std::numeric_limits<int64_t>::max();
  for (const OpEvent& op : trace.ops) {
    if (op.scope_id >= 0 && static_cast<size_t>(op.scope_id) < trace.scopes.size()) {
      first_scoped_ns = std::min(first_scoped_ns, op.start_ns);
    }
  }
  return first_scoped_ns == std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::min()
                                                                 : first_scoped_ns;
}

std::vector<int64_t> SetupOps(const Trace& trace, const std::vector<int64_t>& ops, int64_t setup_end_ns, bool setup) {
  std::vector<int64_t> out;
  for (int64_t id : ops) {
    const bool in_setup =
        id >= 0 && static_cast<size_t>(id) < trace.ops.size() && trace.ops[id].start_ns < setup_end_ns;
    if (in_setup == setup) out.push_back(id);
  }
  return out;
}

}  // namespace magneton::detect
