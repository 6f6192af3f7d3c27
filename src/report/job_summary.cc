#include "report/job_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "base/format.h"
#include "energy/attribution.h"
#include "magneton/trace_reader.h"
#include "trace/op_args.h"

namespace magneton {

namespace {

bool IsCollective(const std::string& name) { return name.rfind("c10d::", 0) == 0; }

// The "bytes" the torch hook wrote into a collective's args; -1 when absent.
int64_t CollectiveBytes(const std::string& args) {
  auto parsed = ParseOpArgs(args);
  if (!parsed.ok() || !parsed->is_object()) return -1;
  auto it = parsed->find("bytes");
  if (it == parsed->end() || !it->is_number_integer()) return -1;
  return it->get<int64_t>();
}

}  // namespace

RankSummary SummariseRank(const RankEntry& entry, const Trace* trace) {
  RankSummary s;
  s.rank = entry.rank;
  s.end = DescribeRankEnd(entry);
  s.trace_error = entry.trace_error;
  if (trace == nullptr) return s;
  s.ops = trace->ops.size();
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const OpEvent& op : trace->ops) {
    first = std::min(first, op.start_ns);
    last = std::max(last, op.end_ns);
    if (!IsCollective(trace->str(op.name_id))) continue;
    // Outermost only: a collective's nested ops are part of its time.
    const bool nested = op.parent_id >= 0 && op.parent_id < static_cast<int64_t>(trace->ops.size()) &&
                        IsCollective(trace->str(trace->ops[op.parent_id].name_id));
    if (nested) continue;
    s.collective_ops += 1;
    s.collective_ns += op.end_ns - op.start_ns;
    const int64_t bytes = CollectiveBytes(op.args);
    if (bytes >= 0) {
      s.collective_bytes += bytes;
    } else {
      s.collective_ops_without_bytes += 1;
    }
  }
  if (!trace->ops.empty()) s.job_ns = last - first;
  std::set<std::string> domains;
  for (const EnergySample& e : trace->energy_samples) domains.insert(e.domain);
  for (const std::string& domain : domains) {
    auto a = energy::AttributeEnergy(*trace, domain);
    if (!a.ok() || (!s.domain.empty() && a->job_uj <= s.job_uj)) continue;
    s.domain = domain;
    s.job_uj = a->job_uj;
    s.provenance = ProvenanceHeading(a->provenance);
  }
  return s;
}

std::string FormatJobSummary(const std::string& manifest_path, const JobManifest& m,
                             const std::vector<RankSummary>& ranks) {
  std::string out = fmt::format("Job {}: {} rank(s) of world size {}, backend {}\n", manifest_path, ranks.size(),
                                m.world_size, m.backend.empty() ? "unknown" : m.backend);
  if (!m.command_line.empty()) out += fmt::format("Command: {}\n", m.command_line);
  if (!m.launcher_trace.empty()) out += fmt::format("The launching process's own ops: {}\n", m.launcher_trace);
  out += fmt::format("\n  {:>4} {:>8} {:>10} {:>14} {:>10} {:>11} {:>11} {:>12}  {}\n", "rank", "ops", "job ms",
                     "collectives", "coll. ms", "coll. share", "coll. bytes", "energy J", "end");
  const RankSummary* slowest = nullptr;
  const RankSummary* fastest = nullptr;
  for (const RankSummary& r : ranks) {
    if (!r.trace_error.empty()) {
      out += fmt::format("  {:>4} trace unreadable: {}; {}\n", r.rank, r.trace_error, r.end);
      continue;
    }
    const double share = r.job_ns > 0 ? 100.0 * r.collective_ns / r.job_ns : 0.0;
    const std::string energy =
        r.domain.empty() ? std::string("none") : fmt::format("{:.3f} {} ({})", r.job_uj / 1e6, r.provenance, r.domain);
    // Bytes of an older trace's collectives are unknown: "?" rather than a sum that leaves them out.
    const std::string bytes = r.collective_ops_without_bytes > 0 ? std::string("?") : FormatBytes(r.collective_bytes);
    out += fmt::format("  {:>4} {:>8} {:>10.1f} {:>14} {:>10.1f} {:>10.1f}% {:>11} {:>12}  {}\n", r.rank, r.ops,
                       r.job_ns / 1e6, r.collective_ops, r.collective_ns / 1e6, share, bytes, energy, r.end);
    if (r.ops == 0) continue;
    if (slowest == nullptr || r.job_ns > slowest->job_ns) slowest = &r;
    if (fastest == nullptr || r.job_ns < fastest->job_ns) fastest = &r;
  }
  for (const RankSummary& r : ranks) {
    if (r.end.rfind("killed", 0) == 0 || r.end.rfind("exit code", 0) == 0) {
      out += fmt::format("\nRank {} did not finish: {}; its trace keeps the {} ops recorded before that.\n", r.rank,
                         r.end, r.ops);
    }
  }
  if (slowest != nullptr && fastest != nullptr && slowest != fastest) {
    out += fmt::format("\nSlowest rank: {} ({:.1f} ms, {:+.1f}% over rank {}, the fastest)\n", slowest->rank,
                       slowest->job_ns / 1e6,
                       fastest->job_ns > 0 ? 100.0 * (slowest->job_ns - fastest->job_ns) / fastest->job_ns : 0.0,
                       fastest->rank);
  }
  return out;
}

StatusOr<std::string> SummariseJobFile(const std::string& manifest_path) {
  auto manifest = ReadJobManifest(manifest_path);
  if (!manifest.ok()) return manifest.status();
  std::vector<RankSummary> ranks;
  for (RankEntry entry : manifest->ranks) {
    auto trace = ReadTrace(RankTracePathIn(manifest_path, entry));
    if (!trace.ok() && entry.trace_error.empty()) entry.trace_error = trace.status().message();
    ranks.push_back(SummariseRank(entry, trace.ok() ? &*trace : nullptr));
  }
  return FormatJobSummary(manifest_path, *manifest, ranks);
}

}  // namespace magneton
