#include "record/hlo_text.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

namespace magneton {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The text of `key="..."` in `s` (HLO escapes quotes with a backslash), or "".
std::string QuotedValue(std::string_view s, std::string_view key) {
  const std::string pattern = std::string(key) + "=\"";
  size_t at = s.find(pattern);
  if (at == std::string_view::npos) return {};
  std::string out;
  for (size_t i = at + pattern.size(); i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out.push_back(s[++i]);
    } else if (s[i] == '"') {
      break;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The integer of `key=123` in `s`, or -1.
int64_t IntValue(std::string_view s, std::string_view key) {
  const std::string pattern = std::string(key) + "=";
  size_t at = 0;
  while ((at = s.find(pattern, at)) != std::string_view::npos) {
    // A whole key: not the tail of a longer one (end_line for line).
    if (at == 0 || s[at - 1] == ' ' || s[at - 1] == '{' || s[at - 1] == ',') {
      return std::strtoll(std::string(s.substr(at + pattern.size(), 20)).c_str(), nullptr, 10);
    }
    at += pattern.size();
  }
  return -1;
}

// A table line `12 "text"` or `12 {fields}`: its id and the rest.
bool TableRow(std::string_view line, int64_t* id, std::string_view* rest) {
  line = Trim(line);
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 0) return false;
  for (size_t i = 0; i < sp; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
  }
  *id = std::strtoll(std::string(line.substr(0, sp)).c_str(), nullptr, 10);
  *rest = Trim(line.substr(sp + 1));
  return true;
}

struct Location {
  int64_t file = -1, function = -1, line = -1;
};

struct Instruction {
  std::string name, opcode, fusion_kind, calls, op_name, source;
  std::string type;                   // "f32[2,4]{1,0}", "(f32[2]{0}, s32[])"
  std::vector<std::string> operands;  // instruction names, in order
  int64_t number = -1;                // parameter(k): k; get-tuple-element: index
  bool root = false;
};

// "f32[2,4]{1,0}" -> {2, 4}; a tuple or a scalar -> {}.
std::vector<int64_t> Dims(std::string_view type) {
  std::vector<int64_t> out;
  if (type.empty() || type.front() == '(') return out;
  const size_t open = type.find('['), close = type.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return out;
  std::string_view inner = type.substr(open + 1, close - open - 1);
  while (!inner.empty()) {
    const size_t comma = inner.find(',');
    out.push_back(std::strtoll(std::string(inner.substr(0, comma)).c_str(), nullptr, 10));
    if (comma == std::string_view::npos) break;
    inner.remove_prefix(comma + 1);
  }
  return out;
}

// The `%name` operands inside the opcode's parentheses.
std::vector<std::string> Operands(std::string_view args) {
  std::vector<std::string> out;
  int depth = 0;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const char c = args[i];
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    }
    if (c == '%' && depth == 0) {
      size_t end = args.find_first_of(",) ", i);
      if (end == std::string_view::npos) end = args.size();
      out.emplace_back(args.substr(i + 1, end - i - 1));
    }
  }
  return out;
}

// `[ROOT ]%name = <type> opcode(operands), attributes` -> its parts.
bool ParseInstruction(std::string_view line, Instruction* out) {
  line = Trim(line);
  out->root = line.rfind("ROOT ", 0) == 0;
  if (out->root) line.remove_prefix(5);
  if (line.empty() || line.front() != '%') return false;
  const size_t eq = line.find(" = ");
  if (eq == std::string_view::npos) return false;
  out->name = std::string(line.substr(1, eq - 1));
  std::string_view rest = line.substr(eq + 3);
  // The type: a tuple "(f32[2]{0}, s32[])" or one word.
  size_t i = 0;
  if (!rest.empty() && rest.front() == '(') {
    int depth = 0;
    for (; i < rest.size(); ++i) {
      if (rest[i] == '(') ++depth;
      if (rest[i] == ')' && --depth == 0) {
        ++i;
        break;
      }
    }
  } else {
    i = rest.find(' ');
    if (i == std::string_view::npos) return false;
  }
  out->type = std::string(Trim(rest.substr(0, i)));
  rest = Trim(rest.substr(i));
  const size_t paren = rest.find('(');
  if (paren == std::string_view::npos) return false;
  out->opcode = std::string(rest.substr(0, paren));
  out->operands = Operands(rest.substr(paren + 1));
  if (out->opcode == "parameter") out->number = std::strtoll(std::string(rest.substr(paren + 1, 12)).c_str(), nullptr, 10);
  if (out->opcode == "get-tuple-element") out->number = IntValue(rest, "index");
  const size_t kind = rest.find("kind=");
  if (kind != std::string_view::npos) {
    size_t end = rest.find_first_of(", ", kind);
    out->fusion_kind = std::string(rest.substr(kind + 5, end == std::string_view::npos ? end : end - kind - 5));
  }
  const size_t calls = rest.find("calls=%");
  if (calls != std::string_view::npos) {
    size_t end = rest.find_first_of(", }", calls + 7);
    out->calls = std::string(rest.substr(calls + 7, end == std::string_view::npos ? end : end - calls - 7));
  }
  const size_t meta = rest.find("metadata={");
  if (meta != std::string_view::npos) {
    const std::string_view m = rest.substr(meta);
    out->op_name = QuotedValue(m, "op_name");
    const int64_t frame = IntValue(m, "stack_frame_id");
    if (frame >= 0) {
      out->source = "#" + std::to_string(frame);  // resolved through the tables once all are read
    } else {
      const std::string file = QuotedValue(m, "source_file");
      const int64_t src_line = IntValue(m, "source_line");
      if (!file.empty() && src_line >= 0) out->source = file + ":" + std::to_string(src_line) + ":?";
    }
  }
  return true;
}

void AddOnce(std::vector<std::string>* v, const std::string& s) {
  if (!s.empty() && std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
}

std::string Primitive(const std::string& op_name) {
  const size_t slash = op_name.rfind('/');
  return slash == std::string::npos ? op_name : op_name.substr(slash + 1);
}

}  // namespace

HloModuleInfo ParseHloText(std::string_view text) {
  HloModuleInfo out;
  std::unordered_map<int64_t, std::string> files, functions;
  std::unordered_map<int64_t, Location> locations;
  std::unordered_map<int64_t, int64_t> frame_location;
  std::map<std::string, std::vector<Instruction>> computations;
  std::vector<Instruction> all;
  std::string section, computation, entry;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view raw = text.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string_view line = Trim(raw);
    if (line.empty()) {
      section.clear();
      continue;
    }
    if (line.rfind("HloModule ", 0) == 0) {
      std::string_view name = line.substr(10);
      out.name = std::string(name.substr(0, name.find_first_of(", ")));
      continue;
    }
    if (line == "FileNames" || line == "FunctionNames" || line == "FileLocations" || line == "StackFrames") {
      section = std::string(line);
      continue;
    }
    int64_t id = 0;
    std::string_view rest;
    if (!section.empty() && TableRow(line, &id, &rest)) {
      if (section == "FileNames" || section == "FunctionNames") {
        std::string value = rest.size() >= 2 && rest.front() == '"' ? std::string(rest.substr(1, rest.size() - 2)) : "";
        (section == "FileNames" ? files : functions)[id] = std::move(value);
      } else if (section == "FileLocations") {
        locations[id] = {IntValue(rest, "file_name_id"), IntValue(rest, "function_name_id"), IntValue(rest, "line")};
      } else {
        frame_location[id] = IntValue(rest, "file_location_id");
      }
      continue;
    }
    if (line.back() == '{' && line.find(" = ") == std::string_view::npos) {  // a computation's header
      std::string_view head = line.rfind("ENTRY ", 0) == 0 ? line.substr(6) : line;
      if (!head.empty() && head.front() == '%') head.remove_prefix(1);
      computation = std::string(head.substr(0, head.find_first_of(" (")));
      if (line.rfind("ENTRY ", 0) == 0) entry = computation;
      continue;
    }
    if (line == "}") {
      computation.clear();
      continue;
    }
    Instruction ins;
    if (!computation.empty() && ParseInstruction(line, &ins)) {
      computations[computation].push_back(ins);
      all.push_back(std::move(ins));
    }
  }
  auto source_of = [&](const std::string& s) -> std::string {
    if (s.empty() || s.front() != '#') return s;
    auto f = frame_location.find(std::strtoll(s.c_str() + 1, nullptr, 10));
    if (f == frame_location.end()) return {};
    auto l = locations.find(f->second);
    if (l == locations.end()) return {};
    auto file = files.find(l->second.file);
    auto fn = functions.find(l->second.function);
    return (file == files.end() ? std::string("?") : file->second) + ":" + std::to_string(l->second.line) + ":" +
           (fn == functions.end() ? std::string("?") : fn->second);
  };
  for (const Instruction& ins : all) {
    if (ins.opcode == "parameter" || ins.opcode == "constant") continue;
    HloOpInfo info;
    info.opcode = ins.opcode;
    info.fusion_kind = ins.fusion_kind;
    AddOnce(&info.primitives, Primitive(ins.op_name));
    AddOnce(&info.sources, source_of(ins.source));
    auto called = computations.find(ins.calls);
    if (called != computations.end()) {
      for (const Instruction& inner : called->second) {
        if (inner.opcode == "parameter" || inner.opcode == "constant") continue;
        AddOnce(&info.primitives, Primitive(inner.op_name));
        AddOnce(&info.sources, source_of(inner.source));
      }
    }
    out.ops[ins.name] = std::move(info);
  }
  auto line_of = [&](const Instruction& ins) {  // "file:line:function" -> "file:line"
    std::string s = source_of(ins.source);
    const size_t colon = s.rfind(':');
    return colon == std::string::npos ? s : s.substr(0, colon);
  };
  auto entry_it = computations.find(entry);
  if (entry_it != computations.end()) {
    for (const Instruction& ins : entry_it->second) {
      HloEntryInstruction e{ins.name, ins.opcode, ins.operands, -1, -1, ins.root, {}};
      if (ins.opcode == "parameter") e.parameter_number = ins.number;
      if (ins.opcode == "get-tuple-element") e.tuple_index = ins.number;
      const Instruction* root = &ins;
      const std::vector<Instruction>* scope = nullptr;
      auto called = computations.find(ins.calls);
      if (ins.opcode == "fusion" && called != computations.end()) {
        scope = &called->second;
        for (const Instruction& inner : called->second) {
          if (inner.root) root = &inner;
        }
      }
      if (root->opcode == "tuple" && scope) {  // a multi-output fusion: each element
        for (const std::string& name : root->operands) {
          for (const Instruction& inner : *scope) {
            if (inner.name == name) e.results.push_back({inner.op_name, line_of(inner), Dims(inner.type)});
          }
        }
      } else if (root->opcode != "tuple") {
        e.results.push_back({root->op_name, line_of(*root), Dims(root->type)});
      }
      out.entry.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace magneton
