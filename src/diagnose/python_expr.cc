// A small tokenizer for Python statements: enough to find a branch's
// condition, an assignment's targets and the operands an expression reads.
// Not a Python parser: anything it does not understand becomes kOther with
// the operands of the whole line.
#include <algorithm>
#include <cctype>
#include <set>

#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {
namespace {

enum class Tok { kName, kNumber, kString, kOp };
struct Token {
  Tok kind;
  std::string text;
};

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<Token> Tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
    } else if (c == '#') {
      break;
    } else if (IsNameStart(c)) {
      size_t j = i;
      while (j < s.size() && IsNameChar(s[j])) ++j;
      // String prefixes (f"", rb'') belong to the string.
      if (j < s.size() && (s[j] == '"' || s[j] == '\'') && j - i <= 2) {
        i = j;
        continue;
      }
      out.push_back({Tok::kName, s.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (IsNameChar(s[j]) || s[j] == '.')) ++j;
      out.push_back({Tok::kNumber, s.substr(i, j - i)});
      i = j;
    } else if (c == '"' || c == '\'') {
      const bool triple = s.compare(i, 3, std::string(3, c)) == 0;
      const size_t quote_len = triple ? 3 : 1;
      size_t j = i + quote_len;
      while (j < s.size()) {
        if (s[j] == '\\') {
          j += 2;
          continue;
        }
        if (s.compare(j, quote_len, std::string(quote_len, c)) == 0) break;
        ++j;
      }
      const size_t end = std::min(s.size(), j + quote_len);
      out.push_back({Tok::kString, s.substr(i, end - i)});
      i = end;
    } else {
      static const char* kTwo[] = {"==", "!=", "<=", ">=", "**", "//", "->", ":=", "+=", "-=", "*=", "/=",
                                   "%=", "&=", "|=", "^=", "<<", ">>", "@="};
      std::string op(1, c);
      for (const char* two : kTwo) {
        if (s.compare(i, 2, two) == 0) op = two;
      }
      out.push_back({Tok::kOp, op});
      i += op.size();
    }
  }
  return out;
}

bool IsKeyword(const std::string& w) {
  static const std::set<std::string> kWords = {
      "if",     "elif",   "else",  "while", "for",      "in",     "not",   "and",   "or",    "is",
      "None",   "True",   "False", "lambda", "return",  "def",    "class", "yield", "await", "async",
      "with",   "as",     "assert", "del",  "pass",     "break",  "continue", "import", "from", "global",
      "nonlocal", "raise", "try",  "except", "finally"};
  return kWords.count(w) > 0;
}

bool IsBuiltin(const std::string& w) {
  static const std::set<std::string> kBuiltins = {
      "len",   "isinstance", "issubclass", "hasattr", "getattr", "setattr", "range", "enumerate", "int",
      "float", "str",        "bool",       "tuple",   "list",    "dict",    "set",   "min",       "max",
      "any",   "all",        "super",      "print",   "type",    "zip",     "sorted", "reversed", "sum",
      "abs",   "round",      "id",         "iter",    "next",    "callable", "repr", "map",      "filter",
      "ValueError", "TypeError", "RuntimeError", "KeyError", "NotImplementedError", "object"};
  return kBuiltins.count(w) > 0;
}

std::string Unquote(const std::string& s) {
  size_t q = s.find_first_of("\"'");
  if (q == std::string::npos || s.size() < q + 2) return s;
  return s.substr(q + 1, s.size() - q - 2);
}

// Reads the operand chains from tokens [begin, end).
void References(const std::vector<Token>& t, size_t begin, size_t end, std::vector<std::string>* out) {
  auto add = [out](const std::string& r) {
    if (std::find(out->begin(), out->end(), r) == out->end()) out->push_back(r);
  };
  int depth = 0;
  std::vector<bool> call_paren;  // per open bracket: a call's argument list
  for (size_t i = begin; i < end; ++i) {
    const Token& tok = t[i];
    if (tok.kind == Tok::kOp) {
      if (tok.text == "(" || tok.text == "[" || tok.text == "{") ++depth;
      if (tok.text == ")" || tok.text == "]" || tok.text == "}") --depth;
      continue;
    }
    if (tok.kind != Tok::kName || IsKeyword(tok.text)) continue;
    if (i > begin && t[i - 1].kind == Tok::kOp && t[i - 1].text == ".") continue;  // inside a chain
    // A keyword argument's name: `f(use_cache=x)`.
    if (depth > 0 && i + 1 < end && t[i + 1].kind == Tok::kOp && t[i + 1].text == "=") continue;
    std::vector<std::string> parts{tok.text};
    std::string chain = tok.text;
    size_t j = i + 1;
    while (j + 1 < end && t[j].kind == Tok::kOp) {
      if (t[j].text == "." && t[j + 1].kind == Tok::kName) {
        chain += "." + t[j + 1].text;
        parts.push_back(t[j + 1].text);
        j += 2;
      } else if (t[j].text == "[" && j + 2 < end && t[j + 1].kind == Tok::kString && t[j + 2].text == "]") {
        chain += "[\"" + Unquote(t[j + 1].text) + "\"]";
        parts.push_back("[" + Unquote(t[j + 1].text));
        j += 3;
      } else {
        break;
      }
    }
    const bool called = j < end && t[j].kind == Tok::kOp && t[j].text == "(";
    const bool string_arg = called && j + 1 < end && t[j + 1].kind == Tok::kString;
    // Environment lookups.
    if (chain.rfind("os.environ[\"", 0) == 0 || chain.rfind("environ[\"", 0) == 0) {
      add("env:" + chain.substr(chain.find("[\"") + 2, chain.find("\"]") - chain.find("[\"") - 2));
      i = j - 1;
      continue;
    }
    if (called && string_arg &&
        (chain == "os.environ.get" || chain == "environ.get" || chain == "os.getenv" || chain == "getenv")) {
      add("env:" + Unquote(t[j + 1].text));
      i = j - 1;  // the call's arguments (the default) are read further on
      continue;
    }
    if (called) {
      // d.get("k") / d.pop("k", default): a lookup of d["k"].
      if (string_arg && parts.size() >= 2 && (parts.back() == "get" || parts.back() == "pop")) {
        add(chain.substr(0, chain.rfind('.')) + "[\"" + Unquote(t[j + 1].text) + "\"]");
        i = j - 1;
        continue;
      }
      // A method call reads its object; a plain call reads nothing by name.
      // (Calling a plain function, local or global, reads nothing by name.)
      if (parts.size() >= 2) add(chain.substr(0, chain.rfind('.')));
      i = j - 1;
      continue;
    }
    if (parts.size() == 1 && IsBuiltin(tok.text)) continue;
    add(chain);
    i = j - 1;
  }
}

// Index of the first top-level token with this text at or after `from`, or npos.
size_t FindTopLevel(const std::vector<Token>& t, size_t from, const std::string& text, Tok kind = Tok::kOp) {
  int depth = 0;
  for (size_t i = from; i < t.size(); ++i) {
    if (t[i].kind == Tok::kOp) {
      if (t[i].text == "(" || t[i].text == "[" || t[i].text == "{") ++depth;
      if (t[i].text == ")" || t[i].text == "]" || t[i].text == "}") --depth;
    }
    if (depth == 0 && t[i].kind == kind && t[i].text == text) return i;
  }
  return std::string::npos;
}

std::string Join(const std::vector<Token>& t, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < t.size(); ++i) {
    const bool tight = t[i].kind == Tok::kOp && (t[i].text == "." || t[i].text == "(" || t[i].text == ")" ||
                                                 t[i].text == "[" || t[i].text == "]" || t[i].text == ",");
    const bool prev_tight = i > begin && t[i - 1].kind == Tok::kOp &&
                            (t[i - 1].text == "." || t[i - 1].text == "(" || t[i - 1].text == "[");
    if (!out.empty() && !tight && !prev_tight) out += ' ';
    if (t[i].text == "," && i + 1 < end) {
      out += ", ";
      continue;
    }
    out += t[i].text;
  }
  return out;
}

// Assigned names/chains of a left-hand side: `a, (b, self.c)` -> a, b, self.c.
std::vector<std::string> Targets(const std::vector<Token>& t, size_t begin, size_t end) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = begin; i < end; ++i) {
    const Token& tok = t[i];
    if (tok.kind == Tok::kOp && (tok.text == "," || tok.text == "(" || tok.text == ")" || tok.text == "*")) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      continue;
    }
    if (tok.kind == Tok::kOp && tok.text == "[") {  // x[i] = ...: x is modified, not rebound
      size_t close = i;
      while (close < end && t[close].text != "]") ++close;
      i = close;
      continue;
    }
    if (tok.kind == Tok::kOp && tok.text == ":") break;  // annotation
    cur += tok.text;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::vector<std::string> ExtractReferences(const std::string& expression) {
  std::vector<Token> t = Tokenize(expression);
  std::vector<std::string> out;
  References(t, 0, t.size(), &out);
  return out;
}

PyStatement ParseStatement(const std::string& text) {
  PyStatement s;
  s.text = text;
  s.text.erase(0, s.text.find_first_not_of(" \t"));
  std::vector<Token> t = Tokenize(s.text);
  if (t.empty()) return s;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind == Tok::kName && (t[i].text == "and" || t[i].text == "or")) s.short_circuit = true;
    if (i > 0 && t[i].kind == Tok::kName && t[i].text == "if") s.short_circuit = true;  // ternary
  }
  const std::string& head = t[0].text;
  if (t[0].kind == Tok::kName && (head == "if" || head == "elif" || head == "while")) {
    s.kind = head == "if" ? StatementKind::kIf : head == "elif" ? StatementKind::kElif : StatementKind::kWhile;
    size_t colon = FindTopLevel(t, 1, ":");
    if (colon == std::string::npos) colon = t.size();
    s.condition = Join(t, 1, colon);
    References(t, 1, colon, &s.reads);
    return s;
  }
  if (t[0].kind == Tok::kName && head == "for") {
    s.kind = StatementKind::kFor;
    const size_t in = FindTopLevel(t, 1, "in", Tok::kName);
    if (in != std::string::npos) {
      s.targets = Targets(t, 1, in);
      size_t colon = FindTopLevel(t, in + 1, ":");
      if (colon == std::string::npos) colon = t.size();
      s.condition = Join(t, in + 1, colon);
      References(t, in + 1, colon, &s.reads);
    }
    return s;
  }
  if (t[0].kind == Tok::kName && head == "return") {
    s.kind = StatementKind::kReturn;
    References(t, 1, t.size(), &s.reads);
    return s;
  }
  if (t[0].kind == Tok::kName && IsKeyword(head)) {
    References(t, 1, t.size(), &s.reads);
    return s;
  }
  // Assignment: the last top-level '=' (chained a = b = c) or an augmented op.
  size_t eq = std::string::npos, aug = std::string::npos;
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != Tok::kOp) continue;
    if (t[i].text == "(" || t[i].text == "[" || t[i].text == "{") ++depth;
    if (t[i].text == ")" || t[i].text == "]" || t[i].text == "}") --depth;
    if (depth != 0) continue;
    if (t[i].text == "=") eq = i;
    if (t[i].text.size() == 2 && t[i].text[1] == '=' && t[i].text != "==" && t[i].text != "!=" &&
        t[i].text != "<=" && t[i].text != ">=" && aug == std::string::npos && eq == std::string::npos) {
      aug = i;
    }
  }
  if (aug != std::string::npos) {
    s.kind = StatementKind::kAssign;
    s.augmented = true;
    s.targets = Targets(t, 0, aug);
    s.reads = s.targets;
    References(t, aug + 1, t.size(), &s.reads);
    return s;
  }
  if (eq != std::string::npos) {
    s.kind = StatementKind::kAssign;
    // Every '=' before the last separates a target list.
    size_t start = 0;
    depth = 0;
    for (size_t i = 0; i <= eq; ++i) {
      if (t[i].kind == Tok::kOp && (t[i].text == "(" || t[i].text == "[" || t[i].text == "{")) ++depth;
      if (t[i].kind == Tok::kOp && (t[i].text == ")" || t[i].text == "]" || t[i].text == "}")) --depth;
      if (depth == 0 && t[i].kind == Tok::kOp && t[i].text == "=") {
        for (auto& name : Targets(t, start, i)) s.targets.push_back(name);
        start = i + 1;
      }
    }
    References(t, eq + 1, t.size(), &s.reads);
    return s;
  }
  References(t, 0, t.size(), &s.reads);
  return s;
}

}  // namespace magneton::diagnose
