// Which folders a diff report reads source snippets from (issue 33: a trace
// from someone else is data, so it never decides which of this user's files
// go into a report they may share).
#pragma once

#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::analysis {

// The directory the command runs in (`cwd`, usually the current directory),
// the folders the user named (--source-root; InvalidArgument for one that is
// not a directory, `/` or $HOME), and — for each trace that verifies as this
// user's own recording (trust::VerifyRerunAuthority) — its recorded working
// directory and import paths. `/` and $HOME themselves are never roots.
StatusOr<diagnose::SourceRoots> ReportSourceRoots(const std::vector<const Trace*>& traces, const std::string& cwd,
                                                  const std::vector<std::string>& explicit_roots);

}  // namespace magneton::analysis
