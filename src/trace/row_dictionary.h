// Text the trace stores once and names by id (schema version 3: op_args,
// layouts, threads). Used by the trace writer on its own thread only, so the
// traced thread never pays for the lookup.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace magneton {

class RowDictionary {
 public:
  // The cache forgets everything once its keys hold more than max_key_bytes:
  // a run whose arguments never repeat (a step counter in every op) must not
  // grow the writer's memory with the run. A value seen again after that gets
  // a new id and a second dictionary row; ids are never reused.
  explicit RowDictionary(size_t max_key_bytes = 8 << 20) : max_key_bytes_(max_key_bytes) {}

  // The id of `key`; *added is true when the caller must insert its row.
  int64_t Intern(const std::string& key, bool* added) {
    auto it = ids_.find(key);
    if (it != ids_.end()) {
      *added = false;
      return it->second;
    }
    if (key_bytes_ + key.size() > max_key_bytes_) {
      ids_.clear();
      key_bytes_ = 0;
    }
    key_bytes_ += key.size() + sizeof(int64_t);
    *added = true;
    ids_.emplace(key, next_id_);
    return next_id_++;
  }

  // After a batch was rolled back: the rows of ids handed out for it are not
  // in the file, so nothing cached may be named again. Ids go on from where
  // they were (a reader accepts gaps in a dictionary's ids).
  void Forget() {
    ids_.clear();
    key_bytes_ = 0;
  }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  size_t key_bytes_ = 0;
  size_t max_key_bytes_;
  int64_t next_id_ = 0;
};

}  // namespace magneton
