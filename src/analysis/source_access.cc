#include "analysis/source_access.h"

#include "trust/trace_trust.h"

namespace magneton::analysis {

StatusOr<diagnose::SourceRoots> ReportSourceRoots(const std::vector<const Trace*>& traces, const std::string& cwd,
                                                  const std::vector<std::string>& explicit_roots) {
  diagnose::SourceRoots roots;
  // The current directory is a convenience, not a request: when it is `/` or
  // $HOME it is left out silently (the user can name a folder).
  if (!cwd.empty()) roots.Add(cwd);
  for (const std::string& dir : explicit_roots) MAGNETON_RETURN_IF_ERROR(roots.AddExplicit(dir));
  const trust::TrustContext context = trust::TrustContext::Current();
  for (const Trace* trace : traces) {
    if (trust::VerifyRerunAuthority(*trace, context).trusted) roots.AddFoldersOf(*trace);
  }
  return roots;
}

}  // namespace magneton::analysis
