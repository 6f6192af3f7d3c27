#include "torch_hook/c10d_args.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <mutex>
#include <optional>
#include <unordered_map>

namespace magneton {
namespace {

constexpr std::string_view kProcessGroupClass = "__torch__.torch.classes.c10d.ProcessGroup";
constexpr std::string_view kReduceOpClass = "__torch__.torch.classes.c10d.ReduceOp";

struct GroupRegistry {
  std::mutex mu;
  std::unordered_map<std::string, std::vector<int64_t>> ranks;
};

GroupRegistry& Groups() {
  static GroupRegistry* g = new GroupRegistry();  // leaked: ops may run during exit
  return *g;
}

std::string QualifiedClassName(const c10::IValue& iv) {
  if (!iv.isObject()) return "";
  const auto& obj = iv.toObjectRef();
  const auto type = obj.type();
  if (!type || !type->name()) return "";
  return type->name()->qualifiedName();
}

// The torchbind object's C++ instance: a capsule in slot 0. The class name
// was checked by the caller, so the static cast is to the right type.
template <typename T>
c10::intrusive_ptr<T> Instance(const c10::IValue& iv) {
  const auto& obj = iv.toObjectRef();
  if (obj.slots().empty() || !obj.getSlot(0).isCapsule()) return {};
  return c10::static_intrusive_pointer_cast<T>(obj.getSlot(0).toCapsule());
}

int64_t TensorBytes(const c10::IValue& iv) {
  if (iv.isTensor()) {
    const at::Tensor& t = iv.toTensor();
    if (!t.defined() || t.layout() != c10::kStrided) return 0;
    return static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
  }
  int64_t sum = 0;
  if (iv.isList()) {
    for (const c10::IValue& e : iv.toListRef()) sum += TensorBytes(e);
  } else if (iv.isTuple()) {
    for (const c10::IValue& e : iv.toTupleRef().elements()) sum += TensorBytes(e);
  }
  return sum;
}

// Positions of the int arguments that name a peer (dst, src, root_rank),
// from the op's schema; cached per op name like the hook's other schema reads.
const std::vector<size_t>& PeerPositions(const at::RecordFunction& fn) {
  struct Entry {
    std::string text;
    std::vector<size_t> positions;
  };
  thread_local std::unordered_map<const char*, Entry> cache;
  const char* name = fn.name();
  auto it = cache.find(name);
  if (it != cache.end() && it->second.text == name) return it->second.positions;
  std::vector<size_t> positions;
  if (auto op = fn.operator_name()) {
    if (auto handle = c10::Dispatcher::singleton().findSchema(*op)) {
      const auto& arguments = handle->schema().arguments();
      for (size_t i = 0; i < arguments.size(); ++i) {
        const std::string& n = arguments[i].name();
        if (n == "dst" || n == "src" || n == "root_rank" || n == "dstRank" || n == "srcRank" || n == "rootRank") {
          positions.push_back(i);
        }
      }
    }
  }
  auto& entry = cache[name];
  entry = {name, std::move(positions)};
  return entry.positions;
}

std::string_view ReduceOpName(uint8_t op) {
  using R = c10d::ReduceOp;
  switch (op) {
    case R::SUM: return "sum";
    case R::AVG: return "avg";
    case R::PRODUCT: return "product";
    case R::MIN: return "min";
    case R::MAX: return "max";
    case R::BAND: return "band";
    case R::BOR: return "bor";
    case R::BXOR: return "bxor";
    case R::PREMUL_SUM: return "premul_sum";
    default: return "";
  }
}

// Everything is read from torch before anything is written, so a torch
// that throws leaves no half-written key.
struct Facts {
  bool has_group = false;
  std::string group, group_desc, backend;
  int64_t group_size = 0, group_rank = 0;
  std::optional<std::vector<int64_t>> group_ranks;
  std::string_view reduce_op;
  int64_t bytes = 0;
  std::vector<int64_t> peers;
};

Facts ReadFacts(const at::RecordFunction& fn) {
  Facts f;
  const auto inputs = fn.inputs();
  for (const c10::IValue& iv : inputs) {
    f.bytes += TensorBytes(iv);
    const std::string cls = QualifiedClassName(iv);
    if (cls == kProcessGroupClass && !f.has_group) {
      if (auto pg = Instance<c10d::ProcessGroup>(iv)) {
        f.group = pg->getGroupName();
        f.group_desc = pg->getGroupDesc();
        f.group_size = pg->getSize();
        f.group_rank = pg->getRank();
        f.backend = pg->getBackendName();
        f.has_group = true;
        GroupRegistry& g = Groups();
        std::lock_guard<std::mutex> lock(g.mu);
        auto it = g.ranks.find(f.group);
        if (it != g.ranks.end()) f.group_ranks = it->second;
      }
    } else if (cls == kReduceOpClass) {
      if (auto op = Instance<c10d::ReduceOp>(iv)) f.reduce_op = ReduceOpName(static_cast<uint8_t>(op->op_));
    }
  }
  for (size_t i : PeerPositions(fn)) {
    if (i < inputs.size() && inputs[i].isInt()) f.peers.push_back(inputs[i].toInt());
  }
  return f;
}

}  // namespace

std::string ObjectClassName(const c10::IValue& iv) {
  const std::string q = QualifiedClassName(iv);
  const size_t dot = q.rfind('.');
  return dot == std::string::npos ? q : q.substr(dot + 1);
}

void WriteCollectiveFacts(const at::RecordFunction& fn, OpArgsWriter& w) {
  Facts f;
  try {
    f = ReadFacts(fn);
  } catch (const std::exception&) {
    return;  // a torch whose c10d objects look otherwise: the op keeps its positional arguments
  }
  if (f.has_group) {
    w.Key("group");
    w.String(f.group);
    w.Key("group_desc");
    w.String(f.group_desc);
    w.Key("group_size");
    w.Int(f.group_size);
    w.Key("group_rank");
    w.Int(f.group_rank);
    w.Key("backend");
    w.String(f.backend);
    if (f.group_ranks) {
      w.Key("group_ranks");
      w.BeginList();
      for (int64_t r : *f.group_ranks) w.Int(r);
      w.EndList();
    }
  }
  if (!f.reduce_op.empty()) {
    w.Key("reduce_op");
    w.String(f.reduce_op);
  }
  w.Key("bytes");
  w.Int(f.bytes);
  w.Key("peers");
  w.BeginList();
  for (int64_t p : f.peers) w.Int(p);
  w.EndList();
}

void NoteProcessGroupRanks(const std::string& group_name, std::vector<int64_t> global_ranks) {
  GroupRegistry& g = Groups();
  std::lock_guard<std::mutex> lock(g.mu);
  g.ranks[group_name] = std::move(global_ranks);
}

void ClearProcessGroupRanks() {
  GroupRegistry& g = Groups();
  std::lock_guard<std::mutex> lock(g.mu);
  g.ranks.clear();
}

}  // namespace magneton
