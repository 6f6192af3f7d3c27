// Differential detection (method.md section 6): for every region pair that
// matching found, energy and time on both sides, their ratio, and whether the
// difference is waste (the cheaper side is not slower and computes the same
// outputs), a trade-off, or equal. Energy outside every op and unmatched ops
// are regions of their own; repeated regions are aggregated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <deque>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/format.h"
#include "energy/attribution.h"
#include "fingerprint/fingerprint_map.h"
#include "magneton/analysis_defaults.h"
#include "match/match.h"
#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::detect {

// kDeviceIdle: a GPU's energy inside the job while no kernel, copy or fill
// ran on it (device attribution only, energy/device_energy.h).
enum class RegionKind { kMatched, kOutsideOps, kUnmatched, kDeviceIdle };
// Regions that hold no ops: time while nothing ran (outside_ops, device_idle).
inline bool HoldsNoOps(RegionKind kind) { return kind == RegionKind::kOutsideOps || kind == RegionKind::kDeviceIdle; }
// kInconclusive: the point estimate would be waste or a trade-off, but its
// confidence interval does not clear tau, or one recording per side cannot
// tell the difference from the machine (docs/DIFF.md, "Uncertainty").
enum class Verdict { kWaste, kTradeOff, kInconclusive, kEqual };
const char* RegionKindName(RegionKind kind);  // "matched", "outside_ops", "unmatched", "device_idle"
const char* VerdictName(Verdict verdict);     // "waste", "trade_off", "inconclusive", "equal"

struct SideCost {
  double energy_uj = 0;
  int64_t time_ns = 0;
  // The part of energy_uj spent issuing the region's top-level ops (host code
  // in the gaps before them; energy::OpEnergy::issue_uj).
  double issue_uj = 0;
};

// Device work a region's ops launched (device attribution only,
// kernel_costs.cc): one entry per activity name, summed over the region's
// instances, costliest first.
struct KernelCost {
  std::string name;           // the kernel's (or copy's, fill's) name
  std::string kind;           // "kernel", "memcpy", "memset"
  size_t count = 0;           // activities
  double energy_uj = 0;       // their energy (energy/device_energy.h)
  int64_t time_ns = 0;        // their time on the device
};

// One op pair of a same-work region: ln(energy A / energy B), and the
// energy of its cheaper side, which weighs it.
struct PairRatio {
  double log_ratio = 0;
  double energy_uj = 0;
};

// One occurrence of a region (one layer, one decode step).
struct RegionInstance {
  RegionOps ops_a;  // graph node ops (each stands for its subtree)
  RegionOps ops_b;
  RegionCut outputs;  // the exit cut, empty for non-matched kinds
  SideCost a, b;
  // Same ops, order, input shapes and dtypes on both sides (SameWork); then
  // each op pair's ln(energy A / energy B) and energy, in order.
  bool same_work = false;
  SmallVector<PairRatio, 1> pair_ratios{};
};

// A two-sided confidence interval; known = false when there is nothing to
// resample (one occurrence in one recording per side).
struct Interval {
  bool known = false;
  double low = 0, high = 0;
};

// How sure a finding is (uncertainty.cc, docs/DIFF.md "Uncertainty").
struct Uncertainty {
  Interval ratio;      // on energy_ratio (A/B)
  Interval saving_uj;  // on the costlier side's excess energy (costly - cheap)
  std::string method;  // "bootstrap" or "delta" (over units of one recording), "t" (over runs), "" (none)
  std::string unit;    // "instances", "op pairs", "runs"
  size_t units = 0;    // how many were resampled
  size_t runs = 1;     // recordings per side the finding was seen in
  size_t runs_given = 1;  // recordings per side the diff was given
};

struct Finding {
  // Moved, never copied, when a vector of findings grows: the instances'
  // deque does not promise a move without exceptions (libstdc++ gives the
  // source a new map), so a vector copied every finding, doubling 600 000
  // instances at the diff's peak (docs/PERFORMANCE.md, "At scale").
  Finding() = default;
  Finding(const Finding&) = default;
  Finding& operator=(const Finding&) = default;
  Finding(Finding&&) noexcept = default;
  Finding& operator=(Finding&&) noexcept = default;

  RegionKind kind = RegionKind::kMatched;
  // Set-up (setup_phase.cc): the ops ran before the program's first forward
  // pass — model construction, weight init, input preparation. A region that
  // spans both is split; set-up parts are findings of their own.
  bool setup = false;
  // One-time compilation (setup_phase.cc): the first compilation of each
  // compiled function, paid once however long the job runs. Ranked after
  // the steady-state findings of its verdict (RankFindings).
  bool one_time = false;
  Verdict verdict = Verdict::kEqual;
  std::vector<std::string> names_a;  // op-name sequence of one instance
  std::vector<std::string> names_b;
  // Aggregated repeats, in trace order. In blocks, not one array: a long
  // run's 600 000 instances grew arrays by doubling, old and new both held
  // at the diff's peak.
  std::deque<RegionInstance> instances;
  SideCost a, b;                          // summed over instances
  double energy_ratio = 1;  // a / b; +inf when b spent nothing
  char wasteful_side = 0;   // 'A' or 'B' (the side spending more), 0 when equal energy
  double saving_uj = 0;     // |a - b|: what the costlier side could save by doing what the other does
  double share_of_total = 0;  // saving_uj / the costlier run's job energy (SideSummary::job_uj)
  bool outputs_agree = false;
  std::string outputs_note;  // why they do or do not agree (and why the verdict is what it is)
  std::string agreement_note;  // the first part of outputs_note: whether the outputs agree
  // Matched findings whose every instance is the same work on both sides:
  // the op pairs over all instances, how many of them carry its energy
  // (effective_pairs = (sum w)^2 / sum w^2 over pair energies w: 3 for three
  // equal pairs, ~1 for one matmul beside two views), and their typical
  // (energy-weighted median) ratio A/B. Such a finding is waste only when the
  // typical pair differs by more than tau over at least
  // Options::min_same_work_pairs effective pairs: a sum over the pairs can be
  // carried by one op that a machine stall slowed down.
  bool same_work = false;
  size_t paired_ops = 0;
  double effective_pairs = 0;
  double typical_pair_ratio = 1;
  // The verdict of the point estimate, before the uncertainty step; verdict
  // is this or, where the interval does not clear tau, kInconclusive.
  Verdict point_verdict = Verdict::kEqual;
  Uncertainty uncertainty;
  std::string uncertainty_note;  // why inconclusive, or what the interval rests on
  // The device work the region's ops launched on each side, when the
  // domain's attribution went through device activities; empty otherwise.
  std::vector<KernelCost> kernels_a, kernels_b;
  // Recorded differences in effect for this region's ops (Options::
  // region_differences: a runtime state they ran under, a nested kernel, a
  // layout), one line each. With one recording per side they are evidence
  // that a same-work region's cost is the code's and not the machine's.
  std::vector<std::string> differences_in_effect;
};
static_assert(std::is_nothrow_move_constructible_v<Finding>, "a growing vector must move findings, not copy them");

struct Options {
  // Defaults: magneton/analysis_defaults.h.
  double tau = defaults::kTau;                  // relative energy difference that counts (method.md: 10%)
  double max_slowdown = defaults::kMaxSlowdown;  // the cheaper side may be at most this much slower to be waste
  double output_epsilon = defaults::kEpsilon;   // CompareFingerprints tolerance on region outputs
  // Findings saving less than this share of the end-to-end energy are "equal":
  // below it, estimated energy differences on tiny regions are timing noise.
  double min_share = 0.0;
  // Fewest op pairs a same-work finding needs (see Finding::same_work).
  size_t min_same_work_pairs = 3;
  // The noise floor of a same-work finding, as a share of the job: its only
  // evidence is timing, and on a shared 2-core VM the same run recorded
  // twice showed same-work differences beyond tau of up to 4.1% of the job
  // (cases/identical, docs/EVALUATION.md). Findings whose ops differ are
  // evidence by themselves and keep min_share.
  double min_same_work_share = defaults::kMinSameWorkShare;
  std::string domain;  // informational: the attributions given are in this domain
  MatchOptions match;
  // Uncertainty (uncertainty.cc): the confidence of every interval, and the
  // bootstrap's resample count (its seed is fixed: a report is reproducible).
  double confidence = 0.95;
  int bootstrap_resamples = 2000;
  // Recorded settings that reach every op (config snapshot entries of source
  // global_flag, runtime or env: a thread count, a backend flag) and differ
  // between the two sides, as "key: a -> b". With one recording per side, a
  // slowdown of the same work that the whole run shares is the machine's
  // unless one of these differs; a model's config or a call's argument acts
  // on the regions it changes, not on the whole run.
  std::vector<std::string> differing_settings;
  // What differs between the two sides for one region's ops, one line per
  // difference ("runtime state torch.backends.mkldnn.enabled: true -> false");
  // empty when nothing recorded differs. Given by the caller (the analysis
  // wires the diagnosis's contrasts: detection does not depend on
  // diagnosis); null: nothing is looked for. ops_* are every instance's ops.
  std::function<std::vector<std::string>(const Trace& a, const std::vector<int64_t>& ops_a, const Trace& b,
                                         const std::vector<int64_t>& ops_b, char costly_side)>
      region_differences;
};

// What else used the machine's CPUs while a trace was recorded, as shares of
// all its CPU time (trace meta machine.*, written by record/machine_load.cc):
// other processes, and the hypervisor's steal. Negative when the trace does
// not say (an older trace, or /proc/stat unreadable).
struct MachineLoadShares {
  double others_cpu_share = -1;
  double steal_share = -1;
  // Over the job (first op to last op, from machine.load_samples), not the
  // whole recording (every run after CombineRuns).
  bool over_job = false;
  // The CPUs the recorded process could run on (meta machine.cpus); 0 when
  // the trace does not say.
  int cpus = 0;
  // The threads its ops ran on where the framework recorded the count
  // (OpThreadsOf: torch.num_threads, TF's intra-op setting); 0 when not.
  int op_threads = 0;
  // Why the job's load could not be taken although the trace holds a series
  // (a corrupt machine.load_samples, a job too short for its ticks); empty
  // otherwise. Said in the reports, never silent.
  std::string over_job_error;
  // Over several runs (MeanLoad): the mean of each run's OneThreadLogSlowdown;
  // negative for one run, where it follows from Total().
  double mean_log_slowdown = -1;
  // others + steal, or negative when unknown.
  double Total() const { return others_cpu_share < 0 ? -1 : others_cpu_share + std::max(0.0, steal_share); }
  // ln(1 / (1 - load)): what the load can do to one thread's time, on a log
  // scale; the load counted up to kMaxLoadCounted. Over several runs the mean
  // of the runs' values, not the value at their mean load: the bound is convex
  // in the load, and the ratio it is held against is a mean of log ratios, so
  // runs at 30% and 70% allow more than two at 50%. 0 when unknown.
  double OneThreadLogSlowdown() const;
  // T of the load bounds: the CPUs it could use, no more than its ops' threads
  // when those are known (one thread has no barrier to wait at).
  int BarrierThreads() const {
    if (op_threads <= 0) return cpus;
    return cpus > 0 ? std::min(cpus, op_threads) : op_threads;
  }
};
MachineLoadShares MachineLoadOf(const RunMetadata& meta);
// Over [job_start_ns, job_end_ns] when the trace holds the sampled series
// (machine.load_samples) and it spans enough ticks; else the whole
// recording's (MachineLoadOf above).
MachineLoadShares MachineLoadOf(const RunMetadata& meta, int64_t job_start_ns, int64_t job_end_ns);
// The mean over runs (every run's over_job for over_job); unknown when any
// run's is.
MachineLoadShares MeanLoad(const std::vector<MachineLoadShares>& runs);
// A load of this share of the machine's CPU time, or a gap this large
// between the sides, is material: a quiet machine drifts by a few percent
// between runs.
inline constexpr double kMaterialLoad = 0.10;
// Beyond this share the load bounds grow without limit; counted as this.
inline constexpr double kMaxLoadCounted = 0.9;

struct SideSummary {
  double total_uj = 0;        // the domain's energy over the sample window
  double unattributed_uj = 0;  // while no op ran
  int64_t duration_ns = 0;    // the sample window
  size_t op_count = 0;
  // The job, first op start to last op end: what is compared. Start-up
  // (interpreter, imports) and exit lie outside it and are only reported.
  double job_uj = 0;
  int64_t job_ns = 0;
  double idle_in_job_uj = 0;  // inside the job while no op ran
  double issue_uj = 0;        // the part of idle_in_job_uj charged to ops as issue time
  double device_idle_in_job_uj = 0;  // a GPU's energy inside the job while it ran nothing
  std::string basis = "host";        // energy::Attribution::basis
  MachineLoadShares machine;  // the mean over runs after CombineRuns
};

struct DetectResult {
  std::string domain;
  Provenance provenance = Provenance::kEstimated;
  Options options;
  SideSummary a, b;
  size_t matched_region_pairs = 0;
  // Ranked: waste by saving_uj, then trade-offs, inconclusive, equal.
  std::vector<Finding> findings;
  size_t runs = 1;  // recordings per side combined (CombineRuns)
  // The typical (energy-weighted median) A/B ratio of every same-work op
  // pair: how much costlier one whole run is on work that is identical;
  // 1 when there are none. Same-work pairs of regions with a recorded
  // difference in effect (Finding::differences_in_effect) are left out: they
  // are the code's difference, not the machine's.
  double run_wide_ratio = 1;
};

// The median of `values` (the mean of the middle two for an even count); 0
// for none.
double Median(std::vector<double> values);

// The op names of `ops` in order ("?" for an id outside the trace).
std::vector<std::string> NamesOf(const Trace& trace, std::span<const int64_t> ops);

// The classification rule on one (aggregated) region.
Verdict Classify(const SideCost& a, const SideCost& b, bool outputs_agree, const Options& options);

// Energy and time of a set of graph-node ops: inclusive energy (the node's
// whole subtree) and wall time, summed.
SideCost CostOf(const Trace& trace, const energy::Attribution& attribution, std::span<const int64_t> node_ops);

// Fills Finding::kernels_a / kernels_b of matched and unmatched findings from
// the attributions' per-activity energy: an activity counts in the region
// whose node op is the op it was charged to or one of that op's ancestors.
void AddKernelCosts(const Trace& a, const energy::Attribution& ea, const Trace& b, const energy::Attribution& eb,
                    std::vector<Finding>* findings);

// The names of the device activities (kernels, copies, fills) launched by
// each of `nodes` or by the ops nested in it, in start order: what its work
// was on the device. Nodes without device activity are left out.
std::unordered_map<int64_t, std::vector<std::string>> DeviceWorkOf(const Trace& trace,
                                                                   const std::unordered_set<int64_t>& nodes);

// Whether two region instances run the same work: the same op names in the
// same order, with the same non-tensor arguments (OpEvent::args), on inputs
// of the same shapes and dtypes (same_work.cc).
bool SameWork(const Trace& a, std::span<const int64_t> ops_a, const Trace& b, std::span<const int64_t> ops_b);
// ln(energy_A / energy_B) and energy per op pair (inclusive plus issue energy).
std::vector<PairRatio> PairRatios(const energy::Attribution& ea, std::span<const int64_t> ops_a,
                                  const energy::Attribution& eb, std::span<const int64_t> ops_b);
// The log ratio at which the pairs' cumulative energy, in ratio order, first
// reaches half of their total; 0 for none.
double WeightedMedianLogRatio(std::vector<PairRatio> pairs);
// The log ratio at which the pairs' cumulative energy, in ratio order, first
// reaches the share q of their total; 0 for none.
double WeightedQuantileLogRatio(std::vector<PairRatio> pairs, double q);
// (sum of pair energies)^2 / sum of their squares; 0 for none.
double EffectivePairs(const std::vector<PairRatio>& pairs);

// Whether the exit-cut tensors hold the same values within `epsilon`.
bool OutputsAgree(std::span<const TensorPair> outputs, const FingerprintMap& fa, const FingerprintMap& fb,
                  double epsilon, std::string* note);

// How much slower the costlier side may have run for the machine alone. A
// thread that would use a whole CPU gets (1 - load) of it, so its time can
// grow by 1 / (1 - load); an op whose T threads wait for one another at
// every barrier runs only while all T are on a CPU, (1 - load)^T of the time,
// so the bound is ((1 - load_cheap) / (1 - load_costly))^T with T the CPUs
// the costlier side could use (machine.cpus; 1 when unknown), no more than
// the threads its ops ran on when recorded (BarrierThreads). An upper bound
// (a single-threaded program on a large machine may not slow at all), which
// is what a demotion needs. 1 when a side does not say or the gap is under
// kMaterialLoad.
double LoadSlowdownBound(const SideSummary& costly, const SideSummary& cheap);
// What the load can do to one region of the costlier side, whatever the
// other side's load: (1 / (1 - load_costly))^T, 1 under kMaterialLoad. The
// job-level bound above divides the cheaper side's load out, which holds for
// means over a whole job; a region is a slice of one run, and its side may
// have met a burst of other work that the other side's region did not.
double RegionLoadBound(const SideSummary& costly);

// The uncertainty step on one recording per side (called by
// DetectFromMatch): an interval per finding by a paired bootstrap over its
// instances (or over its op pairs when it occurs once), verdicts demoted to
// inconclusive where the interval does not clear tau.
void AssessOneRecording(DetectResult& result, const Options& options);
// Several recordings per side, paired by index (A1 with B1, ...): the
// reference's findings with energy averaged over the runs each is found in
// and a t interval over the runs' log ratios (a run lacking the finding
// counts as no difference). Re-ranks.
DetectResult CombineRuns(DetectResult reference, const std::vector<DetectResult>& repeats, const Options& options);
// A percentile bootstrap over paired units (a_k, b_k): intervals on
// sum(a)/sum(b) and on sum(costly) - sum(cheap). Deterministic for a seed.
// Over 4 096 units, the delta method's normal interval instead (the same to
// within the bootstrap's own error there, without resamples x units draws).
// Returns the method used: "bootstrap" or "delta".
const char* BootstrapRatio(const std::vector<std::pair<double, double>>& units, bool a_costly, const Options& options,
                    uint64_t seed, Interval* ratio, Interval* saving);
// The two-sided Student t quantile for `confidence` and `df` degrees of freedom.
double StudentT(double confidence, size_t df);
// Set-up (setup_phase.cc, docs/DIFF.md "Set-up"): the start of the first op
// that runs inside a module scope; ops starting before it are set-up.
// INT64_MIN (no set-up) when no op has a module scope.
int64_t SetupEndNs(const Trace& trace);
// The most intra-op threads any of the trace's runtime states gives its ops
// (torch.num_threads, tf.config.threading.intra_op_parallelism_threads);
// 0 when none is recorded or one is the framework's default (op_threads.cc).
int OpThreadsOf(const Trace& trace);
// The phases an op can be in (setup_phase.cc, docs/DIFF.md "Set-up" and
// "One-time compilation"); regions never span two.
enum class Phase { kJob = 0, kSetup = 1, kOneTime = 2 };
struct PhaseBounds {
  int64_t setup_end_ns = std::numeric_limits<int64_t>::min();
  std::vector<char> one_time;  // per op id: inside a first compilation ("compile_kind": "first")
};
PhaseBounds PhasesOf(const Trace& trace);
// One-time compilation wins over set-up: a first compile is named as such
// wherever it ran.
Phase PhaseOf(const Trace& trace, const PhaseBounds& bounds, int64_t op_id);
// The ops of `ops` in `phase`, in order.
std::vector<int64_t> PhaseOps(const Trace& trace, std::span<const int64_t> ops, const PhaseBounds& bounds,
                              Phase phase);

// The ranking of DetectResult::findings.
void RankFindings(std::vector<Finding>& findings);
// Re-derives a finding's verdict from its summed cost (Classify, min_share,
// the same-work rule) into point_verdict and verdict.
void ClassifyFinding(Finding& f, const DetectResult& r, const Options& options);

// The unmatched ops, split where one side's are extra work
// (unmatched_split.cc, docs/DIFF.md "Regions"): ops no unmatched op of the
// other side repeats — none of that name, or for a kind this side runs more
// often none on equivalent inputs — and the ops that read what they wrote.
// When both sides have such work it splits off only if the two parts start
// from other values (else it may be two ways to one result): otherwise, as
// by name alone, only one side's kinds of its own split off, and only when
// the other side has none. Each part becomes an unmatched finding of its own:
// extra_a / extra_b (one side only: redundant work, as the other side reaches
// every matched output without it) and rest_a with rest_b (both sides, or all
// of it when nothing splits off).
struct UnmatchedSplit {
  std::vector<int64_t> extra_a, extra_b, rest_a, rest_b;
  std::vector<int64_t> none;  // always empty: the other side of an extra part
};
UnmatchedSplit SplitUnmatched(const Trace& a, const FingerprintMap& fa, const std::vector<int64_t>& ops_a,
                              const Trace& b, const FingerprintMap& fb, const std::vector<int64_t>& ops_b,
                              double epsilon);

// Detection on given attributions and match (the analysis session,
// src/analysis/, attributes energy in its one domain and matches first).
// Refuses two attributions whose energy provenances differ.
StatusOr<DetectResult> DetectFromMatch(const Trace& a, const FingerprintMap& fa, const energy::Attribution& ea,
                                       const Trace& b, const FingerprintMap& fb, const energy::Attribution& eb,
                                       const MatchResult& match, const Options& options);

}  // namespace magneton::detect
