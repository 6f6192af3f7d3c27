# Diagnose stage: call paths, deviation point, config diff, candidates (method.md section 7).
set(MAGNETON_DIAGNOSE_SOURCES
  diagnose/frames.cc
  diagnose/config_diff.cc
  diagnose/source_window.cc
  diagnose/deviation_point.cc
  diagnose/candidates.cc
  diagnose/diagnose.cc
  diagnose/shape_contrast.cc
  diagnose/counterfactual.cc
  diagnose/python_expr.cc
  diagnose/python_function.cc
  diagnose/line_trace_io.cc
  diagnose/line_align.cc
  diagnose/line_flow.cc
  diagnose/line_call_path.cc
  diagnose/line_candidates.cc
)
