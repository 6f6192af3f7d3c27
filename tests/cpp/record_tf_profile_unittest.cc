// TensorFlow's profiler events of tf.function calls (src/record/tf_profile.cc)
// and the clock pairing and placement it shares with the XLA ingester
// (src/record/profile_clock.cc), on an excerpt of what TF 2.21's
// xspace_to_tools_data(..., "trace_viewer@") gave for a MatMul+BiasAdd+Relu
// function with Grappler's remapping off.
#include <gtest/gtest.h>

#include "record/profile_clock.h"
#include "record/tf_profile.h"

namespace magneton {
namespace {

constexpr const char* kProfile = R"json({"displayTimeUnit":"ns",
  "stackFrames":{"1":{"name":"MatMul:_MklMatMul"}},
  "traceEvents":[
    {"args":{"name":"tf_Compute/1"},"name":"thread_name","ph":"M","pid":701,"tid":11},
    {"pid":701,"tid":3,"name":"f","ts":83705.5,"dur":1601.5,"ph":"X","args":{"tf_function_call":"notTraced-nonXla"}},
    {"pid":701,"tid":3,"name":"EagerLocalExecute: __inference_my_fn_2_22","ts":84891.096,"dur":342.627,"ph":"X","args":{}},
    {"pid":701,"tid":3,"name":"EagerLocalExecute: MatMul","ts":90000.0,"dur":10.0,"ph":"X","args":{}},
    {"pid":701,"tid":3,"name":"FunctionRun","ts":84966.774,"dur":22.902,"ph":"X","args":{"group_id":1,"id":"-71"}},
    {"pid":701,"tid":11,"name":"ExecutorState::Process","ts":85159.963,"dur":25.637,"ph":"X","args":{"group_id":1,"id":"-71","iter_num":0}},
    {"pid":701,"tid":12,"name":"_MklMatMul","ts":85067.057,"dur":52.67,"ph":"X","args":{"group_id":1,"is_eager":0},"sf":1},
    {"pid":701,"tid":11,"name":"BiasAdd","ts":85161.494,"dur":12.476,"ph":"X","args":{"group_id":1,"long_name":"BiasAdd:BiasAdd","is_eager":0}},
    {"pid":701,"tid":11,"name":"Relu","ts":85174.968,"dur":2.449,"ph":"X","args":{"group_id":1,"long_name":"Relu:Relu","is_eager":0}},
    {"pid":701,"tid":3,"name":"MatMul","ts":90001.0,"dur":8.0,"ph":"X","args":{"long_name":"MatMul:MatMul","is_eager":1}},
    {"pid":701,"tid":11,"name":"Mul","ph":"X","args":{"group_id":1,"long_name":"mul:Mul","is_eager":0}},
    {"pid":701,"tid":3,"name":"MatMul.2","ts":84900.0,"dur":40.0,"ph":"X","args":{"hlo_op":"MatMul.2","hlo_module":"a_inference_f_22"}}
  ]})json";

TEST(TfProfile, CallsRunsAndGraphNodes) {
  auto p = ParseTfProfile(kProfile);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->calls.size(), 1u);  // an eager op's EagerLocalExecute is no function call
  EXPECT_EQ(p->calls[0].graph, "__inference_my_fn_2_22");
  EXPECT_EQ(p->calls[0].function, "my_fn_2");
  EXPECT_EQ(p->calls[0].end_ns, 85233723);
  ASSERT_EQ(p->runs.size(), 1u);
  EXPECT_EQ(p->runs[0].group_id, 1);
  // Graph nodes only (is_eager 0): not the executor's own events, not the
  // eager MatMul; and a jit_compile=True function's XLA thunk.
  ASSERT_EQ(p->nodes.size(), 4u);
  EXPECT_TRUE(p->nodes[3].xla);
  EXPECT_EQ(p->nodes[3].op_type, "MatMul.2");
  EXPECT_EQ(p->nodes[3].hlo_module, "a_inference_f_22");
  EXPECT_FALSE(p->nodes[0].xla);
  EXPECT_EQ(p->nodes[0].op_type, "_MklMatMul");
  EXPECT_EQ(p->nodes[0].node, "MatMul");  // its long_name moved to stackFrames
  EXPECT_EQ(p->nodes[0].thread_id, 12);
  EXPECT_EQ(p->nodes[1].node, "BiasAdd");
  EXPECT_EQ(p->nodes[2].op_type, "Relu");
  EXPECT_EQ(p->dropped.at("node.no_time"), 1);
}

TEST(TfProfile, FunctionNames) {
  EXPECT_EQ(TfFunctionName("__inference_step_123"), "step");
  EXPECT_EQ(TfFunctionName("__inference_one_step_on_data_9"), "one_step_on_data");
  EXPECT_EQ(TfFunctionName("__inference_f"), "");
  EXPECT_EQ(TfFunctionName("MatMul"), "");
}

TEST(TfProfile, NotATraceIsAnError) {
  EXPECT_FALSE(ParseTfProfile("not json").ok());
  EXPECT_FALSE(ParseTfProfile("{\"other\": 1}").ok());
}

TEST(ProfileClock, PairsEndsAndRefinesToTheirMedian) {
  // Profiler clock = op clock + 1'000'000, each end off by a few µs.
  std::map<std::string, std::vector<int64_t>> profiler{{"tf::function:f", {1'010'000, 1'050'003, 1'090'000}}};
  std::map<std::string, std::vector<int64_t>> recorded{{"tf::function:f", {90'002, 10'001, 50'000}},
                                                       {"tf::function:g", {70'000}}};
  auto clock = PairClockByEnds(profiler, recorded, 100'000);
  ASSERT_TRUE(clock.ok());
  EXPECT_EQ(clock->paired, 3);
  EXPECT_NEAR(static_cast<double>(clock->offset_ns), 1'000'000.0, 3.0);
  // Nothing of the same name: no clock.
  EXPECT_FALSE(PairClockByEnds({{"tf::function:h", {5}}}, recorded, 100'000).ok());
}

using Span = std::pair<int64_t, int64_t>;

TEST(ProfileClock, LaysEventsInsideTheirOpOneAfterTheOther) {
  // Two events side by side on two threads, the clock 10 µs late: moved into
  // [1000, 2000], the second after the first, durations kept.
  auto placed = LayInside({{1100, 1300}, {1150, 1250}}, 100, 1000, 2000);
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0], (Span{1000, 1200}));
  EXPECT_EQ(placed[1], (Span{1200, 1300}));
  // Past the op's end: shifted back, then clamped.
  auto late = LayInside({{5000, 5600}}, 0, 1000, 1500);
  EXPECT_EQ(late[0], (Span{1000, 1500}));
}

}  // namespace
}  // namespace magneton
