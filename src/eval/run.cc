// Running the suite: record, diff over the sweep (matching once per epsilon,
// classifying once per tau), score.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/session_data.h"
#include "trace/job_manifest.h"
#include "eval/eval.h"
#include "magneton/analysis.h"

namespace magneton::eval {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

CaseResult EvaluateSession(const Expected& expected, AnalysisSession& session, const SweepOptions& options) {
  const analysis::SessionData& data = session.data();
  const Trace& a = data.trace_a();
  const Trace& b = data.trace_b();
  CaseResult r;
  r.expected = expected;
  r.ops_a = a.ops.size();
  r.ops_b = b.ops.size();
  if (const Status attributed = session.mutable_data().Attribute(); !attributed.ok()) {
    r.error = attributed.message();
    return r;
  }
  r.domain = data.domain;
  r.provenance = data.energy_a.provenance;
  r.energy_a_uj = data.energy_a.job_uj;  // the job, first op to last op: imports are not the work
  r.energy_b_uj = data.energy_b.job_uj;

  bool headline_done = false;
  for (double eps : options.epsilons) {
    MatchOptions mo = data.match_options();
    mo.epsilon = eps;
    auto match = analysis::MatchRuns(data, mo);
    auto repeat_matches = analysis::MatchRepeats(data, mo);
    if (match.ok() && !repeat_matches.ok()) match = repeat_matches.status();
    for (double tau : options.taus) {
      r.settings.push_back({eps, tau});
      CaseScore score;
      int waste = 0;
      double top_uj = 0;
      if (!match.ok()) {
        score.note = "matching failed: " + match.status().message();
      } else {
        detect::Options o = data.detect_options();
        o.tau = tau;
        o.output_epsilon = eps;  // one tolerance for matching and for comparing region outputs
        o.match = mo;
        auto det = analysis::DetectRuns(data, *match, *repeat_matches, o);
        if (!det.ok()) {
          score.note = "detection failed: " + det.status().message();
        } else {
          const bool headline = eps == options.headline.epsilon && tau == options.headline.tau;
          std::vector<diagnose::Diagnosis> diagnoses;
          if (headline) diagnoses = diagnose::Diagnose(a, b, *det);
          Evidence ev = ExtractEvidence(a, b, *det, headline ? &diagnoses : nullptr);
          waste = ev.waste_findings;
          top_uj = ev.has_waste ? ev.saving_uj : 0.0;
          score = headline ? ScoreCase(expected, ev) : ScoreDetection(expected, ev);
          if (headline) {
            headline_done = true;
            r.headline = score;
            r.headline_evidence = ev;
            r.expected_waste_rank = ExpectedWasteRank(expected, a, b, *det);
            for (const diagnose::Diagnosis& d : diagnoses) {
              if (d.finding_index < det->findings.size() &&
                  det->findings[d.finding_index].verdict == detect::Verdict::kWaste) {
                r.headline_sentence = d.sentence;
                break;
              }
            }
          }
        }
      }
      r.scores.push_back(score);
      r.waste_findings.push_back(waste);
      r.top_saving_uj.push_back(top_uj);
    }
  }
  if (!headline_done) r.headline.note = "the headline setting is not in the sweep or failed";
  r.ok = true;
  return r;
}

CaseResult EvaluateRecordings(const Expected& expected, const std::vector<std::string>& traces_a,
                              const std::vector<std::string>& traces_b, const SweepOptions& options) {
  AnalysisOptions ao;
  ao.min_share = options.min_share;
  ao.max_slowdown = options.max_slowdown;
  auto session = AnalysisSession::OpenRuns(traces_a, traces_b, ao);
  if (!session.ok()) {
    CaseResult fail;
    fail.expected = expected;
    fail.error = "cannot load the recordings: " + session.status().message();
    return fail;
  }
  return EvaluateSession(expected, **session, options);
}

Counts CountAt(const std::vector<CaseResult>& cases, size_t i) {
  Counts c;
  for (const CaseResult& r : cases) {
    if (!r.skipped.empty()) continue;
    const bool have = r.ok && i < r.scores.size();
    if (r.expected.is_control()) {
      if (have && r.scores[i].false_positive) ++c.fp;
    } else if (have && r.scores[i].detected) {
      ++c.tp;
    } else {
      ++c.fn;
    }
  }
  return c;
}

std::vector<CaseResult> RunSuite(const std::vector<CaseDir>& cases, const RunOptions& options,
                                 const CaseRecorder& record, const Progress& progress) {
  namespace fs = std::filesystem;
  std::vector<CaseResult> out;
  const size_t n = cases.size();
  for (size_t k = 0; k < n; ++k) {
    const CaseDir& c = cases[k];
    const std::string tag = "[" + std::to_string(k + 1) + "/" + std::to_string(n) + "] " + c.id + ": ";
    CaseResult r;
    std::ifstream in(fs::path(c.path) / "expected.json");
    std::stringstream text;
    text << in.rdbuf();
    auto expected = ParseExpected(text.str());
    if (!expected.ok()) {
      r.expected.id = c.id;
      r.error = expected.status().message();
      progress(tag + "FAILED: " + r.error);
      out.push_back(std::move(r));
      continue;
    }
    r.expected = *expected;
    const fs::path dir = fs::path(options.work_dir) / c.id;
    std::error_code ec;
    fs::create_directories(dir, ec);
    // Pairs interleaved (A B A B ...): slow drift of the machine's load then
    // hits both sides alike. Pair 1 keeps the names a/b.mtrace.
    // Pairs interleaved, alternating which side goes first (A B, B A, ...):
    // neither side always meets the colder machine. All pairs go into one
    // analysis session, whose findings carry an interval over the runs
    // (docs/DIFF.md, "Uncertainty"); pair 1 keeps the names a/b.mtrace.
    const int repeats = std::max(1, options.repeats);
    std::vector<std::string> traces_a, traces_b;
    Status st = Status::Ok();
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < repeats && st.ok(); ++rep) {
      const std::string suffix = rep == 0 ? "" : ".r" + std::to_string(rep + 1);
      const std::string pair_tag = repeats > 1 ? tag + "pair " + std::to_string(rep + 1) + "/" +
                                                     std::to_string(repeats) + ": "
                                               : tag;
      const std::vector<const char*> order = rep % 2 == 0 ? std::vector<const char*>{"a", "b"}
                                                          : std::vector<const char*>{"b", "a"};
      for (const char* side : order) {
        const fs::path script = fs::path(c.path) / (std::string(side) + ".py");
        const fs::path trace = dir / (std::string(side) + suffix + ".mtrace");
        (side[0] == 'a' ? traces_a : traces_b).push_back(trace.string());
        // A script that starts ranks leaves a job: its manifest stands for the trace.
        const fs::path kept = IsJobRecording(trace.string()) ? fs::path(JobManifestPath(trace.string())) : trace;
        if (options.reuse && fs::exists(kept, ec) &&
            fs::last_write_time(kept, ec) > fs::last_write_time(script, ec)) {
          progress(pair_tag + "reusing " + trace.string());
          continue;
        }
        progress(pair_tag + "recording " + side + ".py");
        st = record(script.string(), trace.string());
        if (!st.ok()) break;  // a script that fails once fails again: no point in more pairs
      }
    }
    const double record_s = Seconds(t0);
    if (!st.ok()) {
      r.error = st.message();
      r.record_seconds = record_s;
    } else {
      progress(tag + "diffing " + std::to_string(repeats) + " pair(s) over " +
               std::to_string(options.sweep.epsilons.size()) + " epsilon x " +
               std::to_string(options.sweep.taus.size()) + " tau settings");
      const auto t1 = std::chrono::steady_clock::now();
      size_t jobs = 0;
      for (const auto* side : {&traces_a, &traces_b}) {
        for (const std::string& t : *side) jobs += IsJobRecording(t);
      }
      if (jobs == 0) {
        r = EvaluateRecordings(*expected, traces_a, traces_b, options.sweep);
      } else if (jobs == traces_a.size() + traces_b.size()) {
        r = EvaluateJobRecordings(*expected, traces_a, traces_b, options.sweep);
      } else {
        r.expected = *expected;
        r.error = "one side started ranks (a distributed job) and the other did not: nothing to pair";
      }
      r.record_seconds = record_s;
      r.diff_seconds = Seconds(t1);
      r.repeats = repeats;
    }
    const std::string votes = r.repeats > 1 ? ", over " + std::to_string(r.repeats) + " pairs" : "";
    if (!r.ok) {
      progress(tag + "FAILED: " + r.error);
    } else if (r.expected.is_control()) {
      progress(tag + (r.headline.false_positive ? "false positive" : "no waste") + " at the headline setting" + votes +
               " (" + r.headline.note + ")");
    } else {
      progress(tag + (r.headline.detected ? "detected" : "missed") + votes + ", root cause " +
               (r.headline.root_cause_right ? "right" : "not named") + " (" + r.headline.note + ")");
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace magneton::eval
