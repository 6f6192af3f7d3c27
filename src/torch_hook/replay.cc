#include "torch_hook/replay.h"

#include "magneton/clock.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace magneton::replay {
namespace {

// A parsed argument of the recorded text.
struct ArgNode {
  enum Kind { kTensor, kNone, kBool, kInt, kDouble, kString, kBare, kList } kind = kNone;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<ArgNode> items;
};

class ArgParser {
 public:
  explicit ArgParser(std::string_view text) : text_(text) {}

  StatusOr<std::vector<ArgNode>> ParseTopLevel() {
    std::vector<ArgNode> out;
    if (text_.empty()) return out;
    while (true) {
      MAGNETON_ASSIGN_OR_RETURN(ArgNode node, ParseOne());
      out.push_back(std::move(node));
      if (pos_ == text_.size()) return out;
      if (text_[pos_] != ',') return Bad("expected ','");
      ++pos_;
    }
  }

 private:
  Status Bad(const std::string& what) const {
    return InvalidArgument("cannot parse recorded arguments '" + std::string(text_) + "' at " +
                           std::to_string(pos_) + ": " + what);
  }

  StatusOr<ArgNode> ParseOne() {
    ArgNode n;
    if (pos_ >= text_.size()) return Bad("unexpected end");
    char c = text_[pos_];
    if (c == '%') {
      ++pos_;
      n.kind = ArgNode::kTensor;
      return n;
    }
    if (c == '[') {
      ++pos_;
      n.kind = ArgNode::kList;
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return n;
      }
      while (true) {
        MAGNETON_ASSIGN_OR_RETURN(ArgNode item, ParseOne());
        n.items.push_back(std::move(item));
        if (pos_ >= text_.size()) return Bad("unterminated list");
        if (text_[pos_] == ']') {
          ++pos_;
          return n;
        }
        if (text_[pos_] != ',') return Bad("expected ',' or ']'");
        ++pos_;
      }
    }
    if (c == '\'') {
      size_t end = text_.find('\'', pos_ + 1);
      if (end == std::string_view::npos) return Bad("unterminated string");
      n.kind = ArgNode::kString;
      n.s = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return n;
    }
    size_t end = pos_;
    while (end < text_.size() && text_[end] != ',' && text_[end] != ']') ++end;
    std::string tok(text_.substr(pos_, end - pos_));
    pos_ = end;
    if (tok == "None") return n;
    if (tok == "True" || tok == "False") {
      n.kind = ArgNode::kBool;
      n.i = tok == "True";
      return n;
    }
    char* stop = nullptr;
    long long iv = std::strtoll(tok.c_str(), &stop, 10);
    if (!tok.empty() && stop && *stop == '\0') {
      n.kind = ArgNode::kInt;
      n.i = iv;
      return n;
    }
    double dv = std::strtod(tok.c_str(), &stop);
    if (!tok.empty() && stop && *stop == '\0') {
      n.kind = ArgNode::kDouble;
      n.d = dv;
      return n;
    }
    n.kind = ArgNode::kBare;  // a device ("cpu") or an unsupported kind tag
    n.s = tok;
    return n;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

StatusOr<c10::ScalarType> DtypeFromName(const std::string& name) {
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    auto st = static_cast<c10::ScalarType>(i);
    try {
      if (c10::getDtypeNames(st).first == name) return st;
    } catch (...) {
    }
  }
  return InvalidArgument("unknown dtype '" + name + "'");
}

// Recorded values do not travel, so inputs are regenerated: random normal
// floats, zeros for integers (always a valid index), false for booleans.
StatusOr<at::Tensor> MakeInput(const TensorSpec& spec) {
  MAGNETON_ASSIGN_OR_RETURN(c10::ScalarType dtype, DtypeFromName(spec.dtype));
  try {
    auto options = at::TensorOptions().dtype(dtype).device(c10::Device(spec.device));
    std::vector<int64_t> strides = spec.strides;
    if (strides.size() != spec.shape.size()) {
      auto contiguous = c10::contiguous_strides(spec.shape);
      strides.assign(contiguous.begin(), contiguous.end());
    }
    at::Tensor t = at::empty_strided(spec.shape, strides, options);
    if (at::isFloatingType(dtype) || at::isComplexType(dtype)) {
      t.normal_();
    } else {
      t.zero_();
    }
    return t;
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("cannot create an input tensor: ") + e.what());
  }
}

class StackBuilder {
 public:
  StackBuilder(const OpSpec& spec, std::vector<at::Tensor> inputs) : spec_(spec), inputs_(std::move(inputs)) {}

  StatusOr<c10::IValue> Convert(const ArgNode& node, const c10::TypePtr& type) {
    if (node.kind == ArgNode::kNone) return c10::IValue();
    c10::TypePtr t = type;
    if (auto opt = t->castRaw<c10::OptionalType>()) t = opt->getElementType();
    switch (t->kind()) {
      case c10::TypeKind::TensorType:
        if (node.kind != ArgNode::kTensor) return Mismatch(node, t);
        return NextTensor();
      case c10::TypeKind::ListType: {
        if (node.kind != ArgNode::kList) return Mismatch(node, t);
        c10::TypePtr elem = t->castRaw<c10::ListType>()->getElementType();
        c10::TypePtr inner = elem;
        if (auto opt = inner->castRaw<c10::OptionalType>()) inner = opt->getElementType();
        if (inner->kind() == c10::TypeKind::TensorType) {
          if (elem->castRaw<c10::OptionalType>()) {
            c10::List<std::optional<at::Tensor>> list;
            for (const ArgNode& item : node.items) {
              if (item.kind == ArgNode::kNone) {
                list.push_back(std::nullopt);
              } else {
                MAGNETON_ASSIGN_OR_RETURN(c10::IValue v, NextTensor());
                list.push_back(v.toTensor());
              }
            }
            return c10::IValue(list);
          }
          std::vector<at::Tensor> list;
          for (size_t i = 0; i < node.items.size(); ++i) {
            MAGNETON_ASSIGN_OR_RETURN(c10::IValue v, NextTensor());
            list.push_back(v.toTensor());
          }
          return c10::IValue(list);
        }
        if (inner->kind() == c10::TypeKind::IntType || inner->kind() == c10::TypeKind::SymIntType) {
          std::vector<int64_t> ints;
          for (const ArgNode& item : node.items) {
            if (item.kind != ArgNode::kInt) return Mismatch(item, inner);
            ints.push_back(item.i);
          }
          return c10::IValue(ints);
        }
        if (inner->kind() == c10::TypeKind::FloatType) {
          std::vector<double> v;
          for (const ArgNode& item : node.items) v.push_back(item.kind == ArgNode::kInt ? item.i : item.d);
          return c10::IValue(v);
        }
        if (inner->kind() == c10::TypeKind::BoolType) {
          c10::List<bool> v;
          for (const ArgNode& item : node.items) v.push_back(item.i != 0);
          return c10::IValue(v);
        }
        return Unsupported(t);
      }
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        // ScalarType, Layout and MemoryFormat arguments are ints in the schema.
        if (node.kind != ArgNode::kInt) return Mismatch(node, t);
        return c10::IValue(node.i);
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType:
        if (node.kind == ArgNode::kInt) return c10::IValue(static_cast<double>(node.i));
        if (node.kind != ArgNode::kDouble) return Mismatch(node, t);
        return c10::IValue(node.d);
      case c10::TypeKind::BoolType:
      case c10::TypeKind::SymBoolType:
        if (node.kind != ArgNode::kBool) return Mismatch(node, t);
        return c10::IValue(node.i != 0);
      case c10::TypeKind::NumberType:  // Scalar
        if (node.kind == ArgNode::kInt) return c10::IValue(at::Scalar(node.i));
        if (node.kind == ArgNode::kDouble) return c10::IValue(at::Scalar(node.d));
        if (node.kind == ArgNode::kBool) return c10::IValue(at::Scalar(node.i != 0));
        return Mismatch(node, t);
      case c10::TypeKind::StringType:
        if (node.kind != ArgNode::kString) return Mismatch(node, t);
        return c10::IValue(node.s);
      case c10::TypeKind::DeviceObjType:
        try {
          return c10::IValue(c10::Device(node.s));
        } catch (const std::exception&) {
          return Mismatch(node, t);
        }
      case c10::TypeKind::ScalarTypeType:
      case c10::TypeKind::LayoutType:
      case c10::TypeKind::MemoryFormatType:
        if (node.kind != ArgNode::kInt) return Mismatch(node, t);
        return c10::IValue(node.i);
      default:
        return Unsupported(t);
    }
  }

 private:
  StatusOr<c10::IValue> NextTensor() {
    if (next_ >= inputs_.size()) return InvalidArgument(spec_.name + ": more tensor arguments than recorded inputs");
    return c10::IValue(inputs_[next_++]);
  }
  Status Mismatch(const ArgNode& node, const c10::TypePtr& t) const {
    return InvalidArgument(spec_.name + ": recorded argument does not fit schema type " + t->str() + " (" +
                           spec_.args + ")");
  }
  Status Unsupported(const c10::TypePtr& t) const {
    return Unavailable(spec_.name + ": replay does not support arguments of type " + t->str());
  }

  const OpSpec& spec_;
  std::vector<at::Tensor> inputs_;
  size_t next_ = 0;
};

}  // namespace

StatusOr<ReplayResult> ReplayOp(const OpSpec& spec, const ReplayOptions& options) {
  std::string name = spec.name, overload;
  if (size_t dot = name.find('.', name.find("::") == std::string::npos ? 0 : name.find("::")); dot != std::string::npos) {
    overload = name.substr(dot + 1);
    name = name.substr(0, dot);
  }
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return NotFound("no ATen operator named " + spec.name + " in this torch");
  const c10::FunctionSchema& schema = handle->schema();

  MAGNETON_ASSIGN_OR_RETURN(std::vector<ArgNode> args, ArgParser(spec.args).ParseTopLevel());
  if (args.size() != schema.arguments().size()) {
    return InvalidArgument(spec.name + ": recorded " + std::to_string(args.size()) + " arguments, schema has " +
                           std::to_string(schema.arguments().size()));
  }
  std::vector<at::Tensor> inputs;
  for (const TensorSpec& ts : spec.inputs) {
    MAGNETON_ASSIGN_OR_RETURN(at::Tensor t, MakeInput(ts));
    inputs.push_back(std::move(t));
  }
  StackBuilder builder(spec, std::move(inputs));
  std::vector<c10::IValue> base_stack;
  for (size_t i = 0; i < args.size(); ++i) {
    MAGNETON_ASSIGN_OR_RETURN(c10::IValue v, builder.Convert(args[i], schema.arguments()[i].type()));
    base_stack.push_back(std::move(v));
  }

  auto call_once = [&]() -> Status {
    std::vector<c10::IValue> stack = base_stack;
    try {
      handle->callBoxed(&stack);
    } catch (const std::exception& e) {
      std::string what = e.what();
      return InvalidArgument(spec.name + " failed on regenerated inputs: " + what.substr(0, what.find('\n')));
    }
    return Status::Ok();
  };
  auto sync = [&] {
    if (options.synchronize) options.synchronize();
  };

  // Warm-up, and a first estimate of the call time to size the rounds.
  MAGNETON_RETURN_IF_ERROR(call_once());
  sync();
  int64_t t0 = MonotonicNowNs();
  MAGNETON_RETURN_IF_ERROR(call_once());
  sync();
  int64_t one_call_ns = std::max<int64_t>(1, MonotonicNowNs() - t0);
  int64_t calls = std::clamp<int64_t>(options.min_round_ns / one_call_ns, 1, options.max_calls_per_round);

  ReplayResult result;
  result.calls_per_round = calls;
  for (int round = 0; round < options.rounds; ++round) {
    double e0 = 0;
    if (options.read_energy_uj) {
      MAGNETON_ASSIGN_OR_RETURN(e0, options.read_energy_uj());
    }
    int64_t start = MonotonicNowNs();
    for (int64_t i = 0; i < calls; ++i) MAGNETON_RETURN_IF_ERROR(call_once());
    sync();
    int64_t elapsed = MonotonicNowNs() - start;
    result.duration_ns_per_call.push_back(static_cast<double>(elapsed) / calls);
    if (options.read_energy_uj) {
      MAGNETON_ASSIGN_OR_RETURN(double e1, options.read_energy_uj());
      result.energy_uj_per_call.push_back((e1 - e0) / calls);
    }
  }
  return result;
}

}  // namespace magneton::replay
