// compare's pieces: interleaved recording through a scripted runner, and the
// job-energy interval (src/analysis/ab_record.cc, job_compare.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/ab_record.h"
#include "analysis/job_compare.h"
#include "analysis/more_runs.h"
#include "test_util.h"

namespace magneton::analysis {
namespace {

class ScriptedRecorder : public ProcessRunner {
 public:
  std::vector<RecordRunRequest> records;
  int fail_at = -1;  // the index of the recording that exits 3
  StatusOr<int> Run(const RunRequest&) override { return Internal("not used"); }
  StatusOr<RecordRunResult> Record(const RecordRunRequest& request) override {
    records.push_back(request);
    RecordRunResult r;
    r.exit_code = static_cast<int>(records.size()) - 1 == fail_at ? 3 : 0;
    return r;
  }
};

TEST(AbRecord, AlternatesWhichSideGoesFirstAndPairsByIndex) {
  ScriptedRecorder runner;
  AbRecordRequest req;
  req.plan_a.argv = {"python", "a.py"};
  req.plan_b.argv = {"python", "b.py"};
  req.runs = 3;
  req.values = true;
  req.out_dir = testing::TempPath("ab");
  std::vector<AbProgress> seen;
  int64_t clock = 0;
  auto out = RecordInterleaved(req, runner, [&](const AbProgress& p) { seen.push_back(p); },
                               [&] { return clock += 1'000'000'000; });
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<std::string> order;
  for (const RecordRunRequest& r : runner.records) {
    order.push_back(r.plan.argv.back());
    EXPECT_TRUE(r.values);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"a.py", "b.py", "b.py", "a.py", "a.py", "b.py"}));
  ASSERT_EQ(out->traces_a.size(), 3u);
  EXPECT_NE(out->traces_a[1].find("a.2.mtrace"), std::string::npos);
  EXPECT_NE(out->traces_b[1].find("b.2.mtrace"), std::string::npos);
  // Progress: before every recording and once at the end; an ETA once one is done.
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen.front().eta_s, -1);
  EXPECT_EQ(seen[1].current, "B 1/3");
  EXPECT_GT(seen[1].eta_s, 0);
  EXPECT_EQ(seen.back().done, 6);
  EXPECT_EQ(seen.back().eta_s, 0);
  EXPECT_TRUE(seen.back().current.empty());
}

TEST(AbRecord, AFailingRunStopsAndNamesItsLog) {
  ScriptedRecorder runner;
  runner.fail_at = 2;
  AbRecordRequest req;
  req.plan_a.argv = {"a"};
  req.plan_b.argv = {"b"};
  req.out_dir = testing::TempPath("ab-fail");
  auto out = RecordInterleaved(req, runner, nullptr, [] { return int64_t{0}; });
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("B 2/3 exited with code 3"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("b.2.log"), std::string::npos);
  EXPECT_EQ(runner.records.size(), 3u);
}

TEST(AbRecord, MorePairsContinueTheNumberingAndTheAlternation) {
  ScriptedRecorder runner;
  AbRecordRequest req;
  req.plan_a.argv = {"a.py"};
  req.plan_b.argv = {"b.py"};
  req.runs = 2;
  req.first_run = 4;
  req.out_dir = testing::TempPath("ab-more");
  std::vector<AbProgress> seen;
  auto out = RecordInterleaved(req, runner, [&](const AbProgress& p) { seen.push_back(p); },
                               [] { return int64_t{0}; });
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<std::string> order;
  for (const RecordRunRequest& r : runner.records) order.push_back(r.plan.argv.back());
  // Pair 4 is even: B first; pair 5: A first.
  EXPECT_EQ(order, (std::vector<std::string>{"b.py", "a.py", "a.py", "b.py"}));
  ASSERT_EQ(out->traces_a.size(), 2u);
  EXPECT_NE(out->traces_a[0].find("a.4.mtrace"), std::string::npos);
  EXPECT_NE(out->traces_b[1].find("b.5.mtrace"), std::string::npos);
  EXPECT_EQ(seen.front().current, "B 4/5");
  EXPECT_EQ(seen.back().done, 4);
  req.first_run = 0;
  EXPECT_FALSE(RecordInterleaved(req, runner, nullptr, [] { return int64_t{0}; }).ok());
}

detect::Finding FindingWith(detect::Verdict verdict, detect::Verdict point_verdict) {
  detect::Finding f;
  f.verdict = verdict;
  f.point_verdict = point_verdict;
  return f;
}

TEST(MoreRuns, OnlyVerdictsTheIntervalLeftOpenAskForMorePairs) {
  using detect::Verdict;
  detect::DetectResult r;
  r.findings = {FindingWith(Verdict::kWaste, Verdict::kWaste),
                FindingWith(Verdict::kInconclusive, Verdict::kEqual),  // never beyond tau: decided
                FindingWith(Verdict::kEqual, Verdict::kEqual)};
  Undecided u = FindUndecided(&r, JobCall::kFirstCostsMore);
  EXPECT_FALSE(u.any());
  EXPECT_EQ(PairsToAdd(u, 3), 0);

  r.findings.push_back(FindingWith(Verdict::kInconclusive, Verdict::kWaste));
  r.findings.push_back(FindingWith(Verdict::kInconclusive, Verdict::kTradeOff));
  u = FindUndecided(&r, JobCall::kNoDifference);
  EXPECT_EQ(u.findings, 2u);
  EXPECT_FALSE(u.job);
  EXPECT_EQ(u.Describe(), "2 findings");
  EXPECT_EQ(PairsToAdd(u, 3), 3);
  EXPECT_EQ(PairsToAdd(u, 0), 0);  // --more-runs 0

  u = FindUndecided(nullptr, JobCall::kInconclusive);  // compare without --values
  EXPECT_TRUE(u.job);
  EXPECT_EQ(u.Describe(), "the job energy");
  EXPECT_FALSE(FindUndecided(nullptr, JobCall::kNoInterval).any());
}

TEST(JobCompare, CallsASideOnlyWhenTheIntervalClearsTau) {
  JobComparison c;
  c.ratio = 1 / 1.5;  // second/first: A costs 1.5x
  c.interval = {true, 1 / 1.8, 1 / 1.2};
  EXPECT_EQ(CallJobs(c, 0.1), JobCall::kFirstCostsMore);
  c.interval = {true, 1 / 1.8, 1 / 1.05};
  EXPECT_EQ(CallJobs(c, 0.1), JobCall::kInconclusive);
  c.ratio = 1 / 1.05;
  EXPECT_EQ(CallJobs(c, 0.1), JobCall::kNoDifference);
  c.ratio = 1.5;
  c.interval = {true, 1.2, 1.8};
  EXPECT_EQ(CallJobs(c, 0.1), JobCall::kSecondCostsMore);
  c.interval = {};
  EXPECT_EQ(CallJobs(c, 0.1), JobCall::kNoInterval);
}

TEST(JobCompare, ACostlierSideOnABusierMachineIsNotCalled) {
  JobComparison c;
  c.ratio = 1 / 1.5;  // A costs 1.5x, interval [1.3, 1.8]
  c.interval = {true, 1 / 1.8, 1 / 1.3};
  detect::MachineLoadShares quiet, busy;
  quiet.others_cpu_share = 0.02;
  quiet.steal_share = 0;
  busy.others_cpu_share = 0.45;  // bound (1 - 0.02) / (1 - 0.45) = 1.78
  busy.steal_share = 0;
  EXPECT_NEAR(JobLoadBound(c, busy, quiet), 0.98 / 0.55, 1e-9);
  EXPECT_EQ(CallJobs(c, 0.1, busy, quiet), JobCall::kBusierCostsMore);
  EXPECT_TRUE(FindUndecided(nullptr, JobCall::kBusierCostsMore).job);
  // The quieter side costing more is called: the load would have slowed the other.
  EXPECT_EQ(CallJobs(c, 0.1, quiet, busy), JobCall::kFirstCostsMore);
  // A gap under kMaterialLoad is no evidence.
  busy.others_cpu_share = 0.08;
  EXPECT_EQ(CallJobs(c, 0.1, busy, quiet), JobCall::kFirstCostsMore);
  // A ratio beyond the bound is called even on the busier machine.
  busy.others_cpu_share = 0.45;
  c.ratio = 1 / 3.0;
  c.interval = {true, 1 / 3.5, 1 / 2.5};
  EXPECT_EQ(CallJobs(c, 0.1, busy, quiet), JobCall::kFirstCostsMore);
}

TEST(JobCompare, ConsistentRunsGiveATightPairedInterval) {
  const JobComparison c = CompareJobs({100, 120, 90}, {200, 236, 185}, /*paired=*/true, 0.95);
  EXPECT_EQ(c.method, "paired t");
  ASSERT_TRUE(c.interval.known);
  EXPECT_GT(c.interval.low, 1.8);
  EXPECT_LT(c.interval.high, 2.2);
  EXPECT_LE(c.interval.low, c.ratio);
  EXPECT_GE(c.interval.high, c.ratio);
}

TEST(JobCompare, NoisyIdenticalRunsStraddleOne) {
  // The run-to-run spread of this VM (788, 1350, 934 ms for one script).
  const JobComparison c = CompareJobs({788, 1350, 934}, {940, 800, 1300}, /*paired=*/false, 0.95);
  EXPECT_EQ(c.method, "Welch t");
  ASSERT_TRUE(c.interval.known);
  EXPECT_LT(c.interval.low, 1.0);
  EXPECT_GT(c.interval.high, 1.0);
}

TEST(JobCompare, OneRecordingPerSideHasNoInterval) {
  const JobComparison c = CompareJobs({100}, {300}, /*paired=*/true, 0.95);
  EXPECT_NEAR(c.ratio, 3, 1e-9);
  EXPECT_FALSE(c.interval.known);
  EXPECT_TRUE(c.method.empty());
}

}  // namespace
}  // namespace magneton::analysis
