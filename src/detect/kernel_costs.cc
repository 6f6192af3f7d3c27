// The device work behind each region: which kernels its ops launched and
// what they cost, so a GPU finding names kernels, not only host ops.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "detect/detect.h"
#include "trace/op_index.h"

namespace magneton::detect {
namespace {

// Finding index + 1 per region node op of one side, by op index (0: in no
// finding): a vector, not a hash map of the 600 000 node ops of a long run.
using NodeMap = std::vector<uint32_t>;

void Collect(const Trace& t, const energy::Attribution& e, const OpIndexOfId& index_of, const NodeMap& nodes,
             std::vector<Finding>* findings, bool side_a) {
  // (finding, name, kind) -> cost
  std::map<std::tuple<size_t, std::string, std::string>, KernelCost> sums;
  for (const energy::DeviceEnergy& dev : e.devices) {
    for (const energy::KernelEnergy& k : dev.kernels) {
      if (k.op_id == kNoId || k.activity >= t.device_activities.size()) continue;
      // The nearest node op at or above the charged op (nodes are top-level
      // ops, or leaves with --leaf-ops; depth is bounded against cycles).
      int64_t id = k.op_id;
      uint32_t node = 0;
      for (int depth = 0; depth < 256 && id != kNoId; ++depth) {
        const int64_t at = index_of.Find(id);
        if (at < 0) break;
        node = nodes[static_cast<size_t>(at)];
        if (node != 0) break;
        id = t.ops[static_cast<size_t>(at)].parent_id;
      }
      if (node == 0) continue;
      const DeviceActivity& a = t.device_activities[k.activity];
      KernelCost& c = sums[{node - 1, t.str(a.name_id), a.kind}];
      c.name = t.str(a.name_id);
      c.kind = a.kind;
      c.count += 1;
      c.energy_uj += k.energy_uj;
      c.time_ns += k.duration_ns;
    }
  }
  for (auto& [key, cost] : sums) {
    Finding& f = (*findings)[std::get<0>(key)];
    (side_a ? f.kernels_a : f.kernels_b).push_back(std::move(cost));
  }
  for (Finding& f : *findings) {
    auto& list = side_a ? f.kernels_a : f.kernels_b;
    std::stable_sort(list.begin(), list.end(), [](const KernelCost& x, const KernelCost& y) {
      return x.energy_uj != y.energy_uj ? x.energy_uj > y.energy_uj : x.name < y.name;
    });
  }
}

}  // namespace

std::unordered_map<int64_t, std::vector<std::string>> DeviceWorkOf(const Trace& t,
                                                                   const std::unordered_set<int64_t>& nodes) {
  std::unordered_map<int64_t, std::vector<std::string>> out;
  if (t.device_activities.empty() || nodes.empty()) return out;
  const OpIndexOfId index_of(t);
  std::vector<const DeviceActivity*> by_start;
  for (const DeviceActivity& a : t.device_activities) by_start.push_back(&a);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [](const DeviceActivity* x, const DeviceActivity* y) { return x->start_ns < y->start_ns; });
  for (const DeviceActivity* a : by_start) {
    int64_t id = a->op_id;
    for (int depth = 0; depth < 256 && id != kNoId; ++depth) {
      if (nodes.count(id)) {
        out[id].push_back(t.str(a->name_id));
        break;
      }
      const int64_t at = index_of.Find(id);
      if (at < 0) break;
      id = t.ops[static_cast<size_t>(at)].parent_id;
    }
  }
  return out;
}

void AddKernelCosts(const Trace& a, const energy::Attribution& ea, const Trace& b, const energy::Attribution& eb,
                    std::vector<Finding>* findings) {
  for (auto [t, e, side_a] : {std::tuple{&a, &ea, true}, std::tuple{&b, &eb, false}}) {
    if (e->devices.empty()) continue;  // host attribution: no kernels to name
    const OpIndexOfId index_of(*t);
    NodeMap nodes(t->ops.size(), 0);
    for (size_t i = 0; i < findings->size(); ++i) {
      for (const RegionInstance& in : (*findings)[i].instances) {
        for (int64_t id : side_a ? in.ops_a : in.ops_b) {
          const int64_t at = index_of.Find(id);
          if (at < 0) continue;
          uint32_t& node = nodes[static_cast<size_t>(at)];
          if (node == 0) node = static_cast<uint32_t>(i + 1);  // the first finding holding it
        }
      }
    }
    Collect(*t, *e, index_of, nodes, findings, side_a);
  }
}

}  // namespace magneton::detect
