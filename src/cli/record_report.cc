#include "cli/record_report.h"

#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "trace/job_manifest.h"

namespace magneton::cli {

namespace {

// One line per rank: where its trace is and how its process ended.
int ReportJob(const RecordRunRequest& request, const RecordRunResult& result) {
  auto manifest = ReadJobManifest(result.job_manifest);
  if (!manifest.ok()) return Fail(manifest.status().message());
  std::fprintf(stderr, "magneton: recorded a job of %zu rank(s) (world size %d, backend %s); manifest %s\n",
               manifest->ranks.size(), manifest->world_size,
               manifest->backend.empty() ? "unknown" : manifest->backend.c_str(), result.job_manifest.c_str());
  bool rank_failed = false;
  for (const RankEntry& r : manifest->ranks) {
    const std::string end = DescribeRankEnd(r);
    rank_failed |= r.signal > 0 || (r.exit_code && *r.exit_code != 0);
    std::fprintf(stderr, "magneton:   rank %d: %zu ops in %s; %s%s\n", r.rank, r.ops, r.trace.c_str(), end.c_str(),
                 r.trace_error.empty() ? "" : ("; trace unreadable: " + r.trace_error).c_str());
  }
  if (result.exit_code != 0) {
    return Fail("'" + request.plan.argv[0] + "' exited with code " + std::to_string(result.exit_code) +
                    (rank_failed ? "; the rank traces keep the ops recorded before that" : ""),
                result.exit_code);
  }
  return 0;
}

}  // namespace

int ReportRecording(const RecordRunRequest& request, const StatusOr<RecordRunResult>& result) {
  if (!result.ok()) return Fail(result.status().message());
  const int code = result->exit_code;
  if (!result->trace_status.ok()) {
    Fail(result->trace_status.message());
    return code != 0 ? code : 1;
  }
  if (!result->job_manifest.empty()) return ReportJob(request, result.value());
  std::error_code ec;
  const std::string out = std::filesystem::absolute(request.output, ec).string();
  if (code != 0) {
    return Fail("'" + request.plan.argv[0] + "' exited with code " + std::to_string(code) + "; " + out + " keeps the " +
                    std::to_string(result->ops) + " ops recorded before that",
                code);
  }
  std::fprintf(stderr, "magneton: recorded %zu ops and %zu tensors to %s\n", result->ops, result->tensors,
               out.c_str());
  if (!result->gpu_note.empty()) std::fprintf(stderr, "magneton: %s\n", result->gpu_note.c_str());
  if (result->forked_children > 0) {
    // A fork's child is a process of its own (a DataLoader's workers): said, so that no one looks for its ops here.
    std::fprintf(stderr,
                 "magneton: the program forked %lld child process(es) while it was recorded (a DataLoader's "
                 "workers, say); their ops are not in this trace\n",
                 static_cast<long long>(result->forked_children));
  }
  if (result->writer_waits > 0) {
    // Nothing was dropped, but the program was held up: its timing includes it.
    std::fprintf(stderr,
                 "magneton: the program waited %lld time(s), %lld ms in all, for the trace writer to catch up "
                 "(nothing was dropped)\n",
                 static_cast<long long>(result->writer_waits), static_cast<long long>(result->writer_wait_ms));
  }
  return 0;
}

}  // namespace magneton::cli
