// The deviation point (method.md section 7): the last function the call paths
// to the differing ops of the two sides have in common. Comparing only these
// paths, not the whole trace, avoids "diverges at the dispatcher".
#include <algorithm>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {

DeviationPoint FindDeviationPoint(const std::vector<std::string>& path_a, const std::vector<std::string>& path_b) {
  DeviationPoint d;
  const size_t n = std::min(path_a.size(), path_b.size());
  size_t i = 0;
  while (i < n && path_a[i] == path_b[i]) ++i;
  if (i < n) {
    FrameRef fa = ParseFrame(path_a[i]), fb = ParseFrame(path_b[i]);
    if (fa.file == fb.file && fa.function == fb.function) {
      // Same function, different lines: the branch is inside this function.
      d.found = true;
      d.frame_a = path_a[i];
      d.frame_b = path_b[i];
      d.common_path.assign(path_a.begin(), path_a.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return d;
    }
  }
  if (i == 0) return d;  // nothing in common (different entry points)
  d.found = true;
  d.frame_a = d.frame_b = path_a[i - 1];
  d.common_path.assign(path_a.begin(), path_a.begin() + static_cast<std::ptrdiff_t>(i));
  return d;
}

}  // namespace magneton::diagnose
