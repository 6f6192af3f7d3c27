// What a collective or point-to-point op (`c10d::*`) communicates, written
// into its op arguments next to the positional ones (docs/TRACE_FORMAT.md
// "Collectives"): the process group it runs in, the bytes of the tensors it
// is given and the peers it names. Torch's ProcessGroup object tells its
// name, size and this process's rank in it; which global ranks belong to a
// group only Python knows (`dist.get_process_group_ranks`), so the Python
// recorder notes them here when a group is created.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/op_args.h"

namespace magneton {

// "c10d::allreduce_", "c10d::send", …: the ops torch.distributed dispatches.
inline bool IsCollectiveOpName(std::string_view name) { return name.rfind("c10d::", 0) == 0; }

// Writes, inside an open params object, the keys after "args": "group",
// "group_desc", "group_size", "group_rank", "backend" and, when noted,
// "group_ranks" (from the op's ProcessGroup argument); "reduce_op"; "bytes"
// (the nbytes of every strided tensor argument, inputs and output buffers);
// "peers" (the group ranks the op's `dst`, `src` or `root_rank` argument
// names). Never throws: a fact torch does not give is left out.
void WriteCollectiveFacts(const at::RecordFunction& fn, OpArgsWriter& w);

// The global ranks of a process group, by group name (thread-safe).
void NoteProcessGroupRanks(const std::string& group_name, std::vector<int64_t> global_ranks);
void ClearProcessGroupRanks();

// The class of a TorchScript / torchbind object argument ("ProcessGroup"),
// for {"unrecorded": …}; "" when the value is not such an object.
std::string ObjectClassName(const c10::IValue& iv);

}  // namespace magneton
