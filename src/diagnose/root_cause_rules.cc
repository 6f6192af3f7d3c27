// The root-cause rules (root_cause_rules.h): one per contrast, each turning
// its evidence into proposed causes with a strength. The evidence itself is
// computed by Diagnose (runtime_state_diff.cc, constructor_args.cc,
// candidates.cc, call_args.cc, kernel_contrast.cc, layout_contrast.cc,
// shape_contrast.cc); a rule only reads it and says what it supports.
#include "diagnose/root_cause_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {
namespace {

// "transformers_version" -> "transformers"; "" when the key is not a version.
std::string VersionPackage(const std::string& key) {
  const size_t dot = key.rfind('.');
  const std::string id = dot == std::string::npos ? key : key.substr(dot + 1);
  static const std::string kSuffix = "_version";
  if (id.size() > kSuffix.size() && id.compare(id.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
    return id.substr(0, id.size() - kSuffix.size());
  }
  return "";
}

RootCauseKind KindOfSource(const ConfigDifference& c) {
  if (c.source == "call_arg") return RootCauseKind::kCallArg;
  if (c.source == "env") return RootCauseKind::kEnvVar;
  if (c.source == "version" || !VersionPackage(c.key).empty()) return RootCauseKind::kVersion;
  return RootCauseKind::kConfig;  // model_config, global_flag, runtime
}

// "file:line" of a candidate's evidence "file:line: text".
std::string WhereOfEvidence(const std::string& evidence) {
  const size_t sep = evidence.find(": ");
  return sep == std::string::npos ? "" : evidence.substr(0, sep);
}

std::string Joined(const std::vector<std::string>& names, size_t max_names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max_names; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max_names) out += ", …";
  return out.empty() ? "nothing" : out;
}

// The line trace followed the deciding branch back to this config entry.
bool LineTraced(const Diagnosis& d, const Candidate& c) {
  return d.line && d.line->found && d.line->config_key == c.config.key;
}

RootCause FromCandidate(const Diagnosis& d, const Candidate& c, const std::string& why, CauseStrength strength) {
  RootCause r;
  r.kind = KindOfSource(c.config);
  r.strength = strength;
  const std::string package = VersionPackage(c.config.key);
  r.name = r.kind == RootCauseKind::kVersion && !package.empty() ? package : c.config.key;
  r.value_a = c.config.value_a;
  r.value_b = c.config.value_b;
  r.where = WhereOfEvidence(c.evidence);
  r.evidence = why;
  if (LineTraced(d, c)) {
    const Origin& o = d.line->origin;
    if (!o.file.empty()) r.where = fmt::format("{}:{}", o.file, o.line);
    r.evidence = fmt::format("the line trace follows the branch at {}:{} back to {} `{}`", d.line->file,
                             d.line->divergence.branch_line, OriginKindName(o.kind), o.name);
  }
  // A call's argument is changed where the user's code makes the call, not
  // where the library reads it: that line stays in the evidence.
  if (r.kind == RootCauseKind::kCallArg && !d.sites_costly.empty() && !d.sites_costly.front().user_frame.empty()) {
    if (!r.where.empty()) r.evidence += "; read at " + r.where;
    r.where = FileLine(d.sites_costly.front().user_frame);
  }
  return r;
}

// The costly side's main site is also one of the cheaper side's: the same
// library function called (api_frame), or the same line when the line
// itself issues the ops.
bool SameCall(const Diagnosis& d) {
  if (d.sites_costly.empty()) return false;
  const SourceSite& c = d.sites_costly.front();
  for (const SourceSite& e : d.sites_efficient) {
    if (!c.api_frame.empty() && c.api_frame == e.api_frame) return true;
    if (c.api_frame.empty() && e.api_frame.empty() && !c.user_frame.empty() && c.user_frame == e.user_frame) return true;
  }
  return false;
}

bool SameOps(const Diagnosis& d) {
  return d.kind == Kind::kSameOpsDifferentCost || d.kind == Kind::kSameApiDifferentKernel;
}

// A config entry that reaches every op the program runs (not one call's
// argument or one model's field).
bool ReachesEveryOp(const ConfigDifference& c) {
  return c.source == "global_flag" || c.source == "env" || c.source == "runtime";
}

// Lower-case words of an identifier: "torch.backends.cuda.flash_sdp_enabled"
// -> {torch, backends, cuda, flash, sdp, enabled}.
std::set<std::string> Words(const std::string& text) {
  std::set<std::string> out;
  std::string cur;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.insert(cur);
      cur.clear();
    }
  }
  return out;
}

// One setter often changes several keys at once (sdpa_kernel(MATH) turns
// flash, memory-efficient and cuDNN attention off). When the same op runs
// other nested kernels, the key that selects them is the one whose own words
// (those no other differing key has) name a nested kernel of either side:
// flash_sdp_enabled for _scaled_dot_product_flash_attention_for_cpu.
size_t StateThatSelectsTheKernel(const Diagnosis& d) {
  if (!d.kernel.found || d.states.size() < 2) return 0;
  std::set<std::string> kernel_words;
  for (const auto* nested : {&d.kernel.nested_a, &d.kernel.nested_b}) {
    for (const std::string& n : *nested) {
      for (const std::string& w : Words(n)) kernel_words.insert(w);
    }
  }
  for (size_t i = 0; i < d.states.size(); ++i) {
    std::set<std::string> own = Words(d.states[i].key);
    for (const StateDifference& other : d.states) {
      if (&other == &d.states[i]) continue;
      for (const std::string& w : Words(other.key)) own.erase(w);
    }
    for (const std::string& w : own) {
      if (kernel_words.count(w)) return i;
    }
  }
  return 0;
}

RootCause FromCallArg(const CallArgDifference& c, std::string name, std::string why, CauseStrength strength) {
  RootCause r;
  r.kind = RootCauseKind::kCallArg;
  r.name = std::move(name);
  r.value_a = c.value_a;
  r.value_b = c.value_b;
  r.where = c.where;
  r.evidence = std::move(why);
  r.strength = strength;
  return r;
}

}  // namespace

std::vector<RootCause> RuntimeStateRule(const Diagnosis& d) {
  std::vector<RootCause> out;
  if (d.states.empty()) return out;
  const size_t first = StateThatSelectsTheKernel(d);
  std::vector<size_t> order = {first};
  for (size_t i = 0; i < d.states.size(); ++i) {
    if (i != first) order.push_back(i);
  }
  for (size_t i : order) {
    const StateDifference& s = d.states[i];
    RootCause r;
    r.kind = RootCauseKind::kRuntimeState;
    r.strength = CauseStrength::kDirect;
    r.name = s.key;
    r.value_a = s.value_a;
    r.value_b = s.value_b;
    r.where = s.where;
    r.evidence = fmt::format("in effect for the region's ops ({} op(s) on A, {} on B){}", s.ops_a, s.ops_b,
                             s.where.empty() ? ", set by no recorded call (a default)"
                                             : fmt::format("; {} sets it at {}", s.setter_side, s.where));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<RootCause> ConstructorArgRule(const Diagnosis& d) {
  // What the region's ops ran inside was built differently: the argument is
  // changed at the constructor's call, which no op's call path passes.
  std::vector<RootCause> out;
  for (const CallArgDifference& c : d.constructor_args) {
    out.push_back(FromCallArg(c, c.callee + "." + c.name,
                              fmt::format("the region's ops run inside a {} constructed with {}={} on A and {}={} on B",
                                          c.callee, c.name, c.value_a, c.name, c.value_b),
                              CauseStrength::kDirect));
  }
  return out;
}

std::vector<RootCause> DeviationConfigRule(const Diagnosis& d) {
  std::vector<RootCause> out;
  const std::string where = d.deviation.found ? d.deviation.frame_a : std::string("?");
  for (const Candidate& c : d.candidates) {
    if (c.frame_distance < 0) continue;
    const std::string why =
        c.frame_distance == 0
            ? fmt::format("differs between the runs and is read where the call paths diverge ({})", where)
            : fmt::format("differs between the runs and is read {} frame(s) above where the call paths diverge ({})",
                          c.frame_distance, where);
    out.push_back(
        FromCandidate(d, c, why, LineTraced(d, c) ? CauseStrength::kLineTrace : CauseStrength::kNamedAtDeviation));
  }
  return out;
}

std::vector<RootCause> CallArgRule(const Diagnosis& d) {
  std::vector<RootCause> out;
  for (const CallArgDifference& c : d.call_args) {
    out.push_back(FromCallArg(c, c.name,
                              fmt::format("the lines that issue the region's ops call {} with {}={} on A and {}={} on B",
                                          c.callee, c.name, c.value_a, c.name, c.value_b),
                              CauseStrength::kIssuingPath));
  }
  return out;
}

std::vector<RootCause> VersionRule(const Diagnosis& d) {
  std::vector<RootCause> out;
  for (const ConfigDifference& v : d.versions) {
    RootCause r;
    r.kind = RootCauseKind::kVersion;
    r.strength = CauseStrength::kIssuingPath;
    r.name = v.key;
    r.value_a = v.value_a;
    r.value_b = v.value_b;
    r.evidence = fmt::format("{} differs between the runs and the region's ops run inside it", v.key);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<RootCause> KernelRule(const Diagnosis& d) {
  if (!d.kernel.found) return {};
  RootCause r;
  r.kind = RootCauseKind::kApiChoice;
  r.strength = CauseStrength::kOpContrast;
  r.name = ApiOfOp(d.kernel.op);
  r.value_a = Joined(d.kernel.nested_a, 6);
  r.value_b = Joined(d.kernel.nested_b, 6);
  if (!d.sites_costly.empty()) r.where = FileLine(d.sites_costly.front().user_frame);
  r.evidence = fmt::format("both call {}, which runs other nested ops or kernels on each side, and no setting "
                           "in effect for it differs",
                           d.kernel.op);
  return {r};
}

std::vector<RootCause> LayoutRule(const Diagnosis& d) {
  if (!d.layout.found) return {};
  RootCause r;
  r.kind = RootCauseKind::kDtypeLayout;
  r.strength = CauseStrength::kOpContrast;
  r.name = d.layout.producer_api;
  r.value_a = d.layout.value_a;
  r.value_b = d.layout.value_b;
  r.where = d.layout.where;
  r.evidence = d.layout.text;
  return {r};
}

std::vector<RootCause> DataShapeRule(const Diagnosis& d) {
  // For different ops, larger inputs are no evidence (ShapeContrast's note).
  if (!SameOps(d) || d.shapes.empty()) return {};
  RootCause r;
  r.kind = RootCauseKind::kDataShape;
  r.strength = CauseStrength::kOpContrast;
  if (d.shape_cause.found) {
    r.name = d.shape_cause.name;
    r.value_a = d.shape_cause.value_a;
    r.value_b = d.shape_cause.value_b;
    r.where = d.shape_cause.where;
  } else {
    r.name = "input_shape";
  }
  r.evidence = d.shapes;
  return {r};
}

std::vector<RootCause> SameCallConfigRule(const Diagnosis& d) {
  // Both sides issue the region's ops through the same call: the developer
  // chose the same API, and what it ran was decided inside it by what it
  // was given. The config entries that differ are what it was given.
  if (d.kind != Kind::kDifferentOps || d.candidates.empty() || !SameCall(d)) return {};
  const SourceSite& s = d.sites_costly.front();
  return {FromCandidate(d, d.candidates.front(),
                        fmt::format("both sides run the differing ops inside the same call ({}); of what differs "
                                    "between the runs, this decides what it runs",
                                    s.api_frame.empty() ? s.user_frame : s.api_frame),
                        CauseStrength::kOpSequence)};
}

std::vector<RootCause> SubstitutedOpsRule(const Diagnosis& d) {
  // The two sides compute the region's values with different ops: the API
  // the costly side's line called (a library function), else its op.
  if (d.kind != Kind::kDifferentOps || d.only_costly.empty() || d.only_cheap.empty()) return {};
  const char costly = d.costly_side == 'B' ? 'B' : 'A';
  const char cheap = costly == 'A' ? 'B' : 'A';
  const SourceSite* site = d.sites_costly.empty() ? nullptr : &d.sites_costly.front();
  RootCause r;
  r.kind = RootCauseKind::kApiChoice;
  r.strength = CauseStrength::kOpSequence;
  if (site) r.where = FileLine(site->user_frame.empty() ? site->library_frame : site->user_frame);
  const bool api_known = site && !site->api_frame.empty() && !IsPassThroughFrame(ParseFrame(site->api_frame));
  r.name = api_known ? ApiOfFrame(site->api_frame) : ApiOfOp(d.costly_op);
  const std::string other = ApiOfOp(d.only_cheap.front());
  (costly == 'A' ? r.value_a : r.value_b) = r.name;
  (costly == 'A' ? r.value_b : r.value_a) = other;
  r.evidence = fmt::format("{} runs [{}] where {} runs [{}] for the same values", costly, Joined(d.only_costly, 4),
                           cheap, Joined(d.only_cheap, 4));
  return {r};
}

std::vector<RootCause> ExtraWorkRule(const Diagnosis& d) {
  if (d.kind != Kind::kDifferentOps) return {};
  // Substituted ops are SubstitutedOpsRule's.
  if (!d.only_costly.empty() && !d.only_cheap.empty()) return {};
  const char costly = d.costly_side == 'B' ? 'B' : 'A';
  const char cheap = costly == 'A' ? 'B' : 'A';
  const SourceSite* site = d.sites_costly.empty() ? nullptr : &d.sites_costly.front();
  RootCause r;
  r.kind = RootCauseKind::kCodePath;
  r.strength = CauseStrength::kOpSequence;
  if (site) r.where = FileLine(site->user_frame.empty() ? site->library_frame : site->user_frame);
  if (d.only_costly.empty()) {
    if (d.count_op.empty()) return {};
    r.name = ApiOfOp(d.count_op);
    r.evidence = fmt::format("both run the same kinds of op, {} runs {} more often", costly, d.count_op);
    return {r};
  }
  // Extra work the other side skips. Most of it issued through one library
  // function the user's lines called (Join.__exit__ shadowing a finished
  // rank's all-reduces): that call is the unit of extra work.
  std::map<std::string, std::pair<int, std::string>> by_api;  // api -> (ops, a user frame calling it)
  int site_ops = 0;
  for (const SourceSite& s : d.sites_costly) {
    site_ops += s.op_count;
    if (s.api_frame.empty() || s.user_frame.empty() || IsPassThroughFrame(ParseFrame(s.api_frame))) continue;
    auto& [n, where] = by_api[ApiOfFrame(s.api_frame)];
    if (where.empty()) where = s.user_frame;
    n += s.op_count;
  }
  for (const auto& [api, v] : by_api) {
    if (2 * v.first <= site_ops) continue;
    r.name = api;
    r.where = FileLine(v.second);
    (costly == 'A' ? r.value_a : r.value_b) = "runs " + api;
    (costly == 'A' ? r.value_b : r.value_a) = "does not";
    r.evidence = fmt::format("{} runs [{}] that {} does not run at all, {} of {} op(s) issued through {}", costly,
                             Joined(d.only_costly, 4), cheap, v.first, site_ops, api);
    return {r};
  }
  // Else several kinds of op from one function (not the script's top level):
  // that function is the unit of extra work; else the costliest extra op.
  // The user function that issued most of the extra ops, and how many kinds.
  std::map<std::string, std::pair<int, std::set<std::string>>> by_function_ops;
  int total = 0;
  for (const SourceSite& s : d.sites_costly) {
    auto& [n, names] = by_function_ops[ParseFrame(s.user_frame).function];
    n += s.op_count;
    names.insert(s.op_names.begin(), s.op_names.end());
    total += s.op_count;
  }
  std::string fn;
  int most = 0;
  size_t kinds = 0;
  for (const auto& [f, v] : by_function_ops) {
    if (v.first > most) most = v.first, fn = f, kinds = v.second.size();
  }
  const bool by_function = kinds >= 2 && 2 * most > total && !fn.empty() && fn != "<module>";
  r.name = by_function ? fn : ApiOfOp(d.costly_op);
  (costly == 'A' ? r.value_a : r.value_b) = by_function ? "runs " + fn : "runs " + d.costly_op;
  (costly == 'A' ? r.value_b : r.value_a) = "does not";
  r.evidence = fmt::format("{} runs [{}] that {} does not run at all", costly, Joined(d.only_costly, 4), cheap);
  return {r};
}

std::vector<RootCause> ReachesEveryOpRule(const Diagnosis& d) {
  std::vector<RootCause> out;
  for (const Candidate& c : d.candidates) {
    if (!ReachesEveryOp(c.config)) continue;
    out.push_back(FromCandidate(d, c,
                                "differs between the runs and reaches every op; not named where the call paths "
                                "diverge",
                                CauseStrength::kReachesEveryOp));
  }
  return out;
}

const std::vector<NamedCauseRule>& RootCauseRules() {
  static const std::vector<NamedCauseRule> kRules = {
      {"runtime_state", RuntimeStateRule},
      {"constructor_arg", ConstructorArgRule},
      {"deviation_config", DeviationConfigRule},
      {"call_arg", CallArgRule},
      {"version", VersionRule},
      {"kernel", KernelRule},
      {"dtype_layout", LayoutRule},
      {"data_shape", DataShapeRule},
      {"same_call_config", SameCallConfigRule},
      {"substituted_ops", SubstitutedOpsRule},
      {"extra_work", ExtraWorkRule},
      {"reaches_every_op", ReachesEveryOpRule},
  };
  return kRules;
}

std::vector<RootCause> ProposeCauses(const Diagnosis& d) {
  std::vector<RootCause> all;
  for (const NamedCauseRule& rule : RootCauseRules()) {
    for (RootCause& r : rule.propose(d)) all.push_back(std::move(r));
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const RootCause& x, const RootCause& y) { return x.strength > y.strength; });
  std::vector<RootCause> out;
  std::set<std::pair<RootCauseKind, std::string>> seen;
  for (RootCause& r : all) {
    if (seen.insert({r.kind, r.name}).second) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace magneton::diagnose
