// The facade's per-op path (recorder.h): what a hook's callbacks call, each
// a few lines that compose the parts (recorder_parts.h) — the thread's op
// stack, tensor identity, the fingerprint cache, interning. The decisions
// that span parts live here: which input an output aliases, and charging a
// fingerprint's time to the op it was computed for.
#include <utility>

#include "fingerprint/fingerprint.h"
#include "magneton/clock.h"
#include "magneton/recorder.h"
#include "record/recorder_parts.h"

namespace magneton {
namespace {

// The value `t` is for the thread's innermost op `p`, fingerprinted now when
// tensor identity says so (--values), outside its lock; the time that took
// becomes one of p's recorder spans.
int64_t ResolveTensor(record::RecorderParts& parts, record::PendingOp& p, const TensorView& t, bool is_output,
                      int64_t viewed_id = kNoId, bool buffer_write = false) {
  const record::TensorIdentity::Resolved r = parts.tensors.Resolve(t, is_output, p.event.id, viewed_id, buffer_write);
  if (r.fingerprint) {
    if (auto span = parts.fingerprints.FingerprintValue(r.id, t, viewed_id)) p.recorder_spans.push_back(*span);
  }
  return r.id;
}

}  // namespace

int64_t Recorder::InternString(std::string_view s) { return parts_->intern.InternString(s); }

int64_t Recorder::InternFrame(int64_t file_id, int64_t line, int64_t function_id) {
  return parts_->intern.InternFrame(file_id, line, function_id);
}

int64_t Recorder::InternCallPath(int64_t parent_path_id, int64_t frame_id) {
  return parts_->intern.InternCallPath(parent_path_id, frame_id);
}

int64_t Recorder::InternScope(int64_t parent, std::string_view name, std::string_view type,
                              int64_t init_call_path_id, std::string_view init_args) {
  return parts_->intern.InternScope(parent, name, type, init_call_path_id, init_args);
}

void Recorder::PushScope(std::string_view name, std::string_view type) {
  record::OpStacks& ops = parts_->ops;
  const int64_t id = InternScope(ops.PushedScope(), name, type);
  ops.PushScope(id);
}

void Recorder::PopScope() { parts_->ops.PopScope(); }

int64_t Recorder::BeginOp(int64_t name_id, int64_t call_path_id, int64_t scope_id, uint64_t correlation_id) {
  return parts_->ops.Begin(name_id, call_path_id, scope_id, correlation_id);
}

size_t Recorder::OpDepth() const { return parts_->ops.Depth(); }

void Recorder::AddInput(int32_t slot, const TensorView& tensor) {
  record::PendingOp* p = parts_->ops.Innermost();
  if (!p) return;
  const int64_t id = ResolveTensor(*parts_, *p, tensor, /*is_output=*/false);
  p->links.push_back({p->event.id, TensorRole::kInput, slot, id});
  p->input_storages.emplace_back(tensor.storage_addr, id);
}

void Recorder::AddOverwrittenInput(int32_t slot, const TensorView& tensor) {
  record::PendingOp* p = parts_->ops.Innermost();
  if (!p) return;
  const int64_t id = parts_->tensors.AddOverwritten(tensor, p->event.id);
  p->links.push_back({p->event.id, TensorRole::kInput, slot, id});
  p->input_storages.emplace_back(tensor.storage_addr, id);
}

void Recorder::AddOutput(int32_t slot, const TensorView& tensor) {
  record::PendingOp* p = parts_->ops.Innermost();
  if (!p) return;
  int64_t viewed_id = kNoId;
  bool aliases_input = false;
  for (const auto& [addr, id] : p->input_storages) {
    if (addr != tensor.storage_addr) continue;
    aliases_input = true;
    if (tensor.is_view) viewed_id = id;
  }
  // Not a view, yet in an input's buffer: the op wrote into it (add_, out=).
  const bool buffer_write = aliases_input && !tensor.is_view;
  p->links.push_back({p->event.id, TensorRole::kOutput, slot,
                      ResolveTensor(*parts_, *p, tensor, /*is_output=*/true, viewed_id, buffer_write)});
}

void Recorder::EndOp(std::string args) { EndOp(std::move(args), 0, MonotonicNowNs()); }

void Recorder::EndOp(std::string args, int64_t start_ns, int64_t end_ns) {
  parts_->ops.End(std::move(args), start_ns, end_ns);
}

int64_t Recorder::DetachOp(int64_t start_ns, int64_t dispatched_ns) {
  return parts_->ops.Detach(start_ns, dispatched_ns);
}

bool Recorder::ReattachOp(int64_t op_id) { return parts_->ops.Reattach(op_id); }

void Recorder::HoldOp(std::string args, std::string name, std::string module) {
  parts_->ops.Hold(std::move(args), std::move(name), std::move(module));
}

std::vector<Recorder::HeldOp> Recorder::TakeHeldOps() { return parts_->ops.TakeHeld(); }

void Recorder::WriteHeldOps() {
  for (HeldOp& h : TakeHeldOps()) writer_->AppendOp(std::move(h.event), h.links);
}

void Recorder::ForgetStorages(const std::vector<uint64_t>& storage_uids) {
  parts_->tensors.ForgetStorages(storage_uids);
}

int64_t Recorder::AddTensor(TensorMeta meta) { return parts_->tensors.AddNamed(std::move(meta)); }

void Recorder::RecordCompletedOp(OpEvent op, std::vector<OpTensor> links) {
  if (op.state_id == kNoId) op.state_id = parts_->ops.Local().state_id;
  for (OpTensor& l : links) l.op_id = op.id;
  writer_->AppendOp(std::move(op), links);
}

StatusOr<std::string> Recorder::EncodeValueFingerprint(const TensorBuffer& buffer) {
  return record::EncodeValueFingerprint(buffer);
}

StatusOr<std::string> Recorder::EncodeDeviceValueFingerprint(const DeviceValueReader& reader, std::string_view dtype,
                                                             const std::vector<int64_t>& shape) {
  return record::EncodeDeviceValueFingerprint(reader, dtype, shape);
}

void Recorder::AddFingerprint(int64_t tensor_id, std::string encoded) {
  writer_->AppendFingerprint(tensor_id, std::string(kFingerprintKind), std::move(encoded));
}

}  // namespace magneton
