// Call-path frames as text ("file:line:function", Trace::CallPathFrames).
#include <cstdlib>
#include <cstring>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {

FrameRef ParseFrame(const std::string& text) {
  FrameRef f;
  f.text = text;
  // Split from the right: function names have no ':', file paths might.
  const size_t fn_colon = text.rfind(':');
  if (fn_colon == std::string::npos || fn_colon == 0) {
    f.file = text;
    return f;
  }
  const size_t line_colon = text.rfind(':', fn_colon - 1);
  f.function = text.substr(fn_colon + 1);
  if (line_colon == std::string::npos) {
    f.file = text.substr(0, fn_colon);
    return f;
  }
  f.file = text.substr(0, line_colon);
  f.line = std::strtoll(text.c_str() + line_colon + 1, nullptr, 10);
  return f;
}

bool IsLibraryFrame(const FrameRef& frame) {
  // Installed packages (torch, transformers, ...) and the interpreter's own
  // frames: a developer fixes their code, not these.
  for (const char* marker : {"site-packages/", "dist-packages/", "/torch/", "/transformers/", "<frozen", "/lib/python"}) {
    if (frame.file.find(marker) != std::string::npos) return true;
  }
  return false;
}

bool IsPassThroughFrame(const FrameRef& frame) {
  for (const char* file : {"/torch/utils/_contextlib.py", "/functools.py", "/contextlib.py", "<frozen"}) {
    if (frame.file.find(file) != std::string::npos) return true;
  }
  for (const char* fn : {"_call_impl", "_wrapped_call_impl", "decorate_context", "wrapper", "wrapped", "wrapped_func", "inner"}) {
    const std::string& f = frame.function;
    // The function's own name: "decorate_context" or "<locals>.decorate_context".
    if (f == fn || (f.size() > std::strlen(fn) && f.compare(f.size() - std::strlen(fn), std::string::npos, fn) == 0 &&
                    f[f.size() - std::strlen(fn) - 1] == '.')) {
      return true;
    }
  }
  return false;
}

}  // namespace magneton::diagnose
