# Eval stage: the known-case suite, scored over an (epsilon, tau) sweep (issue 6).
set(MAGNETON_EVAL_SOURCES
  eval/cases.cc
  eval/score.cc
  eval/run.cc
  eval/render.cc
  eval/gpu.cc
  eval/case_env.cc
  eval/repeats.cc
)
