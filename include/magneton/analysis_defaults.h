// The analysis defaults, defined once (issue 34): matching's tolerance,
// detection's thresholds and noise floors. AnalysisOptions, the stages'
// own options (MatchOptions, detect::Options), the CLI, the Python bindings
// (magneton._analysis.default_options(), which python/magneton/analysis.py
// takes its defaults from) and `magneton eval` all start from these, so a
// default is changed here and nowhere else.
#pragma once

namespace magneton::defaults {

inline constexpr double kTau = 0.10;              // relative energy difference that counts (method.md: 10%)
inline constexpr double kEpsilon = 1e-2;          // tensor equivalence tolerance (matching and region outputs)
inline constexpr double kMaxSlowdown = 0.01;      // the cheaper side may be at most this much slower to be waste
inline constexpr double kMinShare = 0.01;         // findings saving less of the job than this are equal ("small")
inline constexpr double kMinSameWorkShare = 0.05;  // noise floor of findings whose only evidence is timing

}  // namespace magneton::defaults
