// Call-argument contrast (issue 13 item 5): the keyword arguments the two
// programs pass on the lines that issued the region's ops. Read from the
// recorded call sites' source, so an argument no branch of the traced
// function reads (full_matrices of torch.linalg.svd, a forward kwarg) can be
// named: the same callee on both lines, a keyword given other values or given
// on one side only.
#include <cctype>
#include <map>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

constexpr const char* kDefault = "<default>";

bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The index just past a string literal starting at `i` (a quote).
size_t SkipString(const std::string& s, size_t i) {
  const char q = s[i];
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == q) {
      return i + 1;
    }
  }
  return s.size();
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

struct Call {
  std::string callee;  // "torch.linalg.svd", "model.generate"
  std::map<std::string, std::string> kwargs;
};

// Every call `chain(args)` on the line, outer calls before the calls in their
// arguments, with the keyword arguments given at top level of each.
std::vector<Call> CallsOf(const std::string& line) {
  std::vector<Call> out;
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == '"' || c == '\'') {
      i = SkipString(line, i);
      continue;
    }
    if (c == '#') break;
    if (!NameStart(c) || (i > 0 && (NameChar(line[i - 1]) || line[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && (NameChar(line[j]) || line[j] == '.')) ++j;
    size_t k = j;
    while (k < line.size() && line[k] == ' ') ++k;
    if (k >= line.size() || line[k] != '(') {
      i = j;
      continue;
    }
    Call call;
    call.callee = line.substr(i, j - i);
    // The arguments, split at top-level commas, up to the matching ')'.
    int depth = 0;
    size_t arg_start = k + 1;
    for (size_t p = k; p < line.size(); ++p) {
      const char ch = line[p];
      if (ch == '"' || ch == '\'') {
        p = SkipString(line, p) - 1;
        continue;
      }
      if (ch == '(' || ch == '[' || ch == '{') ++depth;
      if (ch == ')' || ch == ']' || ch == '}') --depth;
      if ((depth == 1 && ch == ',') || depth == 0) {
        const std::string arg = Trim(line.substr(arg_start, p - arg_start));
        const size_t eq = arg.find('=');
        if (eq != std::string::npos && eq > 0 && (eq + 1 >= arg.size() || arg[eq + 1] != '=')) {
          const std::string name = Trim(arg.substr(0, eq));
          bool is_name = !name.empty() && NameStart(name[0]);
          for (char n : name) is_name = is_name && NameChar(n);
          if (is_name) call.kwargs[name] = Trim(arg.substr(eq + 1));
        }
        arg_start = p + 1;
        if (depth == 0) break;
      }
    }
    out.push_back(std::move(call));
    i = k + 1;  // calls inside the arguments come next
  }
  return out;
}

}  // namespace

std::vector<CallArgDifference> ContrastCallArgs(const std::string& line_a, const std::string& line_b) {
  std::vector<CallArgDifference> out;
  const std::vector<Call> calls_a = CallsOf(line_a), calls_b = CallsOf(line_b);
  std::map<std::string, size_t> seen;  // k-th call of a callee pairs with the other line's k-th
  for (const Call& ca : calls_a) {
    const size_t k = seen[ca.callee]++;
    const Call* cb = nullptr;
    size_t n = 0;
    for (const Call& c : calls_b) {
      if (c.callee == ca.callee && n++ == k) {
        cb = &c;
        break;
      }
    }
    if (!cb) continue;
    std::map<std::string, std::pair<std::string, std::string>> both;
    for (const auto& [name, v] : ca.kwargs) both[name] = {v, kDefault};
    for (const auto& [name, v] : cb->kwargs) {
      auto it = both.find(name);
      if (it == both.end()) {
        both[name] = {kDefault, v};
      } else {
        it->second.second = v;
      }
    }
    for (const auto& [name, v] : both) {
      if (v.first != v.second) out.push_back({ca.callee, name, v.first, v.second, ""});
    }
  }
  return out;
}

}  // namespace magneton::diagnose
