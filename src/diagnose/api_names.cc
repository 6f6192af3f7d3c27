// Python API names for ops and library frames: the root cause names what a
// developer calls (torch.linalg.eigvals), not the dispatcher's spelling
// (aten::linalg_eigvals). Only the mappings that are mechanical are made.
#include <string>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {

std::string ApiOfOp(const std::string& op_name) {
  const size_t sep = op_name.find("::");
  if (sep == std::string::npos) return op_name;
  const std::string ns = op_name.substr(0, sep);
  std::string fn = op_name.substr(sep + 2);
  if (const size_t dot = fn.find('.'); dot != std::string::npos) fn.resize(dot);  // the overload: sort.stable
  if (ns == "aten") {
    // ATen joins a submodule to the function with '_': linalg_eigvals is torch.linalg.eigvals.
    for (const char* sub : {"linalg", "fft", "special"}) {
      const std::string p = std::string(sub) + "_";
      if (fn.rfind(p, 0) == 0 && fn.size() > p.size()) return "torch." + std::string(sub) + "." + fn.substr(p.size());
    }
    return "torch." + fn;
  }
  if (ns == "jax") return "jax.lax." + fn;  // JAX primitives are lax operations
  return ns + "." + fn;
}

std::string ApiOfFrame(const std::string& frame) {
  const FrameRef f = ParseFrame(frame);
  std::string file = f.file;
  size_t cut = std::string::npos;
  for (const char* marker : {"site-packages/", "dist-packages/"}) {
    const size_t at = file.rfind(marker);
    if (at != std::string::npos) {
      cut = at + std::string(marker).size();
      break;
    }
  }
  if (cut == std::string::npos) return f.function;
  std::string module = file.substr(cut);
  if (module.size() > 3 && module.compare(module.size() - 3, 3, ".py") == 0) module.resize(module.size() - 3);
  if (module.size() > 9 && module.compare(module.size() - 9, 9, "/__init__") == 0) module.resize(module.size() - 9);
  // Private modules (jax/_src/scipy/linalg.py) are not what a user imports:
  // their functions are re-exported by the public path (jax.scipy.linalg).
  std::string dotted;
  size_t start = 0;
  for (size_t i = 0; start <= module.size(); ++i) {
    size_t end = module.find('/', start);
    if (end == std::string::npos) end = module.size();
    const std::string part = module.substr(start, end - start);
    if (!part.empty() && (i == 0 || part.front() != '_')) dotted += (dotted.empty() ? "" : ".") + part;
    start = end + 1;
  }
  return dotted.empty() ? f.function : dotted + "." + f.function;
}

std::string FileLine(const std::string& frame) {
  if (frame.empty()) return "";
  const FrameRef f = ParseFrame(frame);
  if (f.file.empty()) return frame;
  return f.file + ":" + std::to_string(f.line);
}

}  // namespace magneton::diagnose
