#include "test_util.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "trace/fingerprint_rows.h"
#include "trace/schema.h"

namespace magneton::testing {

namespace {

// This process's folder for test files, made fresh. It was named by the pid
// alone, and pids are reused: ctest runs every test in a process of its own,
// so a test that expects a path not to exist yet (a key made on first use,
// a manifest found by its stem) found an earlier process's file there and
// failed about one `ctest -j2` run in six on a machine with 17 000 such
// folders left behind.
bool g_process_temp_dir_made = false;

const std::filesystem::path& ProcessTempDir() {
  static const std::filesystem::path dir = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("magneton_test_" + std::to_string(getpid()) + "_XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "cannot make a folder for test files at " << pattern;
      std::abort();
    }
    g_process_temp_dir_made = true;
    return std::filesystem::path(pattern);
  }();
  return dir;
}

// The folder goes when every test of the process passed; a failure's files
// stay to be looked at. A process that made none makes none here.
class RemoveTestFilesWhenPassed : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!g_process_temp_dir_made || !::testing::UnitTest::GetInstance()->Passed()) return;
    std::error_code ignored;
    std::filesystem::remove_all(ProcessTempDir(), ignored);
  }
};

[[maybe_unused]] ::testing::Environment* const kRemoveTestFiles =
    ::testing::AddGlobalTestEnvironment(new RemoveTestFilesWhenPassed);

}  // namespace

std::string TempPath(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info ? std::string(info->test_suite_name()) + "." + info->name() : "global";
  auto dir = ProcessTempDir() / test;
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TestTrace NewTestTrace(const std::string& name) {
  TestTrace t{TempPath(name), nullptr};
  auto writer = TraceWriter::Create(t.path, RunMetadata{});
  EXPECT_TRUE(writer.ok()) << writer.status().message();
  if (writer.ok()) t.writer = std::move(writer).value();
  return t;
}

Trace TestTrace::Close() {
  if (!writer) return Trace{};
  Status closed = writer->Close();
  EXPECT_TRUE(closed.ok()) << closed.message();
  auto trace = ReadTrace(path);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? std::move(trace).value() : Trace{};
}

std::string WriteSampleTrace(const std::string& name, int n_ops) {
  std::string path = TempPath(name);
  RunMetadata meta;
  meta.label = "sample";
  meta.command_line = "python sample.py";
  meta.versions["torch"] = "0.0-test";
  Status st = Recorder::Start(path, meta);
  EXPECT_TRUE(st.ok()) << st.message();
  Recorder* rec = Recorder::Active();
  int64_t file = rec->InternString("model.py");
  int64_t fn = rec->InternString("forward");
  int64_t outer = rec->InternCallPath(kNoId, rec->InternFrame(file, 10, rec->InternString("main")));
  int64_t path_id = rec->InternCallPath(outer, rec->InternFrame(file, 20, fn));
  rec->PushScope("Net", "Net");
  rec->PushScope("fc", "Linear");
  int64_t linear = rec->InternString("aten::linear");
  int64_t addmm = rec->InternString("aten::addmm");
  std::vector<int64_t> shape = {4, 8}, strides = {8, 1};
  std::vector<float> buffers(static_cast<size_t>(n_ops) + 1);
  for (int i = 0; i < n_ops; ++i) {
    TensorView in{reinterpret_cast<uintptr_t>(&buffers[i]), 0, shape.data(), strides.data(), 2, "float32", "cpu", 0};
    TensorView out{reinterpret_cast<uintptr_t>(&buffers[i + 1]), 0, shape.data(), strides.data(), 2, "float32", "cpu", 0};
    rec->BeginOp(linear, path_id);
    rec->AddInput(0, in);
    rec->BeginOp(addmm, kNoId);
    rec->AddInput(0, in);
    rec->AddOutput(0, out);
    rec->EndOp(R"([{"t":0},null,1,1.5])");
    rec->AddOutput(0, out);
    rec->EndOp(R"([{"t":0},null,null])");
  }
  rec->PopScope();
  rec->PopScope();
  rec->SetConfig("torch.backends.mkldnn.enabled", "True", "global_flag");
  rec->SetConfig("env.OMP_NUM_THREADS", "2", "env");
  st = Recorder::Stop();
  EXPECT_TRUE(st.ok()) << st.message();
  return path;
}

std::vector<char> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void ExecSql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

void DowngradeToSchemaV2(const std::string& path) {
  // The version-2 tables had exactly the columns the version-3 views give.
  auto table_sql = [](schema::TableId id) {
    const schema::Table& t = schema::GetTable(id);
    std::string sql = std::string("CREATE TABLE v2_") + t.name + "(";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      sql += std::string(i ? ", " : "") + t.columns[i].name + " " + t.columns[i].type;
    }
    return sql + "); INSERT INTO v2_" + t.name + " SELECT * FROM " + t.name + ";";
  };
  const std::string sql = "BEGIN;" + table_sql(schema::TableId::kOps) + table_sql(schema::TableId::kTensors) +
                          R"sql(
    DROP VIEW op_tensors; DROP VIEW ops; DROP VIEW tensors;
    DROP TABLE op_rows; DROP TABLE tensor_rows; DROP TABLE op_args; DROP TABLE layouts; DROP TABLE threads;
    ALTER TABLE v2_ops RENAME TO ops; ALTER TABLE v2_tensors RENAME TO tensors;
    CREATE VIEW op_tensors AS
      SELECT o.id AS op_id, 0 AS role, CAST(j.key AS INTEGER) AS slot, CAST(j.value AS INTEGER) AS tensor_id
        FROM ops o, json_each('[' || o.inputs || ']') j WHERE j.value >= 0
      UNION ALL
      SELECT o.id, 1, CAST(j.key AS INTEGER), CAST(j.value AS INTEGER)
        FROM ops o, json_each('[' || o.outputs || ']') j WHERE j.value >= 0;
    UPDATE meta SET value = '2' WHERE key = 'schema_version';
    COMMIT;)sql";
  ExecSql(path, sql.c_str());
}

std::map<int64_t, std::string> FingerprintRowsByTensor(const std::string& path) {
  auto rows = ReadFingerprintRows(path);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  std::map<int64_t, std::string> out;
  if (rows.ok())
    for (const FingerprintRow& r : *rows) out[r.tensor_id] = r.data;
  return out;
}

}  // namespace magneton::testing
