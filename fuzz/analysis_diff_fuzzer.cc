// libFuzzer target (issue 33): a hostile trace must never hang or blow up the
// analysis. The input is not a trace but a program of structural edits
// (FuzzedDataProvider) applied through SQL to an in-memory copy of one side
// of a good recorded pair (fuzz/seed_traces/analysis_diff/: a tiny torch
// script recorded with --values on its slow and its fast path): op parents
// (parent_back), scope and call-path parents, tensor ids and producers, an
// op's tensor lists, fingerprint blobs, meta values, deleted rows. The edited
// file goes through the real path of `magneton diff` (AnalysisSession::
// OpenRuns: the reader, its structural checks, the fingerprints); when it is
// accepted, match -> detect -> diagnose -> the terminal and JSON reports run
// against the other, unedited side. No re-run, no line trace, no --confirm:
// only Diff() is called and no ProcessRunner is linked, so nothing executes.
//
// One input in four instead edits the Trace in memory after a good read
// (parents anywhere, loops included) and hands it to AnalysisSession::
// FromData, which does not check structure: the analysis walks themselves
// must end on any Trace.
//
//   cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
//         -DMAGNETON_BUILD_FUZZERS=ON -DMAGNETON_BUILD_PYTHON=OFF
//   ninja -C build/fuzz analysis_diff_fuzzer
//   mkdir -p /tmp/fuzz-analysis_diff && build/fuzz/fuzz/analysis_diff_fuzzer -timeout=10 -rss_limit_mb=2048 \
//         -max_total_time=600 -print_final_stats=1 /tmp/fuzz-analysis_diff fuzz/corpus/analysis_diff
#include <fuzzer/FuzzedDataProvider.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "analysis/session_data.h"
#include "fingerprint/fingerprint_map.h"
#include "magneton/analysis.h"
#include "magneton/trace_reader.h"
#include "trace/trace_validate.h"

#ifndef MAGNETON_FUZZ_SEED_TRACES
#define MAGNETON_FUZZ_SEED_TRACES "fuzz/seed_traces/analysis_diff"
#endif

namespace {

using magneton::AnalysisOptions;
using magneton::AnalysisSession;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "analysis_diff_fuzzer: cannot read the seed trace %s (set MAGNETON_FUZZ_SEED_TRACES)\n",
                 path.c_str());
    std::abort();
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Side {
  std::string path;   // the unedited file
  std::string bytes;  // its contents
  magneton::Trace trace;
  magneton::FingerprintMap fingerprints;
};

struct Seeds {
  Side side[2];
  std::string scratch;  // where an edited copy is written (per process: -jobs runs several)
};

const Seeds& GetSeeds() {
  static const Seeds* seeds = [] {
    auto* s = new Seeds;
    const char* dir = std::getenv("MAGNETON_FUZZ_SEED_TRACES");
    const std::string root = dir ? dir : MAGNETON_FUZZ_SEED_TRACES;
    const char* names[2] = {"slow.mtrace", "fast.mtrace"};
    for (int i = 0; i < 2; ++i) {
      Side& side = s->side[i];
      side.path = root + "/" + names[i];
      side.bytes = ReadFile(side.path);
      auto trace = magneton::ReadTrace(side.path);
      auto fps = magneton::LoadFingerprints(side.path);
      if (!trace.ok() || !fps.ok()) {
        std::fprintf(stderr, "analysis_diff_fuzzer: the seed %s does not read\n", side.path.c_str());
        std::abort();
      }
      side.trace = std::move(trace).value();
      side.fingerprints = std::move(fps).value();
    }
    const char* tmp = std::getenv("TMPDIR");
    s->scratch = std::string(tmp ? tmp : "/tmp") + "/magneton-analysis-fuzz-" + std::to_string(getpid()) + ".mtrace";
    return s;
  }();
  return *seeds;
}

// An integer chosen to hit edges: small ids, their neighbours, signs, extremes.
int64_t PickInt(FuzzedDataProvider& in, int64_t near) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return near;
    case 3: return near + in.ConsumeIntegralInRange<int64_t>(-3, 3);
    case 4: return in.ConsumeIntegralInRange<int64_t>(-4, 64);
    case 5: return INT64_MAX - in.ConsumeIntegralInRange<int64_t>(0, 2);
    case 6: return INT64_MIN + in.ConsumeIntegralInRange<int64_t>(0, 2);
    default: return in.ConsumeIntegral<int64_t>();
  }
}

// One SQL edit; errors (a constraint, a missing row) are simply no edit.
void Exec(sqlite3* db, const std::string& sql, const std::vector<int64_t>& ints, const std::string* text = nullptr,
          const std::string* blob = nullptr) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    sqlite3_finalize(st);
    return;
  }
  int k = 1;
  if (text) sqlite3_bind_text(st, k++, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
  if (blob) sqlite3_bind_blob(st, k++, blob->data(), static_cast<int>(blob->size()), SQLITE_TRANSIENT);
  for (int64_t v : ints) sqlite3_bind_int64(st, k++, v);
  sqlite3_step(st);
  sqlite3_finalize(st);
}

// One more than the table's largest rowid (0 when empty), at most 2^20 + 1.
int64_t Count(sqlite3* db, const char* table) {
  sqlite3_stmt* st = nullptr;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db, (std::string("SELECT max(rowid) FROM ") + table).c_str(), -1, &st, nullptr) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    // An edited id can be anything: the ranges drawn from this stay small.
    n = std::clamp<int64_t>(sqlite3_column_int64(st, 0), -1, int64_t{1} << 20) + 1;
  }
  sqlite3_finalize(st);
  return n;
}

// A tensor list as the op rows store it ("5,-1,7").
std::string TensorList(FuzzedDataProvider& in, int64_t tensors) {
  std::string out;
  const int n = in.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < n; ++i) {
    if (i) out += ",";
    const int64_t id = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-1, tensors + 1) : PickInt(in, tensors);
    out += std::to_string(id);
  }
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) out += in.ConsumeRandomLengthString(8);  // malformed
  return out;
}

void EditFile(FuzzedDataProvider& in, sqlite3* db) {
  const int64_t ops = Count(db, "op_rows"), tensors = Count(db, "tensor_rows"), scopes = Count(db, "scopes"),
                paths = Count(db, "call_paths");
  static const char* const kTables[] = {"op_rows", "tensor_rows", "scopes", "call_paths", "frames", "strings",
                                        "fingerprints", "layouts", "op_args", "threads", "energy_samples",
                                        "device_activities", "runtime_states", "config", "meta"};
  const int edits = in.ConsumeIntegralInRange<int>(1, 8);
  for (int e = 0; e < edits && in.remaining_bytes() > 0; ++e) {
    const int64_t op = in.ConsumeIntegralInRange<int64_t>(0, ops > 0 ? ops - 1 : 0);
    switch (in.ConsumeIntegralInRange<int>(0, 13)) {
      case 0:  // the attack of issue 33 and its relatives
        Exec(db, "UPDATE op_rows SET parent_back = ? WHERE id = ?", {PickInt(in, op), op});
        break;
      case 1:
        Exec(db, "UPDATE op_rows SET parent_back = NULL WHERE id = ?", {op});
        break;
      case 2: {
        const int64_t s = in.ConsumeIntegralInRange<int64_t>(0, scopes);
        Exec(db, "UPDATE scopes SET parent_id = ? WHERE id = ?", {PickInt(in, s), s});
        break;
      }
      case 3: {
        const int64_t p = in.ConsumeIntegralInRange<int64_t>(0, paths);
        Exec(db, in.ConsumeBool() ? "UPDATE call_paths SET parent_id = ? WHERE id = ?"
                                  : "UPDATE call_paths SET frame_id = ? WHERE id = ?",
             {PickInt(in, p), p});
        break;
      }
      case 4: {  // a tensor's producer
        const int64_t t = in.ConsumeIntegralInRange<int64_t>(0, tensors);
        Exec(db, "UPDATE tensor_rows SET producer_op_id = ? WHERE id = ?", {PickInt(in, op), t});
        break;
      }
      case 5: {  // a tensor's id
        const int64_t t = in.ConsumeIntegralInRange<int64_t>(0, tensors);
        Exec(db, "UPDATE tensor_rows SET id = ? WHERE id = ?", {PickInt(in, t), t});
        break;
      }
      case 6: {  // an op's id
        Exec(db, "UPDATE op_rows SET id = ? WHERE id = ?", {PickInt(in, op), op});
        break;
      }
      case 7: {  // an op's tensor lists
        const std::string list = TensorList(in, tensors);
        Exec(db, in.ConsumeBool() ? "UPDATE op_rows SET inputs = ? WHERE id = ?"
                                  : "UPDATE op_rows SET outputs = ? WHERE id = ?",
             {op}, &list);
        break;
      }
      case 8: {  // an op's other references
        static const char* const kColumns[] = {"scope_id", "call_path_id", "state_id", "name_id", "thread", "args_id"};
        const char* column = kColumns[in.ConsumeIntegralInRange<int>(0, 5)];
        Exec(db, std::string("UPDATE op_rows SET ") + column + " = ? WHERE id = ?", {PickInt(in, 1), op});
        break;
      }
      case 9: {  // a fingerprint blob: bytes changed, cut or replaced
        const int64_t t = in.ConsumeIntegralInRange<int64_t>(0, tensors);
        const std::string blob = in.ConsumeRandomLengthString(64);
        switch (in.ConsumeIntegralInRange<int>(0, 2)) {
          case 0: Exec(db, "UPDATE fingerprints SET data = ? WHERE tensor_id = ?", {t}, nullptr, &blob); break;
          case 1: Exec(db, "UPDATE fingerprints SET data = substr(data, 1, ?) WHERE tensor_id = ?",
                       {in.ConsumeIntegralInRange<int64_t>(0, 64), t}); break;
          default: Exec(db, "UPDATE fingerprints SET data = ? || substr(data, ?) WHERE tensor_id = ?",
                        {in.ConsumeIntegralInRange<int64_t>(1, 200), t}, nullptr, &blob); break;
        }
        break;
      }
      case 10: {  // a fingerprint's tensor
        const int64_t t = in.ConsumeIntegralInRange<int64_t>(0, tensors);
        Exec(db, "UPDATE fingerprints SET tensor_id = ? WHERE tensor_id = ?", {PickInt(in, t), t});
        break;
      }
      case 11: {  // a meta value (by position among the keys)
        const std::string value = in.ConsumeBool() ? std::to_string(PickInt(in, 0)) : in.ConsumeRandomLengthString(24);
        Exec(db, "UPDATE meta SET value = ? WHERE key = (SELECT key FROM meta ORDER BY key LIMIT 1 OFFSET ?)",
             {in.ConsumeIntegralInRange<int64_t>(0, 40)}, &value);
        break;
      }
      case 12: {  // a deleted row
        const char* table = kTables[in.ConsumeIntegralInRange<size_t>(0, std::size(kTables) - 1)];
        Exec(db, std::string("DELETE FROM ") + table + " WHERE rowid = ?",
             {in.ConsumeIntegralInRange<int64_t>(0, std::max<int64_t>(Count(db, table), 1))});
        break;
      }
      default: {  // rows of a table gone from some id on
        const char* table = kTables[in.ConsumeIntegralInRange<size_t>(0, std::size(kTables) - 1)];
        Exec(db, std::string("DELETE FROM ") + table + " WHERE rowid >= ?",
             {in.ConsumeIntegralInRange<int64_t>(0, std::max<int64_t>(Count(db, table), 1))});
        break;
      }
    }
  }
}

// The whole diff with nothing executed, and both renderings read through.
void Analyse(AnalysisSession& session) {
  if (!session.Diff().ok()) return;
  volatile size_t sink = session.TerminalReport(true).size() + session.TerminalReport(false).size();
  sink = sink + session.JsonReport().size();
  (void)sink;
}

// Mode 1: the edited file through the path `magneton diff` takes.
void FuzzFile(FuzzedDataProvider& in) {
  const Seeds& seeds = GetSeeds();
  const int edited = in.ConsumeIntegralInRange<int>(0, 1);
  const Side& side = seeds.side[edited];
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) std::abort();
  auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(side.bytes.size()));
  std::memcpy(copy, side.bytes.data(), side.bytes.size());
  // A file in WAL mode does not deserialize: read it as a rollback-journal
  // one (as ReadTraceFromBytes does; the seeds are checkpointed).
  if (side.bytes.size() > 19 && copy[18] == 2 && copy[19] == 2) copy[18] = copy[19] = 1;
  if (sqlite3_deserialize(db, "main", copy, static_cast<sqlite3_int64>(side.bytes.size()),
                          static_cast<sqlite3_int64>(side.bytes.size()),
                          SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) != SQLITE_OK) {
    std::abort();
  }
  EditFile(in, db);
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db, "main", &size, 0);
  sqlite3_close(db);
  if (!bytes) return;
  // Whatever the reader accepts has the structure every analysis stage
  // relies on (it checks row by row; trace/trace_validate.h states it whole).
  if (auto read = magneton::ReadTraceFromBytes(bytes, static_cast<size_t>(size)); read.ok()) {
    if (magneton::Status st = magneton::ValidateTraceStructure(*read); !st.ok()) {
      std::fprintf(stderr, "analysis_diff_fuzzer: the reader accepted a trace that is not valid: %s\n",
                   st.message().c_str());
      std::abort();
    }
  }
  {
    std::ofstream out(seeds.scratch, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes), size);
  }
  sqlite3_free(bytes);
  const std::vector<std::string> a = {edited == 0 ? seeds.scratch : seeds.side[0].path};
  const std::vector<std::string> b = {edited == 1 ? seeds.scratch : seeds.side[1].path};
  auto session = AnalysisSession::OpenRuns(a, b, AnalysisOptions{});
  if (session.ok()) Analyse(**session);
}

// Mode 2: a good read, then parents and references anywhere, given to the
// analysis as a binding would (FromData checks no structure).
void FuzzMemory(FuzzedDataProvider& in) {
  const Seeds& seeds = GetSeeds();
  magneton::Trace traces[2] = {seeds.side[0].trace, seeds.side[1].trace};
  const int edits = in.ConsumeIntegralInRange<int>(1, 16);
  for (int e = 0; e < edits && in.remaining_bytes() > 0; ++e) {
    magneton::Trace& t = traces[in.ConsumeIntegralInRange<int>(0, 1)];
    auto pick = [&](size_t n) { return n ? in.ConsumeIntegralInRange<size_t>(0, n - 1) : 0; };
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0:
        if (!t.ops.empty()) {
          auto& op = t.ops[pick(t.ops.size())];
          op.parent_id = PickInt(in, op.id);
        }
        break;
      case 1:
        if (!t.scopes.empty()) {
          auto& s = t.scopes[pick(t.scopes.size())];
          const int64_t n = static_cast<int64_t>(t.scopes.size());
          s.parent_id = in.ConsumeBool() ? PickInt(in, s.id) : in.ConsumeIntegralInRange<int64_t>(-1, n);
        }
        break;
      case 2:
        if (!t.call_paths.empty()) {
          auto& p = t.call_paths[pick(t.call_paths.size())];
          const int64_t n = static_cast<int64_t>(t.call_paths.size());
          p.parent_id = in.ConsumeBool() ? PickInt(in, p.id) : in.ConsumeIntegralInRange<int64_t>(-1, n);
        }
        break;
      case 3:
        if (!t.tensors.empty()) {
          auto& m = t.tensors[pick(t.tensors.size())];
          m.producer_op_id = in.ConsumeIntegralInRange<int64_t>(-1, static_cast<int64_t>(t.ops.size()));
        }
        break;
      case 4:  // every op's parent: itself, the next op, or the first
        for (size_t i = 0; i < t.ops.size(); ++i) {
          const int how = in.ConsumeIntegralInRange<int>(0, 2);
          t.ops[i].parent_id = how == 0 ? t.ops[i].id : how == 1 ? t.ops[(i + 1) % t.ops.size()].id : t.ops[0].id;
          if (in.remaining_bytes() == 0) break;
        }
        break;
      default:  // every scope's and call path's parent: the next one, round
        for (size_t i = 0; i < t.scopes.size(); ++i) {
          t.scopes[i].parent_id = static_cast<int64_t>((i + 1) % t.scopes.size());
        }
        for (size_t i = 0; i < t.call_paths.size(); ++i) {
          t.call_paths[i].parent_id = static_cast<int64_t>((i + 1) % t.call_paths.size());
        }
        break;
    }
  }
  auto data = std::make_unique<magneton::analysis::SessionData>();
  data->a.push_back({seeds.side[0].path, std::move(traces[0]), seeds.side[0].fingerprints});
  data->b.push_back({seeds.side[1].path, std::move(traces[1]), seeds.side[1].fingerprints});
  auto session = AnalysisSession::FromData(std::move(data));
  if (session.ok()) Analyse(**session);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) {
    FuzzMemory(in);
  } else {
    FuzzFile(in);
  }
  return 0;
}
