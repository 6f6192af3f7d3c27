#include "gpu/clock_align.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

namespace magneton::gpu {
namespace {

using Group = std::vector<std::pair<int64_t, size_t>>;  // (start_ns, index into ops), by start

// The recorder names an op with its overload ("aten::transpose.int"), the
// profiler without ("aten::transpose"): both pair on the name before it.
std::string_view BaseName(std::string_view name) {
  const size_t ns = name.find("::");
  if (ns == std::string_view::npos) return name;
  const size_t dot = name.find('.', ns + 2);
  return dot == std::string_view::npos ? name : name.substr(0, dot);
}

class OpIndex {
 public:
  explicit OpIndex(const std::vector<OpSpan>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      groups_[{ops[i].thread_id, std::string(BaseName(ops[i].name))}].emplace_back(ops[i].start_ns, i);
    }
    for (auto& [_, g] : groups_) std::sort(g.begin(), g.end());
  }
  const Group* Find(int64_t thread, const std::string& name) const {
    auto it = groups_.find({thread, std::string(BaseName(name))});
    return it == groups_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::pair<int64_t, std::string>, Group> groups_;
};

// The op of `g` starting nearest `t`, within `tol`: its index into ops, or -1.
int64_t Nearest(const Group& g, int64_t t, int64_t tol, int64_t* diff) {
  auto it = std::lower_bound(g.begin(), g.end(), std::make_pair(t, size_t{0}));
  int64_t best = -1, best_d = tol + 1;
  for (auto c : {it, it == g.begin() ? g.end() : std::prev(it)}) {
    if (c == g.end()) continue;
    const int64_t d = std::llabs(c->first - t);
    if (d < best_d) {
      best_d = d;
      best = static_cast<int64_t>(c->second);
    }
  }
  if (best < 0) return -1;
  *diff = best_d;
  return best;
}

struct Score {
  size_t pairs = 0;
  int64_t abs_sum_ns = 0;
  bool Better(const Score& o) const { return pairs != o.pairs ? pairs > o.pairs : abs_sum_ns < o.abs_sum_ns; }
};

// The midpoint of the two middle values for an even count: with starts
// and ends split into two clusters, that centres the offset between them.
int64_t MedianOf(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const int64_t upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const int64_t lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

// PairHostOps on an index already built.
std::vector<int64_t> PairAt(const OpIndex& index, const ActivityBatch& batch, int64_t offset_ns,
                            int64_t tolerance_ns) {
  std::vector<int64_t> out(batch.host_ops.size(), -1);
  for (size_t i = 0; i < batch.host_ops.size(); ++i) {
    const HostOp& h = batch.host_ops[i];
    const Group* g = index.Find(h.thread_id, h.name);
    int64_t d = 0;
    if (g) out[i] = Nearest(*g, h.start_ns - offset_ns, tolerance_ns, &d);
  }
  return out;
}

}  // namespace

std::vector<int64_t> PairHostOps(const ActivityBatch& batch, const std::vector<OpSpan>& ops, int64_t offset_ns,
                                 int64_t tolerance_ns) {
  return PairAt(OpIndex(ops), batch, offset_ns, tolerance_ns);
}

StatusOr<ClockMapping> AlignClocks(const ActivityBatch& batch, const std::vector<OpSpan>& ops,
                                   const AlignOptions& options) {
  const OpIndex index(ops);
  const int64_t tol = options.pair_tolerance_ns;
  ClockMapping out;
  out.host_ops = batch.host_ops.size();

  // Host ops that have a recorded namesake on their thread; scoring looks at
  // an even sample of them (every pairing costs a binary search).
  std::vector<size_t> usable;
  for (size_t i = 0; i < batch.host_ops.size(); ++i) {
    if (index.Find(batch.host_ops[i].thread_id, batch.host_ops[i].name)) usable.push_back(i);
  }
  std::vector<size_t> sample;
  const size_t kSample = 4000;
  for (size_t k = 0; k < usable.size() && sample.size() < kSample; ++k) {
    sample.push_back(usable[usable.size() <= kSample ? k : k * usable.size() / kSample]);
  }
  auto score = [&](int64_t offset) {
    Score s;
    for (size_t i : sample) {
      const HostOp& h = batch.host_ops[i];
      int64_t d = 0;
      if (Nearest(*index.Find(h.thread_id, h.name), h.start_ns - offset, tol, &d) >= 0) {
        ++s.pairs;
        s.abs_sum_ns += d;
      }
    }
    return s;
  };

  // Data candidates: the rarest names pin the offset down (a name run once
  // on each side gives one candidate).
  std::vector<size_t> by_rarity = usable;
  std::sort(by_rarity.begin(), by_rarity.end(), [&](size_t a, size_t b) {
    const auto& ha = batch.host_ops[a];
    const auto& hb = batch.host_ops[b];
    const size_t na = index.Find(ha.thread_id, ha.name)->size(), nb = index.Find(hb.thread_id, hb.name)->size();
    return na != nb ? na < nb : a < b;
  });
  std::set<int64_t> candidates;
  std::set<std::pair<int64_t, std::string>> seen_groups;
  for (size_t i : by_rarity) {
    const HostOp& h = batch.host_ops[i];
    if (!seen_groups.insert({h.thread_id, std::string(BaseName(h.name))}).second) continue;
    const Group& g = *index.Find(h.thread_id, h.name);
    const size_t step = std::max<size_t>(1, g.size() / 256);
    for (size_t k = 0; k < g.size(); k += step) candidates.insert(h.start_ns - g[k].first);
    if (seen_groups.size() >= 16) break;
  }

  int64_t best_offset = 0;
  Score best;
  std::string best_prior;
  for (int64_t c : candidates) {
    const Score s = score(c);
    if (s.Better(best)) {
      best = s;
      best_offset = c;
    }
  }
  // A data-only fit needs a few pairs: one could be a coincidence.
  if (best.pairs < std::min<size_t>(3, usable.size())) best = Score{};
  for (const ClockPrior& p : options.priors) {
    const Score s = score(p.offset_ns);
    if (s.pairs > 0 && static_cast<double>(s.pairs) >= options.prior_preference * static_cast<double>(best.pairs) &&
        (best_prior.empty() || s.Better(best))) {
      best = s;
      best_offset = p.offset_ns;
      best_prior = p.name;
    }
  }

  const int64_t resolution = batch.timestamp_resolution_ns;
  if (best.pairs == 0) {
    if (options.priors.empty()) {
      return FailedPrecondition("cannot put the device activity on the op clock: none of the source's " +
                                std::to_string(batch.host_ops.size()) +
                                " host ops pairs with a recorded op, and no clock reading was taken around it");
    }
    const ClockPrior& p = options.priors.front();
    out.offset_ns = p.offset_ns;
    out.method = p.name;
    out.prior_used = p.name;
    out.error_ns = p.uncertainty_ns + resolution;
    return out;
  }

  // Refine to the median residual, then measure. Both stamps of a paired op
  // count: the two callbacks run in one order at the op's start and may run
  // in the other at its end, with one callback's own work between the two
  // readings, so the separation at the end can differ from the one at the
  // start (measured here: 10 µs at an end where every start agreed within
  // 4 µs). A device timestamp is compared with both (a kernel that starts
  // after its op ended is judged against the end), so the bound covers both.
  struct Pair {
    size_t host = 0;
    size_t op = 0;
  };
  auto pairs_at = [&](int64_t offset) {
    std::vector<Pair> pairs;
    const std::vector<int64_t> paired = PairAt(index, batch, offset, tol);
    for (size_t i = 0; i < paired.size(); ++i) {
      if (paired[i] >= 0) pairs.push_back({i, static_cast<size_t>(paired[i])});
    }
    return pairs;
  };
  // Signed residuals (source − offset − recorded) of both stamps of each pair.
  auto residuals_of = [&](const std::vector<Pair>& pairs, int64_t offset) {
    std::vector<int64_t> r;
    r.reserve(2 * pairs.size());
    for (const Pair& p : pairs) {
      const HostOp& h = batch.host_ops[p.host];
      r.push_back(h.start_ns - offset - ops[p.op].start_ns);
      r.push_back(h.end_ns - offset - ops[p.op].end_ns);
    }
    return r;
  };
  out.offset_ns = best_offset + MedianOf(residuals_of(pairs_at(best_offset), best_offset));
  const std::vector<Pair> pairs = pairs_at(out.offset_ns);
  std::vector<int64_t> residuals = residuals_of(pairs, out.offset_ns);
  for (int64_t& r : residuals) r = std::llabs(r);
  out.paired = pairs.size();
  std::sort(residuals.begin(), residuals.end());
  out.residual_p50_ns = residuals.empty() ? 0 : residuals[residuals.size() / 2];
  out.residual_max_ns = residuals.empty() ? 0 : residuals.back();
  // The bound: what 95% of the stamps agree within (every stamp below 20
  // pairs). The rest are the callbacks of a first call, tens of µs apart
  // while one of them warms up (torch 2.13: the first op after the profiler
  // starts).
  out.residual_p95_ns = residuals.empty() ? 0
                        : pairs.size() < 20 ? residuals.back()
                                            : residuals[(residuals.size() * 95 + 99) / 100 - 1];
  out.method = "host_ops";
  out.prior_used = best_prior;
  out.error_ns = out.residual_p95_ns + resolution;
  return out;
}

}  // namespace magneton::gpu
