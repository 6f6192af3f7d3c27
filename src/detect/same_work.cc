// Same work on both sides: the region runs the same ops, in the same order,
// with the same non-tensor arguments, on inputs of the same shapes and
// dtypes. Then the two sides do identical computation and a cost difference can only come from how it ran (a kernel
// choice, a thread count, autograd bookkeeping) or from timing noise; the
// per-op pairs let detection tell the two apart (regions.cc). Where device
// activity was recorded, a kernel choice is seen, not inferred: regions.cc
// also requires the same device kernels under each op pair.
#include <algorithm>
#include <cmath>

#include "detect/detect.h"

namespace magneton::detect {
namespace {

struct InputShape {
  int32_t slot;
  const TensorMeta* tensor;
};

std::vector<InputShape> InputsOf(const Trace& trace, int64_t op_id) {
  std::vector<InputShape> out;
  for (const OpTensor& l : trace.LinksOf(op_id)) {
    if (l.role != TensorRole::kInput) continue;
    const TensorMeta* t = l.tensor_id >= 0 && static_cast<size_t>(l.tensor_id) < trace.tensors.size()
                              ? &trace.tensors[static_cast<size_t>(l.tensor_id)]
                              : nullptr;
    out.push_back({l.slot, t});
  }
  return out;
}

bool SameInputs(const Trace& a, int64_t op_a, const Trace& b, int64_t op_b) {
  const auto ia = InputsOf(a, op_a);
  const auto ib = InputsOf(b, op_b);
  if (ia.size() != ib.size()) return false;
  for (size_t i = 0; i < ia.size(); ++i) {
    if (ia[i].slot != ib[i].slot || !ia[i].tensor || !ib[i].tensor) return false;
    if (ia[i].tensor->shape != ib[i].tensor->shape || ia[i].tensor->dtype != ib[i].tensor->dtype) return false;
  }
  return true;
}

}  // namespace

bool SameWork(const Trace& a, std::span<const int64_t> ops_a, const Trace& b, std::span<const int64_t> ops_b) {
  if (ops_a.empty() || ops_a.size() != ops_b.size()) return false;
  for (size_t i = 0; i < ops_a.size(); ++i) {
    const int64_t x = ops_a[i], y = ops_b[i];
    if (x < 0 || y < 0 || static_cast<size_t>(x) >= a.ops.size() || static_cast<size_t>(y) >= b.ops.size()) return false;
    if (a.str(a.ops[x].name_id) != b.str(b.ops[y].name_id)) return false;
    // The op's other arguments choose the work too: linalg_svd with
    // full_matrices=True builds an m x m U from the same input.
    if (a.ops[x].args != b.ops[y].args) return false;
    if (!SameInputs(a, x, b, y)) return false;
  }
  return true;
}

std::vector<PairRatio> PairRatios(const energy::Attribution& ea, std::span<const int64_t> ops_a,
                                  const energy::Attribution& eb, std::span<const int64_t> ops_b) {
  std::vector<PairRatio> out;
  const size_t n = std::min(ops_a.size(), ops_b.size());
  out.reserve(n);
  auto energy_of = [](const energy::Attribution& e, int64_t id) {
    if (id < 0 || static_cast<size_t>(id) >= e.ops.size()) return 0.0;
    return e.ops[static_cast<size_t>(id)].inclusive_uj + e.ops[static_cast<size_t>(id)].issue_uj;
  };
  for (size_t i = 0; i < n; ++i) {
    // A floor of 1 nJ keeps ops too short to register from dividing by zero.
    const double x = std::max(energy_of(ea, ops_a[i]), 1e-3);
    const double y = std::max(energy_of(eb, ops_b[i]), 1e-3);
    // Weighed by the cheaper side: a stall that slows one op must not also
    // make that pair count more in the median it would shift.
    out.push_back({std::log(x / y), std::min(x, y)});
  }
  return out;
}

double WeightedQuantileLogRatio(std::vector<PairRatio> pairs, double q) {
  if (pairs.empty()) return 0;
  std::sort(pairs.begin(), pairs.end(), [](const PairRatio& x, const PairRatio& y) { return x.log_ratio < y.log_ratio; });
  double total = 0;
  for (const PairRatio& p : pairs) total += p.energy_uj;
  double seen = 0;
  for (const PairRatio& p : pairs) {
    seen += p.energy_uj;
    if (seen >= q * total) return p.log_ratio;
  }
  return pairs.back().log_ratio;
}

double WeightedMedianLogRatio(std::vector<PairRatio> pairs) { return WeightedQuantileLogRatio(std::move(pairs), 0.5); }

double EffectivePairs(const std::vector<PairRatio>& pairs) {
  double sum = 0, sum_sq = 0;
  for (const PairRatio& p : pairs) {
    sum += p.energy_uj;
    sum_sq += p.energy_uj * p.energy_uj;
  }
  return sum_sq > 0 ? sum * sum / sum_sq : 0;
}

}  // namespace magneton::detect
