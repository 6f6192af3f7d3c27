// Recording two programs N times each, interleaved A B, B A, A B ... (`magneton
// compare`): a slow drift of the machine's load then hits both sides alike,
// neither side always runs first, and A_k with B_k is the pair the
// statistics compare.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "magneton/process_runner.h"
#include "magneton/status.h"

namespace magneton::analysis {

struct AbRecordRequest {
  // The two programs the user typed, as run plans (argv, never a shell line);
  // the cwd and environment are the caller's unless set.
  RunPlan plan_a, plan_b;
  int runs = 3;                             // recordings per side
  // The index of the first pair (a.<first_run>.mtrace): a confirmation round
  // appends pairs to the ones already recorded, keeping the A B / B A
  // alternation going.
  int first_run = 1;
  bool values = false;                      // fingerprint tensor values (needed for region matching)
  std::string out_dir;                      // traces go to out_dir/{a,b}.<k>.mtrace, logs beside them
};

struct AbProgress {
  int done = 0, total = 0;  // recordings finished / to do
  double elapsed_s = 0;
  double eta_s = -1;        // -1 until one recording has finished
  std::string current;      // what is being recorded now ("A 2/3"); "" at the end
};

struct AbRecordResult {
  std::vector<std::string> traces_a, traces_b;  // in recording order
};

// Records every run through `runner`; fails on the first run that does not
// start, exits non-zero or leaves no readable trace (its log is named).
StatusOr<AbRecordResult> RecordInterleaved(const AbRecordRequest& request, ProcessRunner& runner,
                                           const std::function<void(const AbProgress&)>& progress,
                                           const std::function<int64_t()>& now_ns);

}  // namespace magneton::analysis
