// When both sides run the same kinds of ops but one on larger inputs (padding
// to the longest sequence, a larger batch), the op names say nothing: the
// shapes do. Compares the elements the two sides' region ops read.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

struct Inputs {
  double elements = 0;
  std::vector<int64_t> first_shape;  // the op's first tensor input
};

Inputs InputsOf(const Trace& t, int64_t op_id) {
  Inputs in;
  for (const OpTensor& l : t.LinksOf(op_id)) {
    if (l.role != TensorRole::kInput || l.tensor_id < 0 || static_cast<size_t>(l.tensor_id) >= t.tensors.size())
      continue;
    const TensorMeta& m = t.tensors[static_cast<size_t>(l.tensor_id)];
    double n = 1;
    for (int64_t d : m.shape) n *= static_cast<double>(d);
    in.elements += n;
    if (in.first_shape.empty()) in.first_shape = m.shape;
  }
  return in;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

std::string ShapeContrast(const Trace& costly, const std::vector<int64_t>& costly_ops, const Trace& cheap,
                          const std::vector<int64_t>& cheap_ops, char costly_side, char cheap_side, bool same_ops) {
  struct Side {
    double elements = 0;
    std::map<std::string, Inputs> first_by_name;  // the first op of each name, for the example
  };
  auto collect = [](const Trace& t, const std::vector<int64_t>& ops) {
    Side s;
    for (int64_t id : ops) {
      if (id < 0 || static_cast<size_t>(id) >= t.ops.size()) continue;
      Inputs in = InputsOf(t, id);
      s.elements += in.elements;
      s.first_by_name.try_emplace(t.str(t.ops[static_cast<size_t>(id)].name_id), std::move(in));
    }
    return s;
  };
  const Side mine = collect(costly, costly_ops), theirs = collect(cheap, cheap_ops);
  if (theirs.elements <= 0 || mine.elements < 1.1 * theirs.elements) return "";
  // The example: the op name whose first input grew the most.
  std::string example;
  double best = 1;
  for (const auto& [name, in] : mine.first_by_name) {
    auto it = theirs.first_by_name.find(name);
    if (it == theirs.first_by_name.end() || it->second.elements <= 0 || in.first_shape == it->second.first_shape)
      continue;
    const double ratio = in.elements / it->second.elements;
    if (ratio > best) {
      best = ratio;
      example = fmt::format(" (e.g. {} reads {} where {} reads {})", name, ShapeText(in.first_shape), cheap_side,
                            ShapeText(it->second.first_shape));
    }
  }
  std::string out = fmt::format("{}'s ops read {:.1f}× the input elements of {}'s{}", costly_side,
                                mine.elements / theirs.elements, cheap_side, example);
  // Only where both run the same ops is the size itself the difference;
  // different ops read different inputs by their nature.
  if (same_ops) out += ": larger shapes for the same work — padding, batch size or sequence length";
  return out;
}

namespace {

bool IsIntegral(const std::string& dtype) {
  return dtype.find("int") != std::string::npos || dtype.find("long") != std::string::npos;
}

struct Entry {
  int64_t tensor = kNoId;
  int64_t first_reader = kNoId;
};

// The integer tensors no op produced, or a factory op with no tensor input
// made (token ids, positions, lengths), that the region's values derive from.
std::vector<Entry> DataInputs(const Trace& t, const std::vector<int64_t>& ops) {
  std::vector<Entry> out;
  std::vector<char> seen_op(t.ops.size(), 0), seen_tensor(t.tensors.size(), 0);
  std::vector<int64_t> queue;
  for (int64_t id : ops) {
    if (id >= 0 && static_cast<size_t>(id) < t.ops.size() && !seen_op[id]) seen_op[id] = 1, queue.push_back(id);
  }
  constexpr size_t kMaxOps = 200000;  // a whole model's forward is far below this
  for (size_t q = 0; q < queue.size() && q < kMaxOps; ++q) {
    const int64_t op = queue[q];
    for (const OpTensor& l : t.LinksOf(op)) {
      if (l.role != TensorRole::kInput || l.tensor_id < 0 || static_cast<size_t>(l.tensor_id) >= t.tensors.size())
        continue;
      if (seen_tensor[l.tensor_id]) continue;
      seen_tensor[l.tensor_id] = 1;
      const TensorMeta& m = t.tensors[l.tensor_id];
      const int64_t p = m.producer_op_id;
      const bool produced = p >= 0 && static_cast<size_t>(p) < t.ops.size();
      // Data enters where no op made the tensor, or a factory with no tensor
      // input did (torch.zeros(batch, longest) filled with token ids).
      bool factory = produced;
      if (produced) {
        for (const OpTensor& pl : t.LinksOf(p)) factory = factory && pl.role != TensorRole::kInput;
      }
      if ((!produced || factory) && IsIntegral(m.dtype) && !m.shape.empty()) {
        out.push_back({l.tensor_id, op});
      } else if (produced && !seen_op[p]) {
        seen_op[p] = 1;
        queue.push_back(p);
      }
    }
  }
  // In trace order (the first one read first), not in walk order, so the two
  // sides' inputs pair up.
  std::sort(out.begin(), out.end(), [](const Entry& x, const Entry& y) { return x.tensor < y.tensor; });
  return out;
}

std::string UserLine(const Trace& t, int64_t op) {
  if (op < 0 || static_cast<size_t>(op) >= t.ops.size() || t.ops[op].call_path_id == kNoId) return "";
  const std::vector<std::string> frames = t.CallPathFrames(t.ops[op].call_path_id);
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!IsLibraryFrame(ParseFrame(*it))) return FileLine(*it);
  }
  return "";
}

}  // namespace

ShapeCause FindShapeCause(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                          const std::vector<int64_t>& ops_b, char costly_side) {
  ShapeCause out;
  const std::vector<Entry> in_a = DataInputs(a, ops_a), in_b = DataInputs(b, ops_b);
  const bool a_costly = costly_side != 'B';
  for (size_t i = 0; i < in_a.size() && i < in_b.size(); ++i) {
    const TensorMeta &ta = a.tensors[in_a[i].tensor], &tb = b.tensors[in_b[i].tensor];
    if (ta.shape.size() != tb.shape.size() || ta.shape == tb.shape) continue;
    const TensorMeta& big = a_costly ? ta : tb;
    const TensorMeta& small = a_costly ? tb : ta;
    size_t axis = 0;
    while (axis < big.shape.size() && big.shape[axis] <= small.shape[axis]) ++axis;
    if (axis == big.shape.size()) continue;  // the costly side's input is not larger
    const size_t rank = big.shape.size();
    out.found = true;
    out.name = rank >= 2 && axis == 0 ? "batch_size" : axis + 1 == rank ? "sequence_length" : "input_shape";
    out.value_a = std::to_string(ta.shape[axis]);
    out.value_b = std::to_string(tb.shape[axis]);
    out.where = UserLine(a_costly ? a : b, (a_costly ? in_a : in_b)[i].first_reader);
    return out;
  }
  return out;
}

}  // namespace magneton::diagnose
