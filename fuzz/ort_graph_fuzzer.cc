// libFuzzer target: the ONNX graph JSON parser (src/ort/graph_json.cc).
// Arbitrary bytes must give a Status or a graph, never a crash, hang or
// sanitizer report; an accepted graph goes through what ingestion derives
// from it (intermediate names, node scopes from names and neighbours).
//   ninja -C build/fuzz ort_graph_fuzzer
//   build/fuzz/fuzz/ort_graph_fuzzer -max_total_time=60 fuzz/corpus/ort_graph
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ort/ort.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto graph = magneton::ort::ParseGraphJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (graph.ok()) {
    (void)magneton::ort::IntermediateNames(*graph);
    (void)magneton::ort::NodeScopes(*graph);
  }
  return 0;
}
