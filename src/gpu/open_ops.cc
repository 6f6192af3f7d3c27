#include "gpu/open_ops.h"

#include <algorithm>
#include <cstddef>
#include <iterator>

namespace magneton::gpu {
namespace {

// Walks up the op tree stop here: a parent loop in a file from someone else
// must not hang the ingest.
constexpr int kMaxDepth = 1024;

}  // namespace

OpenOps::OpenOps(const std::vector<OpSpan>& ops) : ops_(ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    by_thread_[ops[i].thread_id].emplace_back(ops[i].start_ns, i);
    index_of_[ops[i].op_id] = i;
  }
  for (auto& [_, v] : by_thread_) std::sort(v.begin(), v.end());
}

int64_t OpenOps::ParentIndex(size_t i) const {
  if (ops_[i].parent_id == kNoId) return -1;
  auto p = index_of_.find(ops_[i].parent_id);
  return p == index_of_.end() ? -1 : static_cast<int64_t>(p->second);
}

// The latest op to start at or before t is nested in every op open then
// (ops nest on a thread), so the answer is it or one of its ancestors.
int64_t OpenOps::At(int64_t thread, int64_t t) const {
  auto it = by_thread_.find(thread);
  if (it == by_thread_.end()) return -1;
  const auto& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), std::make_pair(t, SIZE_MAX));
  if (after == v.begin()) return -1;
  int64_t i = static_cast<int64_t>(std::prev(after)->second);
  for (int depth = 0; depth < kMaxDepth && i >= 0; ++depth) {
    if (ops_[static_cast<size_t>(i)].end_ns >= t) return i;
    i = ParentIndex(static_cast<size_t>(i));
  }
  return -1;
}

bool OpenOps::Descends(size_t i, size_t ancestor) const {
  int64_t p = ParentIndex(i);
  for (int depth = 0; depth < kMaxDepth && p >= 0; ++depth) {
    if (static_cast<size_t>(p) == ancestor) return true;
    p = ParentIndex(static_cast<size_t>(p));
  }
  return false;
}

}  // namespace magneton::gpu
