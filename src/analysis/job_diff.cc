#include "analysis/job_diff.h"

#include <fmt/format.h>

#include <map>

#include "analysis/job_compare.h"

namespace magneton::analysis {

StatusOr<JobPairing> PairJobRanks(const std::string& manifest_a, const std::string& manifest_b) {
  auto a = ReadJobManifest(manifest_a);
  if (!a.ok()) return a.status();
  auto b = ReadJobManifest(manifest_b);
  if (!b.ok()) return b.status();
  std::map<int, const RankEntry*> by_rank_b;
  for (const RankEntry& r : b->ranks) by_rank_b[r.rank] = &r;
  JobPairing pairing;
  for (const RankEntry& ra : a->ranks) {
    auto it = by_rank_b.find(ra.rank);
    if (it == by_rank_b.end()) {
      pairing.left_out.push_back(fmt::format("rank {}: only in {}", ra.rank, manifest_a));
      continue;
    }
    const RankEntry& rb = *it->second;
    by_rank_b.erase(it);
    if (!ra.trace_error.empty() || !rb.trace_error.empty()) {
      pairing.left_out.push_back(fmt::format("rank {}: trace unreadable ({})", ra.rank,
                                             ra.trace_error.empty() ? rb.trace_error : ra.trace_error));
      continue;
    }
    pairing.pairs.push_back({ra.rank, RankTracePathIn(manifest_a, ra), RankTracePathIn(manifest_b, rb)});
  }
  for (const auto& [rank, entry] : by_rank_b) {
    pairing.left_out.push_back(fmt::format("rank {}: only in {}", rank, manifest_b));
  }
  return pairing;
}

StatusOr<JobDiff> DiffJobs(const std::string& manifest_a, const std::string& manifest_b,
                           const AnalysisOptions& options, const std::function<void(const std::string&)>& progress) {
  auto pairing = PairJobRanks(manifest_a, manifest_b);
  if (!pairing.ok()) return pairing.status();
  if (pairing->pairs.empty()) return InvalidArgument("the two jobs have no rank in common with a readable trace");
  JobDiff diff;
  diff.pairing = std::move(*pairing);
  for (const RankPair& pair : diff.pairing.pairs) {
    RankDiff rd;
    rd.rank = pair.rank;
    if (progress) progress(fmt::format("rank {}: {} vs {}", pair.rank, pair.trace_a, pair.trace_b));
    AnalysisOptions said = options;
    if (progress) said.progress = progress;
    auto session = AnalysisSession::OpenRuns({pair.trace_a}, {pair.trace_b}, said);
    Status st = session.ok() ? (*session)->Diff() : session.status();
    if (!st.ok()) {
      rd.report = "cannot diff: " + st.message() + "\n";
      diff.ranks.push_back(std::move(rd));
      continue;
    }
    rd.report = (*session)->TerminalReport();
    rd.domain = (*session)->domain();
    auto energies = LoadJobEnergies({pair.trace_a}, {pair.trace_b}, rd.domain);
    if (energies.ok() && !energies->first_uj.empty() && !energies->second_uj.empty()) {
      rd.job_uj_a = energies->first_uj[0];
      rd.job_uj_b = energies->second_uj[0];
      diff.total_uj_a += rd.job_uj_a;
      diff.total_uj_b += rd.job_uj_b;
      rd.ok = true;
    }
    diff.ranks.push_back(std::move(rd));
  }
  return diff;
}

std::string FormatJobDiff(const JobDiff& diff) {
  std::string out;
  for (const RankDiff& r : diff.ranks) {
    out += fmt::format("=== rank {} ===\n{}\n", r.rank, r.report);
  }
  out += "=== job, rank by rank ===\n";
  out += fmt::format("  {:>4} {:>12} {:>12} {:>9}  {}\n", "rank", "A job J", "B job J", "B/A", "domain");
  for (const RankDiff& r : diff.ranks) {
    if (!r.ok) {
      out += fmt::format("  {:>4} not compared\n", r.rank);
      continue;
    }
    out += fmt::format("  {:>4} {:>12.3f} {:>12.3f} {:>9.3f}  {}\n", r.rank, r.job_uj_a / 1e6, r.job_uj_b / 1e6,
                       r.job_uj_a > 0 ? r.job_uj_b / r.job_uj_a : 0.0, r.domain);
  }
  out += fmt::format("  {:>4} {:>12.3f} {:>12.3f} {:>9.3f}\n", "all", diff.total_uj_a / 1e6, diff.total_uj_b / 1e6,
                     diff.total_uj_a > 0 ? diff.total_uj_b / diff.total_uj_a : 0.0);
  for (const std::string& why : diff.pairing.left_out) out += "  not compared: " + why + "\n";
  return out;
}

}  // namespace magneton::analysis
