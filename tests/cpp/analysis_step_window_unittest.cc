// Windows of equal step counts (analysis/step_window.h): the side with more
// recorded steps is cut after the other's count, with its links.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "analysis/step_window.h"

namespace magneton::analysis {
namespace {

// `steps` steps of one op each (reading the previous step's output), each
// ended by a magneton::step marker.
Trace Steps(int steps, FingerprintMap* fps) {
  Trace t;
  t.meta.extra["window.configured"] = "1";
  t.strings = {"aten::mul", "magneton::step"};
  int64_t time = 0;
  for (int s = 0; s < steps; ++s) {
    OpEvent op;
    op.id = static_cast<int64_t>(t.ops.size());
    op.name_id = 0;
    op.start_ns = time;
    op.end_ns = time += 100;
    t.ops.push_back(op);
    TensorMeta out;
    out.id = s;
    out.producer_op_id = op.id;
    t.tensors.push_back(out);
    if (s > 0) t.op_tensors.push_back({op.id, TensorRole::kInput, 0, s - 1});
    t.op_tensors.push_back({op.id, TensorRole::kOutput, 0, s});
    (*fps)[s] = Fingerprint{};
    OpEvent marker;
    marker.id = static_cast<int64_t>(t.ops.size());
    marker.name_id = 1;
    marker.start_ns = marker.end_ns = time;
    t.ops.push_back(marker);
  }
  std::sort(t.op_tensors.begin(), t.op_tensors.end(), [](const OpTensor& x, const OpTensor& y) {
    return std::tie(x.op_id, x.role, x.slot) < std::tie(y.op_id, y.role, y.slot);
  });
  return t;
}

TEST(StepWindow, TheLongerWindowIsCutToTheShortersStepCount) {
  FingerprintMap fa, fb;
  Trace a = Steps(5, &fa), b = Steps(3, &fb);
  EXPECT_EQ(RecordedSteps(a), 5);
  const std::string note = EqualizeSteps(a, fa, b, fb);
  EXPECT_NE(note.find("5 recorded steps and B's 3"), std::string::npos) << note;
  EXPECT_EQ(RecordedSteps(a), 3);
  EXPECT_EQ(a.ops.size(), 6u);
  EXPECT_EQ(b.ops.size(), 6u);
  for (const OpTensor& l : a.op_tensors) EXPECT_LT(l.op_id, 6);
  EXPECT_EQ(fa.size(), 3u);  // the dropped steps' values are not matched against
  EXPECT_EQ(fb.size(), 3u);
}

TEST(StepWindow, EqualOrUnmarkedWindowsAreLeftAlone) {
  FingerprintMap fa, fb, fc;
  Trace a = Steps(3, &fa), b = Steps(3, &fb);
  EXPECT_EQ(EqualizeSteps(a, fa, b, fb), "");
  EXPECT_EQ(a.ops.size(), 6u);
  // A whole run (no window) is never cut: its steps are its work.
  Trace whole = Steps(5, &fc);
  whole.meta.extra["window.configured"] = "0";
  EXPECT_EQ(EqualizeSteps(whole, fc, a, fa), "");
  EXPECT_EQ(RecordedSteps(whole), 5);
  Trace unmarked = Steps(2, &fc);
  std::erase_if(unmarked.ops, [&](const OpEvent& op) { return unmarked.str(op.name_id) == "magneton::step"; });
  EXPECT_EQ(EqualizeSteps(a, fa, unmarked, fc), "");
  EXPECT_EQ(a.ops.size(), 6u);
}

}  // namespace
}  // namespace magneton::analysis
