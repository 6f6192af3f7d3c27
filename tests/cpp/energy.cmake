# Energy stage tests. The NVML tests dlopen a fake libnvidia-ml built here,
# in two variants: complete, and missing nvmlDeviceGetCount_v2.
foreach(variant fake_nvml fake_nvml_nocount)
  add_library(${variant} SHARED fake_nvml.cc)
  target_include_directories(${variant} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(${variant} PROPERTIES CXX_VISIBILITY_PRESET hidden)
endforeach()
target_compile_definitions(fake_nvml_nocount PRIVATE FAKE_NVML_OMIT_DEVICE_COUNT=1)

magneton_test(energy_rapl_unittest)
magneton_test(energy_nvml_unittest)
target_compile_definitions(energy_nvml_unittest PRIVATE
  FAKE_NVML_PATH="$<TARGET_FILE:fake_nvml>"
  FAKE_NVML_NOCOUNT_PATH="$<TARGET_FILE:fake_nvml_nocount>")
add_dependencies(energy_nvml_unittest fake_nvml fake_nvml_nocount)
magneton_test(energy_meters_unittest)
magneton_test(energy_sampler_unittest)
magneton_test(energy_attribution_unittest)
target_compile_definitions(energy_meters_unittest PRIVATE FAKE_NVML_PATH="$<TARGET_FILE:fake_nvml>")
add_dependencies(energy_meters_unittest fake_nvml)
magneton_test(energy_device_unittest)
magneton_test(nvml_recording_unittest)
target_compile_definitions(nvml_recording_unittest PRIVATE FAKE_NVML_PATH="$<TARGET_FILE:fake_nvml>")
add_dependencies(nvml_recording_unittest fake_nvml)
