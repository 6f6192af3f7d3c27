// Root-cause diagnosis (method.md section 7) of each flagged finding: the two
// sides' op sequences, the source lines that issued the costly ops, the
// deviation point of the call paths, and the config entries that differ,
// ranked by whether the code at the deviation point reads them. Ends in one
// sentence a developer can act on.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "detect/detect.h"
#include "diagnose/root_cause_kind.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::diagnose {

// "file:line:function" split; the file may itself contain ':'.
struct FrameRef {
  std::string file;
  int64_t line = 0;
  std::string function;
  std::string text;  // the original "file:line:function"
};
FrameRef ParseFrame(const std::string& text);
// Frames inside torch, transformers and other installed packages.
bool IsLibraryFrame(const FrameRef& frame);
// A frame that only passes a call on (a decorator's wrapper, nn.Module's
// __call__ machinery, functools/contextlib): never a site's api_frame.
bool IsPassThroughFrame(const FrameRef& frame);

// Where the ops of one side came from: the innermost frame outside library
// code (the developer's line) and the innermost frame overall.
struct SourceSite {
  std::string user_frame;     // "" when every frame is library code
  std::string library_frame;  // the innermost frame
  // The library function the user's line called (the frame right inside
  // user_frame, e.g. jax/_src/scipy/linalg.py:…:expm); "" when the user's
  // line is the innermost frame or there is no user frame.
  std::string api_frame;
  std::vector<std::string> op_names;  // distinct op names issued there
  int op_count = 0;
  int64_t duration_ns = 0;  // the ops' own spans, summed: what orders the sites
};

struct ConfigDifference {
  std::string key;
  std::string value_a;  // "<absent>" when only the other side has the key
  std::string value_b;
  std::string source;   // call_arg, model_config, env, global_flag, runtime
};
// Entries whose value differs or that only one side has, in key order.
std::vector<ConfigDifference> DiffConfig(const Trace& a, const Trace& b);

struct SourceSnippet {
  std::string file;
  int64_t first_line = 0;  // 1-based number of lines[0]
  int64_t focus_line = 0;
  std::vector<std::string> lines;
};
// The files a report may read source lines from (docs/TRACE_FORMAT.md, "What
// a trace contains"): Python source files (.py, regular files once links are
// resolved) under the roots. A trace names frame files; it never makes a
// report read /etc/shadow or ~/.ssh/id_rsa. Which roots a report gets is the
// caller's choice (analysis/source_access.h): for a trace that does not
// verify as this user's own, only the directory `magneton diff` runs in and
// --source-root folders; never `/` or $HOME itself. Every file a check lets
// through is noted (files_read), so the report lists what went into it.
class SourceRoots {
 public:
  SourceRoots() = default;  // no roots: nothing may be read
  // The recorded program's own roots: meta `cwd` and `python.sys_path`.
  static SourceRoots Of(const Trace& trace);
  static SourceRoots Of(const Trace& a, const Trace& b);  // both programs' roots
  // A folder; one that does not exist, `/` or $HOME itself is left out.
  void Add(const std::string& dir);
  // The folders a trace names for its program: meta `cwd` and `python.sys_path`.
  void AddFoldersOf(const Trace& trace);
  // The same for a folder the user named (--source-root): InvalidArgument
  // saying why when it is left out.
  Status AddExplicit(const std::string& dir);
  // The resolved path of `file` when a report may read it, else why not.
  StatusOr<std::string> Check(const std::string& file) const;
  const std::vector<std::string>& dirs() const { return dirs_; }
  // The resolved files Check let through so far, sorted (shared by copies).
  std::vector<std::string> files_read() const;

 private:
  std::vector<std::string> dirs_;  // canonical
  std::shared_ptr<std::set<std::string>> read_ = std::make_shared<std::set<std::string>>();
};

// The lines [line - before, line + after] of a file, if `roots` allow it and
// it exists on disk.
bool ReadSourceWindow(const SourceRoots& roots, const std::string& file, int64_t line, int before, int after,
                      SourceSnippet* out);

struct DeviationPoint {
  bool found = false;
  // The last frame the two call paths share (a function; when both sides are
  // in the same function at different lines, that function, with both lines).
  std::string frame_a;
  std::string frame_b;
  std::vector<std::string> common_path;  // outermost first, up to the deviation point
  std::string op_a;  // the ops whose call paths were compared
  std::string op_b;
  SourceSnippet snippet;  // around frame_a, when the file is on disk
};
DeviationPoint FindDeviationPoint(const std::vector<std::string>& path_a, const std::vector<std::string>& path_b);

struct Candidate {
  ConfigDifference config;
  std::string name;  // the identifier searched for in source, e.g. "use_cache"
  // 0: named in the deviation-point function's source; k: named in the k-th
  // frame outwards from it; -1: not found in any frame's source.
  int frame_distance = -1;
  std::string evidence;  // "file:line: text" of the first line naming it
};
// Config differences ranked: found nearest the deviation point first, then
// call arguments, model config, env, global flags.
std::vector<Candidate> RankCandidates(const std::vector<ConfigDifference>& diffs, const DeviationPoint& deviation,
                                      const SourceRoots& roots, int window_lines = 60);

struct LineDiagnosis;  // diagnose/line_diagnosis.h

enum class Kind { kDifferentOps, kSameOpsDifferentCost, kSameApiDifferentKernel, kOutsideOps };
// "different_ops", "same_ops_different_cost", "same_api_different_kernel", "outside_ops"
const char* KindName(Kind kind);

// The structured root cause of a finding (docs/REPORT_FORMAT.md, "RootCause";
// the contract with `magneton eval`). Values are A's and B's, not costly /
// cheap. kind kNone when no evidence points at a cause.
struct RootCause {
  RootCauseKind kind = RootCauseKind::kNone;  // root_cause_kind.h: the names
  std::string name;  // the thing to change: flag, argument, env var, state key, API, op or function
  std::string value_a, value_b;
  std::string where;     // "file:line" to change, "" when unknown
  std::string evidence;  // one line: why this is the cause
  CauseStrength strength = CauseStrength::kNone;  // of the rule's evidence (root_cause_rules.h)
  bool found() const { return kind != RootCauseKind::kNone; }
};

// A runtime state key (Trace::runtime_states) whose value in effect for the
// region's ops differs between the sides (runtime_state_diff.cc).
struct StateDifference {
  std::string key;
  std::string value_a, value_b;  // "<absent>" when that side's state lacks the key
  std::string where;             // "file:line" of the call that set the costly side's value (else the
                                 // cheaper side's), "" when no setter was recorded
  char setter_side = 0;          // 'A', 'B' or 0: whose setter `where` is
  int ops_a = 0, ops_b = 0;      // region ops under the compared state on each side
};
// The state in effect for most of each side's region ops (by op time),
// compared key by key; keys of a framework the other side never recorded
// (JAX vs PyTorch) are left out. Empty when either side recorded no states.
std::vector<StateDifference> DiffRuntimeStates(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                                               const std::vector<int64_t>& ops_b, char costly_side);

// Same top-level ops, different nested ops or device kernels under one of
// them (kernel_contrast.cc): the API chose another implementation.
// A keyword argument the two programs pass differently to the same callee
// on the lines that issued a region's ops (call_args.cc). "<default>": not
// given on that side.
struct CallArgDifference {
  std::string callee;  // as written: "torch.linalg.svd"
  std::string name;    // the keyword: "full_matrices"
  std::string value_a, value_b;
  std::string where;   // file:line of the costlier side's call
};
// The differences between two source lines' calls: the k-th call of a callee
// on one line pairs with the k-th call of the same callee on the other.
std::vector<CallArgDifference> ContrastCallArgs(const std::string& line_a, const std::string& line_b);
// The constructor arguments of the modules the costly side's region ops ran
// in (Scope::init_args) against those of the module at the same scope path
// and class anywhere in the other trace (constructor_args.cc): callee is the
// class ("DistributedDataParallel"), where the costly side's constructing
// line. The scope with the most region op time first.
std::vector<CallArgDifference> ContrastConstructorArgs(const Trace& a, const std::vector<int64_t>& ops_a,
                                                       const Trace& b, const std::vector<int64_t>& ops_b,
                                                       char costly_side);

struct KernelContrast {
  bool found = false;
  std::string op;  // the top-level op whose nested work differs
  std::vector<std::string> nested_a, nested_b;  // its nested op names (then "kernel:" device kernels), start order
};
// Pairs the two sides' region ops by position (their names must be equal)
// and returns the costliest pair on inputs of the same shapes and dtypes whose
// nested sequences differ (other shapes take other paths by themselves).
KernelContrast ContrastKernels(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                               const std::vector<int64_t>& ops_b, char costly_side);

// Same ops on another dtype, memory layout or device (layout_contrast.cc),
// and where the costly side's tensor got it: the walk back along the
// dataflow to the op that produced the first tensor of that dtype / layout.
struct LayoutContrast {
  bool found = false;
  std::string op;          // the region op whose input differs
  std::string attribute;   // "dtype", "layout" or "device"
  std::string value_a, value_b;
  std::string producer_op;   // the top-level op that made the costly tensor ("" : no op made it)
  std::string producer_api;  // its Python API (Tensor.double, Tensor.to, torch.permute, torch.from_numpy, ...)
  std::string where;         // "file:line" of the producer's user frame ("" unknown)
  std::string text;          // one line for the sentence
};
LayoutContrast ContrastLayouts(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                               const std::vector<int64_t>& ops_b, char costly_side);
// "contiguous", "channels_last", "strided" (a non-row-major view), "" for no shape.
std::string LayoutOf(const TensorMeta& t);

// Which input dimension grew, found by walking back from the region's ops to
// the integer tensors where data enters (no op made them, or a factory such as
// torch.zeros did: token ids, positions): batch_size
// (axis 0 of a 2-d+ input), sequence_length (the last axis) or input_shape.
struct ShapeCause {
  bool found = false;
  std::string name;
  std::string value_a, value_b;
  std::string where;  // "file:line" of the first op reading the costly side's input
};
ShapeCause FindShapeCause(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                          const std::vector<int64_t>& ops_b, char costly_side);

// Python API names (api_names.cc): "aten::linalg_eigvals" -> "torch.linalg.eigvals",
// "aten::sort.stable" -> "torch.sort", "jax::dot_general" -> "jax.lax.dot_general".
std::string ApiOfOp(const std::string& op_name);
// A library frame as a dotted function: ".../site-packages/jax/_src/scipy/linalg.py:1427:expm" ->
// "jax._src.scipy.linalg.expm"; outside installed packages just the function.
std::string ApiOfFrame(const std::string& frame);
// "file:line" of a "file:line:function" frame ("" for "").
std::string FileLine(const std::string& frame);

struct Diagnosis {
  size_t finding_index = 0;  // into DetectResult::findings
  Kind kind = Kind::kSameOpsDifferentCost;
  std::vector<SourceSite> sites_costly;     // where the costlier side issued its region ops
  std::vector<SourceSite> sites_efficient;  // the same for the cheaper side
  DeviationPoint deviation;
  std::vector<Candidate> candidates;
  // When the costlier side's region ops read clearly more input elements
  // (>= 1.1x) than the other side's: by how much, with an example op; "".
  std::string shapes;
  // Evidence for the root cause (root_cause.cc), each empty when it does not apply.
  std::vector<StateDifference> states;       // runtime state in effect for the region's ops
  std::vector<CallArgDifference> call_args;  // keyword arguments that differ on the lines issuing the region's ops
  std::vector<CallArgDifference> constructor_args;  // arguments of the modules the region's ops ran in that differ
  std::vector<ConfigDifference> versions;    // library versions that differ, of packages the region's ops ran in
  KernelContrast kernel;                     // kind kSameApiDifferentKernel
  LayoutContrast layout;                     // same ops, another dtype / layout / device
  ShapeCause shape_cause;                    // same ops, larger inputs: which dimension
  std::vector<std::string> only_costly;      // op names only the costlier side runs (different ops)
  std::vector<std::string> only_cheap;       // op names only the cheaper side runs
  std::string costly_op;                     // the costliest op of the costlier side's differing ops
  std::string count_op;  // same op names, different counts: the name whose count differs most
  char costly_side = 'A';
  RootCause root_cause;
  // The other causes the rules proposed (root_cause_rules.h), strongest
  // first: the runners-up a report lists beside the cause.
  std::vector<RootCause> cause_alternatives;
  // What happens (no cause): the sentence is this, then the cause, then the line trace.
  std::string situation;
  std::string sentence;
  // The line-level re-run's result (diagnose/line_diagnosis.h), when diff
  // re-ran both programs; null otherwise.
  std::shared_ptr<const LineDiagnosis> line;
};

struct Options {
  // Where source snippets may come from; null: the traces' own roots
  // (SourceRoots::Of(a, b)), for callers that analyse their own recordings.
  const SourceRoots* source_roots = nullptr;
  size_t max_sites = 4;
  int window_lines = 60;
  bool include_equal = false;  // diagnose "equal" findings too
};

// The input-size contrast of Diagnosis::shapes (shape_contrast.cc). The
// "same work on larger shapes" reading is added only when `same_ops` (both
// sides run the same op names): for different ops it is not evidence.
std::string ShapeContrast(const Trace& costly, const std::vector<int64_t>& costly_ops, const Trace& cheap,
                          const std::vector<int64_t>& cheap_ops, char costly_side, char cheap_side,
                          bool same_ops = true);

// The root cause from the diagnosis's evidence (root_cause.cc): every rule of
// root_cause_rules.h proposes causes with a strength, the strongest wins (in
// order: a runtime state in effect for the region's ops or a constructor's
// argument; a config entry the line trace followed or named near the
// deviation point; the issuing line's keyword or the version of a package the
// ops ran in; a kernel, dtype / layout or shape contrast of the same ops; ops
// substituting each other (api_choice) or extra ops (code_path); a differing
// setting that reaches every op). Never from a case's name.
RootCause ChooseRootCause(const Diagnosis& d);
// "runtime_state `torch.num_threads` (A: 1, B: 4) at x.py:3 — why": one line.
std::string RootCauseLine(const RootCause& cause);
// "strength: op_contrast; runners-up: runtime_state `x` (direct), …": the
// chosen cause's strength and up to `max_alternatives` others ("" without a
// cause).
std::string CauseStrengthLine(const Diagnosis& d, size_t max_alternatives);
// Sets root_cause and cause_alternatives and recomposes the sentence (situation, cause, line trace);
// called by Diagnose and again after the line trace changed the candidates.
void FinishDiagnosis(Diagnosis* d);

// One diagnosis per waste and trade-off finding, in the findings' order.
std::vector<Diagnosis> Diagnose(const Trace& a, const Trace& b, const detect::DetectResult& result,
                                const Options& options = {});

}  // namespace magneton::diagnose
