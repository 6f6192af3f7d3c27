#include "gpu/link.h"

#include <algorithm>
#include <unordered_map>

#include "gpu/graph_link.h"
#include "gpu/open_ops.h"

namespace magneton::gpu {

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
  std::vector<bool> source_saw(ops.size(), false);  // recorded ops the source has a host op of
  for (size_t i = 0; i < batch.host_ops.size(); ++i) {
    if (paired[i] >= 0) source_saw[static_cast<size_t>(paired[i])] = true;
    if (batch.host_ops[i].external_id != 0 && paired[i] >= 0) op_of_external[batch.host_ops[i].external_id] = paired[i];
  }
  std::unordered_map<uint64_t, const Launch*> launch_of;
  for (const Launch& l : batch.launches) launch_of.emplace(l.correlation, &l);
  const OpenOps open(ops);

  // Each launch's recorded op: through its external id's host op, made more
  // precise by a recorded op inside that one which holds the whole call and
  // which the source never saw (the recorder's own ops, not RecordFunctions:
  // the CUDA graph replay op around a cudaGraphLaunch); else by the launch's
  // time on its thread.
  enum class How { kNone, kHostOp, kTime };
  struct Resolved {
    int64_t op = -1;
    How how = How::kNone;
  };
  auto resolve = [&](const Launch& l, uint64_t external) {
    Resolved r;
    if (auto e = op_of_external.find(external); external != 0 && e != op_of_external.end()) {
      r = {e->second, How::kHostOp};
      const int64_t inner = open.At(l.thread_id, l.start_ns - offset);
      if (inner >= 0 && inner != r.op && !source_saw[static_cast<size_t>(inner)] &&
          ops[static_cast<size_t>(inner)].end_ns >= l.end_ns - offset &&
          open.Descends(static_cast<size_t>(inner), static_cast<size_t>(r.op)))
        r.op = inner;
      return r;
    }
    const int64_t at = open.At(l.thread_id, l.start_ns - offset);
    if (at >= 0) r = {at, How::kTime};
    return r;
  };
  std::unordered_map<uint64_t, int64_t> op_of_launch;
  for (const Launch& l : batch.launches) op_of_launch.emplace(l.correlation, resolve(l, l.external_id).op);
  const std::vector<int64_t> captured_by =
      LinkGraphCaptures(batch, ops, open, offset, op_of_launch, &st.graphs);

  for (size_t i = 0; i < batch.activities.size(); ++i) {
    const RawActivity& a = batch.activities[i];
    LinkedActivity la;
    la.name = a.name;
    la.row.device = "cuda:" + std::to_string(a.device);
    la.row.stream = a.stream;
    la.row.start_ns = a.start_ns - offset;
    la.row.end_ns = a.end_ns - offset;
    la.row.kind = ActivityKindName(a.kind);
    if (a.graph_id != 0) la.row.graph_id = a.graph_id;
    if (a.graph_node_id != 0) la.row.graph_node_id = a.graph_node_id;
    if (captured_by[i] >= 0) la.row.captured_op_id = ops[static_cast<size_t>(captured_by[i])].op_id;
    auto lit = a.correlation ? launch_of.find(a.correlation) : launch_of.end();
    const Launch* launch = lit == launch_of.end() ? nullptr : lit->second;
    const uint64_t external = a.external_id ? a.external_id : (launch ? launch->external_id : 0);
    int64_t op = -1;
    if (launch) {
      const Resolved r = resolve(*launch, external);
      op = r.op;
      if (r.how == How::kHostOp) {
        ++st.by_host_op;
      } else if (r.how == How::kTime) {
        ++st.by_launch_time;
      } else {
        ++st.launch_outside_ops;
      }
    } else if (auto e = op_of_external.find(external); external != 0 && e != op_of_external.end()) {
      op = e->second;
      ++st.by_host_op;
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
