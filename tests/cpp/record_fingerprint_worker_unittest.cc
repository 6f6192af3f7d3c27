// The --values fingerprint thread (src/record/fingerprint_worker.h): a
// fingerprint is of the value as it was when the traced thread handed it
// over, however the program writes the buffer afterwards; views of a value
// still queued take its fingerprint (or its invariant part) once it is
// computed; the thread's work is written as recorder ops, the part after
// Stop asked for the rest marked "at_stop".
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "fingerprint/fingerprint.h"
#include "magneton/clock.h"
#include "record/cpu_bins.h"
#include "record/fingerprint_cache.h"
#include "record/fingerprint_worker.h"
#include "test_util.h"

namespace magneton::record {
namespace {

using testing::FingerprintRowsByTensor;
using testing::NewTestTrace;
using testing::TestTrace;

TensorView ViewOf(const float* element0, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  int64_t storage_offset = 0) {
  TensorView v;
  v.storage_addr = 0x1000;
  v.storage_offset = storage_offset;
  v.sizes = shape.data();
  v.strides = strides.data();
  v.ndim = static_cast<int32_t>(shape.size());
  v.dtype = "float32";
  v.device = "cpu";
  v.host_data = element0;
  return v;
}

// The program writes every buffer right after handing it over (the next op
// reuses the memory): the rows are the fingerprints of the values at the
// call, bit for bit what computing them in place gives. Enough values to
// wrap the ring several times, a strided slice, a reversed view (negative
// stride), an empty value and one too large to copy (computed in place).
TEST(FingerprintWorker, AFingerprintIsOfTheValueAtTheCallThoughItsBufferIsWrittenAfter) {
  TestTrace t = NewTestTrace("worker_values.mtrace");
  std::atomic<int64_t> next_op_id{0};
  FingerprintCache cache(t.writer.get(), &next_op_id);
  constexpr int64_t kElements = 64 * 1024;  // 256 KiB a value: 64 fill the ring
  constexpr int kValues = 200;
  std::vector<float> buffer(kElements);
  std::map<int64_t, std::string> expected;
  auto fill = [&](int seed) {
    for (int64_t i = 0; i < kElements; ++i) buffer[i] = static_cast<float>((i * 7919 + seed * 104729) % 1013) - 500.f;
  };
  auto hand_over = [&](int64_t id, const float* element0, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    TensorBuffer in_place{element0, DType::kFloat32, shape, strides};
    auto want = EncodeValueFingerprint(in_place);
    ASSERT_TRUE(want.ok());
    expected[id] = *want;
    EXPECT_TRUE(cache.FingerprintValue(id, ViewOf(element0, shape, strides), kNoId).has_value());
    std::memset(buffer.data(), 0xff, buffer.size() * sizeof(float));  // NaNs: any read after this shows
  };
  for (int k = 0; k < kValues; ++k) {
    fill(k);
    switch (k % 4) {
      case 0: hand_over(k, buffer.data(), {256, 256}, {256, 1}); break;
      case 1: hand_over(k, buffer.data() + 1, {256, 85}, {256, 3}); break;           // every third column
      case 2: hand_over(k, buffer.data() + kElements - 1, {kElements}, {-1}); break;  // reversed
      default: hand_over(k, buffer.data(), {64, 1024}, {1, 64}); break;              // transposed
    }
  }
  // None: nothing to copy, computed in place.
  fill(kValues);
  hand_over(kValues, buffer.data(), {0, 16}, {16, 1});
  // Larger than the copy bound: computed in place, after what was queued.
  std::vector<float> large((FingerprintWorker::kMaxCopyBytes / sizeof(float)) + 1024);
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<float>(i % 977) * 0.5f;
  {
    const std::vector<int64_t> shape{static_cast<int64_t>(large.size())}, strides{1};
    TensorBuffer in_place{large.data(), DType::kFloat32, shape, strides};
    expected[kValues + 1] = EncodeValueFingerprint(in_place).value();
    EXPECT_TRUE(cache.FingerprintValue(kValues + 1, ViewOf(large.data(), shape, strides), kNoId).has_value());
  }
  cache.Finish();
  // Each either on the thread or, when it was behind (the ring full), in
  // place; the empty and the large one in place.
  EXPECT_EQ(cache.computed_off_thread() + cache.computed_in_place(), kValues + 2);
  EXPECT_GE(cache.computed_in_place(), 2);
  EXPECT_GT(cache.computed_off_thread(), 0);
  ASSERT_TRUE(t.writer->Close().ok());
  const std::map<int64_t, std::string> rows = FingerprintRowsByTensor(t.path);
  ASSERT_EQ(rows.size(), expected.size());
  for (const auto& [id, want] : expected) EXPECT_EQ(rows.at(id), want) << "value " << id;
}

// A view made while its value's fingerprint is still queued: one that reads
// the value's elements in its own order takes the fingerprint, one that
// permutes them takes the invariant part, each once it is computed, and
// reads the value's copy instead of copying the elements again.
TEST(FingerprintWorker, AViewOfAValueStillQueuedTakesWhatItsValueGets) {
  TestTrace t = NewTestTrace("worker_views.mtrace");
  std::atomic<int64_t> next_op_id{0};
  FingerprintCache cache(t.writer.get(), &next_op_id);
  std::vector<float> data(4 * 6 * 8);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((i * 31) % 17) - 8.f;
  const std::vector<int64_t> shape{4, 6, 8}, strides{48, 8, 1};
  const std::vector<int64_t> unsqueezed_shape{1, 4, 6, 8}, unsqueezed_strides{192, 48, 8, 1};
  const std::vector<int64_t> permuted_shape{8, 4, 6}, permuted_strides{1, 48, 8};
  ASSERT_TRUE(cache.FingerprintValue(0, ViewOf(data.data(), shape, strides), kNoId).has_value());
  EXPECT_FALSE(cache.FingerprintValue(1, ViewOf(data.data(), unsqueezed_shape, unsqueezed_strides), 0).has_value());
  ASSERT_TRUE(cache.FingerprintValue(2, ViewOf(data.data(), permuted_shape, permuted_strides), 0).has_value());
  cache.Finish();
  EXPECT_EQ(cache.fingerprints_reused(), 1);
  EXPECT_EQ(cache.invariants_reused(), 1);
  EXPECT_EQ(cache.copies_shared(), 1);  // the permuted view read the value's copy
  ASSERT_TRUE(t.writer->Close().ok());
  const std::map<int64_t, std::string> rows = FingerprintRowsByTensor(t.path);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.at(1), rows.at(0));
  TensorBuffer permuted{data.data(), DType::kFloat32, permuted_shape, permuted_strides};
  EXPECT_EQ(rows.at(2), EncodeValueFingerprint(permuted).value());
  EXPECT_NE(rows.at(2), rows.at(0));
}

struct Blocking {
  FingerprintWorker* worker = nullptr;
  std::atomic<int> runs{0};
  std::atomic<bool> release{false};
  std::vector<std::pair<int64_t, bool>> ran;  // (tensor id, an alias), in order
};

void RunWhenReleased(const FingerprintWorker::Job& job, TraceWriter*, void* context) {
  auto* b = static_cast<Blocking*>(context);
  b->runs.fetch_add(1);
  while (!b->release.load()) std::this_thread::yield();
  b->ran.emplace_back(job.tensor_id, job.data == nullptr);
}

// A fingerprint the traced thread has in hand (computed in place, or a kept
// one a view takes) is written after the jobs queued before it: a value a
// nested op wrote is fingerprinted again under the same id, and the later
// row must be the one that stays. With nothing queued it is written at once.
TEST(FingerprintWorker, WhatTheTracedThreadHasInHandIsWrittenAfterWhatIsQueued) {
  TestTrace t = NewTestTrace("worker_order.mtrace");
  std::atomic<int64_t> next_op_id{0};
  Blocking blocking;
  FingerprintWorker worker(t.writer.get(), &next_op_id, &RunWhenReleased, &blocking);
  const float value[4] = {1, 2, 3, 4};
  FingerprintWorker::Job queued;
  queued.tensor_id = 7;
  queued.result = std::make_shared<KeptFingerprint>();
  queued.shape = {4};
  ASSERT_TRUE(worker.PushCopy(queued, value, sizeof(float)));
  FingerprintWorker::Job in_hand;
  in_hand.tensor_id = 7;
  in_hand.result = std::make_shared<KeptFingerprint>();
  worker.WriteInOrder(in_hand);
  EXPECT_TRUE(blocking.ran.empty()) << "not before the queued one";
  blocking.release = true;
  worker.Drain();
  EXPECT_EQ(blocking.ran, (std::vector<std::pair<int64_t, bool>>{{7, false}, {7, true}}));
  in_hand.tensor_id = 8;
  worker.WriteInOrder(in_hand);  // nothing queued: at once, on this thread
  EXPECT_EQ(blocking.ran.back(), (std::pair<int64_t, bool>{8, true}));
  worker.Finish();
  t.Close();
}

// While the thread is behind, the ring fills; then PushCopy takes nothing
// and says so (the traced thread computes in place, never waits), and takes
// copies again once the thread has caught up. Every job taken runs.
TEST(FingerprintWorker, AFullRingTakesNoMoreCopiesUntilTheThreadCatchesUp) {
  TestTrace t = NewTestTrace("worker_full.mtrace");
  std::atomic<int64_t> next_op_id{0};
  Blocking blocking;
  FingerprintWorker worker(t.writer.get(), &next_op_id, &RunWhenReleased, &blocking);
  std::vector<float> value(256, 1.f);  // 1 KiB a copy
  auto push = [&] {
    FingerprintWorker::Job job;
    job.result = std::make_shared<KeptFingerprint>();
    job.shape = {256};
    return worker.PushCopy(job, value.data(), sizeof(float));
  };
  int64_t taken = 0;
  while (push()) ++taken;
  EXPECT_EQ(taken, static_cast<int64_t>(FingerprintWorker::kRingBytes / 1024));
  blocking.release = true;
  worker.Drain();
  EXPECT_EQ(worker.jobs_run(), taken);
  EXPECT_TRUE(push());
  worker.Finish();
  EXPECT_EQ(worker.jobs_run(), taken + 1);
  // Too large to copy at all.
  std::vector<float> large(FingerprintWorker::kMaxCopyBytes / sizeof(float) + 1);
  FingerprintWorker::Job job;
  job.result = std::make_shared<KeptFingerprint>();
  job.shape = {static_cast<int64_t>(large.size())};
  EXPECT_FALSE(worker.PushCopy(job, large.data(), sizeof(float)));
  t.Close();
}

// A view job reads its value's copy however much is copied after it: the
// copy stays in the ring until the view's job is done (the value's own job
// done long before), and the ring takes no copy over it meanwhile. Once the
// view is done the copy is freed, and a later view copies for itself.
struct HeldView {
  std::atomic<bool> view_queued{false}, view_running{false}, release{false};
  std::atomic<int> intact{-1};
};

constexpr int64_t kValueId = 1;
constexpr int64_t kViewId = 2;

void RunHoldingTheView(const FingerprintWorker::Job& job, TraceWriter*, void* context) {
  auto* h = static_cast<HeldView*>(context);
  // The value's job waits for the view to be queued: done before, it would
  // free its copy, and the view would rightly copy for itself (PushView false).
  if (job.tensor_id == kValueId) {
    while (!h->view_queued.load()) std::this_thread::yield();
    return;
  }
  if (job.tensor_id != kViewId) return;
  h->view_running = true;
  while (!h->release.load()) std::this_thread::yield();
  // The value was 16 x 16 of i; the view is its transpose.
  const auto* v = static_cast<const float*>(job.data);
  int ok = 1;
  for (int64_t r = 0; r < 16; ++r) {
    for (int64_t c = 0; c < 16; ++c) ok &= v[r * job.strides[0] + c * job.strides[1]] == static_cast<float>(c * 16 + r);
  }
  h->intact = ok;
}

TEST(FingerprintWorker, AViewReadsItsValuesCopyUntilItIsDone) {
  TestTrace t = NewTestTrace("worker_view_pin.mtrace");
  std::atomic<int64_t> next_op_id{0};
  HeldView held;
  FingerprintWorker worker(t.writer.get(), &next_op_id, &RunHoldingTheView, &held, /*idle_class=*/false);
  std::vector<float> value(256);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<float>(i);
  FingerprintWorker::Job base;
  base.tensor_id = kValueId;
  base.result = std::make_shared<KeptFingerprint>();
  base.shape = {16, 16};
  const std::shared_ptr<KeptFingerprint> base_kept = base.result;
  ASSERT_TRUE(worker.PushCopy(base, value.data(), sizeof(float)));
  ASSERT_NE(base_kept->copy_element0, nullptr);
  std::fill(value.begin(), value.end(), -1.f);  // the program writes its buffer: only the copy has the value
  auto view_of_base = [&] {
    FingerprintWorker::Job view;
    view.tensor_id = kViewId;
    view.result = std::make_shared<KeptFingerprint>();
    view.shape = {16, 16};
    view.strides = {1, 16};
    return view;
  };
  FingerprintWorker::Job view = view_of_base();
  const bool queued = worker.PushView(std::move(view), *base_kept);
  held.view_queued = true;
  ASSERT_TRUE(queued);
  while (!held.view_running.load()) std::this_thread::yield();  // the value's job is done
  // Copies until the ring takes no more: none of them over the value's copy.
  // Copies of the value's size: the ring's last one would start where the
  // value's copy lies, were that freed.
  std::vector<float> other(256, 7.f);
  int64_t taken = 0;
  FingerprintWorker::Job job;
  job.tensor_id = 3;
  job.result = std::make_shared<KeptFingerprint>();
  job.shape = {256};
  while (worker.PushCopy(job, other.data(), sizeof(float))) ++taken;
  EXPECT_EQ(taken, static_cast<int64_t>(FingerprintWorker::kRingBytes / 1024) - 1) << "all but the value's copy";
  held.release = true;
  worker.Drain();
  EXPECT_EQ(held.intact.load(), 1) << "the view read another copy's bytes";
  // Freed with the view's job: a view made now copies its elements itself.
  FingerprintWorker::Job late = view_of_base();
  EXPECT_FALSE(worker.PushView(std::move(late), *base_kept));
  EXPECT_NE(late.result, nullptr) << "a refused job is left to the caller";
  worker.Finish();
  t.Close();
}

// Every job reads the copy it was given, intact, however the ring wraps and
// whatever aliases (which hold no copy) lie between: copies of many sizes,
// the thread running beside the pushes, each copy checked against its value.
struct Checking {
  std::atomic<int64_t> copies{0}, aliases{0}, torn{0};
};

float PatternAt(int64_t id, int64_t i) { return static_cast<float>((id * 131 + i * 7) % 4093); }

void RunAndCheck(const FingerprintWorker::Job& job, TraceWriter*, void* context) {
  auto* c = static_cast<Checking*>(context);
  if (!job.data) {
    c->aliases.fetch_add(1);
    return;
  }
  const auto* v = static_cast<const float*>(job.data);
  for (int64_t i = 0; i < job.shape[0]; ++i) {
    if (v[i] != PatternAt(job.tensor_id, i)) {
      c->torn.fetch_add(1);
      break;
    }
  }
  c->copies.fetch_add(1);
}

TEST(FingerprintWorker, EveryCopyIsReadIntactAsTheRingWraps) {
  TestTrace t = NewTestTrace("worker_wrap.mtrace");
  std::atomic<int64_t> next_op_id{0};
  Checking checking;
  // A normal thread: it must make progress however busy the machine is.
  FingerprintWorker worker(t.writer.get(), &next_op_id, &RunAndCheck, &checking, /*idle_class=*/false);
  std::vector<float> value(64 * 1024);
  int64_t pushed = 0, aliases = 0;
  uint64_t rng = 12345;
  for (int64_t id = 0; id < 6000; ++id) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t n = 1 + static_cast<int64_t>((rng >> 33) % value.size());
    for (int64_t i = 0; i < n; ++i) value[static_cast<size_t>(i)] = PatternAt(id, i);
    FingerprintWorker::Job job;
    job.tensor_id = id;
    job.result = std::make_shared<KeptFingerprint>();
    job.shape = {n};
    // A full ring takes nothing: wait for the thread to free some.
    while (!worker.PushCopy(job, value.data(), sizeof(float))) std::this_thread::yield();
    ++pushed;
    if (id % 3 == 0) {
      job.tensor_id = -id;
      worker.WriteInOrder(job);
      ++aliases;
    }
  }
  worker.Finish();
  EXPECT_EQ(checking.copies.load(), pushed);
  EXPECT_EQ(checking.aliases.load(), aliases);
  EXPECT_EQ(checking.torn.load(), 0);
  t.Close();
}

// A Drain waits for what was queued before it, not for jobs that threads
// still recording queue meanwhile (a flush while the recording runs: those
// threads kept the queue from ever emptying, and the flush never returned).
// Told without timing: the first job runs until the Drain has raised the
// thread to the normal class (which it does after counting what to wait
// for), then queues a second job that waits for the Drain to return. The old
// wait for an empty queue waited for that second job: each waited for the
// other until the second job's deadline.
struct DrainScript {
  FingerprintWorker* worker = nullptr;
  std::atomic<bool> drained{false};
  std::atomic<bool> second_saw_drained{false};
  std::atomic<int> runs{0};
};

void RunDrainScript(const FingerprintWorker::Job& job, TraceWriter*, void* context) {
  auto* d = static_cast<DrainScript*>(context);
  d->runs.fetch_add(1);
  if (job.tensor_id == 1) {
    while (sched_getscheduler(0) != SCHED_OTHER) std::this_thread::yield();
    FingerprintWorker::Job second;
    second.tensor_id = 2;
    second.result = std::make_shared<KeptFingerprint>();
    d->worker->WriteInOrder(second);  // this job is still queued: the second waits behind it
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!d->drained.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  d->second_saw_drained = d->drained.load();
}

TEST(FingerprintWorker, ADrainWaitsForWhatWasQueuedBeforeItOnly) {
  TestTrace t = NewTestTrace("worker_drain.mtrace");
  std::atomic<int64_t> next_op_id{0};
  DrainScript script;
  FingerprintWorker worker(t.writer.get(), &next_op_id, &RunDrainScript, &script);
  script.worker = &worker;
  const float value[4] = {1, 2, 3, 4};
  FingerprintWorker::Job first;
  first.tensor_id = 1;
  first.result = std::make_shared<KeptFingerprint>();
  first.shape = {4};
  ASSERT_TRUE(worker.PushCopy(first, value, sizeof(float)));
  if (worker.idle_class() != 1) {
    worker.Finish();
    GTEST_SKIP() << "the idle scheduling class was refused here (" << -worker.idle_class()
                 << "): the script needs the Drain's change of class to tell its moment";
  }
  worker.Drain();
  script.drained = true;
  worker.Finish();
  EXPECT_EQ(script.runs.load(), 2);
  EXPECT_TRUE(script.second_saw_drained.load()) << "the Drain waited for a job queued after it";
  t.Close();
}

// The thread's CPU time, not its wall time (it is preempted whenever another
// thread wants its core): each 1 ms bin of wall time is written as one
// interval of its jobs' CPU time ending where the last of them ended.
struct Interval {
  int64_t start, end;
  bool at_stop;
  bool operator==(const Interval&) const = default;
};

std::vector<Interval> Binned(const std::vector<std::pair<int64_t, int64_t>>& jobs, int64_t at_stop_from) {
  std::vector<Interval> out;
  CpuBins bins([&](int64_t start, int64_t end, bool at_stop) { out.push_back({start, end, at_stop}); });
  for (const auto& [end_ns, cpu_ns] : jobs) bins.Add(end_ns, cpu_ns, at_stop_from);
  bins.Flush(at_stop_from);
  return out;
}

TEST(CpuBins, EachBinIsItsJobsCpuTimeEndingWhereTheLastOfThemEnded) {
  constexpr int64_t kNever = INT64_MAX;
  // Two jobs in bin 1, one in bin 2.
  EXPECT_EQ(Binned({{1'000'100, 50'000}, {1'000'500, 100'000}, {2'300'000, 200'000}}, kNever),
            (std::vector<Interval>{{850'500, 1'000'500, false}, {2'100'000, 2'300'000, false}}));
  // A job preempted for most of a bin: only its CPU time.
  EXPECT_EQ(Binned({{5'000'000, 10'000}}, kNever), (std::vector<Interval>{{4'990'000, 5'000'000, false}}));
  // Intervals never overlap: a bin's CPU time reaching back before the last
  // interval's end starts at that end.
  EXPECT_EQ(Binned({{1'900'000, 100'000}, {2'000'000, 300'000}}, kNever),
            (std::vector<Interval>{{1'800'000, 1'900'000, false}, {1'900'000, 2'000'000, false}}));
  // No CPU time: nothing written.
  EXPECT_TRUE(Binned({{3'000'000, 0}}, kNever).empty());
}

TEST(CpuBins, WhatLiesAfterStopAskedForTheRestIsAtStop) {
  EXPECT_EQ(Binned({{3'100'000, 100'000}}, 3'050'000),
            (std::vector<Interval>{{3'000'000, 3'050'000, false}, {3'050'000, 3'100'000, true}}));
  EXPECT_EQ(Binned({{3'100'000, 20'000}}, 3'050'000), (std::vector<Interval>{{3'080'000, 3'100'000, true}}));
  EXPECT_EQ(Binned({{3'100'000, 20'000}}, 3'200'000), (std::vector<Interval>{{3'080'000, 3'100'000, false}}));
}

// The fingerprint thread writes its work as recorder ops at the top of its
// own thread: no more time than it ran, none overlapping, the work after
// Finish began marked at_stop.
void BurnTwoMilliseconds(const FingerprintWorker::Job&, TraceWriter*, void*) {
  const int64_t until = ThreadCpuNowNs() + 2'000'000;
  while (ThreadCpuNowNs() < until) {
  }
}

TEST(FingerprintWorker, ItsWorkIsRecorderOpsOnItsOwnThread) {
  TestTrace t = NewTestTrace("worker_ops.mtrace");
  t.writer->AppendString(0, std::string(kFingerprintOpName));
  std::atomic<int64_t> next_op_id{100};
  FingerprintWorker worker(t.writer.get(), &next_op_id, &BurnTwoMilliseconds, nullptr);
  worker.set_span_name_id(0);
  const float value[4] = {1, 2, 3, 4};
  const int64_t began = MonotonicNowNs();
  for (int k = 0; k < 4; ++k) {
    FingerprintWorker::Job job;
    job.result = std::make_shared<KeptFingerprint>();
    job.shape = {4};
    ASSERT_TRUE(worker.PushCopy(job, value, sizeof(float)));
  }
  const int64_t finish_began = MonotonicNowNs();
  worker.Finish();
  const int64_t ended = MonotonicNowNs();
  EXPECT_EQ(worker.jobs_run(), 4);
  const Trace trace = t.Close();
  ASSERT_FALSE(trace.ops.empty());
  int64_t total_ns = 0, last_end = 0;
  for (const OpEvent& op : trace.ops) {
    EXPECT_EQ(op.name_id, 0);
    EXPECT_EQ(op.parent_id, kNoId);
    EXPECT_GE(op.id, 100);
    EXPECT_NE(op.thread_id, 0);
    EXPECT_EQ(op.thread_id, trace.ops[0].thread_id);
    EXPECT_LT(op.start_ns, op.end_ns);
    EXPECT_GE(op.start_ns, last_end) << "ops of one thread never overlap";
    EXPECT_GE(op.start_ns, began);
    EXPECT_LE(op.end_ns, ended);
    if (op.args.str() == R"({"at_stop":true})") {
      EXPECT_GE(op.start_ns, finish_began);
    } else {
      EXPECT_EQ(op.args.str(), "");
    }
    last_end = op.end_ns;
    total_ns += op.end_ns - op.start_ns;
  }
  EXPECT_GE(total_ns, 4 * 2'000'000 - CpuBins::kBinNs) << "about the CPU time it ran";
  EXPECT_LE(total_ns, 4 * 2'000'000 + 1'000'000);
}

}  // namespace
}  // namespace magneton::record
