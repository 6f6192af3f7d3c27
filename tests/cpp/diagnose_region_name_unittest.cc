// Region names (issue 16): the deepest module scope a region's ops share,
// indices collapsed over its occurrences; else the user's line and the
// library function it called; else the first op. Each rule with the case
// that must fall through to the next.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"
#include "diagnose/region_name.h"

namespace magneton::diagnose {
namespace {

class Builder {
 public:
  int64_t Str(const std::string& s) {
    for (size_t i = 0; i < t.strings.size(); ++i) {
      if (t.strings[i] == s) return static_cast<int64_t>(i);
    }
    t.strings.push_back(s);
    return static_cast<int64_t>(t.strings.size() - 1);
  }
  int64_t Scope(const std::string& name, const std::string& type, int64_t parent) {
    magneton::Scope s;
    s.id = static_cast<int64_t>(t.scopes.size());
    s.name_id = Str(name);
    s.type_id = Str(type);
    s.parent_id = parent;
    t.scopes.push_back(s);
    return s.id;
  }
  // Frames "file:line:function", outermost first.
  int64_t Path(const std::vector<std::string>& frames) {
    int64_t parent = kNoId;
    for (const std::string& text : frames) {
      const FrameRef f = ParseFrame(text);
      Frame fr;
      fr.id = static_cast<int64_t>(t.frames.size());
      fr.file_id = Str(f.file);
      fr.line = f.line;
      fr.function_id = Str(f.function);
      t.frames.push_back(fr);
      CallPath p;
      p.id = static_cast<int64_t>(t.call_paths.size());
      p.frame_id = fr.id;
      p.parent_id = parent;
      t.call_paths.push_back(p);
      parent = p.id;
    }
    return parent;
  }
  int64_t Op(const std::string& name, int64_t scope = kNoId, int64_t path = kNoId) {
    OpEvent op;
    op.id = static_cast<int64_t>(t.ops.size());
    op.name_id = Str(name);
    op.scope_id = scope;
    op.call_path_id = path;
    t.ops.push_back(op);
    return op.id;
  }
  Trace t;
};

// GPT2LMHeadModel / transformer / h.{0..3} / attn, the shape of an HF model's scope tree.
struct Model {
  explicit Model(Builder& b) {
    root = b.Scope("GPT2LMHeadModel", "GPT2LMHeadModel", kNoId);
    transformer = b.Scope("transformer", "GPT2Model", root);
    for (int i = 0; i < 4; ++i) {
      block[i] = b.Scope("h." + std::to_string(i), "GPT2Block", transformer);
      attn[i] = b.Scope("attn", "GPT2Attention", block[i]);
      mlp[i] = b.Scope("mlp", "GPT2MLP", block[i]);
    }
  }
  int64_t root, transformer, block[4], attn[4], mlp[4];
};

detect::Finding Matched(const std::vector<std::vector<int64_t>>& instances_a,
                        const std::vector<std::vector<int64_t>>& instances_b) {
  detect::Finding f;
  f.kind = detect::RegionKind::kMatched;
  f.wasteful_side = 'A';
  for (size_t i = 0; i < instances_a.size(); ++i) {
    detect::RegionInstance in;
    in.ops_a = instances_a[i];
    in.ops_b = i < instances_b.size() ? instances_b[i] : std::vector<int64_t>{};
    f.instances.push_back(in);
  }
  f.names_a = {"aten::linear", "aten::softmax"};
  f.names_b = f.names_a;
  return f;
}

TEST(RegionName, RepeatedLayersCollapseToAnIndexRange) {
  Builder b;
  Model m(b);
  std::vector<std::vector<int64_t>> inst;
  for (int i = 0; i < 4; ++i) inst.push_back({b.Op("aten::linear", m.attn[i]), b.Op("aten::softmax", m.attn[i])});
  const RegionName name = NameRegion(b.t, b.t, Matched(inst, inst));
  EXPECT_EQ(name.text, "transformer.h.{0..3}.attn (GPT2Attention)");
  EXPECT_EQ(name.basis, "module_scope");
}

TEST(RegionName, GappedIndicesAreListed) {
  Builder b;
  Model m(b);
  std::vector<std::vector<int64_t>> inst = {{b.Op("aten::linear", m.mlp[0])}, {b.Op("aten::linear", m.mlp[2])},
                                            {b.Op("aten::linear", m.mlp[3])}};
  EXPECT_EQ(NameRegion(b.t, b.t, Matched(inst, inst)).text, "transformer.h.{0,2,3}.mlp (GPT2MLP)");
}

TEST(RegionName, OpsOfTwoModulesAreNamedByTheModuleThatHoldsBoth) {
  Builder b;
  Model m(b);
  const std::vector<std::vector<int64_t>> inst = {{b.Op("aten::linear", m.attn[1]), b.Op("aten::gelu", m.mlp[1])}};
  EXPECT_EQ(NameRegion(b.t, b.t, Matched(inst, inst)).text, "transformer.h.1 (GPT2Block)");
}

TEST(RegionName, TheWholeModelIsSaidSo) {
  Builder b;
  Model m(b);
  const std::vector<std::vector<int64_t>> inst = {{b.Op("aten::embedding", m.transformer), b.Op("aten::linear", m.root)}};
  EXPECT_EQ(NameRegion(b.t, b.t, Matched(inst, inst)).text, "GPT2LMHeadModel (whole model)");
}

TEST(RegionName, TheLineThatCalledTheWholeModelNamesIt) {
  Builder b;
  Model m(b);
  const int64_t path = b.Path({"/home/u/train.py:40:step", "/py/site-packages/torch/nn/modules/module.py:1:_call_impl"});
  const std::vector<std::vector<int64_t>> inst = {{b.Op("aten::embedding", m.transformer, path),
                                                   b.Op("aten::linear", m.root, path)}};
  const RegionName name = NameRegion(b.t, b.t, Matched(inst, inst));
  EXPECT_EQ(name.basis, "source_line");
  EXPECT_EQ(name.text, "/home/u/train.py:40 → _call_impl in GPT2LMHeadModel (whole model)");
}

TEST(RegionName, ScopesWeighByTimeNotByCount) {
  Builder b;
  Model m(b);
  // One long op in attn, four short unscoped ops: 90% of the time is attn's.
  std::vector<int64_t> ops = {b.Op("aten::bmm", m.attn[0])};
  b.t.ops.back().end_ns = 900;
  for (int i = 0; i < 4; ++i) {
    ops.push_back(b.Op("aten::argmax"));
    b.t.ops.back().end_ns = 25;
  }
  EXPECT_EQ(NameRegion(b.t, b.t, Matched({ops}, {ops})).text, "transformer.h.0.attn (GPT2Attention)");
}

TEST(RegionName, MostlyUnscopedOpsFallBackToTheUsersLine) {
  Builder b;
  Model m(b);
  const int64_t path = b.Path({"/home/u/gen.py:13:<module>", "/py/site-packages/transformers/generation/utils.py:3008:"
                                                             "GenerationMixin.generate"});
  // One op in a module, four issued by generate itself: no scope holds 80% of them.
  std::vector<int64_t> ops = {b.Op("aten::linear", m.attn[0], path)};
  for (int i = 0; i < 4; ++i) ops.push_back(b.Op("aten::argmax", kNoId, path));
  const RegionName name = NameRegion(b.t, b.t, Matched({ops}, {ops}));
  EXPECT_EQ(name.basis, "source_line");
  EXPECT_EQ(name.text, "/home/u/gen.py:13 → GenerationMixin.generate");
}

TEST(RegionName, WithoutScopesOrUserFramesTheFirstOpNamesIt) {
  Builder b;
  const std::vector<std::vector<int64_t>> inst = {{b.Op("aten::linear"), b.Op("aten::softmax")}};
  const RegionName name = NameRegion(b.t, b.t, Matched(inst, inst));
  EXPECT_EQ(name.basis, "ops");
  EXPECT_EQ(name.text, "aten::linear …");
}

TEST(RegionName, SetUpIsNamedAsSuchThenByTheLineThatBuiltIt) {
  Builder b;
  const int64_t path = b.Path({"/home/u/gen.py:9:<module>", "/py/site-packages/torch/nn/parameter.py:40:"
                                                            "Parameter.__new__"});
  std::vector<int64_t> ops;
  for (int i = 0; i < 3; ++i) ops.push_back(b.Op("aten::normal_", kNoId, path));
  detect::Finding f = Matched({ops}, {ops});
  f.setup = true;
  const RegionName name = NameRegion(b.t, b.t, f);
  EXPECT_EQ(name.basis, "source_line");
  EXPECT_EQ(name.text, "set-up: /home/u/gen.py:9 → Parameter.__new__");
  f.setup = false;
  EXPECT_EQ(NameRegion(b.t, b.t, f).text, "/home/u/gen.py:9 → Parameter.__new__");
}

TEST(RegionName, TheCostlierSideNamesTheRegion) {
  Builder a, b;
  Model ma(a), mb(b);
  detect::Finding f = Matched({{a.Op("aten::linear", ma.attn[2])}}, {{b.Op("aten::linear", mb.mlp[2])}});
  EXPECT_EQ(NameRegion(a.t, b.t, f).text, "transformer.h.2.attn (GPT2Attention)");
  f.wasteful_side = 'B';
  EXPECT_EQ(NameRegion(a.t, b.t, f).text, "transformer.h.2.mlp (GPT2MLP)");
}

TEST(TopParts, GroupsByScopeThenUserLineThenOpNameByTime) {
  Builder b;
  Model m(b);
  const int64_t user = b.Path({"/home/u/gen.py:13:<module>"});
  const int64_t lib = b.Path({"/py/site-packages/transformers/masking_utils.py:757:find_packed_sequence_indices"});
  std::vector<int64_t> ops;
  auto add = [&](const char* name, int64_t scope, int64_t path, int64_t ns) {
    ops.push_back(b.Op(name, scope, path));
    b.t.ops.back().end_ns = ns;
  };
  add("aten::bmm", m.attn[1], kNoId, 500);
  add("aten::softmax", m.attn[1], kNoId, 300);
  add("aten::cumsum", kNoId, user, 200);
  add("aten::diff", kNoId, lib, 50);
  const std::vector<RegionPart> parts = TopParts(b.t, ops, 2);
  ASSERT_EQ(parts.size(), 2u);  // the 50 ns library-only op is past the limit
  EXPECT_EQ(parts[0].name, "transformer.h.1.attn (GPT2Attention)");
  EXPECT_EQ(parts[0].ops, 2u);
  EXPECT_EQ(parts[0].time_ns, 800);
  EXPECT_EQ(parts[1].name, "/home/u/gen.py:13");
  EXPECT_EQ(TopParts(b.t, ops, 5).back().name, "aten::diff");  // no scope, no user line: the op's name
}

TEST(ShortPath, InstalledPackagesFromThePackageDown) {
  EXPECT_EQ(ShortPath("/usr/lib/python3/site-packages/transformers/models/gpt2/modeling_gpt2.py:272"),
            "transformers/models/gpt2/modeling_gpt2.py:272");
  EXPECT_EQ(ShortPath("/elsewhere/x.py:3"), "/elsewhere/x.py:3");
  EXPECT_EQ(ShortPathsIn("read at /a/site-packages/torch/nn/f.py:9 (/b/dist-packages/jax/x.py:1:f); end"),
            "read at torch/nn/f.py:9 (jax/x.py:1:f); end");
}

}  // namespace
}  // namespace magneton::diagnose
