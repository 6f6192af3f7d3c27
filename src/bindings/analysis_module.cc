// magneton._analysis: the Python edge of the analysis stages, for notebooks
// and scripts (python/magneton/analysis.py). Never imported by a traced
// process (which loads only magneton._core). No logic of its own: it reads
// traces and runs the analysis session, and hands the results over as
// dicts of lists and report texts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "bindings/status_exception.h"
#include "diagnose/root_cause_kind.h"
#include "magneton/analysis.h"
#include "magneton/trace_reader.h"
#include "report/summary.h"
#include "report/trace_tables.h"
#include "runner/process_runner.h"

namespace nb = nanobind;
using namespace nb::literals;

using magneton::ThrowIfError;

namespace {

// Columns become lists in one C++ pass each: a dict of them is what
// pandas.DataFrame takes directly, and what the list-of-rows view is built from.
nb::dict ColumnsDict(const magneton::report::Table& table) {
  nb::dict out;
  for (const magneton::report::Column& column : table) out[column.name.c_str()] = nb::cast(column.values);
  return out;
}

// The same table as one dict per row, for users without pandas.
nb::list RowsList(const magneton::report::Table& table) {
  size_t rows = 0;
  if (!table.empty()) std::visit([&](const auto& v) { rows = v.size(); }, table.front().values);
  std::vector<nb::dict> out(rows);
  for (const magneton::report::Column& column : table) {
    nb::str key(column.name.c_str());
    std::visit([&](const auto& values) {
      for (size_t i = 0; i < rows; ++i) out[i][key] = nb::cast(values[i]);
    }, column.values);
  }
  nb::list list;
  for (nb::dict& row : out) list.append(row);
  return list;
}

nb::object TableObject(const magneton::report::Table& table, bool as_rows) {
  return as_rows ? nb::object(RowsList(table)) : nb::object(ColumnsDict(table));
}

nb::dict MetaDict(const magneton::RunMetadata& m) {
  nb::dict versions;
  for (const auto& [name, version] : m.versions) versions[name.c_str()] = version;
  nb::dict out;
  out["label"] = m.label;
  out["command_line"] = m.command_line;
  out["host"] = m.host;
  out["cwd"] = m.cwd;
  out["engine"] = m.engine;
  out["start_unix_ns"] = m.start_unix_ns;
  out["versions"] = versions;
  // Every other meta key (energy.*, window.*, gpu.*, recorder.*, …;
  // docs/TRACE_FORMAT.md "meta"), as the trace stores them.
  nb::dict extra;
  for (const auto& [key, value] : m.extra) extra[key.c_str()] = value;
  out["extra"] = extra;
  return out;
}

nb::dict EnergyInfoDict(const magneton::report::EnergyInfo& e) {
  nb::dict out;
  out["domain"] = e.domain.empty() ? nb::none() : nb::cast(e.domain);
  out["provenance"] = e.provenance.empty() ? nb::none() : nb::cast(e.provenance);
  out["domains"] = nb::cast(e.domains);
  out["total_uj"] = e.total_uj;
  out["attributed_uj"] = e.attributed_uj;
  out["unattributed_uj"] = e.unattributed_uj;
  out["job_uj"] = e.job_uj;
  out["window_start_ns"] = e.window_start_ns;
  out["window_end_ns"] = e.window_end_ns;
  out["note"] = e.note;
  return out;
}

nb::dict ReadTables(const std::string& path, const std::string& domain, bool as_rows) {
  auto trace = magneton::ReadTrace(path);
  ThrowIfError(trace.status());
  auto tables = magneton::report::TraceAsTables(*trace, domain);
  ThrowIfError(tables.status());
  nb::dict out;
  out["path"] = path;
  out["meta"] = MetaDict(trace->meta);
  out["ops"] = TableObject(tables->ops, as_rows);
  out["tensors"] = TableObject(tables->tensors, as_rows);
  out["energy"] = TableObject(tables->energy, as_rows);
  out["config"] = TableObject(tables->config, as_rows);
  out["device_activities"] = TableObject(tables->device_activities, as_rows);
  out["energy_info"] = EnergyInfoDict(tables->energy_info);
  return out;
}

// `magneton diff` without its command line: the same session, the same
// reports. Recorded commands run again only when the caller says so.
nb::dict Diff(const std::vector<std::string>& runs_a, const std::vector<std::string>& runs_b,
              const magneton::AnalysisOptions& options, bool rerun, nb::object progress) {
  magneton::AnalysisOptions said = options;
  if (!progress.is_none()) said.progress = [progress](const std::string& line) { progress(line); };
  auto session = magneton::AnalysisSession::OpenRuns(runs_a, runs_b, said);
  ThrowIfError(session.status());
  ThrowIfError((*session)->Diff());
  if (rerun) {
    magneton::runner::SubprocessRunner processes;
    ThrowIfError((*session)->TraceLines(processes, magneton::RerunPolicy{}));
  }
  nb::dict out;
  out["domain"] = (*session)->domain();
  out["json"] = (*session)->JsonReport();
  out["text"] = (*session)->TerminalReport(false);
  out["verbose_text"] = (*session)->TerminalReport(true);
  out["html"] = (*session)->HtmlReport();
  return out;
}

}  // namespace

NB_MODULE(_analysis, m) {
  m.doc() = "Magneton's analysis (trace summaries, tables and diffs)";
  m.def("summarize", [](const std::string& path, int top) {
    auto trace = magneton::ReadTrace(path, {.tensors = false, .op_args = false});  // as `magneton show`
    ThrowIfError(trace.status());
    return magneton::FormatSummary(*trace, top);
  }, "path"_a, "top"_a = 15, "The text of `magneton show`.");
  m.def("validate", [](const std::string& path) {
    auto trace = magneton::ReadTrace(path);
    ThrowIfError(trace.status());
    return trace->ops.size();
  }, "path"_a, "Reads and validates a trace; returns its op count or raises.");
  m.def("read_tables", &ReadTables, "path"_a, "domain"_a = "", "as_rows"_a = false,
        "One trace as tables (src/report/trace_tables.h): {path, meta, ops, tensors, energy, config, "
        "device_activities, energy_info}, each table a dict of equally long lists (as_rows: a list of one dict per row). "
        "domain: '' for the one with the most energy.");
  // The one definition of the defaults (magneton/analysis_defaults.h):
  // python/magneton/analysis.py takes its own from here.
  m.def("default_options", [] {
    const magneton::AnalysisOptions o;
    nb::dict d;
    d["tau"] = o.tau;
    d["epsilon"] = o.epsilon;
    d["max_slowdown"] = o.max_slowdown;
    d["min_share"] = o.min_share;
    d["min_same_work_share"] = o.min_same_work_share;
    d["leaf_ops"] = o.leaf_ops;
    return d;
  }, "The C++ defaults of diff's options (AnalysisOptions): {tau, epsilon, max_slowdown, min_share, "
     "min_same_work_share, leaf_ops}.");
  m.def("root_cause_kinds", [] {
    std::vector<std::string> names;
    for (auto kind : magneton::diagnose::AllRootCauseKinds()) names.push_back(magneton::diagnose::RootCauseKindName(kind));
    return names;
  }, "The root-cause kinds of the report format (docs/REPORT_FORMAT.md \"RootCause\"), from their one name table.");
  const magneton::AnalysisOptions defaults;
  m.def("diff", [](const std::vector<std::string>& runs_a, const std::vector<std::string>& runs_b, double tau,
                   double epsilon, double max_slowdown, double min_share, double min_same_work_share,
                   const std::string& domain, bool leaf_ops, bool rerun, nb::object progress,
                   const std::vector<std::string>& source_roots) {
    magneton::AnalysisOptions options;
    options.tau = tau;
    options.epsilon = epsilon;
    options.max_slowdown = max_slowdown;
    options.min_share = min_share;
    options.min_same_work_share = min_same_work_share;
    options.domain = domain;
    options.leaf_ops = leaf_ops;
    options.source_roots = source_roots;
    return Diff(runs_a, runs_b, options, rerun, std::move(progress));
  }, "runs_a"_a, "runs_b"_a, "tau"_a = defaults.tau, "epsilon"_a = defaults.epsilon,
     "max_slowdown"_a = defaults.max_slowdown, "min_share"_a = defaults.min_share,
     "min_same_work_share"_a = defaults.min_same_work_share, "domain"_a = "", "leaf_ops"_a = defaults.leaf_ops,
     "rerun"_a = false, "progress"_a.none(), "source_roots"_a = std::vector<std::string>{},
     "`magneton diff` of repeated recordings of each side: {domain, json, text, verbose_text, html}. "
     "rerun: the line-level step, which starts the recorded commands again.");
}
