# Match stage: tensor equivalence and subgraph matching (method.md section 5).
set(MAGNETON_MATCH_SOURCES
  match/tensor_index.cc
  match/cut_points.cc
  match/components.cc
  match/region_matcher.cc
  match/multi_input.cc
)
