// magneton export --chrome run.mtrace -o out.json
#include <fstream>

#include "cli/command.h"
#include "magneton/trace_reader.h"
#include "report/chrome_export.h"

namespace magneton::cli {
namespace {

class ExportCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("export", "Export a trace to another format");
    sub->add_flag("--chrome", chrome_, "Chrome trace-event JSON (opens in the Perfetto UI)");
    sub->add_option("trace", path_, "Trace file")->required();
    sub->add_option("-o,--output", output_, "Output file")->required();
    return sub;
  }

  int Run() override {
    if (!chrome_) return Fail("choose an export format (--chrome)", 2);
    auto trace = ReadTrace(path_);
    if (!trace.ok()) return Fail(trace.status().message());
    std::ofstream out(output_, std::ios::binary);
    if (!out) return Fail("cannot write " + output_);
    Status st = WriteChromeTrace(*trace, out);
    if (!st.ok()) return Fail(st.message());
    return 0;
  }

 private:
  bool chrome_ = false;
  std::string path_;
  std::string output_;
};

}  // namespace

std::unique_ptr<Command> MakeExportCommand() { return std::make_unique<ExportCommand>(); }

}  // namespace magneton::cli
