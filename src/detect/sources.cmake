# Detect stage: per-region energy and time, waste vs trade-off (method.md section 6).
set(MAGNETON_DETECT_SOURCES
  detect/names.cc
  detect/classify.cc
  detect/region_cost.cc
  detect/same_work.cc
  detect/regions.cc
  detect/detect.cc
)
