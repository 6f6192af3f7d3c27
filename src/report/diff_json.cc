// JSON report, schema "magneton.diff/2" (docs/REPORT_FORMAT.md).
#include <cmath>

#include "report/diff_report.h"
#include "base/format.h"

namespace magneton::report {
namespace {

using nlohmann::json;

json Side(const std::string& path, const Trace& t, const detect::SideSummary& s) {
  return {{"path", path},
          {"label", t.meta.label},
          {"total_uj", s.total_uj},
          {"unattributed_uj", s.unattributed_uj},
          {"duration_ns", s.duration_ns},
          {"op_count", s.op_count},
          {"job_uj", s.job_uj},
          {"job_ns", s.job_ns},
          {"idle_in_job_uj", s.idle_in_job_uj},
          {"device_idle_in_job_uj", s.device_idle_in_job_uj},
          {"issue_uj", s.issue_uj},
          {"others_cpu_share", s.machine.others_cpu_share < 0 ? json(nullptr) : json(s.machine.others_cpu_share)},
          {"steal_share", s.machine.steal_share < 0 ? json(nullptr) : json(s.machine.steal_share)},
          {"load_over_job", s.machine.over_job},
          {"cpus", s.machine.cpus > 0 ? json(s.machine.cpus) : json(nullptr)},
          {"load_over_job_error", s.machine.over_job_error.empty() ? json(nullptr) : json(s.machine.over_job_error)}};
}

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json SourceSites(const std::vector<diagnose::SourceSite>& sites) {
  json out = json::array();
  for (const auto& s : sites) {
    out.push_back({{"user_frame", s.user_frame}, {"library_frame", s.library_frame}, {"api_frame", s.api_frame},
                   {"op_names", s.op_names},
                   {"op_count", s.op_count}});
  }
  return out;
}

json DiagnosisJson(const diagnose::Diagnosis& d) {
  json candidates = json::array();
  for (const auto& c : d.candidates) {
    candidates.push_back({{"key", c.config.key},
                          {"name", c.name},
                          {"value_a", c.config.value_a},
                          {"value_b", c.config.value_b},
                          {"source", c.config.source},
                          {"frame_distance", c.frame_distance},
                          {"evidence", c.evidence}});
  }
  json deviation = nullptr;
  if (d.deviation.found) {
    deviation = {{"frame_a", d.deviation.frame_a},
                 {"frame_b", d.deviation.frame_b},
                 {"op_a", d.deviation.op_a},
                 {"op_b", d.deviation.op_b},
                 {"common_path", d.deviation.common_path},
                 {"snippet", {{"file", d.deviation.snippet.file},
                              {"first_line", d.deviation.snippet.first_line},
                              {"focus_line", d.deviation.snippet.focus_line},
                              {"lines", d.deviation.snippet.lines}}}};
  }
  json states = json::array();
  for (const auto& st : d.states) {
    states.push_back({{"key", st.key},
                      {"value_a", st.value_a},
                      {"value_b", st.value_b},
                      {"where", st.where},
                      {"setter_side", st.setter_side ? std::string(1, st.setter_side) : std::string()},
                      {"ops_a", st.ops_a},
                      {"ops_b", st.ops_b}});
  }
  json versions = json::array();
  for (const auto& v : d.versions) versions.push_back({{"package", v.key}, {"value_a", v.value_a}, {"value_b", v.value_b}});
  json kernel = nullptr;
  if (d.kernel.found) kernel = {{"op", d.kernel.op}, {"nested_a", d.kernel.nested_a}, {"nested_b", d.kernel.nested_b}};
  json layout = nullptr;
  if (d.layout.found) {
    layout = {{"op", d.layout.op},           {"attribute", d.layout.attribute},
              {"value_a", d.layout.value_a}, {"value_b", d.layout.value_b},
              {"producer_op", d.layout.producer_op}, {"producer_api", d.layout.producer_api},
              {"where", d.layout.where}};
  }
  return {{"kind", diagnose::KindName(d.kind)},
          {"sentence", d.sentence},
          {"shapes", d.shapes},
          {"runtime_states", states},
          {"versions", versions},
          {"kernel", kernel},
          {"layout", layout},
          {"sites_costly", SourceSites(d.sites_costly)},
          {"sites_efficient", SourceSites(d.sites_efficient)},
          {"deviation_point", deviation},
          {"candidates", candidates},
          {"line_diagnosis", LineDiagnosisJson(d)}};
}

// The device work behind a finding (device attribution), else null.
json KernelsJson(const detect::Finding& f) {
  if (f.kernels_a.empty() && f.kernels_b.empty()) return nullptr;
  auto side = [](const std::vector<detect::KernelCost>& list) {
    json out = json::array();
    for (const detect::KernelCost& k : list) {
      out.push_back({{"name", k.name}, {"kind", k.kind}, {"count", k.count}, {"energy_uj", k.energy_uj},
                     {"time_ns", k.time_ns}});
    }
    return out;
  };
  return {{"a", side(f.kernels_a)}, {"b", side(f.kernels_b)}};
}

json IntervalJson(const detect::Interval& i) {
  if (!i.known) return nullptr;
  return {{"low", Number(i.low)}, {"high", Number(i.high)}};
}

json UncertaintyJson(const detect::Finding& f, double confidence) {
  const detect::Uncertainty& u = f.uncertainty;
  return {{"confidence", confidence},
          {"method", u.method.empty() ? json(nullptr) : json(u.method)},
          {"unit", u.unit.empty() ? json(nullptr) : json(u.unit)},
          {"units", u.units},
          {"runs", u.runs},
          {"runs_given", u.runs_given},
          {"energy_ratio", IntervalJson(u.ratio)},
          {"saving_uj", IntervalJson(u.saving_uj)},
          {"point_verdict", detect::VerdictName(f.point_verdict)},
          {"differences_in_effect", f.differences_in_effect},
          {"note", f.uncertainty_note}};
}

}  // namespace

json DiffToJson(const DiffReportInput& in) {
  const detect::DetectResult& r = *in.result;
  json findings = json::array();
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const detect::Finding& f = r.findings[i];
    const diagnose::Diagnosis* d = DiagnosisFor(in, i);
    const diagnose::RegionName name = RegionNameOf(in, f);
    // What an unmatched region holds, by module scope or the user's line (TopParts).
    json parts = nullptr;
    if (f.kind == detect::RegionKind::kUnmatched && !f.instances.empty()) {
      parts = json::object();
      for (const bool side_a : {true, false}) {
        const Trace* t = side_a ? in.a : in.b;
        json list = json::array();
        if (t) {
          for (const auto& part : diagnose::TopParts(*t, side_a ? f.instances.front().ops_a : f.instances.front().ops_b, 5)) {
            list.push_back({{"name", part.name}, {"ops", part.ops}, {"time_ns", part.time_ns}});
          }
        }
        parts[side_a ? "a" : "b"] = std::move(list);
      }
    }
    findings.push_back({{"rank", i + 1},
                        {"kind", detect::RegionKindName(f.kind)},
                        {"setup", f.setup},
                        {"one_time", f.one_time},
                        {"name", name.text},
                        {"name_basis", name.basis},
                        {"verdict", detect::VerdictName(f.verdict)},
                        {"below_noise_floor", BelowNoiseFloor(f, r.options.tau)},
                        {"parts", parts},
                        {"instances", f.instances.size()},
                        {"a", {{"energy_uj", f.a.energy_uj}, {"issue_uj", f.a.issue_uj}, {"time_ns", f.a.time_ns},
                               {"ops", f.names_a}}},
                        {"b", {{"energy_uj", f.b.energy_uj}, {"issue_uj", f.b.issue_uj}, {"time_ns", f.b.time_ns},
                               {"ops", f.names_b}}},
                        {"energy_ratio", Number(f.energy_ratio)},
                        {"costlier_side", f.wasteful_side ? std::string(1, f.wasteful_side) : std::string()},
                        {"saving_uj", f.saving_uj},
                        {"share_of_total", f.share_of_total},
                        {"outputs_agree", f.outputs_agree},
                        {"outputs_note", f.outputs_note},
                        {"same_work", f.same_work},
                        {"paired_ops", f.paired_ops},
                        {"effective_pairs", Number(f.effective_pairs)},
                        {"typical_pair_ratio", Number(f.typical_pair_ratio)},
                        {"kernels", KernelsJson(f)},
                        {"uncertainty", UncertaintyJson(f, r.options.confidence)},
                        {"root_cause", RootCauseJson(d)},
                        {"diagnosis", d ? DiagnosisJson(*d) : json(nullptr)}});
  }
  return {{"schema", "magneton.diff/2"},
          {"energy",
           {{"domain", r.domain}, {"provenance", magneton::ProvenanceName(r.provenance)}, {"basis", r.a.basis}}},
          {"options",
           {{"tau", r.options.tau},
            {"max_slowdown", r.options.max_slowdown},
            {"output_epsilon", r.options.output_epsilon},
            {"match_epsilon", r.options.match.epsilon},
            {"min_share", r.options.min_share},
            {"min_same_work_pairs", r.options.min_same_work_pairs},
            {"min_same_work_share", r.options.min_same_work_share},
            {"confidence", r.options.confidence},
            {"bootstrap_resamples", r.options.bootstrap_resamples}}},
          {"runs", r.runs},
          {"run_wide_ratio", Number(r.run_wide_ratio)},
          {"a", Side(in.path_a, *in.a, r.a)},
          {"b", Side(in.path_b, *in.b, r.b)},
          {"matched_region_pairs", r.matched_region_pairs},
          {"waste_saving_uj", WasteSavingUj(r)},
          // The files snippets were read from: what of this machine went into the report.
          {"sources_read", SourcesRead(in)},
          {"findings", findings}};
}

json RootCauseJson(const diagnose::Diagnosis* d) {
  if (!d || !d->root_cause.found()) return nullptr;
  auto cause = [](const diagnose::RootCause& c) {
    return json{{"kind", diagnose::RootCauseKindName(c.kind)},
                {"name", c.name},
                {"value_a", c.value_a},
                {"value_b", c.value_b},
                {"where", c.where},
                {"evidence", c.evidence},
                {"strength", diagnose::CauseStrengthName(c.strength)}};
  };
  json out = cause(d->root_cause);
  json alternatives = json::array();
  for (size_t i = 0; i < d->cause_alternatives.size() && i < kMaxCauseAlternatives; ++i) {
    alternatives.push_back(cause(d->cause_alternatives[i]));
  }
  out["alternatives"] = std::move(alternatives);
  return out;
}

}  // namespace magneton::report
