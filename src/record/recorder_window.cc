// Recorder's side of windowed recording (recorder_window.h; record/window.h
// decides, this applies it). See recorder.h, ConfigureWindow.
#include "record/recorder_window.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include "magneton/clock.h"
#include "record/recorder_parts.h"
#include "record/tensor_identity.h"

namespace magneton {

Status Recorder::ConfigureWindow(const std::string& schedule, bool time_gate_open) {
  return parts_->window.Configure(schedule, time_gate_open);
}

bool Recorder::Step(bool explicit_call) { return parts_->window.Step(explicit_call); }

bool Recorder::SetTimeGate(bool open) { return parts_->window.SetTimeGate(open); }

namespace record {

Status RecorderWindow::Configure(const std::string& schedule_text, bool time_gate_open) {
  std::optional<WindowSchedule> schedule;
  if (!schedule_text.empty()) {
    MAGNETON_ASSIGN_OR_RETURN(WindowSchedule parsed, ParseWindowSchedule(schedule_text));
    schedule = parsed;
  }
  std::lock_guard<std::mutex> lock(mu_);
  window_ = std::make_unique<RecordWindow>(schedule, time_gate_open);
  configured_ = true;
  ApplyLocked(MonotonicNowNs());
  return Status::Ok();
}

bool RecorderWindow::Step(bool explicit_call) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!window_) window_ = std::make_unique<RecordWindow>();
  const int64_t ended = window_->step();
  if (!window_->OnStep(explicit_call)) return IsOpen();
  const int64_t now = MonotonicNowNs();
  if (IsOpen()) {
    ++steps_recorded_;
    WriteRecorderOp("magneton::step", now, now, fmt::format("{{\"step\":{}}}", ended));
  }
  ApplyLocked(now);
  return IsOpen();
}

bool RecorderWindow::SetTimeGate(bool open) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!window_) window_ = std::make_unique<RecordWindow>();
  window_->SetTimeGate(open);
  ApplyLocked(MonotonicNowNs());
  return IsOpen();
}

void RecorderWindow::ApplyLocked(int64_t now_ns) {
  const bool open = window_->open();
  if (open == IsOpen()) return;
  if (!open) {
    open_->store(false, std::memory_order_relaxed);
    closed_since_ns_ = now_ns;
    closed_at_step_ = window_->step();
    tensors_->ForgetAll();
    return;
  }
  // The closed span, written now with an id taken now: no op began while it
  // was closed, so ids stay in start order.
  WriteRecorderOp("magneton::unrecorded", closed_since_ns_, now_ns,
                  fmt::format("{{\"from_step\":{},\"to_step\":{}}}", closed_at_step_, window_->step()));
  ++gaps_;
  open_->store(true, std::memory_order_relaxed);
}

void RecorderWindow::WriteRecorderOp(std::string_view name, int64_t start_ns, int64_t end_ns, std::string args) {
  OpEvent op;
  op.id = rec_->ReserveOpId();
  op.name_id = rec_->InternString(name);
  op.start_ns = start_ns;
  op.end_ns = end_ns;
  op.args = std::move(args);
  op.thread_id = static_cast<int64_t>(syscall(SYS_gettid));
  rec_->RecordCompletedOp(std::move(op), {});
}

void RecorderWindow::WriteStopMeta() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!window_) return;
  // A run that ends while closed: the closed span up to the stop is not the job's either.
  if (!IsOpen()) {
    WriteRecorderOp("magneton::unrecorded", closed_since_ns_, MonotonicNowNs(),
                    fmt::format("{{\"from_step\":{},\"to_step\":{}}}", closed_at_step_, window_->step()));
    ++gaps_;
  }
  // Steps are marked in every recording that has them; only a configured
  // window makes the trace a part of its run (diff trims only such traces).
  TraceWriter* writer = rec_->writer();
  writer->SetMeta("window.configured", configured_ ? "1" : "0");
  writer->SetMeta("window.schedule", window_->schedule() ? FormatWindowSchedule(*window_->schedule()) : "");
  writer->SetMeta("window.steps", std::to_string(window_->step()));
  writer->SetMeta("window.steps_recorded", std::to_string(steps_recorded_));
  writer->SetMeta("window.step_source", StepSourceName(window_->step_source()));
  writer->SetMeta("window.unrecorded_spans", std::to_string(gaps_));
}

}  // namespace record
}  // namespace magneton
