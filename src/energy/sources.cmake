# The energy stage: meters, discovery, the sampler thread and attribution.
set(MAGNETON_ENERGY_SOURCES
  energy/clock.cc
  energy/sysfs.cc
  energy/counter_unwrap.cc
  energy/meter.cc
  energy/rapl_meter.cc
  energy/nvml_meter.cc
  energy/perf_power_meter.cc
  energy/estimate_meter.cc
  energy/discovery.cc
  energy/sampler.cc
  energy/attribution.cc
)
# dlopen for NVML: part of libc on glibc >= 2.34, libdl before.
target_link_libraries(magneton_objects PUBLIC ${CMAKE_DL_LIBS})
