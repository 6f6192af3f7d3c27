// A window of source lines around a recorded file:line, when the file is on
// this machine (the traces name absolute paths of the recording machine) and
// is one of the recorded program's Python files (SourceRoots).
#include <algorithm>
#include <fstream>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {

bool ReadSourceWindow(const SourceRoots& roots, const std::string& file, int64_t line, int before, int after,
                      SourceSnippet* out) {
  if (line <= 0) return false;
  auto allowed = roots.Check(file);
  if (!allowed.ok()) return false;
  std::ifstream in(*allowed);
  if (!in) return false;
  out->file = file;
  out->focus_line = line;
  out->first_line = std::max<int64_t>(1, line - before);
  out->lines.clear();
  std::string text;
  for (int64_t n = 1; std::getline(in, text) && n <= line + after; ++n) {
    if (n >= out->first_line) out->lines.push_back(text);
  }
  return !out->lines.empty();
}

}  // namespace magneton::diagnose
