// The run-to-run spread section (src/eval/spread.cc): runs read back from the
// JSON `magneton eval --json` writes, their lowest F1 over the tolerance
// range, and which case moved between runs.
#include "eval/spread.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace magneton::eval {
namespace {

// A suite of one positive and one control over epsilons {1e-7, 1e-3, 1e-2,
// 0.2} and taus {0.1, 0.5}; `detected_at` says per setting whether the
// positive was found, `fp_at` whether the control was called waste.
Report MakeRun(const std::vector<bool>& detected_at, const std::vector<bool>& fp_at) {
  Report rep;
  rep.date = "2026-12-03 10:00:00 UTC";
  rep.options.epsilons = {1e-7, 1e-3, 1e-2, 0.2};
  rep.options.taus = {0.1, 0.5};
  CaseResult positive, control;
  positive.expected.id = "kv-cache";
  positive.expected.category = "M";
  control.expected.id = "identical";
  control.expected.category = "control";
  for (CaseResult* c : {&positive, &control}) {
    c->ok = true;
    for (double e : rep.options.epsilons) {
      for (double t : rep.options.taus) c->settings.push_back({e, t});
    }
  }
  for (size_t k = 0; k < detected_at.size(); ++k) {
    positive.scores.push_back(CaseScore{detected_at[k], false, false, ""});
    control.scores.push_back(CaseScore{false, false, fp_at[k], ""});
  }
  positive.waste_findings = control.waste_findings = std::vector<int>(detected_at.size(), 0);
  const size_t headline = 2 * 2;  // epsilon 1e-2, tau 0.1
  positive.headline = positive.scores[headline];
  control.headline = control.scores[headline];
  rep.cases = {positive, control};
  return rep;
}

TEST(EvalSpread, LowestF1IsTakenOverTheToleranceRangeOnly) {
  // Settings (epsilon-major): 1e-7 misses at both taus (outside the range, so it
  // does not count); 1e-3 misses at tau 0.5 only; 1e-2 and 0.2 find it everywhere.
  const Report rep = MakeRun({false, false, true, false, true, true, true, true},
                             {false, false, false, false, false, false, false, false});
  auto s = SummarizeRun(ToJson(rep), "r1.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->headline.tp, 1);
  EXPECT_EQ(s->headline.fp, 0);
  EXPECT_DOUBLE_EQ(s->min_f1_at_tau, 1.0);   // every epsilon in range finds it at tau 0.1
  EXPECT_DOUBLE_EQ(s->min_f1_any_tau, 0.0);  // 1e-3 at tau 0.5 misses it: recall 0
  EXPECT_TRUE(s->missed.empty());
  EXPECT_EQ(s->scored_cases, (std::vector<std::string>{"kv-cache", "identical"}));
}

TEST(EvalSpread, MissesAndFalsePositivesAreNamedPerRun) {
  const std::vector<bool> none(8, false), all(8, true);
  auto good = SummarizeRun(ToJson(MakeRun(all, none)), "r1.json");
  // Missed at the headline and called waste on the control: F1 0 there.
  auto bad = SummarizeRun(ToJson(MakeRun(none, all)), "this run");
  ASSERT_TRUE(good.ok() && bad.ok());
  EXPECT_EQ(bad->missed, std::vector<std::string>{"kv-cache"});
  EXPECT_EQ(bad->false_positives, std::vector<std::string>{"identical"});
  EXPECT_DOUBLE_EQ(bad->min_f1_at_tau, 0.0);

  const std::string md = RenderSpread({*good, *bad});
  EXPECT_NE(md.find("## Run-to-run spread"), std::string::npos) << md;
  EXPECT_NE(md.find("run 1 (`r1.json`)"), std::string::npos) << md;
  EXPECT_NE(md.find("F1 at the headline setting from 0.00 to 1.00"), std::string::npos) << md;
  EXPECT_NE(md.find("in 1 of 2 run(s)"), std::string::npos) << md;
  EXPECT_NE(md.find("| kv-cache | this run (missed) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| identical | this run (false positive) |"), std::string::npos) << md;
  EXPECT_EQ(md.find("not like for like"), std::string::npos) << md;

  // Two clean runs: nothing moved, both at the target.
  const std::string clean = RenderSpread({*good, *good});
  EXPECT_NE(clean.find("in 2 of 2 run(s)"), std::string::npos) << clean;
  EXPECT_EQ(clean.find("scored wrong in"), std::string::npos) << clean;
}

TEST(EvalSpread, ARunThatScoredOtherCasesIsMarked) {
  const std::vector<bool> all(8, true), none(8, false);
  Report fewer = MakeRun(all, none);
  fewer.cases[1].skipped = "needs a GPU";
  auto a = SummarizeRun(ToJson(fewer), "r1.json");
  auto b = SummarizeRun(ToJson(MakeRun(all, none)), "this run");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(RenderSpread({*a, *b}).find("run 1 (`r1.json`) scored other cases"), std::string::npos);
}

TEST(EvalSpread, PageCarriesTheSectionAfterTheHeadline) {
  const std::vector<bool> all(8, true), none(8, false);
  const Report rep = MakeRun(all, none);
  auto s = SummarizeRun(ToJson(rep), "this run");
  ASSERT_TRUE(s.ok());
  const std::string md = RenderMarkdown(rep, RenderSpread({*s, *s}));
  const size_t headline = md.find("## Headline"), spread = md.find("## Run-to-run spread"),
               scoring = md.find("## How it is scored");
  ASSERT_NE(spread, std::string::npos);
  EXPECT_LT(headline, spread);
  EXPECT_LT(spread, scoring);
  // Without one the page is as before.
  EXPECT_EQ(RenderMarkdown(rep).find("Run-to-run"), std::string::npos);
}

TEST(EvalSpread, NotAnEvalFileIsAClearError) {
  auto wrong = SummarizeRun(nlohmann::json{{"schema", "magneton.diff/1"}}, "diff.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("not the --json output of magneton eval"), std::string::npos);
  nlohmann::json j = ToJson(MakeRun(std::vector<bool>(8, true), std::vector<bool>(8, false)));
  j["options"]["headline"]["tau"] = 0.3;  // no such row in the sweep
  EXPECT_FALSE(SummarizeRun(j, "x.json").ok());
  EXPECT_EQ(ReadRunSummary("/nonexistent/r.json").status().code(), StatusCode::kNotFound);
  const std::string path = ::testing::TempDir() + "/eval_spread_bad.json";
  std::ofstream(path) << "{ not json";
  auto bad = ReadRunSummary(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not valid JSON"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace magneton::eval
