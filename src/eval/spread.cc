#include "eval/spread.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace magneton::eval {
namespace {

// The JSON holds the doubles the sweep was given; a relative tolerance keeps
// "1e-05" written by one build and read by another equal.
bool Same(double x, double y) { return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y)); }

bool InRange(double epsilon) {
  return (epsilon > kSpreadEpsilonLow || Same(epsilon, kSpreadEpsilonLow)) &&
         (epsilon < kSpreadEpsilonHigh || Same(epsilon, kSpreadEpsilonHigh));
}

std::string Num(double v) { return fmt::format("{:g}", v); }

std::string List(const std::vector<std::string>& v) { return v.empty() ? "-" : fmt::format("{}", fmt::join(v, ", ")); }

}  // namespace

StatusOr<RunSummary> SummarizeRun(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object() || j.value("schema", "") != "magneton.eval/1") {
    return InvalidArgument(source + ": not the --json output of magneton eval (schema magneton.eval/1)");
  }
  const auto& options = j.find("options");
  const auto& sweep = j.find("sweep");
  const auto& cases = j.find("cases");
  if (options == j.end() || !options->contains("headline") || sweep == j.end() || !sweep->is_array() ||
      cases == j.end() || !cases->is_array()) {
    return InvalidArgument(source + ": lacks options.headline, sweep or cases");
  }
  RunSummary s;
  s.source = source;
  s.date = j.value("date", "");
  s.headline_epsilon = (*options)["headline"].value("epsilon", 0.0);
  s.headline_tau = (*options)["headline"].value("tau", 0.0);
  bool have_headline = false, have_range = false;
  s.min_f1_at_tau = s.min_f1_any_tau = 2;
  for (const auto& row : *sweep) {
    const double epsilon = row.value("epsilon", -1.0), tau = row.value("tau", -1.0), f1 = row.value("f1", 0.0);
    if (Same(epsilon, s.headline_epsilon) && Same(tau, s.headline_tau)) {
      s.headline.tp = row.value("tp", 0);
      s.headline.fn = row.value("fn", 0);
      s.headline.fp = row.value("fp", 0);
      have_headline = true;
    }
    if (!InRange(epsilon)) continue;
    have_range = true;
    s.min_f1_any_tau = std::min(s.min_f1_any_tau, f1);
    if (Same(tau, s.headline_tau) && f1 < s.min_f1_at_tau) {
      s.min_f1_at_tau = f1;
      s.worst_epsilon = epsilon;
    }
  }
  if (!have_headline) return InvalidArgument(source + ": its sweep has no row at the headline setting");
  if (!have_range || s.min_f1_at_tau > 1) {
    return InvalidArgument(fmt::format("{}: its sweep has no epsilon in [{}, {}] at tau {}", source,
                                       Num(kSpreadEpsilonLow), Num(kSpreadEpsilonHigh), Num(s.headline_tau)));
  }
  for (const auto& c : *cases) {
    if (!c.value("ok", false) || (c.contains("skipped") && !c["skipped"].is_null())) continue;
    const std::string id = c.value("id", "");
    s.scored_cases.push_back(id);
    const auto& h = c.find("headline");
    if (h == c.end()) continue;
    if (c.value("category", "") == "control") {
      if (h->value("false_positive", false)) s.false_positives.push_back(id);
    } else if (!h->value("detected", false)) {
      s.missed.push_back(id);
    }
  }
  return s;
}

StatusOr<RunSummary> ReadRunSummary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  return SummarizeRun(j, path);
}

std::string RenderSpread(const std::vector<RunSummary>& runs) {
  if (runs.empty()) return "";
  const RunSummary& last = runs.back();
  const std::string range = fmt::format("[{}, {}]", Num(kSpreadEpsilonLow), Num(kSpreadEpsilonHigh));
  std::string s = "\n## Run-to-run spread\n\n";
  s += fmt::format(
      "One run's F1 is not a measurement: the same suite recorded again moves with this machine's noise. This run "
      "beside {} earlier full run(s) (`--spread-with`, each read from its `--json` file), at the headline ε = {}, "
      "τ = {}, and the lowest F1 over ε in {} (the range issue 14's target is stated over).\n\n",
      runs.size() - 1, Num(last.headline_epsilon), Num(last.headline_tau), range);
  s += fmt::format("| run | date | F1 | precision / recall | TP / FN / FP | lowest F1 over ε in {} at τ {} (at ε) | "
                   "lowest F1 there over every τ | missed | false positives |\n",
                   range, Num(last.headline_tau));
  s += "|---|---|---|---|---|---|---|---|---|\n";
  int at_target = 0;
  double low = 2, high = -1;
  for (size_t k = 0; k < runs.size(); ++k) {
    const RunSummary& r = runs[k];
    const std::string name = k + 1 == runs.size() ? "this run" : fmt::format("run {} (`{}`)", k + 1, r.source);
    s += fmt::format("| {} | {} | {:.2f} | {:.2f} / {:.2f} | {} / {} / {} | {:.2f} ({}) | {:.2f} | {} | {} |\n", name,
                     r.date, r.headline.f1(), r.headline.precision(), r.headline.recall(), r.headline.tp,
                     r.headline.fn, r.headline.fp, r.min_f1_at_tau, Num(r.worst_epsilon), r.min_f1_any_tau,
                     List(r.missed), List(r.false_positives));
    at_target += r.min_f1_at_tau >= 0.9;
    low = std::min(low, r.headline.f1());
    high = std::max(high, r.headline.f1());
  }
  s += fmt::format(
      "\nOver the {} runs: F1 at the headline setting from {:.2f} to {:.2f}; F1 ≥ 0.9 at every ε in {} (τ {}) in {} "
      "of {} run(s).\n",
      runs.size(), low, high, range, Num(last.headline_tau), at_target, runs.size());

  // Which case moved: missed or called waste in some runs and not others.
  std::map<std::string, std::vector<std::string>> moved;
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::string name = k + 1 == runs.size() ? "this run" : fmt::format("run {}", k + 1);
    for (const std::string& id : runs[k].missed) moved[id].push_back(name + " (missed)");
    for (const std::string& id : runs[k].false_positives) moved[id].push_back(name + " (false positive)");
  }
  if (!moved.empty()) {
    s += "\n| case | scored wrong in |\n|---|---|\n";
    for (const auto& [id, where] : moved) s += "| " + id + " | " + List(where) + " |\n";
    s += "\nEvery other case scored the same in every run.\n";
  }
  // Runs that did not score the same cases (a case skipped or failed in one of them) are not like for like.
  for (size_t k = 0; k + 1 < runs.size(); ++k) {
    if (runs[k].scored_cases != last.scored_cases || !Same(runs[k].headline_epsilon, last.headline_epsilon) ||
        !Same(runs[k].headline_tau, last.headline_tau)) {
      s += fmt::format("\nNote: run {} (`{}`) scored other cases or another headline setting than this run; its row "
                       "is not like for like.\n",
                       k + 1, runs[k].source);
    }
  }
  return s;
}

}  // namespace magneton::eval
