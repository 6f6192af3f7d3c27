// ggml's scheduler calls the eval callback twice per node when asked to:
// ask=true before computing ("do you want this tensor?") and, if we said
// yes, ask=false once the node and everything before it has been computed
// and synchronised. Saying yes to every node makes the scheduler run each
// node as its own one-node graph, so [ask=true returns, ask=false arrives]
// is that node's compute (plus one graph launch and backend sync). Inputs
// are resolved on ask=true, before the node can overwrite them in place;
// outputs (and their fingerprints) on ask=false, after the end time is read.
#include "ggml_hook/ggml_hook.h"

#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ggml_hook/ggml_api.h"
#include "ggml_hook/ggml_layout.h"
#include "ggml_hook/ggml_node.h"
#include "magneton/c_api.h"
#include "trace/op_args.h"

namespace {

using magneton::ggml_hook::GgmlApi;
using magneton::ggml_hook::TensorDesc;

GgmlApi g_api;
std::atomic<bool> g_bound{false};
std::string g_bind_error = "magneton_ggml_bind was not called";
std::atomic<long long> g_nodes{0};

struct Chain {
  ggml_backend_sched_eval_callback previous;
  void* previous_user_data;
};

// The node between its two callbacks, per scheduler thread.
struct PendingNode {
  const ggml_tensor* node = nullptr;
  int64_t start_ns = 0;
  bool previous_asked = false;
  std::string args;
};
thread_local PendingNode t_pending;

// Names ggml made up for unnamed nodes ("node_28"), or none at all.
bool IsAutoName(std::string_view name) {
  if (name.empty()) return true;
  if (name.rfind("node_", 0) != 0 || name.size() == 5) return false;
  return name.find_first_not_of("0123456789", 5) == std::string_view::npos;
}

// "blk.<layer>" for a layer's nodes, the base name for others; an unnamed
// node (llama.cpp's attention output projection has none) takes the scope of
// the first named tensor up its src[0] chain.
std::string ScopeOf(const ggml_tensor* t) {
  for (int depth = 0; t != nullptr && depth < 16; ++depth, t = t->src[0]) {
    if (IsAutoName(t->name)) continue;
    const int layer = magneton::ggml_hook::LayerOfNodeName(t->name);
    if (layer >= 0) return std::string("blk.").append(std::to_string(layer));
    return magneton::ggml_hook::BaseNodeName(t->name);
  }
  return "";
}

// Nodes that only re-describe memory; every other node writes its output.
bool IsViewOp(ggml_op op) {
  return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
         op == GGML_OP_TRANSPOSE;
}

bool SameTensor(const TensorDesc& a, const TensorDesc& b) {
  const auto& x = a.layout;
  const auto& y = b.layout;
  if (x.storage_addr != y.storage_addr || x.storage_offset != y.storage_offset || x.ndim != y.ndim) return false;
  for (int i = 0; i < x.ndim; ++i) {
    if (x.sizes[i] != y.sizes[i] || x.strides[i] != y.strides[i]) return false;
  }
  return a.dtype == b.dtype;
}

// Begins the op and resolves its inputs. Magneton's argument slots put
// activations before parameters (aten::linear(x, W, b)); ggml's mul_mat
// takes the weight first, so weights are moved after the other sources and
// `src=` in args keeps ggml's order.
void BeginNode(const ggml_tensor* t) {
  const std::string scope = ScopeOf(t);
  if (!scope.empty()) magneton_push_scope(scope.c_str(), "llama.cpp");
  std::string op_name = "ggml::";
  op_name += g_api.op_desc(t);
  magneton_begin_op(op_name.c_str());
  if (!scope.empty()) magneton_pop_scope();  // the op has its scope; the thread keeps none

  std::vector<int> order;
  std::array<TensorDesc, GGML_MAX_SRC> descs;
  std::array<bool, GGML_MAX_SRC> ok{};
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < GGML_MAX_SRC; ++i) {
      if (t->src[i] == nullptr) continue;
      if (pass == 0) ok[i] = magneton::ggml_hook::DescribeTensor(t->src[i], g_api, &descs[i]);
      if (ok[i] && descs[i].is_weight == (pass == 1)) order.push_back(i);
    }
  }
  t_pending.args.clear();
  magneton::OpArgsWriter args(&t_pending.args);  // {"name": ..., "src": [...]} (docs/TRACE_FORMAT.md)
  args.BeginParams();
  args.Key("name");
  args.String(std::string_view(t->name, strnlen(t->name, sizeof(t->name))));
  args.Key("src");
  args.BeginList();
  for (size_t slot = 0; slot < order.size(); ++slot) {
    magneton_tensor c = magneton::ggml_hook::ToCTensor(descs[order[slot]]);
    magneton_add_input(static_cast<int32_t>(slot), &c);
    args.Int(order[slot]);
  }
  args.EndList();
  args.EndParams();
}

// A node that writes through a view (SET_ROWS into the KV cache, CPY into a
// slice) changes its root tensor, which later nodes read through other views
// of the root: the root's new value is a second output, so those reads get
// an edge from the writer instead of looking like an external input.
void EndNode(const ggml_tensor* t, int64_t start_ns, int64_t end_ns) {
  TensorDesc out;
  const bool described = magneton::ggml_hook::DescribeTensor(t, g_api, &out);
  if (described) {
    magneton_tensor c = magneton::ggml_hook::ToCTensor(out);
    magneton_add_output(0, &c);
  }
  TensorDesc root;
  if (t->view_src != nullptr && !IsViewOp(t->op) && magneton::ggml_hook::DescribeTensor(t->view_src, g_api, &root) &&
      !(described && SameTensor(out, root))) {
    magneton_tensor c = magneton::ggml_hook::ToCTensor(root);
    magneton_add_output(1, &c);
  }
  magneton_end_op_at(t_pending.args.c_str(), start_ns, end_ns);
  g_nodes.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

extern "C" {

int magneton_ggml_bind(const char* ggml_base_path) {
  if (ggml_base_path == nullptr) {
    g_bind_error = "magneton_ggml_bind: path is NULL";
    return 1;
  }
  magneton::Status st = magneton::ggml_hook::BindGgml(ggml_base_path, &g_api);
  g_bind_error = st.message();
  g_bound.store(st.ok(), std::memory_order_release);
  return st.ok() ? 0 : 1;
}

const char* magneton_ggml_error(void) { return g_bind_error.c_str(); }

void* magneton_ggml_chain(ggml_backend_sched_eval_callback previous, void* previous_user_data) {
  return new Chain{previous, previous_user_data};  // one per context, kept for the process
}

const char* magneton_ggml_type_name(int type) {
  if (!g_bound.load(std::memory_order_acquire) || type < 0 || type >= GGML_TYPE_COUNT) return "unknown";
  return g_api.type_name(static_cast<ggml_type>(type));
}

long long magneton_ggml_nodes_recorded(void) { return g_nodes.load(std::memory_order_relaxed); }

// Reaches the recorder only through the C ABI, each call holding it for
// itself: a stop between ask=true and ask=false drops the node's op.
bool magneton_ggml_eval_callback(struct ggml_tensor* t, bool ask, void* user_data) {
  const Chain* chain = static_cast<const Chain*>(user_data);
  PendingNode& p = t_pending;
  if (ask) {
    const bool previous = chain != nullptr && chain->previous(t, true, chain->previous_user_data);
    if (p.node != nullptr) magneton_end_op_at(R"({"aborted":true})", p.start_ns, magneton_now_ns());  // never answered
    p.node = nullptr;
    p.previous_asked = previous;
    const bool ours = g_bound.load(std::memory_order_acquire) && magneton_recording_open();
    if (ours) {
      BeginNode(t);
      p.node = t;
      p.start_ns = magneton_now_ns();  // after input resolution: the interval is the compute
    }
    return ours || previous;
  }
  const int64_t end_ns = magneton_now_ns();
  bool keep_going = true;
  if (p.node == t) {
    p.node = nullptr;
    EndNode(t, p.start_ns, end_ns);
  }
  if (chain != nullptr && p.previous_asked) keep_going = chain->previous(t, false, chain->previous_user_data);
  p.previous_asked = false;
  return keep_going;
}

}  // extern "C"
