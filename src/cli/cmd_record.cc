// magneton record -o run.mtrace [--label NAME] -- python script.py args...
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "cli/command.h"
#include "cli/record_report.h"
#include "record/window.h"
#include "runner/record_child.h"
#include "runner/subprocess.h"

namespace magneton::cli {
namespace {

// Why --recorders names something the registry does not hold, or "" (the
// registry is the Python package's: asked before the program starts, so a
// typo never runs the program unrecorded).
std::string UnknownRecorders(const std::string& list) {
  auto names = runner::CaptureOutput(
      {runner::FindPython(), "-c",
       "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
       "from magneton.recorders import registry; print(','.join(c.name for c in registry.recorders()))"});
  if (!names) return "cannot list the recorders (is the magneton package importable by " + runner::FindPython() + "?)";
  std::set<std::string> known;
  for (size_t at = 0; at <= names->size();) {
    size_t end = names->find(',', at);
    if (end == std::string::npos) end = names->size();
    known.insert(names->substr(at, end - at));
    at = end + 1;
  }
  std::string unknown;
  for (size_t at = 0; at <= list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(at, end - at);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (!name.empty() && !known.count(name)) unknown += (unknown.empty() ? "" : ", ") + name;
    at = end + 1;
  }
  if (unknown.empty()) return "";
  return "unknown recorder(s) " + unknown + "; registered: " + *names + " (magneton recorders)";
}

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
    sub->add_option("--recorders", recorders_,
                    "Only these engine recorders, comma-separated (see `magneton recorders`; default: every one "
                    "that can run here)");
    sub->add_option("--jax-mode", jax_mode_,
                    "jit (default): jitted JAX programs run as compiled, each call an op with XLA's ops inside; "
                    "eager: jit off, every primitive an op (docs/JAX.md)")
        ->check(CLI::IsMember({"jit", "eager"}));
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
    if (!recorders_.empty()) {
      if (std::string unknown = UnknownRecorders(recorders_); !unknown.empty()) {
        std::fprintf(stderr, "magneton record: %s\n", unknown.c_str());
        return 2;
      }
      req.plan.env["MAGNETON_RECORDERS"] = recorders_;
    }
    if (!jax_mode_.empty()) req.plan.env["MAGNETON_JAX_MODE"] = jax_mode_;
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
  std::string recorders_;
  std::string jax_mode_;
  double start_after_s_ = -1, duration_s_ = -1;  // -1: not given
};

}  // namespace

std::unique_ptr<Command> MakeRecordCommand() { return std::make_unique<RecordCommand>(); }

}  // namespace magneton::cli
