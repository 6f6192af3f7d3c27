#include "trace/op_args.h"

#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>

namespace magneton {
namespace {

using json = nlohmann::json;

// The length of the valid UTF-8 sequence at s[0] (RFC 3629, the ranges
// nlohmann's reader accepts: no overlong forms, no surrogates, at most
// U+10FFFF), or 0.
size_t Utf8SequenceLength(const unsigned char* s, size_t n) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < n && s[i] >= lo && s[i] <= hi;
  };
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

void AppendShortestDouble(std::string* out, double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, res.ptr);
  // "1" would read back as an integer.
  if (std::memchr(buf, '.', res.ptr - buf) == nullptr && std::memchr(buf, 'e', res.ptr - buf) == nullptr) {
    out->append(".0");
  }
}

const char* NonFiniteName(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

Status Bad(const std::string& where, const std::string& what) {
  return InvalidArgument("op arguments: " + where + " " + what);
}

Status CheckValue(const json& v, const std::string& where, int depth);

Status CheckTyped(const json& v, const std::string& where, int depth) {
  if (v.size() != 1) return Bad(where, "is an object with " + std::to_string(v.size()) + " keys, not a typed value");
  // Not `*v.items().begin()`: that binds to a temporary iteration proxy (found by fuzz/op_args_fuzzer).
  const std::string& tag = v.begin().key();
  const json& value = v.begin().value();
  if (tag == kArgTensor) {
    const bool in_range = value.is_number_unsigned() ? value.get<uint64_t>() <= INT32_MAX
                          : value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= INT32_MAX;
    if (!in_range) {
      return Bad(where, "has a tensor slot that is not an integer in [0, 2^31)");
    }
    return Status::Ok();
  }
  if (tag == kArgDtype || tag == kArgLayout || tag == kArgMemoryFormat || tag == kArgDevice || tag == kArgRepr ||
      tag == kArgUnrecorded) {
    if (!value.is_string()) return Bad(where, "has a '" + tag + "' that is not a string");
    return Status::Ok();
  }
  if (tag == kArgFloat) {
    if (!value.is_string()) return Bad(where, "has a 'float' that is not a string");
    const auto& s = value.get_ref<const std::string&>();
    if (s != "inf" && s != "-inf" && s != "nan") return Bad(where, "has 'float' \"" + s + "\", not inf, -inf or nan");
    return Status::Ok();
  }
  if (tag == kArgComplex) {
    if (!value.is_array() || value.size() != 2) return Bad(where, "has a 'complex' that is not [re, im]");
    for (size_t i = 0; i < 2; ++i) {
      MAGNETON_RETURN_IF_ERROR(CheckValue(value[i], where + ".complex[" + std::to_string(i) + "]", depth + 1));
      ArgKind k = KindOf(value[i]);
      if (k != ArgKind::kInt && k != ArgKind::kFloat) return Bad(where, "has a 'complex' part that is not a number");
    }
    return Status::Ok();
  }
  return Bad(where, "has unknown tag '" + tag + "'");
}

Status CheckValue(const json& v, const std::string& where, int depth) {
  if ((v.is_array() || v.is_object()) && depth > kMaxOpArgsDepth) {
    return Bad(where, "is nested deeper than " + std::to_string(kMaxOpArgsDepth));
  }
  switch (v.type()) {
    case json::value_t::null:
    case json::value_t::boolean:
    case json::value_t::number_integer:
    case json::value_t::string:
      return Status::Ok();
    case json::value_t::number_unsigned:
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Bad(where, "is an integer outside the int64 range");
      }
      return Status::Ok();
    case json::value_t::number_float:
      // The reader refuses 1e999; a float stays finite.
      return Status::Ok();
    case json::value_t::array:
      for (size_t i = 0; i < v.size(); ++i) {
        MAGNETON_RETURN_IF_ERROR(CheckValue(v[i], where + "[" + std::to_string(i) + "]", depth + 1));
      }
      return Status::Ok();
    case json::value_t::object:
      return CheckTyped(v, where, depth);
    default:
      return Bad(where, "is not a value");
  }
}

void Write(OpArgsWriter& w, const json& v) {
  switch (KindOf(v)) {
    case ArgKind::kNull: w.Null(); return;
    case ArgKind::kBool: w.Bool(v.get<bool>()); return;
    case ArgKind::kInt: w.Int(v.get<int64_t>()); return;
    case ArgKind::kFloat: w.Float(FloatValue(v)); return;
    case ArgKind::kString: w.String(v.get_ref<const std::string&>()); return;
    case ArgKind::kList:
      w.BeginList();
      for (const json& e : v) Write(w, e);
      w.EndList();
      return;
    case ArgKind::kTensor: w.Tensor(TensorSlot(v)); return;
    case ArgKind::kComplex: w.Complex(FloatValue(v[kArgComplex][0]), FloatValue(v[kArgComplex][1])); return;
    default: w.Typed(v.begin().key(), TypedValue(v)); return;
  }
}

void Format(std::string* out, const json& v) {
  switch (KindOf(v)) {
    case ArgKind::kNull: out->append("None"); return;
    case ArgKind::kBool: out->append(v.get<bool>() ? "True" : "False"); return;
    case ArgKind::kInt: out->append(std::to_string(v.get<int64_t>())); return;
    case ArgKind::kFloat: {
      double d = FloatValue(v);
      if (std::isfinite(d)) {
        AppendShortestDouble(out, d);
      } else {
        out->append(NonFiniteName(d));
      }
      return;
    }
    case ArgKind::kString: AppendJsonString(out, v.get_ref<const std::string&>()); return;
    case ArgKind::kList: {
      out->push_back('[');
      bool first = true;
      for (const json& e : v) {
        if (!first) out->append(", ");
        first = false;
        Format(out, e);
      }
      out->push_back(']');
      return;
    }
    case ArgKind::kTensor: out->append("%" + std::to_string(TensorSlot(v))); return;
    case ArgKind::kDtype:
    case ArgKind::kLayout:
    case ArgKind::kMemoryFormat: out->append("torch.").append(TypedValue(v)); return;
    case ArgKind::kDevice: out->append("device(").append(TypedValue(v)).append(")"); return;
    case ArgKind::kComplex:
      out->append("complex(");
      Format(out, v[kArgComplex][0]);
      out->append(", ");
      Format(out, v[kArgComplex][1]);
      out->push_back(')');
      return;
    case ArgKind::kRepr: out->append("repr(").append(TypedValue(v)).append(")"); return;
    case ArgKind::kUnrecorded: out->append("<").append(TypedValue(v)).append(">"); return;
  }
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view v) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* s = reinterpret_cast<const unsigned char*>(v.data());
  size_t i = 0;
  while (i < v.size()) {
    const unsigned char c = s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); ++i; continue;
      case '\\': out->append("\\\\"); ++i; continue;
      case '\n': out->append("\\n"); ++i; continue;
      case '\r': out->append("\\r"); ++i; continue;
      case '\t': out->append("\\t"); ++i; continue;
      case '\b': out->append("\\b"); ++i; continue;
      case '\f': out->append("\\f"); ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xF]);
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(s + i, v.size() - i);
    if (len == 0) {
      out->append("\xEF\xBF\xBD");  // U+FFFD for a byte that starts no valid sequence
      ++i;
    } else {
      out->append(v.data() + i, len);
      i += len;
    }
  }
  out->push_back('"');
}

void OpArgsWriter::Key(std::string_view name) {
  Sep();
  AppendJsonString(out_, name);
  out_->push_back(':');
  need_comma_ = false;
}

void OpArgsWriter::Null() {
  Sep();
  out_->append("null");
}

void OpArgsWriter::Bool(bool v) {
  Sep();
  out_->append(v ? "true" : "false");
}

void OpArgsWriter::Int(int64_t v) {
  Sep();
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out_->append(buf, res.ptr);
}

void OpArgsWriter::Number(double v) { AppendShortestDouble(out_, v); }

void OpArgsWriter::Float(double v) {
  if (!std::isfinite(v)) {
    Typed(kArgFloat, NonFiniteName(v));
    return;
  }
  Sep();
  Number(v);
}

void OpArgsWriter::String(std::string_view v) {
  Sep();
  AppendJsonString(out_, v);
}

void OpArgsWriter::Tensor(int64_t slot) {
  Sep();
  out_->append("{\"t\":");
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), slot);
  out_->append(buf, res.ptr);
  out_->push_back('}');
}

void OpArgsWriter::Typed(std::string_view tag, std::string_view value) {
  Sep();
  out_->push_back('{');
  AppendJsonString(out_, tag);
  out_->push_back(':');
  AppendJsonString(out_, value);
  out_->push_back('}');
}

void OpArgsWriter::Complex(double re, double im) {
  Sep();
  out_->append("{\"complex\":[");
  need_comma_ = false;
  Float(re);
  Float(im);
  out_->append("]}");
  need_comma_ = true;
}

StatusOr<json> ParseOpArgs(std::string_view text) {
  if (text.empty()) return json::array();
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    std::string head(text.substr(0, 80));
    return InvalidArgument("op arguments are not JSON: '" + head + (text.size() > 80 ? "...'" : "'"));
  }
  if (doc.is_array()) {
    MAGNETON_RETURN_IF_ERROR(CheckValue(doc, "args", 1));  // depth: brackets around a value
  } else if (doc.is_object()) {
    for (const auto& [name, value] : doc.items()) {
      MAGNETON_RETURN_IF_ERROR(CheckValue(value, "args." + name, 2));
    }
  } else {
    return InvalidArgument("op arguments are a " + std::string(doc.type_name()) +
                           ", not a list or a params object");
  }
  return doc;
}

ArgKind KindOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return ArgKind::kNull;
    case json::value_t::boolean: return ArgKind::kBool;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return ArgKind::kInt;
    case json::value_t::number_float: return ArgKind::kFloat;
    case json::value_t::string: return ArgKind::kString;
    case json::value_t::array: return ArgKind::kList;
    default: break;
  }
  const std::string& tag = v.begin().key();
  if (tag == kArgTensor) return ArgKind::kTensor;
  if (tag == kArgDtype) return ArgKind::kDtype;
  if (tag == kArgLayout) return ArgKind::kLayout;
  if (tag == kArgMemoryFormat) return ArgKind::kMemoryFormat;
  if (tag == kArgDevice) return ArgKind::kDevice;
  if (tag == kArgFloat) return ArgKind::kFloat;
  if (tag == kArgComplex) return ArgKind::kComplex;
  if (tag == kArgRepr) return ArgKind::kRepr;
  return ArgKind::kUnrecorded;
}

double FloatValue(const json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string& s = v.begin()->get_ref<const std::string&>();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  return s == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

const std::string& TypedValue(const json& v) { return v.begin()->get_ref<const std::string&>(); }

int64_t TensorSlot(const json& v) { return v.begin()->get<int64_t>(); }

std::string FormatOpArgs(const json& args) {
  std::string out;
  bool first = true;
  if (args.is_object()) {
    for (const auto& [name, value] : args.items()) {
      if (!first) out.append(", ");
      first = false;
      out.append(name).push_back('=');
      Format(&out, value);
    }
    return out;
  }
  for (const json& v : args) {
    if (!first) out.append(", ");
    first = false;
    Format(&out, v);
  }
  return out;
}

std::string WriteOpArgs(const json& args) {
  std::string out;
  OpArgsWriter w(&out);
  if (args.is_object()) {
    w.BeginParams();
    for (const auto& [name, value] : args.items()) {
      w.Key(name);
      Write(w, value);
    }
    w.EndParams();
  } else {
    w.BeginList();
    for (const json& v : args) Write(w, v);
    w.EndList();
  }
  return out;
}

}  // namespace magneton
