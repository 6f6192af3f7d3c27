// The ProcessRunner the CLI hands to the analysis: real child processes.
#pragma once

#include "magneton/process_runner.h"

namespace magneton::runner {

class SubprocessRunner : public ProcessRunner {
 public:
  StatusOr<int> Run(const RunRequest& request) override;
  StatusOr<RecordRunResult> Record(const RecordRunRequest& request) override;
};

}  // namespace magneton::runner
