// The analysis session end to end on a recorded pair (tests/cpp/diff_fixture.h),
// with a scripted ProcessRunner in place of child processes: what it is asked
// to run, and what the session makes of what it gets back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "analysis/session_data.h"
#include "diagnose/line_diagnosis.h"
#include "diff_fixture.h"
#include "magneton/analysis.h"
#include "magneton/recorder.h"
#include "report/perfetto_diff.h"
#include "test_util.h"
#include "trace/line_trace_file.h"
#include "trace/rerun_plan.h"
#include "trust/trace_trust.h"

namespace magneton::analysis {
namespace {

// The user's program the fixture's call paths name: main (line 3) calls
// forward, which branches at line 10 (A takes line 11, B line 13).
constexpr const char* kNetPy =
    "def main(fused):\n"
    "    x = None\n"
    "    return forward(x, fused)\n"
    "\n"
    "\n"
    "\n"
    "\n"
    "\n"
    "def forward(x, fused):\n"
    "    if fused:\n"
    "        return linear(x)\n"
    "    else:\n"
    "        return mm(x)\n";

class ScriptedRunner : public ProcessRunner {
 public:
  std::vector<RunRequest> runs;
  std::vector<RecordRunRequest> records;
  std::function<void(const RecordRunRequest&)> on_record;

  // Plays the line tracer: writes the line trace the request asks for, with
  // the lines each side executes and the watched values before them.
  StatusOr<int> Run(const RunRequest& request) override {
    runs.push_back(request);
    const std::vector<std::string>& argv = request.plan.argv;
    const bool fused = std::find(argv.begin(), argv.end(), "--fused") != argv.end();
    const nlohmann::json req = nlohmann::json::parse(request.plan.env.at("MAGNETON_LINE_TRACE"));
    LineTrace trace;
    int index = 0;
    for (const auto& t : req["targets"]) {
      trace.targets.push_back({t["file"], t["function"], t["line"]});
      LineCall call;
      call.target = index++;
      call.lines = t["function"] == "main" ? std::vector<int64_t>{2, 3}
                   : fused                 ? std::vector<int64_t>{10, 11}
                                           : std::vector<int64_t>{10, 13};
      for (size_t e = 0; e < call.lines.size(); ++e) {
        const std::string line = std::to_string(call.lines[e]);
        if (!t["watch"].contains(line)) continue;
        for (const auto& expr : t["watch"][line]) {
          call.values.push_back({e, expr, expr == "fused" ? (fused ? "True" : "False") : "None"});
        }
      }
      trace.calls.push_back(std::move(call));
    }
    Status st = WriteLineTrace(req["out"], trace);
    if (!st.ok()) return st;
    return 0;
  }

  StatusOr<RecordRunResult> Record(const RecordRunRequest& request) override {
    records.push_back(request);
    if (on_record) on_record(request);
    return RecordRunResult{0, Status::Ok(), 1, 1};
  }
};

struct Pair {
  std::string dir;
  std::unique_ptr<AnalysisSession> session;
};

// The fixture's pair as a session, with the commands and working directory
// a recording would have stored.
Pair OpenPair(const std::string& name, std::function<void(Trace&, Trace&)> edit = nullptr,
              bool sign = true) {
  Pair p;
  p.dir = testing::TempPath(name);
  std::filesystem::create_directories(p.dir);
  const std::string net = p.dir + "/net.py";
  std::ofstream(net) << kNetPy;
  testing::Side a = testing::Record(name + "_a.mtrace", true, false, net);
  testing::Side b = testing::Record(name + "_b.mtrace", false, false, net);
  a.trace.meta.command_line = "python net.py --fused";
  b.trace.meta.command_line = "python net.py";
  a.trace.meta.cwd = b.trace.meta.cwd = p.dir;
  // The re-run plans a recording stores (trace/rerun_plan.h).
  a.trace.meta.extra[kRerunPlanKey] = EncodeRunPlan({{"python", "net.py", "--fused"}, p.dir, {}, "python"});
  b.trace.meta.extra[kRerunPlanKey] = EncodeRunPlan({{"python", "net.py"}, p.dir, {}, "python"});
  if (edit) edit(a.trace, b.trace);
  // Signed as a recording of these commands here would be (the edits above
  // broke the recorder's signature); `sign = false` leaves them broken.
  if (sign) {
    trust::AddSignature(&a.trace.meta);
    trust::AddSignature(&b.trace.meta);
  }
  auto data = std::make_unique<SessionData>();
  data->a.push_back({a.path, std::move(a.trace), std::move(a.fps)});
  data->b.push_back({b.path, std::move(b.trace), std::move(b.fps)});
  auto session = AnalysisSession::FromData(std::move(data));
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (session.ok()) p.session = std::move(session).value();
  return p;
}

// Issue 33: a Trace built in memory skips the reader's structural checks
// (FromData takes traces as given). Parent links that loop (ops, scopes,
// call paths) or name later rows must still let the whole analysis and every
// rendering end: main spun forever in the dataflow graph on the ops' loops.
TEST(AnalysisSession, LoopingParentsInMemoryStillEnd) {
  Pair p = OpenPair("hostile", [](Trace& a, Trace& b) {
    for (OpEvent& op : a.ops) op.parent_id = op.id;  // each op its own parent
    for (size_t i = 0; i + 1 < b.ops.size(); ++i) {
      b.ops[i].parent_id = b.ops[i + 1].id;  // a later op: with the next line, a cycle
    }
    if (!b.ops.empty()) b.ops.back().parent_id = b.ops.front().id;
    for (Trace* t : {&a, &b}) {
      const int64_t ns = static_cast<int64_t>(t->scopes.size()), nc = static_cast<int64_t>(t->call_paths.size());
      for (Scope& s : t->scopes) s.parent_id = (s.id + 1) % ns;  // 0 -> 1 -> ... -> 0
      for (CallPath& c : t->call_paths) c.parent_id = (c.id + 1) % nc;
      for (TensorMeta& m : t->tensors) m.producer_op_id = t->ops.empty() ? kNoId : t->ops.back().id;
    }
  });
  ASSERT_TRUE(p.session);
  Status st = p.session->Diff();
  if (st.ok()) {
    EXPECT_FALSE(p.session->TerminalReport(true).empty());
    EXPECT_FALSE(p.session->JsonReport().empty());
    EXPECT_FALSE(p.session->HtmlReport().empty());
    std::ostringstream perfetto;
    EXPECT_TRUE(report::WritePerfettoDiff(p.session->data().report_input(), perfetto).ok());
  } else {
    EXPECT_FALSE(st.message().empty());
  }
}

// Issue 33: the files `magneton diff` opens. A fingerprint of no tensor of
// its trace is refused by table and row (every lookup by tensor id assumes
// one); the unedited pair opens.
TEST(AnalysisSession, FingerprintOfNoTensorIsRefused) {
  testing::Side a = testing::Record("fp_a.mtrace", true, false), b = testing::Record("fp_b.mtrace", false, false);
  ASSERT_TRUE(AnalysisSession::OpenRuns({a.path}, {b.path}).ok());
  testing::ExecSql(a.path,
                   "UPDATE fingerprints SET tensor_id = 99999 WHERE tensor_id = (SELECT min(tensor_id) FROM fingerprints)");
  auto session = AnalysisSession::OpenRuns({a.path}, {b.path});
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(session.status().message().find("table fingerprints, row tensor_id 99999: names no tensor"),
            std::string::npos)
      << session.status().message();
}

// Found by fuzz/analysis_diff_fuzzer.cc: text from a trace that is not UTF-8
// (an edited meta value, op or file name) threw out of JsonReport()
// (nlohmann type_error 316) and aborted `magneton diff --json`. Such bytes
// become U+FFFD; the report stays valid JSON.
TEST(AnalysisSession, TextThatIsNotUtf8GivesAValidJsonReport) {
  Pair p = OpenPair("utf8", [](Trace& a, Trace& b) {
    for (Trace* t : {&a, &b}) {
      t->meta.label += "\xea\xfc";
      t->meta.extra["recorder.note"] = "\xff\xfe";
      for (std::string& s : t->strings) s += "\xea";
    }
  });
  ASSERT_TRUE(p.session);
  ASSERT_TRUE(p.session->Diff().ok());
  std::string json;
  ASSERT_NO_THROW(json = p.session->JsonReport());
  EXPECT_NO_THROW((void)nlohmann::json::parse(json));
  EXPECT_NE(json.find("\xef\xbf\xbd"), std::string::npos);
}

TEST(AnalysisSession, TraceLinesRunsBothRecordedCommandsThroughTheRunner) {
  Pair p = OpenPair("lines");
  ASSERT_TRUE(p.session);
  ASSERT_TRUE(p.session->Diff().ok());
  ScriptedRunner runner;
  ASSERT_TRUE(p.session->TraceLines(runner, RerunPolicy{}).ok());

  ASSERT_EQ(runner.runs.size(), 2u);
  // Each side's stored plan, as argv: no shell in between.
  EXPECT_EQ(runner.runs[0].plan.argv, (std::vector<std::string>{"python", "net.py", "--fused"}));
  EXPECT_EQ(runner.runs[1].plan.argv, (std::vector<std::string>{"python", "net.py"}));
  for (const RunRequest& r : runner.runs) {
    EXPECT_EQ(r.plan.cwd, p.dir);
    EXPECT_TRUE(r.with_python_hooks);
    EXPECT_NE(r.log_path.find(".lines."), std::string::npos) << r.log_path;
  }
  EXPECT_TRUE(runner.records.empty());

  const SessionData& d = p.session->data();
  ASSERT_FALSE(d.diagnoses.empty());
  const diagnose::Diagnosis& top = d.diagnoses.front();
  ASSERT_TRUE(top.line) << "the line-level result is attached to the top finding's diagnosis";
  EXPECT_TRUE(top.line->found) << top.line->note;
  EXPECT_EQ(top.line->mode, "branch");
  EXPECT_EQ(top.line->divergence.branch_line, 10);
  EXPECT_EQ(top.line->origin.name, "fused");
  EXPECT_NE(p.session->JsonReport().find("\"line_diagnosis\""), std::string::npos);
}

// The session's diff is the stages' diff: the report golden file
// (tests/golden, written by report_diff_unittest from the stages called one
// by one) comes out of the session unchanged.
// The twin of the test above: the same pair with its commands edited after
// signing runs nothing unless the user says --rerun.
TEST(AnalysisSession, TraceLinesRunsNoEditedCommandWithoutRerun) {
  Pair p = OpenPair("lines_edited", nullptr, /*sign=*/false);
  ASSERT_TRUE(p.session);
  ASSERT_TRUE(p.session->Diff().ok());
  ScriptedRunner runner;
  std::string said;
  p.session->SetProgress([&](const std::string& line) { said += line + "\n"; });
  ASSERT_TRUE(p.session->TraceLines(runner, RerunPolicy{}).ok());  // refusing is not an error
  EXPECT_TRUE(runner.runs.empty());
  EXPECT_NE(said.find("will not re-run"), std::string::npos) << said;
  // The refusal is part of the finding's diagnosis, for every report.
  EXPECT_NE(p.session->JsonReport().find("signature does not match"), std::string::npos);

  RerunPolicy explicit_rerun;
  explicit_rerun.allow_foreign = true;
  ASSERT_TRUE(p.session->TraceLines(runner, explicit_rerun).ok());
  EXPECT_EQ(runner.runs.size(), 2u);
}

TEST(AnalysisSession, DiffGivesTheGoldenReport) {
  testing::Side a = testing::Record("fused.mtrace", true, false), b = testing::Record("decomposed.mtrace", false, false);
  auto data = std::make_unique<SessionData>();
  data->a.push_back({"fused.mtrace", std::move(a.trace), std::move(a.fps)});
  data->b.push_back({"decomposed.mtrace", std::move(b.trace), std::move(b.fps)});
  auto session = AnalysisSession::FromData(std::move(data));
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE((*session)->Diff().ok());
  std::ifstream golden(std::string(MAGNETON_GOLDEN_DIR) + "/diff_fused_vs_decomposed.json");
  ASSERT_TRUE(golden);
  std::stringstream want;
  want << golden.rdbuf();
  EXPECT_EQ((*session)->JsonReport(), want.str());
}

// Issue 37: a diff of long runs says what each step did and took (on the
// caller's thread, after the two sides were read at once); one of runs
// below AnalysisOptions::progress_min_ops says nothing.
TEST(AnalysisSession, LongRunsSayEachStepAndShortRunsNothing) {
  testing::Side a = testing::Record("said_a.mtrace", true, false);
  testing::Side b = testing::Record("said_b.mtrace", false, false);
  for (const bool long_runs : {true, false}) {
    std::vector<std::string> said;
    AnalysisOptions options;
    options.progress = [&said](const std::string& line) { said.push_back(line); };
    if (long_runs) options.progress_min_ops = static_cast<int64_t>(a.trace.ops.size());
    // From the files (the fixture's files hold no energy: reading and matching).
    auto session = AnalysisSession::OpenRuns({a.path}, {b.path}, options);
    ASSERT_TRUE(session.ok()) << session.status().message();
    ASSERT_TRUE((*session)->Match().ok());
    EXPECT_EQ((*session)->data().a.front().fingerprints.size(), a.fps.size());
    EXPECT_EQ((*session)->data().b.front().trace.ops.size(), b.trace.ops.size());
    // In memory, with the fixture's scripted energy: the whole diff.
    auto data = std::make_unique<SessionData>();
    data->options = options;
    data->a.push_back({a.path, a.trace, a.fps});
    data->b.push_back({b.path, b.trace, b.fps});
    auto in_memory = AnalysisSession::FromData(std::move(data));
    ASSERT_TRUE(in_memory.ok()) << in_memory.status().message();
    const Status diffed = (*in_memory)->Diff();
    ASSERT_TRUE(diffed.ok()) << diffed.message();
    if (!long_runs) {
      EXPECT_TRUE(said.empty()) << said.front();
      continue;
    }
    ASSERT_EQ(said.size(), 6u);
    EXPECT_EQ(said[0].rfind("read " + a.path + " (" + std::to_string(a.trace.ops.size()) + " ops, " +
                                std::to_string(a.fps.size()) + " values) and " + b.path + " (",
                            0),
              0u)
        << said[0];
    EXPECT_EQ(said[1].rfind("matched ", 0), 0u) << said[1];
    // Energy after matching, which needs none: the matcher's peak holds no per-op energy.
    EXPECT_EQ(said[2].rfind("matched ", 0), 0u) << said[2];
    EXPECT_EQ(said[3].rfind("energy attributed to every op in ", 0), 0u) << said[3];
    EXPECT_EQ(said[4].rfind("compared the energy of ", 0), 0u) << said[4];
    EXPECT_EQ(said[5].rfind("diagnosed (", 0), 0u) << said[5];
    for (const std::string& line : said) EXPECT_EQ(line.back(), ')') << line;
  }
}

// A plan holding a redacted part cannot reproduce the run: never re-run, not
// even with --rerun; the refusal says why and prints the command.
TEST(AnalysisSession, TraceLinesNeverRunsAPlanHoldingARedaction) {
  Pair p = OpenPair("redacted_plan", [](Trace& a, Trace&) {
    a.meta.extra[kRerunPlanKey] =
        EncodeRunPlan({{"python", "net.py", "--fused", "--api-key", "<redacted>"}, a.meta.cwd, {}, "python"});
  });
  ASSERT_TRUE(p.session);
  ASSERT_TRUE(p.session->Diff().ok());
  ScriptedRunner runner;
  std::string said;
  p.session->SetProgress([&](const std::string& line) { said += line + "\n"; });
  RerunPolicy explicit_rerun;
  explicit_rerun.allow_foreign = true;
  ASSERT_TRUE(p.session->TraceLines(runner, explicit_rerun).ok());
  EXPECT_TRUE(runner.runs.empty());
  EXPECT_NE(said.find("holds a redacted part"), std::string::npos) << said;
  EXPECT_NE(said.find("python net.py --fused --api-key '<redacted>'"), std::string::npos) << said;
  EXPECT_EQ(said.find("pass --rerun"), std::string::npos) << said;
  EXPECT_NE(p.session->JsonReport().find("holds a redacted part"), std::string::npos);
}

// A trace recorded before re-run plans (only a command line) is never re-run.
TEST(AnalysisSession, TraceLinesNeverRunsATraceWithoutAPlan) {
  Pair p = OpenPair("no_plan", [](Trace& a, Trace&) { a.meta.extra.erase(kRerunPlanKey); });
  ASSERT_TRUE(p.session);
  ASSERT_TRUE(p.session->Diff().ok());
  ScriptedRunner runner;
  std::string said;
  p.session->SetProgress([&](const std::string& line) { said += line + "\n"; });
  RerunPolicy explicit_rerun;
  explicit_rerun.allow_foreign = true;
  ASSERT_TRUE(p.session->TraceLines(runner, explicit_rerun).ok());
  EXPECT_TRUE(runner.runs.empty());
  EXPECT_NE(said.find("recorded before re-run plans"), std::string::npos) << said;
  EXPECT_NE(said.find("python net.py --fused"), std::string::npos) << said;  // the command, to run by hand
}

TEST(AnalysisSession, TraceLinesWithoutACommandRunsNothing) {
  Pair p = OpenPair("nocommand", [](Trace& a, Trace&) {
    a.meta.command_line.clear();
    a.meta.extra.erase(kRerunPlanKey);
  });
  ASSERT_TRUE(p.session);
  ASSERT_TRUE(p.session->Diff().ok());
  ScriptedRunner runner;
  ASSERT_TRUE(p.session->TraceLines(runner, RerunPolicy{}).ok());
  EXPECT_TRUE(runner.runs.empty());
}

// Both traces have two domains; the larger one (cpu-estimate) is the diff's,
// and a-small sorts first. --confirm must measure the re-run in the diff's
// domain: in a-small the scripted re-run costs more, in cpu-estimate half.
TEST(AnalysisSession, ConfirmMeasuresTheRerunInTheDiffsDomain) {
  auto add_small_domain = [](Trace& t) {
    std::vector<EnergySample> small;
    for (const EnergySample& s : t.energy_samples) {
      small.push_back({"a-small", s.t_ns, 0.001 * static_cast<double>(s.t_ns), std::nan(""), Provenance::kEstimated,
                       "scripted"});
    }
    t.energy_samples.insert(t.energy_samples.begin(), small.begin(), small.end());
  };
  Pair p = OpenPair("confirm", [&](Trace& a, Trace& b) {
    add_small_domain(a);
    add_small_domain(b);
  });
  ASSERT_TRUE(p.session);
  EXPECT_EQ(p.session->domain(), "cpu-estimate");
  ASSERT_TRUE(p.session->Diff().ok());
  const SessionData& d = p.session->data();
  ASSERT_FALSE(d.detection->findings.empty());
  ASSERT_EQ(d.detection->findings.front().wasteful_side, 'A');
  const double before_uj = d.energy_a.job_uj;
  ASSERT_GT(before_uj, 0);

  // A re-run of the wasteful command: the same op over `fraction` of the
  // recorded job at the same power in cpu-estimate (far more in a-small).
  auto rerun = [&](const RecordRunRequest& req, double fraction) {
    RunMetadata meta;
    meta.label = req.label;
    ASSERT_TRUE(Recorder::Start(req.output, meta).ok());
    Recorder* rec = Recorder::Active();
    const int64_t t0 = d.energy_a.ops_start_ns;
    const int64_t t1 = t0 + static_cast<int64_t>(fraction * static_cast<double>(d.energy_a.ops_end_ns - t0));
    rec->BeginOp(rec->InternString("aten::linear"), kNoId);
    rec->EndOp("", t0, t1);
    for (int64_t t = 0; t <= t1 + 1000; t += 100) {
      rec->AppendEnergySample({"cpu-estimate", t, 0.01 * static_cast<double>(t), std::nan(""), Provenance::kEstimated,
                               "scripted"});
      rec->AppendEnergySample({"a-small", t, 0.1 * static_cast<double>(t), std::nan(""), Provenance::kEstimated,
                               "scripted"});
    }
    ASSERT_TRUE(Recorder::Stop().ok());
  };
  // The machine is as fast as when A was recorded: the control takes the
  // recorded time, the flipped run half of it.
  ScriptedRunner runner;
  runner.on_record = [&](const RecordRunRequest& req) { rerun(req, req.plan.env.count("MAGNETON_OVERRIDES") ? 0.5 : 1.0); };
  auto outcome = p.session->Confirm(runner, RerunPolicy{}, 0.05);
  ASSERT_TRUE(outcome.ok()) << outcome.status().message();
  ASSERT_TRUE(outcome->ran) << outcome->sentence;
  // Controls (the command as recorded, no override) and flipped runs alternate, two of each by default.
  ASSERT_EQ(runner.records.size(), 4u);
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(runner.records[k].plan.env.count("MAGNETON_OVERRIDES"), k % 2) << k;
  EXPECT_NE(runner.records[0].output, runner.records[2].output);
  const RecordRunRequest& control = runner.records[0];
  EXPECT_EQ(control.plan.argv, (std::vector<std::string>{"python", "net.py", "--fused"}));
  EXPECT_FALSE(control.plan.env.count("MAGNETON_OVERRIDES"));
  const RecordRunRequest& req = runner.records[1];
  EXPECT_EQ(req.plan.argv, (std::vector<std::string>{"python", "net.py", "--fused"}));
  EXPECT_EQ(req.plan.cwd, p.dir);
  ASSERT_TRUE(req.plan.env.count("MAGNETON_OVERRIDES"));
  const nlohmann::json overrides = nlohmann::json::parse(req.plan.env.at("MAGNETON_OVERRIDES"));
  ASSERT_EQ(overrides.size(), 1u);
  EXPECT_FALSE(overrides[0]["key"].get<std::string>().empty());
  EXPECT_TRUE(outcome->confirmed) << outcome->sentence;
  EXPECT_NE(outcome->sentence.find("cpu-estimate"), std::string::npos) << outcome->sentence;
  EXPECT_NE(outcome->sentence.find("interleaved re-run"), std::string::npos) << outcome->sentence;
  EXPECT_EQ(outcome->trace_path, req.output);

  // The machine got twice as fast since A was recorded and the flip changes
  // nothing: against the original recording it would look like a 50% saving;
  // against the control it is none.
  ScriptedRunner faster;
  faster.on_record = [&](const RecordRunRequest& r) { rerun(r, 0.5); };
  auto unchanged = p.session->Confirm(faster, RerunPolicy{}, 0.05);
  ASSERT_TRUE(unchanged.ok()) << unchanged.status().message();
  ASSERT_TRUE(unchanged->ran);
  EXPECT_FALSE(unchanged->confirmed) << unchanged->sentence;

  // A load spike during one flipped run (3x its cost) neither hides the saving
  // nor is taken for the flip's effect: each kind counts by its lowest run.
  ScriptedRunner spiky;
  int flips = 0;
  spiky.on_record = [&](const RecordRunRequest& r) {
    const bool flip = r.plan.env.count("MAGNETON_OVERRIDES");
    rerun(r, flip ? (++flips == 1 ? 1.5 : 0.5) : 1.0);
  };
  auto spiked = p.session->Confirm(spiky, RerunPolicy{}, 0.05);
  ASSERT_TRUE(spiked.ok()) << spiked.status().message();
  EXPECT_TRUE(spiked->confirmed) << spiked->sentence;
}

TEST(AnalysisSession, WithoutACommonDomainMatchingStillWorks) {
  Pair p = OpenPair("nodomain", [](Trace& a, Trace&) {
    for (EnergySample& s : a.energy_samples) s.domain = "elsewhere";
  });
  ASSERT_TRUE(p.session);
  EXPECT_TRUE(p.session->Match().ok());
  EXPECT_FALSE(p.session->data().match->regions.empty());
  Status st = p.session->Diff();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no energy domain in common"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace magneton::analysis
