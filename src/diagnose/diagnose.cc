// One diagnosis per flagged finding: sites, deviation point, candidates, and
// the sentence that says what to change.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "diagnose/diagnose.h"
#include "base/format.h"

namespace magneton::diagnose {
namespace {

using detect::Finding;

class PathCache {
 public:
  explicit PathCache(const Trace& t) : t_(t) {}
  const std::vector<std::string>& Of(int64_t op_id) {
    const int64_t path_id = t_.ops[op_id].call_path_id;
    auto it = cache_.find(path_id);
    if (it == cache_.end()) it = cache_.emplace(path_id, t_.CallPathFrames(path_id)).first;
    return it->second;
  }

 private:
  const Trace& t_;
  std::unordered_map<int64_t, std::vector<std::string>> cache_;
};

bool ValidOp(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.ops.size(); }

std::vector<SourceSite> SitesOf(const Trace& t, PathCache& paths, const std::vector<int64_t>& ops, size_t max_sites) {
  std::map<std::pair<std::string, std::string>, SourceSite> by_site;
  std::vector<std::pair<std::string, std::string>> order;
  for (int64_t id : ops) {
    if (!ValidOp(t, id)) continue;
    // An XLA thunk of a compiled call (JAX jit with --values: the graph takes
    // the call as its thunks, graph/dataflow_graph.cc) was issued where the
    // call was; its HLO source line inside the library is a detail of it.
    // Counted at the call's site, the call's API names the site (the thunks
    // of one expm call at twenty HLO lines would otherwise be twenty sites).
    int64_t site_op = id;
    const OpEvent& op = t.ops[id];
    if (ValidOp(t, op.parent_id) && t.str(op.name_id).rfind("xla::", 0) == 0) site_op = op.parent_id;
    const auto& frames = paths.Of(site_op);
    if (frames.empty()) continue;
    std::string user, api;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      if (!IsLibraryFrame(ParseFrame(*it))) {
        user = *it;
        // The first frame inside the user's that does more than pass the call on.
        for (auto in = it; in != frames.rbegin();) {
          --in;
          api = *in;
          if (!IsPassThroughFrame(ParseFrame(*in))) break;
        }
        break;
      }
    }
    auto key = std::make_pair(user, frames.back());
    auto [it, inserted] = by_site.try_emplace(key);
    if (inserted) order.push_back(key);
    SourceSite& s = it->second;
    s.user_frame = user;
    s.library_frame = frames.back();
    if (s.api_frame.empty()) s.api_frame = api;
    ++s.op_count;
    s.duration_ns += std::max<int64_t>(0, op.end_ns - op.start_ns);
    const std::string& name = t.str(t.ops[id].name_id);
    if (std::find(s.op_names.begin(), s.op_names.end(), name) == s.op_names.end()) s.op_names.push_back(name);
  }
  std::vector<SourceSite> out;
  for (const auto& k : order) out.push_back(by_site[k]);
  // The site that issued most of the region's time first: it names the
  // region and is the line whose arguments are contrasted first. By count, a
  // line issuing six cheap normalize ops outranked the lambda that issued the
  // cdist holding nearly all of the region's time.
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return x.duration_ns != y.duration_ns ? x.duration_ns > y.duration_ns : x.op_count > y.op_count;
  });
  if (out.size() > max_sites) out.resize(max_sites);
  return out;
}

// The op names a program runs anywhere, once per side (not once per finding).
std::set<std::string> NamesRun(const Trace& t) {
  std::unordered_set<int64_t> ids;
  for (const OpEvent& op : t.ops) ids.insert(op.name_id);
  std::set<std::string> out;
  for (int64_t id : ids) out.insert(t.str(id));
  return out;
}

// The ops of one side that the other side's region does not run (by name);
// all ops when the two run the same names. Of those, the ones whose names the
// other program runs nowhere (`other_run_names`), when there are any: an op it
// runs elsewhere (the randn that made a weight) was only cut into this region
// by where the matched values lie, and is not the extra work.
std::vector<int64_t> DifferingOps(const Trace& t, const std::vector<int64_t>& ops,
                                  const std::vector<std::string>& other_names,
                                  const std::set<std::string>& other_run_names) {
  std::set<std::string> other(other_names.begin(), other_names.end());
  std::vector<int64_t> out;
  for (int64_t id : ops) {
    if (ValidOp(t, id) && !other.count(t.str(t.ops[id].name_id))) out.push_back(id);
  }
  if (out.empty()) return ops;
  std::vector<int64_t> never_run;
  for (int64_t id : out) {
    if (!other_run_names.count(t.str(t.ops[id].name_id))) never_run.push_back(id);
  }
  return never_run.empty() ? out : never_run;
}

size_t CommonDepth(const std::vector<std::string>& x, const std::vector<std::string>& y) {
  size_t i = 0;
  while (i < x.size() && i < y.size() && x[i] == y[i]) ++i;
  return i;
}

DeviationPoint Deviation(const Trace& costly, PathCache& costly_paths, const std::vector<int64_t>& differing,
                         const Trace& cheap, PathCache& cheap_paths, std::vector<int64_t> cheap_ops, int window,
                         const SourceRoots& roots) {
  DeviationPoint d;
  // The costliest differing op (longest wall time) stands for the side.
  int64_t rep = kNoId;
  int64_t best_ns = -1;
  for (int64_t id : differing) {
    if (!ValidOp(costly, id) || costly.ops[id].call_path_id == kNoId) continue;
    const int64_t ns = costly.ops[id].end_ns - costly.ops[id].start_ns;
    if (ns > best_ns) best_ns = ns, rep = id;
  }
  if (rep == kNoId) return d;
  // The cheaper side did this work elsewhere (or not at all): compare with
  // its op whose path shares the most with the representative's.
  if (cheap_ops.empty()) {
    for (const OpEvent& op : cheap.ops) {
      if (op.parent_id == kNoId && !IsRecorderOp(cheap, op)) cheap_ops.push_back(op.id);
    }
  }
  const auto& rep_path = costly_paths.Of(rep);
  int64_t partner = kNoId;
  size_t best_depth = 0;
  for (int64_t id : cheap_ops) {
    if (!ValidOp(cheap, id) || cheap.ops[id].call_path_id == kNoId) continue;
    const size_t depth = CommonDepth(rep_path, cheap_paths.Of(id));
    if (partner == kNoId || depth > best_depth) best_depth = depth, partner = id;
  }
  if (partner == kNoId) return d;
  d = FindDeviationPoint(rep_path, cheap_paths.Of(partner));
  d.op_a = costly.str(costly.ops[rep].name_id);
  d.op_b = cheap.str(cheap.ops[partner].name_id);
  if (d.found) {
    FrameRef f = ParseFrame(d.frame_a);
    ReadSourceWindow(roots, f.file, f.line, window / 4, window / 8, &d.snippet);
  }
  return d;
}

std::string Joined(const std::vector<std::string>& names, size_t max_names) {
  std::string out;
  // Collapse runs of one name ("aten::add ×3") so long regions stay readable.
  for (size_t i = 0, shown = 0; i < names.size(); ++shown) {
    size_t j = i;
    while (j < names.size() && names[j] == names[i]) ++j;
    if (shown == max_names) {
      out += ", …";
      break;
    }
    if (!out.empty()) out += ", ";
    out += names[i];
    if (j - i > 1) out += fmt::format(" ×{}", j - i);
    i = j;
  }
  return out.empty() ? "nothing" : out;
}

// One side's own work (an unmatched region) next to the other side's own
// work of the same phase: the two may do one job in different ways (a mask
// built by other ops), so "B runs [nothing]" would say too little. Names the
// other side's own work; empty when it has none.
std::string OtherSidesOwnWork(const Finding& f, char other, const detect::DetectResult& r) {
  if (f.kind != detect::RegionKind::kUnmatched) return "";
  for (const Finding& g : r.findings) {
    if (&g == &f || g.kind != detect::RegionKind::kUnmatched || g.setup != f.setup || g.one_time != f.one_time) continue;
    const auto& theirs = other == 'A' ? g.names_a : g.names_b;
    const auto& mine = other == 'A' ? g.names_b : g.names_a;
    if (theirs.empty() || !mine.empty()) continue;
    const detect::SideCost& cost = other == 'A' ? g.a : g.b;
    return fmt::format(" in this region; {}'s own work of this phase is a region of its own: [{}], {}", other,
                       Joined(theirs, 4), magneton::FormatEnergy(cost.energy_uj, r.provenance));
  }
  return "";
}

// What happens in the region, without the cause (FinishDiagnosis adds it).
std::string Situation(const Finding& f, const Diagnosis& d, const detect::DetectResult& r) {
  const char costly = f.wasteful_side ? f.wasteful_side : 'A';
  const char cheap = costly == 'A' ? 'B' : 'A';
  std::string why_trade_off;
  if (f.verdict == detect::Verdict::kTradeOff) {
    why_trade_off = f.outputs_agree ? ", a trade-off: the cheaper side is slower" : ", a trade-off: " + f.outputs_note;
  }
  std::string s = fmt::format("{} spends {} more than {} here ({:.1f}% of {}'s job energy{}); ", costly,
                              magneton::FormatEnergy(f.saving_uj, r.provenance), cheap, 100 * f.share_of_total, costly,
                              why_trade_off);
  if (f.kind == detect::RegionKind::kDeviceIdle) {
    s += "this is the GPU's energy while it ran no kernel, copy or fill (waiting on the host, or idle)";
  } else if (d.kind == Kind::kOutsideOps) {
    s += fmt::format("this energy is spent while no operator runs (Python, framework overhead, waiting)");
  } else if (d.kind == Kind::kDifferentOps) {
    const auto& mine = costly == 'A' ? f.names_a : f.names_b;
    const auto& theirs = costly == 'A' ? f.names_b : f.names_a;
    if (d.only_costly.empty() && d.only_cheap.empty()) {
      s += fmt::format("{} runs {} ops where {} runs {} of the same kinds", costly, mine.size(), cheap, theirs.size());
    } else {
      s += fmt::format("{} runs [{}] where {} runs [{}]", costly, Joined(d.only_costly, 4), cheap,
                       Joined(d.only_cheap, 4));
      if (theirs.empty()) s += OtherSidesOwnWork(f, cheap, r);
    }
    if (!d.sites_costly.empty()) {
      const SourceSite& site = d.sites_costly.front();
      s += fmt::format(", issued at {}", site.user_frame.empty() ? site.library_frame : site.user_frame);
      if (!site.api_frame.empty()) s += fmt::format(" through {}", site.api_frame);
    }
  } else if (d.kind == Kind::kSameApiDifferentKernel) {
    s += fmt::format("both call the same {} op(s), but {} runs [{}] on A and [{}] on B", f.names_a.size(),
                     d.kernel.op, Joined(d.kernel.nested_a, 6), Joined(d.kernel.nested_b, 6));
  } else {
    s += fmt::format("both run the same {} op(s) at different cost", f.names_a.size());
  }
  if (!d.states.empty()) {
    s += "; runtime state in effect differs:";
    for (size_t i = 0; i < d.states.size() && i < 3; ++i) {
      s += fmt::format("{} {} (A: {}, B: {})", i ? "," : "", d.states[i].key, d.states[i].value_a,
                       d.states[i].value_b);
    }
  }
  if (d.layout.found) s += "; " + d.layout.text;
  if (!d.shapes.empty()) s += "; " + d.shapes;
  return s;
}

// Op names the side runs that the other does not, in first-seen order.
std::vector<std::string> OnlyIn(const std::vector<std::string>& mine, const std::vector<std::string>& theirs) {
  std::set<std::string> other(theirs.begin(), theirs.end()), seen;
  std::vector<std::string> out;
  for (const auto& n : mine) {
    if (!other.count(n) && seen.insert(n).second) out.push_back(n);
  }
  return out;
}

// The name whose count differs most between the two sequences (the costly side running it more), "".
std::string MostMoreOften(const std::vector<std::string>& mine, const std::vector<std::string>& theirs) {
  std::map<std::string, int> count;
  for (const auto& n : mine) ++count[n];
  for (const auto& n : theirs) --count[n];
  std::string best;
  int most = 0;
  for (const auto& [n, c] : count) {
    if (c > most) most = c, best = n;
  }
  return best;
}

// The packages (versions meta, or a config entry named "<package>_version")
// whose version differs and whose files the region's costly ops ran in.
std::vector<ConfigDifference> VersionsOfRegion(const Trace& a, const Trace& b, const std::vector<ConfigDifference>& diffs,
                                               const Trace& costly, const std::vector<int64_t>& ops) {
  std::map<std::string, ConfigDifference> differing;
  for (const auto& [pkg, va] : a.meta.versions) {
    auto it = b.meta.versions.find(pkg);
    if (it != b.meta.versions.end() && it->second != va) differing[pkg] = {pkg, va, it->second, "version"};
  }
  for (const ConfigDifference& c : diffs) {
    const size_t dot = c.key.rfind('.');
    const std::string id = dot == std::string::npos ? c.key : c.key.substr(dot + 1);
    const std::string suffix = "_version";
    if (id.size() <= suffix.size() || id.compare(id.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string pkg = id.substr(0, id.size() - suffix.size());
    if (!differing.count(pkg)) differing[pkg] = {pkg, c.value_a, c.value_b, "version"};
  }
  std::vector<ConfigDifference> out;
  if (differing.empty()) return out;
  std::set<int64_t> path_ids;
  for (int64_t id : ops) {
    if (ValidOp(costly, id) && costly.ops[id].call_path_id != kNoId) path_ids.insert(costly.ops[id].call_path_id);
  }
  for (const auto& [pkg, diff] : differing) {
    const std::string dir = "/" + pkg + "/";
    bool inside = false;
    for (int64_t p : path_ids) {
      for (const std::string& frame : costly.CallPathFrames(p)) {
        if (IsLibraryFrame(ParseFrame(frame)) && frame.find(dir) != std::string::npos) {
          inside = true;
          break;
        }
      }
      if (inside) break;
    }
    if (inside) out.push_back(diff);
  }
  return out;
}

// The logical line at a frame: the physical line and, while its brackets
// are open, the lines that continue it. "" when the source may not be read.
std::string LogicalLineAt(const SourceRoots& roots, const std::string& frame) {
  if (frame.empty()) return "";
  const FrameRef f = ParseFrame(frame);
  SourceSnippet snippet;
  if (!ReadSourceWindow(roots, f.file, f.line, 0, 8, &snippet) || snippet.lines.empty()) return "";
  std::string out;
  int depth = 0;
  for (size_t i = static_cast<size_t>(f.line - snippet.first_line); i < snippet.lines.size(); ++i) {
    out += snippet.lines[i] + " ";
    for (char c : snippet.lines[i]) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
    }
    if (depth <= 0) break;
  }
  return out;
}

}  // namespace

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kDifferentOps: return "different_ops";
    case Kind::kSameOpsDifferentCost: return "same_ops_different_cost";
    case Kind::kSameApiDifferentKernel: return "same_api_different_kernel";
    case Kind::kOutsideOps: return "outside_ops";
  }
  return "?";
}

std::vector<Diagnosis> Diagnose(const Trace& a, const Trace& b, const detect::DetectResult& result,
                                const Options& options) {
  const std::vector<ConfigDifference> config_diff = DiffConfig(a, b);
  const SourceRoots roots = options.source_roots ? *options.source_roots : SourceRoots::Of(a, b);
  PathCache paths_a(a), paths_b(b);
  const std::set<std::string> names_run_a = NamesRun(a), names_run_b = NamesRun(b);
  std::vector<Diagnosis> out;
  for (size_t i = 0; i < result.findings.size(); ++i) {
    const Finding& f = result.findings[i];
    if (f.verdict == detect::Verdict::kEqual && !options.include_equal) continue;
    Diagnosis d;
    d.finding_index = i;
    d.kind = detect::HoldsNoOps(f.kind)                ? Kind::kOutsideOps
             : f.names_a == f.names_b                 ? Kind::kSameOpsDifferentCost
                                                      : Kind::kDifferentOps;
    const bool a_costly = f.wasteful_side != 'B';
    const Trace& costly = a_costly ? a : b;
    const Trace& cheap = a_costly ? b : a;
    PathCache& costly_paths = a_costly ? paths_a : paths_b;
    PathCache& cheap_paths = a_costly ? paths_b : paths_a;
    std::vector<int64_t> costly_ops, cheap_ops, ops_a, ops_b;
    for (const auto& in : f.instances) {
      const auto& mine = a_costly ? in.ops_a : in.ops_b;
      const auto& theirs = a_costly ? in.ops_b : in.ops_a;
      costly_ops.insert(costly_ops.end(), mine.begin(), mine.end());
      cheap_ops.insert(cheap_ops.end(), theirs.begin(), theirs.end());
      ops_a.insert(ops_a.end(), in.ops_a.begin(), in.ops_a.end());
      ops_b.insert(ops_b.end(), in.ops_b.begin(), in.ops_b.end());
    }
    const char costly_side = a_costly ? 'A' : 'B';
    d.costly_side = costly_side;
    // What each side ran under, compared for the region's ops only: a state
    // that differs elsewhere in the run says nothing about this region.
    d.states = DiffRuntimeStates(a, ops_a, b, ops_b, costly_side);
    d.constructor_args = ContrastConstructorArgs(a, ops_a, b, ops_b, costly_side);
    if (d.kind == Kind::kSameOpsDifferentCost) {
      d.kernel = ContrastKernels(a, ops_a, b, ops_b, costly_side);
      if (d.kernel.found) d.kind = Kind::kSameApiDifferentKernel;
      d.layout = ContrastLayouts(a, ops_a, b, ops_b, costly_side);
    }
    if (d.kind != Kind::kOutsideOps) {
      const auto& mine = a_costly ? f.names_a : f.names_b;
      const auto& other_names = a_costly ? f.names_b : f.names_a;
      if (d.kind == Kind::kDifferentOps) {
        d.only_costly = OnlyIn(mine, other_names);
        d.only_cheap = OnlyIn(other_names, mine);
        if (d.only_costly.empty()) d.count_op = MostMoreOften(mine, other_names);
      }
      std::vector<int64_t> differing = DifferingOps(costly, costly_ops, other_names, a_costly ? names_run_b : names_run_a);
      int64_t best_ns = -1;
      for (int64_t id : differing) {
        if (!ValidOp(costly, id)) continue;
        const int64_t ns = costly.ops[id].end_ns - costly.ops[id].start_ns;
        if (ns > best_ns) best_ns = ns, d.costly_op = costly.str(costly.ops[id].name_id);
      }
      d.sites_costly = SitesOf(costly, costly_paths, differing, options.max_sites);
      d.sites_efficient = SitesOf(cheap, cheap_paths, cheap_ops, options.max_sites);
      d.deviation =
          Deviation(costly, costly_paths, differing, cheap, cheap_paths, cheap_ops, options.window_lines, roots);
      if (!a_costly) {  // report the deviation point as A / B, not costly / cheap
        std::swap(d.deviation.frame_a, d.deviation.frame_b);
        std::swap(d.deviation.op_a, d.deviation.op_b);
      }
      const bool same_ops = d.kind != Kind::kDifferentOps;
      d.shapes = ShapeContrast(costly, costly_ops, cheap, cheap_ops, costly_side, a_costly ? 'B' : 'A', same_ops);
      if (same_ops && !d.shapes.empty()) d.shape_cause = FindShapeCause(a, ops_a, b, ops_b, costly_side);
      d.versions = VersionsOfRegion(a, b, config_diff, costly, costly_ops);
      // The lines that issued the region's ops on each side, paired: the
      // main sites first, then every other costly site with the cheap site
      // that issues one of the same ops (a callable passed in from another
      // file issues the costly op on a line of its own: `lambda q, db:
      // torch.cdist(q, db, compute_mode=...)`).
      auto contrast = [&](const SourceSite& costly_site, const SourceSite& cheap_site) {
        const std::string costly_line = LogicalLineAt(roots, costly_site.user_frame);
        const std::string cheap_line = LogicalLineAt(roots, cheap_site.user_frame);
        if (costly_line.empty() || cheap_line.empty()) return;
        for (CallArgDifference& c :
             a_costly ? ContrastCallArgs(costly_line, cheap_line) : ContrastCallArgs(cheap_line, costly_line)) {
          c.where = FileLine(costly_site.user_frame);
          const bool seen = std::any_of(d.call_args.begin(), d.call_args.end(), [&](const CallArgDifference& x) {
            return x.callee == c.callee && x.name == c.name;
          });
          if (!seen) d.call_args.push_back(std::move(c));
        }
      };
      if (!d.sites_costly.empty() && !d.sites_efficient.empty()) {
        contrast(d.sites_costly.front(), d.sites_efficient.front());
        for (size_t i = 1; i < d.sites_costly.size(); ++i) {
          const SourceSite& site = d.sites_costly[i];
          // The cheap side's main site of the same ops (not only among the
          // sites listed: a costly op can be one of many there).
          std::vector<int64_t> same_ops;
          for (int64_t id : cheap_ops) {
            if (!ValidOp(cheap, id)) continue;
            const std::string& name = cheap.str(cheap.ops[id].name_id);
            if (std::find(site.op_names.begin(), site.op_names.end(), name) != site.op_names.end()) {
              same_ops.push_back(id);
            }
          }
          const std::vector<SourceSite> others = SitesOf(cheap, cheap_paths, same_ops, 1);
          if (!others.empty() && others.front().user_frame != site.user_frame) contrast(site, others.front());
        }
      } else if (!d.sites_costly.empty() && cheap_ops.empty()) {
        // Extra work the cheap side runs none of here (A recompiles on every
        // step where B compiled once, elsewhere in its run): the lines that
        // issue the same ops anywhere on the cheap side are the ones to
        // contrast, since the same call there chose to do less of them.
        std::vector<int64_t> same_ops;
        const std::vector<std::string>& names = d.sites_costly.front().op_names;
        for (const OpEvent& op : cheap.ops) {
          if (op.parent_id != kNoId) continue;
          if (std::find(names.begin(), names.end(), cheap.str(op.name_id)) != names.end()) same_ops.push_back(op.id);
        }
        const std::vector<SourceSite> others = SitesOf(cheap, cheap_paths, same_ops, 1);
        if (!others.empty()) contrast(d.sites_costly.front(), others.front());
      }
    }
    d.candidates = RankCandidates(config_diff, d.deviation, roots, options.window_lines);
    d.situation = Situation(f, d, result);
    FinishDiagnosis(&d);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace magneton::diagnose
