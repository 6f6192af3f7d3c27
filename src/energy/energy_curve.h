// One domain's energy samples as a cumulative curve E(t): what attribution
// integrates over op intervals (attribution.cc) and kernel intervals
// (device_energy.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::energy {

// Piecewise linear between samples; constant outside them.
class EnergyCurve {
 public:
  EnergyCurve(std::vector<int64_t> t_ns, std::vector<double> energy_uj);
  double At(int64_t t_ns) const;
  // At() of ascending times, in one walk over the samples: At(t) of each t
  // given to it, which must not decrease.
  class Walk {
   public:
    explicit Walk(const EnergyCurve& curve) : curve_(curve) {}
    double At(int64_t t_ns);

   private:
    const EnergyCurve& curve_;
    size_t hi_ = 0;  // the first sample after the last t, as At()'s upper_bound finds it
  };
  int64_t start() const { return t_.front(); }
  int64_t end() const { return t_.back(); }
  double total() const { return e_.back() - e_.front(); }
  size_t samples() const { return t_.size(); }
  // The median gap between samples: how finely the curve resolves power.
  int64_t median_period_ns() const;

 private:
  std::vector<int64_t> t_;
  std::vector<double> e_;
};

// The curve of `samples` (all of one domain, any order). Power-only samples
// are integrated with the trapezoid rule. A decreasing counter is Corrupt
// (it must be unwrapped first); fewer than two usable samples is
// FailedPrecondition.
StatusOr<EnergyCurve> BuildCurve(std::vector<EnergySample> samples, const std::string& domain);
// The curve of `domain` from a trace's samples of every domain, and whether
// they were measured or estimated; refuses a domain that mixes the two (they
// are never summed). Shared by the host and the device attributions.
StatusOr<EnergyCurve> DomainCurve(const std::vector<EnergySample>& samples, const std::string& domain,
                                  Provenance* provenance);

}  // namespace magneton::energy
