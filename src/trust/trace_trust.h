// A trace never runs anything on its own authority (docs/DIFF.md, "Which
// traces are re-run"). At record time the recorder signs what a re-run would
// execute — the re-run plan (trace/rerun_plan.h), host and the trace's
// identity — with an HMAC-SHA256 under this user's trust key
// (trust/trust_key.h); before re-running a trace's command, analysis checks
// that signature. A trace from someone else, another machine, or one whose
// command was edited does not verify, and is re-run only when the user asks
// for it explicitly.
#pragma once

#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"
#include "trust/trust_key.h"

namespace magneton::trust {

// The meta rows: the signature, or why the recording could not be signed.
inline constexpr const char* kSignatureKey = "trust.signature";
inline constexpr const char* kUnsignedKey = "trust.unsigned";

// The bytes the signature covers, from the metadata as the trace stores it
// (version 2): the re-run plan row exactly as stored (trace/rerun_plan.h:
// argv, working directory, environment changes, interpreter; "" when the
// trace has none), the recorded working directory (reports read source under
// it when the trace verifies), host, start time and label, each length-prefixed.
std::string SignedMessage(const RunMetadata& meta);

// "hmac-sha256:v2:<hex>" over SignedMessage(meta), under the key at key_path
// (created on first use).
StatusOr<std::string> SignRun(const RunMetadata& meta, const std::string& key_path);

// For Recorder::Start: puts kSignatureKey into meta->extra, or kUnsignedKey
// with the reason (and says so on stderr): a recording never fails for want
// of a signature, it is only not re-run automatically.
void AddSignature(RunMetadata* meta, const std::string& key_path = DefaultKeyPath());

// Who is asking: this user's key and this machine's host name.
struct TrustContext {
  std::string key_path;
  std::string host;
  static TrustContext Current();  // DefaultKeyPath(), gethostname()
};

struct RerunAuthority {
  bool trusted = false;
  std::string reason;  // why (not): one clause, for "will not re-run A: <reason>"
};
// Whether the trace's recorded command may be re-run without asking: it was
// signed with this user's key, on this host, and nothing signed was edited.
RerunAuthority VerifyRerunAuthority(const RunMetadata& meta, const TrustContext& context);
RerunAuthority VerifyRerunAuthority(const Trace& trace, const TrustContext& context = TrustContext::Current());

}  // namespace magneton::trust
