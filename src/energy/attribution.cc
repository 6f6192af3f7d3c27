// Per-op energy: piecewise-linear cumulative energy, exclusive (innermost)
// time per thread, and an even split among threads running at once. The gap
// before a thread's top-level op (after its previous one) is that op's issue
// time: the host code that led to it, charged only while no op runs anywhere.
#include "energy/attribution.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace magneton::energy {
namespace {

// Cumulative energy E(t) through the samples; constant outside them.
class EnergyCurve {
 public:
  EnergyCurve(std::vector<int64_t> t_ns, std::vector<double> energy_uj)
      : t_(std::move(t_ns)), e_(std::move(energy_uj)) {}

  double At(int64_t t) const {
    if (t <= t_.front()) return e_.front();
    if (t >= t_.back()) return e_.back();
    size_t hi = static_cast<size_t>(std::upper_bound(t_.begin(), t_.end(), t) - t_.begin());
    size_t lo = hi - 1;
    double span = static_cast<double>(t_[hi] - t_[lo]);
    double f = span > 0 ? static_cast<double>(t - t_[lo]) / span : 1.0;
    return e_[lo] + f * (e_[hi] - e_[lo]);
  }
  int64_t start() const { return t_.front(); }
  int64_t end() const { return t_.back(); }
  double total() const { return e_.back() - e_.front(); }

 private:
  std::vector<int64_t> t_;
  std::vector<double> e_;
};

StatusOr<EnergyCurve> BuildCurve(std::vector<EnergySample> samples, const std::string& domain) {
  std::stable_sort(samples.begin(), samples.end(),
                   [](const EnergySample& a, const EnergySample& b) { return a.t_ns < b.t_ns; });
  std::vector<int64_t> t;
  std::vector<double> e;
  double integrated_uj = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    double value;
    if (!std::isnan(s.energy_uj)) {
      value = s.energy_uj;
    } else if (!std::isnan(s.power_mw)) {
      // Power-only: trapezoid; mW · ns = 1e-6 µJ.
      if (i > 0 && !std::isnan(samples[i - 1].power_mw))
        integrated_uj += (samples[i - 1].power_mw + s.power_mw) / 2 *
                         static_cast<double>(s.t_ns - samples[i - 1].t_ns) * 1e-6;
      value = integrated_uj;
    } else {
      continue;
    }
    if (!t.empty() && s.t_ns == t.back()) {
      e.back() = value;  // same instant: keep the later value
      continue;
    }
    if (!e.empty() && value < e.back())
      return Corrupt("energy samples of " + domain + " decrease at t=" + std::to_string(s.t_ns) +
                     " ns: the counter must be unwrapped before attribution");
    t.push_back(s.t_ns);
    e.push_back(value);
  }
  if (t.size() < 2)
    return FailedPrecondition("domain " + domain + " has " + std::to_string(t.size()) +
                              " usable energy sample(s); attribution needs at least 2");
  return EnergyCurve(std::move(t), std::move(e));
}

// A stretch of one thread's time owned by its innermost running op.
struct Piece {
  int64_t start_ns, end_ns;
  size_t op;  // index into trace.ops
};

// Exclusive time per thread by a stack sweep over ops sorted by (start, longer
// first): an op owns the time between its start and its end that no op
// nested in it covers. Also records each op's enclosing op for inclusive sums,
// and each top-level op's issue piece: from the end of the thread's previous
// top-level op to its start (none before a thread's first op).
// A recorder op (IsRecorderOp) takes no issue time: the gap before it and
// the one after it both go to the next real top-level op.
void ExclusivePieces(const Trace& trace, const std::vector<bool>& recorder_op, std::vector<Piece>* pieces,
                     std::vector<Piece>* issue_pieces, std::vector<int64_t>* parent) {
  std::map<int64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < trace.ops.size(); ++i) by_thread[trace.ops[i].thread_id].push_back(i);
  for (auto& [tid, idx] : by_thread) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const auto &x = trace.ops[a], &y = trace.ops[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
      return a < b;
    });
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

}  // namespace

StatusOr<Attribution> AttributeEnergy(const Trace& trace, const std::vector<EnergySample>& samples,
                                      const std::string& domain) {
  std::vector<EnergySample> mine;
  Attribution out;
  out.domain = domain;
  bool any_measured = false, any_estimated = false;
  for (const auto& s : samples) {
    if (s.domain != domain) continue;
    (s.provenance == Provenance::kMeasured ? any_measured : any_estimated) = true;
    mine.push_back(s);
  }
  if (any_measured && any_estimated)
    return InvalidArgument("domain " + domain + " mixes measured and estimated samples; they must not be summed");
  out.provenance = any_measured ? Provenance::kMeasured : Provenance::kEstimated;
  MAGNETON_ASSIGN_OR_RETURN(EnergyCurve curve, BuildCurve(std::move(mine), domain));
  out.window_start_ns = curve.start();
  out.window_end_ns = curve.end();
  out.total_uj = curve.total();

  // The recorder's own ops (IsRecorderOp): their energy is not the job's.
  std::vector<bool> recorder_op(trace.ops.size(), false);
  for (size_t i = 0; i < trace.ops.size(); ++i) recorder_op[i] = IsRecorderOp(trace, trace.ops[i]);
  std::vector<Piece> pieces, issue_pieces;
  std::vector<int64_t> parent(trace.ops.size(), -1);
  ExclusivePieces(trace, recorder_op, &pieces, &issue_pieces, &parent);

  // Elementary intervals between every piece boundary and the window ends;
  // in each, the energy is split evenly among the pieces (threads) active.
  std::vector<int64_t> cuts = {curve.start(), curve.end()};
  for (auto* list : {&pieces, &issue_pieces}) {
    for (auto& p : *list) {
      p.start_ns = std::clamp(p.start_ns, curve.start(), curve.end());
      p.end_ns = std::clamp(p.end_ns, curve.start(), curve.end());
      cuts.push_back(p.start_ns);
      cuts.push_back(p.end_ns);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto cut_index = [&](int64_t t) {
    return static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin());
  };
  std::vector<int> active_delta(cuts.size() + 1, 0), issuing_delta(cuts.size() + 1, 0);
  for (const auto& p : pieces) {
    if (p.end_ns <= p.start_ns) continue;
    active_delta[cut_index(p.start_ns)] += 1;
    active_delta[cut_index(p.end_ns)] -= 1;
  }
  for (const auto& p : issue_pieces) {
    if (p.end_ns <= p.start_ns) continue;
    issuing_delta[cut_index(p.start_ns)] += 1;
    issuing_delta[cut_index(p.end_ns)] -= 1;
  }
  out.ops_start_ns = out.ops_end_ns = curve.start();
  if (!pieces.empty()) {
    out.ops_start_ns = curve.end();
    for (const auto& p : pieces) {
      if (p.end_ns <= p.start_ns) continue;
      out.ops_start_ns = std::min(out.ops_start_ns, p.start_ns);
      out.ops_end_ns = std::max(out.ops_end_ns, p.end_ns);
    }
    out.ops_start_ns = std::min(out.ops_start_ns, out.ops_end_ns);
  }
  // share_prefix[k]: energy per active thread, summed over intervals before
  // cut k; issue_prefix[k]: the same per issuing thread, in intervals where
  // no op runs on any thread (issue time never takes energy from an op).
  std::vector<double> share_prefix(cuts.size(), 0), issue_prefix(cuts.size(), 0);
  int active = 0, issuing = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    active += active_delta[k];
    issuing += issuing_delta[k];
    double de = curve.At(cuts[k + 1]) - curve.At(cuts[k]);
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

  out.ops.resize(trace.ops.size());
  for (size_t i = 0; i < trace.ops.size(); ++i) out.ops[i].op_id = trace.ops[i].id;
  // Each piece takes its share of the energy over its interval (prefix sums)
  // into the op's field pair, and into the trace-wide sum.
  auto charge = [&](const std::vector<Piece>& list, const std::vector<double>& prefix, double OpEnergy::*uj,
                    int64_t OpEnergy::*ns, double* sum_uj) {
    for (const auto& p : list) {
      if (p.end_ns <= p.start_ns) continue;
      const double e = prefix[cut_index(p.end_ns)] - prefix[cut_index(p.start_ns)];
      out.ops[p.op].*uj += e;
      out.ops[p.op].*ns += p.end_ns - p.start_ns;
      *sum_uj += e;
    }
  };
  charge(pieces, share_prefix, &OpEnergy::exclusive_uj, &OpEnergy::exclusive_ns, &out.attributed_uj);
  charge(issue_pieces, issue_prefix, &OpEnergy::issue_uj, &OpEnergy::issue_ns, &out.issue_uj);
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    if (!recorder_op[i]) continue;
    out.recorder_uj += out.ops[i].exclusive_uj;
    out.recorder_ns += out.ops[i].exclusive_ns;
  }
  // Inclusive: children were pushed after their parents, so walking ops by
  // descending start (then ascending length) visits children before parents.
  std::vector<size_t> order(trace.ops.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    out.ops[i].inclusive_uj = out.ops[i].exclusive_uj;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = trace.ops[a], &y = trace.ops[b];
    if (x.start_ns != y.start_ns) return x.start_ns > y.start_ns;
    if (x.end_ns != y.end_ns) return x.end_ns < y.end_ns;
    return a > b;
  });
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
  out.job_uj -= out.recorder_uj;
  return out;
}

StatusOr<Attribution> AttributeEnergy(const Trace& trace, const std::string& domain) {
  return AttributeEnergy(trace, trace.energy_samples, domain);
}

}  // namespace magneton::energy
