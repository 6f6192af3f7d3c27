// Interning for one recording: strings, frames, call paths, module scopes and
// runtime states each get a dense id the first time they are seen, and their
// row goes to the writer then, once, under the same lock that assigns the id
// (so the rows of each table are written in id order). Ops and tensors refer
// to these ids, which keeps per-op rows small.
//
// A lock of its own: hooks intern from every thread (an op's name, its
// Python frames), and nothing here touches tensor identity, so interning on
// one thread does not wait for another thread's tensors.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "magneton/trace.h"
#include "magneton/trace_writer.h"
#include "base/hash_mix.h"

namespace magneton::record {

class InternTables {
 public:
  explicit InternTables(TraceWriter* writer) : writer_(writer) {}
  InternTables(const InternTables&) = delete;
  InternTables& operator=(const InternTables&) = delete;

  int64_t InternString(std::string_view s);
  int64_t InternFrame(int64_t file_id, int64_t line, int64_t function_id);
  // The path whose innermost frame is frame_id, called from parent_path_id.
  int64_t InternCallPath(int64_t parent_path_id, int64_t frame_id);
  // Interns name and type as strings first. init_call_path_id and init_args
  // are written only with a new scope: the first module seen there.
  int64_t InternScope(int64_t parent_scope_id, std::string_view name, std::string_view type,
                      int64_t init_call_path_id, std::string_view init_args);
  int64_t InternRuntimeState(const std::map<std::string, std::string>& values);

 private:
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      return Mix(static_cast<uint64_t>(p.first), static_cast<uint64_t>(p.second));
    }
  };
  struct ScopeKey {
    int64_t parent, name, type;
    bool operator==(const ScopeKey&) const = default;
  };
  struct ScopeKeyHash {
    size_t operator()(const ScopeKey& k) const {
      return Mix(Mix(static_cast<uint64_t>(k.parent), static_cast<uint64_t>(k.name)), static_cast<uint64_t>(k.type));
    }
  };

  TraceWriter* const writer_;
  std::mutex mu_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<uint64_t, std::vector<int64_t>> frame_index_;  // hash -> candidate frame ids
  std::vector<Frame> frames_;
  std::unordered_map<std::pair<int64_t, int64_t>, int64_t, PairHash> call_paths_;
  std::unordered_map<ScopeKey, int64_t, ScopeKeyHash> scopes_;
  std::map<std::map<std::string, std::string>, int64_t> runtime_states_;
};

}  // namespace magneton::record
