// A trace never runs anything on its own authority: signatures made at record
// time verify only under this user's key, on this host, for what was signed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "test_util.h"
#include "trace/rerun_plan.h"
#include "trust/trace_trust.h"
#include "trust/trust_key.h"

namespace magneton::trust {
namespace {

namespace fs = std::filesystem;

RunMetadata Meta() {
  RunMetadata m;
  m.label = "a";
  m.command_line = "python /home/me/a.py --steps 3";
  m.cwd = "/home/me";
  m.host = "box";
  m.start_unix_ns = 1700000000123456789;
  m.extra[kRerunPlanKey] =
      EncodeRunPlan({{"python", "/home/me/a.py", "--steps", "3"}, "/home/me", {}, "/usr/bin/python3"});
  return m;
}

RunMetadata Signed(const RunMetadata& m, const std::string& key) {
  RunMetadata out = m;
  AddSignature(&out, key);
  EXPECT_TRUE(out.extra.contains(kSignatureKey)) << out.extra[kUnsignedKey];
  return out;
}

int Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<int>(st.st_mode & 07777);
}

TEST(TrustKey, CreatedOnFirstUseOwnerOnly) {
  const std::string key = testing::TempPath("config") + "/magneton/trust.key";
  EXPECT_EQ(LoadKey(key).status().code(), StatusCode::kNotFound);
  auto first = LoadOrCreateKey(key);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->size(), 32u);
  EXPECT_EQ(Mode(key), 0600);
  EXPECT_EQ(Mode(fs::path(key).parent_path().string()), 0700);
  auto again = LoadOrCreateKey(key);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);  // made once, then kept
  auto other = LoadOrCreateKey(testing::TempPath("other.key"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);
}

TEST(TrustKey, ConcurrentFirstUsesAgreeOnOneKey) {
  const std::string key = testing::TempPath("race") + "/trust.key";
  std::vector<std::string> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      auto k = LoadOrCreateKey(key);
      seen[i] = k.ok() ? *k : "error: " + k.status().message();
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& s : seen) EXPECT_EQ(s, seen.front());
  EXPECT_EQ(seen.front().size(), 32u);
}

TEST(TrustKey, RefusedWhenOthersCanReadItOrItIsALinkOrGarbage) {
  const std::string key = testing::TempPath("k") + "/trust.key";
  ASSERT_TRUE(LoadOrCreateKey(key).ok());
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  auto loose = LoadKey(key);
  ASSERT_FALSE(loose.ok());
  EXPECT_EQ(loose.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(loose.status().message().find("chmod 600"), std::string::npos) << loose.status().message();
  EXPECT_FALSE(LoadOrCreateKey(key).ok());  // never silently replaced or used
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  EXPECT_TRUE(LoadKey(key).ok());

  const std::string link = testing::TempPath("link.key");
  fs::create_symlink(key, link);
  EXPECT_EQ(LoadKey(link).status().code(), StatusCode::kPermissionDenied);

  const std::string garbage = testing::TempPath("garbage.key");
  std::ofstream(garbage) << "not a key\n";
  ::chmod(garbage.c_str(), 0600);
  EXPECT_EQ(LoadKey(garbage).status().code(), StatusCode::kCorrupt);
}

TEST(TraceTrust, SignedRunVerifiesUnderTheSameKeyAndHost) {
  const std::string key = testing::TempPath("trust.key");
  const RunMetadata m = Signed(Meta(), key);
  const RerunAuthority ok = VerifyRerunAuthority(m, {key, "box"});
  EXPECT_TRUE(ok.trusted) << ok.reason;
}

TEST(TraceTrust, AnyEditOfWhatRunsBreaksTheSignature) {
  const std::string key = testing::TempPath("trust.key");
  const RunMetadata m = Signed(Meta(), key);
  std::vector<RunMetadata> tampered(7, m);
  tampered[0].extra[kRerunPlanKey] = EncodeRunPlan({{"/bin/sh", "-c", "touch pwned"}, "/home/me", {}, ""});
  tampered[1].extra[kRerunPlanKey] =
      EncodeRunPlan({{"python", "/home/me/a.py", "--steps", "3"}, "/tmp", {}, "/usr/bin/python3"});
  tampered[2].host = "other";
  tampered[3].start_unix_ns += 1;
  tampered[4].label = "b";
  tampered[5].extra[kRerunPlanKey] = EncodeRunPlan(
      {{"python", "/home/me/a.py", "--steps", "3"}, "/home/me", {{"LD_PRELOAD", "/tmp/x.so"}}, "/usr/bin/python3"});
  tampered[6].extra.erase(kRerunPlanKey);
  for (const RunMetadata& t : tampered) {
    const RerunAuthority a = VerifyRerunAuthority(t, {key, t.host});
    EXPECT_FALSE(a.trusted);
    EXPECT_NE(a.reason.find("does not match"), std::string::npos) << a.reason;
  }
  // A signature copied from another trace does not fit this one either.
  RunMetadata other = Meta();
  other.extra[kRerunPlanKey] = EncodeRunPlan({{"/bin/sh", "-c", "touch pwned"}, "/home/me", {}, ""});
  other.extra[kSignatureKey] = m.extra.at(kSignatureKey);
  EXPECT_FALSE(VerifyRerunAuthority(other, {key, "box"}).trusted);
}

// Version 2 signs the plan; a version-1 signature (over the redacted command
// line, which two different commands could share) never verifies.
TEST(TraceTrust, VersionOneSignaturesDoNotVerify) {
  const std::string key = testing::TempPath("trust.key");
  RunMetadata m = Signed(Meta(), key);
  std::string& sig = m.extra.at(kSignatureKey);
  ASSERT_EQ(sig.rfind("hmac-sha256:v2:", 0), 0u) << sig;
  EXPECT_NE(SignedMessage(m).find(m.extra.at(kRerunPlanKey)), std::string::npos);
  sig.replace(0, 15, "hmac-sha256:v1:");
  EXPECT_FALSE(VerifyRerunAuthority(m, {key, "box"}).trusted);
}

TEST(RerunPlan, RoundTripsCanonicallyAndRefusesAnythingElse) {
  const RunPlan plan{{"env", "A=1", "python", "it's a.py"}, "/w d", {{"OMP_NUM_THREADS", "4"}}, "/usr/bin/python3"};
  const std::string text = EncodeRunPlan(plan);
  EXPECT_EQ(text, R"({"argv":["env","A=1","python","it's a.py"],"cwd":"/w d","env":{"OMP_NUM_THREADS":"4"},)"
                  R"("interpreter":"/usr/bin/python3","version":1})");
  auto back = DecodeRunPlan(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, plan);
  for (const char* bad : {R"({"argv":[],"cwd":"","env":{},"interpreter":"","version":1})",
                          R"({"argv":["a"],"cwd":"","env":{},"interpreter":"","version":2})",
                          R"({"argv":["a"],"cwd":"","env":{},"interpreter":"","version":1,"shell":"sh"})",
                          R"({"argv":["a"],"cwd":"","env":{"A B":"1"},"interpreter":"","version":1})",
                          R"({"argv":["a"],"cwd":"","env":{},"interpreter":"", "version":1})",
                          R"({"argv":["a"],"argv":["b"],"cwd":"","env":{},"interpreter":"","version":1})",
                          R"({"argv":[1],"cwd":"","env":{},"interpreter":"","version":1})", "python a.py"}) {
    EXPECT_FALSE(DecodeRunPlan(bad).ok()) << bad;
  }
  // The display string: shell-quoted, never run.
  EXPECT_EQ(ShellQuoteArgv(plan.argv), "env A=1 python 'it'\\''s a.py'");
  EXPECT_EQ(DescribeRunPlan(plan), "cd '/w d' && env OMP_NUM_THREADS=4 env A=1 python 'it'\\''s a.py'");
  EXPECT_FALSE(PlanHoldsRedaction(plan));
  RunPlan redacted = plan;
  redacted.argv.push_back("<redacted>");
  EXPECT_TRUE(PlanHoldsRedaction(redacted));
  RunMetadata no_plan;
  EXPECT_EQ(StoredRunPlan(no_plan).status().code(), StatusCode::kNotFound);
}

TEST(TraceTrust, AnotherUsersKeyOrNoKeyIsNotTrusted) {
  const std::string mine = testing::TempPath("mine.key");
  const std::string theirs = testing::TempPath("theirs.key");
  const RunMetadata m = Signed(Meta(), theirs);
  ASSERT_TRUE(LoadOrCreateKey(mine).ok());
  const RerunAuthority other_key = VerifyRerunAuthority(m, {mine, "box"});
  EXPECT_FALSE(other_key.trusted);
  EXPECT_NE(other_key.reason.find("another user"), std::string::npos) << other_key.reason;
  const RerunAuthority no_key = VerifyRerunAuthority(m, {testing::TempPath("none/trust.key"), "box"});
  EXPECT_FALSE(no_key.trusted);
  EXPECT_NE(no_key.reason.find("no trust key"), std::string::npos) << no_key.reason;
  EXPECT_FALSE(fs::exists(testing::TempPath("none/trust.key")));  // verifying never creates a key
}

TEST(TraceTrust, LooseKeyPermissionsAreNotTrusted) {
  const std::string key = testing::TempPath("trust.key");
  const RunMetadata m = Signed(Meta(), key);
  ASSERT_EQ(::chmod(key.c_str(), 0640), 0);
  const RerunAuthority a = VerifyRerunAuthority(m, {key, "box"});
  EXPECT_FALSE(a.trusted);
  EXPECT_NE(a.reason.find("chmod 600"), std::string::npos) << a.reason;
  RunMetadata unsigned_run = Meta();
  AddSignature(&unsigned_run, key);  // signing refuses the loose key too
  EXPECT_FALSE(unsigned_run.extra.contains(kSignatureKey));
  EXPECT_NE(unsigned_run.extra.at(kUnsignedKey).find("chmod 600"), std::string::npos);
}

TEST(TraceTrust, SameUserOnAnotherHostIsNotTrusted) {
  const std::string key = testing::TempPath("trust.key");
  const RunMetadata m = Signed(Meta(), key);  // host "box"
  const RerunAuthority a = VerifyRerunAuthority(m, {key, "laptop"});
  EXPECT_FALSE(a.trusted);
  EXPECT_NE(a.reason.find("host 'box'"), std::string::npos) << a.reason;
}

TEST(TraceTrust, UnsignedTracesSayWhy) {
  const std::string key = testing::TempPath("trust.key");
  ASSERT_TRUE(LoadOrCreateKey(key).ok());
  EXPECT_NE(VerifyRerunAuthority(Meta(), {key, "box"}).reason.find("no signature"), std::string::npos);
  RunMetadata m = Meta();
  AddSignature(&m, "/dev/null/trust.key");  // cannot be created
  ASSERT_TRUE(m.extra.contains(kUnsignedKey));
  const RerunAuthority a = VerifyRerunAuthority(m, {key, "box"});
  EXPECT_FALSE(a.trusted);
  EXPECT_NE(a.reason.find("recorded unsigned"), std::string::npos) << a.reason;
}

Status Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  return rc == SQLITE_OK ? Status::Ok() : Internal(msg);
}

// End to end: the Recorder redacts and signs the plan under $XDG_CONFIG_HOME's
// key, the reader gives both back, and an edited plan no longer verifies —
// including the edit of a redacted argument, which v1 (over the redacted
// command line) could not see.
TEST(TraceTrust, RecordedTracesAreSignedAndEditsAreCaught) {
  const std::string config = testing::TempPath("xdg");
  const char* old = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CONFIG_HOME", config.c_str(), 1);
  const std::string key = DefaultKeyPath();
  EXPECT_EQ(key, config + "/magneton/trust.key");

  const std::string path = testing::TempPath("signed.mtrace");
  RunMetadata meta;
  meta.label = "signed";
  meta.command_line = "ignored: derived from the plan";
  meta.extra[kRerunPlanKey] =
      EncodeRunPlan({{"env", "HF_TOKEN=hf_secret", "python", "a.py", "--api-key", "abc123"}, "", {}, "python3"});
  RecorderOptions options;
  options.sample_energy = false;
  ASSERT_TRUE(Recorder::Start(path, meta, options).ok());
  ASSERT_TRUE(Recorder::Stop().ok());
  if (old) ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1); else ::unsetenv("XDG_CONFIG_HOME");

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  // Derived from the plan, then as the writer stores every command line.
  EXPECT_EQ(trace->meta.command_line, "env HF_TOKEN='<redacted>' python a.py --api-key '<redacted>'");
  auto stored = StoredRunPlan(trace->meta);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  EXPECT_EQ(stored->argv,
            (std::vector<std::string>{"env", "HF_TOKEN=<redacted>", "python", "a.py", "--api-key", "<redacted>"}));
  EXPECT_EQ(stored->cwd, trace->meta.cwd);
  EXPECT_TRUE(PlanHoldsRedaction(*stored));
  EXPECT_EQ(Mode(key), 0600);
  const TrustContext here{key, trace->meta.host};
  const RerunAuthority ok = VerifyRerunAuthority(*trace, here);
  EXPECT_TRUE(ok.trusted) << ok.reason;

  ASSERT_TRUE(Exec(path, "UPDATE meta SET value = replace(value, '\"abc123\"', '\"$(touch X;echo x)\"') "
                         "WHERE key = 'rerun.plan'").ok());
  ASSERT_TRUE(Exec(path, "UPDATE meta SET value = replace(value, '<redacted>\"]', '$(touch X;echo x)\"]') "
                         "WHERE key = 'rerun.plan'").ok());
  auto edited = ReadTrace(path);
  ASSERT_TRUE(edited.ok());
  const RerunAuthority no = VerifyRerunAuthority(*edited, here);
  EXPECT_FALSE(no.trusted);
  EXPECT_NE(no.reason.find("does not match"), std::string::npos) << no.reason;
}

}  // namespace
}  // namespace magneton::trust
