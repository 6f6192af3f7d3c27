// The line-level diagnosis as JSON (docs/REPORT_FORMAT.md, LineDiagnosis).
#include "diagnose/line_diagnosis.h"
#include "report/diff_report.h"

namespace magneton::report {

nlohmann::json LineDiagnosisJson(const diagnose::Diagnosis& d) {
  using nlohmann::json;
  if (!d.line) return nullptr;
  const diagnose::LineDiagnosis& l = *d.line;
  json chain = json::array();
  for (const auto& s : l.chain) {
    chain.push_back({{"variable", s.variable}, {"line", s.line}, {"text", s.text}, {"how", s.how},
                     {"value_a", s.value_a}, {"value_b", s.value_b}});
  }
  const auto& v = l.divergence;
  return {{"found", l.found},
          {"mode", l.mode},
          {"note", l.note},
          {"function", l.function},
          {"frame_distance", l.frame_distance},
          {"frames_traced", l.frames_traced},
          {"file", l.file},
          {"call", v.call},
          {"calls_a", v.calls_a},
          {"calls_b", v.calls_b},
          {"line_a", v.line_a},
          {"line_b", v.line_b},
          {"text_a", l.text_a},
          {"text_b", l.text_b},
          {"branch_line", v.branch_line},
          {"branch_text", l.branch_text},
          {"condition", l.condition},
          {"key_variables", l.key_variables},
          {"chain", chain},
          {"origin", {{"kind", diagnose::OriginKindName(l.origin.kind)},
                      {"name", l.origin.name},
                      {"file", l.origin.file},
                      {"line", l.origin.line},
                      {"value_a", l.origin.value_a},
                      {"value_b", l.origin.value_b}}},
          {"config_key", l.config_key}};
}

}  // namespace magneton::report
