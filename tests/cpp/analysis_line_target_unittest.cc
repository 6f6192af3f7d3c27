// Which finding the line-level step explains (ChooseLineTraceTarget): the
// flagged findings first, then the rest; a branch inside one function first
// within a tier.
#include <gtest/gtest.h>

#include <vector>

#include "analysis/line_rerun.h"

namespace magneton::analysis {
namespace {

struct Ranked {
  std::vector<detect::Finding> findings;
  std::vector<diagnose::Diagnosis> diagnoses;
  // One finding with this verdict and its diagnosis; `branch`: the paths part
  // inside one function (frames differ), else the same frame on both sides.
  void Add(detect::Verdict verdict, bool deviation, bool branch) {
    detect::Finding f;
    f.verdict = verdict;
    findings.push_back(f);
    diagnose::Diagnosis d;
    d.finding_index = findings.size() - 1;
    d.deviation.found = deviation;
    d.deviation.frame_a = "gen.py:19:main";
    d.deviation.frame_b = branch ? "gen.py:21:main" : "gen.py:19:main";
    diagnoses.push_back(d);
  }
  size_t Chosen() {
    diagnose::Diagnosis* d = ChooseLineTraceTarget(diagnoses, findings);
    return d ? d->finding_index : SIZE_MAX;
  }
};

TEST(LineTraceTarget, AFlaggedFindingBeatsABranchingInconclusiveOne) {
  Ranked r;
  r.Add(detect::Verdict::kWaste, true, false);
  r.Add(detect::Verdict::kInconclusive, true, true);  // the noisy set-up region of test_diff_hf
  EXPECT_EQ(r.Chosen(), 0u);
}

TEST(LineTraceTarget, WithinTheFlaggedTheBranchingOneWins) {
  Ranked r;
  r.Add(detect::Verdict::kWaste, true, false);
  r.Add(detect::Verdict::kTradeOff, true, true);
  r.Add(detect::Verdict::kInconclusive, true, true);
  EXPECT_EQ(r.Chosen(), 1u);
}

TEST(LineTraceTarget, AnInconclusiveFindingOnlyWhenNoFlaggedOneHasADeviation) {
  Ranked r;
  r.Add(detect::Verdict::kWaste, false, false);
  r.Add(detect::Verdict::kInconclusive, true, false);
  r.Add(detect::Verdict::kInconclusive, true, true);
  EXPECT_EQ(r.Chosen(), 2u);
  Ranked none;
  none.Add(detect::Verdict::kWaste, false, false);
  EXPECT_EQ(none.Chosen(), SIZE_MAX);
}

}  // namespace
}  // namespace magneton::analysis
