// The first fingerprint blob, "mfp1" (fixed-width fields), written by schema
// version 2 traces: decoded so that their fingerprints still read. Nothing
// writes it any more (codec.cc writes mfp2).
#pragma once

#include <string_view>

#include "fingerprint/fingerprint.h"

namespace magneton {

inline constexpr std::string_view kFingerprintKindMfp1 = "mfp1";

// The fields of an mfp1 blob; the caller checks their consistency.
StatusOr<Fingerprint> DecodeMfp1(std::string_view data);

}  // namespace magneton
