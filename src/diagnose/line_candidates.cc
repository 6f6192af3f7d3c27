// The line-level result feeds the candidates: the config entry the origin
// maps to is the one --confirm flips, ahead of the static source search.
#include <fmt/format.h>

#include <algorithm>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {
namespace {

// "call.generate.use_cache" / "self.config.use_cache" -> "use_cache"; `kw["x"]` -> "x".
std::string LastComponent(const std::string& chain) {
  if (!chain.empty() && chain.back() == ']') {
    const size_t open = chain.rfind("[\"");
    return open == std::string::npos ? chain : chain.substr(open + 2, chain.size() - open - 4);
  }
  const size_t dot = chain.rfind('.');
  return dot == std::string::npos ? chain : chain.substr(dot + 1);
}

}  // namespace

bool MapOriginToConfig(const Origin& origin, const std::vector<ConfigDifference>& diffs, ConfigDifference* out) {
  if (origin.name.empty() || origin.kind == OriginKind::kUnknown) return false;
  const std::string ident = LastComponent(origin.name);
  const char* want = origin.kind == OriginKind::kArgument      ? "call_arg"
                     : origin.kind == OriginKind::kConfigField ? "model_config"
                     : origin.kind == OriginKind::kEnvVar      ? "env"
                     : origin.kind == OriginKind::kGlobalFlag  ? "global_flag"
                                                               : "";
  const ConfigDifference* best = nullptr;
  for (const ConfigDifference& d : diffs) {
    if (LastComponent(d.key) != ident) continue;
    // Same identifier: prefer the entry of the matching source (an argument
    // of generate and the model config field may share a name).
    if (best == nullptr || (d.source == want && best->source != want)) best = &d;
  }
  if (best != nullptr) {
    *out = *best;
    return true;
  }
  if (origin.kind == OriginKind::kEnvVar) {
    // The snapshot keeps only framework variables; the traced values stand in.
    auto unquote = [](std::string v) {
      if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
      if (v == "<unbound>" || v.empty()) v = "<absent>";
      return v;
    };
    *out = {"env." + origin.name, unquote(origin.value_a), unquote(origin.value_b), "env"};
    return true;
  }
  return false;
}


std::string LineSentence(const LineDiagnosis& line) {
  if (!line.found) return "";
  const LineDivergence& v = line.divergence;
  std::string s;
  if (line.mode == "values") {
    s = fmt::format(" Line trace: {} ran the same lines on both sides; at line {} `{}` (call {}) `{}` differs; ",
                    line.function, v.branch_line, line.branch_text, v.call + 1,
                    line.key_variables.empty() ? std::string("?") : line.key_variables.front());
  } else {
    s = fmt::format(" Line trace: in {} (call {}), after line {} `{}`, A ran line {} and B ran line {}; ",
                    line.function, v.call + 1, v.branch_line, line.branch_text,
                    v.line_a < 0 ? std::string("(return)") : std::to_string(v.line_a),
                    v.line_b < 0 ? std::string("(return)") : std::to_string(v.line_b));
  }
  if (line.origin.kind != OriginKind::kUnknown) {
    s += fmt::format("`{}` comes from {} `{}` ({}:{}), A: {}, B: {}.",
                     line.key_variables.empty() ? line.origin.name : line.key_variables.front(),
                     OriginKindName(line.origin.kind), line.origin.name, line.origin.file, line.origin.line,
                     line.origin.value_a.empty() ? "?" : line.origin.value_a,
                     line.origin.value_b.empty() ? "?" : line.origin.value_b);
  } else {
    s += fmt::format("the condition `{}` could not be traced to a config entry.", line.condition);
  }
  return s;
}

void ApplyLineDiagnosis(LineDiagnosis line, const std::vector<ConfigDifference>& diffs, Diagnosis* d) {
  ConfigDifference mapped;
  if (line.found && MapOriginToConfig(line.origin, diffs, &mapped)) {
    line.config_key = mapped.key;
    auto it = std::find_if(d->candidates.begin(), d->candidates.end(),
                           [&](const Candidate& c) { return c.config.key == mapped.key; });
    Candidate c;
    if (it != d->candidates.end()) {
      c = *it;
      d->candidates.erase(it);
    } else {
      c.config = mapped;
      c.name = line.origin.name;
    }
    c.frame_distance = 0;
    c.evidence = fmt::format("{}:{}: {} (line trace)", line.file, line.divergence.branch_line, line.branch_text);
    d->candidates.insert(d->candidates.begin(), std::move(c));
  }
  d->line = std::make_shared<const LineDiagnosis>(std::move(line));
  // The line trace may have made another entry the top candidate: choose the
  // root cause again and recompose the sentence with it.
  FinishDiagnosis(d);
}

}  // namespace magneton::diagnose
