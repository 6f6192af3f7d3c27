// Region names (docs/DIFF.md, "Region names"). A region's first op
// ("aten::empty.memory_format") says nothing about what it is; the module
// scopes and call paths the recorder keeps for every op do. The name is the
// deepest module scope the region's ops share, with the indices that vary
// over its occurrences collapsed (h.0 … h.3 -> h.{0..3}); without one, the
// user's line that issued most of its ops and the library function it
// called; without that, the first op.
#include "diagnose/region_name.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <vector>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

using detect::Finding;

// Scans at most this many occurrences: names settle long before, and a
// decode loop can have thousands.
constexpr size_t kMaxInstances = 64;
// A scope names a region only when it holds most of its ops; the rest
// (ops issued between module calls) do not change what the region is.
constexpr double kMinScopedShare = 0.8;
constexpr std::string_view kWholeModel = " (whole model)";

bool ValidOp(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.ops.size(); }
bool ValidScope(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.scopes.size(); }

// Root first.
std::vector<int64_t> ScopeChain(const Trace& t, int64_t scope_id) {
  std::vector<int64_t> chain;
  for (int64_t id = scope_id; ValidScope(t, id) && chain.size() < 256; id = t.scopes[id].parent_id) chain.push_back(id);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

// The deepest scope chain that the ops holding most of the region's time
// share, or nothing. By time, not count: a decode loop's many small ops
// issued by generate() itself (argmax, cat) do not make it less the model's.
std::optional<std::vector<int64_t>> CommonScope(const Trace& t, std::span<const int64_t> ops) {
  std::optional<std::vector<int64_t>> common;
  double total = 0, scoped = 0;
  for (int64_t id : ops) {
    if (!ValidOp(t, id)) continue;
    const OpEvent& op = t.ops[id];
    // Each op counts at least 1 ns, so a trace without times counts ops.
    const double weight = static_cast<double>(std::max<int64_t>(1, op.end_ns - op.start_ns));
    total += weight;
    const int64_t scope = op.scope_id;
    if (!ValidScope(t, scope)) continue;
    scoped += weight;
    std::vector<int64_t> chain = ScopeChain(t, scope);
    if (!common) {
      common = std::move(chain);
      continue;
    }
    size_t depth = 0;
    while (depth < common->size() && depth < chain.size() && (*common)[depth] == chain[depth]) ++depth;
    common->resize(depth);
  }
  if (!common || common->empty() || scoped < kMinScopedShare * total) {
    return std::nullopt;
  }
  return common;
}

// "h.3" -> ("h.", 3); names without a trailing index give nothing.
std::optional<std::pair<std::string, long>> Indexed(const std::string& name) {
  size_t digits = name.size();
  while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
  if (digits == name.size() || name.size() - digits > 9) return std::nullopt;
  return std::make_pair(name.substr(0, digits), std::stol(name.substr(digits)));
}

// {0, 1, 2, 3} -> "{0..3}"; {0, 2, 5} -> "{0,2,5}"; long gapped sets elided.
std::string IndexSet(const std::set<long>& v) {
  if (*v.rbegin() - *v.begin() + 1 == static_cast<long>(v.size())) return fmt::format("{{{}..{}}}", *v.begin(), *v.rbegin());
  std::string out = "{";
  size_t n = 0;
  for (long x : v) {
    if (n == 4) {
      out += ",…";
      break;
    }
    out += (n++ ? "," : "") + std::to_string(x);
  }
  return out + "}";
}

// One component over all occurrences: the same name, a collapsed index, or "*".
std::string MergeNames(const std::vector<std::string>& names) {
  const std::set<std::string> distinct(names.begin(), names.end());
  if (distinct.size() == 1) return *distinct.begin();
  std::string prefix;
  std::set<long> indices;
  for (const std::string& n : distinct) {
    auto idx = Indexed(n);
    if (!idx || (!indices.empty() && idx->first != prefix)) return "*";
    prefix = idx->first;
    indices.insert(idx->second);
  }
  return prefix + IndexSet(indices);
}

// The module-scope name of one side's occurrences, or "".
std::string ScopeName(const Trace& t, const Finding& f, bool side_a) {
  std::vector<std::vector<int64_t>> chains;
  for (size_t i = 0; i < f.instances.size() && i < kMaxInstances; ++i) {
    const auto& ops = side_a ? f.instances[i].ops_a : f.instances[i].ops_b;
    if (ops.empty()) continue;
    auto chain = CommonScope(t, ops);
    if (!chain) return "";  // an occurrence with no common scope: the region is not one module's
    chains.push_back(std::move(*chain));
  }
  if (chains.empty()) return "";
  // The depth at which every occurrence is still the same kind of module.
  size_t depth = chains.front().size();
  for (const auto& c : chains) depth = std::min(depth, c.size());
  for (size_t d = 0; d < depth; ++d) {
    for (const auto& c : chains) {
      if (t.scopes[c[d]].type_id != t.scopes[chains.front()[d]].type_id) {
        depth = d;
        break;
      }
    }
  }
  if (depth == 0) return "";
  const std::string& leaf_type = t.str(t.scopes[chains.front()[depth - 1]].type_id);
  // The root is the model itself; its attribute name is its class.
  if (depth == 1) return leaf_type + std::string(kWholeModel);
  std::string path;
  for (size_t d = 1; d < depth; ++d) {
    std::vector<std::string> names;
    for (const auto& c : chains) names.push_back(t.str(t.scopes[c[d]].name_id));
    path += (path.empty() ? "" : ".") + MergeNames(names);
  }
  return fmt::format("{} ({})", path, leaf_type);
}

// "gen.py:13 → GenerationMixin.generate": the user's line that issued most of
// one side's ops, and the library function it called; "" without a user line.
std::string SourceName(const Trace& t, const Finding& f, bool side_a) {
  // Per (line, api): the ops' time, then their count. The line with the
  // region's time names it, as in TopParts: by count alone, the line issuing
  // six cheap normalize ops named a region whose time is one cdist's.
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, size_t>> weight;
  std::map<int64_t, std::vector<std::string>> paths;
  for (size_t i = 0; i < f.instances.size() && i < kMaxInstances; ++i) {
    for (int64_t id : side_a ? f.instances[i].ops_a : f.instances[i].ops_b) {
      if (!ValidOp(t, id)) continue;
      const int64_t path_id = t.ops[id].call_path_id;
      auto it = paths.find(path_id);
      if (it == paths.end()) it = paths.emplace(path_id, t.CallPathFrames(path_id)).first;
      const auto& frames = it->second;
      for (auto f_it = frames.rbegin(); f_it != frames.rend(); ++f_it) {
        const FrameRef frame = ParseFrame(*f_it);
        if (IsLibraryFrame(frame)) continue;
        std::string api;
        for (auto in = f_it; in != frames.rbegin();) {
          --in;
          const FrameRef inner = ParseFrame(*in);
          api = inner.function;
          if (!IsPassThroughFrame(inner)) break;
        }
        auto& w = weight[{FileLine(*f_it), api}];
        w.first += std::max<int64_t>(0, t.ops[id].end_ns - t.ops[id].start_ns);
        ++w.second;
        break;
      }
    }
  }
  if (weight.empty()) return "";
  auto best =
      std::max_element(weight.begin(), weight.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  const auto& [line, api] = best->first;
  return ShortPath(line) + (api.empty() ? "" : " → " + api);
}

// "transformer.h.0.attn (GPT2Attention)" of one scope; "" for none.
std::string ScopeLabel(const Trace& t, int64_t scope_id) {
  const std::vector<int64_t> chain = ScopeChain(t, scope_id);
  if (chain.empty()) return "";
  const std::string& type = t.str(t.scopes[chain.back()].type_id);
  if (chain.size() == 1) return type + std::string(kWholeModel);
  std::string path;
  for (size_t d = 1; d < chain.size(); ++d) path += (path.empty() ? "" : ".") + t.str(t.scopes[chain[d]].name_id);
  return fmt::format("{} ({})", path, type);
}

// The user's line that issued op `id` ("" when every frame is library code).
std::string UserLine(const Trace& t, int64_t id, std::map<int64_t, std::vector<std::string>>& paths) {
  const int64_t path_id = t.ops[id].call_path_id;
  auto it = paths.find(path_id);
  if (it == paths.end()) it = paths.emplace(path_id, t.CallPathFrames(path_id)).first;
  for (auto f = it->second.rbegin(); f != it->second.rend(); ++f) {
    if (!IsLibraryFrame(ParseFrame(*f))) return ShortPath(FileLine(*f));
  }
  return "";
}

}  // namespace

std::vector<RegionPart> TopParts(const Trace& t, std::span<const int64_t> ops, size_t max_parts) {
  std::map<std::string, RegionPart> parts;
  std::map<int64_t, std::vector<std::string>> paths;
  for (int64_t id : ops) {
    if (!ValidOp(t, id)) continue;
    const OpEvent& op = t.ops[id];
    std::string name = ValidScope(t, op.scope_id) ? ScopeLabel(t, op.scope_id) : UserLine(t, id, paths);
    if (name.empty()) name = t.str(op.name_id);
    RegionPart& p = parts[name];
    p.name = name;
    ++p.ops;
    p.time_ns += std::max<int64_t>(0, op.end_ns - op.start_ns);
  }
  std::vector<RegionPart> out;
  for (auto& [name, p] : parts) out.push_back(std::move(p));
  std::stable_sort(out.begin(), out.end(), [](const RegionPart& x, const RegionPart& y) {
    return x.time_ns != y.time_ns ? x.time_ns > y.time_ns : x.ops > y.ops;
  });
  if (out.size() > max_parts) out.resize(max_parts);
  return out;
}

std::string ShortPath(const std::string& frame_or_file) {
  for (const char* marker : {"site-packages/", "dist-packages/"}) {
    const size_t at = frame_or_file.rfind(marker);
    if (at != std::string::npos) return frame_or_file.substr(at + std::char_traits<char>::length(marker));
  }
  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).string();
  if (!ec && !cwd.empty() && cwd != "/") {
    cwd += '/';
    if (frame_or_file.compare(0, cwd.size(), cwd) == 0) return frame_or_file.substr(cwd.size());
  }
  return frame_or_file;
}

std::string ShortPathsIn(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const bool starts_path = text[i] == '/' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '(' ||
                                                text[i - 1] == '[' || text[i - 1] == '`');
    if (!starts_path) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && text[end] != ' ' && text[end] != ')' && text[end] != ']' && text[end] != ',' &&
           text[end] != ';' && text[end] != '`') {
      ++end;
    }
    out += ShortPath(text.substr(i, end - i));
    i = end;
  }
  return out;
}

namespace {

RegionName NameJobRegion(const Trace& a, const Trace& b, const Finding& f) {
  switch (f.kind) {
    case detect::RegionKind::kOutsideOps: return {"(outside every op)", "kind"};
    case detect::RegionKind::kDeviceIdle: return {"(GPU idle: no kernel ran)", "kind"};
    case detect::RegionKind::kUnmatched:
      return {fmt::format("(unmatched{}: {} op(s) only in A, {} only in B)",
                          f.one_time ? " one-time compilation" : (f.setup ? " set-up" : ""),
                          f.names_a.size(), f.names_b.size()),
              "kind"};
    case detect::RegionKind::kMatched: break;
  }
  // The costlier side first: it is the one the reader will change.
  const bool a_first = f.wasteful_side != 'B';
  std::string whole_model;
  for (bool side_a : {a_first, !a_first}) {
    std::string name = ScopeName(side_a ? a : b, f, side_a);
    if (name.empty()) continue;
    // The model as a whole says less than the line that called it (which
    // generate(), which training step): that line names it when there is one.
    if (name.ends_with(kWholeModel)) {
      if (whole_model.empty()) whole_model = std::move(name);
      continue;
    }
    return {std::move(name), "module_scope"};
  }
  for (bool side_a : {a_first, !a_first}) {
    std::string name = SourceName(side_a ? a : b, f, side_a);
    if (name.empty()) continue;
    // The line says which call; the model says what ran: "gen.py:38 →
    // GenerationMixin.generate in GPT2LMHeadModel (whole model)".
    if (!whole_model.empty()) name += " in " + whole_model;
    return {std::move(name), "source_line"};
  }
  if (!whole_model.empty()) return {std::move(whole_model), "module_scope"};
  const auto& names = f.names_a.empty() ? f.names_b : f.names_a;
  if (names.empty()) return {"(no ops)", "ops"};
  return {names.front() + (names.size() > 1 ? " …" : ""), "ops"};
}

}  // namespace

RegionName NameRegion(const Trace& a, const Trace& b, const Finding& f) {
  RegionName name = NameJobRegion(a, b, f);
  // Set-up is named as such first: what it constructs comes after.
  if (f.setup && f.kind == detect::RegionKind::kMatched) name.text = "set-up: " + name.text;
  // So is a first compilation, paid once however long the job runs.
  if (f.one_time && f.kind == detect::RegionKind::kMatched) name.text = "one-time compilation: " + name.text;
  return name;
}

}  // namespace magneton::diagnose
