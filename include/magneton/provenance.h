// Whether an energy figure was read from a hardware counter or estimated
// from a model. Every figure carries it; estimated joules are never added to
// measured ones.
#pragma once

namespace magneton {

enum class Provenance : int { kMeasured = 0, kEstimated = 1 };

}  // namespace magneton
