// The metadata a recording writes beside its rows, at Start and at Stop:
// the run's own (times, directory, host, the re-run plan, the signature),
// what ran beside it (energy meters, the machine's load) and the recorder's
// counts. Kept apart from the per-op parts because none of it is on the
// per-op path and all of it is about the run as a whole.
#pragma once

#include "magneton/recorder.h"
#include "magneton/status.h"
#include "magneton/trace.h"
#include "magneton/trace_writer.h"

namespace magneton::record {

struct RecorderParts;

// The run's metadata as the trace stores it: what the caller left unset
// filled in (start times, working directory, host), the re-run plan
// redacted and the whole signed.
RunMetadata CompleteRunMetadata(const RunMetadata& meta);

// Starts the energy session (sample_energy) and the machine-load sampler;
// one that cannot start is said in the meta, and the recording goes on.
void StartBesideRecording(RecorderParts& parts, TraceWriter& writer, bool sample_energy);

// At Stop, once no hook is inside: the window's, the machine load's and the
// recorder's meta, in the order the trace has always had them; stops the
// energy session and returns how its Stop went.
Status WriteStopMeta(RecorderParts& parts, TraceWriter& writer, bool record_values);

}  // namespace magneton::record
