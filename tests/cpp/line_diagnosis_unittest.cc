// Line-level diagnosis: the Python tokenizer and statement parser, function
// extent, the alignment of two runs' line sequences, and the backward walk
// from the branch to the origin, on small Python fixtures.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {
namespace {

using Strings = std::vector<std::string>;

TEST(PythonExpr, ReferencesOfConditions) {
  EXPECT_EQ(ExtractReferences("self.config.use_cache and not generation_config.use_cache"),
            (Strings{"self.config.use_cache", "generation_config.use_cache"}));
  EXPECT_EQ(ExtractReferences("kwargs[\"use_cache\"] or kwargs.get('x', None)"),
            (Strings{"kwargs[\"use_cache\"]", "kwargs[\"x\"]"}));
  EXPECT_EQ(ExtractReferences("os.environ.get(\"MY_FAST\", \"0\") == \"1\" or os.getenv('B')"),
            (Strings{"env:MY_FAST", "env:B"}));
  EXPECT_EQ(ExtractReferences("os.environ['X'] != ''"), (Strings{"env:X"}));
  // Callees, builtins, keyword-argument names and literals are not operands.
  EXPECT_EQ(ExtractReferences("isinstance(cache, Cache) and len(x) > 2 or f(use_cache=flag)"),
            (Strings{"cache", "Cache", "x", "flag"}));
  // A method call reads its object.
  EXPECT_EQ(ExtractReferences("cache.get_seq_length() if cache is not None else 0"), (Strings{"cache"}));
  EXPECT_EQ(ExtractReferences("\"use_cache\" in text  # use_cache"), (Strings{"text"}));
}

TEST(PythonExpr, Statements) {
  PyStatement s = ParseStatement("    if use_cache and past is None:  # why");
  EXPECT_EQ(s.kind, StatementKind::kIf);
  EXPECT_EQ(s.condition, "use_cache and past is None");
  EXPECT_EQ(s.reads, (Strings{"use_cache", "past"}));
  EXPECT_TRUE(s.short_circuit);

  s = ParseStatement("elif self.config.fast:");
  EXPECT_EQ(s.kind, StatementKind::kElif);
  EXPECT_EQ(s.reads, (Strings{"self.config.fast"}));

  s = ParseStatement("use_cache = kwargs.pop(\"use_cache\", self.default)");
  EXPECT_EQ(s.kind, StatementKind::kAssign);
  EXPECT_EQ(s.targets, (Strings{"use_cache"}));
  EXPECT_EQ(s.reads, (Strings{"kwargs[\"use_cache\"]", "self.default"}));

  s = ParseStatement("a, (b, self.c) = pair");
  EXPECT_EQ(s.targets, (Strings{"a", "b", "self.c"}));
  EXPECT_EQ(s.reads, (Strings{"pair"}));

  s = ParseStatement("n: int = m + 1");
  EXPECT_EQ(s.targets, (Strings{"n"}));
  EXPECT_EQ(s.reads, (Strings{"m"}));

  s = ParseStatement("total += step * scale");
  EXPECT_TRUE(s.augmented);
  EXPECT_EQ(s.targets, (Strings{"total"}));
  EXPECT_EQ(s.reads, (Strings{"total", "step", "scale"}));

  s = ParseStatement("x = a if flag else b");
  EXPECT_TRUE(s.short_circuit);
  EXPECT_EQ(s.reads, (Strings{"a", "flag", "b"}));

  s = ParseStatement("for i, layer in enumerate(self.layers):");
  EXPECT_EQ(s.kind, StatementKind::kFor);
  EXPECT_EQ(s.targets, (Strings{"i", "layer"}));
  EXPECT_EQ(s.reads, (Strings{"self.layers"}));

  s = ParseStatement("y = f(x == 1, key=value)");  // '==' and keyword '=' are not assignments
  EXPECT_EQ(s.targets, (Strings{"y"}));
  EXPECT_EQ(s.reads, (Strings{"x", "value"}));
}

const Strings kSource = {
    "import os",                                              // 1
    "FAST = os.environ.get(\"MY_FAST_PATH\", \"0\") == \"1\"",  // 2
    "",                                                       // 3
    "class Model:",                                           // 4
    "    def forward(self, x, use_cache=None,",               // 5
    "                **kwargs):",                             // 6
    "        \"\"\"Docstring with if inside.",                // 7
    "        if x: ...\"\"\"",                                // 8
    "        cache = kwargs.pop(\"cache\", None)",            // 9
    "        flag = use_cache if use_cache is not None else self.config.use_cache",  // 10
    "        if flag and \\",                                 // 11
    "                cache is None:",                         // 12
    "            cache = make(",                              // 13
    "                x)",                                     // 14
    "        y = x + 1",                                      // 15
    "        return y",                                       // 16
    "",                                                       // 17
    "def work(x):",                                           // 18
    "    fast = FAST",                                        // 19
    "    if fast:",                                           // 20
    "        return x",                                       // 21
    "    return x * 2",                                       // 22
};

TEST(PythonFunction, ExtentParamsAndStatements) {
  auto fn = ParsePyFunction(kSource, 1, 15, "Model.forward");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ(fn->def_line, 5);
  EXPECT_EQ(fn->end_line, 16);
  EXPECT_EQ(fn->params, (Strings{"self", "x", "use_cache", "kwargs"}));
  EXPECT_EQ(fn->var_keyword, "kwargs");
  EXPECT_EQ(fn->var_positional, "");
  ASSERT_NE(fn->StatementAt(12), nullptr);
  EXPECT_EQ(fn->StatementAt(12)->first_line, 11);
  EXPECT_EQ(fn->StatementAt(12)->kind, StatementKind::kIf);
  EXPECT_EQ(fn->StatementAt(14)->targets, (Strings{"cache"}));
  // The docstring is one statement, not an `if`.
  EXPECT_NE(fn->StatementAt(8)->kind, StatementKind::kIf);
  auto work = ParsePyFunction(kSource, 1, 21, "work");
  ASSERT_TRUE(work.ok());
  EXPECT_EQ(work->def_line, 18);
  EXPECT_EQ(work->end_line, 22);
  EXPECT_FALSE(ParsePyFunction(kSource, 1, 21, "forward").ok());  // line 21 is not inside forward
  EXPECT_EQ(FindModuleAssignment(kSource, "FAST"), 2);
  // Parameters are watched where the body starts (after the docstring).
  auto watch = WatchList(*fn);
  ASSERT_TRUE(watch.count(9));
  EXPECT_NE(std::find(watch[9].begin(), watch[9].end(), "use_cache"), watch[9].end());
}

LineCall Call(std::vector<int64_t> lines, std::vector<WatchedValue> values = {}) {
  return LineCall{0, std::move(lines), std::move(values)};
}

TEST(LineAlign, FirstDifferenceAcrossCalls) {
  LineCall a0 = Call({9, 10, 11, 15, 16}), a1 = Call({9, 10, 11, 15, 16});
  LineCall b0 = Call({9, 10, 11, 15, 16}), b1 = Call({9, 10, 11, 13, 15, 16});
  LineDivergence d = FirstDifferingLine({&a0, &a1}, {&b0, &b1});
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.call, 1u);
  EXPECT_EQ(d.event, 3u);
  EXPECT_EQ(d.line_a, 15);
  EXPECT_EQ(d.line_b, 13);
  EXPECT_EQ(d.branch_line, 11);
  // One side returned early.
  LineCall c = Call({9, 10});
  d = FirstDifferingLine({&c}, {&a0});
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.line_a, -1);
  EXPECT_EQ(d.line_b, 11);
  // Same lines in every call both ran.
  EXPECT_FALSE(FirstDifferingLine({&a0}, {&a0, &a1}).found);
}

PyFunction Forward() {
  auto fn = ParsePyFunction(kSource, 1, 15, "Model.forward");
  EXPECT_TRUE(fn.ok());
  fn->file = "/src/model.py";
  return *fn;
}

TEST(LineFlow, BranchVariableTracedToArgument) {
  // A: use_cache=False; B: use_cache=True. Both run 9, 10, 11 and B enters the branch.
  LineTrace a, b;
  a.calls.push_back(Call({9, 10, 11, 15, 16}, {{0, "use_cache", "False"},
                                                {1, "use_cache", "False"},
                                                {1, "self.config.use_cache", "True"},
                                                {2, "flag", "False"},
                                                {2, "cache", "None"}}));
  b.calls.push_back(Call({9, 10, 11, 13, 15, 16}, {{0, "use_cache", "True"},
                                                    {1, "use_cache", "True"},
                                                    {1, "self.config.use_cache", "True"},
                                                    {2, "flag", "True"},
                                                    {2, "cache", "None"}}));
  LineDiagnosis d = AnalyzeLineTraces(Forward(), a, b);
  ASSERT_TRUE(d.found) << d.note;
  EXPECT_EQ(d.divergence.branch_line, 11);
  EXPECT_EQ(d.divergence.line_a, 15);
  EXPECT_EQ(d.divergence.line_b, 13);
  EXPECT_EQ(d.condition, "flag and cache is None");
  EXPECT_EQ(d.key_variables, (Strings{"flag"}));
  ASSERT_GE(d.chain.size(), 2u);
  EXPECT_EQ(d.chain[1].how, "assigned");
  EXPECT_EQ(d.chain[1].line, 10);
  EXPECT_EQ(d.origin.kind, OriginKind::kArgument);
  EXPECT_EQ(d.origin.name, "use_cache");
  EXPECT_EQ(d.origin.line, 5);  // the def: passed in or defaulted there
  EXPECT_EQ(d.origin.value_a, "False");
  EXPECT_EQ(d.origin.value_b, "True");

  std::vector<ConfigDifference> diffs = {{"call.generate.use_cache", "False", "True", "call_arg"},
                                         {"model_config.GPT2.n_layer", "2", "4", "model_config"}};
  ConfigDifference mapped;
  ASSERT_TRUE(MapOriginToConfig(d.origin, diffs, &mapped));
  EXPECT_EQ(mapped.key, "call.generate.use_cache");

  // The config field when the argument is None on both sides.
  for (auto* t : {&a, &b}) {
    for (auto& v : t->calls[0].values) {
      if (v.expr == "use_cache") v.value = "None";
    }
  }
  a.calls[0].values.push_back({1, "self.config.use_cache", "False"});
  a.calls[0].values.erase(a.calls[0].values.begin() + 2);  // drop A's first config value
  d = AnalyzeLineTraces(Forward(), a, b);
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.origin.kind, OriginKind::kConfigField);
  EXPECT_EQ(d.origin.name, "self.config.use_cache");
  EXPECT_EQ(d.origin.value_a, "False");
  EXPECT_EQ(d.origin.value_b, "True");
}

TEST(LineFlow, ModuleFlagReadFromTheEnvironment) {
  const std::string dir = testing::TempDir();
  const std::string file = dir + "/work_fixture.py";
  {
    std::ofstream out(file);
    for (const auto& l : kSource) out << l << "\n";
  }
  SourceRoots roots;
  EXPECT_FALSE(ReadPyFunction(roots, file, 21, "work").ok());  // no root: not the recorded program's file
  roots.Add(dir);
  auto fn = ReadPyFunction(roots, file, 21, "work");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  LineTrace a, b;
  a.calls.push_back(Call({19, 20, 22}, {{0, "FAST", "False"}, {1, "fast", "False"}}));
  b.calls.push_back(Call({19, 20, 21}, {{0, "FAST", "True"}, {1, "fast", "True"}}));
  LineDiagnosis d = AnalyzeLineTraces(*fn, a, b);
  ASSERT_TRUE(d.found) << d.note;
  EXPECT_EQ(d.divergence.branch_line, 20);
  EXPECT_EQ(d.key_variables, (Strings{"fast"}));
  EXPECT_EQ(d.origin.kind, OriginKind::kEnvVar);
  EXPECT_EQ(d.origin.name, "MY_FAST_PATH");
  EXPECT_EQ(d.origin.line, 2);
  ConfigDifference mapped;
  ASSERT_TRUE(MapOriginToConfig(d.origin, {}, &mapped));
  EXPECT_EQ(mapped.key, "env.MY_FAST_PATH");
  EXPECT_EQ(mapped.source, "env");
}

TEST(LineFlow, SameLinesDifferentValuesThroughALoop) {
  // generate's decode loop: the lines are the same on both sides; what
  // differs is the input shape at the deviation line, decided by a ternary on
  // an option carried in **kw and rewritten every step.
  const Strings src = {
      "def step(self, ids, **kw):",                   // 1
      "    for i in range(3):",                         // 2
      "        n = 1 if kw[\"use_cache\"] else None",   // 3
      "        inputs = prep(ids, n=n)",                // 4
      "        out = run(inputs)",                      // 5
      "        kw = update(out, kw)",                   // 6
      "    return out",                                 // 7
  };
  auto fn = ParsePyFunction(src, 1, 5, "Loop.step");
  ASSERT_TRUE(fn.ok()) << fn.status().message();
  EXPECT_EQ(fn->var_keyword, "kw");
  const std::vector<int64_t> lines = {2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7};
  auto values = [](const char* flag, const char* n, const char* shape) {
    std::vector<WatchedValue> v = {{1, "kw", "<dict>"}, {1, "kw[\"use_cache\"]", flag}, {2, "ids", "<T (1, 8)>"},
                                   {2, "n", "None"},    {3, "inputs", "<dict>"},           {4, "out", "<O>"},
                                   {4, "kw", "<dict>"}, {4, "kw[\"use_cache\"]", flag},   {6, "kw", "<dict>"},
                                   {6, "kw[\"use_cache\"]", flag}, {7, "ids", "<T (1, 8)>"}, {7, "n", n},
                                   {8, "inputs", shape}};
    return v;
  };
  LineTrace a, b;
  a.calls.push_back(Call(lines, values("False", "None", "(1, 9)")));
  b.calls.push_back(Call(lines, values("True", "1", "(1, 1)")));
  LineDiagnosis d = AnalyzeLineTraces(*fn, a, b, /*focus_line=*/5);
  ASSERT_TRUE(d.found) << d.note;
  EXPECT_EQ(d.mode, "values");
  EXPECT_EQ(d.divergence.line_a, 5);
  EXPECT_EQ(d.divergence.event, 8u);
  EXPECT_EQ(d.key_variables, (Strings{"inputs"}));
  std::vector<int64_t> steps;
  for (const FlowStep& s : d.chain) steps.push_back(s.line);
  EXPECT_EQ(steps, (std::vector<int64_t>{5, 4, 3, 6}));  // the loop's rewrite appears once
  EXPECT_EQ(d.origin.kind, OriginKind::kArgument);
  EXPECT_EQ(d.origin.name, "use_cache");
  EXPECT_EQ(d.origin.line, 1);
  EXPECT_EQ(d.origin.value_a, "False");
  EXPECT_EQ(d.origin.value_b, "True");
}

TEST(LineFlow, CallPathFollowsAnArgumentToTheCallerThatBranched) {
  const Strings src = {
      "def inner(self, x):",                  // 1
      "    return self.proj(x)",              // 2
      "def wrapper(*args, **kwargs):",        // 3
      "    return inner(*args, **kwargs)",    // 4
      "def outer(self, ids, use_cache=None):",  // 5
      "    if use_cache:",                    // 6
      "        ids = ids[:, -1:]",            // 7
      "    return wrapper(self, ids)",        // 8
  };
  auto inner = ParsePyFunction(src, 1, 2, "inner");
  auto wrapper = ParsePyFunction(src, 1, 4, "wrapper");
  auto outer = ParsePyFunction(src, 1, 8, "Model.outer");
  ASSERT_TRUE(inner.ok() && wrapper.ok() && outer.ok());
  EXPECT_EQ(wrapper->var_positional, "args");
  std::vector<TracedFrame> frames = {{*inner, 2, 0}, {*wrapper, 4, 1}, {*outer, 8, 2}};
  LineTrace a, b;
  auto side = [](LineTrace* t, const char* shape, const char* flag, std::vector<int64_t> outer_lines) {
    t->calls.push_back({2, std::move(outer_lines), {{0, "use_cache", flag}, {0, "ids", shape}}});
    t->calls.push_back({1, {4}, {{0, "args", "<tuple>"}, {0, "kwargs", "<dict>"}}});
    t->calls.push_back({0, {2}, {{0, "self", "<M>"}, {0, "x", shape}}});
  };
  side(&a, "<Tensor shape=(1, 9)>", "False", {6, 8});
  side(&b, "<Tensor shape=(1, 1)>", "True", {6, 7, 8});
  std::vector<ConfigDifference> diffs = {{"call.generate.use_cache", "False", "True", "call_arg"}};
  LineDiagnosis d = AnalyzeCallPath(frames, a, b, diffs);
  ASSERT_TRUE(d.found) << d.note;
  EXPECT_EQ(d.frame_distance, 2);  // inner's `x` names no config entry; the wrapper only forwards
  EXPECT_EQ(d.mode, "branch");
  EXPECT_EQ(d.divergence.branch_line, 6);
  EXPECT_EQ(d.origin.kind, OriginKind::kArgument);
  EXPECT_EQ(d.origin.name, "use_cache");
  EXPECT_EQ(d.origin.value_b, "True");
  // Without a config entry to map to, the innermost result stands.
  d = AnalyzeCallPath(frames, a, b, {});
  ASSERT_TRUE(d.found);
  EXPECT_EQ(d.frame_distance, 0);
  EXPECT_EQ(d.origin.name, "x");
}

TEST(LineTraceIo, RoundTrip) {
  LineTrace t;
  t.targets.push_back({"/a.py", "Model.forward", 12});
  t.calls.push_back(Call({1, 2, 3}, {{1, "x", "'<s>'"}}));
  const std::string path = testing::TempDir() + "/lines.json";
  ASSERT_TRUE(WriteLineTrace(path, t).ok());
  auto back = ReadLineTrace(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->calls.size(), 1u);
  EXPECT_EQ(back->calls[0].lines, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(back->calls[0].values[0].value, "'<s>'");
  EXPECT_EQ(back->targets[0].function, "Model.forward");
  EXPECT_FALSE(ReadLineTrace(path + ".missing").ok());
}

}  // namespace
}  // namespace magneton::diagnose
