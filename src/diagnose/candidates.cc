// Candidate root-cause variables: config entries that differ, ranked by how
// close to the deviation point the code names them. Reading the variable in
// the function where the paths diverge is the static stand-in for the
// paper's line-level re-run (docs/DIFF.md, "Not yet").
#include <algorithm>
#include <cctype>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

// "call.generate.use_cache" -> "use_cache"; "env.OMP_NUM_THREADS" -> "OMP_NUM_THREADS".
std::string IdentifierOf(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whole-identifier match, so "cache" does not match "use_cache".
bool NamesIdentifier(const std::string& line, const std::string& name) {
  if (name.empty()) return false;
  for (size_t pos = line.find(name); pos != std::string::npos; pos = line.find(name, pos + 1)) {
    const bool left_ok = pos == 0 || !IsIdentChar(line[pos - 1]);
    const size_t end = pos + name.size();
    const bool right_ok = end >= line.size() || !IsIdentChar(line[end]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

int SourceRank(const std::string& source) {
  // Arguments and model config are what a developer sets most directly.
  static const char* kOrder[] = {"call_arg", "model_config", "env", "global_flag", "runtime"};
  for (int i = 0; i < 5; ++i) {
    if (source == kOrder[i]) return i;
  }
  return 5;
}

struct Window {
  SourceSnippet snippet;
  bool ok = false;
};

}  // namespace

std::vector<Candidate> RankCandidates(const std::vector<ConfigDifference>& diffs, const DeviationPoint& deviation,
                                      const SourceRoots& roots, int window_lines) {
  // Frames to read, nearest first: the deviation point (both sides' lines),
  // then its callers outwards.
  std::vector<std::vector<FrameRef>> rings;
  if (deviation.found) {
    std::vector<FrameRef> ring0{ParseFrame(deviation.frame_a)};
    if (deviation.frame_b != deviation.frame_a) ring0.push_back(ParseFrame(deviation.frame_b));
    rings.push_back(std::move(ring0));
    for (size_t k = deviation.common_path.size(); k-- > 1;) {
      rings.push_back({ParseFrame(deviation.common_path[k - 1])});
    }
  }
  std::vector<std::vector<Window>> windows(rings.size());
  for (size_t r = 0; r < rings.size(); ++r) {
    for (const FrameRef& f : rings[r]) {
      Window w;
      // Mostly before the line: the branch precedes the call it selects.
      w.ok = ReadSourceWindow(roots, f.file, f.line, window_lines, window_lines / 4, &w.snippet);
      windows[r].push_back(std::move(w));
    }
  }

  std::vector<Candidate> out;
  for (const ConfigDifference& d : diffs) {
    Candidate c;
    c.config = d;
    c.name = IdentifierOf(d.key);
    std::string bare = c.name;
    while (!bare.empty() && bare.front() == '_') bare.erase(bare.begin());
    for (size_t r = 0; r < windows.size() && c.frame_distance < 0; ++r) {
      for (const Window& w : windows[r]) {
        if (!w.ok) continue;
        for (size_t i = 0; i < w.snippet.lines.size(); ++i) {
          const std::string& line = w.snippet.lines[i];
          if (NamesIdentifier(line, c.name) || NamesIdentifier(line, bare)) {
            c.frame_distance = static_cast<int>(r);
            std::string text = line;
            text.erase(0, text.find_first_not_of(" \t"));
            c.evidence = w.snippet.file + ":" + std::to_string(w.snippet.first_line + static_cast<int64_t>(i)) +
                         ": " + text;
            break;
          }
        }
        if (c.frame_distance >= 0) break;
      }
    }
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) {
    const bool fx = x.frame_distance >= 0, fy = y.frame_distance >= 0;
    if (fx != fy) return fx;
    if (fx && x.frame_distance != y.frame_distance) return x.frame_distance < y.frame_distance;
    return SourceRank(x.config.source) < SourceRank(y.config.source);
  });
  return out;
}

}  // namespace magneton::diagnose
