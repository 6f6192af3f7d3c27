// What a Recorder is made of: one part per job, each with its own state and
// its own lock where it has one. include/magneton/recorder.h declares only
// the facade hooks call (and the few flags they read inline); the parts are
// private to record/, so a change to one rebuilds no hook and no part's state
// is reachable from outside the recorder.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "magneton/recorder.h"
#include "magneton/trace_writer.h"
#include "record/energy_session.h"
#include "record/fingerprint_cache.h"
#include "record/intern_tables.h"
#include "record/machine_load.h"
#include "record/op_stacks.h"
#include "record/recorder_window.h"
#include "record/tensor_identity.h"

namespace magneton::record {

struct RecorderParts {
  // The flags are the facade's (read inline by hooks); the parts that set
  // them get their address.
  RecorderParts(Recorder* rec, TraceWriter* writer, uint64_t generation, bool record_values,
                std::atomic<int64_t>* next_op_id, std::atomic<bool>* window_open, std::atomic<bool>* sweep_due)
      : intern(writer),
        fingerprints(writer, next_op_id),
        tensors(writer, &fingerprints, sweep_due, record_values),
        ops(writer, generation, next_op_id),
        window(rec, &tensors, window_open) {}

  InternTables intern;
  FingerprintCache fingerprints;
  TensorIdentity tensors;  // after fingerprints: it drops their entries
  OpStacks ops;
  RecorderWindow window;  // after tensors: closing it forgets their values
  // What runs beside the recording from Start to Stop (recorder_meta.cc).
  std::unique_ptr<EnergySession> energy;
  // /proc/stat and this process's CPU time from Start: the machine's load
  // over the recording is written at Stop (record/machine_load.h). Null when
  // it could not start (Start wrote machine.load_error).
  std::unique_ptr<LoadSampler> load_sampler;
};

}  // namespace magneton::record
