#include "replay/replay_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "base/format.h"
#include "replay/replay_policy.h"
#include "trace/op_args.h"
#include "trace/op_times.h"

namespace magneton::replay {
namespace {

PlannedOp Describe(const Trace& trace, const OpEvent& op, const std::vector<const OpTensor*>& inputs) {
  PlannedOp p;
  p.op_id = op.id;
  p.name = trace.str(op.name_id);
  p.args = op.args;
  // Arguments that do not parse keep their text in the signature; replaying
  // the op then says what is wrong with them.
  auto args = ParseOpArgs(op.args);
  p.signature = p.name + "(" + (args.ok() ? FormatOpArgs(*args) : op.args.str()) + ")";
  for (const OpTensor* l : inputs) {
    const TensorMeta& t = trace.tensors[l->tensor_id];
    p.inputs.push_back({l->slot, t.shape, t.strides, t.dtype, t.device});
    p.signature += fmt::format(" {}[{}]{}", t.dtype, fmt::join(t.shape, "x"), t.device == "cpu" ? "" : "@" + t.device);
  }
  return p;
}

}  // namespace

StatusOr<std::vector<PlannedOp>> PlanReplay(const Trace& trace, int top, const std::vector<int64_t>& op_ids) {
  // Inputs by op, in slot order (op_tensors is sorted by op, role, slot).
  std::unordered_map<int64_t, std::vector<const OpTensor*>> inputs;
  for (const OpTensor& l : trace.op_tensors) {
    if (l.role == TensorRole::kInput) inputs[l.op_id].push_back(&l);
  }
  std::vector<int64_t> self = SelfTimesNs(trace);
  std::vector<PlannedOp> out;
  if (!op_ids.empty()) {
    for (int64_t id : op_ids) {
      auto it = std::lower_bound(trace.ops.begin(), trace.ops.end(), id,
                                 [](const OpEvent& op, int64_t v) { return op.id < v; });
      if (it == trace.ops.end() || it->id != id) return NotFound("the trace has no op " + std::to_string(id));
      PlannedOp p = Describe(trace, *it, inputs[id]);
      p.occurrences = 1;
      p.op_ids = {id};
      p.self_ns_total = self[it - trace.ops.begin()];
      out.push_back(std::move(p));
    }
    return out;
  }
  std::map<std::string, PlannedOp> by_signature;
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const OpEvent& op = trace.ops[i];
    PlannedOp p = Describe(trace, op, inputs[op.id]);
    auto [it, inserted] = by_signature.try_emplace(p.signature, std::move(p));
    it->second.occurrences += 1;
    it->second.op_ids.push_back(op.id);
    it->second.self_ns_total += self[i];
  }
  for (auto& [_, p] : by_signature) out.push_back(std::move(p));
  std::sort(out.begin(), out.end(), [](const PlannedOp& a, const PlannedOp& b) {
    return a.self_ns_total != b.self_ns_total ? a.self_ns_total > b.self_ns_total : a.signature < b.signature;
  });
  if (top > 0 && out.size() > static_cast<size_t>(top)) out.resize(top);
  return out;
}

std::string FormatReplayTable(const std::vector<ReplayRecord>& records) {
  std::string out = fmt::format("{:<60} {:>6} {:>12} {:>8} {:>14} {:>8} {:>14} {:>8}  {}\n", "op signature", "count",
                                "µs/call", "±%", "µJ/call", "±%", "online µJ", "ratio", "provenance, method");
  int refused = 0;
  for (const ReplayRecord& r : records) {
    std::string sig = ClipUtf8(r.signature, 60, "...");
    if (r.error.rfind(kRefusedPrefix, 0) == 0) {
      ++refused;
      out += fmt::format("{:<60} {:>6}  not replayed, {}\n", sig, r.occurrences, r.error);
      continue;
    }
    if (!r.error.empty()) {
      out += fmt::format("{:<60} {:>6}  not replayed: {}\n", sig, r.occurrences, r.error);
      continue;
    }
    auto pct = [](double sd, double mean) { return mean != 0 ? 100.0 * sd / std::fabs(mean) : 0.0; };
    const bool energy = !std::isnan(r.energy_uj_mean);
    const bool online = energy && !std::isnan(r.online_energy_uj);
    std::string energy_text = energy ? fmt::format("{:.3f}", r.energy_uj_mean) : "-";
    std::string energy_pct = energy ? fmt::format("{:.1f}", pct(r.energy_uj_stddev, r.energy_uj_mean)) : "-";
    // replay / online: above 1, the recording charged the op less than it
    // costs run alone (overlap, or its energy landed on neighbours).
    std::string online_text = online ? fmt::format("{:.3f}", r.online_energy_uj) : "-";
    std::string ratio = online && r.online_energy_uj != 0 ? fmt::format("{:.2f}", r.energy_uj_mean / r.online_energy_uj)
                                                          : "-";
    std::string prov = r.meter.empty() ? "time only (no meter)"
                                       : fmt::format("{} ({})", ProvenanceName(r.provenance), r.meter);
    if (!r.method.empty()) prov += ", " + r.method;
    out += fmt::format("{:<60} {:>6} {:>12.3f} {:>8.1f} {:>14} {:>8} {:>14} {:>8}  {}\n", sig, r.occurrences,
                       r.duration_ns_mean / 1000.0, pct(r.duration_ns_stddev, r.duration_ns_mean), energy_text,
                       energy_pct, online_text, ratio, prov);
  }
  if (refused > 0) {
    out += fmt::format("{} op signature{} refused: replay calls only side-effect-free ATen tensor ops "
                       "(docs/ENERGY.md, \"Which ops replay runs\")\n", refused, refused == 1 ? "" : "s");
  }
  return out;
}

}  // namespace magneton::replay
