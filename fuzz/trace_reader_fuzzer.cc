// libFuzzer target: arbitrary bytes through the trace reader must give a
// Status, never a crash, hang or sanitizer report.
//   cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
//         -DMAGNETON_BUILD_FUZZERS=ON -DMAGNETON_BUILD_PYTHON=OFF
//   ninja -C build/fuzz trace_reader_fuzzer && build/fuzz/fuzz/trace_reader_fuzzer -max_total_time=60 fuzz/corpus/trace_reader
#include <cstddef>
#include <cstdint>

#include "magneton/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto trace = magneton::ReadTraceFromBytes(data, size);
  if (trace.ok()) {
    // Exercise the accessors on whatever was accepted.
    for (const auto& op : trace->ops) {
      (void)trace->ScopePath(op.scope_id);
      (void)trace->CallPathFrames(op.call_path_id);
    }
  }
  return 0;
}
