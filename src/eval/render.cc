// The results table, docs/EVALUATION.md and the JSON file.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "eval/eval.h"
#include "base/format.h"

namespace magneton::eval {
namespace {

std::string Yes(bool b) { return b ? "yes" : "no"; }

std::string Num(double v) { return fmt::format("{:g}", v); }

std::string Pct(double share) { return fmt::format("{:+.1f}%", 100 * share); }

size_t HeadlineIndex(const Report& r) {
  const SweepOptions& o = r.options;
  for (size_t i = 0; i < o.epsilons.size(); ++i) {
    for (size_t j = 0; j < o.taus.size(); ++j) {
      if (o.epsilons[i] == o.headline.epsilon && o.taus[j] == o.headline.tau) return i * o.taus.size() + j;
    }
  }
  return 0;
}

std::string Saving(const CaseResult& c) {
  if (!c.ok) return "-";
  return Pct(c.saving_share()) + " (" + magneton::ProvenanceName(c.provenance) + ")";
}

std::string Escape(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

// Detection verdict of one case at the headline setting.
std::string DetectedCell(const CaseResult& c) {
  if (!c.skipped.empty()) return "skipped";
  if (!c.ok) return "FAILED";
  // With repeated pairs, over how many the verdict's interval was taken: "yes (3 pairs)".
  // A distributed case: its ranks were diffed rank with rank ("yes (3 pairs, 2 ranks)").
  std::vector<std::string> parts;
  if (c.repeats > 1) parts.push_back(fmt::format("{} pairs", c.repeats));
  if (c.ranks > 0) parts.push_back(fmt::format("{} ranks", c.ranks));
  const std::string votes = parts.empty() ? std::string() : " (" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
  if (c.expected.is_control()) return (c.headline.false_positive ? "FALSE POSITIVE" : "no (correct)") + votes;
  return Yes(c.headline.detected) + votes;
}

std::string RootCell(const CaseResult& c) {
  if (!c.ok || !c.skipped.empty()) return "-";
  if (c.expected.is_control()) return "n/a";
  return Yes(c.headline.root_cause_right);
}

// A table of `metric` per (epsilon row, tau column).
template <typename F>
std::string SweepTable(const Report& r, const std::string& title, F metric) {
  const SweepOptions& o = r.options;
  std::string s = "| " + title + " |";
  for (double t : o.taus) s += " τ=" + Num(t) + " |";
  s += "\n|---|";
  for (size_t j = 0; j < o.taus.size(); ++j) s += "---|";
  s += "\n";
  for (size_t i = 0; i < o.epsilons.size(); ++i) {
    s += fmt::format("| ε={} |", Num(o.epsilons[i]));
    for (size_t j = 0; j < o.taus.size(); ++j) {
      s += fmt::format(" {} |", metric(CountAt(r.cases, i * o.taus.size() + j)));
    }
    s += "\n";
  }
  return s;
}

// The note column: why a case was skipped or failed, else the scoring note.
std::string NoteCell(const CaseResult& c) {
  if (!c.skipped.empty()) return c.skipped;
  return c.ok ? c.headline.note : c.error;
}

}  // namespace

std::string RenderTable(const Report& r) {
  std::string s;
  const SweepOptions& o = r.options;
  s += fmt::format("Per case at epsilon={} tau={} (min share {}; energy is {}):\n", Num(o.headline.epsilon),
                   Num(o.headline.tau), Num(o.min_share),
                   r.cases.empty() ? "estimated" : magneton::ProvenanceName(r.cases.front().provenance));
  s += fmt::format("  {:<16} {:<8} {:<15} {:<11} {:<22} {}\n", "case", "category", "detected", "root cause",
                   "saving A-B (job)", "note");
  for (const CaseResult& c : r.cases) {
    s += fmt::format("  {:<16} {:<8} {:<15} {:<11} {:<22} {}\n", c.expected.id, c.expected.category, DetectedCell(c),
                     RootCell(c), Saving(c), NoteCell(c));
  }
  s += "\nF1 of detection (rows epsilon, columns tau):\n";
  s += fmt::format("  {:>8}", "");
  for (double t : o.taus) s += fmt::format(" {:>7}", Num(t));
  s += "\n";
  for (size_t i = 0; i < o.epsilons.size(); ++i) {
    s += fmt::format("  {:>8}", Num(o.epsilons[i]));
    for (size_t j = 0; j < o.taus.size(); ++j) {
      s += fmt::format(" {:>7.2f}", CountAt(r.cases, i * o.taus.size() + j).f1());
    }
    s += "\n";
  }
  const Counts h = CountAt(r.cases, HeadlineIndex(r));
  s += fmt::format("\nAt epsilon={} tau={}: precision {:.2f}, recall {:.2f}, F1 {:.2f} (TP {}, FN {}, FP {})\n",
                   Num(o.headline.epsilon), Num(o.headline.tau), h.precision(), h.recall(), h.f1(), h.tp, h.fn, h.fp);
  return s;
}

std::string RenderMarkdown(const Report& r, const std::string& after_headline) {
  const SweepOptions& o = r.options;
  const size_t hi = HeadlineIndex(r);
  const Counts h = CountAt(r.cases, hi);
  int positives = 0, controls = 0, detected = 0, root = 0, fp = 0, failed = 0;
  int skipped = 0;
  for (const CaseResult& c : r.cases) {
    if (!c.skipped.empty()) {
      ++skipped;
      continue;
    }
    if (!c.ok) ++failed;
    if (c.expected.is_control()) {
      ++controls;
      fp += c.ok && c.headline.false_positive;
    } else {
      ++positives;
      detected += c.ok && c.headline.detected;
      root += c.ok && c.headline.root_cause_right;
    }
  }
  // Best F1 over the sweep.
  size_t best = 0;
  double best_f1 = -1;
  for (size_t k = 0; k < o.epsilons.size() * o.taus.size(); ++k) {
    if (CountAt(r.cases, k).f1() > best_f1) {
      best_f1 = CountAt(r.cases, k).f1();
      best = k;
    }
  }
  const Counts b = CountAt(r.cases, best);

  std::string s;
  s += "# Evaluation on the known-case suite\n\n";
  s += "Generated by `magneton eval` (src/eval/, src/cli/cmd_eval.cc); regenerate it with the command below, never "
       "edit it by hand.\n\n";
  s += "- Command: `" + r.command + "`\n";
  s += "- Date: " + r.date + "\n";
  s += "- Machine: " + r.machine + "\n";
  s += fmt::format("- Wall time: {:.0f} s for {} cases\n", r.total_seconds, r.cases.size());
  s += "- Energy: every figure below is **estimated** from CPU time unless marked measured (the provenance of each "
       "recording is in parentheses).\n\n";

  s += "## Headline\n\n";
  s += fmt::format("At the diff defaults ε = {}, τ = {} (min share {}): **precision {:.2f}, recall {:.2f}, F1 {:.2f}** "
                   "(TP {}, FN {}, FP {}). Detected {}/{} cases, root cause right {}/{}, false positives on {}/{} "
                   "negative controls.",
                   Num(o.headline.epsilon), Num(o.headline.tau), Num(o.min_share), h.precision(), h.recall(), h.f1(),
                   h.tp, h.fn, h.fp, detected, positives, root, positives, fp, controls);
  s += fmt::format(" Best F1 over the sweep: {:.2f} at ε = {}, τ = {} (precision {:.2f}, recall {:.2f}).", best_f1,
                   Num(o.epsilons[best / o.taus.size()]), Num(o.taus[best % o.taus.size()]), b.precision(), b.recall());
  if (failed) s += fmt::format(" {} case(s) failed to run (see below).", failed);
  if (skipped) s += fmt::format(" {} case(s) skipped on this machine (see below; they count in no score).", skipped);
  s += "\n";
  s += after_headline;
  s += "\n";

  s += "## How it is scored\n\n";
  s += "- Each case's `a.py` and `b.py` are recorded with `--values`; the diff runs in-process (detect + diagnose) "
       "with matching once per ε and classification once per τ. ε is the one tensor tolerance: matching and the "
       "region-output comparison.\n";
  s += "- **Detected**: the top-ranked waste finding is on the expected waste side and its region (with nested ops) "
       "runs one of `region.ops`, or an op's scope contains `region.scope_contains`, or a frame of its call paths "
       "contains `region.source_contains`.\n";
  s += "- **Root cause right** (headline setting only): only the structured `root_cause` of the top waste finding's "
       "diagnosis counts, when that finding is on the expected waste side: its `kind` equals `root_cause.kind` of "
       "expected.json and its `name` agrees with the expected `name` or one of its `aliases`: split at `.`, `::` "
       "and `/`, lower-cased, leading underscores stripped, a leading `aten` or `Tensor` read as `torch`, the "
       "shorter name's components end the longer's (`use_cache` agrees with `call.generate.use_cache`; "
       "`torch.backends.mkldnn.enabled` does not with `torch.backends.cudnn.enabled`). Words in sentences, sites or "
       "paths never count; `description` is never scored.\n";
  s += "- **Saving**: job energy (first op to last op; interpreter start-up and imports excluded) (A − B) / A of the two recordings, in the detect domain.\n";
  const int repeats = r.cases.empty() ? 1 : std::max_element(r.cases.begin(), r.cases.end(),
                                                                  [](const CaseResult& x, const CaseResult& y) {
                                                                    return x.repeats < y.repeats;
                                                                  })->repeats;
  if (repeats > 1) {
    s += fmt::format("- {} recorded pairs per case, interleaved (A B, B A, A B, ...): all pairs of a case are diffed "
                     "together in one analysis session, so every finding's interval is a Student t interval over the "
                     "pairs (docs/DIFF.md, \"Uncertainty\"); a finding is waste only when its interval clears tau. "
                     "Energies are medians over the pairs.\n",
                     repeats);
  } else {
    s += "- One recording per side and case (`--repeats N` records N pairs and diffs them together, intervals over "
         "the pairs): with one recording a same-work difference is waste only when something recorded differs for "
         "its ops (a runtime state, a kernel, a layout, a setting that reaches every op) or it clears twice what the "
         "machine did to the rest of its run (docs/DIFF.md \"Uncertainty\"), and a case near a threshold can flip "
         "between runs.\n";
  }
  s += "- **Precision / recall / F1**: positives are the non-control cases (TP if detected, FN if not); each control "
       "with any waste finding is a FP. A case that failed to run counts as FN (or as no FP).\n";
  s += "- A case with `\"needs_gpu\": true` is skipped when no NVIDIA GPU is visible (driver files, "
       "`CUDA_VISIBLE_DEVICES`); a skipped case counts in no score. A case with an `env.json` records each side "
       "with that side's library versions, installed into a cached virtual environment on top of the main one.\n\n";

  s += "## Per case\n\n";
  s += fmt::format("At ε = {}, τ = {}.\n\n", Num(o.headline.epsilon), Num(o.headline.tau));
  s += "| case | category | detected | root cause right | saving (A − B) / A, job | energy A | energy B | top "
       "waste finding | note |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const CaseResult& c : r.cases) {
    const std::string ea = c.ok ? magneton::FormatEnergy(c.energy_a_uj, c.provenance) : "-";
    const std::string eb = c.ok ? magneton::FormatEnergy(c.energy_b_uj, c.provenance) : "-";
    std::string top = "-";
    if (c.ok && c.headline_evidence.has_waste) {
      top = fmt::format("{} on {}, saves {} ({:.1f}% of the job)", c.headline_evidence.kind,
                        c.headline_evidence.wasteful_side,
                        magneton::FormatEnergy(c.headline_evidence.saving_uj, c.provenance),
                        100 * c.headline_evidence.share_of_total);
    }
    if (c.ok && !c.expected.is_control()) {
      if (top == "-") top = "none";
      top += c.expected_waste_rank ? fmt::format("; the expected region is waste finding #{}", c.expected_waste_rank)
                                   : std::string("; no waste finding is the expected region");
    }
    s += "| " + c.expected.id + " | " + c.expected.category + " | " + DetectedCell(c) + " | " + RootCell(c) + " | " +
         Saving(c) + " | " + ea + " | " + eb + " | " + Escape(top) + " | " +
         Escape(NoteCell(c)) + " |\n";
  }
  s += "\nDiagnosis sentence of the top waste finding:\n\n";
  for (const CaseResult& c : r.cases) {
    if (c.ok && !c.headline_sentence.empty()) s += "- **" + c.expected.id + "**: " + Escape(c.headline_sentence) + "\n";
  }

  s += "\n## Sweep\n\n";
  s += "Rows ε, columns τ; min share " + Num(o.min_share) + ".\n\n";
  s += "### F1\n\n" + SweepTable(r, "F1", [](const Counts& c) { return fmt::format("{:.2f}", c.f1()); });
  s += "\n### Precision\n\n" +
       SweepTable(r, "precision", [](const Counts& c) { return fmt::format("{:.2f}", c.precision()); });
  s += "\n### Recall\n\n" + SweepTable(r, "recall", [](const Counts& c) { return fmt::format("{:.2f}", c.recall()); });
  s += "\n### TP / FN / FP\n\n" +
       SweepTable(r, "TP/FN/FP", [](const Counts& c) { return fmt::format("{}/{}/{}", c.tp, c.fn, c.fp); });

  s += "\n## False positives on the negative controls\n\n";
  s += "| control | FP at the headline setting | settings with a FP (of " +
       std::to_string(o.epsilons.size() * o.taus.size()) + ") | waste findings at the headline setting | note |\n";
  s += "|---|---|---|---|---|\n";
  for (const CaseResult& c : r.cases) {
    if (!c.expected.is_control() || !c.skipped.empty()) continue;
    int n = 0;
    for (const CaseScore& sc : c.scores) n += sc.false_positive;
    s += "| " + c.expected.id + " | " + (c.ok ? Yes(c.headline.false_positive) : "FAILED") + " | " +
         std::to_string(n) + " | " + (c.ok && hi < c.waste_findings.size() ? std::to_string(c.waste_findings[hi]) : "-") +
         " | " + Escape(c.ok ? c.headline.note : c.error) + " |\n";
  }

  s += "\n## Run times\n\n| case | ops A | ops B | record (s) | diff sweep (s) |\n|---|---|---|---|---|\n";
  for (const CaseResult& c : r.cases) {
    s += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} |\n", c.expected.id, c.ops_a, c.ops_b, c.record_seconds,
                     c.diff_seconds);
  }
  return s;
}

nlohmann::json ToJson(const Report& r) {
  const SweepOptions& o = r.options;
  nlohmann::json j;
  j["schema"] = "magneton.eval/1";
  j["command"] = r.command;
  j["date"] = r.date;
  j["machine"] = r.machine;
  j["total_seconds"] = r.total_seconds;
  j["options"] = {{"epsilons", o.epsilons}, {"taus", o.taus}, {"min_share", o.min_share},
                  {"max_slowdown", o.max_slowdown},
                  {"headline", {{"epsilon", o.headline.epsilon}, {"tau", o.headline.tau}}}};
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& c : r.cases) {
    nlohmann::json cj = {{"id", c.expected.id},         {"category", c.expected.category},
                         {"ok", c.ok},                  {"error", c.error},
                         {"skipped", c.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.skipped)},
                         {"record_seconds", c.record_seconds}, {"diff_seconds", c.diff_seconds},
                         {"ops_a", c.ops_a},            {"ops_b", c.ops_b}};
    if (c.ok) {
      cj["energy"] = {{"domain", c.domain},
                      {"provenance", magneton::ProvenanceName(c.provenance)},
                      {"a_uj", c.energy_a_uj},
                      {"b_uj", c.energy_b_uj},
                      {"saving_share", c.saving_share()}};
      const Evidence& e = c.headline_evidence;
      cj["repeats"] = c.repeats;
      if (c.ranks > 0) cj["job"] = {{"ranks", c.ranks}, {"headline_rank", c.headline_rank}};
      cj["headline"] = {{"detected", c.headline.detected},
                        {"root_cause_right", c.headline.root_cause_right},
                        {"false_positive", c.headline.false_positive},
                        {"note", c.headline.note},
                        {"waste_findings", e.waste_findings},
                        {"expected_waste_rank", c.expected_waste_rank},
                        {"top_waste", e.has_waste ? nlohmann::json{{"kind", e.kind},
                                                                   {"side", std::string(1, e.wasteful_side)},
                                                                   {"saving_uj", e.saving_uj},
                                                                   {"share_of_total", e.share_of_total},
                                                                   {"sentence", c.headline_sentence}}
                                                  : nlohmann::json(nullptr)}};
      nlohmann::json sweep = nlohmann::json::array();
      for (size_t k = 0; k < c.settings.size(); ++k) {
        sweep.push_back({{"epsilon", c.settings[k].epsilon},
                         {"tau", c.settings[k].tau},
                         {"detected", c.scores[k].detected},
                         {"false_positive", c.scores[k].false_positive},
                         {"waste_findings", c.waste_findings[k]},
                         {"note", c.scores[k].note}});
      }
      cj["sweep"] = sweep;
    }
    cases.push_back(cj);
  }
  j["cases"] = cases;
  nlohmann::json sweep = nlohmann::json::array();
  for (size_t i = 0; i < o.epsilons.size(); ++i) {
    for (size_t k = 0; k < o.taus.size(); ++k) {
      const Counts c = CountAt(r.cases, i * o.taus.size() + k);
      sweep.push_back({{"epsilon", o.epsilons[i]}, {"tau", o.taus[k]}, {"tp", c.tp}, {"fn", c.fn}, {"fp", c.fp},
                       {"precision", c.precision()}, {"recall", c.recall()}, {"f1", c.f1()}});
    }
  }
  j["sweep"] = sweep;
  return j;
}

}  // namespace magneton::eval
