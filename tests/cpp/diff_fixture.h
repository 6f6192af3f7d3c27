// A recorded trace pair for diff tests: two layers of y = x W^T + b and a
// relu, fused on side A (one aten::linear per layer) and decomposed on side B
// (mm + add), written by the real Recorder with real fingerprints; op times
// and energy are scripted in memory afterwards so results are reproducible.
#pragma once

#include <string>

#include "fingerprint/fingerprint_map.h"
#include "magneton/trace.h"

namespace magneton::testing {

struct Side {
  std::string path;
  Trace trace;
  FingerprintMap fps;
};

// `evil` names ops and files with markup; `user_file` replaces the user's
// source file named by the call paths ("" : /src/net.py). The call paths:
// main (line 3) -> forward (line 11 on A, 13 on B) -> the library op.
Side Record(const std::string& name, bool fused, bool evil, const std::string& user_file = "");

}  // namespace magneton::testing
