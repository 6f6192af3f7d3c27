// TensorFlow's profiler events for the tf.function calls a recording ran
// (`tf.profiler.experimental` started by tf_recorder.py, its XSpace
// converted by TF to Chrome trace-event JSON with "trace_viewer@"),
// ingested at stop: every graph node TF's executor ran (one `ph:"X"` event on
// a tf_Compute thread, args group_id = the function call, long_name =
// "node:OpType") becomes an op `tf::<OpType>` nested in the recorded
// `tf::function:<f>` op of its call, with its node name in the args and no
// tensors. A jit_compile=True function runs as one XLA executable instead:
// its thunks (args hlo_op, hlo_module, on the calling thread inside the
// call) become `xla::<hlo_op>` ops nested the same way. docs/TENSORFLOW.md, "tf.function graphs"; docs/TRACE_FORMAT.md
// "TensorFlow graph ops".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "magneton/recorder.h"
#include "magneton/status.h"

namespace magneton {

struct TfCall {  // "EagerLocalExecute: __inference_<f>_<n>" on the calling (Python) thread
  std::string graph;     // "__inference_f_18"
  std::string function;  // "f": the recorded op is tf::function:<f>
  int64_t thread_id = 0;  // the profiler's thread id (not the OS id)
  int64_t start_ns = 0;   // profiler clock
  int64_t end_ns = 0;
};

struct TfFunctionRun {  // "FunctionRun" on the calling thread, inside its call: names the call's group
  int64_t group_id = 0;
  int64_t thread_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct TfNode {  // one execution of a graph node by TF's executor (any thread), or of an XLA thunk
  std::string op_type;  // "_MklMatMul", "BiasAdd"; an XLA thunk's HLO op ("MatMul.2")
  std::string node;     // "MatMul" ("" when the profile did not name it)
  bool xla = false;     // a thunk of a jit_compile=True function's XLA executable (no group_id: on the call's thread)
  std::string hlo_module;
  int64_t group_id = 0;
  int64_t thread_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct TfProfile {
  std::vector<TfCall> calls;
  std::vector<TfFunctionRun> runs;
  std::vector<TfNode> nodes;
  std::map<std::string, int64_t> dropped;  // malformed events, by reason
};

// "__inference_step_123" -> "step" (as tf_recorder.py names the call op); ""
// when the name is not a traced function's.
std::string TfFunctionName(std::string_view graph);

StatusOr<TfProfile> ParseTfProfile(std::string_view json_text);

struct TfIngestStats {
  int64_t calls = 0, runs = 0, nodes = 0;
  int64_t calls_linked = 0;   // paired with a recorded tf::function op
  int64_t nodes_written = 0;  // as ops, nested in their call's op (no tensors)
  int64_t nodes_unlinked = 0;  // their group had no call, or the call no recorded op
  int64_t clock_paired = 0;
  int64_t clock_offset_ns = 0;
  std::string clock_method;
};

// Writes the nodes as ops (after flushing what is recorded, which it reads
// back), and `tf.profile.*` meta.
StatusOr<TfIngestStats> IngestTfProfile(Recorder& rec, std::string_view json_text);

}  // namespace magneton
