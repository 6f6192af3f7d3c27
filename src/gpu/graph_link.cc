#include "gpu/graph_link.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace magneton::gpu {
namespace {

// {"graph": N} in a capture or replay op's args; -1 when absent or malformed
// (the op then pairs with nothing).
int64_t GraphKey(const OpSpan& op) {
  const nlohmann::json args = nlohmann::json::parse(op.recorder_args, nullptr, /*allow_exceptions=*/false);
  if (!args.is_object()) return -1;
  auto it = args.find("graph");
  if (it == args.end() || !it->is_number_integer()) return -1;
  return it->get<int64_t>();
}

struct Capture {
  size_t op = 0;  // index into ops
  int64_t key = -1;
  std::vector<int64_t> node_ops;  // per capture launch, in time order: the captured op that made it
  int64_t graph_id = 0;           // of its first matched replay; 0 until then
};

int64_t OpOf(const std::unordered_map<uint64_t, int64_t>& op_of_launch, uint64_t correlation) {
  auto it = op_of_launch.find(correlation);
  return it == op_of_launch.end() ? -1 : it->second;
}

}  // namespace

std::vector<int64_t> LinkGraphCaptures(const ActivityBatch& batch, const std::vector<OpSpan>& ops,
                                       const OpenOps& open, int64_t offset_ns,
                                       const std::unordered_map<uint64_t, int64_t>& op_of_launch,
                                       GraphLinkStats* st) {
  std::vector<int64_t> out(batch.activities.size(), -1);
  // correlation -> the device work it ran (graph launches run many).
  std::unordered_map<uint64_t, std::vector<size_t>> work_of;
  for (size_t i = 0; i < batch.activities.size(); ++i) {
    const RawActivity& a = batch.activities[i];
    if (a.correlation != 0) work_of[a.correlation].push_back(i);
    if (a.graph_id != 0) ++st->graph_activities;
  }

  std::vector<Capture> captures;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == kGraphCaptureOp) captures.push_back({i, GraphKey(ops[i]), {}, 0});
  }
  st->captures = captures.size();
  if (!captures.empty()) {
    // One walk up from each op (cudagraph trees capture hundreds of graphs).
    std::vector<bool> is_capture(ops.size(), false);
    for (const Capture& c : captures) is_capture[c.op] = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      int64_t p = open.ParentIndex(i);
      for (int depth = 0; depth < 1024 && p >= 0; ++depth) {
        if (is_capture[static_cast<size_t>(p)]) {
          ++st->captured_ops;
          break;
        }
        p = open.ParentIndex(static_cast<size_t>(p));
      }
    }
  }
  std::vector<const Launch*> by_time;
  for (const Launch& l : batch.launches) by_time.push_back(&l);
  std::stable_sort(by_time.begin(), by_time.end(), [](const Launch* x, const Launch* y) { return x->start_ns < y->start_ns; });
  for (Capture& c : captures) {
    const OpSpan& cap = ops[c.op];
    // The launches from the capture's start on, by time.
    auto first = std::lower_bound(by_time.begin(), by_time.end(), cap.start_ns + offset_ns,
                                  [](const Launch* l, int64_t t) { return l->start_ns < t; });
    for (auto it = first; it != by_time.end() && (*it)->start_ns - offset_ns <= cap.end_ns; ++it) {
      const Launch* l = *it;
      if (l->thread_id != cap.thread_id || l->end_ns - offset_ns > cap.end_ns) continue;
      if (work_of.count(l->correlation)) continue;  // it ran: not captured
      if (!batch.flow_starts.empty() && !batch.flow_starts.count(l->correlation)) continue;  // queues no work
      const int64_t by = OpOf(op_of_launch, l->correlation);
      if (by < 0 || !open.Descends(static_cast<size_t>(by), c.op)) continue;  // the capture's own calls
      c.node_ops.push_back(by);
    }
    st->captured_launches += c.node_ops.size();
  }

  // Each graph launch, in time order (a graph recaptured later pairs with its
  // new capture).
  for (const Launch* l : by_time) {
    auto w = work_of.find(l->correlation);
    if (w == work_of.end()) continue;
    std::set<int64_t> nodes;
    int64_t graph_id = 0;
    for (size_t i : w->second) {
      const RawActivity& a = batch.activities[i];
      if (a.graph_id == 0) continue;
      if (graph_id == 0) graph_id = a.graph_id;
      if (a.graph_id == graph_id && a.graph_node_id != 0) nodes.insert(a.graph_node_id);
    }
    if (graph_id == 0) continue;
    ++st->graph_launches;
    // The replay op the launch was made in (it, or an op it encloses).
    int64_t replay = OpOf(op_of_launch, l->correlation);
    for (int depth = 0; depth < 1024 && replay >= 0 && ops[static_cast<size_t>(replay)].name != kGraphReplayOp; ++depth)
      replay = open.ParentIndex(static_cast<size_t>(replay));
    if (replay >= 0 && ops[static_cast<size_t>(replay)].name != kGraphReplayOp) replay = -1;
    if (replay < 0) continue;  // a graph whose replay was not recorded
    const int64_t key = GraphKey(ops[static_cast<size_t>(replay)]);
    Capture* capture = nullptr;
    for (Capture& c : captures) {
      if (key >= 0 && c.key == key && ops[c.op].end_ns <= ops[static_cast<size_t>(replay)].start_ns) capture = &c;
    }
    if (capture == nullptr) continue;  // its capture was not recorded
    if (capture->graph_id != 0 && capture->graph_id != graph_id) {
      ++st->replays_unmatched;
      continue;
    }
    if (nodes.empty() || nodes.size() != capture->node_ops.size()) {
      ++st->replays_unmatched;
      continue;
    }
    capture->graph_id = graph_id;
    ++st->replays_matched;
    std::map<int64_t, int64_t> op_of_node;
    size_t k = 0;
    for (int64_t node : nodes) op_of_node[node] = capture->node_ops[k++];
    for (size_t i : w->second) {
      const RawActivity& a = batch.activities[i];
      if (a.graph_id != graph_id) continue;
      auto n = op_of_node.find(a.graph_node_id);
      if (n == op_of_node.end()) continue;
      out[i] = n->second;
      ++st->linked_to_captured_op;
    }
  }
  return out;
}

}  // namespace magneton::gpu
