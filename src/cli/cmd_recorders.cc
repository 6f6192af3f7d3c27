// magneton recorders: the engine recorders registered in the Python package
// (python/magneton/recorders/registry.py), whether each can run here and why
// not, and what each records. The registry lives with the hooks in Python, so
// this asks the interpreter `record` would use.
#include <string>
#include <vector>

#include "cli/command.h"
#include "runner/subprocess.h"

namespace magneton::cli {
namespace {

class RecordersCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("recorders", "List engine recorders: available here or why not, and what each "
                                                "records");
    sub->add_flag("--json", json_, "Print the list as JSON");
    return sub;
  }

  int Run() override {
    const std::string python = runner::FindPython();
    // As in FindBootstrapDir: the working directory (perhaps a downloaded
    // trace's folder) is dropped from sys.path, so only the user's
    // PYTHONPATH and site-packages can provide the package.
    std::vector<std::string> argv = {
        python, "-c",
        "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
        "from magneton.recorders import registry; sys.exit(registry.main(sys.argv[1:]))"};
    if (json_) argv.push_back("--json");
    std::string error;
    const int code = runner::RunChild(argv, {}, &error);
    if (code < 0) return Fail("cannot run " + python + ": " + error);
    return code;
  }

 private:
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeRecordersCommand() { return std::make_unique<RecordersCommand>(); }

}  // namespace magneton::cli
