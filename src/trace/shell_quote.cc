#include "trace/shell_quote.h"

namespace magneton {

std::string ShellQuoteWord(std::string_view word, bool always) {
  const bool plain = !always && !word.empty() &&
                     word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                            "-_./=:,+@%") == std::string_view::npos;
  if (plain) return std::string(word);
  std::string out(1, '\'');
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string ShellQuoteArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out.push_back(' ');
    out += ShellQuoteWord(a);
  }
  return out;
}

}  // namespace magneton
