// libFuzzer target: the ONNX Runtime profile parser (src/ort/profile.cc).
// Arbitrary bytes must give a Status or a profile, never a crash, hang or
// sanitizer report; the accepted profile's node names go through the scope
// parser ingestion uses.
//   ninja -C build/fuzz ort_profile_fuzzer
//   build/fuzz/fuzz/ort_profile_fuzzer -max_total_time=60 fuzz/corpus/ort_profile
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ort/ort.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto profile = magneton::ort::ParseProfile(std::string_view(reinterpret_cast<const char*>(data), size));
  if (profile.ok()) {
    for (const auto& node : profile->nodes) (void)magneton::ort::ScopeFromNodeName(node.node_name);
  }
  return 0;
}
