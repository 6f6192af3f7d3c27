#include "trace/redact.h"

#include <array>
#include <cctype>
#include <vector>

#include "trace/shell_quote.h"

namespace magneton {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// "HF_TOKEN" -> {hf, token}; "apiKey" -> {api, key}; "APIKey" -> {apikey}.
std::vector<std::string> Words(std::string_view name) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!IsAlnum(c)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      continue;
    }
    const bool camel = i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) &&
                       std::isupper(static_cast<unsigned char>(c));
    if (camel && !word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
    word.push_back(Lower(c));
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// A secret word followed by one of these names something about tokens or
// keys (an id, a type, a count, a size), not a credential.
constexpr std::array<std::string_view, 13> kNotTheSecret = {"id",  "ids", "type", "types",  "index", "idx", "dim",
                                                            "dims", "size", "len", "length", "count", "num"};

bool NotTheSecret(std::string_view next) {
  for (std::string_view w : kNotTheSecret) {
    if (next == w) return true;
  }
  return false;
}

bool SecretWord(std::string_view w) {
  return w == "auth" || w == "oauth" || EndsWith(w, "token") || EndsWith(w, "key") || EndsWith(w, "keys") ||
         w == "pat" || w == "jwt" || w == "dsn" || w == "cookie" || w == "cookies" || w == "session" ||
         w == "private" || w == "passwd";
}

// Words that name a secret only in a short name: DB_PASS, MYSQL_PWD, --db-pass,
// but not a compiler pass (jax_compiler_enable_remat_pass) or the working
// directory itself (PWD, OLDPWD).
bool ShortNameSecretWord(std::string_view w, size_t words_in_name) {
  if (w == "pass") return words_in_name <= 3;
  if (w == "pwd") return words_in_name >= 2 && words_in_name <= 3;
  return false;
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '_') return false;
  }
  return true;
}

bool IsFlag(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && i < 2 && s[i] == '-') ++i;
  if (i == 0 || i == s.size() || !IsAlnum(s[i])) return false;
  for (; i < s.size(); ++i) {
    if (!IsAlnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.') return false;
  }
  return true;
}

// Characters that end an unquoted shell word (and are kept as they are).
bool IsShellBreak(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == ';' || c == '|' || c == '&' || c == '<' || c == '>' ||
         c == '(' || c == ')';
}

struct ShellWord {
  size_t begin = 0, end = 0;  // the word's span in the command line, quotes included
  std::string text;           // its value after quote removal
};

// POSIX sh word splitting, as far as redaction needs it: quotes, backslashes,
// operators and $(...) (whose content stays inside the word).
std::vector<ShellWord> SplitShellWords(std::string_view s) {
  std::vector<ShellWord> words;
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (IsShellBreak(s[i])) {
      ++i;
      continue;
    }
    ShellWord w;
    w.begin = i;
    int depth = 0;  // open $( ... )
    while (i < n && (depth > 0 || !IsShellBreak(s[i]))) {
      const char c = s[i];
      if (c == '\\') {
        if (i + 1 < n) w.text.push_back(s[i + 1]);
        i += 2;
      } else if (c == '\'') {
        const size_t close = s.find('\'', i + 1);
        const size_t stop = close == std::string_view::npos ? n : close;
        w.text.append(s.substr(i + 1, stop - i - 1));
        i = stop + 1;
      } else if (c == '"') {
        for (++i; i < n && s[i] != '"'; ++i) {
          if (s[i] == '\\' && i + 1 < n && std::string_view("\"\\$`").find(s[i + 1]) != std::string_view::npos) ++i;
          w.text.push_back(s[i]);
        }
        ++i;
      } else {
        if (c == '$' && i + 1 < n && s[i + 1] == '(') {
          ++depth;
          w.text.push_back(c);
          ++i;
        } else if (c == ')' && depth > 0) {
          --depth;
        }
        w.text.push_back(s[i]);
        ++i;
      }
    }
    w.end = i < n ? i : n;
    words.push_back(std::move(w));
  }
  return words;
}

bool OnlySpaceBetween(std::string_view s, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    if (!std::isspace(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// `-p X`: mysql's, and many tools' short flag for a password; a port or a
// count (all digits) is kept.
bool IsShortPasswordFlag(std::string_view flag, std::string_view next) {
  if (flag != "-p" || next.empty()) return false;
  for (char c : next) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

bool IsSecretAssignmentName(std::string_view name) { return (IsEnvName(name) || IsFlag(name)) && IsSecretName(name); }

}  // namespace

bool IsSecretName(std::string_view name) {
  if (const size_t dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::string lower(name);
  for (char& c : lower) c = Lower(c);
  for (std::string_view part : {"secret", "passw", "credential", "passphrase", "authoriz"}) {
    if (lower.find(part) != std::string::npos) return true;
  }
  const std::vector<std::string> words = Words(name);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view next = i + 1 < words.size() ? std::string_view(words[i + 1]) : std::string_view();
    // AWS_ACCESS_KEY_ID: the id half of a key pair is a credential too.
    if (words[i] == "access" && (next == "key" || next == "keys" || next == "token")) return true;
    if (ShortNameSecretWord(words[i], words.size())) return true;
    if (!SecretWord(words[i])) continue;
    if (NotTheSecret(next)) continue;
    // Attention keys and values ("num_key_value_heads"), not a credential.
    if (EndsWith(words[i], "key") && (next == "value" || next == "values")) continue;
    return true;
  }
  return false;
}

std::string RedactIfSecret(std::string_view name, std::string value) {
  // A flag's truth value is no secret, and diagnosis may need it
  // (generate's token_healing=True, HF's token=True: "use the stored one").
  for (std::string_view keep : {"True", "False", "None", "true", "false"}) {
    if (value == keep) return value;
  }
  return IsSecretName(name) ? std::string(kRedacted) : RedactSecretsInText(value);
}

std::string RedactCommandLine(std::string_view command_line) {
  const std::vector<ShellWord> words = SplitShellWords(command_line);
  std::string quoted(1, '\'');  // '<redacted>': one shell word, no redirection
  quoted.append(kRedacted);
  quoted.push_back('\'');
  std::vector<std::string> replacement(words.size());
  std::vector<bool> replaced(words.size(), false);
  for (size_t k = 0; k < words.size(); ++k) {
    const std::string& text = words[k].text;
    const size_t eq = text.find('=');
    if (eq != std::string::npos && eq > 0) {
      const std::string_view name = std::string_view(text).substr(0, eq);
      if ((IsEnvName(name) || IsFlag(name)) && IsSecretName(name)) {
        replacement[k] = std::string(name) + "=" + quoted;
        replaced[k] = true;
      }
      if (replaced[k]) continue;
    } else if (k + 1 < words.size() &&
               ((IsFlag(text) && IsSecretName(text) && !IsFlag(words[k + 1].text)) ||
                IsShortPasswordFlag(text, words[k + 1].text)) &&
               OnlySpaceBetween(command_line, words[k].end, words[k + 1].begin)) {
      replacement[k + 1] = quoted;
      replaced[k + 1] = true;
      ++k;
      continue;
    }
    // A token or a URL's credentials inside any other word: the word is
    // given back single-quoted, with the secret replaced.
    if (std::string clean = RedactSecretsInText(text); clean != text) {
      replacement[k] = ShellQuoteWord(clean, /*always=*/true);
      replaced[k] = true;
    }
  }
  std::string out;
  out.reserve(command_line.size());
  size_t pos = 0;
  for (size_t k = 0; k < words.size(); ++k) {
    if (!replaced[k]) continue;
    out.append(command_line.substr(pos, words[k].begin - pos));
    out += replacement[k];
    pos = words[k].end;
  }
  out.append(command_line.substr(pos));
  return out;
}

std::vector<std::string> RedactArgv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (size_t k = 0; k < argv.size(); ++k) {
    const std::string& word = argv[k];
    const size_t eq = word.find('=');
    if (eq != std::string::npos && eq > 0 && IsSecretAssignmentName(std::string_view(word).substr(0, eq))) {
      out.push_back(word.substr(0, eq + 1) + std::string(kRedacted));
      continue;
    }
    out.push_back(RedactSecretsInText(word));
    const bool secret_flag = eq == std::string::npos && IsFlag(word) && IsSecretName(word);
    if (k + 1 < argv.size() && ((secret_flag && !IsFlag(argv[k + 1])) || IsShortPasswordFlag(word, argv[k + 1]))) {
      out.emplace_back(kRedacted);
      ++k;
    }
  }
  return out;
}

}  // namespace magneton
