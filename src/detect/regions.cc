// From a match to ranked findings: one finding per distinct region (repeats
// across layers and decode steps aggregated), plus the energy outside every op
// and the unmatched ops as regions of their own.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "detect/detect.h"
#include "trace/load_samples.h"

namespace magneton::detect {

MachineLoadShares MachineLoadOf(const RunMetadata& meta) {
  auto share = [&meta](const char* key) {
    auto it = meta.extra.find(key);
    if (it == meta.extra.end()) return -1.0;
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    return end == it->second.c_str() || !std::isfinite(v) ? -1.0 : std::clamp(v, 0.0, 1.0);
  };
  MachineLoadShares load;
  load.others_cpu_share = share("machine.others_cpu_share");
  load.steal_share = load.others_cpu_share < 0 ? -1 : share("machine.steal_share");
  if (auto it = meta.extra.find("machine.cpus"); it != meta.extra.end()) {
    char* end = nullptr;
    const long cpus = std::strtol(it->second.c_str(), &end, 10);
    // A count no machine has is no count: the bound stays the one-thread one.
    if (end != it->second.c_str() && *end == '\0' && cpus > 0 && cpus <= 4096) load.cpus = static_cast<int>(cpus);
  }
  return load;
}

MachineLoadShares MachineLoadOf(const RunMetadata& meta, int64_t job_start_ns, int64_t job_end_ns) {
  const MachineLoadShares whole = MachineLoadOf(meta);
  auto it = meta.extra.find("machine.load_samples");
  if (whole.others_cpu_share < 0 || it == meta.extra.end() || job_end_ns <= job_start_ns) return whole;
  auto series = DecodeLoadSeries(it->second);
  auto job = series.ok() ? LoadOver(*series, job_start_ns, job_end_ns) : StatusOr<LoadShares>(series.status());
  if (!job.ok()) {
    MachineLoadShares fallback = whole;
    fallback.over_job_error = job.status().message();
    return fallback;
  }
  MachineLoadShares load;
  load.others_cpu_share = job->others_cpu_share;
  load.steal_share = job->steal_share;
  load.over_job = true;
  load.cpus = whole.cpus;
  return load;
}

double MachineLoadShares::OneThreadLogSlowdown() const {
  if (mean_log_slowdown >= 0) return mean_log_slowdown;
  const double load = Total();
  return load < 0 ? 0 : -std::log(1 - std::min(load, kMaxLoadCounted));
}

MachineLoadShares MeanLoad(const std::vector<MachineLoadShares>& runs) {
  if (runs.empty()) return {};
  MachineLoadShares mean;
  mean.others_cpu_share = mean.steal_share = 0;
  double log_slowdown = 0;
  mean.over_job = true;
  for (const MachineLoadShares& r : runs) {
    if (r.others_cpu_share < 0) return {};
    mean.others_cpu_share += r.others_cpu_share / static_cast<double>(runs.size());
    mean.steal_share += std::max(0.0, r.steal_share) / static_cast<double>(runs.size());
    log_slowdown += r.OneThreadLogSlowdown() / static_cast<double>(runs.size());
    mean.over_job = mean.over_job && r.over_job;
    mean.cpus = std::max(mean.cpus, r.cpus);
    // Known only when every run says (a run at the framework's default is no count).
    const bool known = &r == &runs.front() || std::min(mean.op_threads, r.op_threads) > 0;
    mean.op_threads = known ? std::max(mean.op_threads, r.op_threads) : 0;
    if (mean.over_job_error.empty()) mean.over_job_error = r.over_job_error;
  }
  mean.mean_log_slowdown = log_slowdown;
  return mean;
}

namespace {

// Two regions repeat each other when both sides run the same op-name sequence.
std::string RepeatKey(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::string key;
  for (const auto& n : a) key += n + '\x1f';
  key += '\x1e';
  for (const auto& n : b) key += n + '\x1f';
  return key;
}

SideSummary Summarize(const Trace& t, const energy::Attribution& e) {
  SideSummary s;
  s.total_uj = e.total_uj;
  s.unattributed_uj = e.unattributed_uj;
  s.duration_ns = e.window_end_ns - e.window_start_ns;
  s.op_count = t.ops.size();
  s.job_uj = e.job_uj;
  // The recorder's own ops (fingerprinting, JAX warm-up) are not the job's time either.
  s.job_ns = std::max<int64_t>(0, e.ops_end_ns - e.ops_start_ns - e.recorder_in_job_ns);
  s.idle_in_job_uj = e.idle_in_job_uj;
  s.issue_uj = e.issue_uj;
  s.device_idle_in_job_uj = e.device_idle_in_job_uj;
  s.basis = e.basis;
  s.machine = MachineLoadOf(t.meta, e.ops_start_ns, e.ops_end_ns);
  s.machine.op_threads = OpThreadsOf(t);
  return s;
}

// Same work on both sides: the verdict stands only if the typical op pair
// (median energy ratio) differs by more than tau, over enough pairs. A real
// cause (a kernel choice, a thread count) slows every pair; timing noise on a
// shared machine slows a few ops a lot and leaves the median where it was.
void CheckSameWork(Finding& f, const Options& options) {
  f.same_work = f.kind == RegionKind::kMatched && !f.instances.empty();
  std::vector<PairRatio> pairs;
  for (const RegionInstance& in : f.instances) {
    f.same_work = f.same_work && in.same_work;
    pairs.insert(pairs.end(), in.pair_ratios.begin(), in.pair_ratios.end());
  }
  if (!f.same_work) return;
  f.paired_ops = pairs.size();
  // Weighted by energy: a view's ratio is timer noise, the matmul beside it
  // is the region (grad-mode's lm_head region: view, alias, linear).
  f.effective_pairs = EffectivePairs(pairs);
  f.typical_pair_ratio = std::exp(WeightedMedianLogRatio(std::move(pairs)));
  if (f.verdict == Verdict::kEqual) return;
  const double typical_excess = f.wasteful_side == 'B' ? 1 / f.typical_pair_ratio - 1 : f.typical_pair_ratio - 1;
  if (f.share_of_total < options.min_same_work_share) {
    f.verdict = Verdict::kEqual;
    f.outputs_note += fmt::format("; the same work on both sides, saving {:.1f}% of the job: below the same-work "
                                  "noise floor ({:.0f}%)",
                                  100 * f.share_of_total, 100 * options.min_same_work_share);
  } else if (f.effective_pairs + 1e-9 < static_cast<double>(options.min_same_work_pairs)) {
    f.verdict = Verdict::kEqual;
    f.outputs_note += fmt::format("; the same work on both sides and its energy is carried by {:.1f} op pair(s) "
                                  "(of {}): too few to tell a cost difference from timing noise",
                                  f.effective_pairs, f.paired_ops);
  } else if (typical_excess <= options.tau) {
    f.verdict = Verdict::kEqual;
    f.outputs_note += fmt::format("; the same work on both sides and the typical op pair differs by {:.1f}% "
                                  "(energy-weighted median of {}), within tau: the total is carried by a few slow ops "
                                  "(timing noise)",
                                  100 * typical_excess, f.paired_ops);
  }
}

void SumInstances(Finding& f) {
  f.a = {};
  f.b = {};
  for (const RegionInstance& in : f.instances) {
    f.a.energy_uj += in.a.energy_uj;
    f.a.time_ns += in.a.time_ns;
    f.a.issue_uj += in.a.issue_uj;
    f.b.energy_uj += in.b.energy_uj;
    f.b.time_ns += in.b.time_ns;
    f.b.issue_uj += in.b.issue_uj;
  }
}

}  // namespace

void ClassifyFinding(Finding& f, const DetectResult& r, const Options& options) {
  // Classification appends its reasons to the agreement note; a second
  // classification (CombineRuns) starts from the agreement note again.
  if (f.agreement_note.empty()) {
    f.agreement_note = f.outputs_note;
  } else {
    f.outputs_note = f.agreement_note;
  }
  f.energy_ratio = f.b.energy_uj > 0 ? f.a.energy_uj / f.b.energy_uj
                                     : (f.a.energy_uj > 0 ? std::numeric_limits<double>::infinity() : 1.0);
  f.wasteful_side = f.a.energy_uj > f.b.energy_uj ? 'A' : (f.b.energy_uj > f.a.energy_uj ? 'B' : 0);
  f.saving_uj = std::fabs(f.a.energy_uj - f.b.energy_uj);
  const double total_uj = f.wasteful_side == 'B' ? r.b.job_uj : r.a.job_uj;
  f.share_of_total = total_uj > 0 ? f.saving_uj / total_uj : 0;
  f.verdict = Classify(f.a, f.b, f.outputs_agree, options);
  if (f.verdict != Verdict::kEqual && f.share_of_total < options.min_share) {
    f.verdict = Verdict::kEqual;
    f.outputs_note += "; saving below the min-share noise floor";
  }
  CheckSameWork(f, options);
  f.point_verdict = f.verdict;
}

void RankFindings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& x, const Finding& y) {
    if (x.verdict != y.verdict) return static_cast<int>(x.verdict) < static_cast<int>(y.verdict);
    // Steady-state work before one-time compilation: a short recording
    // stands for a longer job, whose compile cost stays what it was here.
    if (x.one_time != y.one_time) return y.one_time;
    return x.saving_uj > y.saving_uj;
  });
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + hi) / 2;
}

StatusOr<DetectResult> DetectFromMatch(const Trace& a, const FingerprintMap& fa, const energy::Attribution& ea,
                                       const Trace& b, const FingerprintMap& fb, const energy::Attribution& eb,
                                       const MatchResult& match, const Options& options) {
  if (ea.provenance != eb.provenance) {
    return FailedPrecondition("trace A's energy is " + std::string(ProvenanceName(ea.provenance)) + " and B's is " +
                              ProvenanceName(eb.provenance) +
                              "; measured and estimated joules are never compared. Record both on the same kind of "
                              "meter.");
  }
  if (ea.basis != eb.basis) {
    return FailedPrecondition("energy domain " + ea.domain + " is attributed by " + ea.basis + " on A and by " +
                              eb.basis + " on B: one trace has GPU device activity there and the other has none "
                              "(docs/ENERGY.md, \"GPU attribution\"). Record both with device activity, or choose "
                              "another domain with --domain.");
  }
  DetectResult r;
  r.domain = ea.domain;
  r.provenance = ea.provenance;
  r.options = options;
  r.a = Summarize(a, ea);
  r.b = Summarize(b, eb);
  r.matched_region_pairs = match.regions.size();

  // What each node op ran on the device (recorded device activity only):
  // the same host ops that ran other kernels did not do the same work, and
  // the kernels are evidence of it, not timing.
  std::unordered_set<int64_t> nodes_a, nodes_b;
  for (const RegionPair& rp : match.regions) {
    nodes_a.insert(rp.ops_a.begin(), rp.ops_a.end());
    nodes_b.insert(rp.ops_b.begin(), rp.ops_b.end());
  }
  const auto device_a = DeviceWorkOf(a, nodes_a), device_b = DeviceWorkOf(b, nodes_b);
  auto same_device_work = [&](const std::vector<int64_t>& ops_a, const std::vector<int64_t>& ops_b) {
    static const std::vector<std::string> kNone;
    for (size_t i = 0; i < ops_a.size() && i < ops_b.size(); ++i) {
      auto x = device_a.find(ops_a[i]);
      auto y = device_b.find(ops_b[i]);
      if ((x == device_a.end() ? kNone : x->second) != (y == device_b.end() ? kNone : y->second)) return false;
    }
    return true;
  };

  // Set-up and job never share a region (setup_phase.cc): a region that
  // spans the first forward pass is split there. A part with ops on one side
  // only is work that side does and the other does not: unmatched, in its phase.
  // One-time compilation is a phase of its own too (setup_phase.cc).
  const PhaseBounds phases_a = PhasesOf(a), phases_b = PhasesOf(b);
  constexpr Phase kPhases[] = {Phase::kJob, Phase::kSetup, Phase::kOneTime};
  // Unmatched: the match's, then the one-sided parts of split regions (each op's phase is re-derived below).
  std::vector<int64_t> unmatched_a = match.unmatched_ops_a, unmatched_b = match.unmatched_ops_b;
  std::map<std::string, size_t> by_key;
  for (const RegionPair& rp : match.regions) {
    std::string note;
    const bool agree = OutputsAgree(rp.outputs, fa, fb, options.output_epsilon, &note);
    std::vector<int64_t> part_a[3], part_b[3];
    int phases_present = 0;
    for (Phase phase : kPhases) {
      const int k = static_cast<int>(phase);
      part_a[k] = PhaseOps(a, rp.ops_a, phases_a, phase);
      part_b[k] = PhaseOps(b, rp.ops_b, phases_b, phase);
      if (!part_a[k].empty() || !part_b[k].empty()) ++phases_present;
    }
    const bool split = phases_present > 1;
    for (Phase phase : kPhases) {
      const int k = static_cast<int>(phase);
      std::vector<int64_t>& ops_a = part_a[k];
      std::vector<int64_t>& ops_b = part_b[k];
      if (ops_a.empty() && ops_b.empty()) continue;
      if (ops_a.empty() || ops_b.empty()) {
        unmatched_a.insert(unmatched_a.end(), ops_a.begin(), ops_a.end());
        unmatched_b.insert(unmatched_b.end(), ops_b.begin(), ops_b.end());
        continue;
      }
      // The exit cut belongs to the job's part: set-up only feeds it.
      const bool has_exit = !split || phase == Phase::kJob;
      RegionInstance in{ops_a, ops_b, has_exit ? rp.outputs : std::vector<TensorPair>{}, CostOf(a, ea, ops_a),
                        CostOf(b, eb, ops_b)};
      in.same_work = SameWork(a, ops_a, b, ops_b) && same_device_work(ops_a, ops_b);
      if (in.same_work) in.pair_ratios = PairRatios(ea, ops_a, eb, ops_b);
      const std::string part_note =
          has_exit ? note
                   : std::string(phase == Phase::kSetup ? "the set-up" : "the one-time compilation") +
                         " part of a region whose exit " + note;
      auto names_a = NamesOf(a, ops_a);
      auto names_b = NamesOf(b, ops_b);
      auto [it, inserted] =
          by_key.try_emplace(std::string(phase == Phase::kSetup ? "setup\x1d" : phase == Phase::kOneTime ? "once\x1d" : "") +
                                 RepeatKey(names_a, names_b),
                             r.findings.size());
      if (inserted) {
        Finding f;
        f.kind = RegionKind::kMatched;
        f.setup = phase == Phase::kSetup;
        f.one_time = phase == Phase::kOneTime;
        f.names_a = std::move(names_a);
        f.names_b = std::move(names_b);
        f.outputs_agree = agree;
        f.outputs_note = part_note;
        r.findings.push_back(std::move(f));
      }
      Finding& f = r.findings[it->second];
      if (f.outputs_agree && !agree) {
        f.outputs_agree = false;
        f.outputs_note = part_note;  // one disagreeing repeat spoils the aggregate
      }
      f.instances.push_back(std::move(in));
    }
  }

  Finding outside;
  outside.kind = RegionKind::kOutsideOps;
  // Only inside the job: start-up (imports) and exit are not the work compared,
  // and on short runs they would drown every between-op difference in noise.
  // The gap before each op is that op's issue time and counts in its region;
  // what is left is time no thread spent on or issuing an op.
  outside.instances.push_back({{},
                               {},
                               {},
                               {ea.unclaimed_in_job_uj, ea.unclaimed_in_job_ns},
                               {eb.unclaimed_in_job_uj, eb.unclaimed_in_job_ns}});
  // No op computes anything here, so there is nothing that could disagree.
  outside.outputs_agree = true;
  outside.outputs_note = "energy inside the job while no op ran and no thread was issuing one";
  r.findings.push_back(std::move(outside));

  // A GPU idle inside the job (device attribution): its own region, since
  // no op's launches account for it and no host pause is it.
  if (ea.device_idle_in_job_uj > 0 || eb.device_idle_in_job_uj > 0) {
    Finding idle;
    idle.kind = RegionKind::kDeviceIdle;
    idle.instances.push_back({{},
                              {},
                              {},
                              {ea.device_idle_in_job_uj, ea.device_idle_in_job_ns},
                              {eb.device_idle_in_job_uj, eb.device_idle_in_job_ns}});
    idle.outputs_agree = true;
    idle.outputs_note = "the GPU's energy inside the job while no kernel, copy or fill ran on it";
    r.findings.push_back(std::move(idle));
  }

  // Which unmatched ops are one side's own is decided over the whole run
  // (SplitUnmatched, unmatched_split.cc), then each part is split by phase: a
  // kind both sides run, one in its set-up and one in its job, is no side's own.
  std::sort(unmatched_a.begin(), unmatched_a.end());
  std::sort(unmatched_b.begin(), unmatched_b.end());
  const UnmatchedSplit split = SplitUnmatched(a, fa, unmatched_a, b, fb, unmatched_b, options.output_epsilon);
  for (Phase phase : kPhases) {
    for (const auto& [part_a, part_b] : {std::pair{&split.extra_a, &split.none}, std::pair{&split.none, &split.extra_b},
                                         std::pair{&split.rest_a, &split.rest_b}}) {
      const std::vector<int64_t> ops_a = PhaseOps(a, *part_a, phases_a, phase);
      const std::vector<int64_t> ops_b = PhaseOps(b, *part_b, phases_b, phase);
      if (ops_a.empty() && ops_b.empty()) continue;
      Finding un;
      un.kind = RegionKind::kUnmatched;
      un.setup = phase == Phase::kSetup;
      un.one_time = phase == Phase::kOneTime;
      un.names_a = NamesOf(a, ops_a);
      un.names_b = NamesOf(b, ops_b);
      un.instances.push_back({ops_a, ops_b, {}, CostOf(a, ea, ops_a), CostOf(b, eb, ops_b)});
      // Work one side does and the other does without, while every matched
      // output still agrees, is redundant; unmatched work on both sides cannot
      // be verified to compute the same thing.
      un.outputs_agree = ops_a.empty() || ops_b.empty();
      un.outputs_note = un.outputs_agree ? "only one side runs these ops; the other reaches the same matched outputs"
                                         : "unmatched on both sides: outputs not verified";
      r.findings.push_back(std::move(un));
    }
  }

  AddKernelCosts(a, ea, b, eb, &r.findings);
  for (Finding& f : r.findings) {
    SumInstances(f);
    ClassifyFinding(f, r, options);
  }
  // What differs for the ops of each region that differs in cost: evidence
  // the uncertainty step weighs (a same-work region under another runtime
  // state is the code's, whatever the machine did).
  if (options.region_differences) {
    for (Finding& f : r.findings) {
      if (f.kind != RegionKind::kMatched || f.point_verdict == Verdict::kEqual) continue;
      std::vector<int64_t> all_a, all_b;
      for (const RegionInstance& in : f.instances) {
        all_a.insert(all_a.end(), in.ops_a.begin(), in.ops_a.end());
        all_b.insert(all_b.end(), in.ops_b.begin(), in.ops_b.end());
      }
      f.differences_in_effect = options.region_differences(a, all_a, b, all_b, f.wasteful_side == 'B' ? 'B' : 'A');
    }
  }
  AssessOneRecording(r, options);
  RankFindings(r.findings);
  return r;
}

std::vector<std::string> NamesOf(const Trace& trace, std::span<const int64_t> ops) {
  std::vector<std::string> names;
  names.reserve(ops.size());
  for (int64_t id : ops) {
    names.push_back(id >= 0 && static_cast<size_t>(id) < trace.ops.size() ? trace.str(trace.ops[id].name_id) : "?");
  }
  return names;
}

}  // namespace magneton::detect
