// The one rule for what a trace never stores: the value of anything whose
// name looks like it holds a secret (docs/TRACE_FORMAT.md, "What a trace
// contains"). TraceWriter applies it to every config entry and meta row it
// writes, so no recorder, binding or C ABI caller can bypass it; anything else
// that needs to know (env snapshots, bindings) calls these functions rather
// than keeping its own copy of the rule.
#pragma once

#include <string>
#include <string_view>

namespace magneton {

// What a secret's value is replaced by.
inline constexpr std::string_view kRedacted = "<redacted>";

// Whether a name looks like it names a secret, judged on its last component
// (after the last '.', leading '-' dropped): "env.HF_TOKEN", "CUDA_API_KEY",
// "call.from_pretrained.token", "model_config.M.api_key", "--db-password".
// Case-insensitive. Secret when the component contains "secret", "passw",
// "credential", "passphrase" or "authoriz", or when one of its words (split at
// non-alphanumerics and lower-to-upper case changes) is "auth"/"oauth" or
// ends in "token", "key" or "keys" — unless the next word says it is an id or
// a size of one ("pad_token_id", "token_type_ids", "num_key_value_heads"), not
// the secret itself. "tokens" is not a secret word ("max_new_tokens").
bool IsSecretName(std::string_view name);

// `value`, or kRedacted when `name` looks secret — except a bare truth value
// (True, False, None, true, false), which cannot be a secret and which
// diagnosis may need (generate's token_healing=True).
std::string RedactIfSecret(std::string_view name, std::string value);

// The command line with secrets taken out: the value of every shell word
// NAME=value or --flag=value whose name looks secret, and the word after a
// secret-looking flag (`--token x`), become '<redacted>' (quoted, so the line
// stays a valid shell command). Everything else is kept byte for byte.
// Idempotent: redacting a redacted line changes nothing.
std::string RedactCommandLine(std::string_view command_line);

}  // namespace magneton
