// Per-op energy: piecewise-linear cumulative energy, exclusive (innermost)
// time per thread, and an even split among threads running at once. The gap
// before a thread's top-level op (after its previous one) is that op's issue
// time: the host code that led to it, charged only while no op runs anywhere.
#include "energy/attribution.h"

#include "base/format.h"
#include "energy/energy_curve.h"
#include "energy/thread_pieces.h"
#include "trace/op_index.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include <nlohmann/json.hpp>

namespace magneton::energy {
namespace {

// The marked ops and every op nested in one (a bounded walk up the parents:
// a parent loop in a file from someone else must end).
std::vector<bool> WithNested(const Trace& trace, const std::vector<bool>& marked) {
  std::vector<bool> out = marked;
  if (std::find(marked.begin(), marked.end(), true) == marked.end()) return out;
  const OpIndexOfId index_of(trace);
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    int64_t p = trace.ops[i].parent_id;
    for (int depth = 0; depth < 256 && !out[i] && p != kNoId; ++depth) {
      const int64_t at = index_of.Find(p);
      if (at < 0 || static_cast<size_t>(at) == i) break;
      out[i] = marked[static_cast<size_t>(at)];
      p = trace.ops[static_cast<size_t>(at)].parent_id;
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
    const nlohmann::json args = nlohmann::json::parse(op.args.str(), nullptr, /*allow_exceptions=*/false);
    if (!args.is_object()) continue;
    auto it = args.find("at_stop");
    marked[i] = it != args.end() && it->is_boolean() && it->get<bool>();
  }
  return WithNested(trace, marked);
}

// The recorder's fingerprint work (kFingerprintOpName ops): never the
// program's time, wherever it lies. The fingerprint thread's ops run after
// the program's last op while it catches up (until Stop asks for the rest,
// marked "at_stop"); counted as the job's end, they made a quiet side's job
// milliseconds longer "outside every op" than a busy side's, whose thread
// got no CPU until Stop: a control pair's diff called that waste (235 mJ
// against 0 in each of three runs). Every op nested in one, too.
std::vector<bool> FingerprintWork(const Trace& trace) {
  std::vector<bool> marked(trace.ops.size(), false);
  for (size_t i = 0; i < trace.ops.size(); ++i) marked[i] = trace.str(trace.ops[i].name_id) == kFingerprintOpName;
  return WithNested(trace, marked);
}

// The reverse of StartsFirst (thread_pieces.h): every op before the op that
// encloses it. A reader's ops are in start order, mostly already in
// StartsFirst's: checked before sorting millions of them.
std::vector<size_t> ChildrenFirst(const Trace& trace) {
  std::vector<size_t> order(trace.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto starts_first = [&](size_t a, size_t b) { return StartsFirst(trace, a, b); };
  if (!std::is_sorted(order.begin(), order.end(), starts_first)) std::sort(order.begin(), order.end(), starts_first);
  std::reverse(order.begin(), order.end());
  return order;
}

// Each thread's op indices in StartsFirst order.
std::map<int64_t, std::vector<size_t>> OpsByThread(const Trace& trace) {
  std::map<int64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < trace.ops.size(); ++i) by_thread[trace.ops[i].thread_id].push_back(i);
  for (auto& [tid, idx] : by_thread) {
    auto starts_first = [&](size_t a, size_t b) { return StartsFirst(trace, a, b); };
    if (!std::is_sorted(idx.begin(), idx.end(), starts_first)) std::sort(idx.begin(), idx.end(), starts_first);
  }
  return by_thread;
}

// Host attribution sweeps time once, through every thread's pieces at once
// (ThreadPieces, made as the sweep reaches them): at each piece boundary the
// energy since the last one is split evenly among the threads running an op
// (share) or, where none does, among the threads issuing one (issue). A
// piece takes the running sum of its kind over its interval. Only each
// thread's open piece is held; the pieces and their sorted boundaries had
// been the memory peak of a diff at scale.
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
  const std::map<int64_t, std::vector<size_t>> by_thread = OpsByThread(trace);
  std::vector<int64_t> parent(trace.ops.size(), -1);
  using Kind = ThreadPieces::Kind;

  // The job runs from the first op to the last. The recorder's work at stop
  // (an op marked "at_stop": JAX jit's --values replay) is not the program's
  // time: neither it nor the pause before it is inside the job (that pause
  // was seconds "outside every op" in a JAX side's diff). Recorder ops the
  // program's time runs through (a window's unrecorded span, a warm-up, a
  // CUDA graph capture) stay inside, their energy given back below; the
  // recorder's fingerprint work never sets the job's ends (FingerprintWork).
  // A first pass over the exclusive pieces finds the job's ends (and each
  // op's parent).
  {
    const std::vector<bool> at_stop = AtStopWork(trace);
    const std::vector<bool> fingerprint_work = FingerprintWork(trace);
    out.ops_start_ns = curve.end();
    out.ops_end_ns = curve.start();
    for (const auto& [tid, idx] : by_thread) {
      ThreadPieces pieces(trace, idx, recorder_op, Kind::kExclusive, curve.start(), curve.end(), &parent);
      for (Piece p; pieces.Next(&p);) {
        if (at_stop[p.op] || fingerprint_work[p.op]) continue;
        out.ops_start_ns = std::min(out.ops_start_ns, p.start_ns);
        out.ops_end_ns = std::max(out.ops_end_ns, p.end_ns);
      }
    }
    out.ops_start_ns = std::min(out.ops_start_ns, out.ops_end_ns);
  }

  // Two streams of pieces per thread, exclusive and issue; each is either
  // waiting for its piece to start or inside it (and then holds the running
  // sum at its start).
  struct Stream {
    ThreadPieces pieces;
    bool issue;
    Piece piece;
    bool open = false;
    double sum_at_start = 0;
  };
  std::vector<Stream> streams;
  streams.reserve(2 * by_thread.size());
  for (const auto& [tid, idx] : by_thread) {
    for (Kind kind : {Kind::kExclusive, Kind::kIssue}) {
      streams.push_back({ThreadPieces(trace, idx, recorder_op, kind, curve.start(), curve.end()), kind == Kind::kIssue, Piece{}});
    }
  }
  // Each stream's next boundary, earliest first.
  using Event = std::pair<int64_t, size_t>;  // (t_ns, stream)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (size_t s = 0; s < streams.size(); ++s) {
    if (streams[s].pieces.Next(&streams[s].piece)) events.push({streams[s].piece.start_ns, s});
  }
  out.ops.resize(trace.ops.size());

  // share_sum: energy per running thread, summed over time so far;
  // issue_sum: the same per issuing thread, while no op runs on any thread
  // (issue time never takes energy from an op).
  double share_sum = 0, issue_sum = 0;
  double share_at_job_start = 0, share_at_job_end = 0;
  int active = 0, issuing = 0;
  EnergyCurve::Walk energy_at(curve);
  int64_t t_prev = curve.start();
  double energy_before = energy_at.At(t_prev);
  // The interval from the last boundary to t, with the threads running and
  // issuing in it.
  auto advance_to = [&](int64_t t) {
    const double energy_after = energy_at.At(t);
    const double de = energy_after - energy_before;
    energy_before = energy_after;
    share_sum += active > 0 ? de / active : 0;
    issue_sum += active == 0 && issuing > 0 ? de / issuing : 0;
    // Intervals never straddle the job's ends: both are piece boundaries.
    const bool in_job = t_prev >= out.ops_start_ns && t <= out.ops_end_ns;
    if (in_job) out.job_uj += de;
    if (active == 0) {
      out.unattributed_uj += de;
      if (in_job) {
        out.idle_in_job_uj += de;
        out.idle_in_job_ns += t - t_prev;
        if (issuing == 0) {
          out.unclaimed_in_job_uj += de;
          out.unclaimed_in_job_ns += t - t_prev;
        }
      }
    }
    t_prev = t;
  };
  // A piece ends: it takes its share of the energy over its interval into the
  // op's field pair and the trace-wide sum; the recorder's pieces also give
  // back their part inside the job (clipped to the job's ends).
  auto close = [&](const Stream& st) {
    const Piece& p = st.piece;
    OpEnergy& op = out.ops[p.op];
    if (st.issue) {
      const double e = issue_sum - st.sum_at_start;
      op.issue_uj += e;
      op.issue_ns += p.end_ns - p.start_ns;
      out.issue_uj += e;
      return;
    }
    const double e = share_sum - st.sum_at_start;
    op.exclusive_uj += e;
    op.exclusive_ns += p.end_ns - p.start_ns;
    out.attributed_uj += e;
    if (!recorder_op[p.op]) return;
    const int64_t a = std::max(p.start_ns, out.ops_start_ns), b = std::min(p.end_ns, out.ops_end_ns);
    if (b <= a) return;
    const double from = p.start_ns >= out.ops_start_ns ? st.sum_at_start : share_at_job_start;
    const double to = p.end_ns <= out.ops_end_ns ? share_sum : share_at_job_end;
    out.recorder_in_job_uj += to - from;
    out.recorder_in_job_ns += b - a;
  };
  while (!events.empty()) {
    const int64_t t = events.top().first;
    if (t != t_prev) advance_to(t);
    if (t == out.ops_start_ns) share_at_job_start = share_sum;
    if (t == out.ops_end_ns) share_at_job_end = share_sum;
    while (!events.empty() && events.top().first == t) {
      const size_t s = events.top().second;
      events.pop();
      Stream& st = streams[s];
      if (!st.open) {
        st.open = true;
        st.sum_at_start = st.issue ? issue_sum : share_sum;
        ++(st.issue ? issuing : active);
        events.push({st.piece.end_ns, s});
        continue;
      }
      close(st);
      st.open = false;
      --(st.issue ? issuing : active);
      if (st.pieces.Next(&st.piece)) events.push({st.piece.start_ns, s});
    }
  }
  if (t_prev != curve.end()) advance_to(curve.end());

  for (size_t i = 0; i < trace.ops.size(); ++i) {
    if (!recorder_op[i]) continue;
    out.recorder_uj += out.ops[i].exclusive_uj;
    out.recorder_ns += out.ops[i].exclusive_ns;
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

  const OpIndexOfId index_of(trace);
  out.ops.resize(trace.ops.size());
  out.device_time.resize(trace.ops.size());
  for (const KernelEnergy& k : dev.kernels) {
    const int64_t at = k.op_id == kNoId ? -1 : index_of.Find(k.op_id);
    if (at < 0) {
      out.unlinked_device_uj += k.energy_uj;
      continue;
    }
    out.ops[static_cast<size_t>(at)].exclusive_uj += k.energy_uj;
    out.device_time[static_cast<size_t>(at)].device_ns += k.duration_ns;
    out.attributed_uj += k.energy_uj;
  }
  out.unattributed_uj = dev.idle_uj + out.unlinked_device_uj;
  // Inclusive sums, children before parents (a child starts no earlier than
  // its parent and ends no later). A recorder op's activities (device-side
  // fingerprints) are the recorder's, as on the host.
  for (OpEnergy& op : out.ops) op.inclusive_uj = op.exclusive_uj;
  for (OpDeviceTime& t : out.device_time) t.inclusive_device_ns = t.device_ns;
  const std::vector<size_t> order = ChildrenFirst(trace);
  const std::vector<bool> recorder_work = RecorderWork(trace);
  for (size_t i : order) {
    const bool recorder = recorder_work[i];
    if (recorder) out.recorder_uj += out.ops[i].exclusive_uj;
    const int64_t parent = trace.ops[i].parent_id == kNoId ? -1 : index_of.Find(trace.ops[i].parent_id);
    if (parent < 0) continue;
    const size_t p = static_cast<size_t>(parent);
    OpEnergy& up = out.ops[p];
    if (recorder) {
      up.recorder_uj += out.ops[i].inclusive_uj;
    } else {
      up.inclusive_uj += out.ops[i].inclusive_uj;
      out.device_time[p].inclusive_device_ns += out.device_time[i].inclusive_device_ns;
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
    if (!a.device_time.empty()) out.device_time.resize(trace.ops.size());
    for (size_t i = 0; i < out.device_time.size() && i < a.device_time.size(); ++i) {
      out.device_time[i].device_ns += a.device_time[i].device_ns;
      out.device_time[i].inclusive_device_ns += a.device_time[i].inclusive_device_ns;
    }
    for (size_t i = 0; i < out.ops.size() && i < a.ops.size(); ++i) {
      OpEnergy& o = out.ops[i];
      const OpEnergy& x = a.ops[i];
      o.exclusive_uj += x.exclusive_uj;
      o.inclusive_uj += x.inclusive_uj;
      o.exclusive_ns += x.exclusive_ns;
      o.issue_uj += x.issue_uj;
      o.issue_ns += x.issue_ns;
      o.recorder_uj += x.recorder_uj;
      o.recorder_ns += x.recorder_ns;
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
