// Per-op energy: piecewise-linear cumulative energy, exclusive (innermost)
// time per thread, and an even split among threads running at once. The gap
// before a thread's top-level op (after its previous one) is that op's issue
// time: the host code that led to it, charged only while no op runs anywhere.
#include "energy/attribution.h"

#include "base/format.h"
#include "energy/energy_curve.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace magneton::energy {
namespace {

// The marked ops and every op nested in one (a bounded walk up the parents:
// a parent loop in a file from someone else must end).
std::vector<bool> WithNested(const Trace& trace, const std::vector<bool>& marked) {
  std::vector<bool> out = marked;
  if (std::find(marked.begin(), marked.end(), true) == marked.end()) return out;
  std::unordered_map<int64_t, size_t> index_of;
  for (size_t i = 0; i < trace.ops.size(); ++i) index_of[trace.ops[i].id] = i;
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    int64_t p = trace.ops[i].parent_id;
    for (int depth = 0; depth < 256 && !out[i] && p != kNoId; ++depth) {
      auto it = index_of.find(p);
      if (it == index_of.end() || it->second == i) break;
      out[i] = marked[it->second];
      p = trace.ops[it->second].parent_id;
    }
  }
  return out;
}

// The recorder's work: its own ops (IsRecorderOp) and every op nested in one.
// An op run inside a recorder op is not the job's either: the ops run while a
// CUDA graph is captured (inside magneton::cuda_graph_capture) queued no
// work, they only added nodes to the graph its replays run
// (docs/TRACE_FORMAT.md "CUDA graphs").
std::vector<bool> RecorderWork(const Trace& trace) {
  std::vector<bool> marked(trace.ops.size(), false);
  for (size_t i = 0; i < trace.ops.size(); ++i) marked[i] = IsRecorderOp(trace, trace.ops[i]);
  return WithNested(trace, marked);
}

// The recorder's work at stop: recorder ops whose args mark them "at_stop"
// (docs/TRACE_FORMAT.md "Recorder ops") and every op nested in one.
std::vector<bool> AtStopWork(const Trace& trace) {
  std::vector<bool> marked(trace.ops.size(), false);
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const OpEvent& op = trace.ops[i];
    if (op.args.find("\"at_stop\"") == std::string::npos || !IsRecorderOp(trace, op)) continue;
    const nlohmann::json args = nlohmann::json::parse(op.args, nullptr, /*allow_exceptions=*/false);
    if (!args.is_object()) continue;
    auto it = args.find("at_stop");
    marked[i] = it != args.end() && it->is_boolean() && it->get<bool>();
  }
  return WithNested(trace, marked);
}

// Op indices with every op before the op that encloses it: by descending start,
// then ascending end (a child starts no earlier than its parent and ends no
// later; children are pushed after their parents).
// Ops by (start, longer first, index): parents before their children.
bool StartsFirst(const Trace& trace, size_t a, size_t b) {
  const auto &x = trace.ops[a], &y = trace.ops[b];
  if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
  if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
  return a < b;
}

// The reverse of StartsFirst. A reader's ops are in start order, mostly
// already in this one: checked before sorting millions of them.
std::vector<size_t> ChildrenFirst(const Trace& trace) {
  std::vector<size_t> order(trace.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto starts_first = [&](size_t a, size_t b) { return StartsFirst(trace, a, b); };
  if (!std::is_sorted(order.begin(), order.end(), starts_first)) std::sort(order.begin(), order.end(), starts_first);
  std::reverse(order.begin(), order.end());
  return order;
}

// A stretch of one thread's time owned by its innermost running op.
struct Piece {
  int64_t start_ns, end_ns;
  size_t op;  // index into trace.ops
};
// Pieces in blocks, not one array: an array grown by doubling held up to
// twice the pieces while both sides of a diff attributed at once (the peak of
// a 320 000-op pair's diff, docs/PERFORMANCE.md, "At scale").
using Pieces = std::deque<Piece>;

// Exclusive time per thread by a stack sweep over ops sorted by (start, longer
// first): an op owns the time between its start and its end that no op
// nested in it covers. Also records each op's enclosing op for inclusive sums,
// and each top-level op's issue piece: from the end of the thread's previous
// top-level op to its start (none before a thread's first op).
// A recorder op (IsRecorderOp) takes no issue time: the gap before it and
// the one after it both go to the next real top-level op.
void ExclusivePieces(const Trace& trace, const std::vector<bool>& recorder_op, Pieces* pieces, Pieces* issue_pieces,
                     std::vector<int64_t>* parent) {
  std::map<int64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < trace.ops.size(); ++i) by_thread[trace.ops[i].thread_id].push_back(i);
  for (auto& [tid, idx] : by_thread) {
    auto starts_first = [&](size_t a, size_t b) { return StartsFirst(trace, a, b); };
    if (!std::is_sorted(idx.begin(), idx.end(), starts_first)) std::sort(idx.begin(), idx.end(), starts_first);
    std::vector<size_t> stack;
    int64_t cursor = 0;
    bool seen_top_level = false;
    std::vector<Piece> pending_gaps;  // gaps before recorder ops, for the next real op
    auto emit = [&](int64_t a, int64_t b, size_t op) {
      if (b > a) pieces->push_back({a, b, op});
    };
    for (size_t i : idx) {
      const OpEvent& op = trace.ops[i];
      while (!stack.empty() && trace.ops[stack.back()].end_ns <= op.start_ns) {
        int64_t end = trace.ops[stack.back()].end_ns;
        emit(cursor, end, stack.back());
        cursor = std::max(cursor, end);
        stack.pop_back();
      }
      if (!stack.empty()) {
        emit(cursor, op.start_ns, stack.back());
        (*parent)[i] = static_cast<int64_t>(stack.back());
      } else {
        if (seen_top_level && op.start_ns > cursor) pending_gaps.push_back({cursor, op.start_ns, i});
        if (!recorder_op[i]) {
          for (Piece& g : pending_gaps) issue_pieces->push_back({g.start_ns, g.end_ns, i});
          pending_gaps.clear();
        }
        seen_top_level = true;
      }
      cursor = std::max(cursor, op.start_ns);
      stack.push_back(i);
    }
    while (!stack.empty()) {
      int64_t end = trace.ops[stack.back()].end_ns;
      emit(cursor, end, stack.back());
      cursor = std::max(cursor, end);
      stack.pop_back();
    }
  }
}

StatusOr<Attribution> AttributeHostWork(const Trace& trace, const std::vector<EnergySample>& samples,
                                        const std::string& domain) {
  Attribution out;
  out.domain = domain;
  MAGNETON_ASSIGN_OR_RETURN(EnergyCurve curve, DomainCurve(samples, domain, &out.provenance));
  out.window_start_ns = curve.start();
  out.window_end_ns = curve.end();
  out.total_uj = curve.total();

  // The recorder's own ops (IsRecorderOp): their energy is not the job's.
  const std::vector<bool> recorder_op = RecorderWork(trace);
  Pieces pieces, issue_pieces;
  std::vector<int64_t> parent(trace.ops.size(), -1);
  ExclusivePieces(trace, recorder_op, &pieces, &issue_pieces, &parent);

  // Elementary intervals between every piece boundary and the window ends;
  // in each, the energy is split evenly among the pieces (threads) active.
  // One sort of all boundaries gives each piece the indices of its ends
  // among the cuts (a binary search per use over millions of cuts was most
  // of the attribution of a long run).
  struct Boundary {
    int64_t t_ns;
    uint64_t slot;  // 2 * piece + (end ? 1 : 0), over pieces then issue_pieces
  };
  std::vector<Boundary> boundaries;
  boundaries.reserve(2 * (pieces.size() + issue_pieces.size()));
  uint64_t slot = 0;
  for (auto* list : {&pieces, &issue_pieces}) {
    for (auto& p : *list) {
      p.start_ns = std::clamp(p.start_ns, curve.start(), curve.end());
      p.end_ns = std::clamp(p.end_ns, curve.start(), curve.end());
      boundaries.push_back({p.start_ns, slot++});
      boundaries.push_back({p.end_ns, slot++});
    }
  }
  std::sort(boundaries.begin(), boundaries.end(),
            [](const Boundary& x, const Boundary& y) { return x.t_ns < y.t_ns; });
  if (slot > UINT32_MAX) return InvalidArgument("energy attribution: more than 2^32 pieces of op time in one trace");
  std::vector<int64_t> cuts = {curve.start()};
  std::vector<uint32_t> cut_of(slot);
  for (const Boundary& b : boundaries) {
    if (b.t_ns != cuts.back()) cuts.push_back(b.t_ns);
    cut_of[b.slot] = static_cast<uint32_t>(cuts.size() - 1);
  }
  if (cuts.back() != curve.end()) cuts.push_back(curve.end());
  std::vector<Boundary>().swap(boundaries);
  const size_t issue_base = 2 * pieces.size();
  auto start_cut = [&](size_t piece) { return static_cast<size_t>(cut_of[2 * piece]); };
  auto end_cut = [&](size_t piece) { return static_cast<size_t>(cut_of[2 * piece + 1]); };
  std::vector<int> active_delta(cuts.size() + 1, 0), issuing_delta(cuts.size() + 1, 0);
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].end_ns <= pieces[i].start_ns) continue;
    active_delta[start_cut(i)] += 1;
    active_delta[end_cut(i)] -= 1;
  }
  for (size_t i = 0; i < issue_pieces.size(); ++i) {
    if (issue_pieces[i].end_ns <= issue_pieces[i].start_ns) continue;
    issuing_delta[cut_of[issue_base + 2 * i]] += 1;
    issuing_delta[cut_of[issue_base + 2 * i + 1]] -= 1;
  }
  // The job runs from the first op to the last. The recorder's work at stop
  // (an op marked "at_stop": JAX jit's --values replay) is not the program's
  // time: neither it nor the pause before it is inside the job (that pause
  // was seconds "outside every op" in a JAX side's diff). Recorder ops the
  // program's time runs through (a window's unrecorded span, a warm-up, a
  // CUDA graph capture) stay inside, their energy given back below.
  const std::vector<bool> at_stop = AtStopWork(trace);
  out.ops_start_ns = out.ops_end_ns = curve.start();
  if (!pieces.empty()) {
    out.ops_start_ns = curve.end();
    for (const auto& p : pieces) {
      if (p.end_ns <= p.start_ns || at_stop[p.op]) continue;
      out.ops_start_ns = std::min(out.ops_start_ns, p.start_ns);
      out.ops_end_ns = std::max(out.ops_end_ns, p.end_ns);
    }
    out.ops_start_ns = std::min(out.ops_start_ns, out.ops_end_ns);
  }
  // share_prefix[k]: energy per active thread, summed over intervals before
  // cut k; issue_prefix[k]: the same per issuing thread, in intervals where
  // no op runs on any thread (issue time never takes energy from an op).
  std::vector<double> share_prefix(cuts.size(), 0), issue_prefix(cuts.size(), 0);
  EnergyCurve::Walk energy_at(curve);
  double energy_before = energy_at.At(cuts.front());
  int active = 0, issuing = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    active += active_delta[k];
    issuing += issuing_delta[k];
    const double energy_after = energy_at.At(cuts[k + 1]);
    double de = energy_after - energy_before;
    energy_before = energy_after;
    share_prefix[k + 1] = share_prefix[k] + (active > 0 ? de / active : 0);
    issue_prefix[k + 1] = issue_prefix[k] + (active == 0 && issuing > 0 ? de / issuing : 0);
    // Elementary intervals never straddle the job's ends: both are cuts.
    const bool in_job = cuts[k] >= out.ops_start_ns && cuts[k + 1] <= out.ops_end_ns;
    if (in_job) out.job_uj += de;
    if (active == 0) {
      out.unattributed_uj += de;
      if (in_job) {
        out.idle_in_job_uj += de;
        out.idle_in_job_ns += cuts[k + 1] - cuts[k];
        if (issuing == 0) {
          out.unclaimed_in_job_uj += de;
          out.unclaimed_in_job_ns += cuts[k + 1] - cuts[k];
        }
      }
    }
  }

  // What the rest needs of the cuts: where the job starts and ends.
  auto cut_index = [&](int64_t t) {  // t is a cut
    return static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin());
  };
  const size_t job_start_cut = cut_index(out.ops_start_ns), job_end_cut = cut_index(out.ops_end_ns);
  for (auto* spent : {&active_delta, &issuing_delta}) std::vector<int>().swap(*spent);
  std::vector<int64_t>().swap(cuts);
  out.ops.resize(trace.ops.size());
  for (size_t i = 0; i < trace.ops.size(); ++i) out.ops[i].op_id = trace.ops[i].id;
  // Each piece takes its share of the energy over its interval (prefix sums)
  // into the op's field pair, and into the trace-wide sum.
  auto charge = [&](const Pieces& list, size_t slot_base, const std::vector<double>& prefix,
                    double OpEnergy::*uj, int64_t OpEnergy::*ns, double* sum_uj) {
    for (size_t i = 0; i < list.size(); ++i) {
      const Piece& p = list[i];
      if (p.end_ns <= p.start_ns) continue;
      const double e = prefix[cut_of[slot_base + 2 * i + 1]] - prefix[cut_of[slot_base + 2 * i]];
      out.ops[p.op].*uj += e;
      out.ops[p.op].*ns += p.end_ns - p.start_ns;
      *sum_uj += e;
    }
  };
  charge(pieces, 0, share_prefix, &OpEnergy::exclusive_uj, &OpEnergy::exclusive_ns, &out.attributed_uj);
  charge(issue_pieces, issue_base, issue_prefix, &OpEnergy::issue_uj, &OpEnergy::issue_ns, &out.issue_uj);
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    if (!recorder_op[i]) continue;
    out.recorder_uj += out.ops[i].exclusive_uj;
    out.recorder_ns += out.ops[i].exclusive_ns;
  }
  // The recorder's energy inside the job (its pieces clipped to the job's
  // ends, both cuts), which the job gives back below.
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    if (!recorder_op[p.op]) continue;
    const int64_t a = std::max(p.start_ns, out.ops_start_ns), b = std::min(p.end_ns, out.ops_end_ns);
    if (b <= a) continue;
    // Cuts ascend with time: the later start's cut is the later cut.
    out.recorder_in_job_uj += share_prefix[std::min(end_cut(i), job_end_cut)] -
                              share_prefix[std::max(start_cut(i), job_start_cut)];
    out.recorder_in_job_ns += b - a;
  }
  // Inclusive: children were pushed after their parents, so walking ops by
  // descending start (then ascending length) visits children before parents.
  for (OpEnergy& op : out.ops) op.inclusive_uj = op.exclusive_uj;
  const std::vector<size_t> order = ChildrenFirst(trace);
  for (size_t i : order) {
    if (parent[i] < 0) continue;
    OpEnergy& up = out.ops[static_cast<size_t>(parent[i])];
    if (recorder_op[i]) {
      up.recorder_ns += out.ops[i].exclusive_ns;
      up.recorder_uj += out.ops[i].exclusive_uj;
    } else {
      up.inclusive_uj += out.ops[i].inclusive_uj;
      up.recorder_ns += out.ops[i].recorder_ns;
      up.recorder_uj += out.ops[i].recorder_uj;
    }
  }
  // The job is the work compared: the recorder's own ops inside it are not.
  out.job_uj -= out.recorder_in_job_uj;
  return out;
}

// A GPU domain through its device activities: an op's exclusive energy is
// that of the activities it launched, inclusive adds its nested ops' (by
// the recorded parent links). The job runs from the first op or activity to
// the last: kernels finish after the host op that queued them returned.
StatusOr<Attribution> AttributeDeviceWork(const Trace& trace, const std::vector<EnergySample>& samples,
                                          const std::string& domain) {
  Attribution out;
  out.domain = domain;
  out.basis = "device";
  const std::string device = DeviceOfDomain(domain);
  int64_t job_start = INT64_MAX, job_end = INT64_MIN;
  for (const OpEvent& op : trace.ops) {
    job_start = std::min(job_start, op.start_ns);
    job_end = std::max(job_end, op.end_ns);
  }
  for (const DeviceActivity& a : trace.device_activities) {
    if (a.device != device) continue;
    job_start = std::min(job_start, a.start_ns);
    job_end = std::max(job_end, a.end_ns);
  }
  MAGNETON_ASSIGN_OR_RETURN(DeviceEnergy dev, AttributeDeviceEnergy(trace, samples, domain, job_start, job_end));
  out.provenance = dev.provenance;
  out.window_start_ns = dev.window_start_ns;
  out.window_end_ns = dev.window_end_ns;
  out.total_uj = dev.total_uj;
  out.ops_start_ns = dev.job_start_ns;
  out.ops_end_ns = dev.job_end_ns;
  out.job_uj = dev.job_uj;
  out.idle_in_job_uj = out.device_idle_in_job_uj = dev.idle_in_job_uj;
  out.idle_in_job_ns = out.device_idle_in_job_ns = dev.idle_in_job_ns;

  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < trace.ops.size(); ++i) index_of[trace.ops[i].id] = i;
  out.ops.resize(trace.ops.size());
  for (size_t i = 0; i < trace.ops.size(); ++i) out.ops[i].op_id = trace.ops[i].id;
  for (const KernelEnergy& k : dev.kernels) {
    auto it = k.op_id == kNoId ? index_of.end() : index_of.find(k.op_id);
    if (it == index_of.end()) {
      out.unlinked_device_uj += k.energy_uj;
      continue;
    }
    out.ops[it->second].exclusive_uj += k.energy_uj;
    out.ops[it->second].device_ns += k.duration_ns;
    out.attributed_uj += k.energy_uj;
  }
  out.unattributed_uj = dev.idle_uj + out.unlinked_device_uj;
  // Inclusive sums, children before parents (a child starts no earlier than
  // its parent and ends no later). A recorder op's activities (device-side
  // fingerprints) are the recorder's, as on the host.
  for (OpEnergy& op : out.ops) {
    op.inclusive_uj = op.exclusive_uj;
    op.inclusive_device_ns = op.device_ns;
  }
  const std::vector<size_t> order = ChildrenFirst(trace);
  const std::vector<bool> recorder_work = RecorderWork(trace);
  for (size_t i : order) {
    const bool recorder = recorder_work[i];
    if (recorder) out.recorder_uj += out.ops[i].exclusive_uj;
    auto p = trace.ops[i].parent_id == kNoId ? index_of.end() : index_of.find(trace.ops[i].parent_id);
    if (p == index_of.end()) continue;
    OpEnergy& up = out.ops[p->second];
    if (recorder) {
      up.recorder_uj += out.ops[i].inclusive_uj;
    } else {
      up.inclusive_uj += out.ops[i].inclusive_uj;
      up.inclusive_device_ns += out.ops[i].inclusive_device_ns;
      up.recorder_uj += out.ops[i].recorder_uj;
    }
  }
  out.job_uj -= out.recorder_uj;
  out.devices.push_back(std::move(dev));
  return out;
}

// "<a>+<b>": each part attributed on its own, then summed op by op. Only
// joules of one provenance are added.
StatusOr<Attribution> AttributeSum(const Trace& trace, const std::vector<EnergySample>& samples,
                                   const std::string& domain) {
  const std::vector<std::string> parts = DomainParts(domain);
  if (parts.size() < 2) return InvalidArgument("energy domain '" + domain + "' is not a sum of domains");
  Attribution out;
  out.domain = domain;
  out.ops.resize(trace.ops.size());
  bool host = false, dev = false;
  for (size_t p = 0; p < parts.size(); ++p) {
    MAGNETON_ASSIGN_OR_RETURN(Attribution a, AttributeEnergy(trace, samples, parts[p]));
    if (p == 0) {
      out.provenance = a.provenance;
      out.window_start_ns = a.window_start_ns;
      out.window_end_ns = a.window_end_ns;
      out.ops_start_ns = a.ops_start_ns;
      out.ops_end_ns = a.ops_end_ns;
    } else if (a.provenance != out.provenance) {
      return InvalidArgument("energy domain '" + domain + "' sums " + ProvenanceName(out.provenance) + " and " +
                             ProvenanceName(a.provenance) + " joules (" + parts[p] +
                             "); measured and estimated joules are never added");
    }
    (a.basis == "device" ? dev : host) = true;
    out.window_start_ns = std::min(out.window_start_ns, a.window_start_ns);
    out.window_end_ns = std::max(out.window_end_ns, a.window_end_ns);
    out.ops_start_ns = std::min(out.ops_start_ns, a.ops_start_ns);
    out.ops_end_ns = std::max(out.ops_end_ns, a.ops_end_ns);
    out.total_uj += a.total_uj;
    out.attributed_uj += a.attributed_uj;
    out.unattributed_uj += a.unattributed_uj;
    out.issue_uj += a.issue_uj;
    out.job_uj += a.job_uj;
    out.recorder_uj += a.recorder_uj;
    out.recorder_ns += a.recorder_ns;  // host time only: device attribution counts none
    out.idle_in_job_uj += a.idle_in_job_uj;
    if (a.basis != "device") out.idle_in_job_ns += a.idle_in_job_ns;
    out.unclaimed_in_job_uj += a.unclaimed_in_job_uj;
    out.unclaimed_in_job_ns += a.unclaimed_in_job_ns;
    out.device_idle_in_job_uj += a.device_idle_in_job_uj;
    out.device_idle_in_job_ns += a.device_idle_in_job_ns;
    out.unlinked_device_uj += a.unlinked_device_uj;
    for (DeviceEnergy& d : a.devices) out.devices.push_back(std::move(d));
    for (size_t i = 0; i < out.ops.size() && i < a.ops.size(); ++i) {
      OpEnergy& o = out.ops[i];
      const OpEnergy& x = a.ops[i];
      o.op_id = x.op_id;
      o.exclusive_uj += x.exclusive_uj;
      o.inclusive_uj += x.inclusive_uj;
      o.exclusive_ns += x.exclusive_ns;
      o.issue_uj += x.issue_uj;
      o.issue_ns += x.issue_ns;
      o.recorder_uj += x.recorder_uj;
      o.recorder_ns += x.recorder_ns;
      o.device_ns += x.device_ns;
      o.inclusive_device_ns += x.inclusive_device_ns;
    }
  }
  out.basis = host && dev ? "host+device" : (dev ? "device" : "host");
  return out;
}

}  // namespace

std::vector<std::string> DomainParts(const std::string& domain) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t plus = domain.find('+', start);
    parts.push_back(domain.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return parts;
}

StatusOr<Attribution> AttributeEnergy(const Trace& trace, const std::vector<EnergySample>& samples,
                                      const std::string& domain) {
  if (domain.find('+') != std::string::npos) return AttributeSum(trace, samples, domain);
  if (HasDeviceActivity(trace, domain)) return AttributeDeviceWork(trace, samples, domain);
  return AttributeHostWork(trace, samples, domain);
}

StatusOr<Attribution> AttributeEnergy(const Trace& trace, const std::string& domain) {
  return AttributeEnergy(trace, trace.energy_samples, domain);
}

StatusOr<double> DomainTotalUj(const Trace& trace, const std::string& domain) {
  if (domain.find('+') != std::string::npos || HasDeviceActivity(trace, domain)) {
    MAGNETON_ASSIGN_OR_RETURN(Attribution a, AttributeEnergy(trace, domain));
    return a.total_uj;
  }
  // What AttributeHostWork reads of the curve, without attributing every op.
  Provenance provenance;
  MAGNETON_ASSIGN_OR_RETURN(EnergyCurve curve, DomainCurve(trace.energy_samples, domain, &provenance));
  return curve.total();
}

}  // namespace magneton::energy
