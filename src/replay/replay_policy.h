// Which recorded ops `magneton replay` may call (issue 33, "a shared trace is
// data, never code"). A trace names its ops by string; the dispatcher would
// call any registered op by that name (aten::from_file writes files,
// aten::_print prints, c10d ops talk to the network). Replay calls an op only
// when both hold:
//  - its name passes CheckReplayOpName: namespace `aten`, not on the denylist
//    (I/O, printing, RNG state, streams, profiler, sync and assertions), and a
//    `_`-private name only when it is on the allowlist of pure kernels;
//  - its schema passes the structural check in torch_hook/replay.cc
//    (CheckReplaySchema): no str argument outside a few enum-like
//    parameters, no Storage/Stream/Generator/object argument, and every
//    argument the op writes (alias annotation `!`) is a tensor replay
//    allocated itself (replay regenerates every tensor input; none comes
//    from the caller or the trace).
// A refused op is skipped with a line that names it and why (kRefusedPrefix).
#pragma once

#include <string>
#include <string_view>

#include "magneton/status.h"

namespace magneton::replay {

// Every refusal's message starts with this; the table counts them.
inline constexpr std::string_view kRefusedPrefix = "refused: ";

// "aten::addmm", "aten::add.Tensor": Ok, or PermissionDenied("refused: ...").
Status CheckReplayOpName(const std::string& name);

// A `str` argument the op may take on replay: an enum spelled as a string
// (gelu's approximate='tanh', div's rounding_mode, einsum's equation), whose
// value is a short token of [A-Za-z0-9_,.>-] and spaces.
bool ReplayAllowsStringArg(const std::string& op_base_name, const std::string& arg_name, const std::string& value);

}  // namespace magneton::replay
