// The name a person reads for a region (docs/DIFF.md, "Region names"): what
// the region is in the user's model or program, not its first op.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "detect/detect.h"
#include "magneton/trace.h"

namespace magneton::diagnose {

struct RegionName {
  // "transformer.h.{0..1}.attn (GPT2Attention)", "gen.py:13 → GenerationMixin.generate", "aten::sort.stable …".
  std::string text;
  // What the name rests on: "module_scope" (the deepest nn.Module scope the
  // region's ops share, collapsed over its occurrences), "source_line" (the
  // user's line that issued them, and the library function it called),
  // "ops" (the first op's name), or "kind" (outside ops, unmatched).
  std::string basis;
};

// Names finding `f` of a diff of `a` and `b` from the costlier side's ops
// (the other side's where that has none).
RegionName NameRegion(const Trace& a, const Trace& b, const detect::Finding& f);

// What a set of ops holds, by what the ops are: the ops grouped by their
// module scope path with its class (`transformer.h.0.attn (GPT2Attention)`),
// else by the user's line that issued them, else by op name; the groups with
// the most op time first (time, not energy: per-op energy is the
// attribution's, and the reader wants where the ops are).
struct RegionPart {
  std::string name;
  size_t ops = 0;
  int64_t time_ns = 0;
};
std::vector<RegionPart> TopParts(const Trace& t, std::span<const int64_t> ops, size_t max_parts);

// A frame or file as a reader wants it: an installed package's file from the
// package down ("transformers/models/gpt2/modeling_gpt2.py:272:forward"), a
// file under the current directory relative to it, anything else as given.
std::string ShortPath(const std::string& frame_or_file);
// ShortPath applied to every path in a line of text (a path starts with '/'
// after a space, a bracket or the line's start).
std::string ShortPathsIn(const std::string& text);

}  // namespace magneton::diagnose
