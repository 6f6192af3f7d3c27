// From a match to ranked findings: one finding per distinct region (repeats
// across layers and decode steps aggregated), plus the energy outside every op
// and the unmatched ops as regions of their own.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "magneton/detect.h"

namespace magneton::detect {
namespace {

std::vector<std::string> NamesOf(const Trace& trace, const std::vector<int64_t>& ops) {
  std::vector<std::string> names;
  names.reserve(ops.size());
  for (int64_t id : ops) {
    names.push_back(id >= 0 && static_cast<size_t>(id) < trace.ops.size() ? trace.str(trace.ops[id].name_id) : "?");
  }
  return names;
}

// Two regions repeat each other when both sides run the same op-name sequence.
std::string RepeatKey(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::string key;
  for (const auto& n : a) key += n + '\x1f';
  key += '\x1e';
  for (const auto& n : b) key += n + '\x1f';
  return key;
}

SideSummary Summarize(const Trace& t, const energy::Attribution& e) {
  SideSummary s;
  s.total_uj = e.total_uj;
  s.unattributed_uj = e.unattributed_uj;
  s.duration_ns = e.window_end_ns - e.window_start_ns;
  s.op_count = t.ops.size();
  s.job_uj = e.job_uj;
  s.job_ns = e.ops_end_ns - e.ops_start_ns;
  s.idle_in_job_uj = e.idle_in_job_uj;
  return s;
}

void Finish(Finding& f, const DetectResult& r, const Options& options) {
  f.a = {};
  f.b = {};
  for (const RegionInstance& in : f.instances) {
    f.a.energy_uj += in.a.energy_uj;
    f.a.time_ns += in.a.time_ns;
    f.b.energy_uj += in.b.energy_uj;
    f.b.time_ns += in.b.time_ns;
  }
  f.energy_ratio = f.b.energy_uj > 0 ? f.a.energy_uj / f.b.energy_uj
                                     : (f.a.energy_uj > 0 ? std::numeric_limits<double>::infinity() : 1.0);
  f.wasteful_side = f.a.energy_uj > f.b.energy_uj ? 'A' : (f.b.energy_uj > f.a.energy_uj ? 'B' : 0);
  f.saving_uj = std::fabs(f.a.energy_uj - f.b.energy_uj);
  const double total_uj = f.wasteful_side == 'B' ? r.b.job_uj : r.a.job_uj;
  f.share_of_total = total_uj > 0 ? f.saving_uj / total_uj : 0;
  f.verdict = Classify(f.a, f.b, f.outputs_agree, options);
  if (f.verdict != Verdict::kEqual && f.share_of_total < options.min_share) {
    f.verdict = Verdict::kEqual;
    f.outputs_note += "; saving below the min-share noise floor";
  }
}

}  // namespace

StatusOr<DetectResult> DetectFromMatch(const Trace& a, const FingerprintMap& fa, const energy::Attribution& ea,
                                       const Trace& b, const FingerprintMap& fb, const energy::Attribution& eb,
                                       const MatchResult& match, const Options& options) {
  if (ea.provenance != eb.provenance) {
    return FailedPrecondition("trace A's energy is " + std::string(ProvenanceName(ea.provenance)) + " and B's is " +
                              ProvenanceName(eb.provenance) +
                              "; measured and estimated joules are never compared. Record both on the same kind of "
                              "meter.");
  }
  DetectResult r;
  r.domain = ea.domain;
  r.provenance = ea.provenance;
  r.options = options;
  r.a = Summarize(a, ea);
  r.b = Summarize(b, eb);
  r.matched_region_pairs = match.regions.size();

  std::map<std::string, size_t> by_key;
  for (const RegionPair& rp : match.regions) {
    RegionInstance in{rp.ops_a, rp.ops_b, rp.outputs, CostOf(a, ea, rp.ops_a), CostOf(b, eb, rp.ops_b)};
    std::string note;
    const bool agree = OutputsAgree(rp.outputs, fa, fb, options.output_epsilon, &note);
    auto names_a = NamesOf(a, rp.ops_a);
    auto names_b = NamesOf(b, rp.ops_b);
    auto [it, inserted] = by_key.try_emplace(RepeatKey(names_a, names_b), r.findings.size());
    if (inserted) {
      Finding f;
      f.kind = RegionKind::kMatched;
      f.names_a = std::move(names_a);
      f.names_b = std::move(names_b);
      f.outputs_agree = agree;
      f.outputs_note = note;
      r.findings.push_back(std::move(f));
    }
    Finding& f = r.findings[it->second];
    if (f.outputs_agree && !agree) {
      f.outputs_agree = false;
      f.outputs_note = note;  // one disagreeing repeat spoils the aggregate
    }
    f.instances.push_back(std::move(in));
  }

  Finding outside;
  outside.kind = RegionKind::kOutsideOps;
  // Only inside the job: start-up (imports) and exit are not the work compared,
  // and on short runs they would drown every between-op difference in noise.
  outside.instances.push_back(
      {{}, {}, {}, {ea.idle_in_job_uj, ea.idle_in_job_ns}, {eb.idle_in_job_uj, eb.idle_in_job_ns}});
  // No op computes anything here, so there is nothing that could disagree.
  outside.outputs_agree = true;
  outside.outputs_note = "energy between ops while none ran (interpreter, framework and idle time)";
  r.findings.push_back(std::move(outside));

  if (!match.unmatched_ops_a.empty() || !match.unmatched_ops_b.empty()) {
    Finding un;
    un.kind = RegionKind::kUnmatched;
    un.names_a = NamesOf(a, match.unmatched_ops_a);
    un.names_b = NamesOf(b, match.unmatched_ops_b);
    un.instances.push_back({match.unmatched_ops_a, match.unmatched_ops_b, {}, CostOf(a, ea, match.unmatched_ops_a),
                            CostOf(b, eb, match.unmatched_ops_b)});
    // Work one side does and the other does without, while every matched
    // output still agrees, is redundant; unmatched work on both sides cannot
    // be verified to compute the same thing.
    un.outputs_agree = match.unmatched_ops_a.empty() || match.unmatched_ops_b.empty();
    un.outputs_note = un.outputs_agree ? "only one side runs these ops; the other reaches the same matched outputs"
                                       : "unmatched on both sides: outputs not verified";
    r.findings.push_back(std::move(un));
  }

  for (Finding& f : r.findings) Finish(f, r, options);
  std::stable_sort(r.findings.begin(), r.findings.end(), [](const Finding& x, const Finding& y) {
    if (x.verdict != y.verdict) return static_cast<int>(x.verdict) < static_cast<int>(y.verdict);
    return x.saving_uj > y.saving_uj;
  });
  return r;
}

}  // namespace magneton::detect
