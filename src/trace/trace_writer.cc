#include "magneton/trace_writer.h"

#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "trace/redact.h"
#include "trace/row_dictionary.h"
#include "trace/schema.h"
#include "trace/sqlite_util.h"
#include "base/format.h"
#include "magneton/clock.h"

namespace magneton {

struct TraceWriter::Batch {
  std::vector<std::pair<int64_t, std::string>> strings;
  std::vector<Frame> frames;
  std::vector<CallPath> call_paths;
  std::vector<Scope> scopes;
  // Ops and tensors keep their variable-length parts (args text, shape and
  // strides) in flat buffers of the batch, not in heap blocks of their own:
  // a block allocated on the traced thread and freed here by the writer
  // thread goes back to the traced thread's heap arena under that arena's
  // lock, and the traced thread's next allocation then misses its thread
  // cache. The batch's buffers keep their capacity from batch to batch.
  std::vector<OpEvent> ops;           // args empty: see op_args_text
  std::vector<size_t> op_links_end;   // ops[i]'s links end here in op_tensors
  std::string op_args_text;
  std::vector<size_t> op_args_end;    // ops[i]'s args end here in op_args_text
  std::vector<TensorMeta> tensors;    // shape and strides empty: see tensor_dims
  std::vector<int64_t> tensor_dims;   // per tensor: its shape, then its strides
  std::vector<size_t> tensor_dims_end;  // 2 per tensor: end of its shape, end of its strides
  std::vector<OpTensor> op_tensors;
  std::vector<ConfigEntry> config;
  std::vector<EnergySample> energy_samples;
  std::vector<DeviceActivity> device_activities;
  std::vector<std::pair<std::string, std::string>> meta;
  struct FingerprintRow {
    int64_t tensor_id;
    std::string kind, data;
  };
  std::vector<FingerprintRow> fingerprints;
  std::vector<RuntimeState> runtime_states;
  std::vector<StateSetter> state_setters;

  // Empties the batch but keeps its vectors' capacity: the writer reuses two
  // batches for the whole run instead of allocating a fresh one per commit
  // (growing vectors anew each time leaves the freed blocks scattered over
  // the heap, and the process's memory grows with them).
  void Clear() {
    strings.clear();
    frames.clear();
    call_paths.clear();
    scopes.clear();
    ops.clear();
    op_links_end.clear();
    op_args_text.clear();
    op_args_end.clear();
    tensors.clear();
    tensor_dims.clear();
    tensor_dims_end.clear();
    op_tensors.clear();
    config.clear();
    energy_samples.clear();
    device_activities.clear();
    meta.clear();
    fingerprints.clear();
    runtime_states.clear();
    state_setters.clear();
  }

  bool empty() const {
    return strings.empty() && frames.empty() && call_paths.empty() && scopes.empty() &&
           ops.empty() && tensors.empty() && op_tensors.empty() && config.empty() &&
           energy_samples.empty() && device_activities.empty() && meta.empty() && fingerprints.empty() &&
           runtime_states.empty() && state_setters.empty();
  }
};

struct TraceWriter::Dictionaries {
  explicit Dictionaries(size_t cache_bytes) : op_args(cache_bytes), layouts(cache_bytes), threads(cache_bytes) {}
  RowDictionary op_args, layouts, threads;
  void Forget() {
    op_args.Forget();
    layouts.Forget();
    threads.Forget();
  }
};

namespace {

// "5,-1,7": tensor ids by slot, -1 where a slot held no tensor.
void LinksText(const std::vector<OpTensor>& links, size_t begin, size_t end, std::string* inputs,
               std::string* outputs) {
  std::vector<int64_t> in, out;
  for (size_t i = begin; i < end; ++i) {
    auto& v = links[i].role == TensorRole::kInput ? in : out;
    if (links[i].slot < 0 || links[i].slot > 100000) continue;
    if (v.size() <= static_cast<size_t>(links[i].slot)) v.resize(links[i].slot + 1, -1);
    v[links[i].slot] = links[i].tensor_id;
  }
  *inputs = sqlite::JoinInts(in);
  *outputs = sqlite::JoinInts(out);
}

// What a meta row stores: secrets never reach the file (trace/redact.h).
std::string StoredMetaValue(const std::string& key, std::string value) {
  return key == "command_line" ? RedactCommandLine(value) : RedactIfSecret(key, std::move(value));
}

std::vector<std::pair<std::string, std::string>> MetaRows(const RunMetadata& meta) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"format", schema::kFormatName},
      {"schema_version", std::to_string(kTraceSchemaVersion)},
      {"label", meta.label},
      {"command_line", meta.command_line},
      {"start_unix_ns", std::to_string(meta.start_unix_ns)},
      {"start_monotonic_ns", std::to_string(meta.start_monotonic_ns)},
      {"host", meta.host},
      {"cwd", meta.cwd},
      {"engine", meta.engine},
  };
  for (const auto& [name, version] : meta.versions) rows.emplace_back("version." + name, version);
  for (const auto& [key, value] : meta.extra) rows.emplace_back(key, value);
  for (auto& [key, value] : rows) value = StoredMetaValue(key, std::move(value));
  return rows;
}

// Whether a thread of this process may go from SCHED_IDLE back to normal
// priority: that needs CAP_SYS_NICE or an RLIMIT_NICE that allows its nice
// value (sched(7)). Without it an idle writer could not be raised when the
// program waits on it, and a busy machine would starve it.
bool CanRaiseFromIdle() {
  rlimit nice_limit{};
  if (getrlimit(RLIMIT_NICE, &nice_limit) == 0) {
    const int nice = getpriority(PRIO_PROCESS, 0);
    if (nice_limit.rlim_cur == RLIM_INFINITY || static_cast<long>(nice_limit.rlim_cur) >= 20 - nice) return true;
  }
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    const uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    constexpr int kCapSysNice = 23;
    return (caps >> kCapSysNice) & 1;
  }
  return false;
}

size_t Bytes(const std::string& s) { return s.size(); }
size_t Bytes(const ConfigEntry& c) { return sizeof(c) + c.key.size() + c.value.size() + c.source.size(); }
size_t Bytes(const EnergySample& e) { return sizeof(e) + e.domain.size() + e.meter.size(); }
size_t Bytes(const DeviceActivity& a) { return sizeof(a) + a.device.size() + a.kind.size(); }
size_t Bytes(const RuntimeState& r) {
  size_t n = sizeof(r);
  for (const auto& [k, v] : r.values) n += 64 + k.size() + v.size();  // 64: a map node
  return n;
}
size_t Bytes(const StateSetter& s) { return sizeof(s) + s.key.size() + s.value.size() + s.where.size(); }
template <typename T>
size_t Bytes(const T& v) {
  return sizeof(v);
}

}  // namespace

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                           const RunMetadata& meta,
                                                           TraceWriterOptions options) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    // A new run replaces an old file of the same name, never appends to it.
    std::filesystem::remove(path, ec);
    std::filesystem::remove(path + "-wal", ec);
    std::filesystem::remove(path + "-shm", ec);
    if (ec) return PermissionDenied("cannot replace existing trace " + path + ": " + ec.message());
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                                  SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status st = sqlite::ErrorFrom(db, rc, "cannot create trace " + path);
    sqlite3_close(db);
    return st;
  }
  // WAL: each batch is one cheap append-only commit, and a reader after a
  // SIGKILL recovers every committed batch from the -wal file.
  // synchronous=OFF: a killed process loses nothing the OS has (the SIGKILL
  // guarantee); only a power cut could lose the tail, and a trace is not a
  // ledger. It keeps fsyncs out of the traced program's run.
  // 8 KiB pages: a --values fingerprint row (~1.4 kB for a 64x64 tensor)
  // left a third of each 4 KiB page empty (two rows fit, not three); 8 KiB
  // pages hold five (docs/PERFORMANCE.md "Trace size"). Set before the first
  // table, as WAL mode fixes the page size.
  Status st = sqlite::Exec(db, "PRAGMA page_size=8192; PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;");
  if (st.ok()) st = sqlite::Exec(db, "BEGIN");
  if (st.ok()) st = sqlite::Exec(db, schema::CreateTablesSql().c_str());
  if (st.ok()) {
    auto insert = sqlite::Statement::Prepare(db, schema::InsertSql(schema::TableId::kMeta).c_str());
    if (!insert.ok()) {
      st = insert.status();
    } else {
      for (const auto& [k, v] : MetaRows(meta)) {
        insert->BindText(1, k);
        insert->BindText(2, v);
        st = insert->Run(db);
        if (!st.ok()) break;
      }
    }
  }
  if (st.ok()) st = sqlite::Exec(db, "COMMIT");
  if (!st.ok()) {
    sqlite3_close(db);
    return Status(st.code(), "cannot create trace " + path + ": " + st.message());
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, db, options));
}

TraceWriter::TraceWriter(std::string path, sqlite3* db, TraceWriterOptions options)
    : path_(std::move(path)),
      db_(db),
      options_(options),
      pending_(std::make_unique<Batch>()),
      spare_(std::make_unique<Batch>()),
      dicts_(std::make_unique<Dictionaries>(options.dictionary_cache_bytes)) {
  idle_priority_ = options_.idle_priority_writer && CanRaiseFromIdle();
  thread_ = std::thread([this] { ThreadMain(); });
}

TraceWriter::~TraceWriter() {
  Status st = Close();
  if (!st.ok()) std::fprintf(stderr, "magneton: closing %s: %s\n", path_.c_str(), st.message().c_str());
}

// Each append adds its record's approximate size to pending_bytes_ and then
// applies the bound (AfterAppend).
#define MAGNETON_APPEND(field, value)       \
  do {                                      \
    std::unique_lock<std::mutex> lock(mu_); \
    pending_bytes_ += Bytes(value);         \
    pending_->field.push_back(value);       \
    AfterAppend(lock);                      \
  } while (0)

void TraceWriter::AppendString(int64_t id, std::string value) {
  std::unique_lock<std::mutex> lock(mu_);
  pending_bytes_ += sizeof(std::pair<int64_t, std::string>) + value.size();
  pending_->strings.emplace_back(id, std::move(value));
  AfterAppend(lock);
}
void TraceWriter::AppendFrame(const Frame& frame) { MAGNETON_APPEND(frames, frame); }
void TraceWriter::AppendCallPath(const CallPath& path) { MAGNETON_APPEND(call_paths, path); }
void TraceWriter::AppendScope(const Scope& scope) { MAGNETON_APPEND(scopes, scope); }
void TraceWriter::AppendOp(OpEvent op, const std::vector<OpTensor>& links) {
  // Freed when this returns, on the caller's thread (Batch).
  const SharedText args = std::move(op.args);
  AppendOp(std::move(op), links, args.str());
}
void TraceWriter::AppendOp(OpEvent op, const std::vector<OpTensor>& links, std::string_view args) {
  op.args = {};  // the row's text is `args`
  std::unique_lock<std::mutex> lock(mu_);
  pending_bytes_ += sizeof(OpEvent) + args.size() + links.size() * sizeof(OpTensor) + 2 * sizeof(size_t);
  pending_->op_tensors.insert(pending_->op_tensors.end(), links.begin(), links.end());
  pending_->op_links_end.push_back(pending_->op_tensors.size());
  pending_->op_args_text.append(args);
  pending_->op_args_end.push_back(pending_->op_args_text.size());
  pending_->ops.push_back(std::move(op));
  AfterAppend(lock);
}
void TraceWriter::AppendTensor(TensorMeta tensor) {
  const SharedDims shape = std::move(tensor.shape), strides = std::move(tensor.strides);
  AppendTensor(tensor, shape.vec(), strides.vec());
}
void TraceWriter::AppendTensor(const TensorMeta& header, std::span<const int64_t> shape,
                               std::span<const int64_t> strides) {
  std::unique_lock<std::mutex> lock(mu_);
  pending_bytes_ += sizeof(TensorMeta) + (shape.size() + strides.size()) * sizeof(int64_t) + 2 * sizeof(size_t) +
                    header.dtype.size() + header.device.size();
  Batch& b = *pending_;
  // Copied whole, so that a field added to TensorMeta later is kept; its
  // own shape and strides are dropped (empty from the recorder: nothing to
  // allocate), the spans are what the row stores.
  TensorMeta& row = b.tensors.emplace_back(header);
  row.shape = {};
  row.strides = {};
  b.tensor_dims.insert(b.tensor_dims.end(), shape.begin(), shape.end());
  b.tensor_dims_end.push_back(b.tensor_dims.size());
  b.tensor_dims.insert(b.tensor_dims.end(), strides.begin(), strides.end());
  b.tensor_dims_end.push_back(b.tensor_dims.size());
  AfterAppend(lock);
}
void TraceWriter::AppendConfig(ConfigEntry entry) {
  entry.value = RedactIfSecret(entry.key, std::move(entry.value));
  MAGNETON_APPEND(config, std::move(entry));
}
void TraceWriter::AppendEnergySample(EnergySample s) { MAGNETON_APPEND(energy_samples, std::move(s)); }
void TraceWriter::AppendDeviceActivity(DeviceActivity a) {
  MAGNETON_APPEND(device_activities, std::move(a));
}
void TraceWriter::AppendFingerprint(int64_t tensor_id, std::string kind, std::string data) {
  std::unique_lock<std::mutex> lock(mu_);
  pending_bytes_ += sizeof(Batch::FingerprintRow) + kind.size() + data.size();
  pending_->fingerprints.push_back({tensor_id, std::move(kind), std::move(data)});
  AfterAppend(lock);
}
void TraceWriter::AppendRuntimeState(RuntimeState state) {
  // Values pass the same rule as config entries (an ORT session config entry
  // may name a key or token).
  for (auto& [key, value] : state.values) value = RedactIfSecret(key, std::move(value));
  MAGNETON_APPEND(runtime_states, std::move(state));
}
void TraceWriter::AppendStateSetter(StateSetter setter) {
  setter.value = RedactIfSecret(setter.key, std::move(setter.value));
  MAGNETON_APPEND(state_setters, std::move(setter));
}
void TraceWriter::SetMeta(const std::string& key, const std::string& value) {
  std::string stored = StoredMetaValue(key, value);
  std::unique_lock<std::mutex> lock(mu_);
  pending_bytes_ += sizeof(std::pair<std::string, std::string>) + key.size() + stored.size();
  pending_->meta.emplace_back(key, std::move(stored));
  AfterAppend(lock);
}
#undef MAGNETON_APPEND

int64_t TraceWriter::committed_batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return committed_batches_;
}

WriterBackpressure TraceWriter::backpressure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backpressure_;
}

void TraceWriter::AfterAppend(std::unique_lock<std::mutex>& lock) {
  // A quarter full: commit now rather than at the next interval, so that a
  // fast program rarely reaches the bound at all.
  if (!early_wake_sent_ && pending_bytes_ >= options_.max_pending_bytes / 4) {
    early_wake_sent_ = true;
    wake_.notify_one();
  }
  if (pending_bytes_ < options_.max_pending_bytes || stop_) return;
  // Full: wait until the writer takes this batch. An idle-priority writer is
  // raised first, since the program now waits on it (it lowers itself again
  // once it has caught up).
  const int64_t start_ns = MonotonicNowNs();
  if (idle_priority_ && !writer_raised_) {
    writer_raised_ = true;
    SetWriterIdle(false);
  }
  const int64_t want = taken_batches_ + 1;
  wake_.notify_one();
  taken_.wait(lock, [&] { return taken_batches_ >= want || stop_; });
  ++backpressure_.waits;
  backpressure_.wait_ns += MonotonicNowNs() - start_ns;
}

void TraceWriter::SetWriterIdle(bool idle) {
  sched_param param{};
  pthread_setschedparam(thread_.native_handle(), idle ? SCHED_IDLE : SCHED_OTHER, &param);  // best effort
}

Status TraceWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return FailedPrecondition("trace writer for " + path_ + " is closed");
  int64_t want = ++appended_seq_;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return committed_seq_ >= want || !thread_status_.ok(); });
  return thread_status_;
}

Status TraceWriter::Close() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) return thread_status_;
    closed_ = true;
    stop_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  Status st = thread_status_;
  // Fold the WAL into the main file so a finished run is exactly one file.
  if (st.ok()) st = sqlite::Exec(db_, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;");
  sqlite3_close(db_);
  db_ = nullptr;
  return st;
}

void TraceWriter::ThreadMain() {
  std::unique_lock<std::mutex> lock(mu_);
  if (idle_priority_) {
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);  // best effort
  }
  pthread_setname_np(pthread_self(), "magneton-write");
  while (true) {
    wake_.wait_for(lock, std::chrono::milliseconds(options_.flush_interval_ms),
                   [&] { return stop_ || appended_seq_ > committed_seq_ || early_wake_sent_; });
    int64_t seq = appended_seq_;
    bool stopping = stop_;
    std::unique_ptr<Batch> batch = std::move(pending_);
    pending_ = std::move(spare_);
    pending_bytes_ = 0;
    const bool filled_early = early_wake_sent_;  // taken for its size, not at the interval
    early_wake_sent_ = false;
    ++taken_batches_;
    taken_.notify_all();
    lock.unlock();
    const bool had_records = !batch->empty();
    Status st = had_records ? WriteBatch(*batch) : Status::Ok();
    batch->Clear();
    lock.lock();
    spare_ = std::move(batch);  // at most two batches ever exist
    if (!st.ok() && thread_status_.ok()) thread_status_ = st;
    if (had_records && st.ok()) ++committed_batches_;
    committed_seq_ = seq;
    flushed_.notify_all();
    // Raised under back-pressure, the writer stays at normal priority while
    // the program fills batches faster than the interval (lowered at once, a
    // starved writer would make it wait again a moment later), and goes back
    // to idle once a batch is taken at the interval.
    if (writer_raised_ && !filled_early && !early_wake_sent_) {
      writer_raised_ = false;
      sched_param param{};
      pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
    }
    if (stopping) break;
  }
  // The writer's own cost, so that recording overhead can be explained.
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  double cpu_ms = cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6;
  const WriterBackpressure backpressure = backpressure_;
  lock.unlock();
  Batch last;
  last.meta.emplace_back("trace.writer_cpu_ms", std::to_string(cpu_ms));
  // How often the program waited on the writer (TraceWriterOptions::max_pending_bytes).
  last.meta.emplace_back("trace.backpressure_waits", std::to_string(backpressure.waits));
  last.meta.emplace_back("trace.backpressure_wait_ms", std::to_string(backpressure.wait_ns / 1'000'000));
  last.meta.emplace_back("trace.writer_priority", idle_priority_ ? "idle, raised while the program waits on it"
                                                                 : "normal");
  Status st = WriteBatch(last);
  lock.lock();
  if (!st.ok() && thread_status_.ok()) thread_status_ = st;
}

Status TraceWriter::WriteBatch(Batch& b) {
  Status st = WriteBatchRows(b);
  if (!st.ok()) dicts_->Forget();  // its dictionary rows were rolled back with it
  return st;
}

Status TraceWriter::WriteBatchRows(Batch& b) {
  return sqlite::InTransaction(db_, [&]() -> Status {
    using sqlite::Statement;
    if (!b.meta.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(Statement s,
                                Statement::Prepare(db_, schema::InsertSql(schema::TableId::kMeta, true).c_str()));
      for (auto& [k, v] : b.meta) {
        s.BindText(1, k);
        s.BindText(2, v);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.strings.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kStrings).c_str()));
      for (auto& [id, v] : b.strings) {
        s.BindInt(1, id);
        s.BindText(2, v);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.frames.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kFrames).c_str()));
      for (auto& f : b.frames) {
        s.BindInt(1, f.id);
        s.BindInt(2, f.file_id);
        s.BindInt(3, f.line);
        s.BindInt(4, f.function_id);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.call_paths.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kCallPaths).c_str()));
      for (auto& p : b.call_paths) {
        s.BindInt(1, p.id);
        s.BindInt(2, p.frame_id);
        s.BindNullableId(3, p.parent_id);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.scopes.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kScopes).c_str()));
      for (auto& sc : b.scopes) {
        s.BindInt(1, sc.id);
        s.BindInt(2, sc.name_id);
        s.BindInt(3, sc.type_id);
        s.BindNullableId(4, sc.parent_id);
        s.BindNullableId(5, sc.init_call_path_id);
        if (sc.init_args.empty()) {
          s.BindNull(6);
        } else {
          s.BindText(6, sc.init_args);
        }
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.ops.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kOpRows).c_str()));
      MAGNETON_ASSIGN_OR_RETURN(
          Statement add_args, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kOpArgs).c_str()));
      MAGNETON_ASSIGN_OR_RETURN(
          Statement add_thread, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kThreads).c_str()));
      // Ops arrive as they end, children before their parent: inserted in id
      // order, SQLite appends to the table's last page instead of splitting
      // pages in the middle (which left them ~70% full).
      std::vector<size_t> order(b.ops.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return b.ops[x].id < b.ops[y].id; });
      std::string inputs, outputs, args;
      bool added = false;
      // Ops of one batch mostly come from one thread: its id is interned once.
      int64_t last_os_tid = 0, last_thread = kNoId;
      for (size_t i : order) {
        const OpEvent& op = b.ops[i];
        LinksText(b.op_tensors, i == 0 ? 0 : b.op_links_end[i - 1], b.op_links_end[i], &inputs, &outputs);
        const size_t args_begin = i == 0 ? 0 : b.op_args_end[i - 1];
        args.assign(b.op_args_text, args_begin, b.op_args_end[i] - args_begin);
        const int64_t args_id = dicts_->op_args.Intern(args, &added);
        if (added) {
          add_args.BindInt(1, args_id);
          add_args.BindText(2, args);
          MAGNETON_RETURN_IF_ERROR(add_args.Run(db_));
        }
        int64_t thread = last_thread;
        added = false;
        if (last_thread == kNoId || op.thread_id != last_os_tid) {
          thread = dicts_->threads.Intern(std::to_string(op.thread_id), &added);
          last_os_tid = op.thread_id;
          last_thread = thread;
        }
        if (added) {
          add_thread.BindInt(1, thread);
          add_thread.BindInt(2, op.thread_id);
          MAGNETON_RETURN_IF_ERROR(add_thread.Run(db_));
        }
        s.BindInt(1, op.id);
        s.BindInt(2, op.name_id);
        s.BindInt(3, thread);
        s.BindInt(4, op.start_ns);
        s.BindInt(5, op.end_ns - op.start_ns);
        if (op.parent_id == kNoId) {
          s.BindNull(6);
        } else {
          s.BindInt(6, op.id - op.parent_id);
        }
        s.BindNullableId(7, op.scope_id);
        s.BindNullableId(8, op.call_path_id);
        s.BindInt(9, static_cast<int64_t>(op.correlation_id));
        s.BindInt(10, args_id);
        s.BindText(11, inputs);
        s.BindText(12, outputs);
        s.BindNullableId(13, op.state_id);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.tensors.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kTensorRows).c_str()));
      MAGNETON_ASSIGN_OR_RETURN(
          Statement add_layout, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kLayouts).c_str()));
      std::string shape, strides, key;
      bool added = false;
      for (size_t i = 0; i < b.tensors.size(); ++i) {
        const TensorMeta& t = b.tensors[i];
        const int64_t* dims = b.tensor_dims.data();
        const size_t shape_begin = i == 0 ? 0 : b.tensor_dims_end[2 * i - 1];
        const size_t shape_end = b.tensor_dims_end[2 * i], strides_end = b.tensor_dims_end[2 * i + 1];
        sqlite::JoinInts({dims + shape_begin, dims + shape_end}, &shape);
        sqlite::JoinInts({dims + shape_end, dims + strides_end}, &strides);
        // NUL cannot occur in any of the four texts.
        key.assign(shape).append(1, '\0').append(strides).append(1, '\0').append(t.dtype).append(1, '\0').append(t.device);
        const int64_t layout_id = dicts_->layouts.Intern(key, &added);
        if (added) {
          add_layout.BindInt(1, layout_id);
          add_layout.BindText(2, shape);
          add_layout.BindText(3, strides);
          add_layout.BindText(4, t.dtype);
          add_layout.BindText(5, t.device);
          MAGNETON_RETURN_IF_ERROR(add_layout.Run(db_));
        }
        s.BindInt(1, t.id);
        s.BindInt(2, static_cast<int64_t>(t.storage_addr));
        s.BindInt(3, t.storage_offset);
        s.BindInt(4, layout_id);
        s.BindInt(5, t.version);
        s.BindNullableId(6, t.producer_op_id);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.config.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kConfig, true).c_str()));
      for (auto& c : b.config) {
        s.BindText(1, c.key);
        s.BindText(2, c.value);
        s.BindText(3, c.source);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.energy_samples.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kEnergySamples).c_str()));
      for (auto& e : b.energy_samples) {
        s.BindText(1, e.domain);
        s.BindInt(2, e.t_ns);
        s.BindDouble(3, e.energy_uj);
        s.BindDouble(4, e.power_mw);
        s.BindText(5, ProvenanceName(e.provenance));
        s.BindText(6, e.meter);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.fingerprints.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kFingerprints, true).c_str()));
      for (auto& f : b.fingerprints) {
        s.BindInt(1, f.tensor_id);
        s.BindText(2, f.kind);
        s.BindBlob(3, f.data);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.runtime_states.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kRuntimeStates).c_str()));
      for (auto& state : b.runtime_states) {
        for (auto& [key, value] : state.values) {
          s.BindInt(1, state.id);
          s.BindText(2, key);
          s.BindText(3, value);
          MAGNETON_RETURN_IF_ERROR(s.Run(db_));
        }
      }
    }
    if (!b.state_setters.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kStateSetters).c_str()));
      for (auto& setter : b.state_setters) {
        s.BindText(1, setter.key);
        s.BindText(2, setter.value);
        s.BindText(3, setter.where);
        s.BindInt(4, setter.t_ns);
        s.BindInt(5, setter.thread_id);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    if (!b.device_activities.empty()) {
      MAGNETON_ASSIGN_OR_RETURN(
          Statement s, Statement::Prepare(db_, schema::InsertSql(schema::TableId::kDeviceActivities).c_str()));
      for (auto& a : b.device_activities) {
        s.BindInt(1, static_cast<int64_t>(a.correlation_id));
        s.BindText(2, a.device);
        s.BindInt(3, a.stream);
        s.BindInt(4, a.name_id);
        s.BindInt(5, a.start_ns);
        s.BindInt(6, a.end_ns);
        s.BindNullableId(7, a.op_id);
        s.BindText(8, a.kind);
        s.BindNullableId(9, a.graph_id);
        s.BindNullableId(10, a.graph_node_id);
        s.BindNullableId(11, a.captured_op_id);
        MAGNETON_RETURN_IF_ERROR(s.Run(db_));
      }
    }
    return Status::Ok();
  });
}

}  // namespace magneton
