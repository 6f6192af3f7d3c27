#include "torch_hook/replay_graph.h"

#include <c10/core/impl/VirtualGuardImpl.h>
#include <nanobind/nanobind.h>

#include <algorithm>
#include <memory>
#include <string>

#include "magneton/clock.h"

namespace nb = nanobind;

namespace magneton::replay {
namespace {

// Python objects kept by an issuer that outlives the GIL scope it was made
// in: released with the GIL held.
std::shared_ptr<nb::object> Keep(nb::object o) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(o)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

Status Sync(const c10::Device& device) {
  c10::impl::VirtualGuardImpl(device.type()).synchronizeDevice(device.index() < 0 ? 0 : device.index());
  return Status::Ok();
}

std::string FirstLine(const char* what) {
  std::string s = what;
  return s.substr(0, s.find('\n'));
}

}  // namespace

StatusOr<CallIssuer> CaptureCudaGraph(const std::function<Status()>& call_once, const c10::Device& device,
                                      int64_t calls_per_graph) {
  try {
    if (calls_per_graph <= 0) {
      // One call's time sizes the graph: ~2 ms of work per launch, at most
      // 64 calls (each call's outputs stay in the graph's memory pool).
      MAGNETON_RETURN_IF_ERROR(Sync(device));
      const int64_t t0 = MonotonicNowNs();
      MAGNETON_RETURN_IF_ERROR(call_once());
      MAGNETON_RETURN_IF_ERROR(Sync(device));
      const int64_t one_call_ns = std::max<int64_t>(1, MonotonicNowNs() - t0);
      calls_per_graph = std::clamp<int64_t>(2'000'000 / one_call_ns, 1, 64);
    }
    nb::gil_scoped_acquire gil;
    nb::module_ cuda = nb::module_::import_("torch.cuda");
    if (!nb::cast<bool>(cuda.attr("is_available")())) return Unavailable("torch.cuda is not available");
    nb::object stream = cuda.attr("Stream")(nb::arg("device") = device.str());
    stream.attr("wait_stream")(cuda.attr("current_stream")(device.str()));
    Status status = Status::Ok();
    {
      // Warm-up on the capture's stream (torch.cuda.graphs: lazy handles
      // such as cuBLAS workspaces must exist before a capture).
      nb::object on_stream = cuda.attr("stream")(stream);
      on_stream.attr("__enter__")();
      for (int i = 0; i < 3 && status.ok(); ++i) status = call_once();
      on_stream.attr("__exit__")(nb::none(), nb::none(), nb::none());
    }
    MAGNETON_RETURN_IF_ERROR(status);
    cuda.attr("synchronize")(device.str());
    nb::object graph = cuda.attr("CUDAGraph")();
    nb::object capture = cuda.attr("graph")(graph, nb::arg("stream") = stream);
    capture.attr("__enter__")();
    for (int64_t i = 0; i < calls_per_graph && status.ok(); ++i) status = call_once();
    // Ends the capture even when a call failed in it; a capture the op broke
    // raises here.
    capture.attr("__exit__")(nb::none(), nb::none(), nb::none());
    MAGNETON_RETURN_IF_ERROR(status);
    std::shared_ptr<nb::object> kept = Keep(graph);
    return CallIssuer{"cuda-graph", [kept, calls_per_graph](int64_t calls) -> StatusOr<int64_t> {
                        const int64_t launches = std::max<int64_t>(1, (calls + calls_per_graph - 1) / calls_per_graph);
                        try {
                          nb::gil_scoped_acquire gil;
                          nb::object replay = kept->attr("replay");
                          for (int64_t i = 0; i < launches; ++i) replay();
                        } catch (const std::exception& e) {
                          return Internal("graph replay failed: " + FirstLine(e.what()));
                        }
                        return launches * calls_per_graph;
                      }};
  } catch (const std::exception& e) {
    return Unavailable(FirstLine(e.what()));
  }
}

}  // namespace magneton::replay
