// Repeated recordings of one case: the estimate of a short run moves with
// whatever else the machine does, so one pair can put a case on either side
// of a threshold. Each pair is scored on its own; a setting counts as
// detected (or as a false positive) when most pairs say so.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "eval/eval.h"

namespace magneton::eval {
namespace {

// The most pairs that flagged one and the same region as waste at setting i.
size_t MaxSameRegionVotes(const std::vector<CaseResult>& pairs, size_t i) {
  std::map<std::string, size_t> votes;
  for (const CaseResult& p : pairs) {
    if (i >= p.scores.size()) continue;
    std::set<std::string> keys(p.scores[i].waste_keys.begin(), p.scores[i].waste_keys.end());
    for (const std::string& k : keys) ++votes[k];
  }
  size_t most = 0;
  for (const auto& [key, n] : votes) most = std::max(most, n);
  return most;
}

}  // namespace

std::string WasteKey(const detect::Finding& f) {
  std::string key = std::string(detect::RegionKindName(f.kind)) + "|";
  key += f.wasteful_side ? f.wasteful_side : '-';
  key += "|";
  for (const std::string& n : f.names_a) key += n + ",";
  key += ">";
  for (const std::string& n : f.names_b) key += n + ",";
  return key;
}

CaseResult CombineRepeats(std::vector<CaseResult> pairs, size_t headline_index) {
  std::vector<CaseResult> ok;
  for (CaseResult& p : pairs) {
    if (p.ok) ok.push_back(std::move(p));
  }
  if (ok.empty()) {
    CaseResult failed = pairs.empty() ? CaseResult{} : std::move(pairs.front());
    failed.repeats = static_cast<int>(pairs.size());
    return failed;
  }
  const size_t n = ok.size();
  auto majority = [n](size_t votes) { return 2 * votes > n; };
  // The headline evidence and sentence come from a pair that agrees with the
  // vote, so the table never shows a detection the vote overruled.
  size_t head_votes = 0;
  for (const CaseResult& p : ok) head_votes += p.expected.is_control() ? p.headline.false_positive : p.headline.detected;
  // A control: the same region must be waste in most pairs, not just any
  // region (timing noise lands on a different region in each pair).
  if (ok.front().expected.is_control()) head_votes = MaxSameRegionVotes(ok, headline_index);
  const bool head_majority = majority(head_votes);
  size_t representative = 0;
  for (size_t k = 0; k < n; ++k) {
    const bool says = ok[k].expected.is_control() ? ok[k].headline.false_positive : ok[k].headline.detected;
    if (says == head_majority) {
      representative = k;
      break;
    }
  }
  CaseResult out = ok[representative];
  if (out.expected.is_control() && out.headline.false_positive != head_majority) {
    out.headline.false_positive = head_majority;
    out.headline.note = "waste findings in every pair, but no region in most of them (timing noise)";
  }
  out.repeats = static_cast<int>(n);
  out.headline_votes = static_cast<int>(head_votes);
  size_t root_votes = 0;
  for (const CaseResult& p : ok) root_votes += p.headline.root_cause_right;
  out.headline.root_cause_right = !out.expected.is_control() && majority(root_votes);
  // Per setting: the vote of all pairs (all pairs share the settings order).
  for (size_t i = 0; i < out.scores.size(); ++i) {
    size_t detected = 0;
    for (const CaseResult& p : ok) {
      if (i >= p.scores.size()) continue;
      detected += p.scores[i].detected;
    }
    out.scores[i].detected = !out.expected.is_control() && majority(detected);
    // Only a control can be a false positive (the suite counts waste on a
    // positive case's other regions nowhere).
    out.scores[i].false_positive = out.expected.is_control() && majority(MaxSameRegionVotes(ok, i));
  }
  std::vector<double> ea, eb;
  double record_s = 0, diff_s = 0;
  for (const CaseResult& p : ok) {
    ea.push_back(p.energy_a_uj);
    eb.push_back(p.energy_b_uj);
    record_s += p.record_seconds;
    diff_s += p.diff_seconds;
  }
  out.energy_a_uj = detect::Median(ea);
  out.energy_b_uj = detect::Median(eb);
  out.record_seconds = record_s;
  out.diff_seconds = diff_s;
  return out;
}

}  // namespace magneton::eval
