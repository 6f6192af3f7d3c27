// Builds small traces with the real Recorder for graph and match tests, and
// computes fingerprints from real buffers for the tensors they name.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fingerprint/fingerprint.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"

namespace magneton::testing {

struct FakeTensor {
  uint64_t addr = 0;
  int64_t offset = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::string dtype = "float32";
  int64_t version = 0;
};

inline std::vector<int64_t> RowMajor(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

class SyntheticTrace {
 public:
  explicit SyntheticTrace(const std::string& path) : path_(path) {
    RunMetadata meta;
    meta.label = "synthetic";
    Status st = Recorder::Start(path, meta);
    EXPECT_TRUE(st.ok()) << st.message();
    rec_ = Recorder::Active();
  }
  // A fresh storage (a distinct fake address).
  FakeTensor New(std::vector<int64_t> shape, std::string dtype = "float32") {
    FakeTensor t;
    t.addr = next_addr_ += 0x100000;
    t.strides = RowMajor(shape);
    t.shape = std::move(shape);
    t.dtype = std::move(dtype);
    return t;
  }
  // A view of `base`'s storage with another shape/stride.
  static FakeTensor View(const FakeTensor& base, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    FakeTensor t = base;
    t.shape = std::move(shape);
    t.strides = std::move(strides);
    return t;
  }
  template <typename Body>
  void Op(const std::string& name, const std::vector<FakeTensor>& ins, const std::vector<FakeTensor>& outs,
          Body&& nested) {
    rec_->BeginOp(rec_->InternString(name), kNoId);
    for (size_t i = 0; i < ins.size(); ++i) rec_->AddInput(static_cast<int32_t>(i), ViewOf(ins[i]));
    nested();
    for (size_t i = 0; i < outs.size(); ++i) rec_->AddOutput(static_cast<int32_t>(i), ViewOf(outs[i]));
    rec_->EndOp("");
  }
  void Op(const std::string& name, const std::vector<FakeTensor>& ins, const std::vector<FakeTensor>& outs) {
    Op(name, ins, outs, [] {});
  }
  Trace Finish() {
    Status st = Recorder::Stop();
    EXPECT_TRUE(st.ok()) << st.message();
    auto trace = ReadTrace(path_);
    EXPECT_TRUE(trace.ok()) << trace.status().message();
    return trace.ok() ? std::move(trace).value() : Trace{};
  }

 private:
  TensorView ViewOf(const FakeTensor& t) {
    return TensorView{t.addr, t.offset, t.shape.data(), t.strides.data(), static_cast<int32_t>(t.shape.size()),
                      t.dtype, "cpu", t.version};
  }
  std::string path_;
  Recorder* rec_ = nullptr;
  uint64_t next_addr_ = 0x10000000;
};

// The id the recorder gave the last tensor recorded with this identity.
inline int64_t TensorIdOf(const Trace& trace, const FakeTensor& t) {
  int64_t found = kNoId;
  for (const TensorMeta& m : trace.tensors) {
    if (m.storage_addr == t.addr && m.storage_offset == t.offset && m.version == t.version && m.shape == t.shape &&
        m.strides == t.strides) {
      found = m.id;
    }
  }
  EXPECT_NE(found, kNoId) << "tensor not in trace";
  return found;
}

inline Fingerprint FingerprintOf(const std::vector<float>& data, std::vector<int64_t> shape,
                                 std::vector<int64_t> strides = {}) {
  TensorBuffer b{data.data(), DType::kFloat32, std::move(shape), std::move(strides)};
  auto fp = ComputeFingerprint(b);
  EXPECT_TRUE(fp.ok()) << fp.status().message();
  return fp.ok() ? std::move(fp).value() : Fingerprint{};
}

}  // namespace magneton::testing
