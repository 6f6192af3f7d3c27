// When both sides run the same kinds of ops but one on larger inputs (padding
// to the longest sequence, a larger batch), the op names say nothing: the
// shapes do. Compares the elements the two sides' region ops read.
#include <fmt/format.h>

#include <algorithm>
#include <map>

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
                          const std::vector<int64_t>& cheap_ops, char costly_side, char cheap_side) {
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
  return fmt::format("{}'s ops read {:.1f}× the input elements of {}'s{}: larger shapes for the same work — padding, "
                     "batch size or sequence length",
                     costly_side, mine.elements / theirs.elements, cheap_side, example);
}

}  // namespace magneton::diagnose
