// The job manifest of a distributed recording (src/trace/job_manifest.cc) and
// how `magneton record` gathers the ranks' traces into it
// (src/runner/record_job.cc): spawn children renamed after their rank, helper
// processes dropped, exit status joined by pid.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "report/job_summary.h"
#include "runner/record_job.h"
#include "test_util.h"
#include "trace/job_manifest.h"

namespace magneton {
namespace {

namespace fs = std::filesystem;
using testing::TempPath;
using testing::WriteSampleTrace;

void SetMeta(const std::string& path, const std::string& key, const std::string& value) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql = "INSERT OR REPLACE INTO meta(key, value) VALUES('" + key + "', '" + value + "')";
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

// A rank's trace as a rank leaves it: a sample trace with its dist.* meta.
void WriteRankTrace(const std::string& path, int rank, int pid) {
  const std::string sample = WriteSampleTrace("job_rank_sample_" + std::to_string(rank) + ".mtrace", 20);
  fs::copy_file(sample, path, fs::copy_options::overwrite_existing);
  if (rank >= 0) {
    SetMeta(path, "dist.rank", std::to_string(rank));
    SetMeta(path, "dist.local_rank", std::to_string(rank));
    SetMeta(path, "dist.world_size", "2");
    SetMeta(path, "dist.backend", "gloo");
  }
  SetMeta(path, "dist.pid", std::to_string(pid));
}

TEST(JobManifest, RoundTrip) {
  JobManifest m;
  m.world_size = 2;
  m.backend = "gloo";
  m.command_line = "torchrun --nproc-per-node 2 train.py";
  m.launcher_exit_code = 1;
  RankEntry r0;
  r0.rank = 0;
  r0.trace = "job.rank0.mtrace";
  r0.exit_code = 0;
  r0.ops = 12;
  RankEntry r1;
  r1.rank = 1;
  r1.trace = "job.rank1.mtrace";
  r1.signal = SIGKILL;
  m.ranks = {r0, r1};
  const std::string path = TempPath("roundtrip.mjob");
  ASSERT_TRUE(WriteJobManifest(path, m).ok());
  auto back = ReadJobManifest(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->world_size, 2);
  EXPECT_EQ(back->backend, "gloo");
  EXPECT_EQ(back->launcher_exit_code, 1);
  ASSERT_EQ(back->ranks.size(), 2u);
  EXPECT_EQ(back->ranks[0].exit_code, 0);
  EXPECT_EQ(back->ranks[0].ops, 12u);
  EXPECT_FALSE(back->ranks[1].exit_code.has_value());
  EXPECT_EQ(DescribeRankEnd(back->ranks[0]), "exited normally");
  EXPECT_EQ(DescribeRankEnd(back->ranks[1]), "killed by SIGKILL");
}

TEST(JobManifest, RefusesWhatIsNotAManifest) {
  const std::string not_json = TempPath("not_json.mjob");
  std::ofstream(not_json) << "rank 0\n";
  EXPECT_NE(ReadJobManifest(not_json).status().message().find("not JSON"), std::string::npos);
  const std::string foreign = TempPath("foreign.mjob");
  std::ofstream(foreign) << R"({"format": "something-else", "ranks": []})";
  EXPECT_NE(ReadJobManifest(foreign).status().message().find("not a magneton job manifest"), std::string::npos);
  const std::string future = TempPath("future.mjob");
  std::ofstream(future) << R"({"format": "magneton-job", "version": 99, "ranks": []})";
  EXPECT_NE(ReadJobManifest(future).status().message().find("version 99"), std::string::npos);
  const std::string malformed = TempPath("malformed.mjob");
  std::ofstream(malformed) << R"({"format": "magneton-job", "version": 1, "ranks": [{"trace": "x"}]})";
  EXPECT_NE(ReadJobManifest(malformed).status().message().find("malformed"), std::string::npos);
  EXPECT_FALSE(ReadJobManifest(TempPath("missing.mjob")).ok());
}

// A manifest from someone else never makes diff read a file outside its folder.
TEST(JobManifest, RefusesTracePathsThatLeaveItsFolder) {
  for (const char* trace : {"../../etc/passwd", "/etc/passwd", "sub/x.mtrace", "..", ""}) {
    const std::string path = TempPath("escape.mjob");
    std::ofstream(path) << R"({"format": "magneton-job", "version": 1, "world_size": 1, "ranks": [{"rank": 0, "trace": ")"
                        << trace << R"("}]})";
    auto m = ReadJobManifest(path);
    ASSERT_FALSE(m.ok()) << trace;
    EXPECT_NE(m.status().message().find("not a file name in the manifest's folder"), std::string::npos) << trace;
  }
  const std::string launcher = TempPath("launcher.mjob");
  std::ofstream(launcher) << R"({"format": "magneton-job", "version": 1, "world_size": 1, "launcher_trace": "/tmp/x",
                                 "ranks": [{"rank": 0, "trace": "job.rank0.mtrace"}]})";
  EXPECT_FALSE(ReadJobManifest(launcher).ok());
  // Its positive twin: a plain name beside the manifest reads.
  const std::string fine = TempPath("fine.mjob");
  std::ofstream(fine) << R"({"format": "magneton-job", "version": 1, "world_size": 1,
                             "ranks": [{"rank": 0, "trace": "job.rank0.mtrace"}]})";
  auto m = ReadJobManifest(fine);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(RankTracePathIn(fine, m->ranks[0]), (std::filesystem::path(fine).parent_path() / "job.rank0.mtrace").string());
}

TEST(JobManifest, ArgumentNamesAJobByStemManifestOrBasePath) {
  const std::string dir = TempPath("find_job");
  fs::create_directories(dir);
  const std::string manifest = dir + "/job.mjob";
  std::ofstream(manifest) << "{}";
  EXPECT_EQ(FindJobManifest(dir + "/job"), manifest);
  EXPECT_EQ(FindJobManifest(dir + "/job.mtrace"), manifest);
  EXPECT_EQ(FindJobManifest(manifest), manifest);
  EXPECT_FALSE(FindJobManifest(dir + "/other.mtrace").has_value());
  // A trace that exists is a trace, even next to a manifest of its stem.
  std::ofstream(dir + "/job.mtrace") << "x";
  EXPECT_FALSE(FindJobManifest(dir + "/job.mtrace").has_value());
}

TEST(CollectJob, NoRankTracesIsNotAJob) {
  const std::string dir = TempPath("collect_none");
  fs::create_directories(dir);
  auto job = runner::CollectJob(dir + "/run.mtrace", "python a.py", 0);
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->has_value());
  EXPECT_FALSE(fs::exists(dir + "/run.mjob"));
}

TEST(CollectJob, RenamesSpawnedRanksDropsHelpersAndJoinsExitStatus) {
  const std::string dir = TempPath("collect_spawn");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string base = dir + "/job.mtrace";
  WriteRankTrace(dir + "/job.rank0.mtrace", 0, 101);  // torchrun-style: named by RANK
  WriteRankTrace(dir + "/job.pid102.mtrace", 1, 102);  // a spawn child that joined as rank 1
  WriteRankTrace(dir + "/job.pid103.mtrace", -1, 103);  // a spawn child that never joined: not a rank
  std::ofstream(dir + "/job.exits.json") << R"({"101": 0, "102": -9})";
  auto job = runner::CollectJob(base, "python spawn.py", 1);
  ASSERT_TRUE(job.ok()) << job.status().message();
  ASSERT_TRUE(job->has_value());
  const JobManifest& m = **job;
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.backend, "gloo");
  EXPECT_EQ(m.ranks[0].trace, "job.rank0.mtrace");
  EXPECT_EQ(m.ranks[0].exit_code, 0);
  EXPECT_EQ(m.ranks[1].trace, "job.rank1.mtrace");
  EXPECT_EQ(m.ranks[1].signal, 9);
  EXPECT_EQ(m.ranks[1].pid, 102);
  EXPECT_GT(m.ranks[1].ops, 0u);
  EXPECT_TRUE(fs::exists(dir + "/job.rank1.mtrace"));
  EXPECT_FALSE(fs::exists(dir + "/job.pid102.mtrace"));
  EXPECT_FALSE(fs::exists(dir + "/job.pid103.mtrace"));
  EXPECT_FALSE(fs::exists(dir + "/job.exits.json"));
  auto written = ReadJobManifest(dir + "/job.mjob");
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(DescribeRankEnd(written->ranks[1]), "killed by SIGKILL");
}

TEST(CollectJob, AnUnreadableRankTraceIsListedWithWhy) {
  const std::string dir = TempPath("collect_bad");
  fs::remove_all(dir);
  fs::create_directories(dir);
  WriteRankTrace(dir + "/job.rank0.mtrace", 0, 201);
  std::ofstream(dir + "/job.rank1.mtrace") << "not a trace";
  auto job = runner::CollectJob(dir + "/job.mtrace", "torchrun train.py", 0);
  ASSERT_TRUE(job.ok()) << job.status().message();
  ASSERT_TRUE(job->has_value());
  ASSERT_EQ((*job)->ranks.size(), 2u);
  EXPECT_TRUE((*job)->ranks[0].trace_error.empty());
  EXPECT_FALSE((*job)->ranks[1].trace_error.empty());
  EXPECT_EQ(DescribeRankEnd((*job)->ranks[1]), "exit status unknown");
}

// `show job`'s collective columns: outermost c10d:: ops only (a collective's
// nested ops are part of it), their bytes from the args the torch hook wrote.
TEST(JobSummary, CountsOutermostCollectivesAndTheirBytes) {
  Trace t;
  t.strings = {"aten::addmm", "c10d::allreduce_", "c10d::send", "aten::copy_"};
  auto op = [&](int64_t name_id, int64_t start, int64_t end, int64_t parent, std::string args) {
    OpEvent e;
    e.id = static_cast<int64_t>(t.ops.size());
    e.name_id = name_id;
    e.start_ns = start;
    e.end_ns = end;
    e.parent_id = parent;
    e.args = std::move(args);
    t.ops.push_back(e);
  };
  op(0, 0, 100, kNoId, "[]");
  op(1, 100, 300, kNoId,
     R"({"args":[[{"t":0}],{"unrecorded":"ProcessGroup"}],"group":"0","group_size":2,"group_rank":0,"bytes":4096,)"
     R"("peers":[]})");
  op(1, 120, 200, 1, R"({"args":[],"bytes":4096,"peers":[]})");  // nested: not counted again
  op(2, 300, 400, kNoId, R"({"args":[],"group":"0","bytes":1000,"peers":[1]})");
  op(3, 400, 1000, kNoId, "[]");
  RankEntry entry;
  entry.rank = 0;
  entry.exit_code = 0;
  RankSummary s = SummariseRank(entry, &t);
  EXPECT_EQ(s.collective_ops, 2);
  EXPECT_EQ(s.collective_ns, 300);
  EXPECT_EQ(s.collective_bytes, 5096);
  EXPECT_EQ(s.collective_ops_without_bytes, 0);
  EXPECT_EQ(s.job_ns, 1000);
  JobManifest m;
  m.world_size = 1;
  const std::string text = FormatJobSummary("job.mjob", m, {s});
  EXPECT_NE(text.find("coll. bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("5.1 kB"), std::string::npos) << text;

  // A trace recorded before collectives carried bytes: unknown, not 0.
  t.ops[1].args = R"([[{"t":0}],{"unrecorded":"Object"}])";
  s = SummariseRank(entry, &t);
  EXPECT_EQ(s.collective_ops_without_bytes, 1);
  EXPECT_EQ(s.collective_bytes, 1000);
  EXPECT_NE(FormatJobSummary("job.mjob", m, {s}).find(" ? "), std::string::npos);
}

}  // namespace
}  // namespace magneton
