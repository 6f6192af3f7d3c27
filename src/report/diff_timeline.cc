#include "report/diff_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "base/format.h"
#include "energy/attribution.h"
#include "report/html_escape.h"

namespace magneton::report {
namespace {

using detect::Finding;

// Layout in SVG units (about pixels at a 1200 px window). Top to bottom: A's
// power, A's regions, the band where a hovered pair is joined, B's regions,
// B's power, the time axis: the two region strips sit side by side so that
// partners are close.
constexpr double kGutter = 72;  // side labels
constexpr double kRightPad = 12;
constexpr double kPowerH = 38, kRegionH = 28, kBandH = 26;
constexpr double kPowerTopA = 2;
constexpr double kRegionTopA = kPowerTopA + kPowerH + 4;
constexpr double kRegionTopB = kRegionTopA + kRegionH + kBandH;
constexpr double kPowerTopB = kRegionTopB + kRegionH + 4;
constexpr double kAxisY = kPowerTopB + kPowerH + 4;
constexpr double kHeight = kAxisY + 22;
constexpr size_t kNone = std::numeric_limits<size_t>::max();

// What a box is coloured by, least to most severe: a column of merged pieces
// takes its most severe piece's colour.
enum Category : int { kUnmatchedOps = 0, kEqual = 1, kInconclusive = 2, kTradeOff = 3, kWaste = 4 };
const char* CategoryClass(Category c) {
  switch (c) {
    case kUnmatchedOps: return "un";
    case kEqual: return "eq";
    case kInconclusive: return "inc";
    case kTradeOff: return "tra";
    case kWaste: return "was";
  }
  return "un";
}

Category CategoryOf(const Finding& f) {
  if (f.kind == detect::RegionKind::kUnmatched) return kUnmatchedOps;
  switch (f.verdict) {
    case detect::Verdict::kWaste: return kWaste;
    case detect::Verdict::kTradeOff: return kTradeOff;
    case detect::Verdict::kInconclusive: return kInconclusive;
    case detect::Verdict::kEqual: return kEqual;  // "small" (below the share floor) is equal too
  }
  return kEqual;
}

// The job: first op start to last op end, recorder ops left out (what
// detection compares, detect::SideSummary::job_ns).
struct Job {
  int64_t start_ns = 0, end_ns = 0;
  // The recorder's own ops inside the span (value fingerprints, warm-ups):
  // the strips are wall time and include them; job times leave them out.
  int64_t recorder_ns = 0;
};
Job JobOf(const Trace& t) {
  Job job;
  bool any = false;
  for (const OpEvent& op : t.ops) {
    if (IsRecorderOp(t, op)) continue;
    job.start_ns = any ? std::min(job.start_ns, op.start_ns) : op.start_ns;
    job.end_ns = any ? std::max(job.end_ns, op.end_ns) : op.end_ns;
    any = true;
  }
  // Only the part inside the span: the recorder's work at stop is after it.
  for (const OpEvent& op : t.ops) {
    if (!IsRecorderOp(t, op)) continue;
    const bool nested = op.parent_id >= 0 && static_cast<size_t>(op.parent_id) < t.ops.size() &&
                        IsRecorderOp(t, t.ops[static_cast<size_t>(op.parent_id)]);
    if (!nested) job.recorder_ns += std::max<int64_t>(0, std::min(op.end_ns, job.end_ns) - std::max(op.start_ns, job.start_ns));
  }
  return job;
}

// One side's time axis: nanoseconds from its job start to plot units.
struct Scale {
  int64_t origin_ns = 0;
  double units_per_ns = 0;
  double plot_w = 0;
  double X(int64_t t_ns) const {
    return std::clamp(static_cast<double>(t_ns - origin_ns) * units_per_ns, 0.0, plot_w);
  }
};

// A matched instance with ops on both sides, in plot units.
struct Candidate {
  double a0, a1, b0, b1;
  Category cat;
  size_t finding, instance;
};
// Something drawn only as part of a merged box on one side.
struct Piece {
  double x0, x1;
  Category cat;
  size_t finding;
  bool unmatched_op;
};

struct Column {
  int cat = -1;
  size_t finding = kNone;
  size_t regions = 0, unmatched_ops = 0;  // pieces whose first column this is
  bool mixed = false;
};
struct MergedBox {
  double x0, x1;
  Category cat;
  size_t finding;
  size_t regions, unmatched_ops;  // pieces it stands for
  bool mixed;
};

// Pieces binned into columns `merge_px` wide; a run of columns with the same
// colour and finding is one box.
std::vector<MergedBox> MergeColumns(const std::vector<Piece>& pieces, double merge_px, double plot_w) {
  const size_t n = static_cast<size_t>(std::max(1.0, std::ceil(plot_w / merge_px)));
  std::vector<Column> cols(n);
  for (const Piece& p : pieces) {
    const double first = std::floor(std::max(0.0, p.x0) / merge_px);
    const double last = std::max(first, std::ceil(p.x1 / merge_px) - 1);  // the column holding x1, exclusive
    const size_t c0 = std::min(n - 1, static_cast<size_t>(first));
    const size_t c1 = std::min(n - 1, static_cast<size_t>(last));
    ++(p.unmatched_op ? cols[c0].unmatched_ops : cols[c0].regions);
    for (size_t c = c0; c <= c1; ++c) {
      Column& col = cols[c];
      if (col.cat >= 0 && (col.cat != p.cat || col.finding != p.finding)) col.mixed = true;
      if (p.cat > col.cat || (p.cat == col.cat && p.finding < col.finding)) {
        col.cat = p.cat;
        col.finding = p.finding;
      }
    }
  }
  std::vector<MergedBox> boxes;
  for (size_t c = 0; c < n;) {
    if (cols[c].cat < 0) {
      ++c;
      continue;
    }
    MergedBox box{static_cast<double>(c) * merge_px, 0, static_cast<Category>(cols[c].cat), cols[c].finding, 0, 0,
                  false};
    size_t e = c;
    for (; e < n && cols[e].cat == cols[c].cat && cols[e].finding == cols[c].finding; ++e) {
      box.regions += cols[e].regions;
      box.unmatched_ops += cols[e].unmatched_ops;
      box.mixed = box.mixed || cols[e].mixed;
    }
    box.x1 = std::min(plot_w, static_cast<double>(e) * merge_px);
    boxes.push_back(box);
    c = e;
  }
  return boxes;
}

// One side's mean power per plot unit over its job, from the energy samples
// of `domain`: a counter's interval has power delta energy / delta time, a
// power meter's the mean of its two readings. NaN where no sample covers.
struct PowerStrip {
  std::vector<double> power_w;
  size_t intervals = 0;
  bool any_estimated = false;
};
PowerStrip PowerOfDomain(const Trace& t, const std::string& domain, const Job& job, const Scale& s) {
  PowerStrip out;
  const size_t n = static_cast<size_t>(std::ceil(s.X(job.end_ns)));
  std::vector<double> energy(n, 0), cover(n, 0);
  std::vector<const EnergySample*> samples;
  for (const EnergySample& e : t.energy_samples) {
    if (e.domain == domain) samples.push_back(&e);
  }
  std::stable_sort(samples.begin(), samples.end(),
                   [](const EnergySample* x, const EnergySample* y) { return x->t_ns < y->t_ns; });
  auto add = [&](int64_t t0, int64_t t1, double watts, Provenance p) {
    t0 = std::max(t0, job.start_ns);
    t1 = std::min(t1, job.end_ns);
    if (t1 <= t0 || !std::isfinite(watts)) return;
    ++out.intervals;
    out.any_estimated = out.any_estimated || p != Provenance::kMeasured;
    const double u0 = s.X(t0), u1 = s.X(t1);
    for (size_t c = static_cast<size_t>(u0); c < n && static_cast<double>(c) < u1; ++c) {
      const double overlap = std::min(u1, static_cast<double>(c + 1)) - std::max(u0, static_cast<double>(c));
      if (overlap <= 0) continue;
      energy[c] += watts * overlap;
      cover[c] += overlap;
    }
  };
  const EnergySample* prev = nullptr;
  for (const EnergySample* e : samples) {
    const bool counter = !std::isnan(e->energy_uj);
    if (!counter && std::isnan(e->power_mw)) continue;
    if (prev && counter && !std::isnan(prev->energy_uj)) {
      const int64_t dt_ns = e->t_ns - prev->t_ns;
      const double de_uj = e->energy_uj - prev->energy_uj;
      // µJ per ns is kW. A counter that went back has no power to draw.
      if (dt_ns > 0 && de_uj >= 0) add(prev->t_ns, e->t_ns, 1000.0 * de_uj / static_cast<double>(dt_ns), e->provenance);
    } else if (prev && !counter && std::isnan(prev->energy_uj)) {
      add(prev->t_ns, e->t_ns, (prev->power_mw + e->power_mw) / 2000.0, e->provenance);
    }
    prev = e;
  }
  out.power_w.assign(n, std::nan(""));
  for (size_t c = 0; c < n; ++c) {
    if (cover[c] > 0) out.power_w[c] = energy[c] / cover[c];
  }
  return out;
}

// A sum of domains ("cpu-package-0+gpu-0"): the parts' power added where
// every part has a sample.
PowerStrip PowerOf(const Trace& t, const std::string& domain, const Job& job, const Scale& s) {
  const std::vector<std::string> parts = energy::DomainParts(domain);
  PowerStrip out = PowerOfDomain(t, parts.front(), job, s);
  for (size_t i = 1; i < parts.size(); ++i) {
    const PowerStrip more = PowerOfDomain(t, parts[i], job, s);
    out.intervals += more.intervals;
    out.any_estimated = out.any_estimated || more.any_estimated;
    for (size_t c = 0; c < out.power_w.size() && c < more.power_w.size(); ++c) out.power_w[c] += more.power_w[c];
  }
  return out;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) near span / target.
double TickStep(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

struct Svg {
  std::string text;
  size_t elements = 0;
};

std::string PairTitle(const DiffReportInput& in, const std::vector<std::string>& names, size_t index, size_t instance) {
  const Finding& f = in.result->findings[index];
  const detect::RegionInstance& inst = f.instances[instance];
  const Provenance p = in.result->provenance;
  return fmt::format("#{} {}: {}\ninstance {} of {}\nA: {}, {}\nB: {}, {}", index + 1, detect::VerdictName(f.verdict),
                     names[index], instance + 1, f.instances.size(), FormatDuration(inst.a.time_ns),
                     FormatEnergy(inst.a.energy_uj, p), FormatDuration(inst.b.time_ns),
                     FormatEnergy(inst.b.energy_uj, p));
}

}  // namespace

const char* TimelineCss() {
  return R"css(
.tl{margin:12px 0 0}.tl svg{display:block;width:100%;height:auto;font:11px system-ui,sans-serif}
.tl text{fill:#333}.tl .side{font-size:13px;font-weight:600}.tl .sm{font-size:10px;fill:#666}
.tl .lbl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
.tl .job{fill:#fafafb;stroke:#c8c8d0;stroke-width:.6}
.tl .bx{stroke:#fff;stroke-width:.5}
.was{fill:#d93025;background:#d93025}.tra{fill:#f2a600;background:#f2a600}.inc{fill:#4a78c2;background:#4a78c2}
.eq{fill:#a4a8ae;background:#a4a8ae}.un{fill:#dedee6;background:#dedee6}.pw{fill:#8d9bb8;background:#8d9bb8}
.tl path.pw{fill-opacity:.6;stroke:#56627d;stroke-width:.7}
.tl .ln{fill:#111;fill-opacity:.14;visibility:hidden}
.tl .pr:hover .bx{stroke:#111;stroke-width:2}.tl .pr:hover .ln{visibility:visible}
.tl .ax{stroke:#999;stroke-width:.8}
.tl figcaption{font-size:12px;color:#555;margin-top:2px}
.tl .key{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;vertical-align:-1px;border-radius:2px}
.finding:target{outline:2px solid #4a78c2}
)css";
}

Timeline RenderDiffTimeline(const DiffReportInput& in, const TimelineOptions& options) {
  Timeline out;
  if (!in.a || !in.b || !in.result) return out;
  const detect::DetectResult& r = *in.result;
  const double plot_w = std::max(10.0, options.width_px - kGutter - kRightPad);
  const Job job_a = JobOf(*in.a), job_b = JobOf(*in.b);
  // One scale for both: the longer job fills the width, the shorter ends early.
  const int64_t span_ns = std::max<int64_t>({1, job_a.end_ns - job_a.start_ns, job_b.end_ns - job_b.start_ns});
  const double units_per_ns = plot_w / static_cast<double>(span_ns);
  const Scale sa{job_a.start_ns, units_per_ns, plot_w}, sb{job_b.start_ns, units_per_ns, plot_w};

  // The boxes to draw: matched instances, and the unmatched ops.
  std::vector<std::string> names(r.findings.size());
  std::vector<bool> anchored(r.findings.size());
  std::vector<Candidate> candidates;
  std::vector<Piece> fixed_a, fixed_b;  // always merged: one-sided instances, unmatched ops
  size_t without_ops = 0, unmatched_ops = 0, fixed_regions = 0;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    anchored[i] = DiagnosisFor(in, i) != nullptr;  // the HTML has #fN only for diagnosed findings
    if (detect::HoldsNoOps(f.kind)) continue;  // no ops: time nothing ran, the strip's background
    names[i] = RegionNameOf(in, f).text;
    const Category cat = CategoryOf(f);
    if (f.kind == detect::RegionKind::kUnmatched) {
      for (const auto& inst : f.instances) {
        for (auto [ops, trace, scale, pieces] : {std::tuple{&inst.ops_a, in.a, &sa, &fixed_a},
                                                 std::tuple{&inst.ops_b, in.b, &sb, &fixed_b}}) {
          for (int64_t id : *ops) {
            if (id < 0 || static_cast<size_t>(id) >= trace->ops.size()) continue;
            const OpEvent& op = trace->ops[static_cast<size_t>(id)];
            pieces->push_back({scale->X(op.start_ns), scale->X(op.end_ns), cat, i, true});
            ++unmatched_ops;
          }
        }
      }
      continue;
    }
    for (size_t k = 0; k < f.instances.size(); ++k) {
      const detect::RegionInstance& inst = f.instances[k];
      int64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
      const bool has_a = OpsExtent(*in.a, inst.ops_a, &a0, &a1), has_b = OpsExtent(*in.b, inst.ops_b, &b0, &b1);
      if (has_a && has_b) {
        candidates.push_back({sa.X(a0), sa.X(a1), sb.X(b0), sb.X(b1), cat, i, k});
      } else if (has_a) {
        fixed_a.push_back({sa.X(a0), sa.X(a1), cat, i, false});
        ++fixed_regions;
      } else if (has_b) {
        fixed_b.push_back({sb.X(b0), sb.X(b1), cat, i, false});
        ++fixed_regions;
      } else {
        ++without_ops;
      }
    }
  }
  // Least severe first, so the flagged boxes are drawn on top; wider first
  // within a colour, so a short instance is not hidden under a long one.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
    if (x.cat != y.cat) return x.cat < y.cat;
    return (x.a1 - x.a0) + (x.b1 - x.b0) > (y.a1 - y.a0) + (y.b1 - y.b0);
  });

  // Everything but the boxes: strips, power, axis, labels.
  Svg base;
  const Provenance p = r.provenance;
  const std::vector<std::pair<const Job*, const Scale*>> sides = {{&job_a, &sa}, {&job_b, &sb}};
  const PowerStrip power_a = PowerOf(*in.a, r.domain, job_a, sa), power_b = PowerOf(*in.b, r.domain, job_b, sb);
  double peak_w = 0;
  for (const PowerStrip* s : {&power_a, &power_b}) {
    for (double w : s->power_w) {
      if (std::isfinite(w)) peak_w = std::max(peak_w, w);
    }
  }
  const bool power_estimated =
      power_a.any_estimated || power_b.any_estimated || p != Provenance::kMeasured;
  const char* power_prov = ProvenanceName(power_estimated ? Provenance::kEstimated : Provenance::kMeasured);
  for (int s = 0; s < 2; ++s) {
    const char letter = s == 0 ? 'A' : 'B';
    const Job& job = *sides[s].first;
    const double job_w = std::max(1.0, sides[s].second->X(job.end_ns));
    const double region_top = s == 0 ? kRegionTopA : kRegionTopB, power_top = s == 0 ? kPowerTopA : kPowerTopB;
    base.text += fmt::format(
        "<rect class=\"job\" id=\"tl-{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
        "<rect class=\"job\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>"
        "<text class=\"side\" x=\"4\" y=\"{:.1f}\">{}</text><text class=\"sm\" x=\"4\" y=\"{:.1f}\">{}</text>"
        "<text class=\"sm\" x=\"4\" y=\"{:.1f}\">power</text>",
        static_cast<char>(letter + 'a' - 'A'), kGutter, region_top, job_w, kRegionH, kGutter, power_top, job_w,
        kPowerH, region_top + 13, letter, region_top + 25, HtmlEscape(FormatDuration(job.end_ns - job.start_ns)),
        power_top + kPowerH / 2 + 4);
    base.elements += 5;
    const PowerStrip& strip = s == 0 ? power_a : power_b;
    const double bottom = power_top + kPowerH;
    std::string label;
    if (strip.intervals == 0) {
      label = fmt::format("{} power: no energy samples of {} in the job", letter, r.domain);
    } else {
      std::string d = fmt::format("M{:.1f},{:.1f}", kGutter, bottom);
      double last_y = bottom;
      // A step line: a segment only where the column's power changes.
      for (size_t c = 0; c < strip.power_w.size(); ++c) {
        const double w = strip.power_w[c];
        const double y = std::isfinite(w) && peak_w > 0 ? bottom - (kPowerH - 15) * w / peak_w : bottom;
        if (std::abs(y - last_y) >= 0.05) d += fmt::format("H{:.1f}V{:.1f}", kGutter + static_cast<double>(c), y);
        last_y = y;
      }
      d += fmt::format("H{:.1f}", kGutter + job_w);
      d += fmt::format("V{:.1f}Z", bottom);
      base.text += "<path class=\"pw\" d=\"" + d + "\"/>";
      ++base.elements;
      label = fmt::format("{} power, {} ({}): up to {:.3g} W", letter, r.domain, power_prov, peak_w);
    }
    base.text += fmt::format("<text class=\"lbl sm\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", kGutter + 4, power_top + 12,
                             HtmlEscape(label));
    ++base.elements;
  }
  // The time axis, in ms from each job's start.
  const double span_ms = static_cast<double>(span_ns) / 1e6;
  const double step_ms = TickStep(span_ms, 10);
  const int decimals = step_ms >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step_ms) - 1e-9));
  base.text += fmt::format("<line class=\"ax\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                           "<text class=\"sm\" x=\"4\" y=\"{:.1f}\">time, ms</text>",
                           kGutter, kAxisY, kGutter + plot_w, kAxisY, kAxisY + 14);
  base.elements += 2;
  for (int k = 0; static_cast<double>(k) * step_ms <= span_ms * (1 + 1e-9) && k <= 40; ++k) {
    const double x = kGutter + static_cast<double>(k) * step_ms / span_ms * plot_w;
    base.text += fmt::format("<line class=\"ax\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
                             "<text class=\"sm\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{:.{}f}</text>",
                             x, kAxisY, x, kAxisY + 4, x, kAxisY + 15, k == 0 ? "start" : "middle",
                             static_cast<double>(k) * step_ms, decimals);
    base.elements += 2;
  }

  // The boxes, within what is left of the element budget: pieces narrower
  // than merge_px are merged, merge_px doubling until the picture fits.
  const size_t budget = options.max_elements > base.elements + 1 ? options.max_elements - base.elements - 1 : 0;
  std::vector<const Candidate*> pairs;
  std::vector<MergedBox> merged_a, merged_b;
  size_t merged_instances = 0;
  double merge_px = 1;
  for (;; merge_px *= 2) {
    pairs.clear();
    std::vector<Piece> pieces_a = fixed_a, pieces_b = fixed_b;
    merged_instances = 0;
    for (const Candidate& c : candidates) {
      if (std::max(c.a1 - c.a0, c.b1 - c.b0) >= merge_px) {
        pairs.push_back(&c);
      } else {
        pieces_a.push_back({c.a0, c.a1, c.cat, c.finding, false});
        pieces_b.push_back({c.b0, c.b1, c.cat, c.finding, false});
        ++merged_instances;
      }
    }
    merged_a = MergeColumns(pieces_a, merge_px, plot_w);
    merged_b = MergeColumns(pieces_b, merge_px, plot_w);
    size_t need = 5 * pairs.size();  // <a>, <title>, the band, two boxes
    for (const auto* boxes : {&merged_a, &merged_b}) {
      for (const MergedBox& m : *boxes) need += anchored[m.finding] ? 3 : 2;
    }
    if (need <= budget || merge_px >= plot_w) break;
  }

  Svg boxes;
  auto merged_svg = [&](const std::vector<MergedBox>& list, char side) {
    const double top = side == 'A' ? kRegionTopA : kRegionTopB;
    for (const MergedBox& m : list) {
      const size_t cost = anchored[m.finding] ? 3 : 2;
      if (boxes.elements + cost > budget) break;  // only when even one column per side does not fit
      const Finding& f = r.findings[m.finding];
      std::string title;
      if (m.regions > 0) {
        title = fmt::format("{} region instance(s) narrower than {:g} px merged\n", m.regions, merge_px);
      }
      if (m.unmatched_ops > 0) title += fmt::format("{} unmatched op(s)\n", m.unmatched_ops);
      title += m.cat == kUnmatchedOps
                   ? fmt::format("#{}: {}", m.finding + 1, names[m.finding])
                   : fmt::format("{}#{} {}: {}", m.mixed ? "most severe: " : "", m.finding + 1,
                                 detect::VerdictName(f.verdict), names[m.finding]);
      const std::string rect = fmt::format(
          "<rect class=\"bx {} {}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\">"
          "<title>{}</title></rect>",
          side, CategoryClass(m.cat), kGutter + m.x0, top, std::max(0.5, m.x1 - m.x0), kRegionH, HtmlEscape(title));
      boxes.text += anchored[m.finding] ? fmt::format("<a href=\"#f{}\">{}</a>", m.finding + 1, rect) : rect;
      boxes.elements += cost;
    }
  };
  merged_svg(merged_a, 'A');
  merged_svg(merged_b, 'B');
  size_t pairs_drawn = 0;
  for (const Candidate* c : pairs) {
    if (boxes.elements + 5 > budget) break;
    // A partner narrower than merge_px is widened to it, so that both ends of the link can be seen and hovered.
    const double aw = std::max(merge_px, c->a1 - c->a0), bw = std::max(merge_px, c->b1 - c->b0);
    const double ax = kGutter + std::min(c->a0, plot_w - aw), bx = kGutter + std::min(c->b0, plot_w - bw);
    const char* cls = CategoryClass(c->cat);
    const std::string body = fmt::format(
        "<title>{}</title>"
        "<polygon class=\"ln\" points=\"{:.2f},{:.1f} {:.2f},{:.1f} {:.2f},{:.1f} {:.2f},{:.1f}\"/>"
        "<rect class=\"bx A {}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\"/>"
        "<rect class=\"bx B {}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\"/>",
        HtmlEscape(PairTitle(in, names, c->finding, c->instance)), ax, kRegionTopA + kRegionH, ax + aw,
        kRegionTopA + kRegionH, bx + bw, kRegionTopB, bx, kRegionTopB, cls, ax, kRegionTopA, aw, kRegionH, cls, bx,
        kRegionTopB, bw, kRegionH);
    boxes.text += anchored[c->finding]
                      ? fmt::format("<a class=\"pr f{0}\" href=\"#f{0}\">{1}</a>", c->finding + 1, body)
                      : fmt::format("<g class=\"pr\">{}</g>", body);
    boxes.elements += 5;
    ++pairs_drawn;
  }

  out.pairs = pairs_drawn;
  out.merged_boxes = merged_a.size() + merged_b.size();
  out.merge_px = merge_px;
  // What the merged boxes stand for, over both sides: region instances (a
  // matched one narrower than merge_px on both sides counts once) and ops.
  const size_t merged_regions = merged_instances + fixed_regions;
  const size_t not_drawn = candidates.size() - merged_instances - pairs_drawn;
  bool box_of_several = false;
  for (const auto* list : {&merged_a, &merged_b}) {
    for (const MergedBox& m : *list) box_of_several = box_of_several || m.regions + m.unmatched_ops > 1;
  }
  out.aggregated = merge_px > 1 || box_of_several || not_drawn > 0;
  out.elements = 1 + base.elements + boxes.elements;

  std::string& h = out.html;
  h = "<figure class=\"tl\">";
  h += fmt::format("<svg viewBox=\"0 0 {:g} {:g}\" role=\"img\" aria-label=\"timelines of run A and run B\">",
                   options.width_px, kHeight);
  h += base.text + boxes.text + "</svg><figcaption>";
  h += "<span class=\"key was\"></span>waste<span class=\"key tra\"></span>trade-off"
       "<span class=\"key inc\"></span>inconclusive<span class=\"key eq\"></span>equal or small"
       "<span class=\"key un\"></span>unmatched ops<span class=\"key pw\"></span>power<br>";
  h += fmt::format(
      "Each run's job (first op to last op) on one time scale in ms, A above B. A box is one matched region "
      "instance over its ops' time span, coloured by its finding's verdict; hover it to see its partner in the other "
      "run, click it to go to its finding. Power: domain <code>{}</code>, <span class=\"prov{}\">{}</span>, mean per "
      "pixel from the energy samples (delta energy / delta time).",
      HtmlEscape(r.domain), power_estimated ? "" : " measured", power_prov);
  if (job_a.recorder_ns > 0 || job_b.recorder_ns > 0) {
    h += fmt::format(" The strips are wall time: they include the recorder's own ops (<code>magneton::</code>, A {}, "
                     "B {}), which the job times above leave out.",
                     FormatDuration(job_a.recorder_ns), FormatDuration(job_b.recorder_ns));
  }
  if (out.aggregated) {
    h += fmt::format(" <b>Aggregated</b> to keep the picture light ({} SVG elements at most): ", options.max_elements);
    std::vector<std::string> parts;
    if (merged_regions > 0) {
      parts.push_back(fmt::format("{} region instance(s) narrower than {:g} px are drawn merged into boxes of "
                                  "neighbouring columns, each coloured by the most severe finding in it",
                                  merged_regions, merge_px));
    }
    if (unmatched_ops > 0) parts.push_back(fmt::format("{} unmatched op(s) are drawn as merged spans", unmatched_ops));
    parts.push_back(fmt::format("{} merged box(es) in all", out.merged_boxes));
    if (not_drawn > 0) parts.push_back(fmt::format("{} region instance(s) not drawn", not_drawn));
    for (size_t i = 0; i < parts.size(); ++i) h += (i ? "; " : "") + parts[i];
    h += ".";
  }
  if (without_ops > 0) h += fmt::format(" {} region instance(s) have no ops in the traces and are not drawn.", without_ops);
  h += "</figcaption></figure>";
  return out;
}

bool OpsExtent(const Trace& trace, std::span<const int64_t> op_ids, int64_t* start_ns, int64_t* end_ns) {
  bool any = false;
  for (int64_t id : op_ids) {
    if (id < 0 || static_cast<size_t>(id) >= trace.ops.size()) continue;
    const OpEvent& op = trace.ops[static_cast<size_t>(id)];
    *start_ns = any ? std::min(*start_ns, op.start_ns) : op.start_ns;
    *end_ns = any ? std::max(*end_ns, op.end_ns) : op.end_ns;
    any = true;
  }
  return any;
}

}  // namespace magneton::report
