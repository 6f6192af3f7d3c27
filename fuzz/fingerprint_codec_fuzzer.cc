// libFuzzer target: the fingerprint codec (src/fingerprint/codec.cc). An
// arbitrary blob must decode to a Status or a fingerprint, never a crash or
// sanitizer report; a decoded fingerprint must encode back to the very same
// bytes (the blob is canonical), and comparing it must be safe whatever its
// numbers say (NaN moments, absurd dims, empty marginals).
//   ninja -C build/fuzz fingerprint_codec_fuzzer
//   build/fuzz/fuzz/fingerprint_codec_fuzzer -max_total_time=60 fuzz/corpus/fingerprint_codec
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fingerprint/fingerprint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view blob(reinterpret_cast<const char*>(data), size);
  auto fp = magneton::DecodeFingerprint(magneton::kFingerprintKind, blob);
  if (!fp.ok()) return 0;
  if (magneton::EncodeFingerprint(*fp) != blob) {
    std::fprintf(stderr, "fingerprint_codec_fuzzer: decode then encode changed the blob\n");
    std::abort();
  }
  (void)magneton::CompareFingerprints(*fp, *fp, 1e-2);
  // Against a second fingerprint from the other half of the input, when it decodes.
  for (size_t cut = 1; cut < size && cut < 8; ++cut) {
    auto other = magneton::DecodeFingerprint(magneton::kFingerprintKind, blob.substr(cut));
    if (other.ok()) (void)magneton::CompareFingerprints(*fp, *other, 1e-2);
  }
  return 0;
}
