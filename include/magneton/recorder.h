// The in-process recording session that every engine hook feeds: it assigns
// op and tensor ids, tracks tensor identity through views and in-place ops,
// interns names, frames and scopes, and hands finished records to the writer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "magneton/status.h"
#include "magneton/trace.h"
#include "magneton/trace_writer.h"

namespace magneton {

// A tensor as a hook sees it, borrowed for the duration of the call.
struct TensorView {
  uint64_t storage_addr = 0;
  int64_t storage_offset = 0;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;  // may be null for non-strided layouts
  int32_t ndim = 0;
  std::string_view dtype;
  std::string_view device;
  int64_t version = 0;
  // False when writes do not bump `version` (torch inference-mode tensors).
  bool version_tracked = true;
  // Address of element [0,...,0] when the values are readable from this
  // thread (host memory), else null: only then can --values fingerprint it.
  const void* host_data = nullptr;
};

struct RecorderOptions {
  TraceWriterOptions writer;
  // Sample the meters `magneton meters` would choose, on the ops' clock.
  bool sample_energy = false;
  // Fingerprint every new tensor value (record --values); never raw values.
  bool record_values = false;
};

int64_t MonotonicNowNs();

class Recorder {
 public:
  static Status Start(const std::string& path, const RunMetadata& meta, RecorderOptions options = {});
  static Status Stop();
  // The active session, or null. Cheap enough for every op.
  static Recorder* Active() { return active_.load(std::memory_order_acquire); }

  int64_t InternString(std::string_view s);
  int64_t InternFrame(int64_t file_id, int64_t line, int64_t function_id);
  // The path whose innermost frame is frame_id, called from parent_path.
  int64_t InternCallPath(int64_t parent_path_id, int64_t frame_id);

  // A module scope named `name` (of class `type`) inside parent_scope_id.
  int64_t InternScope(int64_t parent_scope_id, std::string_view name, std::string_view type);
  // A per-thread scope stack, for engines that announce scopes explicitly.
  void PushScope(std::string_view name, std::string_view type);
  void PopScope();

  // Op lifecycle on the calling thread; ops nest by thread-local stack.
  // kNoId for call_path_id or scope_id: inherit from the enclosing op, else
  // (scope only) the thread's pushed scope.
  int64_t BeginOp(int64_t name_id, int64_t call_path_id, int64_t scope_id = kNoId, uint64_t correlation_id = 0);
  void AddInput(int32_t slot, const TensorView& tensor);
  void AddOutput(int32_t slot, const TensorView& tensor);
  void EndOp(std::string args);
  // Same, with the interval the engine measured (MonotonicNowNs clock).
  void EndOp(std::string args, int64_t start_ns, int64_t end_ns);
  // Depth of the current thread's op stack (0: not inside a recorded op).
  size_t OpDepth() const;

  void SetConfig(std::string key, std::string value, std::string source);
  void SetMeta(const std::string& key, const std::string& value);
  void AppendEnergySample(EnergySample sample);
  Status Flush();

  uint64_t generation() const { return generation_; }
  bool record_values() const { return record_values_; }
  int64_t ops_recorded() const { return next_op_id_.load(std::memory_order_relaxed); }
  TraceWriter* writer() { return writer_.get(); }

  ~Recorder();

 private:
  struct State;
  Recorder(std::unique_ptr<TraceWriter> writer, uint64_t generation, bool record_values);
  void FingerprintValue(int64_t tensor_id, const TensorView& t, const void* key_ptr);
  int64_t ResolveTensor(const TensorView& t, bool is_output, int64_t op_id);
  // Registers a new value; state mutex held. key_ptr: the private TensorKey.
  int64_t NewTensor(const TensorView& t, bool is_output, int64_t op_id, const void* key_ptr);

  static std::atomic<Recorder*> active_;
  std::unique_ptr<TraceWriter> writer_;
  std::unique_ptr<class EnergySession> energy_;
  std::unique_ptr<State> state_;
  uint64_t generation_;
  bool record_values_;
  std::atomic<int64_t> next_op_id_{0};
};

}  // namespace magneton
