// Root-cause selection (issue 13): each branch of ChooseRootCause on traces
// built in memory and run through Diagnose, each with its negative twin: a
// state that differs outside the region is not the cause, equal nested ops
// are no kernel contrast, the same dtype is no dtype contrast, larger inputs
// of different ops are no data_shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "diagnose/diagnose.h"
#include "test_util.h"

namespace magneton::diagnose {
namespace {

constexpr const char* kLib = "/py/site-packages";

// A trace built op by op: tensors, call paths, runtime states and setters.
class Builder {
 public:
  int64_t Str(const std::string& s) {
    for (size_t i = 0; i < t.strings.size(); ++i) {
      if (t.strings[i] == s) return static_cast<int64_t>(i);
    }
    t.strings.push_back(s);
    return static_cast<int64_t>(t.strings.size() - 1);
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
  int64_t Tensor(std::vector<int64_t> shape, const std::string& dtype = "float32", std::vector<int64_t> strides = {}) {
    TensorMeta m;
    m.id = static_cast<int64_t>(t.tensors.size());
    if (strides.empty()) {
      strides.assign(shape.size(), 1);
      for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
    }
    m.shape = std::move(shape);
    m.strides = std::move(strides);
    m.dtype = dtype;
    m.device = "cpu";
    m.storage_addr = 0x1000 * (m.id + 1);
    t.tensors.push_back(m);
    return m.id;
  }
  int64_t State(std::map<std::string, std::string> values) {
    RuntimeState s;
    s.id = static_cast<int64_t>(t.runtime_states.size());
    s.values = std::move(values);
    t.runtime_states.push_back(s);
    return s.id;
  }
  struct OpArgs {
    std::vector<int64_t> ins, outs;
    int64_t path = kNoId;
    int64_t parent = kNoId;
    int64_t state = kNoId;
    int64_t start_ns = -1, end_ns = -1;  // -1: after the previous op, 1000 ns long
    int64_t scope = kNoId;
  };
  // A module scope; init_*: how its module was constructed (Scope::init_*).
  int64_t Scope(const std::string& name, const std::string& type, int64_t parent = kNoId,
                int64_t init_path = kNoId, const std::string& init_args = "") {
    magneton::Scope s;
    s.id = static_cast<int64_t>(t.scopes.size());
    s.name_id = Str(name);
    s.type_id = Str(type);
    s.parent_id = parent;
    s.init_call_path_id = init_path;
    s.init_args = init_args;
    t.scopes.push_back(s);
    return s.id;
  }
  int64_t Op(const std::string& name, OpArgs a) {
    OpEvent op;
    op.id = static_cast<int64_t>(t.ops.size());
    op.name_id = Str(name);
    op.thread_id = 1;
    op.start_ns = a.start_ns >= 0 ? a.start_ns : next_ns_;
    op.end_ns = a.end_ns >= 0 ? a.end_ns : op.start_ns + 1000;
    next_ns_ = std::max(next_ns_, op.end_ns + 10);
    op.parent_id = a.parent;
    op.call_path_id = a.path;
    op.state_id = a.state;
    op.scope_id = a.scope;
    t.ops.push_back(op);
    for (size_t i = 0; i < a.ins.size(); ++i) t.op_tensors.push_back({op.id, TensorRole::kInput, int32_t(i), a.ins[i]});
    for (size_t i = 0; i < a.outs.size(); ++i) {
      t.op_tensors.push_back({op.id, TensorRole::kOutput, int32_t(i), a.outs[i]});
      if (t.tensors[a.outs[i]].producer_op_id == kNoId) t.tensors[a.outs[i]].producer_op_id = op.id;
    }
    return op.id;
  }
  Trace t;

 private:
  int64_t next_ns_ = 1000;
};

detect::DetectResult OneWaste(std::vector<int64_t> ops_a, std::vector<int64_t> ops_b, const Trace& a, const Trace& b) {
  detect::Finding f;
  f.verdict = detect::Verdict::kWaste;
  f.wasteful_side = 'A';
  f.saving_uj = 1000;
  f.share_of_total = 0.5;
  detect::RegionInstance inst;
  inst.ops_a = ops_a;
  inst.ops_b = ops_b;
  f.instances.push_back(inst);
  for (int64_t id : ops_a) f.names_a.push_back(a.str(a.ops[id].name_id));
  for (int64_t id : ops_b) f.names_b.push_back(b.str(b.ops[id].name_id));
  detect::DetectResult r;
  r.findings.push_back(f);
  return r;
}

Diagnosis DiagnoseOne(const Trace& a, const Trace& b, const detect::DetectResult& r) {
  std::vector<Diagnosis> ds = Diagnose(a, b, r);
  EXPECT_EQ(ds.size(), 1u);
  return ds.empty() ? Diagnosis{} : ds.front();
}

// ---- constructor arguments ----

// DDP on both sides; A constructs it with find_unused_parameters=True at
// train.py:17, so every forward runs the reducer's search (issued from DDP's
// own code: no op's call path passes line 17). `same_args`: both sides
// construct it alike (the negative twin); `other_class`: B's module at that
// scope path is another class.
struct DdpPair {
  Trace a, b;
  std::vector<int64_t> ra, rb;
};
DdpPair FindUnusedPair(bool same_args, bool other_class = false) {
  DdpPair p;
  for (int side = 0; side < 2; ++side) {
    const bool a = side == 0;
    Builder bld;
    const int64_t made = bld.Path({"/src/train.py:30:<module>", "/src/train.py:17:main"});
    const bool find_unused = a && !same_args;
    const std::string args = std::string(R"({"module":{"unrecorded":"Sequential"},"device_ids":null,)") +
                             R"("find_unused_parameters":)" + (find_unused ? "true" : "false") + "}";
    const int64_t ddp = bld.Scope("DistributedDataParallel",
                                  !a && other_class ? "FullyShardedDataParallel" : "DistributedDataParallel",
                                  kNoId, made, args);
    const int64_t inner = bld.Scope("module", "Sequential", ddp, made, R"({"*args":[{"unrecorded":"Linear"}]})");
    const std::string lib = std::string(kLib) + "/torch/nn/parallel/distributed.py";
    const int64_t fwd = bld.Path({"/src/train.py:30:<module>", "/src/train.py:22:main", lib + ":1600:forward"});
    const int64_t x = bld.Tensor({8, 16}), w = bld.Tensor({32, 16}), y = bld.Tensor({8, 32});
    bld.Op("aten::linear", {.ins = {x, w}, .outs = {y}, .path = fwd, .scope = inner});
    std::vector<int64_t> region;
    if (find_unused || (a && same_args)) {
      region.push_back(bld.Op("torch.distributed.ddp.reducer::search_unused_parameters",
                              {.path = fwd, .start_ns = 100000, .end_ns = 200000, .scope = ddp}));
    }
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

TEST(DiagnoseRootCause, AnArgumentOfTheModuleTheRegionRanInIsTheCause) {
  DdpPair p = FindUnusedPair(/*same_args=*/false);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  ASSERT_EQ(d.constructor_args.size(), 1u);
  EXPECT_EQ(d.constructor_args[0].callee, "DistributedDataParallel");
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCallArg);
  EXPECT_EQ(d.root_cause.name, "DistributedDataParallel.find_unused_parameters");
  EXPECT_EQ(d.root_cause.value_a, "True");
  EXPECT_EQ(d.root_cause.value_b, "False");
  EXPECT_EQ(d.root_cause.where, "/src/train.py:17");  // the constructor's line, not the forward's
  EXPECT_NE(d.sentence.find("find_unused_parameters"), std::string::npos) << d.sentence;
}

TEST(DiagnoseRootCause, ModulesConstructedAlikeAreNoArgumentDifference) {
  DdpPair p = FindUnusedPair(/*same_args=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_TRUE(d.constructor_args.empty());
  EXPECT_NE(d.root_cause.kind, RootCauseKind::kCallArg);
}

TEST(DiagnoseRootCause, AModuleOfAnotherClassAtTheSamePathIsNotCompared) {
  DdpPair p = FindUnusedPair(/*same_args=*/false, /*other_class=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_TRUE(d.constructor_args.empty());
}

// ---- runtime state ----

// Three aten::mm on each side under a thread-count state; A sets 1 thread at
// a.py:5, B runs with 4. Both snapshots also differ in OMP_NUM_THREADS (a
// start-up entry). `region_state_differs` false: the region's ops run under
// the same state; only a later op outside the region differs.
struct StatePair {
  Trace a, b;
  std::vector<int64_t> ra, rb;
};
StatePair ThreadsPair(bool region_state_differs) {
  StatePair p;
  for (int side = 0; side < 2; ++side) {
    Builder bld;
    const int64_t path = bld.Path({"/src/a.py:20:main"});
    const int64_t same = bld.State({{"torch.num_threads", "4"}, {"torch.grad_enabled", "True"}});
    const int64_t one = bld.State({{"torch.num_threads", "1"}, {"torch.grad_enabled", "True"}});
    const bool a = side == 0;
    const int64_t region_state = a && region_state_differs ? one : same;
    if (a) bld.t.state_setters.push_back({"torch.num_threads", "1", "/src/a.py:5:main", 0, 1});
    std::vector<int64_t> region;
    for (int i = 0; i < 3; ++i) {
      const int64_t x = bld.Tensor({64, 64}), y = bld.Tensor({64, 64});
      region.push_back(bld.Op("aten::mm", {.ins = {x, x}, .outs = {y}, .path = path, .state = region_state}));
    }
    // An op after the region: on A it runs under one thread when the region does not.
    const int64_t z = bld.Tensor({4});
    bld.Op("aten::sum", {.ins = {z}, .outs = {bld.Tensor({1})}, .path = path,
                         .state = a && !region_state_differs ? one : same});
    bld.t.config = {{"env.OMP_NUM_THREADS", a ? "1" : "4", "env"}};
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

TEST(DiagnoseRootCause, RuntimeStateInEffectForTheRegionRanksAboveTheSnapshot) {
  StatePair p = ThreadsPair(/*region_state_differs=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  ASSERT_EQ(d.states.size(), 1u);
  EXPECT_EQ(d.states[0].key, "torch.num_threads");
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kRuntimeState);
  EXPECT_EQ(d.root_cause.name, "torch.num_threads");
  EXPECT_EQ(d.root_cause.value_a, "1");
  EXPECT_EQ(d.root_cause.value_b, "4");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:5");  // the setter's call site: the line to change
  EXPECT_NE(d.sentence.find("Root cause (runtime_state)"), std::string::npos) << d.sentence;
}

TEST(DiagnoseRootCause, StateThatDiffersOutsideTheRegionIsNotTheCause) {
  StatePair p = ThreadsPair(/*region_state_differs=*/false);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_TRUE(d.states.empty());
  EXPECT_NE(d.root_cause.kind, RootCauseKind::kRuntimeState);
  // What is left is the snapshot's setting that reaches every op.
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kEnvVar);
  EXPECT_EQ(d.root_cause.name, "env.OMP_NUM_THREADS");
}

TEST(DiagnoseRootCause, StatesOfAFrameworkOnlyOneSideRecordedAreNotDifferences) {
  Builder ba, bb;
  const int64_t sa = ba.State({{"jax.enable_x64", "False"}});
  const int64_t sb = bb.State({{"torch.num_threads", "4"}});
  const int64_t xa = ba.Tensor({8}), xb = bb.Tensor({8});
  const int64_t oa = ba.Op("aten::mul", {.ins = {xa}, .outs = {ba.Tensor({8})}, .state = sa});
  const int64_t ob = bb.Op("aten::mul", {.ins = {xb}, .outs = {bb.Tensor({8})}, .state = sb});
  EXPECT_TRUE(DiffRuntimeStates(ba.t, {oa}, bb.t, {ob}, 'A').empty());
}

// Extra work on A (a long repeat_interleave made with grad on) beside the same
// three mm on both sides under one state: the states are compared over the
// same work only, so the extra op's state is no difference. Twin: the same
// region with the mm under another state on A is one.
StatePair ExtraWorkPair(bool shared_ops_state_differs) {
  StatePair p;
  for (int side = 0; side < 2; ++side) {
    Builder bld;
    const bool a = side == 0;
    const int64_t no_grad = bld.State({{"torch.grad_enabled", "False"}, {"torch.num_threads", "4"}});
    const int64_t grad = bld.State({{"torch.grad_enabled", "True"}, {"torch.num_threads", "4"}});
    const int64_t one_thread = bld.State({{"torch.grad_enabled", "False"}, {"torch.num_threads", "1"}});
    std::vector<int64_t> region;
    const int64_t x = bld.Tensor({64, 64});
    if (a) region.push_back(bld.Op("aten::repeat_interleave", {.ins = {x}, .outs = {bld.Tensor({64, 64})},
                                                              .state = grad, .start_ns = 1000, .end_ns = 900000}));
    for (int i = 0; i < 3; ++i) {
      region.push_back(bld.Op("aten::mm", {.ins = {x, x}, .outs = {bld.Tensor({64, 64})},
                                           .state = a && shared_ops_state_differs ? one_thread : no_grad}));
    }
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

TEST(DiagnoseRootCause, StateOfExtraWorkIsNoDifference) {
  StatePair p = ExtraWorkPair(/*shared_ops_state_differs=*/false);
  EXPECT_TRUE(DiffRuntimeStates(p.a, p.ra, p.b, p.rb, 'A').empty());
  StatePair q = ExtraWorkPair(/*shared_ops_state_differs=*/true);
  const std::vector<StateDifference> d = DiffRuntimeStates(q.a, q.ra, q.b, q.rb, 'A');
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "torch.num_threads");
}

// ---- kernel contrast ----

struct KernelPair {
  Trace a, b;
  std::vector<int64_t> ra, rb;
};
KernelPair AddmmPair(bool nested_differ, bool state_differs) {
  KernelPair p;
  for (int side = 0; side < 2; ++side) {
    Builder bld;
    const bool a = side == 0;
    const int64_t path = bld.Path({"/src/a.py:9:forward"});
    const int64_t st = bld.State({{"torch.allow_tf32", a && state_differs ? "False" : "True"}});
    std::vector<int64_t> region;
    for (int i = 0; i < 2; ++i) {
      const int64_t x = bld.Tensor({32, 32}), y = bld.Tensor({32, 32});
      const int64_t start = 100000 * (i + 1);
      const int64_t top = bld.Op("aten::addmm", {.ins = {x, x}, .outs = {y}, .path = path, .state = st,
                                                 .start_ns = start, .end_ns = start + 5000});
      if (a || !nested_differ) {
        bld.Op("aten::_addmm_activation", {.parent = top, .state = st, .start_ns = start + 100, .end_ns = start + 4000});
      } else {
        bld.Op("aten::mm", {.parent = top, .state = st, .start_ns = start + 100, .end_ns = start + 2000});
        bld.Op("aten::add_", {.parent = top, .state = st, .start_ns = start + 2100, .end_ns = start + 3000});
      }
      region.push_back(top);
    }
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

// One setter turns three attention backends off on A (sdpa_kernel(MATH));
// B's attention runs the flash kernel. `b_kernel` names B's nested op.
KernelPair AttentionPair(const std::string& b_kernel) {
  KernelPair p;
  for (int side = 0; side < 2; ++side) {
    Builder bld;
    const bool a = side == 0;
    const std::string on = a ? "False" : "True";
    const int64_t st = bld.State({{"torch.backends.cuda.cudnn_sdp_enabled", on},
                                  {"torch.backends.cuda.flash_sdp_enabled", on},
                                  {"torch.backends.cuda.mem_efficient_sdp_enabled", on}});
    std::vector<int64_t> region;
    for (int i = 0; i < 2; ++i) {
      const int64_t q = bld.Tensor({1, 4, 64, 16}), o = bld.Tensor({1, 4, 64, 16});
      const int64_t start = 100000 * (i + 1);
      const int64_t top = bld.Op("aten::scaled_dot_product_attention",
                                 {.ins = {q, q, q}, .outs = {o}, .state = st, .start_ns = start, .end_ns = start + 9000});
      if (a) {
        bld.Op("aten::matmul", {.parent = top, .state = st, .start_ns = start + 100, .end_ns = start + 3000});
        bld.Op("aten::_softmax", {.parent = top, .state = st, .start_ns = start + 3100, .end_ns = start + 6000});
      } else {
        bld.Op(b_kernel, {.parent = top, .state = st, .start_ns = start + 100, .end_ns = start + 3000});
      }
      region.push_back(top);
    }
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

TEST(DiagnoseRootCause, OfKeysOneSetterChangedTheOneNamingTheKernelIsTheCause) {
  KernelPair p = AttentionPair("aten::_scaled_dot_product_flash_attention_for_cpu");
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  ASSERT_EQ(d.states.size(), 3u);
  ASSERT_TRUE(d.kernel.found);
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kRuntimeState);
  EXPECT_EQ(d.root_cause.name, "torch.backends.cuda.flash_sdp_enabled");
  // Twin: a nested kernel no key names leaves the first differing key.
  KernelPair q = AttentionPair("aten::_fused_attention_kernel");
  Diagnosis e = DiagnoseOne(q.a, q.b, OneWaste(q.ra, q.rb, q.a, q.b));
  EXPECT_EQ(e.root_cause.kind, RootCauseKind::kRuntimeState);
  EXPECT_EQ(e.root_cause.name, e.states.front().key);
}

TEST(DiagnoseRootCause, SameTopLevelOpsWithOtherNestedOpsIsAKernelContrast) {
  KernelPair p = AddmmPair(/*nested_differ=*/true, /*state_differs=*/false);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_EQ(d.kind, Kind::kSameApiDifferentKernel);
  EXPECT_STREQ(KindName(d.kind), "same_api_different_kernel");
  ASSERT_TRUE(d.kernel.found);
  EXPECT_EQ(d.kernel.op, "aten::addmm");
  EXPECT_EQ(d.kernel.nested_a, std::vector<std::string>{"aten::_addmm_activation"});
  EXPECT_EQ(d.kernel.nested_b, (std::vector<std::string>{"aten::mm", "aten::add_"}));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kApiChoice);
  EXPECT_EQ(d.root_cause.name, "torch.addmm");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:9");
  EXPECT_EQ(d.sentence.find("at different cost"), std::string::npos) << d.sentence;
  EXPECT_NE(d.sentence.find("aten::_addmm_activation"), std::string::npos) << d.sentence;
}

TEST(DiagnoseRootCause, OtherNestedOpsOnOtherShapesAreNoKernelContrast) {
  KernelPair p = AddmmPair(/*nested_differ=*/true, /*state_differs=*/false);
  // A's addmm reads larger inputs: its other nested ops follow from the shapes.
  for (TensorMeta& m : p.a.tensors) m.shape = {128, 32};
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_FALSE(d.kernel.found);
  EXPECT_EQ(d.kind, Kind::kSameOpsDifferentCost);
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kDataShape);
}

TEST(DiagnoseRootCause, KernelContrastWithADifferingStateNamesTheState) {
  KernelPair p = AddmmPair(/*nested_differ=*/true, /*state_differs=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_EQ(d.kind, Kind::kSameApiDifferentKernel);
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kRuntimeState);
  EXPECT_EQ(d.root_cause.name, "torch.allow_tf32");
  EXPECT_EQ(d.root_cause.where, "");  // no setter recorded: a default
}

TEST(DiagnoseRootCause, EqualNestedOpsAreNoKernelContrast) {
  KernelPair p = AddmmPair(/*nested_differ=*/false, /*state_differs=*/false);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_EQ(d.kind, Kind::kSameOpsDifferentCost);
  EXPECT_FALSE(d.kernel.found);
  EXPECT_NE(d.root_cause.kind, RootCauseKind::kApiChoice);
  EXPECT_FALSE(d.root_cause.found()) << d.root_cause.kind;  // nothing explains it
  EXPECT_NE(d.sentence.find("at different cost"), std::string::npos) << d.sentence;
}

// ---- dtype / layout ----

// A reads an input converted by `convert` ("aten::to" to float64, "aten::permute"
// to a strided view, "" : a float64 tensor no op produced); B reads float32.
struct LayoutPair {
  Trace a, b;
  std::vector<int64_t> ra, rb;
};
LayoutPair ConvertedPair(const std::string& convert, bool same_dtype = false) {
  LayoutPair p;
  for (int side = 0; side < 2; ++side) {
    Builder bld;
    const bool a = side == 0;
    const int64_t main = bld.Path({"/src/a.py:3:<module>"});
    const int64_t conv = bld.Path({"/src/a.py:7:<module>"});
    int64_t x = bld.Tensor({16, 16});
    if (a && !same_dtype) {
      if (convert == "aten::to") {
        const int64_t y = bld.Tensor({16, 16}, "float64");
        const int64_t top = bld.Op("aten::to", {.ins = {x}, .outs = {y}, .path = conv, .start_ns = 100, .end_ns = 900});
        // The conversion's nested copy: an empty float64 tensor filled from x.
        bld.Op("aten::_to_copy", {.ins = {x}, .outs = {y}, .path = conv, .parent = top, .start_ns = 200,
                                  .end_ns = 800});
        x = y;
      } else if (convert == "aten::permute") {
        const int64_t v = bld.Tensor({16, 16}, "float32", {1, 16});
        bld.Op("aten::permute", {.ins = {x}, .outs = {v}, .path = conv, .start_ns = 100, .end_ns = 900});
        x = v;
      } else {
        x = bld.Tensor({16, 16}, "float64");
      }
    }
    std::vector<int64_t> region;
    for (int i = 0; i < 2; ++i) {
      const int64_t out = bld.Tensor({16, 16}, a && !same_dtype && convert != "aten::permute" ? "float64" : "float32");
      region.push_back(bld.Op("aten::mm", {.ins = {x, x}, .outs = {out}, .path = main,
                                           .start_ns = 1000 + 2000 * i, .end_ns = 2500 + 2000 * i}));
    }
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

TEST(DiagnoseRootCause, DtypeContrastWalksBackToTheConversion) {
  LayoutPair p = ConvertedPair("aten::to");
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  ASSERT_TRUE(d.layout.found);
  EXPECT_EQ(d.layout.attribute, "dtype");
  EXPECT_EQ(d.layout.value_a, "float64");
  EXPECT_EQ(d.layout.value_b, "float32");
  EXPECT_EQ(d.layout.producer_op, "aten::to");  // the top-level op, not its nested copy
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kDtypeLayout);
  EXPECT_EQ(d.root_cause.name, "torch.to");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:7");
}

TEST(DiagnoseRootCause, LayoutContrastFindsThePermute) {
  LayoutPair p = ConvertedPair("aten::permute");
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  ASSERT_TRUE(d.layout.found);
  EXPECT_EQ(d.layout.attribute, "layout");
  EXPECT_EQ(d.layout.value_a, "strided");
  EXPECT_EQ(d.layout.value_b, "contiguous");
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kDtypeLayout);
  EXPECT_EQ(d.root_cause.name, "torch.permute");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:7");
}

TEST(DiagnoseRootCause, Float64TensorNoOpMadeIsTakenForNumpy) {
  LayoutPair p = ConvertedPair("");
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kDtypeLayout);
  EXPECT_EQ(d.root_cause.name, "torch.from_numpy");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:3");  // the first line that reads it
}

TEST(DiagnoseRootCause, SameDtypeIsNoDtypeContrast) {
  LayoutPair p = ConvertedPair("aten::to", /*same_dtype=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_FALSE(d.layout.found);
  EXPECT_NE(d.root_cause.kind, RootCauseKind::kDtypeLayout);
}

TEST(DiagnoseRootCause, LayoutNames) {
  TensorMeta m;
  m.shape = {2, 3, 4, 5};
  m.strides = {60, 20, 5, 1};
  EXPECT_EQ(LayoutOf(m), "contiguous");
  m.strides = {60, 1, 15, 3};
  EXPECT_EQ(LayoutOf(m), "channels_last");
  m.strides = {1, 2, 6, 24};
  EXPECT_EQ(LayoutOf(m), "strided");
  m.shape = {1, 3};
  m.strides = {99, 1};  // a size-1 dimension's stride does not matter
  EXPECT_EQ(LayoutOf(m), "contiguous");
}

// ---- data shape ----

// Token ids [8, len] -> embedding -> mm, on both sides; `other_ops`: B runs
// aten::bmm where A runs aten::mm.
struct ShapePair {
  Trace a, b;
  std::vector<int64_t> ra, rb;
};
ShapePair PaddedPair(int64_t len_a, int64_t len_b, bool other_ops, bool ids_from_zeros = false) {
  ShapePair p;
  for (int side = 0; side < 2; ++side) {
    Builder bld;
    const bool a = side == 0;
    const int64_t len = a ? len_a : len_b;
    const int64_t path = bld.Path({"/src/a.py:12:<module>"});
    const int64_t ids = bld.Tensor({8, len}, "int64");
    // torch.zeros(batch, longest) filled with the tokens: a factory op made the ids.
    if (ids_from_zeros) bld.Op("aten::zeros", {.outs = {ids}, .path = path});
    const int64_t table = bld.Tensor({1000, 32});
    const int64_t emb = bld.Tensor({8, len, 32});
    bld.Op("aten::embedding", {.ins = {table, ids}, .outs = {emb}, .path = path});
    const int64_t out = bld.Tensor({8 * len, 32});
    const std::string name = a || !other_ops ? "aten::mm" : "aten::bmm";
    std::vector<int64_t> region = {bld.Op(name, {.ins = {emb, table}, .outs = {out}, .path = path})};
    (a ? p.a : p.b) = std::move(bld.t);
    (a ? p.ra : p.rb) = region;
  }
  return p;
}

TEST(DiagnoseRootCause, SameOpsOnLargerInputsNameTheDimension) {
  ShapePair p = PaddedPair(128, 48, /*other_ops=*/false);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_NE(d.shapes.find("padding, batch size or sequence length"), std::string::npos) << d.shapes;
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kDataShape);
  EXPECT_EQ(d.root_cause.name, "sequence_length");
  EXPECT_EQ(d.root_cause.value_a, "128");
  EXPECT_EQ(d.root_cause.value_b, "48");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:12");
}

TEST(DiagnoseRootCause, IdsMadeByAFactoryOpAreWhereTheDataEnters) {
  ShapePair p = PaddedPair(231, 57, /*other_ops=*/false, /*ids_from_zeros=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kDataShape);
  EXPECT_EQ(d.root_cause.name, "sequence_length");
  EXPECT_EQ(d.root_cause.value_a, "231");
  EXPECT_EQ(d.root_cause.value_b, "57");
}

TEST(DiagnoseRootCause, LargerInputsOfDifferentOpsAreNotADataShape) {
  ShapePair p = PaddedPair(128, 48, /*other_ops=*/true);
  Diagnosis d = DiagnoseOne(p.a, p.b, OneWaste(p.ra, p.rb, p.a, p.b));
  EXPECT_EQ(d.kind, Kind::kDifferentOps);
  EXPECT_EQ(d.shapes.find("padding"), std::string::npos) << d.shapes;
  EXPECT_EQ(d.sentence.find("padding"), std::string::npos) << d.sentence;
  EXPECT_NE(d.root_cause.kind, RootCauseKind::kDataShape);
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kApiChoice);  // mm where the other side runs bmm
  EXPECT_EQ(d.root_cause.name, "torch.mm");
}

// ---- different ops ----

TEST(DiagnoseRootCause, SubstitutedOpNamesTheCostlySidesApi) {
  Builder ba, bb;
  const int64_t pa = ba.Path({"/src/a.py:4:<module>"}), pb = bb.Path({"/src/b.py:4:<module>"});
  const int64_t xa = ba.Tensor({64, 64}), xb = bb.Tensor({64, 64});
  const int64_t oa = ba.Op("aten::linalg_eigvals", {.ins = {xa}, .outs = {ba.Tensor({64}, "complex64")}, .path = pa});
  const int64_t ob = bb.Op("aten::linalg_eigvalsh", {.ins = {xb}, .outs = {bb.Tensor({64})}, .path = pb});
  Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({oa}, {ob}, ba.t, bb.t));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kApiChoice);
  EXPECT_EQ(d.root_cause.name, "torch.linalg.eigvals");
  EXPECT_EQ(d.root_cause.value_a, "torch.linalg.eigvals");
  EXPECT_EQ(d.root_cause.value_b, "torch.linalg.eigvalsh");
  EXPECT_EQ(d.root_cause.where, "/src/a.py:4");
}

TEST(DiagnoseRootCause, SubstitutedOpsInsideALibraryNameTheFunctionTheUserCalled) {
  Builder ba, bb;
  const int64_t pa = ba.Path({"/src/a.py:14:<module>", std::string(kLib) + "/jax/_src/scipy/linalg.py:1427:expm"});
  const int64_t pb = bb.Path({"/src/b.py:14:<module>"});
  const int64_t xa = ba.Tensor({8, 4, 4}), xb = bb.Tensor({8, 4, 4});
  const int64_t o1 = ba.Op("jax::dot_general", {.ins = {xa, xa}, .outs = {ba.Tensor({8, 4, 4})}, .path = pa});
  const int64_t o2 = ba.Op("jax::select_n", {.ins = {xa}, .outs = {ba.Tensor({8, 4, 4})}, .path = pa});
  const int64_t ob = bb.Op("aten::linalg_matrix_exp", {.ins = {xb}, .outs = {bb.Tensor({8, 4, 4})}, .path = pb});
  Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({o1, o2}, {ob}, ba.t, bb.t));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kApiChoice);
  EXPECT_EQ(d.root_cause.name, "jax.scipy.linalg.expm");
  EXPECT_EQ(d.root_cause.value_b, "torch.linalg.matrix_exp");
}

TEST(DiagnoseRootCause, ExtraWorkIsACodePath) {
  // Several kinds of op from one function: the function is the extra work.
  Builder ba, bb;
  const int64_t pa = ba.Path({"/src/a.py:30:forward", "/src/common.py:13:rope_tables"});
  const int64_t x = ba.Tensor({64});
  const int64_t o1 = ba.Op("aten::outer", {.ins = {x, x}, .outs = {ba.Tensor({64, 64})}, .path = pa});
  const int64_t o2 = ba.Op("aten::cos", {.ins = {x}, .outs = {ba.Tensor({64})}, .path = pa});
  Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({o1, o2}, {}, ba.t, bb.t));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCodePath);
  EXPECT_EQ(d.root_cause.name, "rope_tables");
  EXPECT_EQ(d.root_cause.where, "/src/common.py:13");
  // One extra op at the script's top level: the op.
  Builder ca;
  const int64_t pc = ca.Path({"/src/a.py:10:<module>"});
  const int64_t y = ca.Tensor({64, 8});
  const int64_t r = ca.Op("aten::repeat_interleave.self_int", {.ins = {y}, .outs = {ca.Tensor({64, 8})}, .path = pc});
  d = DiagnoseOne(ca.t, bb.t, OneWaste({r}, {}, ca.t, bb.t));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCodePath);
  EXPECT_EQ(d.root_cause.name, "torch.repeat_interleave");
}

// Extra work issued through one library function the user's line called:
// under `with Join([net]):` a finished rank's shadow all-reduces all come from
// Join.__exit__ (through DDP's join hook). Twin: the same ops issued straight
// from the user's lines name no library function.
TEST(DiagnoseRootCause, ExtraWorkThroughOneLibraryFunctionNamesIt) {
  for (bool through_library : {true, false}) {
    Builder ba, bb;
    const std::string join = std::string(kLib) + "/torch/distributed/algorithms/join.py";
    const std::string ddp = std::string(kLib) + "/torch/nn/parallel/distributed.py";
    const int64_t shadow =
        through_library ? ba.Path({"/src/train.py:66:worker", join + ":265:Join.__exit__", join + ":285:_get_num"})
                        : ba.Path({"/src/train.py:66:worker"});
    const int64_t hook = through_library ? ba.Path({"/src/train.py:66:worker", join + ":265:Join.__exit__",
                                                     ddp + ":1919:DistributedDataParallel._check_sync"})
                                         : ba.Path({"/src/train.py:67:worker"});
    const int64_t x = ba.Tensor({64});
    std::vector<int64_t> ops;
    for (int i = 0; i < 3; ++i) {
      ops.push_back(ba.Op("aten::zeros", {.outs = {ba.Tensor({1})}, .path = shadow}));
      ops.push_back(ba.Op("c10d::allreduce_", {.ins = {x}, .outs = {x}, .path = hook}));
    }
    Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste(ops, {}, ba.t, bb.t));
    EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCodePath);
    if (through_library) {
      EXPECT_EQ(d.root_cause.name, "torch.distributed.algorithms.join.Join.__exit__");
      EXPECT_EQ(d.root_cause.where, "/src/train.py:66");
      EXPECT_EQ(d.root_cause.value_a, "runs torch.distributed.algorithms.join.Join.__exit__");
    } else {
      EXPECT_EQ(d.root_cause.name.find("Join"), std::string::npos) << d.root_cause.name;
    }
  }
}

// A's region also holds the costly randn that made its input (the matched
// value lies past a copy), B's only a transpose. B runs randn elsewhere, so
// randn is no extra work: the copy B never runs is. Twin: a B that never runs
// randn leaves the costliest extra op.
TEST(DiagnoseRootCause, ExtraOpTheOtherProgramRunsElsewhereIsNotTheExtraWork) {
  for (bool b_runs_randn : {true, false}) {
    Builder ba, bb;
    const int64_t pa = ba.Path({"/src/a.py:10:<module>"});
    const int64_t w = ba.Tensor({64, 8});
    const int64_t rn = ba.Op("aten::randn", {.outs = {w}, .path = pa, .start_ns = 1000, .end_ns = 90000});
    const int64_t k = ba.Tensor({64, 8});
    const int64_t ri = ba.Op("aten::repeat_interleave.self_int", {.ins = {w}, .outs = {k}, .path = pa});
    const int64_t ta = ba.Op("aten::transpose.int", {.ins = {k}, .outs = {ba.Tensor({8, 64})}, .path = pa});
    const int64_t pb = bb.Path({"/src/b.py:10:<module>"});
    const int64_t kb = bb.Tensor({64, 8});
    if (b_runs_randn) bb.Op("aten::randn", {.outs = {kb}, .path = pb});
    const int64_t tb = bb.Op("aten::transpose.int", {.ins = {kb}, .outs = {bb.Tensor({8, 64})}, .path = pb});
    Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({rn, ri, ta}, {tb}, ba.t, bb.t));
    EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCodePath);
    EXPECT_EQ(d.root_cause.name, b_runs_randn ? "torch.repeat_interleave" : "torch.randn") << b_runs_randn;
  }
}

TEST(DiagnoseRootCause, ExtraWorkMostlyFromOneFunctionNamesIt) {
  Builder ba, bb;
  const int64_t tables = ba.Path({"/src/a.py:30:forward", "/src/common.py:13:rope_tables"});
  const int64_t rotate = ba.Path({"/src/a.py:30:forward", "/src/common.py:18:rotate"});
  const int64_t x = ba.Tensor({64});
  std::vector<int64_t> ops;
  for (int i = 0; i < 3; ++i) {
    ops.push_back(ba.Op("aten::cos", {.ins = {x}, .outs = {ba.Tensor({64})}, .path = tables}));
    ops.push_back(ba.Op("aten::sin", {.ins = {x}, .outs = {ba.Tensor({64})}, .path = tables}));
  }
  ops.push_back(ba.Op("aten::mul.Tensor", {.ins = {x, x}, .outs = {ba.Tensor({64})}, .path = rotate}));
  Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste(ops, {}, ba.t, bb.t));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCodePath);
  EXPECT_EQ(d.root_cause.name, "rope_tables");
  // Half the extra ops from elsewhere: no function stands for the extra work; the costliest op does.
  for (int i = 0; i < 6; ++i) {
    ops.push_back(ba.Op("aten::mul.Tensor", {.ins = {x, x}, .outs = {ba.Tensor({64})}, .path = rotate}));
  }
  d = DiagnoseOne(ba.t, bb.t, OneWaste(ops, {}, ba.t, bb.t));
  EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCodePath);
  EXPECT_NE(d.root_cause.name, "rope_tables");
}

// A generate()-like call: both sides issue the region's ops through the same
// library function from the same line; only what it was given differs.
TEST(DiagnoseRootCause, DifferentOpsInsideTheSameCallAreDecidedByWhatItWasGiven) {
  for (bool same_call : {true, false}) {
    Builder ba, bb;
    const std::string api = std::string(kLib) + "/transformers/generation/utils.py:2100:GenerationMixin.generate";
    const int64_t pa = ba.Path({"/src/common.py:17:generate", api});
    const int64_t pb = same_call ? bb.Path({"/src/common.py:17:generate", api})
                                 : bb.Path({"/src/b.py:5:<module>", std::string(kLib) + "/x/other.py:3:other"});
    const int64_t xa = ba.Tensor({1, 64}), xb = bb.Tensor({1, 64});
    const int64_t oa = ba.Op("aten::matmul", {.ins = {xa, xa}, .outs = {ba.Tensor({1, 1})}, .path = pa});
    const int64_t ob = bb.Op("aten::scaled_dot_product_attention", {.ins = {xb}, .outs = {bb.Tensor({1, 64})}, .path = pb});
    ba.t.config = {{"call.generate.use_cache", "False", "call_arg"}};
    bb.t.config = {{"call.generate.use_cache", "True", "call_arg"}};
    Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({oa}, {ob}, ba.t, bb.t));
    ASSERT_FALSE(d.candidates.empty());
    EXPECT_EQ(d.candidates[0].frame_distance, -1);  // no source to read
    if (same_call) {
      EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCallArg);
      EXPECT_EQ(d.root_cause.name, "call.generate.use_cache");
      EXPECT_EQ(d.root_cause.value_a, "False");
    } else {
      EXPECT_EQ(d.root_cause.kind, RootCauseKind::kApiChoice) << "another call on each side: the API differs";
      EXPECT_EQ(d.root_cause.name, "transformers.generation.utils.GenerationMixin.generate");
    }
  }
}

// ---- versions and config candidates ----

TEST(DiagnoseRootCause, VersionOfThePackageTheRegionRunsIn) {
  for (bool inside : {true, false}) {
    Builder ba, bb;
    const std::string lib = inside ? "/transformers/models/llama/modeling_llama.py:900:_update_causal_mask"
                                   : "/torch/functional.py:10:f";
    const int64_t pa = ba.Path({"/src/a.py:4:<module>", std::string(kLib) + lib});
    const int64_t pb = bb.Path({"/src/b.py:4:<module>", std::string(kLib) + lib});
    const int64_t xa = ba.Tensor({64, 64}), xb = bb.Tensor({8, 8});
    const int64_t oa = ba.Op("aten::repeat", {.ins = {xa}, .outs = {ba.Tensor({64, 64})}, .path = pa});
    const int64_t ob = bb.Op("aten::bitwise_not", {.ins = {xb}, .outs = {bb.Tensor({8, 8})}, .path = pb});
    ba.t.meta.versions = {{"transformers", "4.38.1"}, {"torch", "2.13.0"}};
    bb.t.meta.versions = {{"transformers", "4.39.3"}, {"torch", "2.13.0"}};
    Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({oa}, {ob}, ba.t, bb.t));
    if (inside) {
      EXPECT_EQ(d.root_cause.kind, RootCauseKind::kVersion);
      EXPECT_EQ(d.root_cause.name, "transformers");
      EXPECT_EQ(d.root_cause.value_a, "4.38.1");
    } else {
      EXPECT_EQ(d.root_cause.kind, RootCauseKind::kApiChoice) << "the region's ops do not run in transformers";
    }
  }
}

TEST(DiagnoseRootCause, ConfigCandidateReadNearTheDeviationTakesItsKindFromItsSource) {
  Diagnosis d;
  d.kind = Kind::kDifferentOps;
  d.only_costly = {"aten::matmul"};
  d.only_cheap = {"aten::scaled_dot_product_attention"};
  d.costly_op = "aten::matmul";
  Candidate c;
  c.config = {"call.generate.use_cache", "False", "True", "call_arg"};
  c.frame_distance = 0;
  c.evidence = "/lib/generation.py:88: if use_cache:";
  d.candidates = {c};
  RootCause r = ChooseRootCause(d);
  EXPECT_EQ(r.kind, RootCauseKind::kCallArg);
  EXPECT_EQ(r.name, "call.generate.use_cache");
  EXPECT_EQ(r.where, "/lib/generation.py:88");
  d.candidates[0].config = {"env.OMP_NUM_THREADS", "1", "2", "env"};
  EXPECT_EQ(ChooseRootCause(d).kind, RootCauseKind::kEnvVar);
  d.candidates[0].config = {"model_config.GPT2.attn_implementation", "eager", "sdpa", "model_config"};
  EXPECT_EQ(ChooseRootCause(d).kind, RootCauseKind::kConfig);
  d.candidates[0].config = {"model_config.Llama.transformers_version", "4.38.1", "4.39.3", "model_config"};
  EXPECT_EQ(ChooseRootCause(d).kind, RootCauseKind::kVersion);
  EXPECT_EQ(ChooseRootCause(d).name, "transformers");
  // Not named near the deviation point: the ops decide.
  d.candidates[0].frame_distance = -1;
  d.candidates[0].config = {"call.generate.use_cache", "False", "True", "call_arg"};
  EXPECT_EQ(ChooseRootCause(d).kind, RootCauseKind::kApiChoice);
  EXPECT_EQ(ChooseRootCause(d).name, "torch.matmul");
}

TEST(DiagnoseRootCause, ApiNames) {
  EXPECT_EQ(ApiOfOp("aten::linalg_eigvals"), "torch.linalg.eigvals");
  EXPECT_EQ(ApiOfOp("aten::sort.stable"), "torch.sort");
  EXPECT_EQ(ApiOfOp("aten::fft_rfft"), "torch.fft.rfft");
  EXPECT_EQ(ApiOfOp("jax::dot_general"), "jax.lax.dot_general");
  EXPECT_EQ(ApiOfOp("c10d::allreduce_"), "c10d.allreduce_");
  EXPECT_EQ(ApiOfFrame("/py/site-packages/torch/functional.py:700:stft"), "torch.functional.stft");
  EXPECT_EQ(ApiOfFrame("/py/site-packages/pkg/__init__.py:1:f"), "pkg.f");
  EXPECT_EQ(ApiOfFrame("/src/model.py:10:rope_tables"), "rope_tables");
  EXPECT_EQ(ApiOfFrame("/py/site-packages/jax/_src/scipy/linalg.py:1427:expm"), "jax.scipy.linalg.expm");
  EXPECT_EQ(FileLine("/src/a.py:5:main"), "/src/a.py:5");
}

// ---- call arguments ----

TEST(DiagnoseCallArgs, AKeywordGivenOnOneSideOnlyIsADifference) {
  const auto d = ContrastCallArgs("principal_directions(lambda x: torch.linalg.svd(x))",
                                  "principal_directions(lambda x: torch.linalg.svd(x, full_matrices=False))");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].callee, "torch.linalg.svd");
  EXPECT_EQ(d[0].name, "full_matrices");
  EXPECT_EQ(d[0].value_a, "<default>");
  EXPECT_EQ(d[0].value_b, "False");
}

TEST(DiagnoseCallArgs, SameArgumentsOrOtherCalleesAreNoDifference) {
  EXPECT_TRUE(ContrastCallArgs("out = model(ids, output_attentions=True)", "out = model(ids, output_attentions=True)")
                  .empty());
  // Different callees are not one call given other arguments.
  EXPECT_TRUE(ContrastCallArgs("torch.linalg.svd(x)", "torch.linalg.eigh(x, UPLO='U')").empty());
  // Strings, comparisons and nested brackets are no keywords.
  EXPECT_TRUE(ContrastCallArgs("f(x == 1, s='a=b, c', d={'k': 1})", "f(x == 2, s='a=b, c', d={'k': 1})").empty());
  const auto d = ContrastCallArgs("model(ids, attention_mask=m, output_attentions=True)", "model(ids, attention_mask=m)");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "output_attentions");
  EXPECT_EQ(d[0].value_a, "True");
  EXPECT_EQ(d[0].value_b, "<default>");
}

// The same op on both sides, issued from lines that differ in one keyword:
// the keyword is the root cause, at the costly side's line. Twin: the same
// line on both sides leaves no call argument.
TEST(DiagnoseCallArgs, TheKeywordOnTheIssuingLinesIsTheRootCause) {
  for (bool lines_differ : {true, false}) {
    const std::string dir = testing::TempPath(lines_differ ? "call_args_differ" : "call_args_same");
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/a.py") << "import torch\n\nrun(lambda x: torch.linalg.svd(x))\n";
    std::ofstream(dir + "/b.py") << "import torch\n\nrun(lambda x: torch.linalg.svd(x"
                                 << (lines_differ ? ", full_matrices=False" : "") << "))\n";
    Builder ba, bb;
    ba.t.meta.cwd = bb.t.meta.cwd = dir;
    const int64_t pa = ba.Path({dir + "/a.py:3:<lambda>"}), pb = bb.Path({dir + "/b.py:3:<lambda>"});
    const int64_t xa = ba.Tensor({256, 16}), xb = bb.Tensor({256, 16});
    const int64_t oa = ba.Op("aten::linalg_svd", {.ins = {xa}, .outs = {ba.Tensor({256, 256})}, .path = pa});
    const int64_t ob = bb.Op("aten::linalg_svd", {.ins = {xb}, .outs = {bb.Tensor({256, 16})}, .path = pb});
    Diagnosis d = DiagnoseOne(ba.t, bb.t, OneWaste({oa}, {ob}, ba.t, bb.t));
    if (lines_differ) {
      EXPECT_EQ(d.root_cause.kind, RootCauseKind::kCallArg);
      EXPECT_EQ(d.root_cause.name, "full_matrices");
      EXPECT_EQ(d.root_cause.value_a, "<default>");
      EXPECT_EQ(d.root_cause.value_b, "False");
      EXPECT_EQ(d.root_cause.where, dir + "/a.py:3");
    } else {
      EXPECT_TRUE(d.call_args.empty());
      EXPECT_NE(d.root_cause.kind, RootCauseKind::kCallArg);
    }
  }
}

// ---- one side's own work beside the other's ----

// A builds a mask with one pair of ops, B with another (hf-29206's shape):
// each side's own work is a region of its own, and the costlier one's
// situation names the other's instead of saying B runs nothing. Its twin:
// B's own work is in the other phase (set-up), and is not named.
detect::DetectResult OwnWorkOnBothSides(const Trace& a, const Trace& b, bool b_in_setup) {
  detect::DetectResult r;
  detect::Finding fa;
  fa.kind = detect::RegionKind::kUnmatched;
  fa.verdict = detect::Verdict::kWaste;
  fa.wasteful_side = 'A';
  fa.saving_uj = 5000;
  fa.share_of_total = 0.5;
  fa.a.energy_uj = 5000;
  detect::RegionInstance ia;
  ia.ops_a = {0, 1};
  fa.instances.push_back(ia);
  fa.names_a = {a.str(a.ops[0].name_id), a.str(a.ops[1].name_id)};
  detect::Finding fb;
  fb.kind = detect::RegionKind::kUnmatched;
  fb.verdict = detect::Verdict::kEqual;
  fb.wasteful_side = 'B';
  fb.setup = b_in_setup;
  fb.saving_uj = 40;
  fb.b.energy_uj = 40;
  detect::RegionInstance ib;
  ib.ops_b = {0};
  fb.instances.push_back(ib);
  fb.names_b = {b.str(b.ops[0].name_id)};
  r.findings = {fa, fb};
  return r;
}

TEST(DiagnoseSituation, NamesTheOtherSidesOwnWorkOfTheSamePhase) {
  Builder ba, bb;
  const int64_t path = ba.Path({"/src/mask.py:3:<module>"});
  const int64_t x = ba.Tensor({64, 64}), y = ba.Tensor({64, 64}), z = ba.Tensor({8, 64, 64});
  ba.Op("aten::tril", {.ins = {x}, .outs = {y}, .path = path});
  ba.Op("aten::repeat", {.ins = {y}, .outs = {z}, .path = path});
  const int64_t pb = bb.Path({"/src/mask.py:5:<module>"});
  const int64_t u = bb.Tensor({64, 64}), v = bb.Tensor({64, 64});
  bb.Op("aten::triu", {.ins = {u}, .outs = {v}, .path = pb});
  for (bool b_in_setup : {false, true}) {
    const detect::DetectResult r = OwnWorkOnBothSides(ba.t, bb.t, b_in_setup);
    const std::vector<Diagnosis> ds = Diagnose(ba.t, bb.t, r);
    ASSERT_FALSE(ds.empty());
    const std::string& text = ds[0].situation;
    EXPECT_NE(text.find("A runs [aten::tril, aten::repeat] where B runs [nothing]"), std::string::npos) << text;
    const bool named = text.find("B's own work of this phase is a region of its own: [aten::triu]") != std::string::npos;
    EXPECT_EQ(named, !b_in_setup) << text;
  }
}

}  // namespace
}  // namespace magneton::diagnose
