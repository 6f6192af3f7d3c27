// Persists trace records to one SQLite file. Appends are cheap (a mutex and a
// vector push); a background thread commits them in batches, so a process
// killed mid-run leaves a readable file up to the last committed batch.
// Memory is bounded, not by the run's length: the writer commits early once
// the pending batch passes a quarter of max_pending_bytes, and an append that
// finds it past max_pending_bytes waits until the writer has taken it
// (back-pressure; nothing is ever dropped). At most two batches exist: the one
// being committed and the one filling.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
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
  // Used only where the process may raise the thread back to normal
  // priority (CAP_SYS_NICE or RLIMIT_NICE): under back-pressure the writer is
  // raised, or a busy machine would starve it while the program waits on it.
  bool idle_priority_writer = true;
  // Bound on the records waiting for the writer (approximate bytes).
  size_t max_pending_bytes = size_t{4} << 20;
  // Bound on each dictionary cache of the writer thread (op arguments,
  // tensor layouts, threads: trace/row_dictionary.h), in bytes of keys.
  size_t dictionary_cache_bytes = size_t{8} << 20;
};

// What back-pressure cost a run (TraceWriter::backpressure; written to the
// trace's meta as trace.backpressure_waits and trace.backpressure_wait_ms).
struct WriterBackpressure {
  int64_t waits = 0;    // appends that found the pending batch full and waited
  int64_t wait_ns = 0;  // total time they waited
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
  // The same with the arguments given apart (op.args is dropped; the
  // recorder leaves it empty, so no SharedText is made): the recorder's path.
  void AppendOp(OpEvent op, const std::vector<OpTensor>& links, std::string_view args);
  void AppendTensor(TensorMeta tensor);
  // The same with the shape and strides given apart (header's own are
  // dropped; the recorder leaves them empty, so this allocates nothing): the
  // recorder's per-tensor path.
  void AppendTensor(const TensorMeta& header, std::span<const int64_t> shape, std::span<const int64_t> strides);
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
  WriterBackpressure backpressure() const;
  // Whether the writer thread runs at idle priority (see TraceWriterOptions).
  bool idle_priority() const { return idle_priority_; }

 private:
  struct Batch;
  struct Dictionaries;  // writer-thread state: op_args, layouts, threads
  TraceWriter(std::string path, sqlite3* db, TraceWriterOptions options);
  void ThreadMain();
  Status WriteBatch(Batch& batch);
  Status WriteBatchRows(Batch& batch);  // WriteBatch's transaction
  // Called with mu_ held after an append: wakes the writer early, and waits
  // while the pending batch is over the bound.
  void AfterAppend(std::unique_lock<std::mutex>& lock);
  void SetWriterIdle(bool idle);  // writer thread's priority (best effort)

  std::string path_;
  sqlite3* db_;
  TraceWriterOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable flushed_;
  std::unique_ptr<Batch> pending_;
  std::unique_ptr<Batch> spare_;  // the other of the two batches, while not being written
  std::unique_ptr<Dictionaries> dicts_;  // touched by the writer thread only
  int64_t appended_seq_ = 0;   // bumped per Flush request
  int64_t committed_seq_ = 0;
  int64_t committed_batches_ = 0;
  size_t pending_bytes_ = 0;   // approximate size of *pending_
  int64_t taken_batches_ = 0;  // batches the writer has taken from pending_
  bool early_wake_sent_ = false;
  bool idle_priority_ = false;
  bool writer_raised_ = false;  // raised to normal priority under back-pressure
  WriterBackpressure backpressure_;
  std::condition_variable taken_;
  bool stop_ = false;
  bool closed_ = false;
  Status thread_status_;
  std::thread thread_;
};

}  // namespace magneton
