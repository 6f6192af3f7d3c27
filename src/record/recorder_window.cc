// Recorder's side of windowed recording (record/window.h decides; this
// applies it). See recorder.h, ConfigureWindow.
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include "magneton/clock.h"
#include "magneton/recorder.h"
#include "record/window.h"

namespace magneton {

Status Recorder::ConfigureWindow(const std::string& schedule_text, bool time_gate_open) {
  std::optional<WindowSchedule> schedule;
  if (!schedule_text.empty()) {
    MAGNETON_ASSIGN_OR_RETURN(WindowSchedule parsed, ParseWindowSchedule(schedule_text));
    schedule = parsed;
  }
  std::lock_guard<std::mutex> lock(window_mu_);
  window_ = std::make_unique<RecordWindow>(schedule, time_gate_open);
  window_configured_ = true;
  ApplyWindowLocked(MonotonicNowNs());
  return Status::Ok();
}

bool Recorder::Step(bool explicit_call) {
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_) window_ = std::make_unique<RecordWindow>();
  const int64_t ended = window_->step();
  if (!window_->OnStep(explicit_call)) return WindowOpen();
  const int64_t now = MonotonicNowNs();
  if (WindowOpen()) {
    ++window_steps_recorded_;
    WriteRecorderOp("magneton::step", now, now, fmt::format("{{\"step\":{}}}", ended));
  }
  ApplyWindowLocked(now);
  return WindowOpen();
}

bool Recorder::SetTimeGate(bool open) {
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_) window_ = std::make_unique<RecordWindow>();
  window_->SetTimeGate(open);
  ApplyWindowLocked(MonotonicNowNs());
  return WindowOpen();
}

void Recorder::ApplyWindowLocked(int64_t now_ns) {
  const bool open = window_->open();
  if (open == WindowOpen()) return;
  if (!open) {
    window_open_.store(false, std::memory_order_relaxed);
    window_closed_since_ns_ = now_ns;
    window_closed_at_step_ = window_->step();
    ForgetAllValues();
    return;
  }
  // The closed span, written now with an id taken now: no op began while it
  // was closed, so ids stay in start order.
  WriteRecorderOp("magneton::unrecorded", window_closed_since_ns_, now_ns,
                  fmt::format("{{\"from_step\":{},\"to_step\":{}}}", window_closed_at_step_, window_->step()));
  ++window_gaps_;
  window_open_.store(true, std::memory_order_relaxed);
}

void Recorder::WriteRecorderOp(std::string_view name, int64_t start_ns, int64_t end_ns, std::string args) {
  OpEvent op;
  op.id = ReserveOpId();
  op.name_id = InternString(name);
  op.start_ns = start_ns;
  op.end_ns = end_ns;
  op.args = std::move(args);
  op.thread_id = static_cast<int64_t>(syscall(SYS_gettid));
  RecordCompletedOp(std::move(op), {});
}

void Recorder::WriteWindowMeta() {
  std::lock_guard<std::mutex> lock(window_mu_);
  if (!window_) return;
  // A run that ends while closed: the closed span up to the stop is not the job's either.
  if (!WindowOpen()) {
    WriteRecorderOp("magneton::unrecorded", window_closed_since_ns_, MonotonicNowNs(),
                    fmt::format("{{\"from_step\":{},\"to_step\":{}}}", window_closed_at_step_, window_->step()));
    ++window_gaps_;
  }
  // Steps are marked in every recording that has them; only a configured
  // window makes the trace a part of its run (diff trims only such traces).
  writer_->SetMeta("window.configured", window_configured_ ? "1" : "0");
  writer_->SetMeta("window.schedule", window_->schedule() ? FormatWindowSchedule(*window_->schedule()) : "");
  writer_->SetMeta("window.steps", std::to_string(window_->step()));
  writer_->SetMeta("window.steps_recorded", std::to_string(window_steps_recorded_));
  writer_->SetMeta("window.step_source", StepSourceName(window_->step_source()));
  writer_->SetMeta("window.unrecorded_spans", std::to_string(window_gaps_));
}

}  // namespace magneton
