// Secrets inside a value, whatever it is called (trace/redact.h): the
// credentials of a URL and words shaped like an access token.
#include <array>
#include <cctype>
#include <cmath>

#include "trace/redact.h"

namespace magneton {
namespace {

bool IsTokenChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }
// Base64 and URL-safe base64, for the high-entropy rule.
bool IsBlobChar(char c) { return IsTokenChar(c) || c == '+' || c == '='; }

// Issuers' token prefixes and how many token characters follow at least.
struct TokenPrefix {
  std::string_view prefix;
  size_t min_rest;
};
constexpr std::array<TokenPrefix, 22> kTokenPrefixes = {{
    {"sk-", 16},          {"sk_live_", 12}, {"sk_test_", 12}, {"rk_live_", 12}, {"ghp_", 20},     {"gho_", 20},
    {"ghu_", 20},         {"ghs_", 20},     {"ghr_", 20},     {"github_pat_", 20}, {"glpat-", 16}, {"hf_", 30},
    {"xoxb-", 10},        {"xoxp-", 10},    {"xoxa-", 10},    {"xoxr-", 10},    {"xoxs-", 10},    {"AKIA", 16},
    {"ASIA", 16},         {"AIza", 30},     {"npm_", 30},     {"pypi-", 30},
}};

bool HasDigit(std::string_view s) {
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

// A word issued as a credential: a known issuer's prefix with enough after
// it (and a digit: identifiers such as hf_hub_disable_telemetry have none).
bool IsPrefixedToken(std::string_view word) {
  for (const TokenPrefix& p : kTokenPrefixes) {
    if (word.size() < p.prefix.size() + p.min_rest || word.substr(0, p.prefix.size()) != p.prefix) continue;
    if (HasDigit(word.substr(p.prefix.size()))) return true;
  }
  return false;
}

// A JSON Web Token: three base64url parts, the first a JSON object ("eyJ").
bool IsJwt(std::string_view word) {
  if (word.substr(0, 3) != "eyJ") return false;
  size_t parts = 1, part_len = 0;
  for (char c : word) {
    if (c == '.') {
      if (part_len < 8) return false;
      ++parts;
      part_len = 0;
    } else if (IsTokenChar(c)) {
      ++part_len;
    } else {
      return false;
    }
  }
  return parts == 3;
}

// A long random-looking word: 32+ base64 characters with upper and lower
// case letters and digits, and about as much entropy per character as random
// text of that length has. Identifiers, paths (split at '/'), hex digests
// (no upper case) and numbers are not.
bool IsHighEntropy(std::string_view word) {
  if (word.size() < 32) return false;
  bool upper = false, lower = false, digit = false;
  std::array<int, 256> counts{};
  for (char c : word) {
    const auto u = static_cast<unsigned char>(c);
    upper |= std::isupper(u) != 0;
    lower |= std::islower(u) != 0;
    digit |= std::isdigit(u) != 0;
    ++counts[u];
  }
  if (!(upper && lower && digit)) return false;
  double bits = 0;
  for (int n : counts) {
    if (n == 0) continue;
    const double p = static_cast<double>(n) / static_cast<double>(word.size());
    bits -= p * std::log2(p);
  }
  return bits >= 4.3;
}

// "scheme://user:password@host..." -> "scheme://<redacted>@host...".
std::string StripUrlCredentials(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t scheme_end = text.find("://", pos);
    if (scheme_end == std::string_view::npos) break;
    const size_t auth_begin = scheme_end + 3;
    size_t auth_end = auth_begin;
    while (auth_end < text.size() && std::string_view("/?#\"' \t\n\r<>,;`").find(text[auth_end]) ==
                                         std::string_view::npos) {
      ++auth_end;
    }
    const std::string_view authority = text.substr(auth_begin, auth_end - auth_begin);
    const size_t at = authority.rfind('@');
    out.append(text.substr(pos, auth_begin - pos));
    if (at != std::string_view::npos && at > 0 && authority.substr(0, at) != kRedacted) {
      out.append(kRedacted);
      out.append(authority.substr(at));
    } else {
      out.append(authority);
    }
    pos = auth_end;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

std::string RedactSecretsInText(std::string_view text) {
  const std::string stripped = StripUrlCredentials(text);
  std::string out;
  out.reserve(stripped.size());
  const std::string_view s = stripped;
  size_t i = 0;
  while (i < s.size()) {
    if (!IsBlobChar(s[i])) {
      out.push_back(s[i++]);
      continue;
    }
    // A word: a run of token characters, with the dots of a JWT.
    size_t end = i;
    while (end < s.size() && (IsBlobChar(s[end]) || (s[end] == '.' && end + 1 < s.size() && IsTokenChar(s[end + 1])))) {
      ++end;
    }
    std::string_view word = s.substr(i, end - i);
    // An assignment inside one word ("--key=sk-..."): judge what follows '='
    // (not base64 padding, "abc==").
    if (const size_t eq = word.find('='); eq != std::string_view::npos && eq > 0 && eq + 1 < word.size() &&
                                          word[eq + 1] != '=') {
      out.append(word.substr(0, eq + 1));
      word.remove_prefix(eq + 1);
    }
    if (IsJwt(word)) {
      out.append(kRedacted);
    } else {
      // Piece by piece between dots: a token inside a dotted name.
      size_t piece_begin = 0;
      for (size_t k = 0; k <= word.size(); ++k) {
        if (k < word.size() && word[k] != '.') continue;
        const std::string_view piece = word.substr(piece_begin, k - piece_begin);
        out.append(IsPrefixedToken(piece) || IsHighEntropy(piece) ? kRedacted : piece);
        if (k < word.size()) out.push_back('.');
        piece_begin = k + 1;
      }
    }
    i = end;
  }
  return out;
}

bool HoldsRedaction(std::string_view text) { return text.find(kRedacted) != std::string_view::npos; }

}  // namespace magneton
