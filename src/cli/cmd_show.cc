// magneton show run.mtrace: op count, top ops, top module scopes, config.
#include <cstdio>

#include "cli/command.h"
#include "magneton/trace_reader.h"
#include "report/job_summary.h"
#include "report/summary.h"
#include "trace/job_manifest.h"

namespace magneton::cli {
namespace {

class ShowCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("show", "Summarise a trace: ops, time, module scopes, config snapshot");
    sub->add_option("trace", path_,
                    "Trace file, or a distributed job (its manifest job.mjob, or the name given to record: job)")
        ->required();
    sub->add_option("--top", top_, "Rows per table")->default_val(15);
    return sub;
  }

  int Run() override {
    if (auto manifest = FindJobManifest(path_)) {
      auto summary = SummariseJobFile(*manifest);
      if (!summary.ok()) return Fail(summary.status().message());
      std::fputs(summary->c_str(), stdout);
      return 0;
    }
    // The summary prints no tensor and no op argument: they stay on disk.
    auto trace = ReadTrace(path_, ReadOptions{.tensors = false, .op_args = false});
    if (!trace.ok()) return Fail(trace.status().message());
    std::fputs(FormatSummary(*trace, top_).c_str(), stdout);
    return 0;
  }

 private:
  std::string path_;
  int top_ = 15;
};

}  // namespace

std::unique_ptr<Command> MakeShowCommand() { return std::make_unique<ShowCommand>(); }

}  // namespace magneton::cli
