# Fingerprint stage: per-tensor value signatures (docs/MATCHING.md).
set(MAGNETON_FINGERPRINT_SOURCES
  fingerprint/dtype.cc
  fingerprint/strided.cc
  fingerprint/moments.cc
  fingerprint/sample_grid.cc
  fingerprint/fingerprint.cc
  fingerprint/strong_part.cc
  fingerprint/compare.cc
  fingerprint/codec.cc
  fingerprint/store.cc
)
# The moments kernel is the throughput-critical loop: build it at -O3 even in
# RelWithDebInfo (no -ffast-math: the summation order is part of the result).
set_source_files_properties(fingerprint/moments.cc fingerprint/strided.cc PROPERTIES COMPILE_OPTIONS "-O3")

# Eigen (header-only) for the small symmetric eigenproblems of the unfolding spectra.
find_package(Eigen3 REQUIRED NO_MODULE)
target_link_libraries(magneton_objects PUBLIC Eigen3::Eigen)
