// The optimised HLO module as XLA prints it (`compiled.as_text()` in JAX):
// what each instruction that runs as one thunk (a fusion, a custom call, a
// copy) computes, in the primitives of the program it came from and at the
// user's source lines, read from the instructions' metadata. The text is the
// compiler's output for the traced program; it is parsed, never evaluated.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace magneton {

struct HloOpInfo {
  std::string opcode;       // "fusion", "dot", "custom-call"
  std::string fusion_kind;  // "kLoop", "kCustom"; "" when not a fusion
  // The JAX primitives folded into it (the last part of each op_name of the
  // instruction and of the computation it calls: "dot_general", "tanh"), in
  // first-seen order, once each.
  std::vector<std::string> primitives;
  // "file:line:function" of each source location its metadata names, the
  // instruction's own first (stack_frame_id, or source_file/source_line).
  std::vector<std::string> sources;
};

// What one entry-computation instruction computes from what, for mapping
// values onto XLA's ops (record/xla_values.h): its operands by name, and
// the instruction(s) whose values it returns (a fusion's root, the
// operands of a multi-output fusion's root tuple; itself otherwise), each
// with its metadata's op_name ("jit(mlp)/tanh") and "file:line".
struct HloFlowResult {
  std::string op_name;
  std::string source;          // "file:line", "" when the metadata names none
  std::vector<int64_t> dims;   // the result's shape ("f32[2,4]{1,0}" -> 2,4)
};

struct HloEntryInstruction {
  std::string name, opcode;
  std::vector<std::string> operands;  // instruction names
  int64_t parameter_number = -1;      // parameter(k)
  int64_t tuple_index = -1;           // get-tuple-element's index
  bool root = false;
  std::vector<HloFlowResult> results;
};

struct HloModuleInfo {
  std::string name;                        // "jit_mlp"
  std::map<std::string, HloOpInfo> ops;    // by instruction name ("ynn_fusion.7"), every computation
  std::vector<HloEntryInstruction> entry;  // the ENTRY computation, in the module's (scheduled) order
};

// Never fails: what it cannot read is left out (an empty module name when
// the first line is not "HloModule <name>").
HloModuleInfo ParseHloText(std::string_view text);

}  // namespace magneton
