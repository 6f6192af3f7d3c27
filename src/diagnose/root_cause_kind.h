// The kinds of root cause (docs/REPORT_FORMAT.md, "RootCause") and their one
// name table; the strengths of the evidence for one, and theirs. The names are the report format's contract: the JSON, the
// terminal and HTML reports, `magneton eval`'s expected.json and its scoring
// all go through this table, and a test checks the document lists exactly
// these names.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "magneton/status.h"

namespace magneton::diagnose {

enum class RootCauseKind {
  kNone,          // no evidence points at a cause (no name; the JSON says null)
  kConfig,        // a config entry: model config, global flag
  kCallArg,       // an argument passed to a call
  kEnvVar,        // an environment variable
  kRuntimeState,  // a state in effect for the region's ops
  kApiChoice,     // other APIs / ops for the same values, or the same API choosing another kernel
  kDtypeLayout,   // same ops on another dtype, memory layout or device
  kDataShape,     // same ops, larger inputs
  kCodePath,      // extra work the other side skips
  kVersion,       // a library version
};

// "config", "call_arg", ...; "" for kNone.
const char* RootCauseKindName(RootCauseKind kind);
// The inverse: InvalidArgument naming the accepted names for any other
// string ("" included).
StatusOr<RootCauseKind> ParseRootCauseKind(const std::string& name);
// Every kind with a name, in the table's order.
const std::vector<RootCauseKind>& AllRootCauseKinds();
// "config, call_arg, ... or version": for messages.
std::string RootCauseKindList();
// The name ("<none>" for kNone): for messages and gtest.
std::ostream& operator<<(std::ostream& os, RootCauseKind kind);

// How directly the evidence ties a proposed cause to the finding's ops
// (root_cause_rules.h), weakest first: the stronger proposal is the cause.
enum class CauseStrength {
  kNone,
  // A setting that differs and reaches every op (global flag, env var,
  // runtime entry); nothing else points anywhere.
  kReachesEveryOp,
  // Inferred from the two op sequences: ops substituted or extra, or a
  // differing entry given to the one call that issues both sides' ops.
  kOpSequence,
  // The same ops, measured different: other nested kernels, another dtype /
  // layout, larger inputs.
  kOpContrast,
  // On the path that issued the ops: a keyword the issuing line passes, the
  // version of the package the ops ran inside.
  kIssuingPath,
  // Named in the source where the call paths diverge, or a few frames out.
  kNamedAtDeviation,
  // The line trace followed the deciding branch back to it.
  kLineTrace,
  // The ops ran under it (a runtime state) or inside what it built (a
  // constructor's argument).
  kDirect,
};
// "direct", "line_trace", "deviation_point", "issuing_path", "op_contrast",
// "op_sequence", "reaches_every_op"; "" for kNone.
const char* CauseStrengthName(CauseStrength strength);
std::ostream& operator<<(std::ostream& os, CauseStrength strength);

}  // namespace magneton::diagnose
