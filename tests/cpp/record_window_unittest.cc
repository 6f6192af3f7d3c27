// Windowed recording: the step schedule (record/window.h) and what the
// recorder writes for it — steps as `magneton::step` ops, the closed spans as
// one `magneton::unrecorded` op each, values forgotten across a gap, and the
// window's meta.
#include <gtest/gtest.h>

#include <set>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "record/window.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::TempPath;

TEST(WindowSchedule, ParsesThreeOrFourNonNegativeNumbers) {
  auto s = ParseWindowSchedule("5,1,3");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->wait, 5);
  EXPECT_EQ(s->warmup, 1);
  EXPECT_EQ(s->active, 3);
  EXPECT_EQ(s->repeat, 0);
  auto r = ParseWindowSchedule("0,0,2,4");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repeat, 4);
  EXPECT_EQ(FormatWindowSchedule(*r), "wait=0,warmup=0,active=2,repeat=4");
  for (const char* bad : {"", "5", "5,1", "5,1,0", "5,-1,3", "5,1,3,2,1", "a,b,c", "5,,3", "5,1,3,"}) {
    auto p = ParseWindowSchedule(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) EXPECT_NE(p.status().message().find("wait,warmup,active"), std::string::npos) << bad;
  }
}

TEST(WindowSchedule, ActiveStepsFollowTorchProfilersSchedule) {
  const WindowSchedule s{2, 1, 2, 2};  // cycles of 5 steps: 2 wait, 1 warm-up, 2 active; twice
  std::vector<int64_t> active;
  for (int64_t step = 0; step < 15; ++step) {
    if (StepIsActive(s, step)) active.push_back(step);
  }
  EXPECT_EQ(active, (std::vector<int64_t>{3, 4, 8, 9}));
  const WindowSchedule forever{1, 0, 1, 0};
  EXPECT_TRUE(StepIsActive(forever, 1001));
  EXPECT_FALSE(StepIsActive(forever, 1000));
}

TEST(RecordWindow, TheProgramsOwnStepsReplaceTheCountedOnes) {
  RecordWindow w(WindowSchedule{1, 0, 1, 0});
  EXPECT_FALSE(w.open());  // step 0 waits
  EXPECT_TRUE(w.OnStep(false));
  EXPECT_TRUE(w.open());
  EXPECT_EQ(w.step_source(), StepSource::kAuto);
  // The program calls magneton.step() beside its optimizer: its count rules.
  EXPECT_TRUE(w.OnStep(true));
  EXPECT_EQ(w.step(), 1);
  EXPECT_FALSE(w.OnStep(false));
  EXPECT_EQ(w.step(), 1);
  EXPECT_TRUE(w.OnStep(true));
  EXPECT_EQ(w.step(), 2);
  EXPECT_EQ(w.step_source(), StepSource::kExplicit);
  w.SetTimeGate(false);
  EXPECT_FALSE(w.open());
}

int64_t CountOps(const Trace& t, const std::string& name) {
  int64_t n = 0;
  for (const OpEvent& op : t.ops) n += t.str(op.name_id) == name;
  return n;
}

// One "step" of a fake engine: one op reading the same input value.
void RunStep(Recorder* rec, int64_t step) {
  static const std::vector<int64_t> shape = {4}, strides = {1};
  if (!rec->WindowOpen()) return;  // what a hook does
  rec->BeginOp(rec->InternString("aten::add"), kNoId);
  TensorView in{0x1000, 0, shape.data(), strides.data(), 1, "float32", "cpu", 0};
  TensorView out{0x2000 + static_cast<uint64_t>(step) * 64, 0, shape.data(), strides.data(), 1, "float32", "cpu", 0};
  rec->AddInput(0, in);
  rec->AddOutput(0, out);
  rec->EndOp("");
}

TEST(RecorderWindow, RecordsOnlyActiveStepsAndMarksWhatItLeftOut) {
  const std::string path = TempPath("window.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  ASSERT_TRUE(rec->ConfigureWindow("1,1,2,2", true).ok());  // steps 2,3 and 6,7 of 10
  EXPECT_FALSE(rec->WindowOpen());
  for (int64_t step = 0; step < 10; ++step) {
    RunStep(rec, step);
    rec->Step(true);
  }
  ASSERT_TRUE(Recorder::Stop().ok());
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(CountOps(*t, "aten::add"), 4);
  EXPECT_EQ(CountOps(*t, "magneton::step"), 4);  // the ends of steps 2, 3, 6, 7
  // Before the first window, between the two, and after the second to the stop.
  EXPECT_EQ(CountOps(*t, "magneton::unrecorded"), 3);
  for (const OpEvent& op : t->ops) EXPECT_TRUE(IsRecorderOp(*t, op) || t->str(op.name_id) == "aten::add");
  // Ids stay in start order.
  for (size_t i = 1; i < t->ops.size(); ++i) EXPECT_LE(t->ops[i - 1].start_ns, t->ops[i].start_ns) << i;
  // The input read in both windows is forgotten over the gap: no value
  // written while nothing watched passes for the one seen before.
  std::set<int64_t> inputs;
  for (const OpTensor& l : t->op_tensors) {
    if (l.role == TensorRole::kInput) inputs.insert(l.tensor_id);
  }
  EXPECT_EQ(inputs.size(), 2u);
  EXPECT_EQ(t->meta.extra.at("window.schedule"), "wait=1,warmup=1,active=2,repeat=2");
  EXPECT_EQ(t->meta.extra.at("window.steps"), "10");
  EXPECT_EQ(t->meta.extra.at("window.steps_recorded"), "4");
  EXPECT_EQ(t->meta.extra.at("window.step_source"), "magneton.step");
  EXPECT_EQ(t->meta.extra.at("window.configured"), "1");
}

TEST(RecorderWindow, WithoutAScheduleEveryStepIsRecordedAndMarked) {
  const std::string path = TempPath("steps.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  for (int64_t step = 0; step < 3; ++step) {
    RunStep(rec, step);
    EXPECT_TRUE(rec->Step(false));
  }
  ASSERT_TRUE(Recorder::Stop().ok());
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(CountOps(*t, "aten::add"), 3);
  EXPECT_EQ(CountOps(*t, "magneton::step"), 3);
  EXPECT_EQ(CountOps(*t, "magneton::unrecorded"), 0);
  EXPECT_EQ(t->meta.extra.at("window.step_source"), "auto");
  EXPECT_EQ(t->meta.extra.at("window.configured"), "0");
}

TEST(RecorderWindow, TheTimeGateClosesAndReopens) {
  const std::string path = TempPath("gate.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  ASSERT_TRUE(rec->ConfigureWindow("", false).ok());  // --start-after: closed at first
  RunStep(rec, 0);
  EXPECT_TRUE(rec->SetTimeGate(true));
  RunStep(rec, 1);
  EXPECT_FALSE(rec->SetTimeGate(false));  // --duration ran out
  RunStep(rec, 2);
  ASSERT_TRUE(Recorder::Stop().ok());
  auto t = ReadTrace(path);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(CountOps(*t, "aten::add"), 1);
  EXPECT_EQ(CountOps(*t, "magneton::unrecorded"), 2);  // before the gate opened, after it closed
}

TEST(RecorderWindow, ABadScheduleIsRefusedAndRecordsEverything) {
  const std::string path = TempPath("bad_window.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  EXPECT_FALSE(rec->ConfigureWindow("1,2", true).ok());
  EXPECT_TRUE(rec->WindowOpen());
  ASSERT_TRUE(Recorder::Stop().ok());
}

}  // namespace
}  // namespace magneton
