// The one rule for what a trace never stores: the value of anything whose
// name looks like it holds a secret, and secrets inside any value — the
// credentials of a URL, words shaped like access tokens (docs/SECURITY.md;
// docs/TRACE_FORMAT.md, "What a trace contains"). TraceWriter applies it to every config entry and meta row it
// writes, so no recorder, binding or C ABI caller can bypass it; anything else
// that needs to know (env snapshots, bindings) calls these functions rather
// than keeping its own copy of the rule.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace magneton {

// What a secret's value is replaced by.
inline constexpr std::string_view kRedacted = "<redacted>";

// Whether a name looks like it names a secret, judged on its last component
// (after the last '.', leading '-' dropped): "env.HF_TOKEN", "CUDA_API_KEY",
// "call.from_pretrained.token", "model_config.M.api_key", "--db-password".
// Case-insensitive. Secret when the component contains "secret", "passw",
// "credential", "passphrase" or "authoriz", or when one of its words (split at
// non-alphanumerics and lower-to-upper case changes) is "auth"/"oauth", "pat",
// "jwt", "dsn", "cookie(s)", "session", "private", "passwd", or ends in
// "token", "key" or "keys" — unless the next word says it is an id or a size
// of one ("pad_token_id", "token_type_ids", "num_key_value_heads"), not the
// secret itself; "access" before "key"/"token" (AWS_ACCESS_KEY_ID) is secret
// whatever follows; "pass" and "pwd" only in a name of at most three words
// (DB_PASS, MYSQL_PWD, not jax_compiler_enable_remat_pass nor PWD itself).
// "tokens" is not a secret word ("max_new_tokens").
bool IsSecretName(std::string_view name);

// The one function for a named value (an environment variable, a config
// entry, a meta row, a call argument, a line-trace variable): kRedacted when
// `name` looks secret — except a bare truth value (True, False, None, true,
// false), which cannot be a secret and which diagnosis may need (generate's
// token_healing=True) —, else RedactSecretsInText(value).
std::string RedactIfSecret(std::string_view name, std::string value);

// Secrets inside text whatever it is called: `user:password@` in every URL
// ("postgres://<redacted>@db/app"), and every word shaped like a credential —
// an issuer's token prefix (sk-, sk_live_, ghp_, gho_, github_pat_, glpat-,
// hf_, xox?-, AKIA, ASIA, AIza, npm_, pypi-) with enough after it to be one
// and a digit among it, a JSON Web Token (eyJ….….…), or 32+ base64 characters
// with upper and lower case and digits and the entropy of random text. Used
// for values, argv words, and the text of reports (source lines included).
std::string RedactSecretsInText(std::string_view text);

// argv with secrets taken out, word by word, by the rules of
// RedactCommandLine (NAME=secret, --flag=secret, the word after a secret
// flag or after `-p` unless all digits, secrets inside any word): a re-run
// plan's argv as the trace stores it.
std::vector<std::string> RedactArgv(const std::vector<std::string>& argv);

// Whether text holds the redaction mark: a command holding one is never re-run
// (it could not reproduce the run).
bool HoldsRedaction(std::string_view text);

// The command line with secrets taken out: the value of every shell word
// NAME=value or --flag=value whose name looks secret, and the word after a
// secret-looking flag (`--token x`) or after `-p` (unless all digits), become
// '<redacted>' (quoted, so the line stays a valid shell command); a word
// holding a secret by RedactSecretsInText comes back single-quoted with it
// replaced. Everything else is kept byte for byte.
// Idempotent: redacting a redacted line changes nothing.
std::string RedactCommandLine(std::string_view command_line);

}  // namespace magneton
