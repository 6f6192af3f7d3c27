// XLA's own profiler events for the jitted programs a JAX recording ran
// (`jax.profiler.start_trace(..., create_perfetto_trace=True)`, the
// perfetto_trace.json it writes: Chrome trace-event JSON), ingested at stop:
// every thunk XLA:CPU ran (a fusion, a dot, a copy: args hlo_module, hlo_op,
// run_id) becomes an op nested under the recorded op that executed it
// (`jax::jit(<function>)`, or an eager primitive), named `xla::<hlo_op>`, with
// what the optimised HLO module says it computes (hlo_text.h) as its args and
// the user's source line as the innermost frame of its call path.
// docs/JAX.md, "Jit mode"; docs/TRACE_FORMAT.md "XLA ops".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/recorder.h"
#include "magneton/status.h"
#include "record/xla_values.h"

namespace magneton {

struct XlaHostCall {  // "PjitFunction(<function>)": the jitted call as the profiler saw it
  std::string function;
  int64_t thread_id = 0;  // the profiler's thread id (not the OS id)
  int64_t start_ns = 0;   // profiler clock
  int64_t end_ns = 0;
};

struct XlaThunk {  // one thunk execution
  std::string module;  // "jit_mlp"
  std::string op;      // "ynn_fusion.7"
  std::string run_id;  // one execution of the module
  int64_t thread_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct XlaProfile {
  std::vector<XlaHostCall> calls;  // outermost ones only (the profiler nests two per call)
  std::vector<XlaThunk> thunks;
  std::map<std::string, int64_t> dropped;  // malformed events, by reason
};

StatusOr<XlaProfile> ParseXlaProfile(std::string_view json_text);

struct XlaIngestStats {
  int64_t host_calls = 0, thunks = 0, runs = 0;
  int64_t runs_linked = 0;        // nested under a recorded op
  int64_t runs_unlinked = 0;      // no recorded op held them (compile-time runs, unrecorded calls)
  int64_t runs_in_recorder_ops = 0;  // inside magneton::* ops (compile, warm-up): left out
  int64_t ops_written = 0;
  int64_t ops_with_source = 0;    // whose HLO metadata named a source line
  int64_t clock_paired = 0;
  int64_t clock_offset_ns = 0;
  std::string clock_method;
  XlaValueStats values;  // --values: the replayed calls' thunks (record/xla_values.h)
};

// Writes the thunks as ops (after flushing what is recorded, which it reads
// back), and `xla.*` meta. `hlo_texts`: the optimised modules of the
// recording (compiled.as_text()), several per name allowed (one per
// signature; an op is looked up in the first that has it). `replays`: the
// per-equation values of sampled calls (--values), linked to the thunks of
// the first run under each call's op.
StatusOr<XlaIngestStats> IngestXlaProfile(Recorder& rec, std::string_view json_text,
                                          const std::vector<std::string>& hlo_texts,
                                          const std::vector<XlaReplay>& replays = {});

}  // namespace magneton
