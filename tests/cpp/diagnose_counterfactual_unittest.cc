// --confirm's plan: which variable it flips to which value, what it never
// sets whatever a trace's config says (diagnose/override_rules.h), and how the
// flip lands in the re-run plan (argv elements, never a shell line).
#include <gtest/gtest.h>

#include "analysis/confirm.h"
#include "diagnose/counterfactual.h"
#include "diagnose/override_rules.h"
#include "trace/rerun_plan.h"

namespace magneton::diagnose {
namespace {

struct Case {
  Trace a, b;
  detect::DetectResult result;
  std::vector<Diagnosis> diagnoses;
};

// A is wasteful; the top candidate is `key`, `value_a` on A and `value_b` on B.
Case WithCandidate(const std::string& key, const std::string& value_b, const std::string& source = "env",
                   const std::string& value_a = "<absent>") {
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
  cand.config = {key, value_a, value_b, source};
  d.candidates.push_back(cand);
  c.diagnoses.push_back(d);
  return c;
}

RunPlan APlan() { return RunPlan{{"env", "OMP_NUM_THREADS=1", "python", "a.py"}, "/work", {}, "/usr/bin/python3"}; }

TEST(PlanCounterfactual, SetsTheOtherSidesValue) {
  Case c = WithCandidate("env.OMP_NUM_THREADS", "4");
  auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->rerun_side, 'A');
  EXPECT_EQ(plan->new_value, "4");
  EXPECT_EQ(plan->refused, "");
  // How the session re-runs it: A's plan, the variable set, and the argv
  // element that set it replaced whole.
  const RecordRunRequest req = analysis::ConfirmRequest(*plan, APlan(), "/work/a.mtrace");
  EXPECT_EQ(req.plan.argv, (std::vector<std::string>{"env", "OMP_NUM_THREADS=4", "python", "a.py"}));
  EXPECT_EQ(req.plan.cwd, "/work");
  EXPECT_EQ(req.plan.env.count("OMP_NUM_THREADS") ? req.plan.env.at("OMP_NUM_THREADS") : "", "4");
  EXPECT_EQ(req.output, "/work/a.mtrace.confirm.mtrace");
  const RecordRunRequest control = analysis::ControlRequest(APlan(), "/work/a.mtrace");
  EXPECT_EQ(control.plan, APlan());
}

TEST(PlanCounterfactual, RefusesEnvironmentVariablesOffTheAllowlist) {
  for (const char* name : {"LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "BASH_ENV", "PATH",
                           "MAGNETON_OVERRIDES", "DYLD_INSERT_LIBRARIES", "HOME", "CC", "CXX",
                           "TORCHINDUCTOR_CACHE_DIR", "GCONV_PATH", "OPENSSL_CONF", "JAVA_TOOL_OPTIONS", "XLA_FLAGS",
                           "RUN_MODE"}) {
    Case c = WithCandidate(std::string("env.") + name, "1");
    auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
    ASSERT_TRUE(plan.ok()) << name;
    EXPECT_NE(plan->refused.find("not an allowlisted performance knob"), std::string::npos) << plan->refused;
  }
}

TEST(PlanCounterfactual, RefusesValuesOfTheWrongType) {
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"OMP_WAIT_POLICY", "fast;touch X;true"}, {"OMP_NUM_THREADS", "4 && id"}, {"OMP_NUM_THREADS", "$(id)"},
           {"KMP_AFFINITY", "/tmp/x"}, {"TOKENIZERS_PARALLELISM", "yes"}, {"OMP_WAIT_POLICY", "'active'"},
           {"ONEDNN_MAX_CPU_ISA", "http://x"}}) {
    Case c = WithCandidate("env." + name, value);
    auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
    ASSERT_TRUE(plan.ok()) << name;
    EXPECT_NE(plan->refused.find("the value for " + name), std::string::npos) << name << "=" << value;
  }
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"OMP_WAIT_POLICY", "PASSIVE"}, {"OMP_WAIT_POLICY", ""}, {"OMP_NUM_THREADS", "8"},
           {"TOKENIZERS_PARALLELISM", "false"}, {"KMP_AFFINITY", "granularity=fine,compact,1,0"},
           {"TORCH_FAST_PATH_ENABLE", "1"}, {"GOMP_SPINCOUNT", "infinite"}}) {
    Case c = WithCandidate("env." + name, value);
    auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
    ASSERT_TRUE(plan.ok()) << name;
    EXPECT_EQ(plan->refused, "") << name << "=" << value;
  }
}

TEST(OverrideRules, FlagsOnlyThroughKnownSetters) {
  EXPECT_TRUE(ValidateFlip("torch.backends.mkldnn.enabled", "global_flag", "False", "True").ok());
  EXPECT_TRUE(ValidateFlip("torch.backends.cuda.matmul.allow_tf32", "global_flag", "False", "True").ok());
  EXPECT_TRUE(ValidateFlip("torch.get_num_threads", "global_flag", "4", "1").ok());
  EXPECT_TRUE(ValidateFlip("call.generate.use_cache", "call_arg", "False", "True").ok());
  EXPECT_TRUE(ValidateFlip("model_config.GPT2.attn_implementation", "model_config", "'eager'", "'sdpa'").ok());
  for (const char* key : {"torch.sys.path", "os.system", "torch.ops.load_library", "builtins.exec",
                          "torch.backends", "torch.get_x"}) {
    EXPECT_FALSE(ValidateFlip(key, "global_flag", "1", "1").ok()) << key;
  }
  EXPECT_FALSE(ValidateFlip("torch.backends.mkldnn.enabled", "global_flag", "False", "__import__('os')").ok());
  EXPECT_FALSE(ValidateFlip("call.generate.use_cache", "call_arg", "False", "[1, 2]").ok());
  EXPECT_FALSE(ValidateFlip("call.generate.use_cache", "call_arg", "False", "'/etc/passwd'").ok());
  // A config field the wasteful run does not have is not created.
  EXPECT_FALSE(ValidateFlip("model_config.GPT2.new_field", "model_config", "<absent>", "1").ok());
}

TEST(PlanCounterfactual, NeverSetsARedactedValue) {
  Case c = WithCandidate("env.HF_TOKEN", "<redacted>");
  auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("looks secret"), std::string::npos) << plan.status().message();
}

TEST(FlipForUser, PrintsTheCommandShellQuoted) {
  Case c = WithCandidate("env.RUN_MODE", "fast;touch X;true");
  c.a.meta.extra[kRerunPlanKey] = EncodeRunPlan(APlan());
  auto plan = PlanCounterfactual(c.a, c.b, c.result, c.diagnoses);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(analysis::FlipForUser(*plan, c.a),
            "    cd /work && env 'RUN_MODE=fast;touch X;true' env OMP_NUM_THREADS=1 python a.py");
}

}  // namespace
}  // namespace magneton::diagnose
