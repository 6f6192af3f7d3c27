#include "torch_hook/replay.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/ScalarType.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "replay/replay_policy.h"
#include "torch_hook/replay_graph.h"
#include "torch_hook/torch_names.h"
#include "trace/op_args.h"

#include <cstdlib>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace magneton::replay {
namespace {

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

using json = nlohmann::json;

// Builds the boxed stack from the recorded arguments (trace/op_args.h),
// typed by the op's schema.
class StackBuilder {
 public:
  StackBuilder(const OpSpec& spec, std::unordered_map<int64_t, at::Tensor> inputs)
      : spec_(spec), inputs_(std::move(inputs)) {}

  // real: the schema's real type (ScalarType where `type` says int).
  StatusOr<c10::IValue> Convert(const json& node, const c10::TypePtr& type, const c10::TypePtr& real) {
    const ArgKind kind = KindOf(node);
    if (kind == ArgKind::kNull) return c10::IValue();
    c10::TypePtr t = Unwrap(type);
    switch (t->kind()) {
      case c10::TypeKind::TensorType:
        if (kind != ArgKind::kTensor) return Mismatch(t);
        return Tensor(node);
      case c10::TypeKind::ListType: {
        if (kind != ArgKind::kList) return Mismatch(t);
        c10::TypePtr elem = t->castRaw<c10::ListType>()->getElementType();
        c10::TypePtr inner = Unwrap(elem);
        c10::TypePtr real_elem = Unwrap(real);
        if (auto list = real_elem->castRaw<c10::ListType>()) real_elem = Unwrap(list->getElementType());
        if (inner->kind() == c10::TypeKind::TensorType) {
          if (elem->castRaw<c10::OptionalType>()) {
            c10::List<std::optional<at::Tensor>> list;
            for (const json& item : node) {
              if (KindOf(item) == ArgKind::kNull) {
                list.push_back(std::nullopt);
                continue;
              }
              if (KindOf(item) != ArgKind::kTensor) return Mismatch(inner);
              MAGNETON_ASSIGN_OR_RETURN(c10::IValue v, Tensor(item));
              list.push_back(v.toTensor());
            }
            return c10::IValue(list);
          }
          std::vector<at::Tensor> list;
          for (const json& item : node) {
            if (KindOf(item) != ArgKind::kTensor) return Mismatch(inner);
            MAGNETON_ASSIGN_OR_RETURN(c10::IValue v, Tensor(item));
            list.push_back(v.toTensor());
          }
          return c10::IValue(list);
        }
        if (inner->kind() == c10::TypeKind::IntType || inner->kind() == c10::TypeKind::SymIntType) {
          std::vector<int64_t> ints;
          for (const json& item : node) {
            MAGNETON_ASSIGN_OR_RETURN(int64_t v, Int(item, inner, real_elem));
            ints.push_back(v);
          }
          return c10::IValue(ints);
        }
        if (inner->kind() == c10::TypeKind::FloatType) {
          std::vector<double> v;
          for (const json& item : node) {
            if (KindOf(item) != ArgKind::kInt && KindOf(item) != ArgKind::kFloat) return Mismatch(inner);
            v.push_back(FloatValue(item));
          }
          return c10::IValue(v);
        }
        if (inner->kind() == c10::TypeKind::BoolType) {
          c10::List<bool> v;
          for (const json& item : node) {
            if (KindOf(item) != ArgKind::kBool) return Mismatch(inner);
            v.push_back(item.get<bool>());
          }
          return c10::IValue(v);
        }
        return Unsupported(t);
      }
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
      case c10::TypeKind::ScalarTypeType:
      case c10::TypeKind::LayoutType:
      case c10::TypeKind::MemoryFormatType: {
        // ScalarType, Layout and MemoryFormat arguments are ints on the stack.
        MAGNETON_ASSIGN_OR_RETURN(int64_t v, Int(node, t, Unwrap(real)));
        return c10::IValue(v);
      }
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType:
        if (kind != ArgKind::kInt && kind != ArgKind::kFloat) return Mismatch(t);
        return c10::IValue(FloatValue(node));
      case c10::TypeKind::BoolType:
      case c10::TypeKind::SymBoolType:
        if (kind != ArgKind::kBool) return Mismatch(t);
        return c10::IValue(node.get<bool>());
      case c10::TypeKind::NumberType:  // Scalar
        if (kind == ArgKind::kInt) return c10::IValue(at::Scalar(node.get<int64_t>()));
        if (kind == ArgKind::kFloat) return c10::IValue(at::Scalar(FloatValue(node)));
        if (kind == ArgKind::kBool) return c10::IValue(at::Scalar(node.get<bool>()));
        if (kind == ArgKind::kComplex) {
          const json& parts = node[kArgComplex];
          return c10::IValue(at::Scalar(c10::complex<double>(FloatValue(parts[0]), FloatValue(parts[1]))));
        }
        return Mismatch(t);
      case c10::TypeKind::StringType:
        if (kind != ArgKind::kString) return Mismatch(t);
        return c10::IValue(node.get<std::string>());
      case c10::TypeKind::DeviceObjType:
        if (kind != ArgKind::kDevice) return Mismatch(t);
        try {
          return c10::IValue(c10::Device(TypedValue(node)));
        } catch (const std::exception&) {
          return Mismatch(t);
        }
      default:
        return Unsupported(t);
    }
  }

 private:
  static c10::TypePtr Unwrap(const c10::TypePtr& t) {
    if (auto opt = t->castRaw<c10::OptionalType>()) return opt->getElementType();
    return t;
  }

  // An int on the stack: a plain int, or the enum that the schema's real
  // type names, recorded as its typed object.
  StatusOr<int64_t> Int(const json& node, const c10::TypePtr& t, const c10::TypePtr& real) const {
    const ArgKind kind = KindOf(node);
    const c10::TypeKind want = real->kind();
    if (kind == ArgKind::kInt) return node.get<int64_t>();
    if (kind == ArgKind::kDtype && want == c10::TypeKind::ScalarTypeType) {
      MAGNETON_ASSIGN_OR_RETURN(c10::ScalarType v, DtypeFromName(TypedValue(node)));
      return static_cast<int64_t>(v);
    }
    if (kind == ArgKind::kLayout && want == c10::TypeKind::LayoutType) {
      MAGNETON_ASSIGN_OR_RETURN(c10::Layout v, LayoutFromName(TypedValue(node)));
      return static_cast<int64_t>(v);
    }
    if (kind == ArgKind::kMemoryFormat && want == c10::TypeKind::MemoryFormatType) {
      MAGNETON_ASSIGN_OR_RETURN(c10::MemoryFormat v, MemoryFormatFromName(TypedValue(node)));
      return static_cast<int64_t>(v);
    }
    return Mismatch(real->kind() == t->kind() ? t : real);
  }

  StatusOr<c10::IValue> Tensor(const json& node) {
    auto it = inputs_.find(TensorSlot(node));
    if (it == inputs_.end()) {
      return InvalidArgument(spec_.name + ": argument names input slot " + std::to_string(TensorSlot(node)) +
                             ", which the trace does not have");
    }
    return c10::IValue(it->second);
  }
  Status Mismatch(const c10::TypePtr& t) const {
    std::string args = spec_.args.size() > 200 ? spec_.args.substr(0, 200) + "..." : spec_.args;
    return InvalidArgument(spec_.name + ": recorded argument does not fit schema type " + t->str() + " (" + args +
                           ")");
  }
  Status Unsupported(const c10::TypePtr& t) const {
    return Unavailable(spec_.name + ": replay does not support arguments of type " + t->str());
  }

  const OpSpec& spec_;
  std::unordered_map<int64_t, at::Tensor> inputs_;  // by slot
};

c10::TypePtr UnwrapOptional(const c10::TypePtr& t) {
  if (auto opt = t->castRaw<c10::OptionalType>()) return opt->getElementType();
  return t;
}

bool IsTensorLike(const c10::TypePtr& type) {
  c10::TypePtr t = UnwrapOptional(type);
  if (auto list = t->castRaw<c10::ListType>()) t = UnwrapOptional(list->getElementType());
  return t->kind() == c10::TypeKind::TensorType;
}

// The structural half of replay_policy.h: what the schema says the op may
// touch. Argument types replay can build from data only; no string outside
// the enum-like allowlist (a str is a path, a format, a name to look up); no
// Storage, Stream, Generator or object; and every argument the op writes
// (`Tensor(a!)`, out=) is a tensor — which replay allocates itself: StackBuilder
// takes tensors only from the inputs MakeInput regenerated.
Status CheckReplaySchema(const std::string& op_name, const std::string& base_name, const c10::FunctionSchema& schema,
                         const json& args) {
  auto refuse = [&](const c10::Argument& a, const std::string& why) {
    return PermissionDenied(std::string(kRefusedPrefix) + op_name + ": argument '" + a.name() + "' " + why);
  };
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    const json& value = args[i];
    if (a.alias_info() != nullptr && a.alias_info()->isWrite() && !IsTensorLike(a.type())) {
      return refuse(a, "is written by the op and is not a tensor replay allocated (" + a.type()->str() + ")");
    }
    c10::TypePtr t = UnwrapOptional(a.type());
    if (auto list = t->castRaw<c10::ListType>()) t = UnwrapOptional(list->getElementType());
    switch (t->kind()) {
      case c10::TypeKind::TensorType:
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
      case c10::TypeKind::ScalarTypeType:
      case c10::TypeKind::LayoutType:
      case c10::TypeKind::MemoryFormatType:
      case c10::TypeKind::FloatType:
      case c10::TypeKind::SymFloatType:
      case c10::TypeKind::BoolType:
      case c10::TypeKind::SymBoolType:
      case c10::TypeKind::NumberType:
      case c10::TypeKind::DeviceObjType:
        break;
      case c10::TypeKind::StringType:
        if (KindOf(value) == ArgKind::kNull) break;
        if (KindOf(value) != ArgKind::kString ||
            !ReplayAllowsStringArg(base_name, a.name(), value.get<std::string>())) {
          return refuse(a, "is a string (str: a path, a format or a name); replay passes strings only to "
                           "enum-like parameters such as gelu's approximate");
        }
        break;
      case c10::TypeKind::GeneratorType:
        // The process's default generator is replay's own; a recorded one is not.
        if (KindOf(value) != ArgKind::kNull) return refuse(a, "is a random generator; replay passes none");
        break;
      default:
        return refuse(a, "has type " + a.type()->str() + ", which replay never passes (Storage, Stream, objects)");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ReplayResult> ReplayOp(const OpSpec& spec, const ReplayOptions& options) {
  std::string name = spec.name, overload;
  if (size_t dot = name.find('.', name.find("::") == std::string::npos ? 0 : name.find("::")); dot != std::string::npos) {
    overload = name.substr(dot + 1);
    name = name.substr(0, dot);
  }
  MAGNETON_RETURN_IF_ERROR(CheckReplayOpName(spec.name));
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return NotFound("no ATen operator named " + spec.name + " in this torch");
  const c10::FunctionSchema& schema = handle->schema();

  MAGNETON_ASSIGN_OR_RETURN(json args, ParseOpArgs(spec.args));
  if (!args.is_array()) return InvalidArgument(spec.name + ": recorded arguments are named parameters, not ATen's");
  if (args.size() != schema.arguments().size()) {
    return InvalidArgument(spec.name + ": recorded " + std::to_string(args.size()) + " arguments, schema has " +
                           std::to_string(schema.arguments().size()));
  }
  MAGNETON_RETURN_IF_ERROR(CheckReplaySchema(spec.name, name.substr(name.find("::") + 2), schema, args));
  std::unordered_map<int64_t, at::Tensor> inputs;
  for (const TensorSpec& ts : spec.inputs) {
    MAGNETON_ASSIGN_OR_RETURN(at::Tensor t, MakeInput(ts));
    inputs[ts.slot] = std::move(t);
  }
  StackBuilder builder(spec, std::move(inputs));
  std::vector<c10::IValue> base_stack;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    MAGNETON_ASSIGN_OR_RETURN(c10::IValue v, builder.Convert(args[i], a.type(), a.real_type()));
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
  LoopHooks hooks;
  hooks.read_energy_uj = options.read_energy_uj;
  if (options.target.on_device) {
    const c10::Device device(options.target.device);
    hooks.synchronize = [device]() -> Status {
      try {
        c10::impl::VirtualGuardImpl(device.type()).synchronizeDevice(device.index() < 0 ? 0 : device.index());
      } catch (const std::exception& e) {
        std::string what = e.what();
        return Internal("cannot synchronise " + device.str() + ": " + what.substr(0, what.find('\n')));
      }
      return Status::Ok();
    };
  }
  CallIssuer plain{"loop", [&](int64_t calls) -> StatusOr<int64_t> {
                     for (int64_t i = 0; i < calls; ++i) MAGNETON_RETURN_IF_ERROR(call_once());
                     return calls;
                   }};
  // The op must run once as it is before a graph is tried: a capture hides
  // the op's own errors behind the capture's.
  MAGNETON_RETURN_IF_ERROR(call_once());
  if (hooks.synchronize) MAGNETON_RETURN_IF_ERROR(hooks.synchronize());
  std::function<StatusOr<CallIssuer>()> capture;
  if (options.target.want_graph) {
    capture = [&]() { return CaptureCudaGraph(call_once, c10::Device(options.target.device)); };
  }
  IssuerChoice choice = ChooseIssuer(options.target.want_graph, capture, std::move(plain));
  hooks.issuer = std::move(choice.issuer);
  ReplayResult result;
  result.method = choice.note.empty() ? hooks.issuer.method : hooks.issuer.method + ": " + choice.note;
  MAGNETON_ASSIGN_OR_RETURN(result.loop, RunReplayLoop(hooks, options.loop));
  return result;
}

}  // namespace magneton::replay
