#include "gpu/link.h"

#include <algorithm>
#include <unordered_map>

namespace magneton::gpu {
namespace {

// The innermost recorded op open at time t on a thread. The latest op to
// start at or before t is nested in every op open then (ops nest on a
// thread), so the answer is it or one of its ancestors.
class OpenOps {
 public:
  explicit OpenOps(const std::vector<OpSpan>& ops) : ops_(ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      by_thread_[ops[i].thread_id].emplace_back(ops[i].start_ns, i);
      index_of_[ops[i].op_id] = i;
    }
    for (auto& [_, v] : by_thread_) std::sort(v.begin(), v.end());
  }
  int64_t At(int64_t thread, int64_t t) const {
    auto it = by_thread_.find(thread);
    if (it == by_thread_.end()) return -1;
    const auto& v = it->second;
    auto after = std::upper_bound(v.begin(), v.end(), std::make_pair(t, SIZE_MAX));
    if (after == v.begin()) return -1;
    size_t i = std::prev(after)->second;
    for (int depth = 0; depth < 1024; ++depth) {
      if (ops_[i].end_ns >= t) return static_cast<int64_t>(i);
      auto p = index_of_.find(ops_[i].parent_id);
      if (ops_[i].parent_id == kNoId || p == index_of_.end()) return -1;
      i = p->second;
    }
    return -1;
  }

 private:
  const std::vector<OpSpan>& ops_;
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, size_t>>> by_thread_;
  std::unordered_map<int64_t, size_t> index_of_;
};

}  // namespace

StatusOr<LinkResult> LinkActivities(const ActivityBatch& batch, const std::vector<OpSpan>& ops,
                                    const AlignOptions& options) {
  LinkResult out;
  LinkStats& st = out.stats;
  st.source = batch.source;
  st.dropped = batch.dropped;
  st.activities = batch.activities.size();
  if (batch.activities.empty()) {
    // Nothing to place, but the mapping still says how well the source's
    // clock lines up with the recorder's (a profile of CPU ops only).
    auto clock = AlignClocks(batch, ops, options);
    if (clock.ok()) st.clock = *clock;
    return out;
  }
  MAGNETON_ASSIGN_OR_RETURN(st.clock, AlignClocks(batch, ops, options));
  const int64_t offset = st.clock.offset_ns;

  // External id -> the recorded op its host op pairs with.
  const std::vector<int64_t> paired = PairHostOps(batch, ops, offset, options.pair_tolerance_ns);
  std::unordered_map<uint64_t, int64_t> op_of_external;
  for (size_t i = 0; i < batch.host_ops.size(); ++i) {
    if (batch.host_ops[i].external_id != 0 && paired[i] >= 0) op_of_external[batch.host_ops[i].external_id] = paired[i];
  }
  std::unordered_map<uint64_t, const Launch*> launch_of;
  for (const Launch& l : batch.launches) launch_of.emplace(l.correlation, &l);
  const OpenOps open(ops);

  for (const RawActivity& a : batch.activities) {
    LinkedActivity la;
    la.name = a.name;
    la.row.device = "cuda:" + std::to_string(a.device);
    la.row.stream = a.stream;
    la.row.start_ns = a.start_ns - offset;
    la.row.end_ns = a.end_ns - offset;
    la.row.kind = ActivityKindName(a.kind);
    auto lit = a.correlation ? launch_of.find(a.correlation) : launch_of.end();
    const Launch* launch = lit == launch_of.end() ? nullptr : lit->second;
    const uint64_t external = a.external_id ? a.external_id : (launch ? launch->external_id : 0);
    int64_t op = -1;
    if (auto e = op_of_external.find(external); external != 0 && e != op_of_external.end()) {
      op = e->second;
      ++st.by_host_op;
    } else if (launch) {
      op = open.At(launch->thread_id, launch->start_ns - offset);
      if (op >= 0) {
        ++st.by_launch_time;
      } else {
        ++st.launch_outside_ops;
      }
    } else {
      ++st.no_launch;
    }
    if (op >= 0) {
      la.row.op_id = ops[static_cast<size_t>(op)].op_id;
      la.row.correlation_id = ops[static_cast<size_t>(op)].correlation_id;
    } else {
      ++st.unlinked;
    }
    out.activities.push_back(std::move(la));
  }
  std::stable_sort(out.activities.begin(), out.activities.end(), [](const LinkedActivity& x, const LinkedActivity& y) {
    if (x.row.start_ns != y.row.start_ns) return x.row.start_ns < y.row.start_ns;
    if (x.row.device != y.row.device) return x.row.device < y.row.device;
    return x.row.stream < y.row.stream;
  });
  return out;
}

}  // namespace magneton::gpu
