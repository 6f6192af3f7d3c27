// Cases whose scripts start ranks (torch.multiprocessing.spawn, torchrun):
// `magneton record` wrote a job (a manifest and a trace per rank) for each
// side, so the case is diffed job against job, rank with rank
// (analysis/job_diff.h PairJobRanks), each rank pair through the same sweep,
// and scored on the union of the ranks' findings: at each setting the rank
// whose top waste finding saves the most stands for the job (its region is
// the job's top finding), a control is a false positive when any rank has a
// waste finding, and the job's energy is the ranks' sum.
#include <filesystem>
#include <map>

#include "analysis/job_diff.h"
#include "eval/eval.h"
#include "trace/job_manifest.h"

namespace magneton::eval {
namespace {

// Which rank's result stands for setting i: the largest top waste saving, else the first rank.
size_t StandIn(const std::vector<std::pair<int, CaseResult>>& ranks, size_t i) {
  size_t best = 0;
  double best_uj = -1;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const CaseResult& r = ranks[k].second;
    if (i >= r.waste_findings.size() || r.waste_findings[i] == 0) continue;
    const double uj = i < r.top_saving_uj.size() ? r.top_saving_uj[i] : 0.0;
    if (uj > best_uj) best_uj = uj, best = k;
  }
  return best;
}

}  // namespace

bool IsJobRecording(const std::string& trace_path) {
  std::error_code ec;
  return std::filesystem::exists(JobManifestPath(trace_path), ec);
}

CaseResult MergeRankResults(const Expected& expected, const std::vector<std::pair<int, CaseResult>>& ranks) {
  CaseResult r;
  r.expected = expected;
  if (ranks.empty()) {
    r.error = "the two jobs have no rank in common with a readable trace";
    return r;
  }
  for (const auto& [rank, rr] : ranks) {
    if (!rr.ok) {
      r.error = "rank " + std::to_string(rank) + ": " + rr.error;
      return r;
    }
  }
  const CaseResult& first = ranks.front().second;
  r.ok = true;
  r.ranks = static_cast<int>(ranks.size());
  r.domain = first.domain;
  r.provenance = first.provenance;
  r.settings = first.settings;
  r.repeats = first.repeats;
  for (const auto& [rank, rr] : ranks) {
    r.energy_a_uj += rr.energy_a_uj;
    r.energy_b_uj += rr.energy_b_uj;
    r.ops_a += rr.ops_a;
    r.ops_b += rr.ops_b;
    if (rr.domain != r.domain && r.domain.find(rr.domain) == std::string::npos) r.domain += "," + rr.domain;
    if (rr.provenance == Provenance::kEstimated) r.provenance = Provenance::kEstimated;
  }
  for (size_t i = 0; i < r.settings.size(); ++i) {
    const size_t k = StandIn(ranks, i);
    const CaseResult& stand = ranks[k].second;
    CaseScore score = i < stand.scores.size() ? stand.scores[i] : CaseScore{};
    int waste = 0;
    for (const auto& [rank, rr] : ranks) {
      waste += i < rr.waste_findings.size() ? rr.waste_findings[i] : 0;
      if (i < rr.scores.size() && rr.scores[i].false_positive) score.false_positive = true;
    }
    r.scores.push_back(score);
    r.waste_findings.push_back(waste);
    r.top_saving_uj.push_back(i < stand.top_saving_uj.size() ? stand.top_saving_uj[i] : 0.0);
  }
  // The headline: the rank whose top waste finding saves the most.
  size_t best = 0;
  double best_uj = -1;
  for (size_t k = 0; k < ranks.size(); ++k) {
    const Evidence& ev = ranks[k].second.headline_evidence;
    if (ev.has_waste && ev.saving_uj > best_uj) best_uj = ev.saving_uj, best = k;
  }
  const auto& [rank, stand] = ranks[best];
  r.headline = stand.headline;
  for (const auto& [other_rank, rr] : ranks) {
    if (rr.headline.false_positive) r.headline.false_positive = true;
  }
  r.headline.note = "rank " + std::to_string(rank) + " of " + std::to_string(ranks.size()) + ": " + stand.headline.note;
  r.headline_evidence = stand.headline_evidence;
  r.headline_sentence = stand.headline_sentence.empty() ? "" : "rank " + std::to_string(rank) + ": " +
                                                                   stand.headline_sentence;
  r.expected_waste_rank = stand.expected_waste_rank;
  r.headline_rank = rank;
  return r;
}

CaseResult EvaluateJobRecordings(const Expected& expected, const std::vector<std::string>& traces_a,
                                 const std::vector<std::string>& traces_b, const SweepOptions& options) {
  CaseResult fail;
  fail.expected = expected;
  // Rank k's traces over the repeated pairs; only ranks every pair has.
  std::map<int, std::pair<std::vector<std::string>, std::vector<std::string>>> by_rank;
  std::map<int, size_t> pairs_with_rank;
  for (size_t i = 0; i < traces_a.size() && i < traces_b.size(); ++i) {
    auto pairing = analysis::PairJobRanks(JobManifestPath(traces_a[i]), JobManifestPath(traces_b[i]));
    if (!pairing.ok()) {
      fail.error = "cannot pair the jobs' ranks: " + pairing.status().message();
      return fail;
    }
    for (const analysis::RankPair& p : pairing->pairs) {
      by_rank[p.rank].first.push_back(p.trace_a);
      by_rank[p.rank].second.push_back(p.trace_b);
      ++pairs_with_rank[p.rank];
    }
  }
  std::vector<std::pair<int, CaseResult>> ranks;
  for (const auto& [rank, traces] : by_rank) {
    if (pairs_with_rank[rank] != traces_a.size()) continue;
    ranks.emplace_back(rank, EvaluateRecordings(expected, traces.first, traces.second, options));
  }
  return MergeRankResults(expected, ranks);
}

}  // namespace magneton::eval
