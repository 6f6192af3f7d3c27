#include "report/trace_tables.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "base/format.h"
#include "diagnose/diagnose.h"
#include "energy/attribution.h"
#include "trace/op_index.h"
#include "trace/op_times.h"

namespace magneton::report {
namespace {

template <typename T>
std::vector<T>& Add(Table& table, const std::string& name, size_t rows) {
  table.push_back({name, std::vector<T>()});
  auto& values = std::get<std::vector<T>>(table.back().values);
  values.reserve(rows);
  return values;
}

// Frames are shared by many ops through their call path: resolved once per path.
struct SourceOfPath {
  std::string user_frame;
  std::string frame;
};

Table OpsTable(const Trace& trace) {
  const size_t n = trace.ops.size();
  Table t;
  auto& id = Add<int64_t>(t, "op_id", n);
  auto& name = Add<std::string>(t, "name", n);
  auto& thread = Add<int64_t>(t, "thread_id", n);
  auto& start = Add<int64_t>(t, "start_ns", n);
  auto& end = Add<int64_t>(t, "end_ns", n);
  auto& duration = Add<int64_t>(t, "duration_ns", n);
  auto& self = Add<int64_t>(t, "self_ns", n);
  auto& parent = Add<int64_t>(t, "parent_id", n);
  auto& scope = Add<std::string>(t, "scope", n);
  auto& user_frame = Add<std::string>(t, "user_frame", n);
  auto& frame = Add<std::string>(t, "frame", n);
  auto& inputs = Add<std::vector<int64_t>>(t, "inputs", n);
  auto& outputs = Add<std::vector<int64_t>>(t, "outputs", n);
  auto& args = Add<std::string>(t, "args", n);

  const std::vector<int64_t> self_ns = SelfTimesNs(trace);
  std::unordered_map<int64_t, std::string> scopes;
  std::unordered_map<int64_t, SourceOfPath> sources;
  for (size_t i = 0; i < n; ++i) {
    const OpEvent& op = trace.ops[i];
    id.push_back(op.id);
    name.push_back(trace.str(op.name_id));
    thread.push_back(op.thread_id);
    start.push_back(op.start_ns);
    end.push_back(op.end_ns);
    duration.push_back(op.end_ns - op.start_ns);
    self.push_back(self_ns[i]);
    parent.push_back(op.parent_id);
    auto s = scopes.find(op.scope_id);
    if (s == scopes.end()) s = scopes.emplace(op.scope_id, trace.ScopePath(op.scope_id)).first;
    scope.push_back(s->second);
    auto src = sources.find(op.call_path_id);
    if (src == sources.end()) {
      SourceOfPath resolved;
      const std::vector<std::string> frames = trace.CallPathFrames(op.call_path_id);  // outermost first
      if (!frames.empty()) resolved.frame = frames.back();
      // The same rule as a diff's source sites (diagnose): the innermost frame
      // outside library code.
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        if (!diagnose::IsLibraryFrame(diagnose::ParseFrame(*it))) {
          resolved.user_frame = *it;
          break;
        }
      }
      src = sources.emplace(op.call_path_id, std::move(resolved)).first;
    }
    user_frame.push_back(src->second.user_frame);
    frame.push_back(src->second.frame);
    std::vector<int64_t> in, out;
    for (const OpTensor& link : trace.LinksOf(op.id)) {
      (link.role == TensorRole::kInput ? in : out).push_back(link.tensor_id);
    }
    inputs.push_back(std::move(in));
    outputs.push_back(std::move(out));
    args.push_back(op.args);
  }
  return t;
}

Table TensorsTable(const Trace& trace) {
  const size_t n = trace.tensors.size();
  Table t;
  auto& id = Add<int64_t>(t, "tensor_id", n);
  auto& shape = Add<std::vector<int64_t>>(t, "shape", n);
  auto& strides = Add<std::vector<int64_t>>(t, "strides", n);
  auto& dtype = Add<std::string>(t, "dtype", n);
  auto& device = Add<std::string>(t, "device", n);
  auto& addr = Add<int64_t>(t, "storage_addr", n);
  auto& offset = Add<int64_t>(t, "storage_offset", n);
  auto& version = Add<int64_t>(t, "version", n);
  auto& producer = Add<int64_t>(t, "producer_op_id", n);
  for (const TensorMeta& m : trace.tensors) {
    id.push_back(m.id);
    shape.push_back(m.shape);
    strides.push_back(m.strides);
    dtype.push_back(m.dtype);
    device.push_back(m.device);
    // Addresses of user space fit in 63 bits; Python ints and int64 columns take them as they are.
    addr.push_back(static_cast<int64_t>(m.storage_addr));
    offset.push_back(m.storage_offset);
    version.push_back(m.version);
    producer.push_back(m.producer_op_id);
  }
  return t;
}

Table ConfigTable(const Trace& trace) {
  const size_t n = trace.config.size();
  Table t;
  auto& key = Add<std::string>(t, "key", n);
  auto& value = Add<std::string>(t, "value", n);
  auto& source = Add<std::string>(t, "source", n);
  for (const ConfigEntry& c : trace.config) {
    key.push_back(c.key);
    value.push_back(c.value);
    source.push_back(c.source);
  }
  return t;
}

Table EnergyTable(const Trace& trace, const energy::Attribution* a) {
  const size_t n = a ? std::min(a->ops.size(), trace.ops.size()) : 0;
  Table t;
  auto& id = Add<int64_t>(t, "op_id", n);
  auto& name = Add<std::string>(t, "name", n);
  auto& exclusive = Add<double>(t, "energy_uj", n);
  auto& inclusive = Add<double>(t, "inclusive_uj", n);
  auto& issue = Add<double>(t, "issue_uj", n);
  auto& self = Add<int64_t>(t, "self_ns", n);
  auto& domain = Add<std::string>(t, "domain", n);
  auto& provenance = Add<std::string>(t, "provenance", n);
  for (size_t i = 0; i < n; ++i) {
    const energy::OpEnergy& e = a->ops[i];
    id.push_back(trace.ops[i].id);
    name.push_back(trace.str(trace.ops[i].name_id));
    exclusive.push_back(e.exclusive_uj);
    inclusive.push_back(e.inclusive_uj);
    issue.push_back(e.issue_uj);
    self.push_back(e.exclusive_ns);
    domain.push_back(a->domain);
    // On every row, so a row copied out of the table still says what it is.
    provenance.push_back(ProvenanceName(a->provenance));
  }
  return t;
}

Table DeviceActivitiesTable(const Trace& trace) {
  // Each GPU domain's per-activity energy, where the trace has its samples.
  std::vector<const energy::KernelEnergy*> energy_of(trace.device_activities.size(), nullptr);
  std::vector<std::pair<std::string, std::string>> domain_of(trace.device_activities.size());
  std::vector<energy::Attribution> attributions;
  std::set<std::string> domains;
  for (const EnergySample& s : trace.energy_samples) domains.insert(s.domain);
  for (const std::string& d : domains) {
    if (!energy::HasDeviceActivity(trace, d)) continue;
    auto a = energy::AttributeEnergy(trace, d);
    if (a.ok()) attributions.push_back(std::move(*a));
  }
  for (const energy::Attribution& a : attributions) {
    for (const energy::DeviceEnergy& dev : a.devices) {
      for (const energy::KernelEnergy& k : dev.kernels) {
        energy_of[k.activity] = &k;
        domain_of[k.activity] = {dev.domain, ProvenanceName(dev.provenance)};
      }
    }
  }
  const OpIndexOfId index_of(trace);
  const size_t n = trace.device_activities.size();
  Table t;
  auto& op_id = Add<int64_t>(t, "op_id", n);
  auto& op_name = Add<std::string>(t, "op_name", n);
  auto& name = Add<std::string>(t, "name", n);
  auto& kind = Add<std::string>(t, "kind", n);
  auto& device = Add<std::string>(t, "device", n);
  auto& stream = Add<int64_t>(t, "stream", n);
  auto& start = Add<int64_t>(t, "start_ns", n);
  auto& end = Add<int64_t>(t, "end_ns", n);
  auto& duration = Add<int64_t>(t, "duration_ns", n);
  auto& energy_uj = Add<double>(t, "energy_uj", n);
  auto& shared = Add<int64_t>(t, "shared_ns", n);
  auto& domain = Add<std::string>(t, "domain", n);
  auto& provenance = Add<std::string>(t, "provenance", n);
  // CUDA graphs (docs/TRACE_FORMAT.md): -1 / "" where no graph ran it.
  auto& graph_id = Add<int64_t>(t, "graph_id", n);
  auto& graph_node_id = Add<int64_t>(t, "graph_node_id", n);
  auto& captured_op_id = Add<int64_t>(t, "captured_op_id", n);
  auto& captured_op_name = Add<std::string>(t, "captured_op_name", n);
  for (size_t i = 0; i < n; ++i) {
    const DeviceActivity& a = trace.device_activities[i];
    const int64_t captured = a.captured_op_id == kNoId ? -1 : index_of.Find(a.captured_op_id);
    graph_id.push_back(a.graph_id);
    graph_node_id.push_back(a.graph_node_id);
    captured_op_id.push_back(captured < 0 ? -1 : a.captured_op_id);
    captured_op_name.push_back(captured < 0 ? "" : trace.str(trace.ops[static_cast<size_t>(captured)].name_id));
    const int64_t op = a.op_id == kNoId ? -1 : index_of.Find(a.op_id);
    op_id.push_back(op < 0 ? -1 : a.op_id);
    op_name.push_back(op < 0 ? "" : trace.str(trace.ops[static_cast<size_t>(op)].name_id));
    name.push_back(trace.str(a.name_id));
    kind.push_back(a.kind);
    device.push_back(a.device);
    stream.push_back(a.stream);
    start.push_back(a.start_ns);
    end.push_back(a.end_ns);
    duration.push_back(a.end_ns - a.start_ns);
    energy_uj.push_back(energy_of[i] ? energy_of[i]->energy_uj : std::numeric_limits<double>::quiet_NaN());
    shared.push_back(energy_of[i] ? energy_of[i]->shared_ns : 0);
    domain.push_back(domain_of[i].first);
    provenance.push_back(domain_of[i].second);
  }
  return t;
}

}  // namespace

StatusOr<TraceTables> TraceAsTables(const Trace& trace, const std::string& domain) {
  TraceTables out;
  std::set<std::string> domains;
  for (const EnergySample& s : trace.energy_samples) domains.insert(s.domain);
  out.energy_info.domains.assign(domains.begin(), domains.end());
  if (!domain.empty() && !domains.count(domain)) {
    std::string have;
    for (const std::string& d : domains) have += (have.empty() ? "" : ", ") + d;
    return InvalidArgument("energy domain '" + domain + "' is not in this trace (it has: " +
                           (have.empty() ? std::string("no energy samples") : have) + ")");
  }

  // The domain with the most energy unless one is asked for: domains overlap
  // (core inside package), so one stands for the run, as in a diff.
  std::optional<energy::Attribution> chosen;
  std::string why_not;
  for (const std::string& d : domains) {
    if (!domain.empty() && d != domain) continue;
    auto a = energy::AttributeEnergy(trace, d);
    if (!a.ok()) {
      if (!domain.empty()) return a.status();
      why_not += (why_not.empty() ? "" : "; ") + d + ": " + a.status().message();
      continue;
    }
    if (!chosen || a->total_uj > chosen->total_uj) chosen = std::move(*a);
  }
  EnergyInfo& info = out.energy_info;
  if (chosen) {
    info.domain = chosen->domain;
    info.provenance = ProvenanceName(chosen->provenance);
    info.total_uj = chosen->total_uj;
    info.attributed_uj = chosen->attributed_uj;
    info.unattributed_uj = chosen->unattributed_uj;
    info.job_uj = chosen->job_uj;
    info.window_start_ns = chosen->window_start_ns;
    info.window_end_ns = chosen->window_end_ns;
  } else {
    info.note = domains.empty() ? "no energy samples in this trace (recorded with MAGNETON_ENERGY=0, or no meter)"
                                : "no domain could be attributed: " + why_not;
  }

  out.ops = OpsTable(trace);
  out.tensors = TensorsTable(trace);
  out.energy = EnergyTable(trace, chosen ? &*chosen : nullptr);
  out.config = ConfigTable(trace);
  out.device_activities = DeviceActivitiesTable(trace);
  return out;
}

}  // namespace magneton::report
