// Self-contained HTML report: inline CSS, no scripts, no network. Every
// string that comes from a trace (op names, file names, config values) is
// escaped, because traces are data from someone else's program.
#include <fmt/format.h>

#include <algorithm>

#include "diagnose/line_diagnosis.h"
#include "report/diff_report.h"
#include "report/diff_timeline.h"
#include "report/html_escape.h"
#include "base/format.h"

namespace magneton::report {
namespace {

using detect::Finding;

std::string Esc(const std::string& s) { return HtmlEscape(s); }

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d1d1f;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;width:100%}td,th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
th{background:#f4f4f6}.num{text-align:right;font-variant-numeric:tabular-nums}
.waste{color:#b3261e;font-weight:600}.trade_off{color:#8a5a00;font-weight:600}.equal{color:#666}.small{color:#888}.grey{color:#aaa}.inconclusive{color:#3b5b8a;font-weight:600}.interval{color:#444}
.prov{display:inline-block;padding:1px 6px;border-radius:4px;background:#fff3cd;font-size:12px}
.measured{background:#d1f0d8}
.bar{height:12px;background:#4a78c2;display:inline-block;vertical-align:middle}.bar.b{background:#c2704a}
.finding{border:1px solid #ddd;border-radius:6px;padding:12px;margin:12px 0}
.sentence{background:#f7f7fa;padding:8px;border-left:3px solid #4a78c2}
.cause{background:#fdf1f0;padding:8px;border-left:3px solid #b3261e}.kind{font:12px monospace;background:#eee;padding:1px 4px}
.ops{display:grid;grid-template-columns:1fr 1fr;gap:8px;font:12px monospace}
.ops div{white-space:pre-wrap;word-break:break-all;background:#fafafa;padding:6px}
pre{background:#272822;color:#f8f8f2;padding:8px;overflow-x:auto;font-size:12px}
.focus{background:#49483e;display:block}
)css";

std::string Bar(double uj, double max_uj, bool b_side) {
  const double pct = max_uj > 0 ? std::clamp(100.0 * uj / max_uj, 0.0, 100.0) : 0.0;
  return fmt::format("<span class=\"bar{}\" style=\"width:{:.1f}px\"></span>", b_side ? " b" : "", 1.6 * pct);
}

std::string OpsColumn(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 60);
  for (size_t i = 0; i < shown; ++i) out += Esc(names[i]) + "\n";
  if (shown < names.size()) out += fmt::format("… {} more\n", names.size() - shown);
  return out.empty() ? "(none)" : out;
}

std::string Snippet(const diagnose::SourceSnippet& s) {
  if (s.lines.empty()) return "";
  std::string out = "<pre>";
  for (size_t i = 0; i < s.lines.size(); ++i) {
    const int64_t n = s.first_line + static_cast<int64_t>(i);
    std::string line = fmt::format("{:>5}  {}", n, Esc(s.lines[i]));
    out += n == s.focus_line ? "<span class=\"focus\">" + line + "</span>" : line + "\n";
  }
  return out + "</pre>";
}

// The cause leads each finding: kind, the thing to change, both values, the line.
std::string RootCauseHtml(const diagnose::Diagnosis& d) {
  const diagnose::RootCause& c = d.root_cause;
  if (!c.found()) return "<p class=\"cause\">" + Esc(diagnose::RootCauseLine(c)) + "</p>";
  std::string h = fmt::format("<p class=\"cause\"><b>Root cause</b> <span class=\"kind\">{}</span> <code>{}</code>",
                              Esc(diagnose::RootCauseKindName(c.kind)), Esc(c.name));
  if (!c.value_a.empty() || !c.value_b.empty()) {
    h += fmt::format(" — A <code>{}</code>, B <code>{}</code>", Esc(c.value_a), Esc(c.value_b));
  }
  if (!c.where.empty()) h += fmt::format(" at <code>{}</code>", Esc(diagnose::ShortPath(c.where)));
  if (!c.evidence.empty()) h += "<br>" + Esc(c.evidence);
  h += "<br><small>" + Esc(diagnose::CauseStrengthLine(d, kMaxCauseAlternatives)) + "</small>";
  return h + "</p>";
}

}  // namespace

std::string RenderDiffHtml(const DiffReportInput& in) {
  const detect::DetectResult& r = *in.result;
  const Provenance p = r.provenance;
  const std::string prov = fmt::format("<span class=\"prov{}\">{}</span>", p == Provenance::kMeasured ? " measured" : "",
                                       magneton::ProvenanceName(p));
  auto energy = [&](double uj) { return Esc(magneton::FormatEnergy(uj, p)); };
  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
                  "<title>magneton diff</title><style>";
  h += kStyle;
  h += TimelineCss();
  h += "</style></head><body><h1>magneton diff</h1>";
  h += fmt::format(
      "<p>A: <code>{}</code> — {} ops, job {} in {} (whole run {})<br>B: <code>{}</code> — {} ops, job {} in {} "
      "(whole run {})</p>",
      Esc(in.path_a), r.a.op_count, energy(r.a.job_uj), magneton::FormatDuration(r.a.job_ns), energy(r.a.total_uj),
      Esc(in.path_b), r.b.op_count, energy(r.b.job_uj), magneton::FormatDuration(r.b.job_ns), energy(r.b.total_uj));
  h += fmt::format("<p>Energy domain <code>{}</code>: {} {}. τ = {:g}; {} recording(s) per side; {} matched region pair(s); waste that could be "
                   "saved: <b>{}</b>.</p>",
                   Esc(r.domain), prov,
                   p == Provenance::kMeasured ? "" : "(no hardware counter here: a model of CPU time, not measured joules)",
                   r.options.tau, r.runs, r.matched_region_pairs, energy(WasteSavingUj(r)));
  // The picture of both runs, before the numbers: where in each job the flagged regions lie.
  h += RenderDiffTimeline(in).html;

  double max_uj = 0;
  for (const Finding& f : r.findings) max_uj = std::max({max_uj, f.a.energy_uj, f.b.energy_uj});
  h += "<h2>Summary</h2><table><tr><th>#</th><th>verdict</th><th>region</th><th class=\"num\">reps</th>"
       "<th>A energy</th><th>B energy</th><th class=\"num\">A/B [interval]</th><th>could save</th>"
       "<th class=\"num\">share</th></tr>";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    const std::string region = RegionNameOf(in, f).text;
    // Equal only by a share floor: "small", its ratio greyed, so that 82x beside "equal" does not contradict.
    const bool small = BelowNoiseFloor(f, r.options.tau);
    const std::string verdict = small ? "small" : detect::VerdictName(f.verdict);
    h += fmt::format(
        "<tr><td class=\"num\"><a href=\"#f{}\">{}</a></td><td class=\"{}\">{}</td><td><code>{}</code>{}</td>"
        "<td class=\"num\">{}</td><td>{} {}</td><td>{} {}</td><td class=\"num{}\">{:.2f} {}</td><td>{}: {}</td>"
        "<td class=\"num\">{:.1f}%</td></tr>",
        i + 1, i + 1, verdict, verdict, Esc(region),
        f.kind == detect::RegionKind::kMatched ? fmt::format(" <small>({}|{} ops)</small>", f.names_a.size(),
                                                            f.names_b.size())
                                               : "",
        f.instances.size(),
        Bar(f.a.energy_uj, max_uj, false), energy(f.a.energy_uj), Bar(f.b.energy_uj, max_uj, true),
        energy(f.b.energy_uj), small ? " grey" : "", f.energy_ratio,
        f.uncertainty.ratio.known ? fmt::format("[{:.2f}, {:.2f}]", f.uncertainty.ratio.low, f.uncertainty.ratio.high)
                                  : std::string("[n/a]"),
        f.wasteful_side ? std::string(1, f.wasteful_side) : "-",
        energy(f.saving_uj), 100 * f.share_of_total);
  }
  h += "</table><h2>Findings</h2>";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    const diagnose::Diagnosis* d = DiagnosisFor(in, i);
    if (!d) continue;
    h += fmt::format("<div class=\"finding\" id=\"f{}\"><b>#{}</b> <span class=\"{}\">{}</span> — <code>{}</code> "
                     "— {} ({} instance(s))<br>A: {} in {} · B: {} in {} · {}",
                     i + 1, i + 1, detect::VerdictName(f.verdict), detect::VerdictName(f.verdict),
                     Esc(RegionNameOf(in, f).text), Esc(diagnose::KindName(d->kind)), f.instances.size(),
                     energy(f.a.energy_uj),
                     magneton::FormatDuration(f.a.time_ns), energy(f.b.energy_uj), magneton::FormatDuration(f.b.time_ns),
                     Esc(f.outputs_note));
    if (f.uncertainty.ratio.known) {
      h += fmt::format("<p class=\"interval\">A/B {:.2f}, {:.0f}% interval [{:.2f}, {:.2f}] ({} over {} {})</p>",
                       f.energy_ratio, 100 * r.options.confidence, f.uncertainty.ratio.low, f.uncertainty.ratio.high,
                       Esc(f.uncertainty.method), f.uncertainty.units, Esc(f.uncertainty.unit));
    }
    if (!f.uncertainty_note.empty()) h += "<p class=\"interval\">" + Esc(f.uncertainty_note) + "</p>";
    h += RootCauseHtml(*d);
    if (f.kind == detect::RegionKind::kUnmatched && !f.instances.empty()) {
      for (const bool side_a : {true, false}) {
        const Trace* t = side_a ? in.a : in.b;
        const auto& ops = side_a ? f.instances.front().ops_a : f.instances.front().ops_b;
        if (!t || ops.empty()) continue;
        h += fmt::format("<p class=\"parts\">Unmatched in {}:", side_a ? 'A' : 'B');
        for (const auto& part : diagnose::TopParts(*t, ops, 5)) {
          h += fmt::format(" <code>{}</code> ({} op(s), {});", Esc(part.name), part.ops,
                           Esc(magneton::FormatDuration(part.time_ns)));
        }
        h += "</p>";
      }
    }
    h += "<p class=\"sentence\">" + Esc(d->sentence) + "</p>";
    if (!f.kernels_a.empty() || !f.kernels_b.empty()) {
      h += "<table><tr><th>side</th><th>GPU work</th><th>kind</th><th>count</th><th>energy</th><th>device time</th></tr>";
      for (const bool side_a : {true, false}) {
        for (const detect::KernelCost& k : side_a ? f.kernels_a : f.kernels_b) {
          h += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                           side_a ? 'A' : 'B', Esc(k.name), Esc(k.kind), k.count, energy(k.energy_uj),
                           Esc(magneton::FormatDuration(k.time_ns)));
        }
      }
      h += "</table>";
    }
    if (d->kind == diagnose::Kind::kSameApiDifferentKernel) {
      h += "<p>Nested in <code>" + Esc(d->kernel.op) + "</code>:</p><div class=\"ops\"><div><b>A</b>\n" +
           OpsColumn(d->kernel.nested_a) + "</div><div><b>B</b>\n" + OpsColumn(d->kernel.nested_b) + "</div></div>";
    }
    if (!d->states.empty()) {
      h += "<table><tr><th>runtime state</th><th>A</th><th>B</th><th>set at</th></tr>";
      for (const auto& st : d->states) {
        h += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td>"
                         "<td><code>{}</code></td></tr>",
                         Esc(st.key), Esc(st.value_a), Esc(st.value_b), Esc(st.where));
      }
      h += "</table>";
    }
    if (d->kind != diagnose::Kind::kOutsideOps) {
      h += "<div class=\"ops\"><div><b>A</b>\n" + OpsColumn(f.names_a) + "</div><div><b>B</b>\n" +
           OpsColumn(f.names_b) + "</div></div>";
    }
    if (!d->sites_costly.empty()) {
      h += "<p>Issued at (costlier side):</p><ul>";
      for (const auto& s : d->sites_costly) {
        h += fmt::format("<li><code>{}</code> via <code>{}</code> — {} op(s)</li>", Esc(s.user_frame),
                         Esc(s.library_frame), s.op_count);
      }
      h += "</ul>";
    }
    if (d->deviation.found) {
      h += fmt::format("<p>Deviation point: A <code>{}</code> · B <code>{}</code></p>", Esc(d->deviation.frame_a),
                       Esc(d->deviation.frame_b));
      h += Snippet(d->deviation.snippet);
    }
    if (d->line && d->line->found) {
      const diagnose::LineDiagnosis& l = *d->line;
      const auto line_no = [](int64_t n) { return n < 0 ? std::string("(return)") : std::to_string(n); };
      if (l.mode == "values") {
        h += fmt::format("<p>Line trace of <code>{}</code> (call {}): both ran the same lines; at line {} "
                         "<code>{}</code> the values differ.</p>",
                         Esc(l.function), l.divergence.call + 1, l.divergence.branch_line, Esc(l.branch_text));
      } else {
        h += fmt::format("<p>Line trace of <code>{}</code> (call {}): after line {} <code>{}</code>, A ran line {} "
                         "<code>{}</code>, B ran line {} <code>{}</code>.</p>",
                         Esc(l.function), l.divergence.call + 1, l.divergence.branch_line, Esc(l.branch_text),
                         line_no(l.divergence.line_a), Esc(l.text_a), line_no(l.divergence.line_b), Esc(l.text_b));
      }
      h += "<table><tr><th>step</th><th>line</th><th>source</th><th>variable</th><th>A</th><th>B</th></tr>";
      for (const auto& s : l.chain) {
        h += fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>"
                         "<td><code>{}</code></td><td><code>{}</code></td></tr>",
                         Esc(s.how), s.line, Esc(s.text), Esc(s.variable), Esc(s.value_a), Esc(s.value_b));
      }
      h += fmt::format("</table><p>Origin: {} <code>{}</code> at <code>{}:{}</code> — A <code>{}</code>, B "
                       "<code>{}</code>{}</p>",
                       Esc(diagnose::OriginKindName(l.origin.kind)), Esc(l.origin.name), Esc(l.origin.file),
                       l.origin.line, Esc(l.origin.value_a), Esc(l.origin.value_b),
                       l.config_key.empty() ? "" : " (config <code>" + Esc(l.config_key) + "</code>)");
    } else if (d->line) {
      h += "<p>Line trace: none (" + Esc(d->line->note) + ")</p>";
    }
    if (!d->candidates.empty()) {
      h += "<table><tr><th>candidate</th><th>A</th><th>B</th><th>source</th><th>named in code</th></tr>";
      for (size_t c = 0; c < d->candidates.size() && c < 8; ++c) {
        const auto& cand = d->candidates[c];
        h += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td>"
                         "<td><code>{}</code></td></tr>",
                         Esc(cand.config.key), Esc(cand.config.value_a), Esc(cand.config.value_b),
                         Esc(cand.config.source), Esc(cand.evidence));
      }
      h += "</table>";
    }
    h += "</div>";
  }
  // What of this machine went into the report (source snippets), for a reader about to share it.
  const std::vector<std::string> read = SourcesRead(in);
  h += "<h2>Sources read</h2><p class=\"sources-read\">";
  h += read.empty() ? std::string("none") : std::string();
  for (size_t i = 0; i < read.size(); ++i) h += (i ? "<br>" : "") + ("<code>" + Esc(read[i]) + "</code>");
  h += "</p>";
  h += "</body></html>\n";
  return h;
}

}  // namespace magneton::report
