// The second fingerprint blob, "mfp2" (lossless, fields in as few bytes as
// they need), written until mfp3: decoded so that those traces still read.
#pragma once

#include <string_view>

#include "fingerprint/fingerprint.h"

namespace magneton {

inline constexpr std::string_view kFingerprintKindMfp2 = "mfp2";

// The fields of an mfp2 blob; the caller checks their consistency.
StatusOr<Fingerprint> DecodeMfp2(std::string_view data);

}  // namespace magneton
