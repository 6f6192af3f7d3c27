// The recorder's side of windowed recording: window.h decides which steps
// are recorded; this applies it to one session (docs/ARCHITECTURE.md,
// "Windowed recording"): it opens and closes the flag hooks read
// (Recorder::WindowOpen), writes the closed spans and the step marks as
// recorder ops, forgets the values seen before a closed span, and writes the
// window.* meta at Stop. Its own lock; off the per-op path (steps, the time
// gate), so hooks read only the flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "magneton/recorder.h"
#include "magneton/status.h"
#include "record/window.h"

namespace magneton::record {

class TensorIdentity;

class RecorderWindow {
 public:
  // rec: the session it writes recorder ops to; tensors: forgets every
  // value when the window closes; open: the flag hooks read.
  RecorderWindow(Recorder* rec, TensorIdentity* tensors, std::atomic<bool>* open)
      : rec_(rec), tensors_(tensors), open_(open) {}
  RecorderWindow(const RecorderWindow&) = delete;
  RecorderWindow& operator=(const RecorderWindow&) = delete;

  // Recorder::ConfigureWindow, Step, SetTimeGate (recorder.h).
  Status Configure(const std::string& schedule, bool time_gate_open);
  bool Step(bool explicit_call);
  bool SetTimeGate(bool open);
  // At Stop: a closed span up to now, and the window.* meta.
  void WriteStopMeta();

 private:
  bool IsOpen() const { return open_->load(std::memory_order_relaxed); }
  // Opens or closes the window as window_ says (mu_ held).
  void ApplyLocked(int64_t now_ns);
  void WriteRecorderOp(std::string_view name, int64_t start_ns, int64_t end_ns, std::string args);

  Recorder* const rec_;
  TensorIdentity* const tensors_;
  std::atomic<bool>* const open_;
  std::mutex mu_;
  std::unique_ptr<RecordWindow> window_;  // created by Configure or the first Step
  int64_t closed_since_ns_ = 0;
  int64_t closed_at_step_ = 0;
  int64_t steps_recorded_ = 0;
  int64_t gaps_ = 0;
  bool configured_ = false;  // Configure was called (--window, --start-after, --duration)
};

}  // namespace magneton::record
