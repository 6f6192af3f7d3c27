// Running the suite: record, diff over the sweep (matching once per epsilon,
// classifying once per tau), score.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "magneton/energy_attribution.h"
#include "magneton/eval.h"
#include "magneton/fingerprint.h"
#include "magneton/match.h"
#include "magneton/trace_reader.h"

namespace magneton::eval {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The domain Detect would choose: common to both, with the most energy in A.
StatusOr<std::string> ChooseDomain(const Trace& a, const Trace& b) {
  std::set<std::string> da, db;
  for (const EnergySample& s : a.energy_samples) da.insert(s.domain);
  for (const EnergySample& s : b.energy_samples) db.insert(s.domain);
  std::string domain;
  double best = -1;
  for (const std::string& d : da) {
    if (!db.count(d)) continue;
    auto e = energy::AttributeEnergy(a, d);
    if (e.ok() && e->total_uj > best) {
      best = e->total_uj;
      domain = d;
    }
  }
  if (domain.empty()) return FailedPrecondition("the two recordings have no energy domain in common");
  return domain;
}

}  // namespace

CaseResult EvaluateTraces(const Expected& expected, const Trace& a, const FingerprintMap& fa, const Trace& b,
                          const FingerprintMap& fb, const SweepOptions& options) {
  CaseResult r;
  r.expected = expected;
  r.ops_a = a.ops.size();
  r.ops_b = b.ops.size();
  if (fa.empty() || fb.empty()) {
    r.error = "a recording has no tensor fingerprints (record with --values)";
    return r;
  }
  auto domain = ChooseDomain(a, b);
  if (!domain.ok()) {
    r.error = domain.status().message();
    return r;
  }
  auto ea = energy::AttributeEnergy(a, *domain);
  auto eb = energy::AttributeEnergy(b, *domain);
  if (!ea.ok() || !eb.ok()) {
    r.error = "energy attribution failed: " + (!ea.ok() ? ea.status().message() : eb.status().message());
    return r;
  }
  r.domain = *domain;
  r.provenance = ea->provenance;
  r.energy_a_uj = ea->job_uj;  // the job, first op to last op: imports are not the work
  r.energy_b_uj = eb->job_uj;

  bool headline_done = false;
  for (double eps : options.epsilons) {
    MatchOptions mo;
    mo.epsilon = eps;
    auto match = MatchTraces(a, fa, b, fb, mo);
    for (double tau : options.taus) {
      r.settings.push_back({eps, tau});
      CaseScore score;
      int waste = 0;
      if (!match.ok()) {
        score.note = "matching failed: " + match.status().message();
      } else {
        detect::Options o;
        o.tau = tau;
        o.max_slowdown = options.max_slowdown;
        o.output_epsilon = eps;  // one tolerance for matching and for comparing region outputs
        o.min_share = options.min_share;
        o.domain = *domain;
        o.match = mo;
        auto det = detect::DetectFromMatch(a, fa, *ea, b, fb, *eb, *match, o);
        if (!det.ok()) {
          score.note = "detection failed: " + det.status().message();
        } else {
          const bool headline = eps == options.headline.epsilon && tau == options.headline.tau;
          std::vector<diagnose::Diagnosis> diagnoses;
          if (headline) diagnoses = diagnose::Diagnose(a, b, *det);
          Evidence ev = ExtractEvidence(a, b, *det, headline ? &diagnoses : nullptr);
          waste = ev.waste_findings;
          score = headline ? ScoreCase(expected, ev) : ScoreDetection(expected, ev);
          for (const detect::Finding& f : det->findings) {
            if (f.verdict == detect::Verdict::kWaste) score.waste_keys.push_back(WasteKey(f));
          }
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
    }
  }
  if (!headline_done) r.headline.note = "the headline setting is not in the sweep or failed";
  r.ok = true;
  return r;
}

CaseResult EvaluateRecordings(const Expected& expected, const std::string& trace_a, const std::string& trace_b,
                              const SweepOptions& options) {
  CaseResult fail;
  fail.expected = expected;
  auto a = ReadTrace(trace_a);
  auto b = ReadTrace(trace_b);
  if (!a.ok() || !b.ok()) {
    fail.error = "cannot read a recording: " + (!a.ok() ? a.status().message() : b.status().message());
    return fail;
  }
  auto fa = LoadFingerprints(trace_a);
  auto fb = LoadFingerprints(trace_b);
  if (!fa.ok() || !fb.ok()) {
    fail.error = "cannot load fingerprints: " + (!fa.ok() ? fa.status().message() : fb.status().message());
    return fail;
  }
  return EvaluateTraces(expected, *a, *fa, *b, *fb, options);
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
                                 const Recorder& record, const Progress& progress) {
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
    const int repeats = std::max(1, options.repeats);
    std::vector<CaseResult> pairs;
    for (int rep = 0; rep < repeats; ++rep) {
      const std::string suffix = rep == 0 ? "" : ".r" + std::to_string(rep + 1);
      const std::string pair_tag = repeats > 1 ? tag + "pair " + std::to_string(rep + 1) + "/" +
                                                     std::to_string(repeats) + ": "
                                               : tag;
      const auto t0 = std::chrono::steady_clock::now();
      Status st = Status::Ok();
      for (const char* side : {"a", "b"}) {
        const fs::path script = fs::path(c.path) / (std::string(side) + ".py");
        const fs::path trace = dir / (std::string(side) + suffix + ".mtrace");
        if (options.reuse && fs::exists(trace, ec) &&
            fs::last_write_time(trace, ec) > fs::last_write_time(script, ec)) {
          progress(pair_tag + "reusing " + trace.string());
          continue;
        }
        progress(pair_tag + "recording " + side + ".py");
        st = record(script.string(), trace.string());
        if (!st.ok()) break;
      }
      const double record_s = Seconds(t0);
      if (!st.ok()) {
        CaseResult failed;
        failed.expected = *expected;
        failed.error = st.message();
        failed.record_seconds = record_s;
        pairs.push_back(std::move(failed));
        break;  // a script that fails once fails again: no point in more pairs
      }
      progress(pair_tag + "diffing over " + std::to_string(options.sweep.epsilons.size()) + " epsilon x " +
               std::to_string(options.sweep.taus.size()) + " tau settings");
      const auto t1 = std::chrono::steady_clock::now();
      CaseResult one = EvaluateRecordings(*expected, (dir / ("a" + suffix + ".mtrace")).string(),
                                          (dir / ("b" + suffix + ".mtrace")).string(), options.sweep);
      one.record_seconds = record_s;
      one.diff_seconds = Seconds(t1);
      pairs.push_back(std::move(one));
    }
    size_t headline_index = 0;
    for (const CaseResult& p : pairs) {
      for (size_t i = 0; i < p.settings.size(); ++i) {
        if (p.settings[i].epsilon == options.sweep.headline.epsilon && p.settings[i].tau == options.sweep.headline.tau)
          headline_index = i;
      }
    }
    r = CombineRepeats(std::move(pairs), headline_index);
    const std::string votes =
        r.repeats > 1 ? ", " + std::to_string(r.headline_votes) + "/" + std::to_string(r.repeats) + " pairs" : "";
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
