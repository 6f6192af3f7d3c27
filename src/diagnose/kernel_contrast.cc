// Kernel contrast (issue 13): both sides call the same top-level ops, but one
// of them dispatches to other nested ops or device kernels (a flag chose
// another implementation, a shape took another path). The op names alone say
// "the same ops at different cost"; the nested sequences say which.
#include <algorithm>
#include <unordered_map>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

bool ValidOp(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.ops.size(); }

bool Descends(const Trace& t, int64_t id, int64_t ancestor) {
  for (int depth = 0; ValidOp(t, id) && depth < 256; ++depth) {
    id = t.ops[id].parent_id;
    if (id == ancestor) return true;
  }
  return false;
}

class Nested {
 public:
  // Activities by the op they were charged to; traces whose activities
  // name no op are joined on the correlation id.
  explicit Nested(const Trace& t) : t_(t) {
    for (const DeviceActivity& d : t.device_activities) {
      if (d.op_id != kNoId) {
        by_op_[d.op_id].push_back(&d);
      } else if (d.correlation_id != 0) {
        kernels_[d.correlation_id].push_back(&d);
      }
    }
  }
  // The op's nested op names in start order, then the device kernels it and
  // they launched ("kernel:<name>").
  std::vector<std::string> Of(int64_t id) const {
    std::vector<std::string> names, kernels;
    auto add_kernels = [&](const OpEvent& op) {
      if (auto it = by_op_.find(op.id); it != by_op_.end()) {
        for (const DeviceActivity* d : it->second) kernels.push_back("kernel:" + t_.str(d->name_id));
      }
      if (op.correlation_id == 0) return;
      auto it = kernels_.find(op.correlation_id);
      if (it == kernels_.end()) return;
      for (const DeviceActivity* d : it->second) kernels.push_back("kernel:" + t_.str(d->name_id));
    };
    const OpEvent& root = t_.ops[id];
    add_kernels(root);
    // Ops are in start order: the subtree follows its root, interleaved at
    // most with other threads' ops.
    for (size_t i = static_cast<size_t>(id) + 1; i < t_.ops.size() && t_.ops[i].start_ns <= root.end_ns; ++i) {
      const OpEvent& op = t_.ops[i];
      // The recorder's own work (value fingerprints) is not the op's.
      if (op.thread_id != root.thread_id || IsRecorderOp(t_, op) || !Descends(t_, op.id, id)) continue;
      names.push_back(t_.str(op.name_id));
      add_kernels(op);
    }
    names.insert(names.end(), kernels.begin(), kernels.end());
    return names;
  }

 private:
  const Trace& t_;
  std::unordered_map<uint64_t, std::vector<const DeviceActivity*>> kernels_;
  std::unordered_map<int64_t, std::vector<const DeviceActivity*>> by_op_;
};

// The op's inputs as shape and dtype, by slot.
std::vector<std::pair<std::vector<int64_t>, std::string>> InputSignature(const Trace& t, int64_t op) {
  std::vector<std::pair<std::vector<int64_t>, std::string>> out;
  for (const OpTensor& l : t.LinksOf(op)) {
    if (l.role != TensorRole::kInput || l.tensor_id < 0 || static_cast<size_t>(l.tensor_id) >= t.tensors.size())
      continue;
    out.emplace_back(t.tensors[l.tensor_id].shape, t.tensors[l.tensor_id].dtype);
  }
  return out;
}

}  // namespace

KernelContrast ContrastKernels(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                               const std::vector<int64_t>& ops_b, char costly_side) {
  KernelContrast out;
  if (ops_a.size() != ops_b.size()) return out;
  const Nested nested_a(a), nested_b(b);
  const bool a_costly = costly_side != 'B';
  int64_t best_ns = -1;
  for (size_t i = 0; i < ops_a.size(); ++i) {
    const int64_t ia = ops_a[i], ib = ops_b[i];
    if (!ValidOp(a, ia) || !ValidOp(b, ib)) return KernelContrast{};
    if (a.str(a.ops[ia].name_id) != b.str(b.ops[ib].name_id)) return KernelContrast{};  // not the same top-level ops
    const OpEvent& costly = a_costly ? a.ops[ia] : b.ops[ib];
    const int64_t ns = costly.end_ns - costly.start_ns;
    if (ns <= best_ns) continue;
    // Other shapes or dtypes take other paths by themselves (the shape and
    // dtype contrasts say so): only the same inputs make it the API's choice.
    if (InputSignature(a, ia) != InputSignature(b, ib)) continue;
    std::vector<std::string> na = nested_a.Of(ia), nb = nested_b.Of(ib);
    if (na == nb) continue;
    best_ns = ns;
    out.found = true;
    out.op = a.str(a.ops[ia].name_id);
    out.nested_a = std::move(na);
    out.nested_b = std::move(nb);
  }
  return out;
}

}  // namespace magneton::diagnose
