// Per-thunk values of a jitted call (record --values in JAX jit mode): the
// recorder replays a sampled call's jaxpr equation by equation on the call's
// recorded inputs, after the timed run (python/magneton/recorders/
// jax_jit_values.py), and hands each equation's output fingerprint here with
// the HLO op_name it lowers to ("jit(mlp)/tanh") and its source line. This
// maps them onto the optimised module's entry instructions, the thunks XLA
// ran (a fusion's value is its root instruction's), and links each xla:: op
// of that call to its output values and to its operands' (another thunk's
// output, or the call's own argument), so the call has dataflow inside.
// docs/JAX.md "Per-fusion values".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "magneton/recorder.h"
#include "magneton/status.h"
#include "magneton/trace.h"
#include "record/hlo_text.h"

namespace magneton {

struct XlaReplayValue {  // one equation output of the replay
  std::string op_name;   // as the HLO metadata spells it: "jit(mlp)/jit(inner)/tanh"
  std::string source;    // "file:line" of the user's frame, or ""
  std::vector<int64_t> shape;
  std::string dtype;        // "float32"
  std::string fingerprint;  // Recorder::EncodeValueFingerprint
};

struct XlaReplay {  // one replayed call
  int64_t op_id = kNoId;  // its jax::jit(...) op
  std::string module;     // its HLO module ("jit_mlp")
  std::vector<XlaReplayValue> values;  // in equation order
  // The op's input slot of each argument of the call's jaxpr (-1: none);
  // empty: argument i is input slot i. A call recorded around JAX's fast
  // path (jax_jit_wrap.py) has the call's argument leaves as inputs, static
  // arguments among them.
  std::vector<int64_t> input_slots;
};

struct XlaValueStats {
  int64_t calls = 0;              // replayed calls whose run was found
  int64_t ops_with_values = 0;    // xla:: ops given at least one output
  int64_t ops_without = 0;        // thunks of those runs left without (no equation matched, inside a loop)
  int64_t inputs_linked = 0;
};

// The tensors of one call op as the trace holds them, by slot (kNoId: none).
struct CallTensors {
  std::vector<int64_t> inputs, outputs;
};
// The same from an op's links not yet written (a held jitted call,
// Recorder::HoldOp).
CallTensors CallTensorsOf(const std::vector<OpTensor>& links);
StatusOr<std::map<int64_t, CallTensors>> ReadCallTensors(const std::string& trace_path,
                                                         const std::vector<int64_t>& op_ids);

// The links of each thunk of one run of `replay`'s call (thunk_names[i],
// written as op thunk_op_ids[i]): new tensors (fingerprinted) for the values
// the call does not return, the call's own tensors for its arguments and
// results. Matching: an instruction's result takes the first equation value
// not yet taken with the same op_name, source line and shape, in the
// module's scheduled order (repeated layers at one line match in order).
std::vector<std::vector<OpTensor>> XlaValueLinks(Recorder& rec, const XlaReplay& replay, const HloModuleInfo& module,
                                                 const CallTensors& call, const std::vector<std::string>& thunk_names,
                                                 const std::vector<int64_t>& thunk_op_ids, XlaValueStats* stats);

}  // namespace magneton
