// The HTML diff report's picture of both runs (docs/DIFF.md, "Reports"): two
// aligned timelines of the job, A above B on one millisecond scale, each a
// strip of the diff's matched region instances coloured by their finding's
// verdict (unmatched ops in a light colour) and a power-over-time strip from
// the run's energy samples of the diff's domain, labelled with provenance.
// A matched instance's two boxes are one SVG link to its finding: hovering
// either outlines both and joins them, clicking goes to `#fN`. Inline SVG and
// CSS only: the report's Content-Security-Policy forbids scripts.
//
// Aggregated so that a 100k-op trace stays light in a browser: one box per
// region instance (not per op); pieces narrower than `merge_px` are binned
// into pixel columns and runs of columns merged into one box coloured by the
// most severe finding in it; `merge_px` doubles from 1 until the SVG has at
// most `max_elements` elements. The caption says when it aggregated.
#pragma once

#include <cstddef>
#include <string>

#include "report/diff_report.h"

namespace magneton::report {

struct TimelineOptions {
  // The SVG's width in its own units: the report's 1152 px column at a
  // 1200 px window, so one unit is about one pixel there.
  double width_px = 1150;
  size_t max_elements = 4000;
};

struct Timeline {
  std::string html;      // a <figure>; empty when the input lacks a trace
  size_t elements = 0;   // SVG elements in it
  size_t pairs = 0;      // matched instances drawn as a linked pair of boxes
  size_t merged_boxes = 0;  // boxes standing for pieces narrower than merge_px
  double merge_px = 1;   // the width below which pieces were merged
  bool aggregated = false;  // some box stands for more than one instance or op
};

Timeline RenderDiffTimeline(const DiffReportInput& in, const TimelineOptions& options = {});

// The timeline's style rules, for the report's <style> element.
const char* TimelineCss();

}  // namespace magneton::report
