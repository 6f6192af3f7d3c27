// libFuzzer target: the fingerprint codec (src/fingerprint/codec.cc, and the
// decoders of older traces, codec_mfp2.cc and codec_mfp1.cc). An arbitrary
// blob must decode to a Status or a fingerprint, never a crash or sanitizer
// report; a decoded mfp3 fingerprint must encode back to the very same bytes
// (the blob is canonical); a decoded mfp1 or mfp2 fingerprint must come back
// from mfp3 with every field bit for bit (the conversion is lossless); and comparing must be
// safe whatever the numbers say (NaN moments, absurd dims, empty marginals).
//   ninja -C build/fuzz fingerprint_codec_fuzzer
//   build/fuzz/fuzz/fingerprint_codec_fuzzer -max_total_time=60 fuzz/corpus/fingerprint_codec
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "fingerprint/fingerprint.h"

namespace {

// n == 0: an empty vector's data() may be null, which memcmp must not see.
bool SameBits(const double* a, const double* b, size_t n) { return n == 0 || std::memcmp(a, b, n * sizeof(double)) == 0; }

bool SameFields(const magneton::Fingerprint& a, const magneton::Fingerprint& b) {
  const auto& p = a.invariant;
  const auto& q = b.invariant;
  const double pd[] = {p.mean, p.variance, p.skewness, p.kurtosis, p.min, p.max};
  const double qd[] = {q.mean, q.variance, q.skewness, q.kurtosis, q.min, q.max};
  if (a.dtype_class != b.dtype_class || p.element_count != q.element_count || p.nan_count != q.nan_count ||
      p.pos_inf_count != q.pos_inf_count || p.neg_inf_count != q.neg_inf_count ||
      p.quantile_sample_size != q.quantile_sample_size || !SameBits(pd, qd, 6) ||
      !SameBits(p.quantiles.data(), q.quantiles.data(), p.quantiles.size()) ||
      a.strong.present != b.strong.present || a.strong.dims != b.strong.dims ||
      a.strong.core_dims != b.strong.core_dims || a.strong.marginals.size() != b.strong.marginals.size() ||
      a.strong.spectra.size() != b.strong.spectra.size()) {
    return false;
  }
  for (size_t k = 0; k < a.strong.marginals.size(); ++k) {
    const auto& m = a.strong.marginals[k];
    const auto& n = b.strong.marginals[k];
    if (m.axis_size != n.axis_size || m.chunk_elements != n.chunk_elements ||
        m.chunk_sums.size() != n.chunk_sums.size() ||
        !SameBits(m.chunk_sums.data(), n.chunk_sums.data(), m.chunk_sums.size())) {
      return false;
    }
  }
  for (size_t k = 0; k < a.strong.spectra.size(); ++k) {
    const auto& s = a.strong.spectra[k];
    const auto& t = b.strong.spectra[k];
    if (s.rows != t.rows || s.cols != t.cols || s.singular_values.size() != t.singular_values.size() ||
        !SameBits(s.singular_values.data(), t.singular_values.data(), s.singular_values.size())) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view blob(reinterpret_cast<const char*>(data), size);
  // As an mfp1 or mfp2 blob: read, it must survive mfp3 unchanged.
  for (const char* old_kind : {"mfp1", "mfp2"}) {
    if (auto old = magneton::DecodeFingerprint(old_kind, blob); old.ok()) {
      auto back = magneton::DecodeFingerprint(magneton::kFingerprintKind, magneton::EncodeFingerprint(*old));
      if (!back.ok() || !SameFields(*old, *back)) {
        std::fprintf(stderr, "fingerprint_codec_fuzzer: %s -> mfp3 lost or changed a field\n", old_kind);
        std::abort();
      }
    }
  }
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
