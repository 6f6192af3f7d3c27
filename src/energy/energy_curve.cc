#include "energy/energy_curve.h"

#include <algorithm>
#include <cmath>

namespace magneton::energy {

EnergyCurve::EnergyCurve(std::vector<int64_t> t_ns, std::vector<double> energy_uj)
    : t_(std::move(t_ns)), e_(std::move(energy_uj)) {}

double EnergyCurve::At(int64_t t) const {
  if (t <= t_.front()) return e_.front();
  if (t >= t_.back()) return e_.back();
  size_t hi = static_cast<size_t>(std::upper_bound(t_.begin(), t_.end(), t) - t_.begin());
  size_t lo = hi - 1;
  double span = static_cast<double>(t_[hi] - t_[lo]);
  double f = span > 0 ? static_cast<double>(t - t_[lo]) / span : 1.0;
  return e_[lo] + f * (e_[hi] - e_[lo]);
}

double EnergyCurve::Walk::At(int64_t t) {
  const std::vector<int64_t>& times = curve_.t_;
  const std::vector<double>& energy = curve_.e_;
  if (t <= times.front()) return energy.front();
  if (t >= times.back()) return energy.back();
  while (times[hi_] <= t) ++hi_;
  const size_t lo = hi_ - 1;
  const double span = static_cast<double>(times[hi_] - times[lo]);
  const double f = span > 0 ? static_cast<double>(t - times[lo]) / span : 1.0;
  return energy[lo] + f * (energy[hi_] - energy[lo]);
}

int64_t EnergyCurve::median_period_ns() const {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < t_.size(); ++i) gaps.push_back(t_[i] - t_[i - 1]);
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return gaps[gaps.size() / 2];
}

StatusOr<EnergyCurve> BuildCurve(std::vector<EnergySample> samples, const std::string& domain) {
  std::stable_sort(samples.begin(), samples.end(),
                   [](const EnergySample& a, const EnergySample& b) { return a.t_ns < b.t_ns; });
  std::vector<int64_t> t;
  std::vector<double> e;
  double integrated_uj = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    double value;
    if (!std::isnan(s.energy_uj)) {
      value = s.energy_uj;
    } else if (!std::isnan(s.power_mw)) {
      // Power-only: trapezoid; mW · ns = 1e-6 µJ.
      if (i > 0 && !std::isnan(samples[i - 1].power_mw))
        integrated_uj += (samples[i - 1].power_mw + s.power_mw) / 2 *
                         static_cast<double>(s.t_ns - samples[i - 1].t_ns) * 1e-6;
      value = integrated_uj;
    } else {
      continue;
    }
    if (!t.empty() && s.t_ns == t.back()) {
      e.back() = value;  // same instant: keep the later value
      continue;
    }
    if (!e.empty() && value < e.back())
      return Corrupt("energy samples of " + domain + " decrease at t=" + std::to_string(s.t_ns) +
                     " ns: the counter must be unwrapped before attribution");
    t.push_back(s.t_ns);
    e.push_back(value);
  }
  if (t.size() < 2)
    return FailedPrecondition("domain " + domain + " has " + std::to_string(t.size()) +
                              " usable energy sample(s); attribution needs at least 2");
  return EnergyCurve(std::move(t), std::move(e));
}

StatusOr<EnergyCurve> DomainCurve(const std::vector<EnergySample>& samples, const std::string& domain,
                                  Provenance* provenance) {
  std::vector<EnergySample> mine;
  bool any_measured = false, any_estimated = false;
  for (const EnergySample& s : samples) {
    if (s.domain != domain) continue;
    (s.provenance == Provenance::kMeasured ? any_measured : any_estimated) = true;
    mine.push_back(s);
  }
  if (any_measured && any_estimated)
    return InvalidArgument("domain " + domain + " mixes measured and estimated samples; they must not be summed");
  *provenance = any_measured ? Provenance::kMeasured : Provenance::kEstimated;
  return BuildCurve(std::move(mine), domain);
}

}  // namespace magneton::energy
