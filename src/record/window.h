// Windowed recording (docs/ARCHITECTURE.md, "Windowed recording"): which part
// of a long job is recorded. Steps are counted by `magneton.step()` (or, until
// the program calls it, by steps a framework has: an optimizer's step(), a
// decode step of HF generate); a schedule in steps, like torch.profiler's
// schedule(wait, warmup, active, repeat), says which steps are recorded, and
// a time gate (--start-after, --duration) can narrow it further. Pure logic:
// the recorder applies what it decides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "magneton/status.h"

namespace magneton {

struct WindowSchedule {
  int64_t wait = 0;    // steps not recorded at the start of each cycle
  int64_t warmup = 0;  // then not recorded either (torch.profiler discards its warm-up steps)
  int64_t active = 1;  // then recorded
  int64_t repeat = 0;  // cycles; 0 repeats until the program ends
};

// "wait,warmup,active[,repeat]", each a non-negative integer, active >= 1.
StatusOr<WindowSchedule> ParseWindowSchedule(std::string_view text);
std::string FormatWindowSchedule(const WindowSchedule& schedule);
// Whether step `step` (0-based: the work before the first step boundary is
// step 0) falls in an active part of the schedule.
bool StepIsActive(const WindowSchedule& schedule, int64_t step);

// Where the step boundaries come from.
enum class StepSource { kNone, kAuto, kExplicit };

class RecordWindow {
 public:
  // No schedule: every step is active (only the time gate narrows the window).
  explicit RecordWindow(std::optional<WindowSchedule> schedule = std::nullopt, bool time_gate_open = true);

  // A step boundary. An explicit one (magneton.step()) always counts; the
  // first one restarts the count at 1, and from then on the automatic ones (a
  // framework's steps) are ignored, so no step is counted twice. Returns
  // whether it counted.
  bool OnStep(bool explicit_call);
  // The time gate (closed before --start-after, after --duration).
  void SetTimeGate(bool open) { time_gate_open_ = open; }

  bool open() const { return time_gate_open_ && (!schedule_ || StepIsActive(*schedule_, step_)); }
  bool has_schedule() const { return schedule_.has_value(); }
  const std::optional<WindowSchedule>& schedule() const { return schedule_; }
  int64_t step() const { return step_; }
  StepSource step_source() const { return source_; }

 private:
  std::optional<WindowSchedule> schedule_;
  bool time_gate_open_;
  int64_t step_ = 0;
  StepSource source_ = StepSource::kNone;
};

const char* StepSourceName(StepSource source);  // "none", "auto", "magneton.step"

}  // namespace magneton
