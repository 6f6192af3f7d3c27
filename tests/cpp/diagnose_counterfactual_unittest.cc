// --confirm's plan: which variable it flips to which value, and the values it
// never sets whatever a trace's config says.
#include <gtest/gtest.h>

#include "analysis/confirm.h"
#include "diagnose/counterfactual.h"

namespace magneton::diagnose {
namespace {

struct Case {
  Trace a, b;
  detect::DetectResult result;
  std::vector<Diagnosis> diagnoses;
};

// A is wasteful; the top candidate is `key`, absent on A and `value_b` on B.
Case WithCandidate(const std::string& key, const std::string& value_b) {
  Case c;
  c.a.meta.command_line = "python a.py";
  c.a.meta.cwd = "/work";
  c.b.meta.command_line = "python b.py";
  detect::Finding f;
  f.verdict = detect::Verdict::kWaste;
  f.wasteful_side = 'A';
  c.result.findings.push_back(f);
  Diagnosis d;
  d.finding_index = 0;
  Candidate cand;
  cand.config = {key, "<absent>", value_b, "env"};
  d.candidates.push_back(cand);
  c.diagnoses.push_back(d);
  return c;
}

TEST(PlanCounterfactual, SetsTheOtherSidesValue) {
  Case c = WithCandidate("env.OMP_NUM_THREADS", "4");
  auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->rerun_side, 'A');
  EXPECT_EQ(plan->new_value, "4");
  // How the session re-runs it: A's command and directory, the variable set.
  const RecordRunRequest req = analysis::ConfirmRequest(*plan, c.a, "/work/a.mtrace");
  EXPECT_EQ(req.argv, (std::vector<std::string>{"/bin/sh", "-c", "python a.py"}));
  EXPECT_EQ(req.cwd, "/work");
  EXPECT_EQ(req.env.count("OMP_NUM_THREADS") ? req.env.at("OMP_NUM_THREADS") : "", "4");
  EXPECT_EQ(req.output, "/work/a.mtrace.confirm.mtrace");
}

TEST(PlanCounterfactual, NeverSetsVariablesThatRunCode) {
  for (const char* name : {"LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "BASH_ENV", "PATH",
                           "MAGNETON_OVERRIDES", "DYLD_INSERT_LIBRARIES"}) {
    Case c = WithCandidate(std::string("env.") + name, "/tmp/evil.so");
    auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
    ASSERT_FALSE(plan.ok()) << name;
    EXPECT_NE(plan.status().message().find("does not set"), std::string::npos) << plan.status().message();
  }
}

TEST(PlanCounterfactual, NeverSetsARedactedValue) {
  Case c = WithCandidate("env.HF_TOKEN", "<redacted>");
  auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("looks secret"), std::string::npos) << plan.status().message();
}

}  // namespace
}  // namespace magneton::diagnose
