// XLA's profiler events and the optimised HLO text of a JAX jit-mode
// recording (src/record/xla_profile.cc, src/record/hlo_text.cc), on excerpts
// of what JAX 0.10.2 / XLA:CPU wrote for a jitted 2-layer tanh MLP.
#include <gtest/gtest.h>

#include <string>

#include "magneton/clock.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "record/hlo_text.h"
#include "record/xla_profile.h"
#include "record/xla_values.h"
#include "test_util.h"

namespace magneton {
namespace {

constexpr const char* kHlo = R"hlo(HloModule jit_mlp, is_scheduled=true, entry_computation_layout={(f32[256,256]{1,0}, f32[32,256]{1,0})->f32[32,256]{1,0}}

FileNames
1 "/tmp/user.py"

FunctionNames
1 "<module>"
2 "mlp"

FileLocations
1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=25 end_column=38}
2 {file_name_id=1 function_name_id=2 line=4 end_line=4 column=21 end_column=26}
3 {file_name_id=1 function_name_id=2 line=5 end_line=5 column=12 end_column=27}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=2}


%fused_computation (param_0: f32[32,256], param_1: f32[256,256]) -> f32[32,256] {
  %param_0 = f32[32,256]{1,0} parameter(0)
  %param_1 = f32[256,256]{1,0} parameter(1)
  ROOT %dot_general.0 = f32[32,256]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(mlp)/dot_general" stack_frame_id=2}
}

%wrapped_tanh_computation (param_0.2: f32[32,256]) -> f32[32,256] {
  %param_0.2 = f32[32,256]{1,0} parameter(0)
  ROOT %tanh.0 = f32[32,256]{1,0} tanh(%param_0.2), metadata={op_name="jit(mlp)/tanh" stack_frame_id=3}
}

ENTRY %main.1 (ws_0_.1: f32[256,256], x.1: f32[32,256]) -> f32[32,256] {
  %ws_0_.1 = f32[256,256]{1,0} parameter(0), metadata={op_name="ws[0]"}
  %x.1 = f32[32,256]{1,0} parameter(1), metadata={op_name="x"}
  %ynn_fusion = f32[32,256]{1,0} fusion(%x.1, %ws_0_.1), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(mlp)/dot_general" stack_frame_id=2}, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
  ROOT %wrapped_tanh = f32[32,256]{1,0} fusion(%ynn_fusion), kind=kLoop, calls=%wrapped_tanh_computation, metadata={op_name="jit(mlp)/tanh" source_file="/old/style.py" source_line=7}
  %t = (f32[2]{0}, s32[]) tuple(%x.1, %x.1)
}
)hlo";

TEST(HloText, FusionsWithTheirPrimitivesAndSourceLines) {
  const HloModuleInfo m = ParseHloText(kHlo);
  EXPECT_EQ(m.name, "jit_mlp");
  ASSERT_TRUE(m.ops.count("ynn_fusion"));
  const HloOpInfo& dot = m.ops.at("ynn_fusion");
  EXPECT_EQ(dot.opcode, "fusion");
  EXPECT_EQ(dot.fusion_kind, "kCustom");
  EXPECT_EQ(dot.primitives, std::vector<std::string>{"dot_general"});
  EXPECT_EQ(dot.sources, std::vector<std::string>{"/tmp/user.py:4:mlp"});
  // The instruction's own metadata first (old-style source_file/line), then
  // its fused computation's (stack frames).
  const HloOpInfo& tanh = m.ops.at("wrapped_tanh");
  EXPECT_EQ(tanh.fusion_kind, "kLoop");
  EXPECT_EQ(tanh.primitives, std::vector<std::string>{"tanh"});
  EXPECT_EQ(tanh.sources, (std::vector<std::string>{"/old/style.py:7:?", "/tmp/user.py:5:mlp"}));
  EXPECT_EQ(m.ops.at("t").opcode, "tuple");  // a tuple type with a space in it
  EXPECT_FALSE(m.ops.count("x.1"));          // parameters are no thunks
}

// The entry computation's dataflow, for per-fusion values
// (record/xla_values.h): operands by name, parameter numbers, and each
// instruction's value as its root's op_name, "file:line" and shape.
TEST(HloText, EntryDataflowWithRootValues) {
  const HloModuleInfo m = ParseHloText(kHlo);
  ASSERT_EQ(m.entry.size(), 5u);
  EXPECT_EQ(m.entry[0].name, "ws_0_.1");
  EXPECT_EQ(m.entry[0].parameter_number, 0);
  EXPECT_EQ(m.entry[1].parameter_number, 1);
  const HloEntryInstruction& dot = m.entry[2];
  EXPECT_EQ(dot.name, "ynn_fusion");
  EXPECT_EQ(dot.operands, (std::vector<std::string>{"x.1", "ws_0_.1"}));
  EXPECT_FALSE(dot.root);
  ASSERT_EQ(dot.results.size(), 1u);
  EXPECT_EQ(dot.results[0].op_name, "jit(mlp)/dot_general");  // the fused computation's root
  EXPECT_EQ(dot.results[0].source, "/tmp/user.py:4");
  EXPECT_EQ(dot.results[0].dims, (std::vector<int64_t>{32, 256}));
  const HloEntryInstruction& tanh = m.entry[3];
  EXPECT_TRUE(tanh.root);
  EXPECT_EQ(tanh.operands, std::vector<std::string>{"ynn_fusion"});
  ASSERT_EQ(tanh.results.size(), 1u);
  EXPECT_EQ(tanh.results[0].source, "/tmp/user.py:5");  // the root's own line, not the fusion's metadata
  EXPECT_EQ(m.entry[4].opcode, "tuple");
  EXPECT_TRUE(m.entry[4].results.empty());
}

TEST(HloText, NotHloGivesNothing) {
  const HloModuleInfo m = ParseHloText("{\"not\": \"hlo\"}\n%x = garbage\n}");
  EXPECT_TRUE(m.name.empty());
  EXPECT_TRUE(m.ops.empty());
}

TEST(XlaProfile, ThunksAndOutermostCalls) {
  const char* json = R"json({"displayTimeUnit":"ns","traceEvents":[
    {"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"python3"}},
    {"ph":"X","pid":1,"tid":7,"ts":88.118,"dur":205.482,"name":"PjitFunction(mlp)"},
    {"ph":"X","pid":1,"tid":7,"ts":88.825,"dur":204.693,"name":"PjitFunction(mlp)"},
    {"ph":"X","pid":1,"tid":7,"ts":173.0,"dur":109.2,"name":"CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice"},
    {"ph":"X","pid":1,"tid":9,"ts":200.5,"dur":40.1,"name":"ynn_fusion","args":{"hlo_module":"jit_mlp","hlo_op":"ynn_fusion","run_id":"12"}},
    {"ph":"X","pid":1,"tid":9,"ts":240.7,"dur":0.3,"name":"end: ynn_fusion","args":{"_src":"x"}},
    {"ph":"X","pid":1,"tid":9,"ts":241.0,"dur":5.0,"name":"wrapped_tanh","args":{"hlo_module":"jit_mlp","hlo_op":"wrapped_tanh","run_id":"12"}},
    {"ph":"X","pid":1,"tid":9,"name":"wrapped_tanh","args":{"hlo_module":"jit_mlp","hlo_op":"wrapped_tanh","run_id":"13"}}
  ]})json";
  auto p = ParseXlaProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->calls.size(), 1u);  // the nested second stamp of the same call dropped
  EXPECT_EQ(p->calls[0].function, "mlp");
  EXPECT_EQ(p->calls[0].end_ns, 293600);
  ASSERT_EQ(p->thunks.size(), 2u);
  EXPECT_EQ(p->thunks[0].op, "ynn_fusion");
  EXPECT_EQ(p->thunks[0].run_id, "12");
  EXPECT_EQ(p->thunks[0].start_ns, 200500);
  EXPECT_EQ(p->thunks[1].end_ns, 246000);
  EXPECT_EQ(p->dropped.at("thunk.no_time"), 1);
}

// Jitted calls ended at dispatch (Recorder::HoldOp) take the span of the run
// XLA executed for each, paired in dispatch order, on a lane of their own
// (the thread id negated); a call whose run the profile lacks keeps its
// dispatch span on its thread.
TEST(XlaProfile, HeldCallsTakeTheirRunsSpans) {
  const std::string path = testing::TempPath("held_calls.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  const int64_t t0 = MonotonicNowNs() - 20'000'000;  // calls 1 ms apart, each dispatched in 100 µs
  const int64_t base = t0 - 1'000'000;              // profiler clock = op clock - base
  auto us = [&](int64_t op_ns) { return std::to_string((op_ns - base) / 1000.0); };
  std::string events;
  std::vector<int64_t> ids;
  // The first call's arrays (--values): a static argument at input slot 0,
  // then ws and x; its result. Its op is still held when its replay links
  // its thunks to them.
  const int64_t ws_dims[] = {256, 256}, x_dims[] = {32, 256}, ws_strides[] = {256, 1}, x_strides[] = {256, 1};
  auto view = [](uint64_t addr, const int64_t* dims, const int64_t* strides) {
    TensorView v;
    v.storage_addr = addr;
    v.sizes = dims;
    v.strides = strides;
    v.ndim = 2;
    v.dtype = "float32";
    v.device = "cpu";
    return v;
  };
  for (int i = 0; i < 4; ++i) {
    const int64_t start = t0 + i * 1'000'000, dispatched = start + 100'000;
    ids.push_back(rec->BeginOp(rec->InternString("jax::jit(mlp)"), kNoId));
    if (i == 0) {
      rec->AddInput(1, view(0x1000, ws_dims, ws_strides));
      rec->AddInput(2, view(0x90000, x_dims, x_strides));
    }
    ASSERT_EQ(rec->DetachOp(start, dispatched), ids.back());
    ASSERT_TRUE(rec->ReattachOp(ids.back()));
    if (i == 0) rec->AddOutput(0, view(0xa0000, x_dims, x_strides));
    rec->HoldOp("{}", "jax::jit(mlp)", "jit_mlp");
    events += R"j(,{"ph":"X","pid":1,"tid":7,"ts":)j" + us(start) + R"j(,"dur":100,"name":"PjitFunction(mlp)"})j";
    if (i == 3) continue;  // the profile dropped this call's run
    // The run: 200 µs after the dispatch (queued behind the one before), 40 + 5 µs.
    const std::string run = std::to_string(100 + i);
    events += R"j(,{"ph":"X","pid":1,"tid":9,"ts":)j" + us(dispatched + 200'000) +
              R"j(,"dur":40,"name":"ynn_fusion","args":{"hlo_module":"jit_mlp","hlo_op":"ynn_fusion","run_id":")j" + run +
              R"j("}},{"ph":"X","pid":1,"tid":9,"ts":)j" + us(dispatched + 240'000) +
              R"j(,"dur":5,"name":"wrapped_tanh","args":{"hlo_module":"jit_mlp","hlo_op":"wrapped_tanh","run_id":")j" +
              run + R"j("}})j";
  }
  const std::string json = R"j({"traceEvents":[{"ph":"M","pid":1,"tid":7,"name":"thread_name"})j" + events + "]}";
  auto parsed = ParseXlaProfile(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->calls.size(), 4u) << json;
  XlaReplay replay;
  replay.op_id = ids[0];
  replay.module = "jit_mlp";
  replay.values = {{"jit(mlp)/dot_general", "/tmp/user.py:4", {32, 256}, "float32", ""},
                   {"jit(mlp)/tanh", "/tmp/user.py:5", {32, 256}, "float32", ""}};
  replay.input_slots = {1, 2};  // the jaxpr's (ws, x) are the op's inputs 1 and 2
  auto stats = IngestXlaProfile(*rec, json, {kHlo}, {replay});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->clock_offset_ns, -base);
  EXPECT_EQ(stats->runs_linked, 3);
  EXPECT_EQ(stats->values.calls, 1);
  EXPECT_EQ(stats->values.ops_with_values, 2);
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  auto op = [&](int64_t id) -> const OpEvent& {
    for (const OpEvent& o : trace->ops)
      if (o.id == id) return o;
    ADD_FAILURE() << "no op " << id;
    return trace->ops.front();
  };
  int64_t thread = 0;
  for (int i = 0; i < 3; ++i) {
    const OpEvent& call = op(ids[i]);
    const int64_t run_start = t0 + i * 1'000'000 + 300'000;
    EXPECT_EQ(call.start_ns, run_start);
    EXPECT_EQ(call.end_ns, run_start + 45'000);
    EXPECT_LT(call.thread_id, 0);
    int kids = 0;
    for (const OpEvent& o : trace->ops) {
      if (o.parent_id != call.id) continue;
      ++kids;
      EXPECT_EQ(o.thread_id, call.thread_id);
      EXPECT_GE(o.start_ns, call.start_ns);
      EXPECT_LE(o.end_ns, call.end_ns);
    }
    EXPECT_EQ(kids, 2);
    thread = call.thread_id;
  }
  // The first call's thunks: the dot reads x and ws (the call's inputs 2
  // and 1) and writes a value the tanh reads; the tanh writes the result.
  auto links = [&](int64_t id, TensorRole role) {
    std::vector<int64_t> out;
    for (const OpTensor& t : trace->op_tensors)
      if (t.op_id == id && t.role == role) out.push_back(t.tensor_id);
    return out;
  };
  const std::vector<int64_t> call_in = links(ids[0], TensorRole::kInput), call_out = links(ids[0], TensorRole::kOutput);
  ASSERT_EQ(call_in.size(), 2u);
  ASSERT_EQ(call_out.size(), 1u);
  int64_t dot = kNoId, tanh = kNoId;
  for (const OpEvent& o : trace->ops) {
    if (o.parent_id != ids[0]) continue;
    (o.start_ns == op(ids[0]).start_ns ? dot : tanh) = o.id;
  }
  ASSERT_NE(dot, kNoId);
  ASSERT_NE(tanh, kNoId);
  EXPECT_EQ(links(dot, TensorRole::kInput), (std::vector<int64_t>{call_in[1], call_in[0]}));  // (x, ws)
  ASSERT_EQ(links(dot, TensorRole::kOutput).size(), 1u);
  EXPECT_EQ(links(tanh, TensorRole::kInput), links(dot, TensorRole::kOutput));
  EXPECT_EQ(links(tanh, TensorRole::kOutput), call_out);
  const OpEvent& unpaired = op(ids[3]);
  EXPECT_EQ(unpaired.thread_id, -thread);  // its dispatch span, on the program's thread
  EXPECT_EQ(unpaired.start_ns, t0 + 3'000'000);
  EXPECT_EQ(trace->meta.extra.at("xla.calls_held"), "4");
  EXPECT_EQ(trace->meta.extra.at("xla.calls_retimed"), "3");
}

TEST(XlaProfile, NotATraceIsAnError) {
  EXPECT_FALSE(ParseXlaProfile("not json").ok());
  EXPECT_FALSE(ParseXlaProfile("{\"other\": 1}").ok());
}

}  // namespace
}  // namespace magneton
