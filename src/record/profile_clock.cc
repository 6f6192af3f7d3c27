#include "record/profile_clock.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace magneton {

using nlohmann::json;

bool TraceEventNumber(const json& e, const char* key, double* out) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return std::isfinite(*out);
}

std::string TraceEventText(const json& args, const char* key) {
  auto it = args.find(key);
  if (it == args.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return {};
}

const json* TraceEventsOf(const json& root) {
  if (root.is_array()) return &root;
  if (root.is_object()) {
    auto it = root.find("traceEvents");
    if (it != root.end() && it->is_array()) return &*it;
  }
  return nullptr;
}

bool AsCompleteEvent(const json& e, CompleteEvent* out) {
  if (!e.is_object()) return false;
  auto ph = e.find("ph");
  auto name = e.find("name");
  if (ph == e.end() || *ph != "X" || name == e.end() || !name->is_string()) return false;
  static const json kNoArgs = json::object();
  auto args = e.find("args");
  out->name = &name->get_ref<const std::string&>();
  out->args = args != e.end() && args->is_object() ? &*args : &kNoArgs;
  return true;
}

bool CompleteEventSpan(const json& e, int64_t* start_ns, int64_t* end_ns, int64_t* thread_id) {
  double ts = 0, dur = 0, tid = 0;
  if (!TraceEventNumber(e, "ts", &ts) || !TraceEventNumber(e, "dur", &dur) || dur < 0) return false;
  TraceEventNumber(e, "tid", &tid);
  *start_ns = std::llround(ts * 1000.0);
  *end_ns = std::llround((ts + dur) * 1000.0);
  *thread_id = static_cast<int64_t>(tid);
  return true;
}

StatusOr<ProfileClock> PairClockByEnds(const std::map<std::string, std::vector<int64_t>>& profiler_ends,
                                       std::map<std::string, std::vector<int64_t>> recorded_ends,
                                       int64_t tolerance_ns) {
  for (auto& [_, v] : recorded_ends) std::sort(v.begin(), v.end());
  static const std::vector<int64_t> kNone;
  auto recorded_of = [&](const std::string& name) -> const std::vector<int64_t>& {
    auto it = recorded_ends.find(name);
    return it == recorded_ends.end() ? kNone : it->second;
  };
  auto nearest = [](const std::vector<int64_t>& v, int64_t t) {
    auto it = std::lower_bound(v.begin(), v.end(), t);
    int64_t best = INT64_MAX;
    if (it != v.end()) best = std::min(best, *it - t);
    if (it != v.begin()) best = std::min(best, t - *std::prev(it));
    return best;
  };
  // limit: calls scored per name while searching (all of them for the final count).
  // score: the pairs weighed by closeness (1 at 0 µs, 0 at the tolerance),
  // so that of two offsets pairing as many calls (calls ~100 µs apart, one
  // offset a call off) the one whose ends agree wins.
  auto pairs_at = [&](int64_t offset, std::vector<int64_t>* diffs, size_t limit = SIZE_MAX, double* score = nullptr) {
    int64_t n = 0;
    for (const auto& [name, ends] : profiler_ends) {
      const auto& recorded = recorded_of(name);
      if (recorded.empty()) continue;
      for (size_t i = 0; i < ends.size() && i < limit; ++i) {
        const int64_t e = ends[i];
        const int64_t d = nearest(recorded, e - offset);
        if (d > tolerance_ns) continue;
        ++n;
        if (score) *score += 1.0 - static_cast<double>(d) / static_cast<double>(tolerance_ns);
        if (!diffs) continue;
        auto it = std::lower_bound(recorded.begin(), recorded.end(), e - offset - tolerance_ns);
        int64_t best = 0, best_abs = INT64_MAX;
        for (; it != recorded.end() && *it <= e - offset + tolerance_ns; ++it) {
          if (std::llabs(e - offset - *it) < best_abs) best_abs = std::llabs(e - offset - *it), best = e - *it;
        }
        diffs->push_back(best);
      }
    }
    return n;
  };
  int64_t best_offset = 0, best_pairs = 0;
  double best_score = 0;
  for (const auto& [name, ends] : profiler_ends) {
    const auto& recorded = recorded_of(name);
    for (size_t h = 0; h < std::min<size_t>(ends.size(), 2); ++h) {
      for (size_t k = 0; k < recorded.size() && k < 256; ++k) {
        const int64_t candidate = ends[h] - recorded[k];
        double score = 0;
        const int64_t n = pairs_at(candidate, nullptr, 2000, &score);
        if (score > best_score) best_score = score, best_pairs = n, best_offset = candidate;
      }
    }
  }
  if (best_pairs == 0) return FailedPrecondition("no call in the profile pairs with a recorded op: its clock is unknown");
  std::vector<int64_t> diffs;
  pairs_at(best_offset, &diffs);
  std::nth_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2), diffs.end());
  ProfileClock clock;
  clock.offset_ns = diffs[diffs.size() / 2];
  clock.paired = pairs_at(clock.offset_ns, nullptr);
  return clock;
}

std::vector<std::pair<int64_t, int64_t>> LayInside(const std::vector<std::pair<int64_t, int64_t>>& events,
                                                   int64_t offset_ns, int64_t op_start_ns, int64_t op_end_ns) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (events.empty()) return out;
  int64_t first = events.front().first, last = events.front().second;
  for (const auto& [s, e] : events) first = std::min(first, s), last = std::max(last, e);
  int64_t shift = -offset_ns;
  if (last + shift > op_end_ns) shift -= last + shift - op_end_ns;
  if (first + shift < op_start_ns) shift += op_start_ns - (first + shift);
  int64_t prev_end = op_start_ns;
  out.reserve(events.size());
  for (const auto& [s, e] : events) {
    const int64_t start = std::clamp(std::max(s + shift, prev_end), op_start_ns, op_end_ns);
    const int64_t end = std::clamp(start + std::max<int64_t>(e - s, 0), start, op_end_ns);
    out.emplace_back(start, end);
    prev_end = end;
  }
  return out;
}

}  // namespace magneton
