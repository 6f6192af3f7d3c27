// magneton replay run.mtrace [--top N | --ops ID,...]: re-executes recorded
// PyTorch ops in a Python that has torch (the replay itself is C++ inside
// magneton._torch_hook), and stores per-call time and energy in the trace.
#include "cli/command.h"
#include "runner/subprocess.h"

namespace magneton::cli {
namespace {

class ReplayCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("replay", "Replay recorded ops in a loop to measure per-call time and energy");
    sub->add_option("trace", path_, "Trace file")->required();
    sub->add_option("--top", top_, "Replay the N op signatures with the most time")->default_val(10);
    sub->add_option("--ops", ops_, "Replay exactly these op ids (comma-separated)");
    sub->add_option("--min-round-s", min_round_s_,
                    "Each of the rounds runs at least this long (default: 0.2 s for host ops, 2 s for GPU ops)");
    sub->add_option("--rounds", rounds_, "Rounds per op (their spread is reported)")->default_val(5);
    sub->add_flag("--no-store", no_store_, "Do not write results into the trace");
    return sub;
  }

  int Run() override {
    std::vector<std::string> argv = {runner::FindPython(),   "-m",        "magneton.replay", path_, "--top",
                                     std::to_string(top_), "--min-round-s", std::to_string(min_round_s_),
                                     "--rounds",     std::to_string(rounds_)};
    if (!ops_.empty()) {
      argv.push_back("--ops");
      argv.push_back(ops_);
    }
    if (no_store_) argv.push_back("--no-store");
    std::string error;
    int code = runner::RunChild(argv, {}, &error);
    if (code < 0) return Fail(error);
    return code;
  }

 private:
  std::string path_;
  int top_ = 10;
  std::string ops_;
  double min_round_s_ = 0;  // 0: the default of the op's device
  int rounds_ = 5;
  bool no_store_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeReplayCommand() { return std::make_unique<ReplayCommand>(); }

}  // namespace magneton::cli
