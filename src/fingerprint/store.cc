// Fingerprints of a .mtrace file, decoded (the table's rows are the trace
// layer's: trace/fingerprint_rows.h).
#include "fingerprint/fingerprint_map.h"
#include "trace/fingerprint_rows.h"

namespace magneton {

StatusOr<FingerprintMap> LoadFingerprints(const std::string& trace_path) {
  FingerprintMap out;
  MAGNETON_RETURN_IF_ERROR(ForEachFingerprintRow(trace_path, [&](const FingerprintRowView& r) -> Status {
    auto fp = DecodeFingerprint(r.kind, r.data);
    if (!fp.ok()) {
      return Status(fp.status().code(), trace_path + ": fingerprint of tensor " + std::to_string(r.tensor_id) + ": " +
                                            fp.status().message());
    }
    out.insert_or_assign(r.tensor_id, *fp);
    return Status::Ok();
  }));
  return out;
}

Status WriteFingerprints(const std::string& trace_path, const FingerprintMap& fingerprints) {
  std::vector<FingerprintRow> rows;
  rows.reserve(fingerprints.size());
  for (const auto& [tensor_id, fp] : fingerprints) {
    rows.push_back({tensor_id, std::string(kFingerprintKind), EncodeFingerprint(fp.Full())});
  }
  return WriteFingerprintRows(trace_path, rows);
}

}  // namespace magneton
