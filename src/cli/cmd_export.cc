// magneton export --chrome run.mtrace -o out.json
// magneton export --perfetto-diff a.mtrace b.mtrace -o diff.json
#include <fstream>

#include "analysis/session_data.h"
#include "cli/command.h"
#include "cli/path_list.h"
#include "magneton/analysis.h"
#include "magneton/trace_reader.h"
#include "report/chrome_export.h"
#include "report/perfetto_diff.h"

namespace magneton::cli {
namespace {

class ExportCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("export", "Export a trace, or two runs and their diff, to another format");
    auto* chrome = sub->add_flag("--chrome", chrome_, "One trace as Chrome trace-event JSON (opens in the Perfetto UI)");
    sub->add_flag("--perfetto-diff", perfetto_diff_,
                  "Two traces (recorded with --values) and their diff as one Chrome trace-event JSON: two processes "
                  "on one time axis, matched regions linked by flow arrows (opens in the Perfetto UI)")
        ->excludes(chrome);
    sub->add_option("traces", paths_,
                    "Trace file (--chrome); A's and B's traces (--perfetto-diff; several recordings of a side "
                    "comma-separated, as for diff)")
        ->required()
        ->expected(1, 2);
    sub->add_option("-o,--output", output_, "Output file")->required();
    // The diff's options, with diff's defaults (--perfetto-diff).
    sub->add_option("--tau", options_.tau, "Relative energy difference that counts (--perfetto-diff)")
        ->default_val(defaults::kTau)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--epsilon", options_.epsilon, "Tensor equivalence tolerance (--perfetto-diff)")
        ->default_val(defaults::kEpsilon)
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--min-share", options_.min_share,
                    "Findings that save less than this share of the job energy are `small` (--perfetto-diff; as diff)")
        ->default_val(defaults::kMinShare)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--min-same-work-share", options_.min_same_work_share,
                    "Noise floor of same-work findings, as a share of the job (--perfetto-diff)")
        ->default_val(defaults::kMinSameWorkShare)
        ->check(CLI::Range(0.0, 1.0));
    sub->add_option("--domain", options_.domain,
                    "Energy domain of the diff (default: the largest one both traces have; --perfetto-diff)");
    return sub;
  }

  int Run() override {
    if (perfetto_diff_) return RunDiff();
    if (!chrome_) return Fail("choose an export format (--chrome or --perfetto-diff)", 2);
    if (paths_.size() != 1) return Fail("--chrome exports one trace; --perfetto-diff exports two", 2);
    auto trace = ReadTrace(paths_[0]);
    if (!trace.ok()) return Fail(trace.status().message());
    std::ofstream out(output_, std::ios::binary);
    if (!out) return Fail("cannot write " + output_);
    Status st = WriteChromeTrace(*trace, out);
    if (!st.ok()) return Fail(st.message());
    return 0;
  }

 private:
  // The diff runs through the session `magneton diff` uses (no re-runs: an
  // export starts no program).
  int RunDiff() {
    if (paths_.size() != 2) return Fail("--perfetto-diff takes two traces, A's and B's", 2);
    auto session = AnalysisSession::OpenRuns(SplitCommas(paths_[0]), SplitCommas(paths_[1]), options_);
    if (!session.ok()) return Fail(session.status().message());
    Status st = (*session)->Diff();
    if (!st.ok()) return Fail(st.message());
    std::ofstream out(output_, std::ios::binary);
    if (!out) return Fail("cannot write " + output_);
    st = report::WritePerfettoDiff((*session)->data().report_input(), out);
    if (!st.ok()) return Fail(st.message());
    return 0;
  }

  bool chrome_ = false;
  bool perfetto_diff_ = false;
  std::vector<std::string> paths_;
  std::string output_;
  AnalysisOptions options_;
};

}  // namespace

std::unique_ptr<Command> MakeExportCommand() { return std::make_unique<ExportCommand>(); }

}  // namespace magneton::cli
