#include "diff_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "test_util.h"

namespace magneton::testing {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// y = x W^T (+ b): x 4x6, W 6x6.
std::vector<float> Affine(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>* b) {
  std::vector<float> y(24);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) {
      float s = b ? (*b)[j] : 0.f;
      for (int k = 0; k < 6; ++k) s += x[i * 6 + k] * w[j * 6 + k];
      y[i * 6 + j] = s;
    }
  return y;
}

Fingerprint Fp(const std::vector<float>& v, std::vector<int64_t> shape) {
  TensorBuffer buf{v.data(), DType::kFloat32, std::move(shape), {}};
  auto fp = ComputeFingerprint(buf);
  EXPECT_TRUE(fp.ok());
  return fp.ok() ? std::move(fp).value() : Fingerprint{};
}

}  // namespace

// Two layers of y = x W^T + b, then relu. A (fused) runs one op per layer,
// B (decomposed) two. `evil` names ops and files with markup.
Side Record(const std::string& name, bool fused, bool evil, const std::string& user_file_override) {
  Side s;
  s.path = TempPath(name);
  RunMetadata meta;
  meta.label = evil ? "<b>label</b>" : name;
  EXPECT_TRUE(Recorder::Start(s.path, meta).ok());
  Recorder* rec = Recorder::Active();
  const std::string user_file = !user_file_override.empty() ? user_file_override
                                : evil                        ? "/src/<script>alert(1)</script>.py"
                                                              : "/src/net.py";
  const std::string lib_file = "/py/site-packages/torch/functional.py";
  int64_t uf = rec->InternString(user_file), lf = rec->InternString(lib_file);
  int64_t main_path = rec->InternCallPath(kNoId, rec->InternFrame(uf, 3, rec->InternString("main")));
  // The branch: A takes line 11 of forward, B line 13.
  int64_t fwd = rec->InternCallPath(main_path, rec->InternFrame(uf, fused ? 11 : 13, rec->InternString("forward")));
  auto lib_path = [&](int64_t line, const char* fn) {
    return rec->InternCallPath(fwd, rec->InternFrame(lf, line, rec->InternString(fn)));
  };
  const std::string fused_name = evil ? "aten::<script>alert('x')</script>" : "aten::linear";

  std::vector<int64_t> shape = {4, 6}, wshape = {6, 6}, bshape = {6};
  std::vector<int64_t> strides = {6, 1}, wstrides = {6, 1}, bstrides = {1};
  uint64_t next_addr = 0x1000000;
  auto view = [&](uint64_t addr, std::vector<int64_t>& sh, std::vector<int64_t>& st) {
    return TensorView{addr, 0, sh.data(), st.data(), static_cast<int32_t>(sh.size()), "float32", "cpu", 0};
  };
  std::vector<std::pair<uint64_t, Fingerprint>> fps;  // by address, resolved to ids after reading
  std::vector<float> x = Random(24, 1);
  uint64_t x_addr = next_addr += 0x10000;
  fps.emplace_back(x_addr, Fp(x, shape));
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<float> w = Random(36, 10 + layer), b = Random(6, 20 + layer);
    uint64_t w_addr = next_addr += 0x10000, b_addr = next_addr += 0x10000, y_addr = next_addr += 0x10000;
    fps.emplace_back(w_addr, Fp(w, wshape));
    fps.emplace_back(b_addr, Fp(b, bshape));
    std::vector<float> y = Affine(x, w, &b);
    if (fused) {
      rec->BeginOp(rec->InternString(fused_name), lib_path(100, "linear"));
      rec->AddInput(0, view(x_addr, shape, strides));
      rec->AddInput(1, view(w_addr, wshape, wstrides));
      rec->AddInput(2, view(b_addr, bshape, bstrides));
      rec->AddOutput(0, view(y_addr, shape, strides));
      rec->EndOp("%,%,%");
    } else {
      uint64_t m_addr = next_addr += 0x10000;
      rec->BeginOp(rec->InternString("aten::mm"), lib_path(200, "mm"));
      rec->AddInput(0, view(x_addr, shape, strides));
      rec->AddInput(1, view(w_addr, wshape, wstrides));
      rec->AddOutput(0, view(m_addr, shape, strides));
      rec->EndOp("%,%");
      fps.emplace_back(m_addr, Fp(Affine(x, w, nullptr), shape));
      rec->BeginOp(rec->InternString("aten::add"), lib_path(210, "add"));
      rec->AddInput(0, view(m_addr, shape, strides));
      rec->AddInput(1, view(b_addr, bshape, bstrides));
      rec->AddOutput(0, view(y_addr, shape, strides));
      rec->EndOp("%,%");
    }
    fps.emplace_back(y_addr, Fp(y, shape));
    x = y;
    x_addr = y_addr;
  }
  uint64_t z_addr = next_addr += 0x10000;
  rec->BeginOp(rec->InternString("aten::relu"), lib_path(300, "relu"));
  rec->AddInput(0, view(x_addr, shape, strides));
  rec->AddOutput(0, view(z_addr, shape, strides));
  rec->EndOp("%");
  for (auto& v : x) v = std::max(v, 0.f);
  fps.emplace_back(z_addr, Fp(x, shape));
  rec->SetConfig("env.OMP_NUM_THREADS", "2", "env");
  rec->SetConfig("model_config.Net.fuse_linear", fused ? "True" : "False", "model_config");
  rec->SetConfig("torch.backends.mkldnn.enabled", fused ? "True" : "False", "global_flag");
  rec->SetConfig(evil ? "call.run.<img src=x onerror=alert(1)>" : "call.run.batch", "1", "call_arg");
  EXPECT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(s.path);
  EXPECT_TRUE(trace.ok());
  s.trace = std::move(trace).value();
  for (const auto& [addr, fp] : fps) {
    for (const TensorMeta& m : s.trace.tensors) {
      if (m.storage_addr == addr) s.fps.insert_or_assign(m.id, fp);
    }
  }
  EXPECT_TRUE(WriteFingerprints(s.path, s.fps).ok());
  // Scripted time and energy: fused ops take 3 µs, mm 1 µs, add 0.5 µs, relu
  // 1 µs, 0.2 µs between ops; a constant 10 W (0.01 µJ/ns).
  int64_t t = 1000;
  for (OpEvent& op : s.trace.ops) {
    const std::string& n = s.trace.str(op.name_id);
    const int64_t d = n == "aten::mm" ? 1000 : n == "aten::add" ? 500 : n == "aten::relu" ? 1000 : 3000;
    op.start_ns = t;
    op.end_ns = t + d;
    t += d + 200;
  }
  s.trace.energy_samples.clear();
  for (int64_t ts = 0; ts <= t + 1000; ts += 100) {
    s.trace.energy_samples.push_back(
        {"cpu-estimate", ts, 0.01 * static_cast<double>(ts), std::nan(""), Provenance::kEstimated, "scripted"});
  }
  return s;
}

}  // namespace magneton::testing
