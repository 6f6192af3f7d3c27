// Persists trace records to one SQLite file. Appends are cheap (a mutex and a
// vector push); a background thread commits them in batches, so a process
// killed mid-run leaves a readable file up to the last committed batch.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"

struct sqlite3;

namespace magneton {

struct TraceWriterOptions {
  int flush_interval_ms = 100;  // how often the writer thread commits
  // Run the writer thread at idle priority so it takes only cycles the traced
  // program leaves unused (most of eager inference is single-threaded Python).
  bool idle_priority_writer = true;
};

class TraceWriter {
 public:
  static StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path,
                                                       const RunMetadata& meta,
                                                       TraceWriterOptions options = {});
  ~TraceWriter();  // Close()s; errors then are only logged

  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void AppendString(int64_t id, std::string value);
  void AppendFrame(const Frame& frame);
  void AppendCallPath(const CallPath& path);
  void AppendScope(const Scope& scope);
  // An op with its tensor links (one lock: the per-op hot path).
  void AppendOp(OpEvent op, const std::vector<OpTensor>& links);
  void AppendTensor(TensorMeta tensor);
  void AppendConfig(ConfigEntry entry);
  void AppendFingerprint(int64_t tensor_id, std::string kind, std::string data);
  void AppendEnergySample(EnergySample sample);
  void AppendDeviceActivity(DeviceActivity activity);
  // A runtime state with its id (Recorder::InternRuntimeState) and a call
  // that set one of its keys; values whose key looks secret are redacted.
  void AppendRuntimeState(RuntimeState state);
  void AppendStateSetter(StateSetter setter);
  void SetMeta(const std::string& key, const std::string& value);

  // Commits everything appended so far and waits for it.
  Status Flush();
  // Flushes, stops the thread, folds the WAL back into the single file.
  Status Close();

  const std::string& path() const { return path_; }
  int64_t committed_batches() const;

 private:
  struct Batch;
  TraceWriter(std::string path, sqlite3* db, TraceWriterOptions options);
  void ThreadMain();
  Status WriteBatch(Batch& batch);

  std::string path_;
  sqlite3* db_;
  TraceWriterOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable flushed_;
  std::unique_ptr<Batch> pending_;
  int64_t appended_seq_ = 0;   // bumped per Flush request
  int64_t committed_seq_ = 0;
  int64_t committed_batches_ = 0;
  bool stop_ = false;
  bool closed_ = false;
  Status thread_status_;
  std::thread thread_;
};

}  // namespace magneton
