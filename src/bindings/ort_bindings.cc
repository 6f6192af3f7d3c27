// magneton._core.OrtSession: the Python edge of ONNX Runtime ingestion
// (include/ort/ort.h). Holds one session's graph, clock readings and
// value fingerprints until the profile is ingested at stop().
#include <mutex>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings/ort_bindings.h"
#include "bindings/status_exception.h"
#include "fingerprint/fingerprint.h"
#include "ort/ort.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace magneton {
namespace {

// numpy dtype -> Magneton spelling; "" for what cannot be fingerprinted.
std::string DTypeName(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  switch (static_cast<C>(t.code)) {
    case C::Float: return t.bits == 32 ? "float32" : t.bits == 16 ? "float16" : t.bits == 64 ? "float64" : "";
    case C::Bfloat: return t.bits == 16 ? "bfloat16" : "";
    case C::Int: return t.bits == 64 ? "int64" : t.bits == 32 ? "int32" : t.bits == 16 ? "int16" : t.bits == 8 ? "int8" : "";
    case C::UInt: return t.bits == 8 ? "uint8" : "";
    case C::Bool: return "bool";
    default: return "";
  }
}

class OrtSession {
 public:
  OrtSession(const std::string& graph_json, int64_t profiling_start_realtime_ns) {
    auto graph = ort::ParseGraphJson(graph_json);
    ThrowIfError(graph.status());
    graph_ = std::move(graph).value();
    clock_.profiling_start_realtime_ns = profiling_start_realtime_ns;
    clock_.created = ort::MeasureClockOffset();
  }

  // state_id: the run's runtime state (kNoId: the session's).
  int64_t BeginRun(int64_t state_id) {
    ort::RunBracket b;
    b.state_id = state_id;
    b.begin = ort::MeasureClockOffset();
    b.begin_monotonic_ns = MonotonicNowNs();
    std::lock_guard<std::mutex> lock(mu_);
    clock_.runs.push_back(b);
    return static_cast<int64_t>(clock_.runs.size()) - 1;
  }

  void EndRun(int64_t run) {
    int64_t now = MonotonicNowNs();
    ort::ClockOffset end = ort::MeasureClockOffset();
    std::lock_guard<std::mutex> lock(mu_);
    if (run < 0 || run >= static_cast<int64_t>(clock_.runs.size())) throw nb::index_error("no such run");
    clock_.runs[run].end_monotonic_ns = now;
    clock_.runs[run].end = end;
  }

  // Fingerprints arrays (never stores them); run -1 for initializers.
  // Returns how many were fingerprinted (strings/objects are skipped).
  int64_t AddValues(int64_t run, const std::vector<std::string>& names, const std::vector<nb::object>& arrays) {
    if (names.size() != arrays.size()) throw nb::value_error("names and arrays differ in length");
    int64_t done = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      nb::ndarray<nb::ro, nb::device::cpu> a;
      if (!nb::try_cast(arrays[i], a)) continue;
      std::string dtype = DTypeName(a.dtype());
      auto parsed = ParseDType(dtype);
      if (dtype.empty() || !parsed.ok()) continue;
      TensorBuffer buffer;
      buffer.data = a.data();
      buffer.dtype = *parsed;
      for (size_t d = 0; d < a.ndim(); ++d) {
        buffer.shape.push_back(static_cast<int64_t>(a.shape(d)));
        buffer.strides.push_back(static_cast<int64_t>(a.stride(d)));
      }
      StatusOr<std::string> fp = Status::Ok();
      {
        nb::gil_scoped_release release;  // `arrays` keeps the buffers alive
        fp = Recorder::EncodeValueFingerprint(buffer);
      }
      if (!fp.ok()) continue;
      std::lock_guard<std::mutex> lock(mu_);
      values_[{run, names[i]}] = std::move(fp).value();
      ++done;
    }
    return done;
  }

  std::vector<std::string> ValueNames() const { return ort::IntermediateNames(graph_); }

  // state_id: the session's runtime state (its options, interned by the
  // recorder glue), stamped on every op it ingests; kNoId for none.
  nb::dict Ingest(const std::string& profile_path, int64_t state_id) {
    // Held for the whole ingest: a stop on another thread waits for it.
    Recorder::Ref rec;
    if (!rec) throw std::runtime_error("no Magneton recording is active");
    StatusOr<ort::IngestStats> stats = Status::Ok();
    // Completed ops take this thread's state (Recorder::RecordCompletedOp).
    const int64_t saved_state = rec->ThreadStateId();
    rec->SetThreadStateId(state_id);
    struct Restore {
      Recorder* rec;
      int64_t id;
      ~Restore() { rec->SetThreadStateId(id); }
    } restore{rec.get(), saved_state};
    {
      nb::gil_scoped_release release;
      auto profile = ort::ReadProfile(profile_path);
      if (!profile.ok()) {
        stats = profile.status();
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        stats = ort::IngestSession(graph_, *profile, clock_, values_, rec.get());
      }
    }
    ThrowIfError(stats.status());
    nb::dict d;
    d["ops"] = stats->ops;
    d["tensors"] = stats->tensors;
    d["fingerprints"] = stats->fingerprints;
    d["unknown_nodes"] = stats->unknown_nodes;
    d["ambiguous_nodes"] = stats->ambiguous_nodes;
    d["ops_without_tensors"] = stats->ops_without_tensors;
    d["runs"] = stats->runs;
    d["clock_method"] = stats->clock_method;
    d["clock_error_ns"] = stats->clock_error_ns;
    d["runs_inside_bracket"] = stats->runs_inside_bracket;
    d["runs_outside_bracket"] = stats->runs_outside_bracket;
    return d;
  }

 private:
  std::mutex mu_;
  ort::Graph graph_;
  ort::SessionClock clock_;
  ort::RunValues values_;
};

}  // namespace

void RegisterOrtBindings(nb::module_& m) {
  nb::class_<OrtSession>(m, "OrtSession", "One ONNX Runtime session being recorded (include/ort/ort.h).")
      .def(nb::init<const std::string&, int64_t>(), "graph_json"_a, "profiling_start_ns"_a)
      .def("begin_run", &OrtSession::BeginRun, "state_id"_a = magneton::kNoId)
      .def("end_run", &OrtSession::EndRun, "run"_a)
      .def("add_values", &OrtSession::AddValues, "run"_a, "names"_a, "arrays"_a)
      .def("value_names", &OrtSession::ValueNames)
      .def("ingest", &OrtSession::Ingest, "profile_path"_a, "state_id"_a = magneton::kNoId);
}

}  // namespace magneton
