// The program's phases, apart from its job (docs/DIFF.md, "Set-up" and
// "One-time compilation").
//
// Set-up: model construction, weight initialisation and input preparation
// run before the first forward pass; a user asks about the forward pass, and a
// region that starts in `Parameter.__new__` and ends in the decode loop answers
// neither question. The rule is one line: an op is set-up when it starts
// before the first op that runs inside a module scope (an nn.Module's forward,
// a JAX named scope, an ONNX node scope). A program without module scopes has
// no set-up.
//
// One-time compilation: the first compilation of each compiled function
// (torch.compile's Dynamo + Inductor, a JAX jit executable), which a recorder
// marks with the op argument "compile_kind": "first" (docs/TRACE_FORMAT.md,
// "Op arguments"). It is paid once per program however long the job runs, so
// it is not the steady-state work a short recording stands for; a
// recompilation ("compile_kind": "recompile": the same function compiled again
// for other shapes or guards) is paid again as the job runs and stays job.
//
// Each phase is still matched and diffed, as regions of its own.
#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "detect/detect.h"

namespace magneton::detect {
namespace {

bool MarkedFirstCompile(const OpEvent& op) {
  // Most ops' args never name it: the substring test keeps parsing off them.
  if (op.args.find("\"compile_kind\"") == std::string::npos) return false;
  const nlohmann::json args = nlohmann::json::parse(op.args, nullptr, /*allow_exceptions=*/false);
  if (!args.is_object()) return false;
  auto it = args.find("compile_kind");
  return it != args.end() && it->is_string() && it->get<std::string>() == "first";
}

}  // namespace

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

PhaseBounds PhasesOf(const Trace& trace) {
  PhaseBounds p;
  p.setup_end_ns = SetupEndNs(trace);
  // An op nested in a first compilation is part of it. Parents begin first,
  // so a parent's flag is known before its children's; a parent id out of
  // that order (a damaged trace, even a loop) is judged by its own args only.
  p.one_time.assign(trace.ops.size(), 0);
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const OpEvent& op = trace.ops[i];
    bool mark = MarkedFirstCompile(op);
    const int64_t parent = op.parent_id;
    if (!mark && parent >= 0 && static_cast<size_t>(parent) < trace.ops.size()) {
      mark = static_cast<size_t>(parent) < i ? p.one_time[parent] != 0 : MarkedFirstCompile(trace.ops[parent]);
    }
    p.one_time[i] = mark ? 1 : 0;
  }
  return p;
}

Phase PhaseOf(const Trace& trace, const PhaseBounds& bounds, int64_t op_id) {
  if (op_id < 0 || static_cast<size_t>(op_id) >= trace.ops.size()) return Phase::kJob;
  if (static_cast<size_t>(op_id) < bounds.one_time.size() && bounds.one_time[op_id]) return Phase::kOneTime;
  return trace.ops[op_id].start_ns < bounds.setup_end_ns ? Phase::kSetup : Phase::kJob;
}

std::vector<int64_t> PhaseOps(const Trace& trace, const std::vector<int64_t>& ops, const PhaseBounds& bounds,
                              Phase phase) {
  std::vector<int64_t> out;
  for (int64_t id : ops) {
    if (PhaseOf(trace, bounds, id) == phase) out.push_back(id);
  }
  return out;
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
