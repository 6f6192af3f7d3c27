#include "energy/device_energy.h"

#include <algorithm>

#include "energy/energy_curve.h"

namespace magneton::energy {

std::string DeviceOfDomain(const std::string& domain) {
  constexpr std::string_view kPrefix = "gpu-";
  if (domain.size() <= kPrefix.size() || domain.compare(0, kPrefix.size(), kPrefix) != 0) return "";
  const std::string n = domain.substr(kPrefix.size());
  if (n.find_first_not_of("0123456789") != std::string::npos) return "";  // gpu-integrated-0 is not a CUDA device
  return "cuda:" + n;
}

bool HasDeviceActivity(const Trace& trace, const std::string& domain) {
  const std::string device = DeviceOfDomain(domain);
  if (device.empty()) return false;
  return std::any_of(trace.device_activities.begin(), trace.device_activities.end(),
                     [&](const DeviceActivity& a) { return a.device == device; });
}

StatusOr<DeviceEnergy> AttributeDeviceEnergy(const Trace& trace, const std::vector<EnergySample>& samples,
                                             const std::string& domain, int64_t job_start_ns, int64_t job_end_ns) {
  DeviceEnergy out;
  out.domain = domain;
  out.device = DeviceOfDomain(domain);
  if (out.device.empty()) return InvalidArgument("energy domain " + domain + " is not a GPU (gpu-<N>)");
  MAGNETON_ASSIGN_OR_RETURN(EnergyCurve curve, DomainCurve(samples, domain, &out.provenance));
  out.window_start_ns = curve.start();
  out.window_end_ns = curve.end();
  out.total_uj = curve.total();
  out.sample_period_ns = curve.median_period_ns();
  out.job_start_ns = std::clamp(job_start_ns, curve.start(), curve.end());
  out.job_end_ns = std::clamp(std::max(job_end_ns, job_start_ns), curve.start(), curve.end());

  // The device's activities, clipped to the window.
  struct Span {
    int64_t start_ns, end_ns;
    size_t activity;
  };
  std::vector<Span> spans;
  for (size_t i = 0; i < trace.device_activities.size(); ++i) {
    const DeviceActivity& a = trace.device_activities[i];
    if (a.device != out.device) continue;
    spans.push_back({std::clamp(a.start_ns, curve.start(), curve.end()),
                     std::clamp(a.end_ns, curve.start(), curve.end()), i});
  }
  std::vector<int64_t> cuts = {curve.start(), curve.end(), out.job_start_ns, out.job_end_ns};
  for (const Span& s : spans) {
    cuts.push_back(s.start_ns);
    cuts.push_back(s.end_ns);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto cut_index = [&](int64_t t) {
    return static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin());
  };
  std::vector<int> delta(cuts.size() + 1, 0);
  for (const Span& s : spans) {
    if (s.end_ns <= s.start_ns) continue;
    delta[cut_index(s.start_ns)] += 1;
    delta[cut_index(s.end_ns)] -= 1;
  }
  // share_prefix[k]: energy per running activity summed over the intervals
  // before cut k; shared_prefix[k]: time with two or more running.
  std::vector<double> share_prefix(cuts.size(), 0);
  std::vector<int64_t> shared_prefix(cuts.size(), 0);
  int active = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    active += delta[k];
    const double de = curve.At(cuts[k + 1]) - curve.At(cuts[k]);
    const int64_t dt = cuts[k + 1] - cuts[k];
    share_prefix[k + 1] = share_prefix[k] + (active > 0 ? de / active : 0);
    shared_prefix[k + 1] = shared_prefix[k] + (active > 1 ? dt : 0);
    const bool in_job = cuts[k] >= out.job_start_ns && cuts[k + 1] <= out.job_end_ns;
    if (in_job) out.job_uj += de;
    if (active > 0) {
      out.busy_ns += dt;
      continue;
    }
    out.idle_uj += de;
    out.idle_ns += dt;
    if (in_job) {
      out.idle_in_job_uj += de;
      out.idle_in_job_ns += dt;
    }
  }
  for (const Span& s : spans) {
    KernelEnergy k;
    k.activity = s.activity;
    k.op_id = trace.device_activities[s.activity].op_id;
    k.duration_ns = std::max<int64_t>(0, s.end_ns - s.start_ns);
    if (k.duration_ns > 0) {
      k.energy_uj = share_prefix[cut_index(s.end_ns)] - share_prefix[cut_index(s.start_ns)];
      k.shared_ns = shared_prefix[cut_index(s.end_ns)] - shared_prefix[cut_index(s.start_ns)];
    }
    if (k.duration_ns < out.sample_period_ns) ++out.shorter_than_period;
    out.kernels_uj += k.energy_uj;
    out.kernels.push_back(k);
  }
  return out;
}

}  // namespace magneton::energy
