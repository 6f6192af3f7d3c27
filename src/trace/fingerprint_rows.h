// The fingerprints table of a .mtrace file as stored rows: encoded value
// fingerprints by tensor id. Decoding them is the fingerprint stage's job
// (fingerprint/fingerprint.h: LoadFingerprints).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/status.h"

namespace magneton {

struct FingerprintRow {
  int64_t tensor_id = -1;
  std::string kind;  // the codec's kind tag
  std::string data;  // the encoded fingerprint
};

// One stored row, borrowed: `kind` and `data` are valid only during the call.
struct FingerprintRowView {
  int64_t tensor_id = -1;
  std::string_view kind;
  std::string_view data;
};
// Calls `fn` for each row without holding the table in memory (the encoded
// blobs of a 2.4 M-op trace are about a gigabyte); stops at fn's first error.
Status ForEachFingerprintRow(const std::string& trace_path, const std::function<Status(const FingerprintRowView&)>& fn);
StatusOr<std::vector<FingerprintRow>> ReadFingerprintRows(const std::string& trace_path);
// Inserts or replaces rows of a closed trace file.
Status WriteFingerprintRows(const std::string& trace_path, const std::vector<FingerprintRow>& rows);

}  // namespace magneton
