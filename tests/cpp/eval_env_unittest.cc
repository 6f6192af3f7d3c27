// What a case needs from the machine: GPU visibility from driver files and
// CUDA_VISIBLE_DEVICES, skipping GPU cases (they count in no score), env.json
// and the cached per-side environment (with a fake command runner).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "eval/eval_env.h"
#include "test_util.h"

namespace magneton::eval {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(DetectGpuTest, NoDriverFilesNoGpu) {
  const fs::path root = testing::TempPath("nogpu");
  fs::create_directories(root / "proc");
  fs::create_directories(root / "dev");
  Write(root / "dev" / "nvidiactl", "");  // the control node alone is no GPU
  GpuVisibility g = DetectGpu((root / "proc").string(), (root / "dev").string(), nullptr);
  EXPECT_FALSE(g.visible);
  EXPECT_NE(g.reason.find("no NVIDIA GPU visible"), std::string::npos) << g.reason;
}

TEST(DetectGpuTest, DriverListOrDeviceNodeMeansGpu) {
  const fs::path root = testing::TempPath("gpu");
  fs::create_directories(root / "proc" / "driver" / "nvidia" / "gpus" / "0000:01:00.0");
  fs::create_directories(root / "dev");
  GpuVisibility g = DetectGpu((root / "proc").string(), (root / "dev").string(), nullptr);
  EXPECT_TRUE(g.visible) << g.reason;

  const fs::path root2 = testing::TempPath("gpu_dev");
  fs::create_directories(root2 / "proc");
  Write(root2 / "dev" / "nvidia0", "");
  EXPECT_TRUE(DetectGpu((root2 / "proc").string(), (root2 / "dev").string(), "0").visible);
}

TEST(DetectGpuTest, CudaVisibleDevicesCanHideEveryGpu) {
  const fs::path root = testing::TempPath("hidden");
  fs::create_directories(root / "proc");
  Write(root / "dev" / "nvidia0", "");
  for (const char* v : {"", "-1", " -1,0"}) {
    GpuVisibility g = DetectGpu((root / "proc").string(), (root / "dev").string(), v);
    EXPECT_FALSE(g.visible) << "CUDA_VISIBLE_DEVICES=" << v;
    EXPECT_NE(g.reason.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
  }
  EXPECT_TRUE(DetectGpu((root / "proc").string(), (root / "dev").string(), "1,0").visible);
}

std::string ExpectedJson(const std::string& id, const std::string& category, bool needs_gpu) {
  return std::string("{\"id\": \"") + id + "\", \"category\": \"" + category + "\", \"waste_side\": \"a\", " +
         "\"root_cause\": {\"kind\": \"api_choice\", \"name\": \"x\", \"description\": \"x\"}, \"needs_gpu\": " + (needs_gpu ? "true" : "false") +
         "}";
}

TEST(SkipCasesNeedingGpuTest, SkipsOnlyGpuCasesWhenNoGpuAndTheyCountNowhere) {
  const fs::path root = testing::TempPath("cases");
  Write(root / "cpu" / "expected.json", ExpectedJson("cpu", "A", false));
  Write(root / "gpu" / "expected.json", ExpectedJson("gpu", "M", true));
  Write(root / "gpuctl" / "expected.json", ExpectedJson("gpuctl", "control", true));
  std::vector<CaseDir> all = {{"cpu", (root / "cpu").string()},
                              {"gpu", (root / "gpu").string()},
                              {"gpuctl", (root / "gpuctl").string()}};

  std::vector<CaseDir> with_gpu = all;
  EXPECT_TRUE(SkipCasesNeedingGpu(&with_gpu, {true, "1 GPU"}).empty());
  EXPECT_EQ(with_gpu.size(), 3u);

  std::vector<CaseDir> cases = all;
  std::vector<CaseResult> skipped = SkipCasesNeedingGpu(&cases, {false, "no NVIDIA GPU visible"});
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].id, "cpu");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].skipped, "needs a GPU: no NVIDIA GPU visible");
  EXPECT_FALSE(skipped[0].ok);

  // A skipped positive is no FN and a skipped control no FP: the counts only
  // see the CPU case (a detected positive here).
  CaseResult cpu;
  cpu.expected.id = "cpu";
  cpu.expected.category = "A";
  cpu.ok = true;
  CaseScore hit;
  hit.detected = true;
  cpu.scores = {hit};
  skipped[1].scores = {CaseScore{false, false, true, ""}};  // would be a FP if it counted
  std::vector<CaseResult> results = {cpu, skipped[0], skipped[1]};
  Counts c = CountAt(results, 0);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.fn, 0);
  EXPECT_EQ(c.fp, 0);

  Report rep;
  rep.cases = results;
  rep.options.epsilons = {1e-2};
  rep.options.taus = {0.1};
  const std::string table = RenderTable(rep);
  EXPECT_NE(table.find("skipped"), std::string::npos);
  EXPECT_NE(table.find("needs a GPU: no NVIDIA GPU visible"), std::string::npos);
  const nlohmann::json j = ToJson(rep);
  EXPECT_EQ(j["cases"][1]["skipped"], "needs a GPU: no NVIDIA GPU visible");
  EXPECT_TRUE(j["cases"][0]["skipped"].is_null());
  const std::string md = RenderMarkdown(rep);
  EXPECT_NE(md.find("2 case(s) skipped"), std::string::npos);
}

TEST(CaseEnvTest, ReadsRequirementsPerSideAndRejectsTorch) {
  const fs::path dir = testing::TempPath("envcase");
  fs::create_directories(dir);
  auto none = ReadCaseEnv(dir.string());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->a.empty() && none->b.empty());

  Write(dir / "env.json", R"({"a": ["transformers==4.38.1"], "b": ["transformers==4.38.2", "tokenizers<0.19"]})");
  auto env = ReadCaseEnv(dir.string());
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ(env->side('a'), std::vector<std::string>{"transformers==4.38.1"});
  EXPECT_EQ(env->side('b').size(), 2u);

  Write(dir / "env.json", R"({"a": ["torch==2.1.0"]})");
  EXPECT_FALSE(ReadCaseEnv(dir.string()).ok());
  Write(dir / "env.json", R"({"a": ["torchvision==0.20.0"]})");
  EXPECT_TRUE(ReadCaseEnv(dir.string()).ok());
  Write(dir / "env.json", R"({"a": "transformers==4.38.1"})");
  EXPECT_FALSE(ReadCaseEnv(dir.string()).ok());
}

TEST(CaseEnvTest, KeyDependsOnRequirementsAndBaseNotOrder) {
  BasePython base{"/usr/bin/python3", "3.11.7", "2.13.0", {}};
  BasePython other = base;
  other.torch_version = "2.12.0";
  EXPECT_EQ(EnvKey({"a==1", "b==2"}, base), EnvKey({"b==2", "a==1"}, base));
  EXPECT_NE(EnvKey({"a==1"}, base), EnvKey({"a==2"}, base));
  EXPECT_NE(EnvKey({"a==1"}, base), EnvKey({"a==1"}, other));
  EXPECT_EQ(EnvKey({"a==1"}, base).size(), 16u);
}

// A fake runner that plays venv / pip / python and logs the commands.
struct FakeRunner {
  std::vector<std::vector<std::string>> calls;
  std::string purelib;
  int pip_exit = 0;
  int operator()(const std::vector<std::string>& argv, std::string* out) {
    calls.push_back(argv);
    if (out) out->clear();
    if (argv.size() > 2 && argv[1] == "-m" && argv[2] == "venv") {
      fs::create_directories(fs::path(argv.back()) / "bin");
      std::ofstream(fs::path(argv.back()) / "bin" / "python") << "";
      return 0;
    }
    if (argv.size() > 2 && argv[1] == "-m" && argv[2] == "pip") {
      if (out) *out = pip_exit ? "ERROR: No matching distribution" : "Successfully installed";
      return pip_exit;
    }
    if (argv.size() > 2 && argv[2].find("purelib") != std::string::npos) {
      fs::create_directories(purelib);
      if (out) *out = purelib + "\n";
    }
    return 0;
  }
};

TEST(CaseEnvTest, CreatesOnceWithTorchPinnedAndMainSitePackagesThenReuses) {
  const fs::path cache = testing::TempPath("envcache");
  BasePython base{"/main/bin/python", "3.11.7", "2.13.0", {"/main/lib/site-packages", "/sys/site-packages"}};
  const std::vector<std::string> reqs = {"transformers==4.38.1"};
  const fs::path dir = cache / EnvKey(reqs, base);
  FakeRunner fake;
  fake.purelib = (dir / "lib" / "site-packages").string();
  std::vector<std::string> lines;
  auto run = [&fake](const std::vector<std::string>& argv, std::string* out) { return fake(argv, out); };
  auto progress = [&lines](const std::string& l) { lines.push_back(l); };

  auto python = EnsureCaseEnv(reqs, base, cache.string(), run, progress);
  ASSERT_TRUE(python.ok()) << python.status().message();
  EXPECT_EQ(*python, (dir / "bin" / "python").string());
  ASSERT_GE(fake.calls.size(), 4u);
  EXPECT_EQ(fake.calls[0], (std::vector<std::string>{"/main/bin/python", "-m", "venv", "--system-site-packages",
                                                     dir.string()}));
  const auto& pip = fake.calls[2];
  ASSERT_EQ(pip.back(), "transformers==4.38.1");
  EXPECT_NE(std::find(pip.begin(), pip.end(), "-c"), pip.end());
  std::ifstream constraints(dir / "constraints.txt");
  std::string pin;
  std::getline(constraints, pin);
  EXPECT_EQ(pin, "torch==2.13.0");
  std::ifstream pth(fs::path(fake.purelib) / "_magneton_main_env.pth");
  std::string first;
  std::getline(pth, first);
  EXPECT_EQ(first, "/main/lib/site-packages");

  // Second time: the ready marker short-cuts everything.
  const size_t calls = fake.calls.size();
  auto again = EnsureCaseEnv(reqs, base, cache.string(), run, progress);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *python);
  EXPECT_EQ(fake.calls.size(), calls);

  // No requirements: the main interpreter, nothing created.
  auto main = EnsureCaseEnv({}, base, cache.string(), run, progress);
  ASSERT_TRUE(main.ok());
  EXPECT_EQ(*main, "/main/bin/python");
}

TEST(CaseEnvTest, PipFailureIsAnErrorAndLeavesNoReadyEnv) {
  const fs::path cache = testing::TempPath("envfail");
  BasePython base{"/main/bin/python", "3.11.7", "2.13.0", {"/main/lib/site-packages"}};
  const std::vector<std::string> reqs = {"nonexistent-package==0.0.1"};
  FakeRunner fake;
  fake.purelib = (cache / EnvKey(reqs, base) / "lib" / "site-packages").string();
  fake.pip_exit = 1;
  auto run = [&fake](const std::vector<std::string>& argv, std::string* out) { return fake(argv, out); };
  auto r = EnsureCaseEnv(reqs, base, cache.string(), run, [](const std::string&) {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("No matching distribution"), std::string::npos) << r.status().message();
  EXPECT_FALSE(fs::exists(cache / EnvKey(reqs, base) / ".magneton-env-ready"));
}

}  // namespace
}  // namespace magneton::eval
