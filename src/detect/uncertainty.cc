// Uncertainty on every finding (docs/DIFF.md, "Uncertainty"). A verdict is a
// claim about the code only when the difference is larger than what the
// machine does to the same code: energy on a shared VM moves by 1.5-2x from
// one run to the next, and whole runs slow down together.
//
// One recording per side: the repeated occurrences of a region inside the run
// (layers, decode steps, iterations) are the replication, resampled by a
// paired percentile bootstrap; a region seen once is resampled over its op
// pairs when both sides run the same ops. What that cannot see is the
// machine: occurrences in one run share its state. A difference whose only
// evidence is timing (the same ops on the same shapes on both sides) is
// waste only when a recorded difference in effect for those ops explains it
// (a runtime state they ran under, a nested kernel, a layout, a setting that
// reaches every op), or when it clears, by a margin, what the machine did to
// the rest of the run (the same work outside it and outside any op under a
// differing state) and what the machine's load can do; energy between ops
// (one sample per side) stays inconclusive. A region whose ops differ counts
// only beyond the shift of the same work in its run.
//
// Several recordings per side: the runs are the replication. The interval is
// a Student t interval over the runs' log ratios (paired A_k with B_k, which
// interleaved recording makes share the machine's state).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <fmt/format.h>

#include "detect/detect.h"

namespace magneton::detect {

double LoadSlowdownBound(const SideSummary& costly, const SideSummary& cheap) {
  const double lc = costly.machine.Total(), lo = cheap.machine.Total();
  if (lc < 0 || lo < 0 || lc - lo < kMaterialLoad) return 1;
  // (1 - lo) / (1 - lc) for one run; the mean over runs of it, on a log scale, for several.
  const double one_thread =
      std::exp(std::max(0.0, costly.machine.OneThreadLogSlowdown() - cheap.machine.OneThreadLogSlowdown()));
  // Threads that wait for one another at a barrier all stall while any one
  // of them is off its CPU: on this project's 2-core VM, a Linear layer on 2
  // threads beside two spinning processes (51% of the machine against 0%)
  // came out 3.1x costlier, beyond the one-thread bound of 2.04x.
  return std::pow(one_thread, std::max(1, costly.machine.BarrierThreads()));
}

double RegionLoadBound(const SideSummary& costly) {
  const double lc = costly.machine.Total();
  if (lc < kMaterialLoad) return 1;  // a quiet machine, or one that does not say
  return std::exp(costly.machine.OneThreadLogSlowdown() * std::max(1, costly.machine.BarrierThreads()));
}

namespace {

constexpr char kMoreRuns[] =
    "record more runs per side (`magneton compare -n 3 -- CMD_A -- CMD_B`, or `magneton diff a1,a2,a3 b1,b2,b3`)";

uint64_t SeedOf(const Finding& f) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same finding resamples the same way in every report
  auto mix = [&h](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0x1f) * 1099511628211ull;
  };
  mix(RegionKindName(f.kind));
  if (f.setup) mix("setup");
  if (f.one_time) mix("once");
  for (const std::string& n : f.names_a) mix(n);
  mix(">");
  for (const std::string& n : f.names_b) mix(n);
  return h;
}

// The same finding in another run: the same op-name sequences for a matched
// region; outside_ops is one finding per run whatever it holds, and so is each
// part of the unmatched ops (SplitUnmatched: A's extra, B's extra, the rest),
// told apart by the sides that hold ops.
std::string KeyOf(const Finding& f) {
  std::string key = RegionKindName(f.kind);
  if (f.setup) key += "\x1dsetup";
  if (f.one_time) key += "\x1donce";
  if (f.kind == RegionKind::kUnmatched) {
    return key + (f.names_a.empty() ? "" : "|A") + (f.names_b.empty() ? "" : "|B");
  }
  if (f.kind != RegionKind::kMatched) return key;
  for (const std::string& n : f.names_a) key += '\x1f' + n;
  key += '\x1e';
  for (const std::string& n : f.names_b) key += '\x1f' + n;
  return key;
}

using NameCounts = std::map<std::string, int>;

// The op names of both sides of one occurrence, as a multiset.
NameCounts CountsOf(const Finding& f) {
  NameCounts c;
  for (const std::string& n : f.names_a) ++c["A\x1f" + n];
  for (const std::string& n : f.names_b) ++c["B\x1f" + n];
  return c;
}

// sum(min) / sum(max) over the two multisets: 1 for the same ops, 0 for none shared.
double Similarity(const NameCounts& x, const NameCounts& y) {
  double lo = 0, hi = 0;
  auto i = x.begin();
  auto j = y.begin();
  while (i != x.end() || j != y.end()) {
    if (j == y.end() || (i != x.end() && i->first < j->first)) {
      hi += i++->second;
    } else if (i == x.end() || j->first < i->first) {
      hi += j++->second;
    } else {
      lo += std::min(i->second, j->second);
      hi += std::max(i++->second, j++->second);
    }
  }
  return hi > 0 ? lo / hi : 0;
}

// The paired units of one recording: instances, or op pairs of a same-work
// region that occurs once.
std::vector<std::pair<double, double>> UnitsOf(const Finding& f, std::string* unit) {
  std::vector<std::pair<double, double>> units;
  if (f.instances.size() >= 2) {
    *unit = "instances";
    for (const RegionInstance& in : f.instances) units.emplace_back(in.a.energy_uj, in.b.energy_uj);
    return units;
  }
  if (f.same_work && f.instances.size() == 1 && f.instances.front().pair_ratios.size() >= 2) {
    *unit = "op pairs";
    for (const PairRatio& p : f.instances.front().pair_ratios) {
      const double costly = p.energy_uj * std::exp(std::fabs(p.log_ratio));
      units.emplace_back(p.log_ratio >= 0 ? costly : p.energy_uj, p.log_ratio >= 0 ? p.energy_uj : costly);
    }
  }
  return units;
}

// The costlier side's ratio that the interval guarantees (its lower bound).
double CostlyRatioBound(const Finding& f) {
  const Interval& r = f.uncertainty.ratio;
  if (f.wasteful_side == 'B') return r.high > 0 ? 1 / r.high : std::numeric_limits<double>::infinity();
  return r.low;
}

// How much costlier the costlier side is by the evidence at hand: its
// interval's end when the finding has one, else the point ratio (+inf when
// the other side spent nothing).
double CostlyRatioEvidence(const Finding& f) {
  if (f.uncertainty.ratio.known) return CostlyRatioBound(f);
  return f.wasteful_side == 'B' ? 1 / f.energy_ratio : f.energy_ratio;
}

std::string Percent(double ratio) { return fmt::format("{:+.1f}%", 100 * (ratio - 1)); }

void Demote(Finding& f, std::string why) {
  f.verdict = Verdict::kInconclusive;
  f.uncertainty_note = std::move(why);
}

// An interval that does not clear tau on the costlier side demotes.
bool DemoteIfStraddles(Finding& f, const Options& options) {
  if (!f.uncertainty.ratio.known || f.point_verdict == Verdict::kEqual) return false;
  const double bound = CostlyRatioBound(f);
  if (bound > 1 + options.tau) return false;
  Demote(f, fmt::format("the {:.0f}% interval of the ratio, [{:.3g}, {:.3g}] ({} over {} {}), reaches {} on the "
                        "costlier side, within tau ({:.0f}%): {}",
                        100 * options.confidence, f.uncertainty.ratio.low, f.uncertainty.ratio.high,
                        f.uncertainty.method, f.uncertainty.units, f.uncertainty.unit, Percent(bound),
                        100 * options.tau, kMoreRuns));
  return true;
}

// What the machine did to work that is the same on both sides: the op pairs
// of same-work regions other than `skip`, leaving out every region with a
// recorded difference in effect (ops under another runtime state are the
// code's difference: the convolutions of a run with oneDNN off are the
// waste, not a measure of the machine).
std::vector<PairRatio> MachinePairs(const DetectResult& r, const Finding* skip) {
  std::vector<PairRatio> pairs;
  for (const Finding& f : r.findings) {
    if (!f.same_work || &f == skip || !f.differences_in_effect.empty()) continue;
    for (const RegionInstance& in : f.instances) pairs.insert(pairs.end(), in.pair_ratios.begin(), in.pair_ratios.end());
  }
  return pairs;
}

bool EnoughPairs(const std::vector<PairRatio>& pairs) { return EffectivePairs(pairs) + 1e-9 >= 3; }

double RunWideRatio(const DetectResult& r) {
  std::vector<PairRatio> pairs = MachinePairs(r, nullptr);
  if (!EnoughPairs(pairs)) return 1.0;  // too few to say anything about the run
  return std::exp(WeightedMedianLogRatio(std::move(pairs)));
}

// The log ratio, in the costlier side's direction, below which `q` of the
// pairs' energy lies: how much the machine slowed the work it slowed most.
double CostlyQuantile(std::vector<PairRatio> pairs, bool b_costly, double q) {
  for (PairRatio& p : pairs) p.log_ratio = b_costly ? -p.log_ratio : p.log_ratio;
  return WeightedQuantileLogRatio(std::move(pairs), q);
}

// How far beyond the machine's effect on the rest of its run a same-work
// region must be for timing alone to count. The machine does not slow every
// kind of op alike: on this project's 2-core VM an identical pair had all 24
// occurrences of kaiming_uniform_ 1.5-1.7x slower on one side while the
// rest of the run was not, and memory-bound ops slow more under contention
// than compute-bound ones. Twice the largest effect seen on the rest of the
// run (its 95th percentile pair) stays clear of that.
constexpr double kTimingOnlyMargin = 2.0;
constexpr double kMachineQuantile = 0.95;

// Why a same-work region with nothing recorded that differs for its ops is
// not clearly the code's, or "" when it clears the rest of its run and the
// machine's load by kTimingOnlyMargin; *evidence says what it cleared.
std::string BeyondTheMachine(const DetectResult& r, const Finding& f, const Options& options, std::string* evidence) {
  if (!f.uncertainty.ratio.known) return "it occurs once, with nothing to resample";
  const std::vector<PairRatio> rest = MachinePairs(r, &f);
  if (!EnoughPairs(rest)) return "no other same work in these runs shows what the machine did to them";
  const bool b_costly = f.wasteful_side == 'B';
  const double shift = std::exp(CostlyQuantile(rest, b_costly, 0.5));
  const double high = std::exp(CostlyQuantile(rest, b_costly, kMachineQuantile));
  // On a busy machine timing alone says nothing about a short op: a thread
  // preempted at a barrier stalls its op for a whole time slice, whatever
  // the op's length. Beside two spinners on this 2-core VM a 2-thread Linear
  // control's region came out 21x costlier by its interval, against a mean
  // bound of 4x.
  const SideSummary& costly = b_costly ? r.b : r.a;
  if (RegionLoadBound(costly) > 1) {
    return fmt::format("other work took {:.0f}% of the machine's CPU time while {} ran, and with nothing recorded "
                       "that differs a busy machine can stall short ops by any amount",
                       100 * costly.machine.Total(), b_costly ? 'B' : 'A');
  }
  const double machine = std::max({1.0, shift, high});
  const double needed = machine * std::max(kTimingOnlyMargin, 1 + options.tau);
  const double bound = CostlyRatioBound(f);
  const std::string measured = fmt::format("the rest of the run's same work is {} on {} typically, {} at its 95th "
                                           "percentile",
                                           Percent(shift), b_costly ? 'B' : 'A', Percent(high));
  if (bound > needed) {
    *evidence = fmt::format("its interval's low end ({:.3g}x) is beyond {:.0f}x what the machine did elsewhere: {}",
                            bound, kTimingOnlyMargin, measured);
    return "";
  }
  return fmt::format("{}, and this region's interval reaches {:.3g}x, within {:.0f}x of that", measured, bound,
                     kTimingOnlyMargin);
}

// A region whose ops differ is judged against the run's shift too: when the
// costlier side's whole run is slower on the same work, the region's ratio
// counts only beyond that.
std::string ShiftReason(const DetectResult& r, const Finding& f, const Options& options) {
  auto costly = [&f](double a_over_b) { return f.wasteful_side == 'B' ? 1 / a_over_b : a_over_b; };
  const double run = costly(r.run_wide_ratio);
  if (run <= 1 + options.tau) return "";
  const double region = CostlyRatioEvidence(f);
  if (region > run * (1 + options.tau)) return "";
  return fmt::format("{}'s whole run is {} costlier on the work both sides share (typical same-work op pair), and "
                     "this region{} by no more than that",
                     f.wasteful_side, Percent(run), f.uncertainty.ratio.known ? " (by its interval)" : "");
}

// A finding whose costlier side ran on a busy machine, by no more than that
// load can explain, says nothing about the code: the same program recorded
// beside two busy loops on this project's 2-core VM ran 4.6x slower, and a
// region with different ops (no interval, no same-work pair to compare) was
// called waste on the wrong side. What the load did to one region is
// bounded by the costlier side's own load (RegionLoadBound), not by its
// excess over the other side's: with other work taking 50-67% of the
// machine on both sides, the cheaper side's regions ran as fast as a burst
// allowed, and solve() on 2 threads came out 4x costlier than inv() +
// matmul, a bound of 4 = (1 / 0.5)^2.
// "other work took X% of the machine's CPU time while B's job ran (Y% while
// A's did)": both sides' loads, over their jobs where both traces say.
std::string BothLoads(const SideSummary& costly, const SideSummary& cheap, bool b_costly) {
  const bool over_job = costly.machine.over_job && cheap.machine.over_job;
  return fmt::format("other work took {:.0f}% of the machine's CPU time while {}{} ({:.0f}% while {}{})",
                     100 * costly.machine.Total(), b_costly ? 'B' : 'A', over_job ? "'s job ran" : " was recorded",
                     100 * cheap.machine.Total(), b_costly ? 'A' : 'B', over_job ? "'s did" : " was");
}

std::string LoadReason(const DetectResult& r, const Finding& f, const Options& options) {
  const bool b_costly = f.wasteful_side == 'B';
  const SideSummary& costly = b_costly ? r.b : r.a;
  const SideSummary& cheap = b_costly ? r.a : r.b;
  const double bound = RegionLoadBound(costly);
  if (bound <= 1) return "";
  // The bound is the load's mean effect. One occurrence is not a mean: a
  // preemption costs a whole time slice, and threads that wait for one
  // another stall while any of them is off a core. With two spinners on this
  // project's 2-core VM (64% of the machine, a 2.74x bound) a one-op region
  // came out 58x costlier and the whole model 4.4x: with no interval, a
  // region on the busier side is inconclusive at any ratio.
  // Any ratio only where the costlier side was the busier one; elsewhere a
  // one-occurrence region is open within the bound, like any other.
  if (!f.uncertainty.ratio.known && LoadSlowdownBound(costly, cheap) > 1) {
    return fmt::format("{}, and this region occurs once: a busy machine can make one occurrence costlier by any "
                       "amount (its mean effect alone is up to {:.2f}x); record both sides again on a quiet machine, "
                       "or {}",
                       BothLoads(costly, cheap, b_costly), bound, kMoreRuns);
  }
  const double region = CostlyRatioEvidence(f);
  if (region > bound * (1 + options.tau)) return "";
  return fmt::format("{}: that alone can make {} up to {:.2f}x costlier, and this region{} is costlier by no more; "
                     "record both sides again on a quiet machine, or {}",
                     BothLoads(costly, cheap, b_costly), b_costly ? 'B' : 'A', bound,
                     f.uncertainty.ratio.known ? " (by its interval)" : "", kMoreRuns);
}

// Why a timing-only finding of one recording per side cannot be told from
// the machine by itself. Occurrences inside one run are not independent
// samples of the machine: they share its state (a busy neighbour, first-touch
// page faults at start-up, the frequency), so a region whose every
// occurrence is slower in one run says nothing about the code unless
// something recorded differs for its ops, or it clears the rest of the run
// by kTimingOnlyMargin (BeyondTheMachine).
std::string TimingOnlyReason(const Finding& f) {
  if (f.kind == RegionKind::kDeviceIdle) {
    return "energy while the GPU ran nothing, one sample per side: it cannot be told from the machine";
  }
  if (f.kind == RegionKind::kOutsideOps) {
    return "energy while no op ran, one sample per side: it cannot be told from the machine";
  }
  return fmt::format("the same ops on the same shapes on both sides: timing is the only evidence, and nothing "
                     "recorded differs for these ops (no runtime state, kernel or layout; no setting that reaches "
                     "every op)");
}

// Energy while no op ran, one recording per side, says nothing about the
// code; on the busier side the load is the first thing to suspect: the
// process waits for a CPU between ops (the interpreter's time is stretched
// like any op's), so the note names both loads. Beside two spinners on this
// project's 2-core VM, B's "energy while no op ran" of a GPT-2 generate came
// out costlier in one run of four.
std::string NoOpsReason(const DetectResult& r, const Finding& f) {
  std::string why = TimingOnlyReason(f) + ", and no recorded setting that reaches every op differs; ";
  const bool b_costly = f.wasteful_side == 'B';
  const SideSummary& costly = b_costly ? r.b : r.a;
  const SideSummary& cheap = b_costly ? r.a : r.b;
  if (LoadSlowdownBound(costly, cheap) > 1) {
    why += fmt::format("{}, and a busy machine stretches the time between ops as much as the ops (the process "
                       "waits for a CPU): record both sides again on a quiet machine, or ",
                       BothLoads(costly, cheap, b_costly));
  }
  return why + kMoreRuns;
}

// Several runs per side replicate the machine only where each pair shared
// it. A finding whose only evidence is timing (same ops on the same shapes,
// nothing recorded that differs), costlier on the side that was busier in
// its runs, is the load's as much as the code's at any ratio: the load's
// bound is a mean, and short ops whose threads wait for one another stall
// for a whole time slice while any of them is off a CPU. Beside two
// spinners on this project's 2-core VM (55-58% of the machine against
// 0.1-0.4%, a 5.4x mean bound on 2 threads) a same-work region of
// sub-millisecond ops came out 18-27x costlier in each of three runs; more
// runs of the same kind do not help, every one of them had the neighbour.
// One recording per side has the rule already (BeyondTheMachine).
std::string BusierSideTimingReason(const DetectResult& r, const Finding& f, const Options& options) {
  const bool timing_only = f.same_work && f.kind == RegionKind::kMatched;
  const bool explained = !f.differences_in_effect.empty() || !options.differing_settings.empty();
  if (!timing_only || explained) return "";
  const bool b_costly = f.wasteful_side == 'B';
  const SideSummary& costly = b_costly ? r.b : r.a;
  const SideSummary& cheap = b_costly ? r.a : r.b;
  if (LoadSlowdownBound(costly, cheap) <= 1) return "";
  return fmt::format("{}; {} in these runs, and short ops whose threads wait for one another stall by a whole "
                     "time slice while any of them is off a CPU: a busier machine can make them costlier by any "
                     "amount (its mean effect alone is up to {:.2f}x); record both sides again on a quiet machine, "
                     "or interleaved so that both share its load (`magneton compare -n 3 -- CMD_A -- CMD_B`)",
                     TimingOnlyReason(f), BothLoads(costly, cheap, b_costly), RegionLoadBound(costly));
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// mean +- t * sd / sqrt(n).
Interval TInterval(const std::vector<double>& v, double confidence) {
  Interval out;
  if (v.size() < 2) return out;
  const double m = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  const double half = StudentT(confidence, v.size() - 1) * sd / std::sqrt(static_cast<double>(v.size()));
  out.known = true;
  out.low = m - half;
  out.high = m + half;
  return out;
}

// ln(a / b), finite: a side that spent nothing counts as a millionth of the other.
double LogRatio(double a_uj, double b_uj) {
  constexpr double kCap = 13.8;  // ln(1e6)
  if (a_uj <= 0 && b_uj <= 0) return 0;
  if (b_uj <= 0) return kCap;
  if (a_uj <= 0) return -kCap;
  return std::clamp(std::log(a_uj / b_uj), -kCap, kCap);
}

}  // namespace

double StudentT(double confidence, size_t df) {
  // Two-sided quantiles t_{(1+c)/2, df}: 95% for df 1..30, beyond that the normal's.
  static const double k95[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  static const double k90[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                               1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                               1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
  if (df == 0) return std::numeric_limits<double>::infinity();
  const bool ninety = confidence < 0.925;  // the two levels offered; others round to the nearer
  if (df <= 30) return ninety ? k90[df - 1] : k95[df - 1];
  return ninety ? 1.645 : 1.960;
}

namespace {

// The ratio of two sums over many paired units is normal to well within the
// interval's own error (central limit), and the percentile bootstrap costs
// resamples x units draws: 6e8 for a loop body seen 300 000 times, 17% of a
// 1.8 M-op diff. Beyond kBootstrapMaxUnits the delta method gives the
// interval: Var(sum a / sum b) ~ n Var(a_k - R b_k) / (sum b)^2, taken on
// the log scale so the bounds stay positive; the saving's Var(sum(a - b))
// = n Var(a_k - b_k).
constexpr size_t kBootstrapMaxUnits = 4096;

bool NormalRatio(const std::vector<std::pair<double, double>>& units, bool a_costly, const Options& options,
                 Interval* ratio, Interval* saving) {
  const double n = static_cast<double>(units.size());
  double sa = 0, sb = 0;
  for (const auto& [a, b] : units) {
    sa += a;
    sb += b;
  }
  if (sa <= 0 || sb <= 0) return false;  // a side that spent nothing: the bootstrap's handling
  const double r = sa / sb;
  double linear_ss = 0, diff_ss = 0;
  const double mean_diff = (sa - sb) / n;
  for (const auto& [a, b] : units) {
    linear_ss += (a - r * b) * (a - r * b);  // mean of a - r b is 0 by the choice of r
    diff_ss += (a - b - mean_diff) * (a - b - mean_diff);
  }
  const double z = StudentT(options.confidence, std::numeric_limits<size_t>::max());
  const double se_log_ratio = std::sqrt(linear_ss / (n - 1) * n) / sb / r;
  const double se_saving = std::sqrt(diff_ss / (n - 1) * n);
  const double saving_uj = a_costly ? sa - sb : sb - sa;
  *ratio = {true, r * std::exp(-z * se_log_ratio), r * std::exp(z * se_log_ratio)};
  *saving = {true, saving_uj - z * se_saving, saving_uj + z * se_saving};
  return true;
}

}  // namespace

const char* BootstrapRatio(const std::vector<std::pair<double, double>>& units, bool a_costly, const Options& options,
                           uint64_t seed, Interval* ratio, Interval* saving) {
  *ratio = {};
  *saving = {};
  if (units.size() < 2) return "bootstrap";
  if (units.size() > kBootstrapMaxUnits && NormalRatio(units, a_costly, options, ratio, saving)) return "delta";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, units.size() - 1);
  const int resamples = std::max(100, options.bootstrap_resamples);
  std::vector<double> ratios, savings;
  ratios.reserve(static_cast<size_t>(resamples));
  savings.reserve(static_cast<size_t>(resamples));
  for (int k = 0; k < resamples; ++k) {
    double sa = 0, sb = 0;
    for (size_t i = 0; i < units.size(); ++i) {
      const auto& u = units[pick(rng)];
      sa += u.first;
      sb += u.second;
    }
    ratios.push_back(sb > 0 ? sa / sb : (sa > 0 ? std::numeric_limits<double>::infinity() : 1.0));
    savings.push_back(a_costly ? sa - sb : sb - sa);
  }
  std::sort(ratios.begin(), ratios.end());
  std::sort(savings.begin(), savings.end());
  const double tail = (1 - options.confidence) / 2;
  auto at = [&](const std::vector<double>& v, double q) {
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    return v[i];
  };
  *ratio = {true, at(ratios, tail), at(ratios, 1 - tail)};
  *saving = {true, at(savings, tail), at(savings, 1 - tail)};
  return "bootstrap";
}

void AssessOneRecording(DetectResult& r, const Options& options) {
  r.run_wide_ratio = RunWideRatio(r);
  for (Finding& f : r.findings) {
    f.uncertainty = {};
    f.uncertainty_note.clear();
    std::vector<std::pair<double, double>> units = UnitsOf(f, &f.uncertainty.unit);
    if (units.size() >= 2) {
      f.uncertainty.units = units.size();
      f.uncertainty.method = BootstrapRatio(units, f.wasteful_side != 'B', options, SeedOf(f), &f.uncertainty.ratio,
                                            &f.uncertainty.saving_uj);
    } else {
      f.uncertainty.unit.clear();
    }
    if (f.point_verdict == Verdict::kEqual) continue;
    // Same ops on the same shapes, or no op at all: timing is the only
    // evidence, and a run-wide slowdown moves it as much as code would.
    const bool timing_only = HoldsNoOps(f.kind) || f.same_work;
    // What was recorded to differ for this region's ops, or for every op.
    const bool explained = !f.differences_in_effect.empty() || !options.differing_settings.empty();
    std::string beyond_machine;
    if (timing_only && !explained) {
      if (HoldsNoOps(f.kind)) {
        Demote(f, NoOpsReason(r, f));
        continue;
      }
      if (DemoteIfStraddles(f, options)) continue;
      if (std::string why = BeyondTheMachine(r, f, options, &beyond_machine); !why.empty()) {
        Demote(f, TimingOnlyReason(f) + "; " + why + "; " + kMoreRuns);
        continue;
      }
    }
    if (DemoteIfStraddles(f, options)) continue;
    if (std::string why = LoadReason(r, f, options); !why.empty()) {
      Demote(f, std::move(why));
      continue;
    }
    if (!timing_only && !explained) {
      const std::string why = ShiftReason(r, f, options);
      if (!why.empty()) {
        Demote(f, why + "; " + kMoreRuns);
        continue;
      }
    }
    if (!f.uncertainty.ratio.known && !HoldsNoOps(f.kind)) {
      f.uncertainty_note = "no interval: the region occurs once and the two sides run different ops";
    } else if (timing_only && !beyond_machine.empty()) {
      f.uncertainty_note = "timing is the only evidence, and " + beyond_machine;
    } else if (timing_only && !f.differences_in_effect.empty()) {
      std::string differences;
      for (size_t i = 0; i < f.differences_in_effect.size() && i < 3; ++i) {
        differences += (i ? "; " : "") + f.differences_in_effect[i];
      }
      f.uncertainty_note = "timing is the only evidence; what these ops ran under differs and explains it (" +
                           differences + ")";
    } else if (timing_only) {
      std::string settings;
      for (size_t i = 0; i < options.differing_settings.size() && i < 3; ++i) {
        settings += (i ? "; " : "") + options.differing_settings[i];
      }
      f.uncertainty_note = "timing is the only evidence; settings that reach every op differ and may explain it (" +
                           settings + ")";
    }
  }
}

namespace {

// A trade-off says the cheaper side is slower; over several runs that needs
// evidence as much as the saving does. The cheaper side's time over the
// costlier side's, a t interval over the runs, must clear max_slowdown: a
// slowdown within the runs' noise (1.5% on a machine whose runs vary by
// tens of percent) does not make the saving a choice, and the finding is
// judged on its energy alone.
void EstablishSlowdown(Finding& f, const std::vector<SideCost>& ca, const std::vector<SideCost>& cb,
                       const Options& options) {
  if (f.verdict != Verdict::kTradeOff || !f.outputs_agree || ca.size() < 2 || ca.size() != cb.size()) return;
  const bool a_costly = f.wasteful_side != 'B';
  std::vector<double> slowdown;
  for (size_t i = 0; i < ca.size(); ++i) {
    const SideCost& costly = a_costly ? ca[i] : cb[i];
    const SideCost& cheap = a_costly ? cb[i] : ca[i];
    if (costly.time_ns <= 0 || cheap.time_ns <= 0) return;
    slowdown.push_back(std::log(static_cast<double>(cheap.time_ns) / static_cast<double>(costly.time_ns)));
  }
  const Interval iv = TInterval(slowdown, options.confidence);
  if (!iv.known || iv.low > std::log1p(options.max_slowdown)) return;
  f.verdict = Verdict::kWaste;
  f.point_verdict = Verdict::kWaste;
  f.outputs_note += fmt::format("; the cheaper side's slowdown ({:+.1f}%, interval [{:+.1f}%, {:+.1f}%] over {} runs) "
                                "does not clear {:.0f}%: no trade-off",
                                100 * std::expm1(Mean(slowdown)), 100 * std::expm1(iv.low), 100 * std::expm1(iv.high),
                                slowdown.size(), 100 * options.max_slowdown);
}

}  // namespace

DetectResult CombineRuns(DetectResult r, const std::vector<DetectResult>& repeats, const Options& options) {
  const size_t n = 1 + repeats.size();
  r.runs = n;
  std::vector<std::map<std::string, const Finding*>> by_key(repeats.size());
  std::vector<std::vector<std::pair<const Finding*, NameCounts>>> matched(repeats.size());
  for (size_t k = 0; k < repeats.size(); ++k) {
    for (const Finding& g : repeats[k].findings) {
      by_key[k].emplace(KeyOf(g), &g);
      if (g.kind == RegionKind::kMatched) matched[k].emplace_back(&g, CountsOf(g));
    }
  }
  // The same region in run k: the same op-name sequences, or else (a long
  // region whose cut points moved a little between runs) the matched finding
  // sharing most of its ops, at least half of them.
  auto find = [&](const Finding& f, const std::string& key, size_t k) -> const Finding* {
    if (auto it = by_key[k].find(key); it != by_key[k].end()) return it->second;
    if (f.kind != RegionKind::kMatched) return nullptr;
    const NameCounts mine = CountsOf(f);
    const Finding* best = nullptr;
    double best_similarity = 0.5;
    for (const auto& [g, counts] : matched[k]) {
      const double s = Similarity(mine, counts);
      if (s >= best_similarity) {
        best = g;
        best_similarity = s;
      }
    }
    return best;
  };
  // The job energies every share is taken of: the mean over runs.
  std::vector<double> job_a{r.a.job_uj}, job_b{r.b.job_uj};
  for (const DetectResult& rep : repeats) {
    job_a.push_back(rep.a.job_uj);
    job_b.push_back(rep.b.job_uj);
  }
  r.a.job_uj = Mean(job_a);
  r.b.job_uj = Mean(job_b);
  // The machine's load: the mean over runs, unknown if any run does not say.
  for (const bool a_side : {true, false}) {
    std::vector<MachineLoadShares> loads{(a_side ? r.a : r.b).machine};
    for (const DetectResult& rep : repeats) loads.push_back((a_side ? rep.a : rep.b).machine);
    (a_side ? r.a : r.b).machine = MeanLoad(loads);
  }
  std::vector<double> run_wide{std::log(r.run_wide_ratio)};
  for (const DetectResult& rep : repeats) run_wide.push_back(std::log(rep.run_wide_ratio));
  r.run_wide_ratio = std::exp(Mean(run_wide));

  for (Finding& f : r.findings) {
    std::vector<SideCost> ca{f.a}, cb{f.b};
    std::vector<double> logs{LogRatio(f.a.energy_uj, f.b.energy_uj)};
    std::vector<double> excess{f.a.energy_uj - f.b.energy_uj};
    const std::string key = KeyOf(f);
    for (size_t k = 0; k < repeats.size(); ++k) {
      const Finding* g = find(f, key, k);
      if (g == nullptr) {
        // Not found in this run's matching: no difference measured there.
        logs.push_back(0);
        excess.push_back(0);
        continue;
      }
      ca.push_back(g->a);
      cb.push_back(g->b);
      logs.push_back(LogRatio(g->a.energy_uj, g->b.energy_uj));
      excess.push_back(g->a.energy_uj - g->b.energy_uj);
    }
    auto mean_cost = [](const std::vector<SideCost>& v) {
      SideCost m;
      for (const SideCost& c : v) {
        m.energy_uj += c.energy_uj / static_cast<double>(v.size());
        m.issue_uj += c.issue_uj / static_cast<double>(v.size());
        m.time_ns += c.time_ns / static_cast<int64_t>(v.size());
      }
      return m;
    };
    f.a = mean_cost(ca);
    f.b = mean_cost(cb);
    ClassifyFinding(f, r, options);
    EstablishSlowdown(f, ca, cb, options);
    f.uncertainty = {};
    f.uncertainty_note.clear();
    f.uncertainty.runs = ca.size();
    f.uncertainty.runs_given = n;
    f.uncertainty.method = "t";
    f.uncertainty.unit = "runs";
    f.uncertainty.units = n;
    const Interval log_interval = TInterval(logs, options.confidence);
    f.uncertainty.ratio = {log_interval.known, std::exp(log_interval.low), std::exp(log_interval.high)};
    const bool a_costly = f.wasteful_side != 'B';
    for (double& e : excess) e = a_costly ? e : -e;
    f.uncertainty.saving_uj = TInterval(excess, options.confidence);
    if (f.point_verdict == Verdict::kEqual) continue;
    if (DemoteIfStraddles(f, options)) {
      if (ca.size() < n) f.uncertainty_note += fmt::format(" (found in {} of {} runs)", ca.size(), n);
    } else if (std::string why = BusierSideTimingReason(r, f, options); !why.empty()) {
      Demote(f, std::move(why));
    } else if (std::string why = LoadReason(r, f, options); !why.empty()) {
      Demote(f, std::move(why));
    }
  }
  RankFindings(r.findings);
  return r;
}

}  // namespace magneton::detect
