// The run-wide shift of one recorded pair, leaving one finding out
// (docs/DIFF.md, "Uncertainty"). Over several recordings per side, each
// run's machine state moves every region of that run together: a run where
// A's machine was slower makes every region of A costlier. The typical
// same-work op pair of the run (the same ops on the same shapes on both
// sides) measures that shift; a region's log ratio net of it carries the
// code's effect without the run's. The finding's own pairs are left out, so
// that a same-work waste that holds most of the run's energy is not taken
// for the machine.
#ifndef MAGNETON_DETECT_RUN_SHIFT_H_
#define MAGNETON_DETECT_RUN_SHIFT_H_

#include <optional>
#include <vector>

#include "detect/detect.h"

namespace magneton::detect {

class RunShift {
 public:
  // Every same-work op pair of `run`'s findings, sorted once.
  explicit RunShift(const DetectResult& run);

  // ln(A / B) of the run's typical same-work op pair (energy-weighted
  // median) over the pairs of every finding but `own` (which may be null or
  // a finding of another run); nullopt when fewer than 3 effective pairs
  // remain: too few to say anything about the run.
  std::optional<double> LogShiftExcluding(const Finding* own) const;

 private:
  struct TaggedPair {
    double log_ratio = 0;
    double energy_uj = 0;
    const Finding* owner = nullptr;
  };
  std::vector<TaggedPair> pairs_;  // by log_ratio
  double total_uj_ = 0, total_sq_ = 0;
};

}  // namespace magneton::detect

#endif  // MAGNETON_DETECT_RUN_SHIFT_H_
