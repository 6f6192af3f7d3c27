// A fingerprint's strong part on its own, in the mfp3 encoding (codec.cc):
// what an analysis keeps of it in memory (FingerprintMap), decoded only when a
// comparison gets that far. Internal to the fingerprint stage.
#pragma once

#include <string>
#include <string_view>

#include "fingerprint/fingerprint.h"

namespace magneton {

// rms: the fingerprint's value scale (LayoutInvariantPart::rms), which the
// grids of the chunk sums and singular values are tied to.
std::string EncodeStrongPart(const StrongPart& strong, double rms);
// Into *strong, reusing its vectors' capacity; false when the bytes are not
// an encoding of a strong part.
bool DecodeStrongPart(std::string_view data, double rms, StrongPart* strong);
// Whether two encoded strong parts have the same dims (the matcher's
// StrongPart::dims ==), read without decoding the rest.
bool SameStrongDims(std::string_view a, std::string_view b);

}  // namespace magneton
