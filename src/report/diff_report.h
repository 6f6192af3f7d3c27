// The three renderings of a diff (terminal, JSON, HTML). All read the same
// input; the JSON schema is docs/REPORT_FORMAT.md.
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

#include "detect/detect.h"
#include "diagnose/diagnose.h"
#include "diagnose/region_name.h"
#include "magneton/trace.h"

namespace magneton::report {

struct DiffReportInput {
  std::string path_a, path_b;  // as given on the command line
  const Trace* a = nullptr;
  const Trace* b = nullptr;
  const detect::DetectResult* result = nullptr;
  const std::vector<diagnose::Diagnosis>* diagnoses = nullptr;
  // Terminal only: every finding's full evidence (op lists, call sites,
  // deviation point, line-trace chain, candidates), not the terse lines.
  bool verbose = false;
  // The session's source roots: their files_read() are listed as
  // "sources_read" (null: none listed).
  const diagnose::SourceRoots* source_roots = nullptr;
};

// The source files the report's snippets came from (resolved paths), sorted.
std::vector<std::string> SourcesRead(const DiffReportInput& in);

// The diagnosis of findings[index], or null.
const diagnose::Diagnosis* DiagnosisFor(const DiffReportInput& in, size_t index);
// What a finding's region is (diagnose::NameRegion over the two traces).
diagnose::RegionName RegionNameOf(const DiffReportInput& in, const detect::Finding& f);
// An `equal` finding whose ratio exceeds tau: equal only because its saving is
// below a share floor (min_share, the same-work floor). Reports call it
// "small" so that a large ratio beside "equal" does not read as a contradiction.
bool BelowNoiseFloor(const detect::Finding& f, double tau);
// The time span of a region instance's ops on one side (graph-node ops: each
// op's interval covers its nested ops); false when it has none. The timeline
// and the Perfetto diff draw regions over it.
bool OpsExtent(const Trace& trace, std::span<const int64_t> op_ids, int64_t* start_ns, int64_t* end_ns);
// The end-to-end energy that waste findings could save, per costlier side.
double WasteSavingUj(const detect::DetectResult& r);

// The diagnosis's RootCause as JSON (docs/REPORT_FORMAT.md "RootCause"),
// with its strength and up to kMaxCauseAlternatives runners-up; null when
// there is no diagnosis or no cause (diff_json.cc).
inline constexpr size_t kMaxCauseAlternatives = 5;
nlohmann::json RootCauseJson(const diagnose::Diagnosis* d);
// Diagnosis::line as JSON, or null (src/report/diff_line_json.cc).
nlohmann::json LineDiagnosisJson(const diagnose::Diagnosis& d);

std::string RenderDiffTerminal(const DiffReportInput& in);
nlohmann::json DiffToJson(const DiffReportInput& in);
std::string RenderDiffHtml(const DiffReportInput& in);

}  // namespace magneton::report
