#include "magneton/trace.h"

#include <algorithm>

namespace magneton {

std::string Trace::ScopePath(int64_t scope_id) const {
  std::vector<std::string_view> parts;
  // Parents precede children (the reader checks it): a parent at or after its
  // child ends the walk, so even a Trace built in memory cannot loop here.
  for (int64_t id = scope_id; id >= 0 && static_cast<size_t>(id) < scopes.size() && parts.size() < 256;
       id = scopes[id].parent_id < id ? scopes[id].parent_id : kNoId) {
    parts.push_back(str(scopes[id].name_id));
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out.push_back('/');
    out.append(*it);
  }
  return out;
}

std::string Trace::FrameText(int64_t frame_id) const {
  if (frame_id < 0 || static_cast<size_t>(frame_id) >= frames.size()) return "?";
  const Frame& f = frames[frame_id];
  return str(f.file_id) + ":" + std::to_string(f.line) + ":" + str(f.function_id);
}

std::vector<std::string> Trace::CallPathFrames(int64_t call_path_id) const {
  std::vector<std::string> out;
  for (int64_t id = call_path_id; id >= 0 && static_cast<size_t>(id) < call_paths.size() && out.size() < 1024;
       id = call_paths[id].parent_id < id ? call_paths[id].parent_id : kNoId) {  // as ScopePath
    out.push_back(FrameText(call_paths[id].frame_id));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::span<const OpTensor> Trace::LinksOf(int64_t op_id) const {
  auto lo = std::lower_bound(op_tensors.begin(), op_tensors.end(), op_id,
                             [](const OpTensor& l, int64_t id) { return l.op_id < id; });
  auto hi = std::upper_bound(lo, op_tensors.end(), op_id, [](int64_t id, const OpTensor& l) { return id < l.op_id; });
  return {lo, hi};
}

}  // namespace magneton
