// From the first differing line back to the root cause: the branch before it,
// the operands of its condition whose values differ between the runs, and a
// backward walk over the lines each run executed before the branch (the last
// assignment to the operand, then that assignment's operands, ...) until the
// value comes from outside the function: an argument, a config field, a
// module-level flag or an environment variable.
#include <algorithm>
#include <fstream>
#include <set>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {
namespace {

constexpr int kMaxDepth = 12;

struct Side {
  const LineCall* call = nullptr;
  const std::string* Value(size_t event, const std::string& expr) const {
    for (const WatchedValue& v : call->values) {
      if (v.event == event && v.expr == expr) return &v.value;
    }
    return nullptr;
  }
};

std::string RootOf(const std::string& chain) {
  const size_t end = chain.find_first_of(".[");
  return end == std::string::npos ? chain : chain.substr(0, end);
}

std::string LastComponent(const std::string& chain) {
  if (!chain.empty() && chain.back() == ']') {  // x["k"] -> k
    const size_t open = chain.rfind("[\"");
    return open == std::string::npos ? chain : chain.substr(open + 2, chain.size() - open - 4);
  }
  const size_t dot = chain.rfind('.');
  return dot == std::string::npos ? chain : chain.substr(dot + 1);
}

// `self.config.use_cache`, `generation_config.use_cache`, `config.x`: a field
// of a config object.
bool IsConfigField(const std::string& chain) {
  const size_t dot = chain.rfind('.');
  if (dot == std::string::npos || chain.find('[') != std::string::npos) return false;
  const std::string owner = LastComponent(chain.substr(0, dot));
  return owner.size() >= 6 && owner.compare(owner.size() - 6, 6, "config") == 0;
}

// The event of the statement's first line at or before `event` (a watch is
// recorded there, also for statements spanning several lines).
size_t EventOfStatement(const LineCall& call, size_t event, const PyStatement& s) {
  for (size_t k = std::min(event + 1, call.lines.size()); k-- > 0;) {
    if (call.lines[k] == s.first_line) return k;
  }
  return event;
}

class Walker {
 public:
  Walker(const PyFunction& fn, Side a, Side b, LineDiagnosis* out) : fn_(fn), a_(a), b_(b), out_(out) {}

  // The operands of a statement (at events ea / eb) whose values differ;
  // all recorded-or-not operands when none is seen to differ.
  std::vector<std::string> Differing(const PyStatement& s, size_t ea, size_t eb) const {
    std::vector<std::string> differ, unknown;
    for (const std::string& r : s.reads) {
      const std::string* va = a_.Value(ea, r);
      const std::string* vb = b_.Value(eb, r);
      if (va && vb) {
        if (*va != *vb) differ.push_back(r);
        else DifferingEntries(r, ea, eb, &differ);
      } else {
        unknown.push_back(r);
      }
    }
    // Other values watched there (the arguments, at the first statement).
    for (const WatchedValue& v : a_.call->values) {
      if (v.event != ea || std::find(differ.begin(), differ.end(), v.expr) != differ.end()) continue;
      const std::string* vb = b_.Value(eb, v.expr);
      if (vb != nullptr && *vb != v.value) differ.push_back(v.expr);
    }
    return differ.empty() ? unknown : differ;
  }

  // A dict's entries (recorded as `d["k"]` next to `d`) that differ, when
  // the dict's own short repr does not.
  void DifferingEntries(const std::string& r, size_t ea, size_t eb, std::vector<std::string>* out) const {
    const std::string prefix = r + "[\"";
    for (const WatchedValue& v : a_.call->values) {
      if (v.event != ea || v.expr.rfind(prefix, 0) != 0) continue;
      const std::string* vb = b_.Value(eb, v.expr);
      if (vb != nullptr && *vb != v.value) out->push_back(v.expr);
    }
  }

  // Explains why `var`, read by `use` at events ea / eb, differs.
  void Walk(const std::string& var, const PyStatement& use, size_t ea, size_t eb, int depth) {
    if (depth > kMaxDepth || !seen_.insert(var + "@" + std::to_string(ea) + "/" + std::to_string(eb)).second) return;
    const std::string va = ValueOr(a_, ea, var), vb = ValueOr(b_, eb, var);
    if (var.rfind("env:", 0) == 0) {
      return Finish(OriginKind::kEnvVar, var.substr(4), use.first_line, va, vb);
    }
    if (IsConfigField(var)) return Finish(OriginKind::kConfigField, var, use.first_line, va, vb);
    const std::string root = RootOf(var);
    // The last assignment to the root name before the use, on each side.
    const PyStatement* sa = LastAssignment(*a_.call, ea, root);
    const PyStatement* sb = LastAssignment(*b_.call, eb, root);
    if (sa == nullptr && sb == nullptr && var != root) {
      if (!fn_.var_keyword.empty() && root == fn_.var_keyword) {
        // kwargs["use_cache"]: an argument passed by keyword.
        return Finish(OriginKind::kArgument, LastComponent(var), fn_.def_line, va, vb);
      }
      if (root == "self") return Finish(OriginKind::kAttribute, var, use.first_line, va, vb);
    }
    if (sa != nullptr && sa == sb) {
      const size_t ka = EventOfStatement(*a_.call, LastEventOf(*a_.call, ea, *sa), *sa);
      const size_t kb = EventOfStatement(*b_.call, LastEventOf(*b_.call, eb, *sb), *sb);
      // One step per statement: a loop's `x = update(x, ...)` repeats.
      if (out_->chain.empty() || out_->chain.back().line != sa->first_line) {
        out_->chain.push_back({var, sa->first_line, sa->text, "assigned", va, vb});
      }
      std::vector<std::string> next = Differing(*sa, ka, kb);
      if (next.empty()) return Finish(OriginKind::kUnknown, root, sa->first_line, va, vb);
      // `x = update(x, ...)` where x's own entry differs: x came in already
      // different; follow it to the assignment before (events strictly
      // decrease, so this ends).
      for (const std::string& n : next) {
        if (RootOf(n) == root && ka < ea && kb < eb) return Walk(n, *sa, ka, kb, depth);
      }
      next.erase(std::remove(next.begin(), next.end(), root), next.end());
      if (next.empty()) return Finish(OriginKind::kUnknown, root, sa->first_line, va, vb);
      return Walk(next.front(), *sa, ka, kb, depth + 1);
    }
    if (sa != nullptr || sb != nullptr) {
      // Assigned on one side only (or by different statements): the branch
      // that chose decides; explain its condition instead.
      const PyStatement* s = sa ? sa : sb;
      out_->chain.push_back({var, s->first_line, s->text, "assigned_on_one_side", va, vb});
      const size_t m = std::min({ea, eb, a_.call->lines.size(), b_.call->lines.size()});
      size_t k = 0;
      while (k < m && a_.call->lines[k] == b_.call->lines[k]) ++k;
      const PyStatement* branch = k > 0 ? fn_.StatementAt(a_.call->lines[k - 1]) : nullptr;
      if (branch == nullptr) return Finish(OriginKind::kUnknown, root, s->first_line, va, vb);
      const size_t kb = EventOfStatement(*a_.call, k - 1, *branch);
      std::vector<std::string> next = Differing(*branch, kb, kb);
      if (next.empty()) return Finish(OriginKind::kUnknown, root, branch->first_line, va, vb);
      out_->chain.push_back({"", branch->first_line, branch->text, "branch", "", ""});
      return Walk(next.front(), *branch, kb, kb, depth + 1);
    }
    if (std::find(fn_.params.begin(), fn_.params.end(), root) != fn_.params.end()) {
      // Passed in (or defaulted in the def).
      return Finish(OriginKind::kArgument, root, fn_.def_line, va, vb);
    }
    // Not a local: a module-level name.
    std::ifstream in(fn_.file);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    const int64_t at = FindModuleAssignment(lines, root);
    if (at > 0) {
      // The module-level assignment may itself read the environment.
      std::vector<std::string> reads = ParseStatement(lines[static_cast<size_t>(at - 1)]).reads;
      for (const std::string& r : reads) {
        if (r.rfind("env:", 0) == 0) {
          out_->chain.push_back({var, at, lines[static_cast<size_t>(at - 1)], "module_level", va, vb});
          return Finish(OriginKind::kEnvVar, r.substr(4), at, "", "");
        }
      }
      return Finish(OriginKind::kGlobalFlag, var, at, va, vb);
    }
    Finish(OriginKind::kUnknown, var, use.first_line, va, vb);
  }

 private:
  static std::string ValueOr(const Side& s, size_t event, const std::string& expr) {
    const std::string* v = s.Value(event, expr);
    return v ? *v : "";
  }

  const PyStatement* LastAssignment(const LineCall& call, size_t before, const std::string& name) const {
    for (size_t k = std::min(before, call.lines.size()); k-- > 0;) {
      const PyStatement* s = fn_.StatementAt(call.lines[k]);
      if (s == nullptr) continue;
      if ((s->kind == StatementKind::kAssign || s->kind == StatementKind::kFor) &&
          std::find(s->targets.begin(), s->targets.end(), name) != s->targets.end()) {
        return s;
      }
    }
    return nullptr;
  }

  static size_t LastEventOf(const LineCall& call, size_t before, const PyStatement& s) {
    for (size_t k = std::min(before, call.lines.size()); k-- > 0;) {
      if (call.lines[k] >= s.first_line && call.lines[k] <= s.last_line) return k;
    }
    return 0;
  }

  void Finish(OriginKind kind, const std::string& name, int64_t line, const std::string& va, const std::string& vb) {
    Origin& o = out_->origin;
    o.kind = kind;
    o.name = name;
    o.file = fn_.file;
    o.line = line;
    o.value_a = va;
    o.value_b = vb;
    // An environment variable read with a default: the values are the
    // watched lookups at the reading line.
    if (kind == OriginKind::kEnvVar && va.empty() && vb.empty()) {
      o.value_a = ValueOrAny(a_, "env:" + name);
      o.value_b = ValueOrAny(b_, "env:" + name);
    }
  }

  static std::string ValueOrAny(const Side& s, const std::string& expr) {
    for (const WatchedValue& v : s.call->values) {
      if (v.expr == expr) return v.value;
    }
    return "";
  }

  const PyFunction& fn_;
  Side a_, b_;
  LineDiagnosis* out_;
  std::set<std::string> seen_;
};

std::string TextOf(const PyFunction& fn, int64_t line) {
  if (line < 0) return "(returned)";
  const PyStatement* s = fn.StatementAt(line);
  return s ? s->text : "";
}

}  // namespace

const char* OriginKindName(OriginKind kind) {
  switch (kind) {
    case OriginKind::kArgument: return "argument";
    case OriginKind::kConfigField: return "config_field";
    case OriginKind::kGlobalFlag: return "global_flag";
    case OriginKind::kEnvVar: return "env_var";
    case OriginKind::kAttribute: return "attribute";
    case OriginKind::kUnknown: return "unknown";
  }
  return "unknown";
}

LineDiagnosis AnalyzeLineTraces(const PyFunction& fn, const LineTrace& a, const LineTrace& b, int64_t focus_line,
                                int target) {
  LineDiagnosis d;
  d.file = fn.file;
  d.function = fn.file + ":" + fn.name;
  std::vector<const LineCall*> ca, cb;
  for (const LineCall& c : a.calls) if (c.target == target) ca.push_back(&c);
  for (const LineCall& c : b.calls) if (c.target == target) cb.push_back(&c);
  if (ca.empty() || cb.empty()) {
    d.note = "the re-runs did not call the traced function (" + std::to_string(ca.size()) + " vs " +
             std::to_string(cb.size()) + " calls)";
    return d;
  }
  d.divergence = FirstDifferingLine(ca, cb);
  const PyStatement* decider = nullptr;  // the branch, or the statement whose values differ
  size_t call = 0, event = 0;
  if (d.divergence.found) {
    const LineDivergence& div = d.divergence;
    d.mode = "branch";
    d.text_a = TextOf(fn, div.line_a);
    d.text_b = TextOf(fn, div.line_b);
    decider = div.branch_line > 0 ? fn.StatementAt(div.branch_line) : nullptr;
    if (decider == nullptr) {
      d.note = "the runs differ at the function's first line";
      return d;
    }
    call = div.call;
    event = EventOfStatement(*ca[call], div.event - 1, *decider);
    if (decider->kind != StatementKind::kIf && decider->kind != StatementKind::kElif &&
        decider->kind != StatementKind::kWhile && decider->kind != StatementKind::kFor && !decider->short_circuit) {
      d.note = "the last common line is not a branch: it raised, returned or called code that decided";
    }
  } else {
    // Same lines: the first statement (at the deviation point's line first)
    // whose watched operands differ, in the first call where one does.
    const PyStatement* focus = focus_line > 0 ? fn.StatementAt(focus_line) : nullptr;
    for (int pass = focus ? 0 : 1; pass < 2 && decider == nullptr; ++pass) {
      for (size_t c = 0; c < std::min(ca.size(), cb.size()) && decider == nullptr; ++c) {
        for (size_t k = 0; k < ca[c]->lines.size() && decider == nullptr; ++k) {
          const PyStatement* s = fn.StatementAt(ca[c]->lines[k]);
          if (s == nullptr || ca[c]->lines[k] != s->first_line || (pass == 0 && s != focus)) continue;
          bool differs = false;
          for (const WatchedValue& v : ca[c]->values) {
            if (v.event != k) continue;
            const std::string* vb = Side{cb[c]}.Value(k, v.expr);
            if (vb != nullptr && *vb != v.value) differs = true;
          }
          if (differs) decider = s, call = c, event = k;
        }
      }
    }
    if (decider == nullptr) {
      d.note = "the traced function ran the same lines with the same watched values on both sides (" +
               std::to_string(ca.size()) + " vs " + std::to_string(cb.size()) + " calls)";
      return d;
    }
    d.mode = "values";
    d.divergence.call = call;
    d.divergence.event = event;
    d.divergence.line_a = d.divergence.line_b = d.divergence.branch_line = decider->first_line;
    d.text_a = d.text_b = decider->text;
  }
  d.found = true;
  d.branch_text = decider->text;
  d.condition = decider->condition.empty() ? decider->text : decider->condition;
  Side sa{ca[call]}, sb{cb[call]};
  Walker walker(fn, sa, sb, &d);
  d.key_variables = walker.Differing(*decider, event, event);
  if (d.key_variables.empty()) {
    d.note = "the statement reads no variable this analysis follows";
    return d;
  }
  const std::string* va = sa.Value(event, d.key_variables.front());
  const std::string* vb = sb.Value(event, d.key_variables.front());
  d.chain.push_back({d.key_variables.front(), decider->first_line, decider->text,
                     d.mode == "branch" ? "branch" : "differs", va ? *va : "", vb ? *vb : ""});
  walker.Walk(d.key_variables.front(), *decider, event, event, 0);
  return d;
}

}  // namespace magneton::diagnose
