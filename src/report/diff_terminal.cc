// Terminal report: a ranked table readable in five seconds, then each
// flagged finding's diagnosis.
#include <fmt/format.h>

#include "diagnose/line_diagnosis.h"
#include "diagnose/region_name.h"
#include "report/diff_report.h"
#include "base/format.h"

namespace magneton::report {
namespace {

using detect::Finding;

// The row's name: what the region is (diagnose/region_name.h), else its kind.
std::string RegionTitle(const DiffReportInput& in, const Finding& f) { return RegionNameOf(in, f).text; }

// "1.52 [1.31, 1.77]": the ratio and its interval ("n/a" when there is none).
std::string RatioWithInterval(const Finding& f) {
  const detect::Interval& i = f.uncertainty.ratio;
  if (!i.known) return fmt::format("{:.2f} [n/a]", f.energy_ratio);
  return fmt::format("{:.2f} [{:.2f}, {:.2f}]", f.energy_ratio, i.low, i.high);
}

std::string Clip(const std::string& s, size_t width) { return ClipUtf8(s, width, "~"); }

}  // namespace

std::vector<std::string> SourcesRead(const DiffReportInput& in) {
  return in.source_roots ? in.source_roots->files_read() : std::vector<std::string>{};
}

const diagnose::Diagnosis* DiagnosisFor(const DiffReportInput& in, size_t index) {
  if (!in.diagnoses) return nullptr;
  for (const auto& d : *in.diagnoses) {
    if (d.finding_index == index) return &d;
  }
  return nullptr;
}

diagnose::RegionName RegionNameOf(const DiffReportInput& in, const Finding& f) {
  static const Trace kEmpty;
  return diagnose::NameRegion(in.a ? *in.a : kEmpty, in.b ? *in.b : kEmpty, f);
}

bool BelowNoiseFloor(const Finding& f, double tau) {
  if (f.verdict != detect::Verdict::kEqual || detect::HoldsNoOps(f.kind)) return false;
  const double costly = f.energy_ratio >= 1 ? f.energy_ratio : (f.energy_ratio > 0 ? 1 / f.energy_ratio : 0);
  return costly > 1 + tau;
}

double WasteSavingUj(const detect::DetectResult& r) {
  double uj = 0;
  for (const Finding& f : r.findings) {
    if (f.verdict == detect::Verdict::kWaste) uj += f.saving_uj;
  }
  return uj;
}

// A line when other work used the machine while either side was recorded:
// its times, and estimated or measured energy, grow with it.
static std::string MachineLoadLine(const detect::DetectResult& r) {
  const double la = r.a.machine.Total(), lb = r.b.machine.Total();
  if (std::max(la, lb) < detect::kMaterialLoad) return "";
  auto share = [](double v) { return v < 0 ? std::string("not recorded") : fmt::format("{:.0f}%", 100 * v); };
  const bool over_job = r.a.machine.over_job && r.b.machine.over_job;
  std::string out = over_job ? fmt::format("machine load: other processes and steal took {} of the CPU time while A's "
                                           "job ran, {} while B's did",
                                           share(la), share(lb))
                             : fmt::format("machine load: other processes and steal took {} of the CPU time while A "
                                           "was recorded, {} while B was",
                                           share(la), share(lb));
  const bool b_busier = lb > la;
  const double bound = b_busier ? detect::LoadSlowdownBound(r.b, r.a) : detect::LoadSlowdownBound(r.a, r.b);
  if (bound > 1) {
    out += fmt::format(": {} may look up to {:.2f}x costlier for that alone; findings it can explain are "
                       "inconclusive",
                       b_busier ? 'B' : 'A', bound);
  }
  return out + "\n";
}

std::string RenderDiffTerminal(const DiffReportInput& in) {
  const detect::DetectResult& r = *in.result;
  const Provenance p = r.provenance;
  std::string out;
  // The job (first op to last op) is what is compared; the whole run adds
  // interpreter start-up and imports.
  out += fmt::format("A: {}  ({} ops, job {} in {}; whole run {})\n", in.path_a, r.a.op_count,
                     magneton::FormatEnergy(r.a.job_uj, p), magneton::FormatDuration(r.a.job_ns),
                     magneton::FormatEnergy(r.a.total_uj, p));
  out += fmt::format("B: {}  ({} ops, job {} in {}; whole run {})\n", in.path_b, r.b.op_count,
                     magneton::FormatEnergy(r.b.job_uj, p), magneton::FormatDuration(r.b.job_ns),
                     magneton::FormatEnergy(r.b.total_uj, p));
  out += fmt::format("energy domain {}: {}{}\n", r.domain, ProvenanceHeading(p),
                     p == Provenance::kMeasured ? "" : " (no hardware counter; a model of CPU time, not joules measured)");
  out += MachineLoadLine(r);
  size_t waste = 0, trade = 0, inconclusive = 0;
  for (const Finding& f : r.findings) {
    waste += f.verdict == detect::Verdict::kWaste;
    trade += f.verdict == detect::Verdict::kTradeOff;
    inconclusive += f.verdict == detect::Verdict::kInconclusive;
  }
  out += fmt::format("tau {:g}, {} recording(s) per side, {} matched region pair(s) -> {} finding(s): {} waste, {} "
                     "trade-off, {} inconclusive; waste total {}\n",
                     r.options.tau, r.runs, r.matched_region_pairs, r.findings.size(), waste, trade, inconclusive,
                     magneton::FormatEnergy(WasteSavingUj(r), p));
  out += fmt::format("intervals: {:.0f}% on A/B, {}\n", 100 * r.options.confidence,
                     r.runs > 1 ? "Student t over the runs' log ratios"
                                : "paired bootstrap over each region's occurrences in the one recording");
  if (inconclusive) {
    out += "inconclusive: the point estimate differs by more than tau, the evidence does not; record more runs per "
           "side (magneton compare -n 3 -- CMD_A -- CMD_B)\n";
  }
  out += "\n";

  out += fmt::format("{:>3}  {:<12}  {:<38}  {:>4}  {:>24}  {:>24}  {:>20}  {:>24}  {:>6}\n", "#", "verdict", "region",
                     "reps", "A energy", "B energy", "A/B [interval]", "could save", "share");
  // Ten rows fit on a screen; the rest are in --json / --html.
  constexpr int kMaxRows = 10;
  int rank = 0;
  size_t equal_hidden = 0, flagged_hidden = 0;
  for (const Finding& f : r.findings) {
    if (f.verdict == detect::Verdict::kEqual) {
      ++equal_hidden;
      continue;
    }
    if (rank == kMaxRows) {
      ++flagged_hidden;
      continue;
    }
    out += fmt::format("{:>3}  {:<12}  {:<38}  {:>4}  {:>24}  {:>24}  {:>20}  {:>24}  {:>5.1f}%\n", ++rank,
                       detect::VerdictName(f.verdict), Clip(RegionTitle(in, f), 38), f.instances.size(),
                       magneton::FormatEnergy(f.a.energy_uj, p), magneton::FormatEnergy(f.b.energy_uj, p),
                       RatioWithInterval(f),
                       std::string(1, f.wasteful_side ? f.wasteful_side : '-') + ": " +
                           magneton::FormatEnergy(f.saving_uj, p),
                       100 * f.share_of_total);
  }
  if (rank == 0) out += "     no region differs by more than tau: nothing to fix\n";
  if (flagged_hidden) out += fmt::format("     ({} smaller flagged region(s) not shown; see --json or --html)\n", flagged_hidden);
  if (equal_hidden) out += fmt::format("     ({} region(s) equal within tau not shown; see --json)\n", equal_hidden);

  rank = 0;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    if (f.verdict == detect::Verdict::kEqual) continue;
    const diagnose::Diagnosis* d = DiagnosisFor(in, i);
    // Past the row limit, only the finding the line trace ran on is shown:
    // its root cause is the one thing the reader must not miss.
    if (++rank > kMaxRows && !(d && d->line)) continue;
    // One line that says what, how sure and how much; then the cause.
    const char costly = f.wasteful_side ? f.wasteful_side : 'A';
    out += fmt::format("\n[{}] {} — {}{} — {} could save {}, {:.1f}% of {}'s job; A/B {}\n", rank,
                       detect::VerdictName(f.verdict), RegionTitle(in, f),
                       f.instances.size() > 1 ? fmt::format(" ×{}", f.instances.size()) : "", costly,
                       magneton::FormatEnergy(f.saving_uj, p), 100 * f.share_of_total, costly, RatioWithInterval(f));
    if (d) out += "    " + diagnose::RootCauseLine(d->root_cause) + "\n";
    if (f.verdict == detect::Verdict::kInconclusive && !f.uncertainty_note.empty()) {
      out += "    inconclusive: " + f.uncertainty_note + "\n";
    }
    // The device work behind it (device attribution): what a GPU spent it on.
    for (const bool side_a : {true, false}) {
      const auto& kernels = side_a ? f.kernels_a : f.kernels_b;
      if (kernels.empty()) continue;
      std::string list;
      const size_t shown = in.verbose ? kernels.size() : std::min<size_t>(3, kernels.size());
      for (size_t k = 0; k < shown; ++k) {
        const detect::KernelCost& c = kernels[k];
        list += fmt::format("{}{}{} {} in {}", k ? "; " : "", Clip(c.name, 48),
                            c.count > 1 ? fmt::format(" ×{}", c.count) : "", magneton::FormatEnergy(c.energy_uj, p),
                            magneton::FormatDuration(c.time_ns));
      }
      if (shown < kernels.size()) list += fmt::format("; {} more", kernels.size() - shown);
      out += fmt::format("    GPU work in {}: {}\n", side_a ? 'A' : 'B', list);
    }
    // What an unmatched region holds, on each side that has ops there.
    if (f.kind == detect::RegionKind::kUnmatched && !f.instances.empty()) {
      for (const bool side_a : {true, false}) {
        const Trace* t = side_a ? in.a : in.b;
        const auto& ops = side_a ? f.instances.front().ops_a : f.instances.front().ops_b;
        if (!t || ops.empty()) continue;
        std::string parts;
        for (const diagnose::RegionPart& part : diagnose::TopParts(*t, ops, 3)) {
          parts += fmt::format("{}{} ({} op(s), {})", parts.empty() ? "" : "; ", part.name, part.ops,
                               magneton::FormatDuration(part.time_ns));
        }
        out += fmt::format("    unmatched in {}: {}\n", side_a ? 'A' : 'B', parts);
      }
    }
    if (!d) continue;
    for (const auto& st : d->states) {
      out += fmt::format("    runtime state: {} = {} (A) / {} (B){}\n", st.key, st.value_a, st.value_b,
                         st.where.empty() ? "" : fmt::format("  set by {} at {}", st.setter_side,
                                                             diagnose::ShortPath(st.where)));
    }
    if (!d->sites_costly.empty()) {
      const auto& s = d->sites_costly.front();
      const std::string user = s.user_frame.empty() ? "" : diagnose::ShortPath(diagnose::FileLine(s.user_frame));
      const std::string api = diagnose::ShortPath(s.api_frame.empty() ? s.library_frame : s.api_frame);
      out += fmt::format("    issued at {}{} ({} op(s){})\n", user.empty() ? "" : user + " via ", api, s.op_count,
                         d->sites_costly.size() > 1 ? fmt::format(", {} more site(s)", d->sites_costly.size() - 1)
                                                    : "");
    }
    if (d->line && d->line->found) {
      const diagnose::LineDiagnosis& l = *d->line;
      out += fmt::format("    line trace: {} → {} `{}` at {}:{}  A: {}  B: {}{}\n", diagnose::ShortPathsIn(l.function),
                         diagnose::OriginKindName(l.origin.kind), l.origin.name, diagnose::ShortPath(l.origin.file),
                         l.origin.line, l.origin.value_a, l.origin.value_b,
                         l.config_key.empty() ? "" : "  -> config " + l.config_key);
    } else if (d->line) {
      out += "    line trace: none (" + d->line->note + ")\n";
    }
    if (!in.verbose) continue;
    out += fmt::format("    A: {} in {}    B: {} in {}    ({})\n", magneton::FormatEnergy(f.a.energy_uj, p),
                       magneton::FormatDuration(f.a.time_ns), magneton::FormatEnergy(f.b.energy_uj, p),
                       magneton::FormatDuration(f.b.time_ns), f.outputs_note);
    const detect::Uncertainty& u = f.uncertainty;
    if (u.ratio.known) {
      out += fmt::format("    A/B {} ({} over {} {}); could save {} to {}\n", RatioWithInterval(f), u.method,
                         u.units, u.unit, magneton::FormatEnergy(std::max(0.0, u.saving_uj.low), p),
                         magneton::FormatEnergy(std::max(0.0, u.saving_uj.high), p));
    }
    if (f.verdict != detect::Verdict::kInconclusive && !f.uncertainty_note.empty()) {
      out += "    " + f.uncertainty_note + "\n";
    }
    out += "    " + d->sentence + "\n";
    if (d->root_cause.found()) out += "    cause " + diagnose::CauseStrengthLine(*d, kMaxCauseAlternatives) + "\n";
    if (d->kind == diagnose::Kind::kSameApiDifferentKernel) {
      const auto& k = d->kernel;
      const size_t rows = std::min<size_t>(12, std::max(k.nested_a.size(), k.nested_b.size()));
      out += fmt::format("      {:<40} | {}\n", "A: nested in " + Clip(k.op, 28), "B: nested in " + k.op);
      for (size_t i = 0; i < rows; ++i) {
        out += fmt::format("      {:<40} | {}\n", i < k.nested_a.size() ? Clip(k.nested_a[i], 40) : "",
                           i < k.nested_b.size() ? k.nested_b[i] : "");
      }
      if (rows < std::max(k.nested_a.size(), k.nested_b.size())) out += "      …\n";
    }
    // Side by side only where it fits; long regions are summarised in the sentence.
    if (d->kind == diagnose::Kind::kDifferentOps && std::max(f.names_a.size(), f.names_b.size()) <= 24) {
      const size_t rows = std::min<size_t>(12, std::max(f.names_a.size(), f.names_b.size()));
      for (size_t k = 0; k < rows; ++k) {
        out += fmt::format("      {:<40} | {}\n", k < f.names_a.size() ? Clip(f.names_a[k], 40) : "",
                           k < f.names_b.size() ? f.names_b[k] : "");
      }
      if (rows < std::max(f.names_a.size(), f.names_b.size())) out += "      …\n";
    }
    for (const auto& s : d->sites_costly) {
      out += fmt::format("    issued at {}{} ({} op(s))\n", s.user_frame.empty() ? "" : s.user_frame + " via ",
                         s.library_frame, s.op_count);
    }
    if (d->deviation.found) {
      out += fmt::format("    deviation point: A {}  |  B {}\n", d->deviation.frame_a, d->deviation.frame_b);
    }
    if (d->line && d->line->found) {
      const diagnose::LineDiagnosis& l = *d->line;
      const auto line_no = [](int64_t n) { return n < 0 ? std::string("(return)") : std::to_string(n); };
      out += fmt::format("    line trace: {}{} (call {} of {} / {}{})\n", l.function,
                         l.frame_distance > 0 ? fmt::format(", {} frame(s) above the deviation point", l.frame_distance)
                                              : std::string(),
                         l.divergence.call + 1, l.divergence.calls_a, l.divergence.calls_b,
                         l.mode == "values" ? "; the same lines ran, values differ" : "");
      if (l.mode != "values") {
        out += fmt::format("      branch  {}: {}\n", l.divergence.branch_line, l.branch_text);
        out += fmt::format("      A next  {}: {}\n", line_no(l.divergence.line_a), l.text_a);
        out += fmt::format("      B next  {}: {}\n", line_no(l.divergence.line_b), l.text_b);
      }
      for (const auto& s : l.chain) {
        out += fmt::format("      {:<8}{}: {}{}\n", s.how == "branch" ? "reads" : s.how == "assigned" ? "from" : s.how,
                           s.line, s.text,
                           s.value_a.empty() && s.value_b.empty()
                               ? ""
                               : fmt::format("   [{}: A {} | B {}]", s.variable, s.value_a, s.value_b));
      }
      out += fmt::format("      origin: {} `{}` at {}:{}  A: {}  B: {}{}\n", diagnose::OriginKindName(l.origin.kind),
                         l.origin.name, l.origin.file, l.origin.line, l.origin.value_a, l.origin.value_b,
                         l.config_key.empty() ? "" : "  -> config " + l.config_key);
    }
    for (size_t c = 0; c < d->candidates.size() && c < 3; ++c) {
      const auto& cand = d->candidates[c];
      out += fmt::format("    candidate {}: {} = {} (A) / {} (B)  [{}]{}\n", c + 1, cand.config.key,
                         cand.config.value_a, cand.config.value_b, cand.config.source,
                         cand.evidence.empty() ? "" : "  named at " + cand.evidence);
    }
  }
  if (in.verbose) {
    const std::vector<std::string> read = SourcesRead(in);
    out += read.empty() ? "\nsources read: none\n" : "\nsources read:\n";
    for (const std::string& file : read) out += "  " + file + "\n";
  }
  if (!in.verbose && rank > 0) {
    out += "\n(-v for each finding's energy, interval basis, op lists, call sites, deviation point, line-trace chain "
           "and candidates)\n";
  }
  return out;
}

}  // namespace magneton::report
