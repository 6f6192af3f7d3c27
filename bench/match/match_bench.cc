// Matching time against graph size on synthetic transformer-like graphs:
//   match_bench [ops ...]          (default: 400 16000 1000 10000 100000 1000000)
// Side A: per block, ln -> linear -> gelu -> add(residual). Side B computes
// the same with linear split into mm + transpose + add_bias. Fingerprints are
// synthetic (distinct statistics per block output), equal across the sides.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "match/match.h"

namespace {

using namespace magneton;

// CPU time of this thread: on a shared VM the wall time of one run moves by
// 1.5-2x with other load, the CPU time far less.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

struct Builder {
  Trace trace;
  int64_t Str(const std::string& s) {
    for (size_t i = 0; i < trace.strings.size(); ++i) {
      if (trace.strings[i] == s) return static_cast<int64_t>(i);
    }
    trace.strings.push_back(s);
    return static_cast<int64_t>(trace.strings.size()) - 1;
  }
  int64_t Tensor(int64_t producer, std::vector<int64_t> shape) {
    TensorMeta m;
    m.id = static_cast<int64_t>(trace.tensors.size());
    m.shape = std::move(shape);
    m.dtype = "float32";
    m.producer_op_id = producer;
    trace.tensors.push_back(std::move(m));
    return trace.tensors.back().id;
  }
  // One op reading `ins`, writing a fresh tensor; returns the output id.
  int64_t Op(int64_t name_id, const std::vector<int64_t>& ins, std::vector<int64_t> out_shape) {
    OpEvent op;
    op.id = static_cast<int64_t>(trace.ops.size());
    op.name_id = name_id;
    trace.ops.push_back(op);
    for (size_t i = 0; i < ins.size(); ++i) {
      trace.op_tensors.push_back({op.id, TensorRole::kInput, static_cast<int32_t>(i), ins[i]});
    }
    const int64_t out = Tensor(op.id, std::move(out_shape));
    trace.op_tensors.push_back({op.id, TensorRole::kOutput, 0, out});
    return out;
  }
};

// Real activations differ in shape as well as scale (skewed GELU outputs,
// heavy-tailed residuals, near-uniform probabilities), so each synthetic
// fingerprint draws its skewness and kurtosis too. With mean and variance
// alone, a million tensors would be genuinely equivalent by pairs within
// epsilon and no index could separate them.
Fingerprint Synthetic(std::mt19937_64& rng, int64_t count) {
  std::normal_distribution<double> d;
  Fingerprint fp;
  fp.invariant.element_count = count;
  fp.invariant.mean = d(rng);
  fp.invariant.variance = std::exp(d(rng));
  const double sd = std::sqrt(fp.invariant.variance);
  fp.invariant.skewness = 0.8 * d(rng);
  fp.invariant.kurtosis = 1.5 + fp.invariant.skewness * fp.invariant.skewness + std::exp(d(rng));
  fp.invariant.min = fp.invariant.mean - 4 * sd;
  fp.invariant.max = fp.invariant.mean + 4 * sd;
  for (int i = 0; i < kFingerprintQuantiles; ++i) {
    const double z = (i - 15.5) / 8.0;
    fp.invariant.quantiles[i] = fp.invariant.mean + sd * (z + fp.invariant.skewness * (z * z - 1) / 6.0);
  }
  return fp;
}

// Builds both sides with `blocks` blocks; fingerprints for the block outputs.
void Build(int64_t blocks, Builder* a, FingerprintMap* fa, Builder* b, FingerprintMap* fb) {
  std::mt19937_64 rng(42);
  const std::vector<int64_t> act = {16, 64}, act_t = {64, 16};
  const int64_t ln_a = a->Str("aten::layer_norm"), lin_a = a->Str("aten::linear"), gelu_a = a->Str("aten::gelu"),
                add_a = a->Str("aten::add");
  const int64_t ln_b = b->Str("aten::layer_norm"), mm_b = b->Str("aten::mm"), tr_b = b->Str("aten::transpose"),
                bias_b = b->Str("aten::add"), gelu_b = b->Str("aten::gelu"), add_b = b->Str("aten::add");
  int64_t xa = a->Tensor(kNoId, act), xb = b->Tensor(kNoId, act);
  const Fingerprint input = Synthetic(rng, 1024);
  (*fa)[xa] = input;
  (*fb)[xb] = input;
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t wa = a->Tensor(kNoId, {64, 64}), ba = a->Tensor(kNoId, {64});
    const int64_t wb = b->Tensor(kNoId, {64, 64}), bb = b->Tensor(kNoId, {64});
    const int64_t la = a->Op(ln_a, {xa}, act);
    const int64_t ya = a->Op(lin_a, {la, wa, ba}, act);
    const int64_t ga = a->Op(gelu_a, {ya}, act);
    const int64_t ra = a->Op(add_a, {xa, ga}, act);
    const int64_t lb = b->Op(ln_b, {xb}, act);
    const int64_t mb = b->Op(mm_b, {lb, wb}, act);
    const int64_t tb = b->Op(tr_b, {mb}, act_t);
    const int64_t yb = b->Op(bias_b, {tb, bb}, act_t);
    const int64_t gb = b->Op(gelu_b, {yb}, act_t);
    const int64_t rb = b->Op(add_b, {xb, gb}, act);
    const Fingerprint lin = Synthetic(rng, 1024), res = Synthetic(rng, 1024);
    (*fa)[ya] = lin;
    (*fb)[yb] = lin;
    (*fa)[ra] = res;
    (*fb)[rb] = res;
    xa = ra;
    xb = rb;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // GPT-2 scale (hundreds of ops per side), Llama-3-8B scale (~16k), then decades.
  std::vector<int64_t> sizes = {400, 16000, 1000, 10000, 100000, 1000000};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  }
  std::printf("%10s %10s %10s %12s %12s %12s %10s %14s\n", "ops(A)", "ops(B)", "regions", "graphs ms", "match ms",
              "match cpu ms", "ns/op", "comparisons");
  for (int64_t ops : sizes) {
    Builder a, b;
    FingerprintMap fa, fb;
    Build(ops / 4, &a, &fa, &b, &fb);
    const auto t0 = std::chrono::steady_clock::now();
    auto ga = BuildDataflowGraph(a.trace);
    auto gb = BuildDataflowGraph(b.trace);
    const auto t1 = std::chrono::steady_clock::now();
    const double cpu1 = ThreadCpuMs();
    auto r = MatchGraphs(*ga, fa, *gb, fb);
    const double match_cpu_ms = ThreadCpuMs() - cpu1;
    const auto t2 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().message().c_str());
      return 1;
    }
    const double graph_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double match_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    const size_t total = a.trace.ops.size() + b.trace.ops.size();
    std::printf("%10zu %10zu %10zu %12.1f %12.1f %12.1f %10.1f %14lld\n", a.trace.ops.size(), b.trace.ops.size(),
                r->regions.size(), graph_ms, match_ms, match_cpu_ms, 1e6 * match_ms / static_cast<double>(total),
                static_cast<long long>(r->tensor_comparisons));
  }
  return 0;
}
