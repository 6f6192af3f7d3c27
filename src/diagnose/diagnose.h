// Root-cause diagnosis (method.md section 7) of each flagged finding: the two
// sides' op sequences, the source lines that issued the costly ops, the
// deviation point of the call paths, and the config entries that differ,
// ranked by whether the code at the deviation point reads them. Ends in one
// sentence a developer can act on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "detect/detect.h"
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
// resolved) under the recorded programs' working directories or import paths
// (meta `cwd`, `python.sys_path`). A trace names frame files; it never makes
// a report read /etc/shadow or ~/.ssh/id_rsa.
class SourceRoots {
 public:
  SourceRoots() = default;  // no roots: nothing may be read
  static SourceRoots Of(const Trace& trace);
  static SourceRoots Of(const Trace& a, const Trace& b);  // both programs' roots
  void Add(const std::string& dir);  // a folder; one that does not exist is left out
  // The resolved path of `file` when a report may read it, else why not.
  StatusOr<std::string> Check(const std::string& file) const;
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  std::vector<std::string> dirs_;  // canonical
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

enum class Kind { kDifferentOps, kSameOpsDifferentCost, kOutsideOps };
const char* KindName(Kind kind);  // "different_ops", "same_ops_different_cost", "outside_ops"

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
  std::string sentence;
  // The line-level re-run's result (diagnose/line_diagnosis.h), when diff
  // re-ran both programs; null otherwise.
  std::shared_ptr<const LineDiagnosis> line;
};

struct Options {
  size_t max_sites = 4;
  int window_lines = 60;
  bool include_equal = false;  // diagnose "equal" findings too
};

// The input-size contrast of Diagnosis::shapes (shape_contrast.cc).
std::string ShapeContrast(const Trace& costly, const std::vector<int64_t>& costly_ops, const Trace& cheap,
                          const std::vector<int64_t>& cheap_ops, char costly_side, char cheap_side);

// One diagnosis per waste and trade-off finding, in the findings' order.
std::vector<Diagnosis> Diagnose(const Trace& a, const Trace& b, const detect::DetectResult& result,
                                const Options& options = {});

}  // namespace magneton::diagnose
