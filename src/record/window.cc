#include "record/window.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

namespace magneton {

StatusOr<WindowSchedule> ParseWindowSchedule(std::string_view text) {
  std::vector<int64_t> values;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = text.substr(pos, comma - pos);
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 0) {
      return InvalidArgument(fmt::format("--window {:?}: expected wait,warmup,active[,repeat] in steps, each a "
                                         "non-negative integer (e.g. 5,1,3 or 5,1,3,2)",
                                         std::string(text)));
    }
    values.push_back(v);
    pos = comma + 1;
  }
  if (values.size() < 3 || values.size() > 4) {
    return InvalidArgument(fmt::format("--window {:?}: expected 3 or 4 numbers (wait,warmup,active[,repeat]), got {}",
                                       std::string(text), values.size()));
  }
  if (values[2] < 1) return InvalidArgument(fmt::format("--window {:?}: active (wait,warmup,active[,repeat]) must be at least 1 step", std::string(text)));
  return WindowSchedule{values[0], values[1], values[2], values.size() == 4 ? values[3] : 0};
}

std::string FormatWindowSchedule(const WindowSchedule& s) {
  return fmt::format("wait={},warmup={},active={},repeat={}", s.wait, s.warmup, s.active, s.repeat);
}

bool StepIsActive(const WindowSchedule& s, int64_t step) {
  const int64_t cycle = s.wait + s.warmup + s.active;
  if (step < 0 || cycle <= 0) return false;
  if (s.repeat > 0 && step >= cycle * s.repeat) return false;
  return step % cycle >= s.wait + s.warmup;
}

RecordWindow::RecordWindow(std::optional<WindowSchedule> schedule, bool time_gate_open)
    : schedule_(std::move(schedule)), time_gate_open_(time_gate_open) {}

bool RecordWindow::OnStep(bool explicit_call) {
  if (!explicit_call && source_ == StepSource::kExplicit) return false;
  if (explicit_call && source_ == StepSource::kAuto) {
    // The program counts its own steps from here: those counted for it so far
    // (an optimizer step beside each magneton.step() would count twice) are
    // replaced by its count, which is 1 after this call.
    step_ = 0;
  }
  source_ = explicit_call ? StepSource::kExplicit : StepSource::kAuto;
  ++step_;
  return true;
}

const char* StepSourceName(StepSource source) {
  switch (source) {
    case StepSource::kNone: return "none";
    case StepSource::kAuto: return "auto";
    case StepSource::kExplicit: return "magneton.step";
  }
  return "?";
}

}  // namespace magneton
