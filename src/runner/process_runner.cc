#include "runner/process_runner.h"

#include <cstdlib>

#include "runner/record_child.h"
#include "runner/subprocess.h"

namespace magneton::runner {

StatusOr<int> SubprocessRunner::Run(const RunRequest& request) {
  if (request.plan.argv.empty()) return InvalidArgument("nothing to run: the run plan has no argv");
  std::map<std::string, std::string> env = request.plan.env;
  std::string error;
  if (request.with_python_hooks) {
    auto bootstrap = FindBootstrapDir(FindPython(), &error);
    if (!bootstrap) return FailedPrecondition(error);
    const char* old_path = std::getenv("PYTHONPATH");
    env["PYTHONPATH"] = *bootstrap + (old_path && *old_path ? std::string(":") + old_path : std::string());
  }
  const int code = RunChild(request.plan.argv, env, &error, request.plan.cwd, request.log_path);
  if (code < 0) return Internal(error);
  return code;
}

StatusOr<RecordRunResult> SubprocessRunner::Record(const RecordRunRequest& request) { return RecordChild(request); }

}  // namespace magneton::runner
