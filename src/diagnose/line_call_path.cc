// Following a variable up the call path: when the deviation-point function
// received it as an argument (a tensor of another shape, a cache object),
// the reason lies in a caller; each caller on the recorded path is traced in
// the same re-run, and analysed at the line where it made the call.
#include "diagnose/line_diagnosis.h"

namespace magneton::diagnose {

LineDiagnosis AnalyzeCallPath(const std::vector<TracedFrame>& frames, const LineTrace& a, const LineTrace& b,
                              const std::vector<ConfigDifference>& diffs) {
  LineDiagnosis first;
  bool have_first = false;
  std::string notes;
  for (size_t k = 0; k < frames.size(); ++k) {
    // Wrappers that forward their own `*args, **kwargs` (nn.Module.__call__,
    // decorators) pass the same values on: the reason is further out.
    const PyFunction& fn = frames[k].fn;
    const PyStatement* call = fn.StatementAt(frames[k].focus_line);
    if (k > 0 && call != nullptr && !fn.var_positional.empty() && !fn.var_keyword.empty() &&
        call->text.find("*" + fn.var_positional) != std::string::npos &&
        call->text.find("**" + fn.var_keyword) != std::string::npos) {
      continue;
    }
    LineDiagnosis d = AnalyzeLineTraces(frames[k].fn, a, b, frames[k].focus_line, frames[k].target);
    d.frame_distance = static_cast<int>(k);
    d.frames_traced = static_cast<int>(frames.size());
    if (!d.found) {
      if (k == 0) notes = d.note;
      continue;
    }
    const OriginKind kind = d.origin.kind;
    ConfigDifference mapped;
    const bool decisive = kind == OriginKind::kConfigField || kind == OriginKind::kGlobalFlag ||
                          kind == OriginKind::kEnvVar ||
                          (kind == OriginKind::kArgument && MapOriginToConfig(d.origin, diffs, &mapped));
    if (decisive) return d;
    if (!have_first) first = std::move(d), have_first = true;
  }
  if (have_first) return first;
  LineDiagnosis none;
  none.frames_traced = static_cast<int>(frames.size());
  none.note = notes.empty() ? "no traced frame ran differently" : notes;
  return none;
}

}  // namespace magneton::diagnose
