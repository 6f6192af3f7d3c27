#include "trace/load_samples.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace magneton {

std::string EncodeLoadSeries(const LoadSeries& series) {
  std::string out = std::to_string(series.ticks_per_second);
  for (const LoadSample& s : series.samples) {
    out += fmt::format(";{},{},{},{},{}", s.t_ns, s.busy, s.steal, s.total, s.own_cpu_ns);
  }
  return out;
}

namespace {

template <typename T>
bool ParseField(std::string_view& text, char end, T* out) {
  const size_t stop = std::min(text.find(end), text.size());
  const std::string_view field = text.substr(0, stop);
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), *out);
  if (ec != std::errc() || ptr != field.data() + field.size() || field.empty()) return false;
  text.remove_prefix(std::min(stop + 1, text.size()));
  return true;
}

}  // namespace

StatusOr<LoadSeries> DecodeLoadSeries(std::string_view text) {
  LoadSeries series;
  auto bad = [] { return InvalidArgument("machine.load_samples: not \"<ticks/s>;<t_ns>,<busy>,<steal>,<total>,<own_cpu_ns>;...\""); };
  if (!ParseField(text, ';', &series.ticks_per_second) || series.ticks_per_second <= 0) return bad();
  while (!text.empty()) {
    LoadSample s;
    if (!ParseField(text, ',', &s.t_ns) || !ParseField(text, ',', &s.busy) || !ParseField(text, ',', &s.steal) ||
        !ParseField(text, ',', &s.total) || !ParseField(text, ';', &s.own_cpu_ns)) {
      return bad();
    }
    if (!series.samples.empty() && s.t_ns < series.samples.back().t_ns) {
      return InvalidArgument("machine.load_samples: samples out of time order");
    }
    series.samples.push_back(s);
  }
  return series;
}

StatusOr<LoadShares> LoadSharesBetween(const LoadSample& start, const LoadSample& end, long ticks_per_second) {
  if (ticks_per_second <= 0) return InvalidArgument("clock ticks per second must be positive");
  if (end.total < start.total + 10 || end.busy < start.busy || end.steal < start.steal) {
    return FailedPrecondition("the span was too short to measure the machine's load");
  }
  const double total = static_cast<double>(end.total - start.total);
  const double own_ticks =
      static_cast<double>(std::max<int64_t>(0, end.own_cpu_ns - start.own_cpu_ns)) * 1e-9 *
      static_cast<double>(ticks_per_second);
  LoadShares shares;
  // Ticks are sampled by the kernel, so this process's exact CPU time can
  // exceed the busy ticks counted over a short span: clamp at 0.
  shares.others_cpu_share = std::clamp((static_cast<double>(end.busy - start.busy) - own_ticks) / total, 0.0, 1.0);
  shares.steal_share = std::clamp(static_cast<double>(end.steal - start.steal) / total, 0.0, 1.0);
  shares.total_ticks = end.total - start.total;
  return shares;
}

StatusOr<LoadShares> LoadOver(const LoadSeries& series, int64_t start_ns, int64_t end_ns) {
  const std::vector<LoadSample>& s = series.samples;
  if (s.size() < 2) return FailedPrecondition("machine.load_samples holds fewer than two samples");
  // The last sample at or before start_ns (else the first).
  auto after_start = std::upper_bound(s.begin(), s.end(), start_ns,
                                      [](int64_t t, const LoadSample& x) { return t < x.t_ns; });
  const size_t first = after_start == s.begin() ? 0 : static_cast<size_t>(after_start - s.begin()) - 1;
  // The first sample at or after end_ns (else the last).
  auto at_end = std::lower_bound(s.begin(), s.end(), end_ns,
                                 [](const LoadSample& x, int64_t t) { return x.t_ns < t; });
  size_t last = at_end == s.end() ? s.size() - 1 : static_cast<size_t>(at_end - s.begin());
  if (last <= first) last = std::min(s.size() - 1, first + 1);
  return LoadSharesBetween(s[first], s[last], series.ticks_per_second);
}

void ThinLoadSeries(LoadSeries& series, size_t max_samples) {
  max_samples = std::max<size_t>(3, max_samples);
  std::vector<LoadSample>& s = series.samples;
  while (s.size() > max_samples) {
    std::vector<LoadSample> kept;
    kept.reserve(s.size() / 2 + 2);
    for (size_t i = 0; i < s.size(); i += 2) kept.push_back(s[i]);
    if (kept.back().t_ns != s.back().t_ns) kept.push_back(s.back());
    s = std::move(kept);
  }
}

}  // namespace magneton
