// libFuzzer target: the op-arguments reader (src/trace/op_args.h). Arbitrary
// bytes must give a Status or a document, never a crash, hang or sanitizer
// report; an accepted document must survive the writer unchanged (write,
// read back, equal, and the canonical text is stable); and any bytes written
// as a string by the writer must read back as valid op arguments.
//   ninja -C build/fuzz op_args_fuzzer
//   build/fuzz/fuzz/op_args_fuzzer -max_total_time=60 fuzz/corpus/op_args
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trace/op_args.h"

namespace {

void Check(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "op_args_fuzzer: %s for input '%.*s'\n", what, static_cast<int>(input.size()), input.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = magneton::ParseOpArgs(text);
  if (parsed.ok()) {
    (void)magneton::FormatOpArgs(*parsed);
    const std::string written = magneton::WriteOpArgs(*parsed);
    auto again = magneton::ParseOpArgs(written);
    Check(again.ok(), "the writer's text of an accepted document is refused", text);
    Check(*again == *parsed, "the document changed through the writer", text);
    Check(magneton::WriteOpArgs(*again) == written, "the canonical text is not stable", text);
  }
  // Any bytes as a string argument and as a parameter name.
  std::string out;
  magneton::OpArgsWriter w(&out);
  w.BeginParams();
  w.Key(text);
  w.BeginList();
  w.String(text);
  w.EndList();
  w.EndParams();
  auto doc = magneton::ParseOpArgs(out);
  Check(doc.ok(), "the writer wrote invalid op arguments", text);
  return 0;
}
