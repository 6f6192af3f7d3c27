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
// One-time compilation: a compilation whose result the job reuses — paid
// once however long the job runs, so not the steady-state work a short
// recording stands for. A recorder marks compilation ops (docs/TRACE_FORMAT.md,
// "Op arguments"): "compile_kind" ("first": the first compilation of a
// function; "recompile": the same function compiled again) and, where it
// knows it, "executable": a key its runs carry too (JAX jit: each call). With
// an executable, its runs decide: run twice or more, it is reused (a
// recompilation for each step's new shapes runs once, and is the job's);
// without one, "first" is one-time and "recompile" (torch.compile: Dynamo's
// guard failed, so this frame compiles again as the job goes on) is the job's.
// Each phase is still matched and diffed, as regions of its own.
#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "detect/detect.h"

namespace magneton::detect {
namespace {

// The parsed args of an op naming `key`, or null (most ops' args never name
// it: the substring test keeps parsing off them).
nlohmann::json ArgsNaming(const OpEvent& op, const char* key) {
  if (op.args.find(key) == std::string::npos) return nullptr;
  nlohmann::json args = nlohmann::json::parse(op.args.str(), nullptr, /*allow_exceptions=*/false);
  return args.is_object() ? args : nlohmann::json(nullptr);
}

// One-time compilations among the ops, before nesting is applied.
std::vector<char> OneTimeCompilations(const Trace& trace) {
  std::vector<char> out(trace.ops.size(), 0);
  std::unordered_map<std::string, int> runs_of;  // executable -> ops that ran it
  std::vector<std::pair<size_t, nlohmann::json>> compiles;
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    nlohmann::json args = ArgsNaming(trace.ops[i], "\"compile_kind\"");
    if (args.is_object() && args.contains("compile_kind")) {
      compiles.emplace_back(i, std::move(args));
      continue;
    }
    nlohmann::json run = ArgsNaming(trace.ops[i], "\"executable\"");
    if (run.is_object() && run.contains("executable")) ++runs_of[run["executable"].dump()];
  }
  for (const auto& [i, args] : compiles) {
    auto exe = args.find("executable");
    if (exe != args.end()) {
      auto it = runs_of.find(exe->dump());
      out[i] = it != runs_of.end() && it->second >= 2;
    } else {
      const auto& kind = args["compile_kind"];
      out[i] = kind.is_string() && kind.get<std::string>() == "first";
    }
  }
  return out;
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
  const std::vector<char> compiled_once = OneTimeCompilations(trace);
  p.one_time.assign(trace.ops.size(), 0);
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    bool mark = compiled_once[i] != 0;
    const int64_t parent = trace.ops[i].parent_id;
    if (!mark && parent >= 0 && static_cast<size_t>(parent) < trace.ops.size()) {
      mark = static_cast<size_t>(parent) < i ? p.one_time[parent] != 0 : compiled_once[parent] != 0;
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

std::vector<int64_t> PhaseOps(const Trace& trace, std::span<const int64_t> ops, const PhaseBounds& bounds,
                              Phase phase) {
  std::vector<int64_t> out;
  for (int64_t id : ops) {
    if (PhaseOf(trace, bounds, id) == phase) out.push_back(id);
  }
  return out;
}

}  // namespace magneton::detect
