// Stopping a recording while other threads are inside hook calls: Stop waits
// for every Recorder::Ref in flight, an op begun under one recording and
// ended after it is dropped, and every op that is written is whole. Meant to
// run under ThreadSanitizer and AddressSanitizer (CONTRIBUTING.md), where a
// hook touching a freed recorder is a reported error, not a lucky read.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "magneton/c_api.h"
#include "fingerprint/fingerprint_map.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "test_util.h"

namespace magneton {
namespace {

// Op arguments as every hook writes them (trace/op_args.h): JSON objects.
constexpr const char* kApiArgs = R"({"via":"api"})";
constexpr const char* kCapiArgs = R"({"via":"capi"})";

using testing::TempPath;

constexpr int kApiWorkers = 2;   // through Recorder::Ref, split like the torch hook
constexpr int kCapiWorkers = 2;  // through the C ABI, one Ref per call
constexpr int kWorkers = kApiWorkers + kCapiWorkers;

// One worker's tensors: two inputs and an output, with real values so that
// --values fingerprints read memory (and ASan would see a stale read).
struct Buffers {
  std::array<float, 16> a{}, b{}, out{};
  std::vector<int64_t> shape{4, 4}, strides{4, 1};
  TensorView View(const std::array<float, 16>& data, int64_t version) const {
    TensorView v{reinterpret_cast<uintptr_t>(data.data()), 0, shape.data(), strides.data(), 2, "float32", "cpu",
                 version};
    v.host_data = data.data();
    return v;
  }
  magneton_tensor CView(const std::array<float, 16>& data, int64_t version) const {
    return {reinterpret_cast<uintptr_t>(data.data()), 0, 2, shape.data(), strides.data(), "float32", "cpu", version,
            data.data()};
  }
};

// Shared by the workers and the thread that starts and stops recordings.
struct Stress {
  std::atomic<bool> done{false};
  // The cycle whose recording is active (set after Start returned, cleared
  // before Stop), or -1.
  std::atomic<int> cycle{-1};
  // Per worker: the last cycle in which it completed an op begun after that
  // cycle's recording was active, i.e. one that must be in that trace.
  std::array<std::atomic<int>, kWorkers> written{};
  std::array<std::atomic<int64_t>, kWorkers> dropped{};  // ops cut by a stop, seen by API workers
};

// Between recordings. Not a busy loop: the trace writer runs at idle
// priority, and Stop waits for it to commit.
void Idle() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

// Like the torch hook: a Ref for the begin callback and another for the end
// callback, with only the generation carried between them.
void ApiWorker(Stress& s, int w) {
  Buffers buf;
  for (int64_t i = 1; !s.done.load(std::memory_order_relaxed); ++i) {
    const int cycle = s.cycle.load(std::memory_order_acquire);
    uint64_t generation = 0;
    {
      Recorder::Ref rec;
      if (!rec) {
        Idle();  // inside a null Ref on purpose: it must not delay a Stop
        continue;
      }
      generation = rec->generation();
      rec->BeginOp(rec->InternString("stop::api"), kNoId);
      rec->AddInput(0, buf.View(buf.a, i));
    }
    buf.out[static_cast<size_t>(i % 16)] = static_cast<float>(i);  // the op's work, outside any Ref
    {
      Recorder::Ref rec;
      if (!rec || rec->generation() != generation) {
        s.dropped[w].fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      rec->AddInput(1, buf.View(buf.b, i));
    }
    {
      Recorder::Ref rec;
      if (!rec || rec->generation() != generation) {
        s.dropped[w].fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      rec->AddOutput(0, buf.View(buf.out, i));
      rec->EndOp(kApiArgs);
    }
    if (cycle >= 0) s.written[w].store(cycle, std::memory_order_release);
  }
}

void CapiWorker(Stress& s, int w) {
  Buffers buf;
  for (int64_t i = 1; !s.done.load(std::memory_order_relaxed); ++i) {
    const int cycle = s.cycle.load(std::memory_order_acquire);
    magneton_tensor a = buf.CView(buf.a, i), b = buf.CView(buf.b, i), out = buf.CView(buf.out, i);
    magneton_push_scope("blk.0", "Block");
    const int64_t id = magneton_begin_op("stop::capi");
    magneton_pop_scope();
    magneton_add_input(0, &a);
    magneton_add_input(1, &b);
    buf.out[static_cast<size_t>(i % 16)] = static_cast<float>(i);
    magneton_add_output(0, &out);
    if (i % 64 == 0) magneton_set_config("runtime.worker", "capi", "runtime");
    magneton_end_op(kCapiArgs);
    if (id < 0) Idle();
    if (cycle >= 0 && id >= 0) s.written[w].store(cycle, std::memory_order_release);
  }
}

// Threads that live for a few ops, so slots are claimed and given back while
// recordings start and stop.
void ShortLivedWorker() {
  Buffers buf;
  for (int64_t i = 1; i <= 50; ++i) {
    magneton_tensor a = buf.CView(buf.a, i), out = buf.CView(buf.out, i);
    magneton_begin_op("stop::capi");
    magneton_add_input(0, &a);
    magneton_add_input(1, &a);
    magneton_add_output(0, &out);
    magneton_end_op(kCapiArgs);
  }
}

struct Links {
  std::set<int32_t> inputs, outputs;
  int count = 0;
};

TEST(RecorderStop, StopWhileFourThreadsAreInsideOps) {
  Stress s;
  for (auto& w : s.written) w.store(-1);
  std::vector<std::thread> workers;
  for (int w = 0; w < kApiWorkers; ++w) workers.emplace_back(ApiWorker, std::ref(s), w);
  for (int w = kApiWorkers; w < kWorkers; ++w) workers.emplace_back(CapiWorker, std::ref(s), w);

  constexpr int kCycles = 24;
  std::vector<std::string> paths;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::string path = TempPath("stop" + std::to_string(cycle) + ".mtrace");
    paths.push_back(path);
    const bool values = cycle % 2 == 1;
    if (cycle % 3 == 2) {
      ASSERT_EQ(magneton_start(path.c_str(), "stop", "native-c", 0, values), MAGNETON_OK) << magneton_last_error();
    } else {
      RecorderOptions options;
      options.record_values = values;
      Status st = Recorder::Start(path, RunMetadata{}, options);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    s.cycle.store(cycle, std::memory_order_release);
    std::vector<std::thread> short_lived;
    for (int i = 0; i < 2; ++i) short_lived.emplace_back(ShortLivedWorker);
    // Stop only once every worker has a whole op in this trace; the workers
    // keep going, so the stop lands in the middle of their next ops.
    for (int w = 0; w < kWorkers; ++w) {
      while (s.written[w].load(std::memory_order_acquire) < cycle) std::this_thread::yield();
    }
    s.cycle.store(-1, std::memory_order_release);
    if (cycle % 3 == 1) {
      ASSERT_EQ(magneton_stop(), MAGNETON_OK) << magneton_last_error();
    } else {
      Status st = Recorder::Stop();
      ASSERT_TRUE(st.ok()) << st.message();
    }
    for (auto& t : short_lived) t.join();
  }
  s.done.store(true);
  for (auto& t : workers) t.join();
  // The short-lived threads may have outlived the last Stop: nothing recording now.
  EXPECT_FALSE(Recorder::IsRecording());

  for (int cycle = 0; cycle < kCycles; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    auto trace = ReadTrace(paths[static_cast<size_t>(cycle)]);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    std::map<int64_t, Links> links;
    for (const OpTensor& l : trace->op_tensors) {
      Links& k = links[l.op_id];
      (l.role == TensorRole::kInput ? k.inputs : k.outputs).insert(l.slot);
      ++k.count;
    }
    std::set<int64_t> api_threads, capi_threads, fingerprint_threads;
    for (const OpEvent& op : trace->ops) {
      const std::string& name = trace->str(op.name_id);
      if (name == kFingerprintOpName) {
        // Written with the op it belongs to (the copy), or the fingerprint
        // thread's work, top-level on a thread of its own.
        if (op.parent_id == kNoId) fingerprint_threads.insert(op.thread_id);
        continue;
      }
      ASSERT_TRUE(name == "stop::api" || name == "stop::capi") << name;
      // Whole: both inputs, the output, its interval and args.
      const Links& k = links[op.id];
      EXPECT_EQ(k.inputs, (std::set<int32_t>{0, 1})) << "op " << op.id;
      EXPECT_EQ(k.outputs, (std::set<int32_t>{0})) << "op " << op.id;
      EXPECT_EQ(k.count, 3) << "op " << op.id;
      EXPECT_GE(op.end_ns, op.start_ns);
      EXPECT_GT(op.start_ns, 0);
      EXPECT_EQ(op.args, name == "stop::api" ? kApiArgs : kCapiArgs);
      EXPECT_EQ(op.parent_id, kNoId);
      (name == "stop::api" ? api_threads : capi_threads).insert(op.thread_id);
    }
    for (int64_t tid : fingerprint_threads) {
      EXPECT_FALSE(api_threads.count(tid) || capi_threads.count(tid)) << "a recorder op at the top of a traced thread";
    }
    // Each worker finished an op while this recording was active.
    EXPECT_GE(api_threads.size(), static_cast<size_t>(kApiWorkers));
    EXPECT_GE(capi_threads.size(), static_cast<size_t>(kCapiWorkers));
    if (cycle % 2 == 1) {
      auto fps = LoadFingerprints(paths[static_cast<size_t>(cycle)]);
      ASSERT_TRUE(fps.ok()) << fps.status().message();
      EXPECT_FALSE(fps->empty());
    }
  }
}

TEST(RecorderStop, StopWaitsForEveryRefInFlight) {
  std::string path = TempPath("inflight.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  std::atomic<int> inside{0};
  std::atomic<bool> stopping{false}, stopped{false};
  std::array<bool, kWorkers> stopped_while_inside{};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      Buffers buf;
      Recorder::Ref rec;
      if (!rec) {
        ADD_FAILURE() << "no recording inside worker " << w;
        inside.fetch_add(1);
        return;
      }
      rec->BeginOp(rec->InternString("stop::inflight"), kNoId);
      rec->AddInput(0, buf.View(buf.a, 1));
      inside.fetch_add(1);
      while (!stopping.load()) std::this_thread::yield();
      // Give a Stop that does not wait the time to free the recorder under us.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      stopped_while_inside[static_cast<size_t>(w)] = stopped.load();
      rec->AddInput(1, buf.View(buf.b, 1));
      rec->AddOutput(0, buf.View(buf.out, 1));
      rec->EndOp("inflight");
    });
  }
  while (inside.load() < kWorkers) std::this_thread::yield();
  std::thread stopper([&] {
    stopping.store(true);
    Status st = Recorder::Stop();
    EXPECT_TRUE(st.ok()) << st.message();
    stopped.store(true);
  });
  stopper.join();
  for (auto& t : workers) t.join();
  for (bool b : stopped_while_inside) EXPECT_FALSE(b) << "Stop returned while a Ref was alive";

  // The ops ended inside their Refs, before Stop closed the trace: all there.
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::set<int64_t> threads;
  for (const OpEvent& op : trace->ops) {
    ASSERT_EQ(trace->str(op.name_id), "stop::inflight");
    EXPECT_EQ(op.args, "inflight");
    threads.insert(op.thread_id);
  }
  EXPECT_EQ(trace->ops.size(), static_cast<size_t>(kWorkers));
  EXPECT_EQ(threads.size(), static_cast<size_t>(kWorkers));
  EXPECT_EQ(trace->op_tensors.size(), static_cast<size_t>(3 * kWorkers));
}

TEST(RecorderStop, AnOpBegunBeforeAStopIsDroppedWhenItEndsUnderTheNext) {
  std::string first = TempPath("first.mtrace"), second = TempPath("second.mtrace");
  Buffers buf;
  magneton_tensor a = buf.CView(buf.a, 1), b = buf.CView(buf.b, 1), out = buf.CView(buf.out, 1);
  ASSERT_EQ(magneton_start(first.c_str(), "first", "native-c", 0, 0), MAGNETON_OK);
  ASSERT_GE(magneton_begin_op("stop::straddles"), 0);
  magneton_add_input(0, &a);
  ASSERT_EQ(magneton_stop(), MAGNETON_OK);
  magneton_add_input(1, &b);  // nothing recording: ignored
  ASSERT_EQ(magneton_start(second.c_str(), "second", "native-c", 0, 0), MAGNETON_OK);
  magneton_add_output(0, &out);  // the new recording has no op pending here
  magneton_end_op("straddles");
  ASSERT_GE(magneton_begin_op("stop::after"), 0);
  magneton_add_input(0, &a);
  magneton_add_output(0, &out);
  magneton_end_op("after");
  ASSERT_EQ(magneton_stop(), MAGNETON_OK);

  auto t1 = ReadTrace(first);
  ASSERT_TRUE(t1.ok()) << t1.status().message();
  EXPECT_TRUE(t1->ops.empty());
  auto t2 = ReadTrace(second);
  ASSERT_TRUE(t2.ok()) << t2.status().message();
  ASSERT_EQ(t2->ops.size(), 1u);
  EXPECT_EQ(t2->str(t2->ops[0].name_id), "stop::after");
  EXPECT_EQ(t2->ops[0].parent_id, kNoId);  // not nested in the dropped op
  EXPECT_EQ(t2->op_tensors.size(), 2u);
}

TEST(RecorderStop, StopFromInsideARefFailsAndStopsNothing) {
  std::string path = TempPath("inside.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  {
    Recorder::Ref rec;
    ASSERT_TRUE(rec);
    Status st = Recorder::Stop();
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(st.message().find("inside a recording callback"), std::string::npos) << st.message();
    EXPECT_TRUE(Recorder::IsRecording());
    EXPECT_EQ(magneton_stop(), MAGNETON_FAILED_PRECONDITION);
    EXPECT_TRUE(Recorder::IsRecording());
  }
  EXPECT_TRUE(Recorder::Stop().ok());
  EXPECT_FALSE(Recorder::IsRecording());
  {
    Recorder::Ref rec;  // nothing recording: a null Ref
    EXPECT_FALSE(rec);
    EXPECT_EQ(rec.get(), nullptr);
  }
}

// How a forked child ended: its exit code, or -1 when it had not ended
// within the deadline (it is killed: a child waiting on the parent's threads
// never ends on its own).
int ExitCodeWithin(pid_t pid, std::chrono::seconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A child forked while a recording runs (a DataLoader's worker, an
// os.fork()) has none of its threads: it has no recording, so its ops are not
// queued for threads that are not there and its Stop neither waits for them
// nor writes into the parent's trace. The parent's trace counts the child.
TEST(RecorderStop, AForkedChildHasNoRecordingAndTheParentCountsIt) {
  const std::string path = TempPath("forked.mtrace");
  Buffers buf;
  magneton_tensor a = buf.CView(buf.a, 1), out = buf.CView(buf.out, 1);
  // With --values: the fingerprint thread runs as well as the writer.
  ASSERT_EQ(magneton_start(path.c_str(), "forked", "native-c", 0, 1), MAGNETON_OK);
  auto one_op = [&](const char* name) {
    if (magneton_begin_op(name) < 0) return false;
    magneton_add_input(0, &a);
    magneton_add_output(0, &out);
    magneton_end_op("{}");
    return true;
  };
  ASSERT_TRUE(one_op("fork::before"));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's own ops: thousands, past the fingerprint queue's wake-up.
    int code = Recorder::IsRecording() ? 10 : 0;
    for (int i = 0; i < 5000 && code == 0; ++i) {
      buf.a[0] = static_cast<float>(i);
      if (one_op("fork::in_child")) code = 11;
    }
    if (code == 0 && magneton_stop() != MAGNETON_FAILED_PRECONDITION) code = 12;
    _exit(code);
  }
  EXPECT_EQ(ExitCodeWithin(child, std::chrono::seconds(30)), 0)
      << "10: the child saw the recording; 11: it recorded an op; 12: its stop did not say none was active; "
         "-1: it hung";
  ASSERT_TRUE(one_op("fork::after"));
  ASSERT_EQ(magneton_stop(), MAGNETON_OK);
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::vector<std::string> names;
  for (const OpEvent& op : trace->ops) {
    if (trace->str(op.name_id) != kFingerprintOpName) names.push_back(trace->str(op.name_id));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fork::before", "fork::after"}));
  EXPECT_EQ(trace->meta.extra["recorder.forked_children"], "1");

  // A fork while nothing records is not the next recording's child.
  const pid_t between = fork();
  ASSERT_GE(between, 0);
  if (between == 0) _exit(0);
  EXPECT_EQ(ExitCodeWithin(between, std::chrono::seconds(30)), 0);
  const std::string quiet = TempPath("quiet.mtrace");
  ASSERT_EQ(magneton_start(quiet.c_str(), "quiet", "native-c", 0, 1), MAGNETON_OK);
  ASSERT_TRUE(one_op("fork::none"));
  ASSERT_EQ(magneton_stop(), MAGNETON_OK);
  auto none = ReadTrace(quiet);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(none->meta.extra["recorder.forked_children"], "0");
}

}  // namespace
}  // namespace magneton
