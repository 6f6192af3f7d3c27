// Line-level diagnosis (method.md section 7, docs/DIFF.md): both programs are
// re-run with the deviation-point function traced line by line; the first
// line where the two runs' executed-line sequences differ gives the branch,
// its condition gives the key variables, and a backward walk over the
// function's executed lines finds where the variable that differs came from:
// an argument, a config field, a global flag or an environment variable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "trace/line_trace_file.h"
#include "magneton/status.h"

namespace magneton::diagnose {

// The re-run's line trace (trace/line_trace_file.h), under the names the
// diagnosis uses.
using ::magneton::LineCall;
using ::magneton::LineTrace;
using ::magneton::LineTraceTarget;
using ::magneton::ReadLineTrace;
using ::magneton::WatchedValue;

// ---- Python source, just enough for conditions and assignments. ----
// Operands an expression reads: names, attribute chains
// ("self.config.use_cache"), constant subscripts and dict lookups
// (`kwargs["x"]`, `kwargs.get("x")`, `kwargs.pop("x", d)` -> `kwargs["x"]`),
// and environment lookups (`os.environ["X"]`, `os.environ.get("X")`,
// `os.getenv("X")` -> `env:X`). Callees, keywords, keyword-argument names and
// builtins are not operands. In first-appearance order, without duplicates.
std::vector<std::string> ExtractReferences(const std::string& expression);

enum class StatementKind { kIf, kElif, kWhile, kFor, kAssign, kReturn, kOther };
struct PyStatement {
  int64_t first_line = 0;
  int64_t last_line = 0;
  StatementKind kind = StatementKind::kOther;
  std::string text;       // the logical line, continuation lines joined
  std::string condition;  // if/elif/while: the condition; for: the iterable
  std::vector<std::string> targets;  // assigned names/chains (assign, for)
  std::vector<std::string> reads;    // operands of the condition / right-hand side / whole statement
  bool augmented = false;            // x += ...: x is read too
  bool short_circuit = false;        // a ternary or and/or decides part of it
};
// Parses one logical line (indentation ignored).
PyStatement ParseStatement(const std::string& text);

struct PyFunction {
  std::string file;
  std::string name;  // the def's name
  int64_t def_line = 0;
  int64_t end_line = 0;
  std::vector<std::string> params;  // without * and **, in order
  std::string var_positional;       // the *args parameter, "" if none
  std::string var_keyword;          // the **kwargs parameter, "" if none
  std::vector<PyStatement> statements;  // the body, in source order
  // The statement covering a line, or nullptr.
  const PyStatement* StatementAt(int64_t line) const;
};
// The function named `function` (a qualname's last part is used) whose body
// holds `line_inside`, from source lines (lines[0] is line `first_line`).
StatusOr<PyFunction> ParsePyFunction(const std::vector<std::string>& lines, int64_t first_line, int64_t line_inside,
                                     const std::string& function);
// The same from a file, if `roots` allow reading it (diagnose.h SourceRoots).
StatusOr<PyFunction> ReadPyFunction(const SourceRoots& roots, const std::string& file, int64_t line_inside,
                                    const std::string& function);
// The module-level assignment of `name` in a file's lines (1-based), 0 if none.
int64_t FindModuleAssignment(const std::vector<std::string>& lines, const std::string& name);

// What to watch while tracing a function: for each statement's first line,
// the operands it reads (and the parameters, at the first statement).
std::map<int64_t, std::vector<std::string>> WatchList(const PyFunction& fn);

// ---- Alignment of two runs' calls of one function. ----
struct LineDivergence {
  bool found = false;
  size_t call = 0;    // the n-th call of the function (both sides; calls are aligned in order)
  size_t event = 0;   // first index where the line sequences differ
  int64_t line_a = 0;  // the line each side ran there; -1 when that call had returned
  int64_t line_b = 0;
  int64_t branch_line = 0;  // the last line both ran before (0: they differ at entry)
  size_t calls_a = 0, calls_b = 0;
};
LineDivergence FirstDifferingLine(const std::vector<const LineCall*>& a, const std::vector<const LineCall*>& b);

// ---- Backward data flow to the origin of the key variable. ----
enum class OriginKind { kArgument, kConfigField, kGlobalFlag, kEnvVar, kAttribute, kUnknown };
const char* OriginKindName(OriginKind kind);  // argument, config_field, global_flag, env_var, attribute, unknown

struct FlowStep {
  std::string variable;  // the operand explained by this step
  int64_t line = 0;
  std::string text;      // the source statement there
  std::string how;       // "branch", "assigned", "assigned_on_one_side", "parameter", "module_level", ...
  std::string value_a;   // the operand's value on each side there ("" when not recorded)
  std::string value_b;
};
struct Origin {
  OriginKind kind = OriginKind::kUnknown;
  std::string name;   // parameter / field / flag / environment variable name
  std::string file;   // where it was set or defaulted
  int64_t line = 0;
  std::string value_a, value_b;
};

struct LineDiagnosis {
  bool found = false;
  // "branch": the runs executed different lines (the usual case);
  // "values": the same lines, but an operand of the statement at the
  // deviation point's line (or, failing that, of the first statement where
  // any watched value differs) has different values: a ternary, a shape.
  std::string mode;
  std::string note;  // why not, or caveats
  std::string function;  // "file:function"
  std::string file;
  LineDivergence divergence;
  std::string text_a, text_b;  // source of line_a / line_b
  std::string branch_text;
  std::string condition;
  std::vector<std::string> key_variables;  // condition operands whose values differ
  std::vector<FlowStep> chain;  // from the branch back to the origin
  Origin origin;
  std::string config_key;  // the config-snapshot key the origin maps to ("" if none)
  int frame_distance = 0;  // 0: the deviation-point function; k: its k-th caller
  int frames_traced = 0;
};

// The analysis over both sides' traces of one function; `focus_line` is the
// deviation point's line in it (0: none), used when the lines are the same.
LineDiagnosis AnalyzeLineTraces(const PyFunction& fn, const LineTrace& a, const LineTrace& b, int64_t focus_line = 0,
                                int target = 0);

// One function on the call path to the deviation point, as traced.
struct TracedFrame {
  PyFunction fn;
  int64_t focus_line = 0;  // the recorded frame's line: the call into the next frame (or the op)
  int target = 0;          // its index in the line traces' targets
};
// Analyses the deviation-point function (frames[0]) and, while the variable
// that differs comes in as an argument that no config entry names, its
// callers outwards (frames[1], ...): the first result whose origin is a config
// field, a global flag, an environment variable or an argument that maps to a
// config entry; else the innermost result found.
LineDiagnosis AnalyzeCallPath(const std::vector<TracedFrame>& frames, const LineTrace& a, const LineTrace& b,
                              const std::vector<ConfigDifference>& diffs);

// The config-snapshot entry the origin corresponds to, by identifier and
// source (argument -> call_arg, config field -> model_config, env var -> env,
// global flag -> global_flag); for an environment variable the snapshot does
// not hold, an entry made from the traced values.
bool MapOriginToConfig(const Origin& origin, const std::vector<ConfigDifference>& diffs, ConfigDifference* out);

// Attaches the line-level result to a diagnosis: the config entry the origin
// maps to becomes the top candidate (what --confirm flips), and the sentence
// names the variable, where it was set and its value on each side.
void ApplyLineDiagnosis(LineDiagnosis line, const std::vector<ConfigDifference>& diffs, Diagnosis* d);
// The line trace's part of the sentence (" Line trace: ..."), "" without a result.
std::string LineSentence(const LineDiagnosis& line);

}  // namespace magneton::diagnose
