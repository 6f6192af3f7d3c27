// The C ABI over the Recorder: converts arguments, keeps the last error per
// thread, never throws across the boundary.
#include "magneton/c_api.h"

#include <mutex>
#include <string>

#include "magneton/recorder.h"
#include "trace/op_args.h"

namespace {

thread_local std::string t_last_error;

// The C ABI's codes are spelled out one by one, so that renumbering the
// C++ enum cannot silently change what a compiled engine sees.
int CCode(magneton::StatusCode code) {
  using magneton::StatusCode;
  switch (code) {
    case StatusCode::kOk: return MAGNETON_OK;
    case StatusCode::kInvalidArgument: return MAGNETON_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return MAGNETON_NOT_FOUND;
    case StatusCode::kPermissionDenied: return MAGNETON_PERMISSION_DENIED;
    case StatusCode::kCorrupt: return MAGNETON_CORRUPT;
    case StatusCode::kVersionMismatch: return MAGNETON_VERSION_MISMATCH;
    case StatusCode::kUnavailable: return MAGNETON_UNAVAILABLE;
    case StatusCode::kFailedPrecondition: return MAGNETON_FAILED_PRECONDITION;
    case StatusCode::kInternal: return MAGNETON_INTERNAL;
  }
  return MAGNETON_INTERNAL;
}

int Report(const magneton::Status& st) {
  t_last_error = st.ok() ? std::string() : st.message();
  return CCode(st.code());
}

magneton::TensorView ToView(const magneton_tensor* t) {
  magneton::TensorView v;
  v.storage_addr = t->storage_addr;
  v.storage_offset = t->storage_offset;
  v.ndim = t->ndim;
  v.sizes = t->sizes;
  v.strides = t->strides;
  v.dtype = t->dtype ? t->dtype : "unknown";
  v.device = t->device ? t->device : "cpu";
  v.version = t->version;
  // Without a version counter the same address may hold new values: a
  // fingerprint cached under it cannot be reused.
  v.version_tracked = t->version != 0;
  v.host_data = t->host_data;
  return v;
}

// The op's arguments as given when they are op-arguments JSON
// (docs/TRACE_FORMAT.md), else kept whole as {"unparsed": "<text>"}:
// counted in meta('capi.unparsed_args') and said by magneton_last_error().
std::string CheckedArgs(magneton::Recorder& rec, const char* args) {
  if (args == nullptr || *args == '\0') return "";
  auto parsed = magneton::ParseOpArgs(args);
  if (parsed.ok()) return args;
  t_last_error = parsed.status().message();
  std::string out;
  magneton::OpArgsWriter w(&out);
  w.BeginParams();
  w.Key("unparsed");
  w.String(args);
  w.EndParams();
  static std::mutex mu;
  static uint64_t generation = 0;
  static int64_t count = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (generation != rec.generation()) {
    generation = rec.generation();
    count = 0;
  }
  rec.SetMeta("capi.unparsed_args", std::to_string(++count));
  return out;
}

}  // namespace

extern "C" {

int magneton_start(const char* path, const char* label, const char* engine, int sample_energy, int record_values) {
  if (!path) return Report(magneton::InvalidArgument("magneton_start: path is NULL"));
  magneton::RunMetadata meta;
  meta.label = label ? label : "";
  meta.engine = engine ? engine : "native";
  magneton::RecorderOptions options;
  options.sample_energy = sample_energy != 0;
  options.record_values = record_values != 0;
  return Report(magneton::Recorder::Start(path, meta, options));
}

int magneton_stop(void) { return Report(magneton::Recorder::Stop()); }

int magneton_is_recording(void) { return magneton::Recorder::IsRecording(); }

int magneton_recording_open(void) {
  magneton::Recorder::Ref rec;
  return rec && rec->WindowOpen();
}

const char* magneton_last_error(void) { return t_last_error.c_str(); }

// Each call holds the recorder for its own duration only: a stop between an
// op's calls frees it, and the op's later calls then find another session's
// (or no) thread state and are dropped (Recorder's per-thread generation).
int64_t magneton_begin_op(const char* name) {
  magneton::Recorder::Ref rec;
  if (!rec || !name) return -1;
  return rec->BeginOp(rec->InternString(name), magneton::kNoId);
}

void magneton_add_input(int32_t slot, const magneton_tensor* tensor) {
  if (magneton::Recorder::Ref rec; rec && tensor) rec->AddInput(slot, ToView(tensor));
}

void magneton_add_output(int32_t slot, const magneton_tensor* tensor) {
  if (magneton::Recorder::Ref rec; rec && tensor) rec->AddOutput(slot, ToView(tensor));
}

void magneton_end_op(const char* args) {
  // The end time first: checking the arguments is not the op's time.
  const int64_t end_ns = magneton::MonotonicNowNs();
  if (magneton::Recorder::Ref rec; rec) rec->EndOp(CheckedArgs(*rec, args), 0, end_ns);
}

void magneton_end_op_at(const char* args, int64_t start_ns, int64_t end_ns) {
  if (magneton::Recorder::Ref rec; rec) rec->EndOp(CheckedArgs(*rec, args), start_ns, end_ns);
}

int64_t magneton_now_ns(void) { return magneton::MonotonicNowNs(); }

void magneton_push_scope(const char* name, const char* type) {
  if (magneton::Recorder::Ref rec; rec && name) rec->PushScope(name, type ? type : name);
}

void magneton_pop_scope(void) {
  if (magneton::Recorder::Ref rec; rec) rec->PopScope();
}

void magneton_set_config(const char* key, const char* value, const char* source) {
  magneton::Recorder::Ref rec;
  if (!rec || !key) return;
  rec->SetConfig(key, value ? value : "", source ? source : "runtime");
}

}  // extern "C"
