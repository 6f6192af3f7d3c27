// Constructor-argument contrast: the region's costly ops ran inside module
// scopes (nn.Module forwards); how each of those modules was constructed is
// on its scope row (Scope::init_call_path_id / init_args, recorded by
// python/magneton/recorders/torch_module_origins.py). A module constructed
// with another argument on the other side — the scope at the same path, of
// the same class, anywhere in that trace (extra work has no region ops on
// the cheaper side) — is where the two programs chose differently, even
// though no op's call path passes the constructor's line:
// `DistributedDataParallel(model, find_unused_parameters=True)` makes every
// forward search the autograd graph from inside DDP's own code.
#include <algorithm>
#include <map>
#include <set>

#include "diagnose/diagnose.h"
#include "trace/op_args.h"

namespace magneton::diagnose {
namespace {

bool ValidScope(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.scopes.size(); }

// The innermost frame outside installed packages of a construction's call
// path (the user's line that constructed it, or called what did), else the
// innermost frame.
std::string UserFrameOf(const Trace& t, int64_t call_path_id) {
  const std::vector<std::string> frames = t.CallPathFrames(call_path_id);
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!IsLibraryFrame(ParseFrame(*it))) return *it;
  }
  return frames.empty() ? "" : frames.back();
}

std::string ValueText(const nlohmann::json& v) { return FormatOpArgs(nlohmann::json::array({v})); }

}  // namespace

std::vector<CallArgDifference> ContrastConstructorArgs(const Trace& a, const std::vector<int64_t>& ops_a,
                                                       const Trace& b, const std::vector<int64_t>& ops_b,
                                                       char costly_side) {
  const bool a_costly = costly_side != 'B';
  const Trace& costly = a_costly ? a : b;
  const Trace& cheap = a_costly ? b : a;
  const std::vector<int64_t>& costly_ops = a_costly ? ops_a : ops_b;

  // The costly side's scopes with an origin that enclose a region op, by the op time inside them.
  std::map<int64_t, int64_t> ns_in_scope;
  for (int64_t id : costly_ops) {
    if (id < 0 || static_cast<size_t>(id) >= costly.ops.size()) continue;
    const OpEvent& op = costly.ops[id];
    int guard = 0;
    for (int64_t s = op.scope_id; ValidScope(costly, s) && guard < 256; s = costly.scopes[s].parent_id, ++guard) {
      if (!costly.scopes[s].init_args.empty()) ns_in_scope[s] += op.end_ns - op.start_ns;
    }
  }
  if (ns_in_scope.empty()) return {};
  // The cheaper side's scopes with an origin, by path and class (the first of each).
  std::map<std::pair<std::string, std::string>, int64_t> cheap_by_path;
  for (const Scope& s : cheap.scopes) {
    if (s.init_args.empty()) continue;
    cheap_by_path.try_emplace({cheap.ScopePath(s.id), cheap.str(s.type_id)}, s.id);
  }

  struct Found {
    int64_t ns;
    size_t depth;
    CallArgDifference diff;
  };
  std::vector<Found> found;
  for (const auto& [scope_id, ns] : ns_in_scope) {
    const Scope& sc = costly.scopes[scope_id];
    const std::string path = costly.ScopePath(scope_id);
    auto other = cheap_by_path.find({path, costly.str(sc.type_id)});
    if (other == cheap_by_path.end()) continue;
    const Scope& so = cheap.scopes[other->second];
    auto args_costly = ParseOpArgs(sc.init_args);
    auto args_cheap = ParseOpArgs(so.init_args);
    if (!args_costly.ok() || !args_cheap.ok() || !args_costly->is_object() || !args_cheap->is_object()) continue;
    const nlohmann::json& args_a = a_costly ? *args_costly : *args_cheap;
    const nlohmann::json& args_b = a_costly ? *args_cheap : *args_costly;
    const std::string where = FileLine(UserFrameOf(costly, sc.init_call_path_id));
    const size_t depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
    // Only arguments both constructors have: another signature is another class version, not a choice.
    for (const auto& [name, va] : args_a.items()) {
      auto vb = args_b.find(name);
      if (vb == args_b.end()) continue;
      const std::string text_a = ValueText(va), text_b = ValueText(*vb);
      if (text_a == text_b) continue;
      found.push_back({ns, depth, {costly.str(sc.type_id), name, text_a, text_b, where}});
    }
  }
  // The scope holding the most of the region's op time first; then the
  // innermost (the module closest to the ops).
  std::stable_sort(found.begin(), found.end(), [](const Found& x, const Found& y) {
    if (x.ns != y.ns) return x.ns > y.ns;
    return x.depth > y.depth;
  });
  std::vector<CallArgDifference> out;
  for (Found& f : found) out.push_back(std::move(f.diff));
  return out;
}

}  // namespace magneton::diagnose
