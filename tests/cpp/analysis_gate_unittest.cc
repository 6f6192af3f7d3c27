// The gate's job check (analysis/gate.h, docs/DIFF.md "magneton gate"): a significant
// regression fails, unless other work on the candidate's machine alone could
// explain it. The end-to-end gate on real recordings is
// tests/python/test_compare_gate.py.
#include <gtest/gtest.h>

#include "analysis/gate.h"

namespace magneton::analysis {
namespace {

JobComparison FiftyPercentDearer() {
  JobComparison job;
  job.runs_first = job.runs_second = 3;
  job.ratio = 1.5;
  job.interval = {true, 1.3, 1.7};
  job.method = "Welch t";
  return job;
}

detect::MachineLoadShares Load(double others) {
  detect::MachineLoadShares load;
  load.others_cpu_share = others;
  load.steal_share = 0;
  load.over_job = true;
  return load;
}

TEST(GateJobCheck, ASignificantRegressionOnAQuietMachineFails) {
  const GateCheck c = JobEnergyCheck(FiftyPercentDearer(), Load(0.02), Load(0.03), {});
  EXPECT_EQ(c.state, GateCheckState::kFail) << c.message;
}

TEST(GateJobCheck, ACandidateRecordedBesideBusyNeighboursIsInconclusive) {
  // 60% of the machine taken while the candidate's jobs ran: up to 2.45x
  // costlier for that alone, more than the interval's lower end (1.3).
  const GateCheck c = JobEnergyCheck(FiftyPercentDearer(), Load(0.02), Load(0.6), {});
  EXPECT_EQ(c.state, GateCheckState::kInconclusive) << c.message;
  EXPECT_NE(c.message.find("60%"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("jobs ran"), std::string::npos) << c.message;
  // A mild load (up to 1.23x, times the 5% limit: 1.29) does not reach 1.3: still a failure.
  EXPECT_EQ(JobEnergyCheck(FiftyPercentDearer(), Load(0.02), Load(0.2), {}).state, GateCheckState::kFail);
  // A busy baseline never excuses the candidate.
  EXPECT_EQ(JobEnergyCheck(FiftyPercentDearer(), Load(0.6), Load(0.02), {}).state, GateCheckState::kFail);
  // Loads a trace does not say (older traces) change nothing.
  EXPECT_EQ(JobEnergyCheck(FiftyPercentDearer(), detect::MachineLoadShares{}, Load(0.6), {}).state,
            GateCheckState::kFail);
}

TEST(GateJobCheck, NoRegressionPassesWhateverTheLoad) {
  JobComparison same = FiftyPercentDearer();
  same.ratio = 1.0;
  same.interval = {true, 0.95, 1.05};
  EXPECT_EQ(JobEnergyCheck(same, Load(0.02), Load(0.6), {}).state, GateCheckState::kPass);
}

}  // namespace
}  // namespace magneton::analysis
