// onnx GraphProto (protobuf JSON form) -> Graph. The Python glue converts the
// optimised model's graph with json_format.MessageToJson; all walking of the
// graph happens here.
#include <cctype>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "ort/ort.h"

namespace magneton::ort {
namespace {

using nlohmann::json;

// protobuf JSON uses lowerCamelCase unless preserving_proto_field_name.
const json* Field(const json& obj, const char* camel, const char* snake) {
  auto it = obj.find(camel);
  if (it != obj.end()) return &*it;
  it = obj.find(snake);
  return it != obj.end() ? &*it : nullptr;
}

std::string Str(const json& obj, const char* camel, const char* snake = nullptr) {
  const json* f = Field(obj, camel, snake ? snake : camel);
  return f && f->is_string() ? f->get<std::string>() : std::string();
}

// int64 fields are JSON strings in protobuf's mapping; accept numbers too.
StatusOr<int64_t> ToInt(const json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    try {
      size_t used = 0;
      int64_t x = std::stoll(s, &used);
      if (used == s.size()) return x;
    } catch (...) {
    }
  }
  return InvalidArgument("ONNX graph JSON: " + what + " is not an integer");
}

Status Strings(const json& obj, const char* key, const std::string& what, std::vector<std::string>* out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_array()) return InvalidArgument("ONNX graph JSON: " + what + "." + key + " is not an array");
  for (const json& s : *it) {
    if (!s.is_string()) return InvalidArgument("ONNX graph JSON: " + what + "." + key + " has a non-string entry");
    out->push_back(s.get<std::string>());
  }
  return Status::Ok();
}

// ValueInfoProto: {"name", "type": {"tensorType": {"elemType", "shape": {"dim": [{"dimValue"} | {"dimParam"}]}}}}
StatusOr<GraphValue> ValueInfo(const json& v) {
  if (!v.is_object()) return InvalidArgument("ONNX graph JSON: a value info is not an object");
  GraphValue g;
  g.name = Str(v, "name");
  const json* type = Field(v, "type", "type");
  const json* tensor = type ? Field(*type, "tensorType", "tensor_type") : nullptr;
  if (!tensor) return g;  // sequences, maps, or no type: name only
  if (const json* et = Field(*tensor, "elemType", "elem_type")) {
    MAGNETON_ASSIGN_OR_RETURN(int64_t t, ToInt(*et, g.name + ".elemType"));
    g.dtype = OnnxElemTypeName(t);
  }
  const json* shape = Field(*tensor, "shape", "shape");
  const json* dims = shape ? Field(*shape, "dim", "dim") : nullptr;
  if (dims && dims->is_array()) {
    for (const json& d : *dims) {
      const json* value = Field(d, "dimValue", "dim_value");
      if (value) {
        MAGNETON_ASSIGN_OR_RETURN(int64_t x, ToInt(*value, g.name + ".dimValue"));
        g.shape.push_back(x);
      } else {
        g.shape.push_back(-1);
      }
    }
  }
  return g;
}

Status ValueInfos(const json& graph, const char* camel, const char* snake, std::vector<GraphValue>* out) {
  const json* list = Field(graph, camel, snake);
  if (!list) return Status::Ok();
  if (!list->is_array()) return InvalidArgument(std::string("ONNX graph JSON: ") + camel + " is not an array");
  for (const json& v : *list) {
    MAGNETON_ASSIGN_OR_RETURN(GraphValue g, ValueInfo(v));
    out->push_back(std::move(g));
  }
  return Status::Ok();
}

}  // namespace

std::string OnnxElemTypeName(int64_t t) {
  switch (t) {
    case 1: return "float32";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 6: return "int32";
    case 7: return "int64";
    case 8: return "string";
    case 9: return "bool";
    case 10: return "float16";
    case 11: return "float64";
    case 12: return "uint32";
    case 13: return "uint64";
    case 16: return "bfloat16";
    default: return "";
  }
}

StatusOr<Graph> ParseGraphJson(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidArgument("ONNX graph JSON is not a JSON object");
  Graph g;
  g.name = Str(doc, "name");
  if (const json* nodes = Field(doc, "node", "node")) {
    if (!nodes->is_array()) return InvalidArgument("ONNX graph JSON: node is not an array");
    for (size_t i = 0; i < nodes->size(); ++i) {
      const json& n = (*nodes)[i];
      if (!n.is_object()) return InvalidArgument("ONNX graph JSON: node " + std::to_string(i) + " is not an object");
      GraphNode node;
      node.name = Str(n, "name");
      node.op_type = Str(n, "opType", "op_type");
      node.domain = Str(n, "domain");
      std::string what = "node " + std::to_string(i) + " (" + node.name + ")";
      if (node.op_type.empty()) return InvalidArgument("ONNX graph JSON: " + what + " has no opType");
      MAGNETON_RETURN_IF_ERROR(Strings(n, "input", what, &node.inputs));
      MAGNETON_RETURN_IF_ERROR(Strings(n, "output", what, &node.outputs));
      g.nodes.push_back(std::move(node));
    }
  }
  MAGNETON_RETURN_IF_ERROR(ValueInfos(doc, "input", "input", &g.inputs));
  MAGNETON_RETURN_IF_ERROR(ValueInfos(doc, "output", "output", &g.outputs));
  MAGNETON_RETURN_IF_ERROR(ValueInfos(doc, "valueInfo", "value_info", &g.value_info));
  if (const json* inits = Field(doc, "initializer", "initializer")) {
    if (!inits->is_array()) return InvalidArgument("ONNX graph JSON: initializer is not an array");
    for (const json& t : *inits) {
      if (!t.is_object()) return InvalidArgument("ONNX graph JSON: an initializer is not an object");
      GraphValue v;
      v.name = Str(t, "name");
      if (const json* dt = Field(t, "dataType", "data_type")) {
        MAGNETON_ASSIGN_OR_RETURN(int64_t x, ToInt(*dt, v.name + ".dataType"));
        v.dtype = OnnxElemTypeName(x);
      }
      if (const json* dims = Field(t, "dims", "dims"); dims && dims->is_array()) {
        for (const json& d : *dims) {
          MAGNETON_ASSIGN_OR_RETURN(int64_t x, ToInt(d, v.name + ".dims"));
          v.shape.push_back(x);
        }
      }
      g.initializers.push_back(std::move(v));
    }
  }
  return g;
}

std::vector<std::string> IntermediateNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const GraphNode& n : graph.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) names.push_back(o);
  return names;
}

std::string OpName(std::string_view domain, std::string_view op_type) {
  std::string d = domain.empty() || domain == "ai.onnx" ? "onnx" : std::string(domain);
  return d + "::" + std::string(op_type);
}

namespace {
// "Gemm", "MatMul_1", "Reshape_3": how the exporter names the op itself.
bool LooksLikeOpToken(std::string_view s) {
  if (s.empty() || !std::isupper(static_cast<unsigned char>(s[0]))) return false;
  size_t i = 0;
  while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) return true;
  if (s[i] != '_') return false;
  for (++i; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}
}  // namespace

std::vector<std::string> ScopeFromNodeName(std::string_view name) {
  std::vector<std::string> parts;
  // ORT's activation fusion names its node "fused <the node it absorbed>".
  constexpr std::string_view kFusedPrefix = "fused ";
  if (name.starts_with(kFusedPrefix)) name.remove_prefix(kFusedPrefix.size());
  if (name.find('/') == std::string_view::npos) return parts;
  // A fusion appends "/<Transformer>Fusion" (or "/<Transformer>Fusion/") to
  // the name of the node it replaced; that node's op token goes too.
  bool fused = !name.empty() && name.back() == '/';
  if (!fused) {
    std::string_view last = name.substr(name.rfind('/') + 1);
    fused = last.size() > 6 && last.ends_with("Fusion") && LooksLikeOpToken(last);
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) slash = name.size();
    if (slash > start) parts.emplace_back(name.substr(start, slash - start));
    start = slash + 1;
  }
  if (!parts.empty()) parts.pop_back();  // the op token, or the fusion's name
  if (fused && !parts.empty() && LooksLikeOpToken(parts.back())) parts.pop_back();
  return parts;
}

std::vector<std::vector<std::string>> NodeScopes(const Graph& graph) {
  std::vector<std::vector<std::string>> scopes(graph.nodes.size());
  std::unordered_map<std::string_view, size_t> producer;
  std::unordered_map<std::string_view, std::vector<size_t>> consumers;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    scopes[i] = ScopeFromNodeName(graph.nodes[i].name);
    for (const std::string& o : graph.nodes[i].outputs) producer.emplace(o, i);
    for (const std::string& in : graph.nodes[i].inputs) consumers[in].push_back(i);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!scopes[i].empty()) continue;
    std::vector<const std::vector<std::string>*> near;
    for (const std::string& in : graph.nodes[i].inputs)
      if (auto it = producer.find(in); it != producer.end()) near.push_back(&scopes[it->second]);
    for (const std::string& o : graph.nodes[i].outputs)
      if (auto it = consumers.find(o); it != consumers.end())
        for (size_t c : it->second) near.push_back(&scopes[c]);
    std::vector<std::string> common;
    bool first = true;
    for (const auto* s : near) {
      if (s->empty()) continue;  // unnamed neighbours say nothing
      if (first) {
        common = *s;
        first = false;
        continue;
      }
      size_t k = 0;
      while (k < common.size() && k < s->size() && common[k] == (*s)[k]) ++k;
      common.resize(k);
    }
    scopes[i] = std::move(common);
  }
  return scopes;
}

}  // namespace magneton::ort
