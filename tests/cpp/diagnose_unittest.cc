// Diagnosis building blocks: frames, config diff, deviation point, candidate
// ranking against source read from disk.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "diagnose/diagnose.h"
#include "test_util.h"

namespace magneton::diagnose {
namespace {

TEST(DiagnoseFrames, ParsesFromTheRight) {
  FrameRef f = ParseFrame("C:/odd:dir/model.py:42:forward");
  EXPECT_EQ(f.file, "C:/odd:dir/model.py");
  EXPECT_EQ(f.line, 42);
  EXPECT_EQ(f.function, "forward");
  EXPECT_TRUE(IsLibraryFrame(ParseFrame("/usr/lib/python3/site-packages/transformers/x.py:1:f")));
  EXPECT_FALSE(IsLibraryFrame(ParseFrame("/home/me/train.py:10:main")));
}

TEST(DiagnoseConfig, DiffListsChangedAndOneSidedKeys) {
  Trace a, b;
  a.config = {{"call.generate.use_cache", "False", "call_arg"}, {"env.OMP_NUM_THREADS", "2", "env"},
              {"only.a", "1", "runtime"}};
  b.config = {{"call.generate.use_cache", "True", "call_arg"}, {"env.OMP_NUM_THREADS", "2", "env"},
              {"only.b", "x", "global_flag"}};
  auto d = DiffConfig(a, b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].key, "call.generate.use_cache");
  EXPECT_EQ(d[0].value_a, "False");
  EXPECT_EQ(d[0].value_b, "True");
  EXPECT_EQ(d[0].source, "call_arg");
  EXPECT_EQ(d[1].key, "only.a");
  EXPECT_EQ(d[1].value_b, "<absent>");
  EXPECT_EQ(d[2].value_a, "<absent>");
}

TEST(DiagnoseConfig, FlagsOfAFrameworkOnlyOneRunUsedAreNotDifferences) {
  Trace a, b;  // JAX vs PyTorch
  a.config = {{"jax.config.jax_enable_x64", "False", "global_flag"}, {"env.OMP_NUM_THREADS", "1", "env"}};
  b.config = {{"torch.get_num_threads", "1", "global_flag"}, {"env.OMP_NUM_THREADS", "2", "env"}};
  auto d = DiffConfig(a, b);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "env.OMP_NUM_THREADS");
  // Both runs on torch: a flag only one of them recorded still counts.
  b.config.push_back({"torch.backends.mkldnn.enabled", "True", "global_flag"});
  a.config.push_back({"torch.get_num_threads", "1", "global_flag"});
  d = DiffConfig(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].key, "torch.backends.mkldnn.enabled");
  EXPECT_EQ(d[1].value_a, "<absent>");
}

TEST(DiagnoseDeviation, LastCommonFrame) {
  auto d = FindDeviationPoint({"main.py:1:main", "m.py:20:forward", "lib.py:5:eager"},
                              {"main.py:1:main", "m.py:20:forward", "lib.py:9:sdpa"});
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.frame_a, "m.py:20:forward");
  EXPECT_EQ(d.frame_b, "m.py:20:forward");
  EXPECT_EQ(d.common_path.size(), 2u);
}

TEST(DiagnoseDeviation, SameFunctionDifferentLinesIsTheBranch) {
  auto d = FindDeviationPoint({"main.py:1:main", "m.py:20:forward", "lib.py:5:mm"},
                              {"main.py:1:main", "m.py:24:forward", "lib.py:5:mm"});
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.frame_a, "m.py:20:forward");
  EXPECT_EQ(d.frame_b, "m.py:24:forward");
}

TEST(DiagnoseDeviation, NothingInCommon) {
  EXPECT_FALSE(FindDeviationPoint({"a.py:1:f"}, {"b.py:1:g"}).found);
}

TEST(DiagnoseCandidates, NamedAtDeviationPointRanksFirst) {
  const std::string src = testing::TempPath("model.py");
  // main() is 30 lines away from forward(), outside a 10-line window around forward's lines.
  std::ofstream(src) << "def main():\n    run(threads)\n" << std::string(30, '\n')
                     << "def forward(x, use_cache=False):\n"   // line 33
                        "    if use_cache:\n"
                        "        return cached(x)\n"           // line 35
                        "    return full(x)\n";
  DeviationPoint d = FindDeviationPoint({src + ":2:main", src + ":35:forward"}, {src + ":2:main", src + ":36:forward"});
  ASSERT_TRUE(d.found);
  std::vector<ConfigDifference> diffs = {{"env.OMP_NUM_THREADS", "1", "2", "env"},
                                         {"torch.backends.mkldnn.enabled", "True", "False", "global_flag"},
                                         {"call.generate.use_cache", "False", "True", "call_arg"},
                                         {"model_config.M.threads", "1", "2", "model_config"}};
  // A file outside the recorded program's roots is never read: nothing is named.
  for (const Candidate& unread : RankCandidates(diffs, d, SourceRoots(), 10)) EXPECT_EQ(unread.frame_distance, -1);
  SourceRoots roots;
  roots.Add(std::filesystem::path(src).parent_path().string());
  auto c = RankCandidates(diffs, d, roots, 10);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].config.key, "call.generate.use_cache");
  EXPECT_EQ(c[0].frame_distance, 0);
  EXPECT_NE(c[0].evidence.find("use_cache"), std::string::npos);
  EXPECT_EQ(c[1].config.key, "model_config.M.threads");  // named one frame out, in main()
  EXPECT_EQ(c[1].frame_distance, 1);
  EXPECT_EQ(c[2].frame_distance, -1);
  EXPECT_EQ(c[2].config.source, "env");  // unnamed: env before global flags
}

TEST(DiagnoseCandidates, MissingSourceStillListsDifferences) {
  DeviationPoint d = FindDeviationPoint({"/nonexistent/x.py:3:f"}, {"/nonexistent/x.py:4:f"});
  SourceRoots roots;
  roots.Add("/nonexistent");  // left out: it does not exist
  EXPECT_TRUE(roots.dirs().empty());
  auto c = RankCandidates({{"model_config.M._attn_implementation", "eager", "sdpa", "model_config"}}, d, roots);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].name, "_attn_implementation");
  EXPECT_EQ(c[0].frame_distance, -1);
}

}  // namespace
}  // namespace magneton::diagnose
