// Interning (intern_tables.h): each table assigns ids densely and writes a
// row the first time a key is seen.
#include "record/intern_tables.h"

namespace magneton::record {

int64_t InternTables::InternString(std::string_view s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = strings_.try_emplace(std::string(s), static_cast<int64_t>(strings_.size()));
  if (inserted) writer_->AppendString(it->second, it->first);
  return it->second;
}

int64_t InternTables::InternFrame(int64_t file_id, int64_t line, int64_t function_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t h =
      Mix(Mix(static_cast<uint64_t>(file_id), static_cast<uint64_t>(line)), static_cast<uint64_t>(function_id));
  auto& candidates = frame_index_[h];
  for (int64_t id : candidates) {
    const Frame& f = frames_[id];
    if (f.file_id == file_id && f.line == line && f.function_id == function_id) return id;
  }
  Frame f{static_cast<int64_t>(frames_.size()), file_id, line, function_id};
  frames_.push_back(f);
  candidates.push_back(f.id);
  writer_->AppendFrame(f);
  return f.id;
}

int64_t InternTables::InternCallPath(int64_t parent_path_id, int64_t frame_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] =
      call_paths_.try_emplace({parent_path_id, frame_id}, static_cast<int64_t>(call_paths_.size()));
  if (inserted) writer_->AppendCallPath({it->second, frame_id, parent_path_id});
  return it->second;
}

int64_t InternTables::InternScope(int64_t parent, std::string_view name, std::string_view type,
                                  int64_t init_call_path_id, std::string_view init_args) {
  int64_t name_id = InternString(name);
  int64_t type_id = InternString(type);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = scopes_.try_emplace({parent, name_id, type_id}, static_cast<int64_t>(scopes_.size()));
  if (inserted) {
    writer_->AppendScope({it->second, name_id, type_id, parent, init_call_path_id, std::string(init_args)});
  }
  return it->second;
}

int64_t InternTables::InternRuntimeState(const std::map<std::string, std::string>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = runtime_states_.try_emplace(values, static_cast<int64_t>(runtime_states_.size()));
  if (inserted) writer_->AppendRuntimeState({it->second, values});
  return it->second;
}

}  // namespace magneton::record
