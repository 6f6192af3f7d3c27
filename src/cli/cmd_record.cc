// magneton record -o run.mtrace [--label NAME] -- python script.py args...
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "cli/record_report.h"
#include "record/window.h"
#include "runner/record_child.h"

namespace magneton::cli {
namespace {

class RecordCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("record", "Record a program's operators into a trace file");
    sub->add_option("-o,--output", output_, "Trace file to write")->default_val("run.mtrace");
    sub->add_option("--label", label_, "A name for this run in reports (default: the file name)");
    sub->add_flag("--values", values_, "Fingerprint every tensor value (needed by match and diff; never raw values)");
    sub->add_option("--window", window_,
                    "Record only some steps: wait,warmup,active[,repeat] (steps: magneton.step(), else optimizer "
                    "and decode steps), as torch.profiler's schedule");
    sub->add_option("--start-after", start_after_s_, "Seconds after start before recording begins")
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--duration", duration_s_, "Seconds to record (after --start-after)")->check(CLI::NonNegativeNumber);
    sub->add_option("command", command_, "The program to run, after --")->required();
    sub->positionals_at_end();
    sub->prefix_command(false);
    return sub;
  }

  int Run() override {
    RecordRunRequest req;
    req.output = output_;
    req.label = label_.empty() ? std::filesystem::path(output_).stem().string() : label_;
    req.plan.argv = command_;
    req.values = values_;
    if (!window_.empty()) {
      if (auto parsed = ParseWindowSchedule(window_); !parsed.ok()) {
        std::fprintf(stderr, "magneton record: %s\n", parsed.status().message().c_str());
        return 2;
      }
      req.plan.env["MAGNETON_RECORD_WINDOW"] = window_;
    }
    if (start_after_s_ >= 0) req.plan.env["MAGNETON_RECORD_START_AFTER"] = std::to_string(start_after_s_);
    if (duration_s_ >= 0) req.plan.env["MAGNETON_RECORD_DURATION"] = std::to_string(duration_s_);
    return ReportRecording(req, runner::RecordChild(req));
  }

 private:
  std::string output_;
  std::string label_;
  std::vector<std::string> command_;
  bool values_ = false;
  std::string window_;
  double start_after_s_ = -1, duration_s_ = -1;  // -1: not given
};

}  // namespace

std::unique_ptr<Command> MakeRecordCommand() { return std::make_unique<RecordCommand>(); }

}  // namespace magneton::cli
