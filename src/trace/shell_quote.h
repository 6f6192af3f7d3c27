// POSIX shell quoting of one word, for the commands magneton prints (a re-run
// plan's argv for the user to run, the display command line, a redacted word
// kept as one word). Nothing magneton runs goes through a shell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace magneton {

// `word` as the shell reads it back: unquoted when it holds only characters
// no shell treats specially (and `always` is false), else in single quotes
// with each ' written as '\''.
std::string ShellQuoteWord(std::string_view word, bool always = false);

// The argv as one POSIX shell line, each word quoted when needed: what the
// user would type; for display only, never run by magneton.
std::string ShellQuoteArgv(const std::vector<std::string>& argv);

}  // namespace magneton
