// A Python function's extent, parameters and statements, read from source:
// the frames name a line inside the function; its def is the nearest line
// above with less indentation that defines that name.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {
namespace {

size_t Indent(const std::string& line) {
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return n;
}

bool Blank(const std::string& line) {
  const size_t i = Indent(line);
  return i == line.size() || line[i] == '#';
}

struct Logical {
  int64_t first_line = 0;  // 1-based
  int64_t last_line = 0;
  size_t indent = 0;
  std::string text;
};

// Joins physical lines into logical lines: open brackets, trailing
// backslashes and triple-quoted strings continue a line.
std::vector<Logical> LogicalLines(const std::vector<std::string>& lines, int64_t first_line, size_t from,
                                  size_t to) {
  std::vector<Logical> out;
  Logical cur;
  int depth = 0;
  std::string in_triple;  // the open triple quote, if any
  bool open = false;
  for (size_t k = from; k < to && k < lines.size(); ++k) {
    const std::string& line = lines[k];
    if (!open) {
      if (Blank(line)) continue;
      cur = Logical{first_line + static_cast<int64_t>(k), 0, Indent(line), ""};
      open = true;
    } else {
      cur.text += ' ';
    }
    bool backslash = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (!in_triple.empty()) {
        if (line.compare(i, 3, in_triple) == 0) {
          in_triple.clear();
          i += 2;
        }
        continue;
      }
      if (c == '#') break;
      if ((c == '"' || c == '\'') && line.compare(i, 3, std::string(3, c)) == 0) {
        const std::string q(3, c);
        const size_t close = line.find(q, i + 3);
        if (close == std::string::npos) {
          in_triple = q;
          break;
        }
        i = close + 2;
        continue;
      }
      if (c == '"' || c == '\'') {
        size_t j = i + 1;
        while (j < line.size() && line[j] != c) j += line[j] == '\\' ? 2 : 1;
        i = std::min(j, line.size());
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') depth = std::max(0, depth - 1);
    }
    // Continuation lines lose their indentation: one statement, one line of text.
    std::string body = cur.text.empty() ? line : line.substr(std::min(line.size(), Indent(line)));
    // The comment is dropped from the text (quotes inside it do not matter here).
    if (in_triple.empty()) {
      const size_t hash = body.find(" #");
      if (hash != std::string::npos && body.find_first_of("\"'") > hash) body.erase(hash);
    }
    while (!body.empty() && (body.back() == ' ' || body.back() == '\r')) body.pop_back();
    if (!body.empty() && body.back() == '\\') {
      backslash = true;
      body.pop_back();
    }
    cur.text += body;
    if (depth == 0 && in_triple.empty() && !backslash) {
      cur.last_line = first_line + static_cast<int64_t>(k);
      out.push_back(std::move(cur));
      open = false;
    }
  }
  if (open) {
    cur.last_line = first_line + static_cast<int64_t>(std::min(to, lines.size())) - 1;
    out.push_back(std::move(cur));
  }
  return out;
}

std::vector<std::string> Params(const std::string& def_text, std::string* var_positional, std::string* var_keyword) {
  std::vector<std::string> out;
  const size_t open = def_text.find('(');
  if (open == std::string::npos) return out;
  int depth = 0;
  std::string cur;
  auto flush = [&] {
    std::string p = cur;
    cur.clear();
    p.erase(0, p.find_first_not_of(" \t"));
    const bool kw = p.rfind("**", 0) == 0;
    const bool positional = !kw && p.rfind("*", 0) == 0;
    while (!p.empty() && p.front() == '*') p.erase(p.begin());
    size_t end = 0;
    while (end < p.size() && (std::isalnum(static_cast<unsigned char>(p[end])) || p[end] == '_')) ++end;
    p = p.substr(0, end);
    if (p.empty()) return;
    if (kw) *var_keyword = p;
    if (positional) *var_positional = p;
    out.push_back(p);
  };
  for (size_t i = open + 1; i < def_text.size(); ++i) {
    const char c = def_text[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    cur += c;
  }
  flush();
  return out;
}

}  // namespace

const PyStatement* PyFunction::StatementAt(int64_t line) const {
  for (const PyStatement& s : statements) {
    if (s.first_line <= line && line <= s.last_line) return &s;
  }
  return nullptr;
}

StatusOr<PyFunction> ParsePyFunction(const std::vector<std::string>& lines, int64_t first_line, int64_t line_inside,
                                     const std::string& function) {
  std::string name = function;
  if (const size_t dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
    return InvalidArgument("`" + function + "` is not a def (lambda, module or class body)");
  }
  const int64_t k_inside = line_inside - first_line;
  if (k_inside < 0 || k_inside >= static_cast<int64_t>(lines.size())) {
    return InvalidArgument("line " + std::to_string(line_inside) + " is outside the source");
  }
  const std::regex def_re("^\\s*(async\\s+)?def\\s+" + name + "\\s*\\(");
  // The nearest def of that name above the line whose body holds it (a
  // nested or earlier function of the same name does not).
  for (int64_t k_def = k_inside; k_def >= 0; --k_def) {
    const std::string& def = lines[static_cast<size_t>(k_def)];
    if (!std::regex_search(def, def_re)) continue;
    PyFunction fn;
    fn.name = name;
    fn.def_line = first_line + k_def;
    const size_t def_indent = Indent(def);
    std::vector<Logical> logical = LogicalLines(lines, first_line, static_cast<size_t>(k_def), lines.size());
    if (logical.empty()) continue;
    fn.params = Params(logical[0].text, &fn.var_positional, &fn.var_keyword);
    fn.end_line = logical[0].last_line;
    for (size_t i = 1; i < logical.size(); ++i) {
      if (logical[i].indent <= def_indent) break;
      PyStatement st = ParseStatement(logical[i].text);
      st.first_line = logical[i].first_line;
      st.last_line = logical[i].last_line;
      fn.end_line = st.last_line;
      fn.statements.push_back(std::move(st));
    }
    if (line_inside <= fn.end_line) {
      fn.name = function;  // the qualname, as frames and reports name it
      return fn;
    }
  }
  return NotFound("no `def " + name + "` encloses line " + std::to_string(line_inside));
}

StatusOr<PyFunction> ReadPyFunction(const SourceRoots& roots, const std::string& file, int64_t line_inside,
                                    const std::string& function) {
  MAGNETON_ASSIGN_OR_RETURN(std::string allowed, roots.Check(file));
  std::ifstream in(allowed);
  if (!in) return NotFound("cannot read " + file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  MAGNETON_ASSIGN_OR_RETURN(PyFunction fn, ParsePyFunction(lines, 1, line_inside, function));
  fn.file = file;
  return fn;
}

int64_t FindModuleAssignment(const std::vector<std::string>& lines, const std::string& name) {
  const std::regex re("^" + name + "\\s*(:[^=]*)?=[^=]");
  for (size_t k = 0; k < lines.size(); ++k) {
    if (std::regex_search(lines[k], re)) return static_cast<int64_t>(k) + 1;
  }
  return 0;
}

std::map<int64_t, std::vector<std::string>> WatchList(const PyFunction& fn) {
  std::map<int64_t, std::vector<std::string>> out;
  for (const PyStatement& s : fn.statements) {
    if (!s.reads.empty()) out[s.first_line] = s.reads;
  }
  // The arguments as passed: at the first statement, before the body changes them.
  const PyStatement* first_run = nullptr;
  for (const PyStatement& s : fn.statements) {
    // A docstring is a constant: the first line event is the statement after it.
    const size_t quote = s.text.find_first_of("\"'");
    if (s.text.empty() || (quote != std::string::npos && quote <= 2 &&
                           std::all_of(s.text.begin(), s.text.begin() + static_cast<std::ptrdiff_t>(quote),
                                       [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))) {
      continue;
    }
    first_run = &s;
    break;
  }
  if (first_run != nullptr) {
    auto& first = out[first_run->first_line];
    for (const std::string& p : fn.params) {
      if (p != "self" && std::find(first.begin(), first.end(), p) == first.end()) first.push_back(p);
    }
  }
  return out;
}

}  // namespace magneton::diagnose
