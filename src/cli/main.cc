#include <cstdio>

#include "cli/command.h"

namespace magneton::cli {

int Fail(const std::string& message, int exit_code) {
  std::fprintf(stderr, "magneton: %s\n", message.c_str());
  return exit_code;
}

}  // namespace magneton::cli

int main(int argc, char** argv) {
  using namespace magneton::cli;
  CLI::App app{"Magneton: a differential energy debugger for ML systems", "magneton"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "magneton 0.1.0");

  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(MakeRecordCommand());
  commands.push_back(MakeShowCommand());
  commands.push_back(MakeExportCommand());
  commands.push_back(MakeDemoCommand());
  commands.push_back(MakeMatchCommand());
  commands.push_back(MakeDiffCommand());
  commands.push_back(MakeCompareCommand());
  commands.push_back(MakeGateCommand());
  commands.push_back(MakeReplayCommand());
  commands.push_back(MakeMetersCommand());
  commands.push_back(MakeRecordersCommand());
  commands.push_back(MakeEvalCommand());
  std::vector<std::pair<CLI::App*, Command*>> registered;
  for (auto& c : commands) registered.emplace_back(c->Register(app), c.get());

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, command] : registered) {
    if (sub->parsed()) return command->Run();
  }
  return Fail("no subcommand given; see magneton --help", 2);
}
