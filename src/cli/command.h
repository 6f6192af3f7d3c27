// One class per `magneton` subcommand; main() only parses and dispatches.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

namespace magneton::cli {

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its options to the app.
  virtual CLI::App* Register(CLI::App& app) = 0;
  // Runs after a successful parse; returns the process exit code.
  virtual int Run() = 0;
};

std::unique_ptr<Command> MakeRecordCommand();
std::unique_ptr<Command> MakeShowCommand();
std::unique_ptr<Command> MakeExportCommand();
std::unique_ptr<Command> MakeDemoCommand();
std::unique_ptr<Command> MakeMatchCommand();
std::unique_ptr<Command> MakeDiffCommand();
std::unique_ptr<Command> MakeReplayCommand();
std::unique_ptr<Command> MakeMetersCommand();
std::unique_ptr<Command> MakeRecordersCommand();
std::unique_ptr<Command> MakeEvalCommand();
std::unique_ptr<Command> MakeCompareCommand();
std::unique_ptr<Command> MakeGateCommand();

// Prints "magneton: <message>" to stderr; returns the exit code to use.
int Fail(const std::string& message, int exit_code = 1);

}  // namespace magneton::cli
