#include "trust/trace_trust.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "trace/rerun_plan.h"
#include "trust/trust_key.h"

namespace magneton::trust {
namespace {

// v2 signs the re-run plan (v1 signed the redacted command line, which two
// different commands could share): a v1 signature never verifies.
constexpr std::string_view kSignaturePrefix = "hmac-sha256:v2:";

StatusOr<std::string> Hmac(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, message.size(), out, &len) == nullptr) {
    return Internal("OpenSSL could not compute an HMAC-SHA256");
  }
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", out[i]);
  return hex;
}

void Field(std::string* out, std::string_view name, std::string_view value) {
  *out += fmt::format("{}={}:", name, value.size());
  out->append(value);
  out->push_back('\n');
}

std::string ThisHost() {
  char host[256] = {};
  return gethostname(host, sizeof(host) - 1) == 0 ? std::string(host) : std::string();
}

}  // namespace

std::string SignedMessage(const RunMetadata& meta) {
  std::string m = "magneton trace trust v2\n";
  // The re-run plan exactly as stored (argv, cwd, environment, interpreter):
  // what a re-run executes, byte for byte. A trace without one signs "" and
  // is never re-run anyway.
  auto plan = meta.extra.find(kRerunPlanKey);
  Field(&m, "rerun.plan", plan == meta.extra.end() ? std::string_view() : std::string_view(plan->second));
  // The recorded working directory: reports read source under it when the
  // trace verifies (analysis/source_access.cc), so it is the recorder's too.
  Field(&m, "cwd", meta.cwd);
  Field(&m, "host", meta.host);
  Field(&m, "start_unix_ns", std::to_string(meta.start_unix_ns));
  Field(&m, "label", meta.label);
  return m;
}

StatusOr<std::string> SignRun(const RunMetadata& meta, const std::string& key_path) {
  MAGNETON_ASSIGN_OR_RETURN(std::string key, LoadOrCreateKey(key_path));
  MAGNETON_ASSIGN_OR_RETURN(std::string mac, Hmac(key, SignedMessage(meta)));
  return std::string(kSignaturePrefix) + mac;
}

void AddSignature(RunMetadata* meta, const std::string& key_path) {
  auto signature = SignRun(*meta, key_path);
  if (signature.ok()) {
    meta->extra[kSignatureKey] = *signature;
    return;
  }
  meta->extra[kUnsignedKey] = signature.status().message();
  std::fprintf(stderr, "magneton: this trace is not signed, so magneton diff will not re-run its command without "
                       "--rerun: %s\n", signature.status().message().c_str());
}

TrustContext TrustContext::Current() { return {DefaultKeyPath(), ThisHost()}; }

RerunAuthority VerifyRerunAuthority(const RunMetadata& meta, const TrustContext& context) {
  auto it = meta.extra.find(kSignatureKey);
  if (it == meta.extra.end()) {
    auto why = meta.extra.find(kUnsignedKey);
    return {false, why != meta.extra.end() ? "it was recorded unsigned (" + why->second + ")"
                                           : "it carries no signature (recorded by another tool, or by a magneton "
                                             "that did not sign traces)"};
  }
  auto key = LoadKey(context.key_path);
  if (!key.ok()) {
    if (key.status().code() == StatusCode::kNotFound) {
      return {false, "this user has no trust key (" + key.status().message() +
                         "), so the trace was not recorded by this user on this machine"};
    }
    return {false, key.status().message()};
  }
  auto expected = Hmac(*key, SignedMessage(meta));
  if (!expected.ok()) return {false, expected.status().message()};
  const std::string want = std::string(kSignaturePrefix) + *expected;
  const std::string& got = it->second;
  if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
    return {false, "its signature does not match this user's key: it was recorded by another user or on another "
                   "machine, or its re-run plan (command, working directory, environment), host or identity was edited"};
  }
  if (meta.host != context.host) {
    return {false, "it was recorded on host '" + meta.host + "', and this is '" + context.host + "'"};
  }
  return {true, "signed by this user's key on this host"};
}

RerunAuthority VerifyRerunAuthority(const Trace& trace, const TrustContext& context) {
  return VerifyRerunAuthority(trace.meta, context);
}

}  // namespace magneton::trust
