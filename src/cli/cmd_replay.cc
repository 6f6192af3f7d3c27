// magneton replay run.mtrace [--top N | --ops ID,...]: re-executes recorded
// PyTorch ops in a Python that has torch (the replay itself is C++ inside
// magneton._torch_hook), and stores per-call time and energy in the trace.
// A trace is data (docs/DIFF.md, "Which traces are re-run"): replay refuses
// one that is not this user's own signed recording unless --allow-untrusted,
// calls only the ops src/replay/replay_policy.h allows, and runs Python
// isolated (-I) from the file path of the installed package's replay.py, so
// neither the current directory nor PYTHON* variables add to sys.path.
#include <filesystem>

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
    sub->add_flag("--allow-untrusted", allow_untrusted_,
                  "Replay a trace that is not your own signed recording (someone else's, another host's, or edited); "
                  "even then only side-effect-free ATen ops run");
    return sub;
  }

  int Run() override {
    const std::string python = runner::FindPython();
    std::string error;
    auto bootstrap = runner::FindBootstrapDir(python, &error);
    if (!bootstrap) return Fail(error);
    const std::filesystem::path script = std::filesystem::path(*bootstrap).parent_path() / "replay.py";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(script, ec)) return Fail("the magneton package has no " + script.string());
    std::vector<std::string> argv = {python,        "-I",           script.string(),
                                     path_,         "--top",        std::to_string(top_),
                                     "--min-round-s", std::to_string(min_round_s_), "--rounds",
                                     std::to_string(rounds_)};
    if (!ops_.empty()) {
      argv.push_back("--ops");
      argv.push_back(ops_);
    }
    if (no_store_) argv.push_back("--no-store");
    if (allow_untrusted_) argv.push_back("--allow-untrusted");
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
  bool allow_untrusted_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeReplayCommand() { return std::make_unique<ReplayCommand>(); }

}  // namespace magneton::cli
