// Kineto chrome-trace JSON -> ActivityBatch. Kineto writes "ts" and "dur" as
// microseconds with three decimals (nanosecond resolution); GPU events carry
// args.device, args.stream and args.correlation (the launching API call's
// CUPTI correlation id), launches carry args.correlation and, when the
// profiler had a host op open, args["External id"], which is also the host
// op's own "External id". Kernels a CUDA graph ran carry the correlation
// id of the cudaGraphLaunch that ran them, and (Kineto since its kernel
// records became CUpti_ActivityKernel5+) args "graph id" / "graph node id".
#include "gpu/kineto_trace.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace magneton::gpu {
namespace {

using nlohmann::json;

// No profile is older than this epoch bound (year ~2096 in µs); past it, the
// nanosecond arithmetic would overflow.
constexpr double kMaxAbsUs = 4e15;
constexpr int64_t kMaxNs = 4'000'000'000'000'000'000;

enum class Category { kIgnored, kActivity, kLaunch, kHostOp };

Category CategoryOf(const std::string& cat, ActivityKind* kind) {
  if (cat == "kernel") {
    *kind = ActivityKind::kKernel;
    return Category::kActivity;
  }
  if (cat == "gpu_memcpy") {
    *kind = ActivityKind::kMemcpy;
    return Category::kActivity;
  }
  if (cat == "gpu_memset") {
    *kind = ActivityKind::kMemset;
    return Category::kActivity;
  }
  if (cat == "cuda_runtime" || cat == "cuda_driver") return Category::kLaunch;
  if (cat == "cpu_op" || cat == "user_annotation") return Category::kHostOp;
  return Category::kIgnored;
}

// An integer argument: a JSON integer, or a float with no fraction.
bool IntOf(const json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!(std::fabs(d) < 9e18) || d != std::floor(d)) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

bool IntArg(const json& args, const char* key, int64_t* out) {
  auto it = args.find(key);
  return it != args.end() && IntOf(*it, out);
}

class Parser {
 public:
  explicit Parser(ActivityBatch* out) : out_(out) {}

  Status Run(const json& root) {
    const json* events = &root;
    if (root.is_object()) {
      auto base = root.find("baseTimeNanoseconds");
      if (base != root.end()) {
        if (!IntOf(*base, &base_ns_) || base_ns_ < 0 || base_ns_ > static_cast<int64_t>(kMaxAbsUs) * 1000)
          return InvalidArgument("Kineto trace: baseTimeNanoseconds is not a nanosecond time");
      }
      auto it = root.find("traceEvents");
      if (it == root.end() || !it->is_array())
        return InvalidArgument("Kineto trace: no \"traceEvents\" array (is this a torch.profiler trace?)");
      events = &*it;
      ReadDevices(root);
    } else if (!root.is_array()) {
      return InvalidArgument("Kineto trace: neither a trace object nor an event array");
    }
    for (const json& e : *events) Event(e);
    return Status::Ok();
  }

 private:
  void Drop(const std::string& what) { ++out_->dropped[what]; }

  void ReadDevices(const json& root) {
    auto it = root.find("deviceProperties");
    if (it == root.end() || !it->is_array()) return;
    for (const json& d : *it) {
      int64_t id = 0;
      if (!d.is_object() || !IntArg(d, "id", &id)) continue;
      auto name = d.find("name");
      if (name != d.end() && name->is_string()) out_->device_names["cuda:" + std::to_string(id)] = name->get<std::string>();
    }
  }

  // µs (a JSON number) after the base -> ns on the source clock.
  bool Time(const json& e, const char* key, int64_t* ns) {
    auto it = e.find(key);
    if (it == e.end() || !it->is_number()) return false;
    const double us = it->get<double>();
    if (!(std::fabs(us) <= kMaxAbsUs)) return false;
    // A double holds ~16 significant digits: absolute epoch µs (older
    // Kineto) keep only ~0.25 µs. The coarsest step met is recorded.
    const double step_ns = (std::nextafter(std::fabs(us), INFINITY) - std::fabs(us)) * 1000;
    out_->timestamp_resolution_ns = std::max<int64_t>(out_->timestamp_resolution_ns,
                                                      static_cast<int64_t>(std::ceil(step_ns)));
    *ns = static_cast<int64_t>(std::llround(us * 1000));
    return true;
  }

  // A flow start ("ph": "s", "cat": "ac2g"): Kineto draws one from each
  // launch call whose callback id it classes as queueing device work, its
  // "id" the launch's correlation id.
  void FlowStart(const json& e) {
    int64_t id = 0;
    if (IntOf(e.value("id", json()), &id) && id > 0) out_->flow_starts.insert(static_cast<uint64_t>(id));
  }

  void Event(const json& e) {
    if (!e.is_object()) return;
    auto cat_it = e.find("cat");
    if (cat_it == e.end() || !cat_it->is_string()) return;
    if (cat_it->get<std::string>() == "ac2g") {
      auto ph = e.find("ph");
      if (ph != e.end() && ph->is_string() && ph->get<std::string>() == "s") FlowStart(e);
      return;
    }
    ActivityKind kind = ActivityKind::kKernel;
    const std::string cat = cat_it->get<std::string>();
    const Category c = CategoryOf(cat, &kind);
    if (c == Category::kIgnored) return;
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get<std::string>() != "X") return Drop(cat + ".not_complete_event");
    int64_t ts = 0, dur = 0;
    if (!Time(e, "ts", &ts)) return Drop(cat + ".bad_ts");
    if (!Time(e, "dur", &dur)) return Drop(cat + ".bad_dur");
    if (dur < 0) return Drop(cat + ".negative_dur");
    // Kineto never writes a time before its base; and every time must stay
    // far enough inside int64 for the clock arithmetic of linking.
    const int64_t start = base_ns_ + ts;
    if (start < 0 || start > kMaxNs) return Drop(cat + ".bad_ts");
    if (dur > kMaxNs - start) return Drop(cat + ".bad_dur");
    auto name_it = e.find("name");
    std::string name = name_it != e.end() && name_it->is_string() ? name_it->get<std::string>() : "";
    static const json kNoArgs = json::object();
    auto args_it = e.find("args");
    const json& args = args_it != e.end() && args_it->is_object() ? *args_it : kNoArgs;
    int64_t external = 0;
    IntArg(args, "External id", &external);
    if (external < 0) external = 0;

    if (c == Category::kActivity) {
      RawActivity a;
      a.kind = kind;
      a.name = std::move(name);
      a.start_ns = start;
      a.end_ns = start + dur;
      int64_t correlation = 0;
      if (!IntArg(args, "device", &a.device) || a.device < 0) return Drop(cat + ".no_device");
      if (!IntArg(args, "stream", &a.stream)) return Drop(cat + ".no_stream");
      // Without a correlation it cannot be linked, but it still drew power
      // on the device: kept, and counted as unlinked later.
      if (IntArg(args, "correlation", &correlation) && correlation > 0) a.correlation = static_cast<uint64_t>(correlation);
      a.external_id = static_cast<uint64_t>(external);
      // Kineto writes these for kernels where CUPTI's record has them
      // (CUpti_ActivityKernel5 and later); 0 or absent: not a graph's.
      if (!IntArg(args, "graph id", &a.graph_id) || a.graph_id < 0) a.graph_id = 0;
      if (!IntArg(args, "graph node id", &a.graph_node_id) || a.graph_node_id < 0) a.graph_node_id = 0;
      out_->activities.push_back(std::move(a));
      return;
    }
    int64_t tid = 0;
    if (!IntOf(e.value("tid", json()), &tid)) return Drop(cat + ".no_tid");
    if (c == Category::kLaunch) {
      Launch l;
      int64_t correlation = 0;
      if (!IntArg(args, "correlation", &correlation) || correlation <= 0) return Drop(cat + ".no_correlation");
      l.correlation = static_cast<uint64_t>(correlation);
      l.external_id = static_cast<uint64_t>(external);
      l.thread_id = tid;
      l.start_ns = start;
      l.end_ns = start + dur;
      l.api = std::move(name);
      out_->launches.push_back(std::move(l));
      return;
    }
    HostOp h;
    h.external_id = static_cast<uint64_t>(external);
    h.name = std::move(name);
    h.thread_id = tid;
    h.start_ns = start;
    h.end_ns = start + dur;
    out_->host_ops.push_back(std::move(h));
  }

  ActivityBatch* out_;
  int64_t base_ns_ = 0;
};

}  // namespace

const char* ActivityKindName(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kKernel: return "kernel";
    case ActivityKind::kMemcpy: return "memcpy";
    case ActivityKind::kMemset: return "memset";
  }
  return "kernel";
}

StatusOr<ActivityBatch> ParseKinetoTrace(std::string_view json_text) {
  json root = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return InvalidArgument("Kineto trace is not valid JSON (truncated? the profiled process may have been killed "
                           "while writing it)");
  ActivityBatch batch;
  batch.source = "kineto";
  Parser parser(&batch);
  MAGNETON_RETURN_IF_ERROR(parser.Run(root));
  return batch;
}

StatusOr<ActivityBatch> KinetoTraceSource::Collect() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return NotFound("cannot read the Kineto trace " + path_);
  std::ostringstream text;
  text << in.rdbuf();
  auto batch = ParseKinetoTrace(text.str());
  if (!batch.ok()) return Status(batch.status().code(), path_ + ": " + batch.status().message());
  return batch;
}

}  // namespace magneton::gpu
