#include "cli/record_report.h"

#include <cstdio>
#include <filesystem>

#include "cli/command.h"

namespace magneton::cli {

int ReportRecording(const RecordRunRequest& request, const StatusOr<RecordRunResult>& result) {
  if (!result.ok()) return Fail(result.status().message());
  const int code = result->exit_code;
  if (!result->trace_status.ok()) {
    Fail(result->trace_status.message());
    return code != 0 ? code : 1;
  }
  std::error_code ec;
  const std::string out = std::filesystem::absolute(request.output, ec).string();
  if (code != 0) {
    return Fail("'" + request.argv[0] + "' exited with code " + std::to_string(code) + "; " + out + " keeps the " +
                    std::to_string(result->ops) + " ops recorded before that",
                code);
  }
  std::fprintf(stderr, "magneton: recorded %zu ops and %zu tensors to %s\n", result->ops, result->tensors,
               out.c_str());
  return 0;
}

}  // namespace magneton::cli
