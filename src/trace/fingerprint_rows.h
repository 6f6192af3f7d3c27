// The fingerprints table of a .mtrace file as stored rows: encoded value
// fingerprints by tensor id. Decoding them is the fingerprint stage's job
// (fingerprint/fingerprint.h: LoadFingerprints).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/status.h"

namespace magneton {

struct FingerprintRow {
  int64_t tensor_id = -1;
  std::string kind;  // the codec's kind tag
  std::string data;  // the encoded fingerprint
};

StatusOr<std::vector<FingerprintRow>> ReadFingerprintRows(const std::string& trace_path);
// Inserts or replaces rows of a closed trace file.
Status WriteFingerprintRows(const std::string& trace_path, const std::vector<FingerprintRow>& rows);

}  // namespace magneton
