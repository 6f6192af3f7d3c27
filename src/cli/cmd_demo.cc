// magneton demo: the main job on an embedded default. For now it records a
// tiny random-init GPT-2 `generate` and prints the summary.
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "cli/record_child.h"
#include "cli/subprocess.h"
#include "magneton/trace_reader.h"
#include "report/summary.h"

namespace magneton::cli {
namespace {

class DemoCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand("demo", "Record a tiny random-init GPT-2 generate() and summarise it");
    sub->add_option("-o,--output-dir", dir_, "Where to write the trace")->default_val("magneton-demo");
    return sub;
  }

  int Run() override {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return Fail("cannot create " + dir_ + ": " + ec.message());
    RecordRequest req;
    req.output = (std::filesystem::path(dir_) / "gpt2_generate.mtrace").string();
    req.label = "gpt2-generate";
    req.command = {FindPython(), "-m", "magneton.examples.gpt2_generate"};
    std::fprintf(stderr, "magneton demo: recording %s\n", ShellQuote(req.command).c_str());
    int code = RecordChild(req, /*verbose=*/true);
    if (code != 0) return code;
    auto trace = ReadTrace(req.output);
    if (!trace.ok()) return Fail(trace.status().message());
    std::fputs(FormatSummary(*trace, 10).c_str(), stdout);
    std::printf("\ntrace: %s  (magneton show %s; magneton export --chrome %s -o trace.json)\n", req.output.c_str(),
                req.output.c_str(), req.output.c_str());
    return 0;
  }

 private:
  std::string dir_;
};

}  // namespace

std::unique_ptr<Command> MakeDemoCommand() { return std::make_unique<DemoCommand>(); }

}  // namespace magneton::cli
