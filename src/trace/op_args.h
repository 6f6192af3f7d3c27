// The `ops.args` column: an op's non-tensor arguments as JSON
// (docs/TRACE_FORMAT.md, "Op arguments"). Hooks write it with OpArgsWriter
// on the traced thread (no DOM, no allocation beyond the output string);
// readers parse it once with ParseOpArgs, which checks the whole grammar, so
// no reader needs a parser of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "magneton/status.h"

namespace magneton {

// The tags of the typed objects ({"dtype": "float32"}).
inline constexpr char kArgTensor[] = "t";           // {"t": slot}: the input tensor in that slot
inline constexpr char kArgDtype[] = "dtype";        // {"dtype": "float32"}
inline constexpr char kArgLayout[] = "layout";      // {"layout": "strided"}
inline constexpr char kArgMemoryFormat[] = "memory_format";  // {"memory_format": "channels_last"}
inline constexpr char kArgDevice[] = "device";      // {"device": "cuda:0"}
inline constexpr char kArgFloat[] = "float";        // {"float": "inf" | "-inf" | "nan"}
inline constexpr char kArgComplex[] = "complex";    // {"complex": [re, im]}
inline constexpr char kArgRepr[] = "repr";          // {"repr": "Precision.DEFAULT"}: only its printed text
inline constexpr char kArgUnrecorded[] = "unrecorded";  // {"unrecorded": "Generator"}: a kind not recorded

// Lists (and typed objects) nested deeper than this are refused by the
// reader; no hook writes more than a few levels.
inline constexpr int kMaxOpArgsDepth = 32;

// Appends one JSON document to a string. Calls must form a well-nested
// document; commas and escaping are the writer's job. Strings that are not
// valid UTF-8 get U+FFFD for each bad byte (JSON cannot hold raw bytes).
class OpArgsWriter {
 public:
  explicit OpArgsWriter(std::string* out) : out_(out) {}

  void BeginList() { Open('['); }
  void EndList() { Close(']'); }
  // A named-parameter object (JAX params, ONNX Runtime node), top level only.
  void BeginParams() { Open('{'); }
  void EndParams() { Close('}'); }
  void Key(std::string_view name);

  void Null();
  void Bool(bool v);
  void Int(int64_t v);
  void Float(double v);  // non-finite values become {"float": ...}
  void String(std::string_view v);
  void Tensor(int64_t slot);
  // {"<tag>": "<value>"}: kArgDtype, kArgLayout, kArgMemoryFormat, kArgDevice, kArgRepr, kArgUnrecorded.
  void Typed(std::string_view tag, std::string_view value);
  void Complex(double re, double im);

 private:
  void Sep() {
    if (need_comma_) out_->push_back(',');
    need_comma_ = true;
  }
  void Open(char c) {
    Sep();
    out_->push_back(c);
    need_comma_ = false;
  }
  void Close(char c) {
    out_->push_back(c);
    need_comma_ = true;
  }
  void Number(double v);  // finite, always with a '.' or an exponent

  std::string* out_;
  bool need_comma_ = false;
};

// Appends `v` as a JSON string literal (quotes included).
void AppendJsonString(std::string* out, std::string_view v);

// What one argument value is.
enum class ArgKind {
  kNull,
  kBool,
  kInt,
  kFloat,    // a JSON float or {"float": "inf"|"-inf"|"nan"}
  kString,
  kList,
  kTensor,
  kDtype,
  kLayout,
  kMemoryFormat,
  kDevice,
  kComplex,
  kRepr,
  kUnrecorded,
};

// Parses an args document and checks the whole grammar: the top level is a
// list (positional arguments) or a params object (name -> value); every
// value is null, a bool, an integer, a float, a string, a list of values or
// one of the typed objects above. "" is an empty list (an op without
// recorded arguments). The error names what is wrong and where.
StatusOr<nlohmann::json> ParseOpArgs(std::string_view text);

// The kind of a value accepted by ParseOpArgs (not the top level).
ArgKind KindOf(const nlohmann::json& v);
// kFloat or kInt as a double (inf/nan included).
double FloatValue(const nlohmann::json& v);
// The string of a typed object ({"dtype": "float32"} -> "float32").
const std::string& TypedValue(const nlohmann::json& v);
// kTensor: the input slot.
int64_t TensorSlot(const nlohmann::json& v);

// A short human form for tables: `%0, %1, 1, "mean", None, torch.float32`;
// params as `name=value`. Distinct documents give distinct text.
std::string FormatOpArgs(const nlohmann::json& args);

// Writes a parsed document back with OpArgsWriter (the canonical text).
std::string WriteOpArgs(const nlohmann::json& args);

}  // namespace magneton
