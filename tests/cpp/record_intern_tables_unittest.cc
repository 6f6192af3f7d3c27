// Interning alone (src/record/intern_tables.h): dense ids, one row per key,
// keys equal only when every field is, and one id per key across threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "record/intern_tables.h"
#include "test_util.h"

namespace magneton::record {
namespace {

using testing::NewTestTrace;
using testing::TestTrace;

TEST(InternTables, StringsGetDenseIdsAndOneRowEach) {
  TestTrace t = NewTestTrace("strings.mtrace");
  InternTables intern(t.writer.get());
  EXPECT_EQ(intern.InternString("aten::add"), 0);
  EXPECT_EQ(intern.InternString("aten::mul"), 1);
  EXPECT_EQ(intern.InternString("aten::add"), 0);
  EXPECT_EQ(intern.InternString(""), 2);  // a string of its own, not "no string"
  EXPECT_EQ(intern.InternString("aten::Add"), 3);  // case counts
  const Trace trace = t.Close();
  EXPECT_EQ(trace.strings, (std::vector<std::string>{"aten::add", "aten::mul", "", "aten::Add"}));
}

TEST(InternTables, FramesAreOneOnlyWhenFileLineAndFunctionAre) {
  TestTrace t = NewTestTrace("frames.mtrace");
  InternTables intern(t.writer.get());
  const int64_t a = intern.InternString("a.py"), b = intern.InternString("b.py");
  const int64_t f = intern.InternString("f"), g = intern.InternString("g");
  const int64_t frame = intern.InternFrame(a, 10, f);
  EXPECT_EQ(frame, 0);
  EXPECT_EQ(intern.InternFrame(a, 10, f), frame);
  EXPECT_EQ(intern.InternFrame(a, 11, f), 1);  // another line
  EXPECT_EQ(intern.InternFrame(a, 10, g), 2);  // another function
  EXPECT_EQ(intern.InternFrame(b, 10, f), 3);  // another file
  EXPECT_EQ(intern.InternFrame(a, 11, f), 1);
  const Trace trace = t.Close();
  ASSERT_EQ(trace.frames.size(), 4u);
  EXPECT_EQ(trace.FrameText(0), "a.py:10:f");
  EXPECT_EQ(trace.FrameText(1), "a.py:11:f");
  EXPECT_EQ(trace.FrameText(2), "a.py:10:g");
  EXPECT_EQ(trace.FrameText(3), "b.py:10:f");
}

// Frames are found by a hash of their fields; two frames whose hashes
// collide are still two frames (the full key is compared).
TEST(InternTables, FramesWhoseHashesCollideStayApart) {
  TestTrace t = NewTestTrace("frame_collision.mtrace");
  InternTables intern(t.writer.get());
  // The hash is Mix(Mix(file, line), function): solve for the function id
  // that gives (1, 11, ?) the hash of (1, 10, 2).
  const uint64_t a = Mix(1, 10), b = Mix(1, 11);
  const uint64_t target = Mix(a, 2);
  const uint64_t function_b = (target ^ b) - 0x9e3779b97f4a7c15ULL - (b << 6) - (b >> 2);
  ASSERT_EQ(Mix(b, function_b), target);
  const int64_t first = intern.InternFrame(1, 10, 2);
  const int64_t second = intern.InternFrame(1, 11, static_cast<int64_t>(function_b));
  EXPECT_NE(first, second);
  EXPECT_EQ(intern.InternFrame(1, 10, 2), first);
  EXPECT_EQ(intern.InternFrame(1, 11, static_cast<int64_t>(function_b)), second);
}

TEST(InternTables, ACallPathIsItsFrameUnderItsCaller) {
  TestTrace t = NewTestTrace("call_paths.mtrace");
  InternTables intern(t.writer.get());
  const int64_t file = intern.InternString("m.py");
  const int64_t main_frame = intern.InternFrame(file, 1, intern.InternString("main"));
  const int64_t fwd_frame = intern.InternFrame(file, 2, intern.InternString("forward"));
  const int64_t outer = intern.InternCallPath(kNoId, main_frame);
  const int64_t inner = intern.InternCallPath(outer, fwd_frame);
  EXPECT_EQ(intern.InternCallPath(outer, fwd_frame), inner);
  // The same frame called from elsewhere (here: outermost) is another path.
  const int64_t alone = intern.InternCallPath(kNoId, fwd_frame);
  EXPECT_NE(alone, inner);
  EXPECT_NE(alone, outer);
  const Trace trace = t.Close();
  ASSERT_EQ(trace.call_paths.size(), 3u);
  EXPECT_EQ(trace.CallPathFrames(inner), (std::vector<std::string>{"m.py:1:main", "m.py:2:forward"}));
  EXPECT_EQ(trace.CallPathFrames(alone), (std::vector<std::string>{"m.py:2:forward"}));
}

TEST(InternTables, AScopeKeepsTheFirstModuleSeenThere) {
  TestTrace t = NewTestTrace("scopes.mtrace");
  InternTables intern(t.writer.get());
  const int64_t file = intern.InternString("m.py");
  const int64_t init_path = intern.InternCallPath(kNoId, intern.InternFrame(file, 3, intern.InternString("build")));
  const int64_t model = intern.InternScope(kNoId, "GPT2", "GPT2Model", kNoId, {});
  const int64_t block = intern.InternScope(model, "h.0", "Block", init_path, "{\"n\":1}");
  // Seen again, with other construction facts: the first are kept.
  EXPECT_EQ(intern.InternScope(model, "h.0", "Block", kNoId, "{\"n\":2}"), block);
  EXPECT_NE(intern.InternScope(model, "h.0", "OtherBlock", kNoId, {}), block);  // another class
  EXPECT_NE(intern.InternScope(kNoId, "h.0", "Block", kNoId, {}), block);       // another parent
  const Trace trace = t.Close();
  ASSERT_EQ(trace.scopes.size(), 4u);
  EXPECT_EQ(trace.ScopePath(block), "GPT2/h.0");
  EXPECT_EQ(trace.scopes[block].init_call_path_id, init_path);
  EXPECT_EQ(trace.scopes[block].init_args, "{\"n\":1}");
  EXPECT_EQ(trace.str(trace.scopes[block].type_id), "Block");
}

TEST(InternTables, ARuntimeStateIsItsValues) {
  TestTrace t = NewTestTrace("states.mtrace");
  InternTables intern(t.writer.get());
  const int64_t one = intern.InternRuntimeState({{"threads", "1"}, {"grad", "on"}});
  EXPECT_EQ(intern.InternRuntimeState({{"grad", "on"}, {"threads", "1"}}), one);  // order does not matter
  const int64_t two = intern.InternRuntimeState({{"threads", "2"}, {"grad", "on"}});
  const int64_t fewer = intern.InternRuntimeState({{"threads", "1"}});
  EXPECT_NE(two, one);
  EXPECT_NE(fewer, one);
  const Trace trace = t.Close();
  ASSERT_EQ(trace.runtime_states.size(), 3u);
  EXPECT_EQ(trace.runtime_states[two].values.at("threads"), "2");
  EXPECT_EQ(trace.runtime_states[fewer].values.size(), 1u);
}

// Hooks intern from every thread: each key still gets one id and one row,
// and ids stay dense.
TEST(InternTables, ThreadsInterningTheSameKeysAgreeOnTheirIds) {
  TestTrace t = NewTestTrace("threads.mtrace");
  InternTables intern(t.writer.get());
  constexpr int kKeys = 500, kThreads = 4;
  std::vector<std::vector<int64_t>> ids(kThreads, std::vector<int64_t>(kKeys, kNoId));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      std::vector<int> order(kKeys);
      for (int k = 0; k < kKeys; ++k) order[k] = k;
      std::shuffle(order.begin(), order.end(), std::mt19937(i));
      for (int k : order) ids[i][k] = intern.InternString("op" + std::to_string(k));
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(ids[i], ids[0]);
  const Trace trace = t.Close();
  ASSERT_EQ(trace.strings.size(), static_cast<size_t>(kKeys));
  for (int k = 0; k < kKeys; ++k) EXPECT_EQ(trace.str(ids[0][k]), "op" + std::to_string(k));
}

}  // namespace
}  // namespace magneton::record
