// What one region costs on one side, and whether its outputs agree.
#include <fmt/format.h>

#include <algorithm>

#include "detect/detect.h"

namespace magneton::detect {

SideCost CostOf(const Trace& trace, const energy::Attribution& attribution, std::span<const int64_t> node_ops) {
  SideCost cost;
  for (int64_t id : node_ops) {
    if (id < 0 || static_cast<size_t>(id) >= trace.ops.size()) continue;
    // Graph nodes stand for their whole subtree, so inclusive energy is the
    // sum of the exclusive energy of every op the node covers. A top-level
    // node also carries its issue time: the host code between the previous op
    // and this one (Python, dispatch, frees) is part of what the region costs,
    // wherever an engine draws its op boundaries.
    // The recorder's fingerprinting nested in it is neither its energy nor
    // its time.
    // On a GPU the host op may return long before the kernels it queued have
    // run (or wait for them): the node takes the longer of its host time and
    // its device time (device attribution; 0 otherwise).
    int64_t recorder_ns = 0, device_ns = 0;
    if (static_cast<size_t>(id) < attribution.ops.size()) {
      const energy::OpEnergy& e = attribution.ops[id];
      cost.energy_uj += e.inclusive_uj + e.issue_uj;
      cost.time_ns += e.issue_ns;
      cost.issue_uj += e.issue_uj;
      recorder_ns = e.recorder_ns;
      device_ns = attribution.DeviceTimeOf(static_cast<size_t>(id)).inclusive_device_ns;
    }
    const OpEvent& op = trace.ops[id];
    cost.time_ns += std::max<int64_t>({0, op.end_ns - op.start_ns - recorder_ns, device_ns});
  }
  return cost;
}

bool OutputsAgree(std::span<const TensorPair> outputs, const FingerprintMap& fa, const FingerprintMap& fb,
                  double epsilon, std::string* note) {
  if (outputs.empty()) {
    *note = "no output tensors to compare";
    return false;
  }
  for (const TensorPair& p : outputs) {
    auto ia = fa.find(p.a);
    auto ib = fb.find(p.b);
    if (ia == fa.end() || ib == fb.end()) {
      *note = fmt::format("no fingerprint for output t{} / t{}", p.a, p.b);
      return false;
    }
    EquivalenceVerdict v = CompareFingerprints(ia->second, ib->second, epsilon);
    if (!v.equivalent) {
      *note = fmt::format("outputs t{} / t{} differ: {}", p.a, p.b, v.reason);
      return false;
    }
  }
  *note = fmt::format("{} output tensor(s) agree within {:g}", outputs.size(), epsilon);
  return true;
}

}  // namespace magneton::detect
