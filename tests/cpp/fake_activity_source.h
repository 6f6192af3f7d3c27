// A scripted device-activity source: replays a recorded kernel stream over
// the ops of a recording, as torch.profiler would have reported it on a GPU.
// The stream says which op launched each kernel (by name and occurrence), on
// which stream, how long it waited in the queue and how long it ran; the
// fake emulates the profiler around it: its own host ops (the same ops on
// another clock, each stamped a little off by its own callback), launches
// inside the launching op, kernels serialised per stream, everything on a
// source clock offset from CLOCK_MONOTONIC. Only hardware is faked here: the
// ingest, clock mapping, linking and attribution under test are the real ones.
#pragma once

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/activity.h"
#include "trace/op_spans.h"

namespace magneton::testing {

struct StreamEntry {
  std::string op;       // the launching op's name ...
  int occurrence = 0;   // ... and which of its calls (0-based, in start order)
  std::string name;     // the kernel's
  std::string kind = "kernel";  // "kernel", "memcpy", "memset"
  int64_t device = 0;
  int64_t stream = 7;
  int64_t queue_ns = 5'000;  // from the launch to the earliest start
  int64_t duration_ns = 0;
  bool external_id = true;  // false: the launch names no host op (linked by its time)
};

struct KernelStream {
  int64_t clock_offset_ns = 0;             // source clock − CLOCK_MONOTONIC
  std::vector<int64_t> callback_skew_ns = {0};  // the profiler's stamp − the recorder's, cycled over ops
  std::vector<StreamEntry> kernels;

  // A stream file: {"clock_offset_ns", "callback_skew_ns", "kernels": [{op,
  // occurrence, name, kind, stream, queue_ns, duration_ns}]}.
  static KernelStream Load(const std::string& path) {
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    KernelStream s;
    s.clock_offset_ns = j.value("clock_offset_ns", int64_t{0});
    s.callback_skew_ns = j.value("callback_skew_ns", std::vector<int64_t>{0});
    for (const auto& k : j.at("kernels")) {
      StreamEntry e;
      e.op = k.at("op").get<std::string>();
      e.occurrence = k.value("occurrence", 0);
      e.name = k.at("name").get<std::string>();
      e.kind = k.value("kind", std::string("kernel"));
      e.stream = k.value("stream", int64_t{7});
      e.queue_ns = k.value("queue_ns", int64_t{5'000});
      e.duration_ns = k.at("duration_ns").get<int64_t>();
      e.external_id = k.value("external_id", true);
      s.kernels.push_back(std::move(e));
    }
    return s;
  }
};

// One scheduled activity on CLOCK_MONOTONIC: what the power script and the
// expectations of a test are computed from.
struct ScheduledKernel {
  StreamEntry entry;
  int64_t launch_ns = 0;  // monotonic
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t op_id = kNoId;  // the op that launched it
};

// Where each kernel of the stream runs, given the recorded ops.
inline std::vector<ScheduledKernel> Schedule(const KernelStream& s, const std::vector<OpSpan>& ops) {
  std::map<std::string, std::vector<const OpSpan*>> by_name;
  for (const OpSpan& op : ops) by_name[op.name].push_back(&op);
  for (auto& [_, v] : by_name) {
    std::stable_sort(v.begin(), v.end(), [](const OpSpan* a, const OpSpan* b) { return a->start_ns < b->start_ns; });
  }
  std::map<std::pair<int64_t, int64_t>, int64_t> stream_free;  // (device, stream) -> when its last kernel ends
  std::map<int64_t, int> launches_in_op;
  std::vector<ScheduledKernel> out;
  for (const StreamEntry& e : s.kernels) {
    auto it = by_name.find(e.op);
    if (it == by_name.end() || e.occurrence >= static_cast<int>(it->second.size())) {
      ADD_FAILURE() << "the kernel stream names " << e.op << "#" << e.occurrence << ", which the trace lacks";
      continue;
    }
    const OpSpan& op = *it->second[static_cast<size_t>(e.occurrence)];
    ScheduledKernel k;
    k.entry = e;
    k.op_id = op.op_id;
    // Launches sit inside their op, one after another.
    const int n = launches_in_op[op.op_id]++;
    k.launch_ns = op.start_ns + (op.end_ns - op.start_ns) * (n + 1) / (n + 3);
    int64_t& free = stream_free[{e.device, e.stream}];
    k.start_ns = std::max(k.launch_ns + e.queue_ns, free);
    k.end_ns = k.start_ns + e.duration_ns;
    free = k.end_ns;
    out.push_back(k);
  }
  return out;
}

class FakeActivitySource final : public gpu::ActivitySource {
 public:
  // `trace_path`: the recording the fake "profiled" (its ops are read back
  // at Collect, as the profiler would have seen them).
  FakeActivitySource(KernelStream stream, std::string trace_path)
      : stream_(std::move(stream)), trace_path_(std::move(trace_path)) {}
  std::string_view name() const override { return "replay"; }

  StatusOr<gpu::ActivityBatch> Collect() override {
    MAGNETON_ASSIGN_OR_RETURN(std::vector<OpSpan> ops, ReadOpSpans(trace_path_));
    gpu::ActivityBatch b;
    b.source = "replay";
    const int64_t off = stream_.clock_offset_ns;
    std::map<int64_t, uint64_t> external_of;  // op id -> the profiler's id for it
    for (size_t i = 0; i < ops.size(); ++i) {
      const int64_t skew = stream_.callback_skew_ns[i % stream_.callback_skew_ns.size()];
      gpu::HostOp h;
      h.external_id = 100 + i;
      h.name = ops[i].name;
      h.thread_id = ops[i].thread_id;
      h.start_ns = ops[i].start_ns + off + skew;
      h.end_ns = ops[i].end_ns + off + skew;
      external_of[ops[i].op_id] = h.external_id;
      b.host_ops.push_back(h);
    }
    std::map<int64_t, const OpSpan*> op_of;
    for (const OpSpan& op : ops) op_of[op.op_id] = &op;
    uint64_t correlation = 1;
    for (const ScheduledKernel& k : Schedule(stream_, ops)) {
      gpu::Launch l;
      l.correlation = correlation++;
      l.external_id = k.entry.external_id ? external_of[k.op_id] : 0;
      l.thread_id = op_of[k.op_id]->thread_id;
      l.start_ns = k.launch_ns + off;
      l.end_ns = l.start_ns + 1'000;
      l.api = "cudaLaunchKernel";
      gpu::RawActivity a;
      a.kind = k.entry.kind == "memcpy"   ? gpu::ActivityKind::kMemcpy
               : k.entry.kind == "memset" ? gpu::ActivityKind::kMemset
                                          : gpu::ActivityKind::kKernel;
      a.name = k.entry.name;
      a.device = k.entry.device;
      a.stream = k.entry.stream;
      a.start_ns = k.start_ns + off;
      a.end_ns = k.end_ns + off;
      a.correlation = l.correlation;
      a.external_id = l.external_id;
      b.launches.push_back(l);
      b.activities.push_back(a);
    }
    return b;
  }

 private:
  KernelStream stream_;
  std::string trace_path_;
};

}  // namespace magneton::testing
