#include "analysis/ab_record.h"

#include <filesystem>
#include <vector>

namespace magneton::analysis {

StatusOr<AbRecordResult> RecordInterleaved(const AbRecordRequest& request, ProcessRunner& runner,
                                           const std::function<void(const AbProgress&)>& progress,
                                           const std::function<int64_t()>& now_ns) {
  namespace fs = std::filesystem;
  if (request.plan_a.argv.empty() || request.plan_b.argv.empty()) return InvalidArgument("compare needs two commands");
  if (request.runs < 1) return InvalidArgument("compare needs at least one run per side");
  if (request.first_run < 1) return InvalidArgument("pairs are numbered from 1");
  std::error_code ec;
  fs::create_directories(request.out_dir, ec);
  if (ec) return InvalidArgument("cannot create " + request.out_dir + ": " + ec.message());
  AbRecordResult out;
  AbProgress p;
  p.total = 2 * request.runs;
  const int64_t t0 = now_ns();
  const int last = request.first_run + request.runs - 1;
  for (int k = request.first_run; k <= last; ++k) {
    // A B, B A, A B, ...: whichever side goes first in a pair meets a colder
    // machine (page cache, frequency); alternating spreads that over both.
    const std::vector<char> order = k % 2 == 1 ? std::vector<char>{'A', 'B'} : std::vector<char>{'B', 'A'};
    for (const char side : order) {
      const std::string stem = std::string(1, side == 'A' ? 'a' : 'b') + "." + std::to_string(k);
      RecordRunRequest req;
      req.plan = side == 'A' ? request.plan_a : request.plan_b;
      req.values = request.values;
      req.output = (fs::path(request.out_dir) / (stem + ".mtrace")).string();
      req.log_path = (fs::path(request.out_dir) / (stem + ".log")).string();
      req.label = stem;
      p.current = std::string(1, side) + " " + std::to_string(k) + "/" + std::to_string(last);
      if (progress) progress(p);
      MAGNETON_ASSIGN_OR_RETURN(const RecordRunResult r, runner.Record(req));
      if (r.exit_code != 0) {
        return Internal("run " + p.current + " exited with code " + std::to_string(r.exit_code) + " (its output: " +
                        req.log_path + ")");
      }
      if (!r.trace_status.ok()) {
        return Internal("run " + p.current + " left no readable trace: " + r.trace_status.message() +
                        " (its output: " + req.log_path + ")");
      }
      (side == 'A' ? out.traces_a : out.traces_b).push_back(req.output);
      ++p.done;
      p.elapsed_s = static_cast<double>(now_ns() - t0) / 1e9;
      p.eta_s = p.elapsed_s / p.done * (p.total - p.done);
    }
  }
  p.current.clear();
  if (progress) progress(p);
  return out;
}

}  // namespace magneton::analysis
