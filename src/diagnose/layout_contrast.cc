// Dtype / layout / device contrast (issue 13): both sides run the same ops,
// one of them on float64, on a strided view or on another device. The walk
// back along the dataflow finds the op that made the first tensor of that
// kind (a .to(), .double(), a permute) and the line that called it.
#include <fmt/format.h>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

bool ValidOp(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.ops.size(); }
bool ValidTensor(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.tensors.size(); }

std::string Attribute(const TensorMeta& m, const std::string& attribute) {
  if (attribute == "dtype") return m.dtype;
  if (attribute == "device") return m.device;
  return LayoutOf(m);
}

// The op's input tensors by slot.
std::vector<int64_t> InputsOf(const Trace& t, int64_t op) {
  std::vector<int64_t> out;
  for (const OpTensor& l : t.LinksOf(op)) {
    if (l.role == TensorRole::kInput && ValidTensor(t, l.tensor_id)) out.push_back(l.tensor_id);
  }
  return out;
}

std::string UserFrameOf(const Trace& t, int64_t op) {
  if (!ValidOp(t, op) || t.ops[op].call_path_id == kNoId) return "";
  const std::vector<std::string> frames = t.CallPathFrames(t.ops[op].call_path_id);
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!IsLibraryFrame(ParseFrame(*it))) return *it;
  }
  return "";
}

int64_t TopLevelOf(const Trace& t, int64_t op) {
  for (int depth = 0; depth < 256 && ValidOp(t, t.ops[op].parent_id); ++depth) op = t.ops[op].parent_id;
  return op;
}

// Walks back from `tensor` (whose `attribute` is `value`) to where the value
// first had it: the op whose inputs do not, or a tensor no op produced.
void WalkBack(const Trace& t, int64_t tensor, const std::string& attribute, const std::string& value,
              LayoutContrast* out) {
  for (int step = 0; step < 512; ++step) {
    const int64_t producer = t.tensors[tensor].producer_op_id;
    if (!ValidOp(t, producer)) {
      // A tensor made outside the framework's ops. NumPy's default float is
      // float64 where torch's is float32: such an input most often comes
      // from torch.from_numpy / torch.tensor(ndarray).
      out->producer_op.clear();
      out->producer_api = attribute == "dtype" && (value == "float64" || value == "double") ? "torch.from_numpy"
                                                                                          : "input tensor";
      for (const OpTensor& l : t.op_tensors) {
        if (l.role == TensorRole::kInput && l.tensor_id == tensor) {
          out->where = FileLine(UserFrameOf(t, l.op_id));
          break;
        }
      }
      return;
    }
    // An input that already has the value carries it through (a promotion
    // of float64 with float32 keeps walking on the float64 side); none: the
    // value was made here (a conversion, a view, a factory).
    int64_t same = kNoId;
    for (int64_t in : InputsOf(t, producer)) {
      if (in != tensor && Attribute(t.tensors[in], attribute) == value) {
        same = in;
        break;
      }
    }
    if (same == kNoId) {
      const int64_t top = TopLevelOf(t, producer);
      out->producer_op = t.str(t.ops[top].name_id);
      out->producer_api = ApiOfOp(out->producer_op);
      out->where = FileLine(UserFrameOf(t, producer));
      return;
    }
    tensor = same;
  }
}

}  // namespace

std::string LayoutOf(const TensorMeta& t) {
  if (t.shape.empty()) return "";
  if (t.strides.size() != t.shape.size()) return "contiguous";  // strides not recorded
  auto matches = [&](const std::vector<size_t>& order) {  // order: innermost dimension first
    int64_t expect = 1;
    for (size_t d : order) {
      if (t.shape[d] != 1 && t.strides[d] != expect) return false;
      expect *= t.shape[d];
    }
    return true;
  };
  std::vector<size_t> row_major;
  for (size_t d = t.shape.size(); d-- > 0;) row_major.push_back(d);
  if (matches(row_major)) return "contiguous";
  if (t.shape.size() == 4 && matches({1, 3, 2, 0})) return "channels_last";
  return "strided";
}

LayoutContrast ContrastLayouts(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                               const std::vector<int64_t>& ops_b, char costly_side) {
  LayoutContrast out;
  if (ops_a.size() != ops_b.size()) return out;
  const bool a_costly = costly_side != 'B';
  int64_t best_ns = -1;
  int64_t best_tensor = kNoId;
  for (size_t i = 0; i < ops_a.size(); ++i) {
    const int64_t ia = ops_a[i], ib = ops_b[i];
    if (!ValidOp(a, ia) || !ValidOp(b, ib)) return LayoutContrast{};
    if (a.str(a.ops[ia].name_id) != b.str(b.ops[ib].name_id)) return LayoutContrast{};
    const OpEvent& costly = a_costly ? a.ops[ia] : b.ops[ib];
    const int64_t ns = costly.end_ns - costly.start_ns;
    if (ns <= best_ns) continue;
    const std::vector<int64_t> in_a = InputsOf(a, ia), in_b = InputsOf(b, ib);
    for (size_t s = 0; s < in_a.size() && s < in_b.size(); ++s) {
      const TensorMeta &ta = a.tensors[in_a[s]], &tb = b.tensors[in_b[s]];
      std::string attribute;
      for (const char* attr : {"dtype", "device", "layout"}) {
        if (Attribute(ta, attr) != Attribute(tb, attr)) {
          attribute = attr;
          break;
        }
      }
      if (attribute.empty()) continue;
      best_ns = ns;
      out.found = true;
      out.op = a.str(a.ops[ia].name_id);
      out.attribute = attribute;
      out.value_a = Attribute(ta, attribute);
      out.value_b = Attribute(tb, attribute);
      best_tensor = a_costly ? in_a[s] : in_b[s];
      break;
    }
  }
  if (!out.found) return out;
  const Trace& costly = a_costly ? a : b;
  WalkBack(costly, best_tensor, out.attribute, a_costly ? out.value_a : out.value_b, &out);
  const char side = a_costly ? 'A' : 'B';
  out.text = fmt::format("{} reads {} {} on A and {} on B; {}'s {} tensor comes from {}{}", out.op, out.attribute,
                         out.value_a, out.value_b, side, a_costly ? out.value_a : out.value_b,
                         out.producer_op.empty() ? out.producer_api : out.producer_op,
                         out.where.empty() ? "" : " at " + out.where);
  return out;
}

}  // namespace magneton::diagnose
