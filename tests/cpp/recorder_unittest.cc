#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "fingerprint/fingerprint_map.h"
#include "fingerprint/value_parts.h"
#include "magneton/recorder.h"
#include "magneton/trace_reader.h"
#include "test_util.h"

namespace magneton {
namespace {

using testing::TempPath;

struct FakeTensor {
  uintptr_t addr;
  int64_t offset;
  std::vector<int64_t> shape, strides;
  int64_t version = 0;
  TensorView view() const {
    return {addr, offset, shape.data(), strides.data(), static_cast<int32_t>(shape.size()), "float32", "cpu", version};
  }
};

int64_t Output(const Trace& t, int64_t op, int slot = 0) {
  for (const OpTensor& l : t.op_tensors)
    if (l.op_id == op && l.role == TensorRole::kOutput && l.slot == slot) return l.tensor_id;
  return kNoId;
}
int64_t Input(const Trace& t, int64_t op, int slot = 0) {
  for (const OpTensor& l : t.op_tensors)
    if (l.op_id == op && l.role == TensorRole::kInput && l.slot == slot) return l.tensor_id;
  return kNoId;
}

// A view of `t` whose values --values may read at `data`.
TensorView WithData(const FakeTensor& t, const void* data) {
  TensorView v = t.view();
  v.host_data = data;
  return v;
}

// A recording with --values (fingerprints) at `path`; null if it did not start.
Recorder* StartRecordingValues(const std::string& path) {
  RecorderOptions options;
  options.record_values = true;
  return Recorder::Start(path, RunMetadata{}, options).ok() ? Recorder::Active() : nullptr;
}

TEST(Recorder, TensorIdentityThroughViewsAndInPlaceOps) {
  std::string path = TempPath("views.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  FakeTensor x{0x1000, 0, {2, 3}, {3, 1}};
  FakeTensor xt{0x1000, 0, {3, 2}, {1, 3}};  // transpose: same storage, new layout
  auto op = [&](const char* name, std::vector<FakeTensor> in, std::vector<FakeTensor> out) {
    int64_t id = rec->BeginOp(rec->InternString(name), kNoId);
    for (size_t i = 0; i < in.size(); ++i) rec->AddInput(static_cast<int32_t>(i), in[i].view());
    for (size_t i = 0; i < out.size(); ++i) rec->AddOutput(static_cast<int32_t>(i), out[i].view());
    rec->EndOp("");
    return id;
  };
  int64_t t_op = op("aten::t", {x}, {xt});
  FakeTensor x1 = x;
  x1.version = 1;  // after an in-place write, the version counter moved
  int64_t add_op = op("aten::add_", {x, xt}, {x1});
  int64_t read_op = op("aten::sum", {x1}, {});
  int64_t read_old_view = op("aten::sum", {xt}, {});
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  int64_t x_id = Input(*trace, t_op);
  int64_t xt_id = Output(*trace, t_op);
  EXPECT_NE(x_id, xt_id);                         // a view is a new value...
  EXPECT_EQ(trace->tensors[xt_id].storage_addr,   // ...over the same storage
            trace->tensors[x_id].storage_addr);
  EXPECT_EQ(Input(*trace, add_op, 0), x_id);
  EXPECT_EQ(Input(*trace, add_op, 1), xt_id);
  int64_t x1_id = Output(*trace, add_op);
  EXPECT_NE(x1_id, x_id);  // the in-place result is a new value
  EXPECT_EQ(trace->tensors[x1_id].producer_op_id, add_op);
  EXPECT_EQ(Input(*trace, read_op), x1_id);  // later readers see the new value
  EXPECT_EQ(Input(*trace, read_old_view), xt_id);
  EXPECT_EQ(trace->tensors[x_id].producer_op_id, kNoId);
}

// A jitted JAX call's op ends at dispatch (DetachOp), ops after it do not
// nest in it, its outputs come later (ReattachOp + AddOutput), and it is held
// (HoldOp) with its detached times until written (jit_call_queue.py).
TEST(Recorder, ADetachedOpGetsItsOutputsLaterAndIsHeldUntilWritten) {
  std::string path = TempPath("detached.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  FakeTensor x{0x1000, 0, {4}, {1}}, y{0x2000, 0, {4}, {1}};
  const int64_t call = rec->BeginOp(rec->InternString("jax::jit(f)"), kNoId);
  rec->AddInput(0, x.view());
  ASSERT_EQ(rec->DetachOp(/*start_ns=*/0, /*dispatched_ns=*/0), call);
  EXPECT_EQ(rec->OpDepth(), 0u);
  const int64_t other = rec->BeginOp(rec->InternString("jax::add"), kNoId);  // not nested in the call
  rec->EndOp("");
  EXPECT_FALSE(rec->ReattachOp(other));  // never detached
  ASSERT_TRUE(rec->ReattachOp(call));
  rec->AddOutput(0, y.view());
  rec->HoldOp("{}", "jax::jit(f)", "jit_f");
  EXPECT_EQ(rec->OpDepth(), 0u);
  const int64_t reader = rec->BeginOp(rec->InternString("jax::sin"), kNoId);
  rec->AddInput(0, y.view());
  rec->EndOp("");
  std::vector<Recorder::HeldOp> held = rec->TakeHeldOps();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].event.id, call);
  EXPECT_EQ(held[0].module, "jit_f");
  EXPECT_EQ(held[0].dispatched_ns, held[0].event.end_ns);  // ended at dispatch
  EXPECT_EQ(held[0].links.size(), 2u);
  rec->RecordCompletedOp(std::move(held[0].event), std::move(held[0].links));
  EXPECT_TRUE(rec->TakeHeldOps().empty());
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const int64_t y_id = Output(*trace, call);
  ASSERT_NE(y_id, kNoId);
  EXPECT_EQ(trace->tensors[y_id].producer_op_id, call);
  EXPECT_EQ(Input(*trace, reader), y_id);  // the reader after it sees its output
  for (const OpEvent& op : trace->ops) EXPECT_EQ(op.parent_id, kNoId);
}

TEST(Recorder, OutputsOfRepeatedAllocationsAreDistinctValues) {
  // An allocator hands the same address to a later tensor: a new output
  // there must not be merged with the earlier value.
  std::string path = TempPath("reuse.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  FakeTensor a{0x2000, 0, {4}, {1}};
  int64_t name = rec->InternString("aten::empty");
  int64_t op1 = rec->BeginOp(name, kNoId);
  rec->AddOutput(0, a.view());
  rec->EndOp("");
  int64_t op2 = rec->BeginOp(name, kNoId);
  rec->AddOutput(0, a.view());
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok());
  EXPECT_NE(Output(*trace, op1), Output(*trace, op2));
}

TEST(Recorder, AnOverwrittenArgumentIsNotTheEarlierValueAtItsAddress) {
  // Iteration 1's result lived at 0x3000 and was freed; iteration 2's
  // copy_ writes a fresh buffer the allocator placed at the same address,
  // same layout and version. Its self is not a read of iteration 1's value.
  std::string path = TempPath("overwrite.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  FakeTensor buf{0x3000, 0, {4}, {1}}, src{0x4000, 0, {4}, {1}};
  int64_t first = rec->BeginOp(rec->InternString("aten::sort"), kNoId);
  rec->AddOutput(0, buf.view());
  rec->EndOp("");
  int64_t copy = rec->BeginOp(rec->InternString("aten::copy_"), kNoId);
  rec->AddOverwrittenInput(0, buf.view());
  rec->AddInput(1, src.view());
  FakeTensor written = buf;
  written.version = 1;
  rec->AddOutput(0, written.view());
  rec->EndOp("");
  int64_t reader = rec->BeginOp(rec->InternString("aten::sum"), kNoId);
  rec->AddInput(0, written.view());
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok());
  const int64_t self_id = Input(*trace, copy, 0);
  EXPECT_NE(self_id, Output(*trace, first));                // not iteration 1's value
  EXPECT_EQ(trace->tensors[self_id].producer_op_id, copy);  // the op's own buffer: no edge
  EXPECT_EQ(Input(*trace, reader), Output(*trace, copy));
}

// mm allocates its result, and a nested resolve_conj reads it before the
// kernel writes it. The allocator put the buffer where an earlier op's freed
// result lived (same address, layout, version 0): by address it reads as
// that value, a false edge that changes with the allocator from run to run.
// A hook that knows which buffer it is (storage_uid) tells them apart; the
// same buffer read again is still the same value.
TEST(Recorder, AFreshBufferAtAFreedAddressIsNotTheOldValue) {
  std::string path = TempPath("stale.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  FakeTensor old_value{0x5000, 0, {4}, {1}}, fresh = old_value;
  auto with_uid = [](const FakeTensor& t, uint64_t uid) {
    TensorView v = t.view();
    v.storage_uid = uid;
    return v;
  };
  const int64_t add = rec->BeginOp(rec->InternString("aten::add"), kNoId);
  rec->AddOutput(0, with_uid(old_value, 1));
  rec->EndOp("");
  const int64_t reread = rec->BeginOp(rec->InternString("aten::sum"), kNoId);
  rec->AddInput(0, with_uid(old_value, 1));  // the same buffer: the same value
  rec->EndOp("");
  const int64_t conj = rec->BeginOp(rec->InternString("aten::resolve_conj"), kNoId);
  rec->AddInput(0, with_uid(fresh, 2));  // another buffer at the freed address
  rec->EndOp("");
  const int64_t by_address = rec->BeginOp(rec->InternString("aten::resolve_conj"), kNoId);
  rec->AddInput(0, old_value.view());  // a hook without buffer ids: address only, as before
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const int64_t made = Output(*trace, add);
  EXPECT_EQ(Input(*trace, reread), made);
  EXPECT_NE(Input(*trace, conj), made);
  EXPECT_EQ(trace->tensors[Input(*trace, conj)].producer_op_id, kNoId);
  EXPECT_NE(Input(*trace, by_address), made);  // uid 0 is its own buffer, never uid 1's
}

// What copy_ (or an out= op) writes is its result: fingerprinted at the op's
// end, when the values exist, though the written argument was registered as
// a new, not yet written value at its start. (Once it was never fingerprinted,
// and every .contiguous() result was a tensor no match could use.)
TEST(Recorder, TheValueAnOpWritesIsFingerprintedAtItsEnd) {
  std::string path = TempPath("copy_values.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> source = {1, 2, 3, 4}, buffer = {0, 0, 0, 0};
  FakeTensor src{reinterpret_cast<uintptr_t>(source.data()), 0, {4}, {1}};
  FakeTensor dst{reinterpret_cast<uintptr_t>(buffer.data()), 0, {4}, {1}};
  int64_t copy = rec->BeginOp(rec->InternString("aten::copy_"), kNoId);
  rec->AddOverwrittenInput(0, WithData(dst, buffer.data()));
  rec->AddInput(1, WithData(src, source.data()));
  buffer = source;  // the kernel runs; no version bump under this dispatch
  rec->AddOutput(0, WithData(dst, buffer.data()));
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  const int64_t result = Output(*trace, copy);
  EXPECT_EQ(result, Input(*trace, copy, 0));
  ASSERT_TRUE(fps->count(result)) << "copy_'s result has no fingerprint";
  EXPECT_TRUE(Equivalent(fps->at(result).Full(), fps->at(Input(*trace, copy, 1)).Full(), 1e-6));
}

// cat allocates its result without a recorded op, then writes each input
// through narrow(result).copy_: narrow sees a buffer nobody wrote, and so
// does its view. Neither is fingerprinted (their values were whatever the
// allocator left there, and gave one program different fingerprints from
// run to run); what copy_ writes, and what cat returns, are. The twin: a
// top-level op's input seen for the first time is a real value (a weight
// made before recording) and is fingerprinted.
TEST(Recorder, BuffersANestedOpSeesFirstAreNotFingerprintedUntilWritten) {
  std::string path = TempPath("fresh_nested.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> weight = {1, 2, 3, 4}, result = {7, 7, 7, 7};  // 7: garbage left by the allocator
  FakeTensor w{reinterpret_cast<uintptr_t>(weight.data()), 0, {4}, {1}};
  FakeTensor r{reinterpret_cast<uintptr_t>(result.data()), 0, {4}, {1}};
  FakeTensor half{reinterpret_cast<uintptr_t>(result.data()), 0, {2}, {1}};
  const int64_t cat = rec->BeginOp(rec->InternString("aten::cat"), kNoId);
  rec->AddInput(0, WithData(w, weight.data()));
  const int64_t narrow = rec->BeginOp(rec->InternString("aten::narrow"), kNoId);
  TensorView fresh = WithData(r, result.data());
  fresh.nested_input = true;
  rec->AddInput(0, fresh);
  TensorView view = WithData(half, result.data());
  view.is_view = true;
  rec->AddOutput(0, view);
  rec->EndOp("");
  result = {1, 2, 3, 4};  // copy_ and the rest of cat's kernel write the buffer
  FakeTensor written{reinterpret_cast<uintptr_t>(result.data()), 0, {4}, {1}, /*version=*/1};
  rec->AddOutput(0, WithData(written, result.data()));
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  EXPECT_TRUE(fps->count(Input(*trace, cat))) << "a top-level op's first-seen input is a real value";
  EXPECT_FALSE(fps->count(Input(*trace, narrow))) << "the unwritten buffer was fingerprinted";
  EXPECT_FALSE(fps->count(Output(*trace, narrow))) << "a view of the unwritten buffer was fingerprinted";
  ASSERT_TRUE(fps->count(Output(*trace, cat))) << "cat's result has no fingerprint";
  EXPECT_TRUE(Equivalent(fps->at(Output(*trace, cat)).Full(), fps->at(Input(*trace, cat)).Full(), 1e-6));
  // Counted and said, never silent.
  ASSERT_TRUE(trace->meta.extra.count("recorder.unfingerprinted_nested_inputs"));
  EXPECT_EQ(trace->meta.extra.at("recorder.unfingerprinted_nested_inputs"), "1");
}

// native_layer_norm allocates its result with a nested aten::empty (values
// not yet there: not fingerprinted) and fills it in its own kernel: the value
// it returns is that buffer, and gets its fingerprint when it is returned.
TEST(Recorder, ABufferANestedOpAllocatedIsFingerprintedWhenReturned) {
  std::string path = TempPath("nested_alloc.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> input = {1, 2, 3, 4}, result = {0, 0, 0, 0};
  FakeTensor in{reinterpret_cast<uintptr_t>(input.data()), 0, {4}, {1}};
  FakeTensor out{reinterpret_cast<uintptr_t>(result.data()), 0, {4}, {1}};
  TensorView in_view = in.view();
  in_view.host_data = input.data();
  const int64_t norm = rec->BeginOp(rec->InternString("aten::native_layer_norm"), kNoId);
  rec->AddInput(0, in_view);
  const int64_t alloc = rec->BeginOp(rec->InternString("aten::empty.memory_format"), kNoId);
  rec->AddOutput(0, out.view());  // uninitialised: no host data handed over
  rec->EndOp("");
  result = {-1.3f, -0.4f, 0.4f, 1.3f};  // the kernel writes it
  TensorView out_view = out.view();
  out_view.host_data = result.data();
  rec->AddOutput(0, out_view);
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  const int64_t value = Output(*trace, norm);
  EXPECT_EQ(value, Output(*trace, alloc)) << "one buffer, one value id";
  ASSERT_TRUE(fps->count(value)) << "the layer norm's result has no fingerprint";
  EXPECT_NEAR(fps->at(value).Full().invariant.mean, 0.0, 1e-6);
}

TEST(Recorder, AViewIdenticalToItsInputIsTheSameValue) {
  // torch's matrix_exp views its input with the same shape; later reads of
  // the input must not depend on that call.
  std::string path = TempPath("sameview.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  FakeTensor x{0x3000, 0, {2, 3}, {3, 1}};
  auto op = [&](const char* name, const FakeTensor& in, const FakeTensor* out, bool view) {
    int64_t id = rec->BeginOp(rec->InternString(name), kNoId);
    rec->AddInput(0, in.view());
    if (out) {
      TensorView v = out->view();
      v.is_view = view;
      rec->AddOutput(0, v);
    }
    rec->EndOp("");
    return id;
  };
  int64_t view_op = op("aten::view", x, &x, true);
  int64_t later = op("aten::sum", x, nullptr, false);
  int64_t inplace = op("aten::relu_", x, &x, false);  // not a view: a new value even at the same key
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(Output(*trace, view_op), Input(*trace, view_op));
  EXPECT_EQ(Input(*trace, later), Input(*trace, view_op));
  EXPECT_NE(Output(*trace, inplace), Input(*trace, inplace));
}

TEST(Recorder, ValuesAtAReusedAddressGetTheirOwnFingerprints) {
  // --values: a buffer freed and handed to a new value (same address, layout
  // and version) must be fingerprinted again; a view of one value may reuse.
  std::string path = TempPath("fpreuse.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> buffer(6, 1.0f);
  FakeTensor a{reinterpret_cast<uintptr_t>(buffer.data()), 0, {2, 3}, {3, 1}};
  FakeTensor at{a.addr, 0, {3, 2}, {1, 3}};
  auto produce = [&](const char* name, const FakeTensor* in, const FakeTensor& out, bool view) {
    int64_t id = rec->BeginOp(rec->InternString(name), kNoId);
    if (in) rec->AddInput(0, WithData(*in, buffer.data()));
    TensorView v = WithData(out, buffer.data());
    v.is_view = view;
    rec->AddOutput(0, v);
    rec->EndOp("");
    return id;
  };
  int64_t ones = produce("fill", nullptr, a, false);
  int64_t t1 = produce("aten::t", &a, at, true);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i) - 2.5f;  // a new value, same place
  int64_t ramp = produce("fill", nullptr, a, false);
  int64_t t2 = produce("aten::t", &a, at, true);
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  const Fingerprint f_ones = fps->at(Output(*trace, ones)).Full();
  const Fingerprint f_ramp = fps->at(Output(*trace, ramp)).Full();
  EXPECT_FALSE(Equivalent(f_ones, f_ramp, 1e-2));
  EXPECT_TRUE(Equivalent(fps->at(Output(*trace, t1)).Full(), f_ones, 1e-2));
  EXPECT_TRUE(Equivalent(fps->at(Output(*trace, t2)).Full(), f_ramp, 1e-2));
}

TEST(Recorder, ValuesWrittenInPlaceWithoutVersionBumpAreFingerprintedAgain) {
  // clone = empty_like + copy_, and the inner copy_ runs below autograd, so the
  // version counter stays 0: the key (address, offset, layout, version) is the
  // same before and after the write. The written value must get its own
  // fingerprint, not the cached one of the uninitialised buffer.
  std::string path = TempPath("inplace_values.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> source = {1, 2, 3, 4}, buffer = {0, 0, 0, 0};
  FakeTensor src{reinterpret_cast<uintptr_t>(source.data()), 0, {4}, {1}};
  FakeTensor dst{reinterpret_cast<uintptr_t>(buffer.data()), 0, {4}, {1}};
  int64_t alloc = rec->BeginOp(rec->InternString("aten::zeros"), kNoId);
  rec->AddOutput(0, WithData(dst, buffer.data()));
  rec->EndOp("");
  buffer = source;  // the copy's kernel writes before its end callback
  int64_t copy = rec->BeginOp(rec->InternString("aten::copy_"), kNoId);
  rec->AddInput(0, WithData(dst, buffer.data()));
  rec->AddInput(1, WithData(src, source.data()));
  rec->AddOutput(0, WithData(dst, buffer.data()));
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok());
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(fps.ok());
  const Fingerprint& zeros = fps->at(Output(*trace, alloc)).Full();
  const Fingerprint& copied = fps->at(Output(*trace, copy)).Full();
  EXPECT_DOUBLE_EQ(zeros.invariant.max, 0.0);
  EXPECT_DOUBLE_EQ(copied.invariant.max, 4.0);
  EXPECT_TRUE(Equivalent(copied, fps->at(Input(*trace, copy, 1)).Full(), 1e-6));
}

// addmm puts the bias into its result with a nested copy_, then its BLAS
// call adds the product: no recorded op, no version bump. The value addmm
// returns is the sum, and its fingerprint must be the sum's, not the bias's
// that copy_ left (GPT-2's Conv1D outputs were fingerprinted as their bias).
// The twin: a nested op's fresh output handed back unchanged (linear over
// addmm) keeps the fingerprint it has.
TEST(Recorder, AValueANestedOpWroteIntoItsBufferIsFingerprintedWhenReturned) {
  std::string path = TempPath("addmm_values.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> bias = {1, 1, 1, 1}, result = {0, 0, 0, 0};
  FakeTensor b{reinterpret_cast<uintptr_t>(bias.data()), 0, {4}, {1}};
  FakeTensor r{reinterpret_cast<uintptr_t>(result.data()), 0, {4}, {1}};
  const int64_t linear = rec->BeginOp(rec->InternString("aten::linear"), kNoId);
  rec->AddInput(0, WithData(b, bias.data()));
  const int64_t addmm = rec->BeginOp(rec->InternString("aten::addmm"), kNoId);
  rec->AddInput(0, WithData(b, bias.data()));
  const int64_t copy = rec->BeginOp(rec->InternString("aten::copy_"), kNoId);
  rec->AddOverwrittenInput(0, WithData(r, result.data()));
  rec->AddInput(1, WithData(b, bias.data()));
  result = bias;
  rec->AddOutput(0, WithData(r, result.data()));
  rec->EndOp("");
  result = {11, 21, 31, 41};  // the BLAS call adds the product in place
  rec->AddOutput(0, WithData(r, result.data()));
  rec->EndOp("");
  rec->AddOutput(0, WithData(r, result.data()));
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  const int64_t value = Output(*trace, addmm);
  EXPECT_EQ(value, Output(*trace, copy)) << "one buffer, one value id";
  EXPECT_EQ(value, Output(*trace, linear));
  ASSERT_TRUE(fps->count(value));
  EXPECT_DOUBLE_EQ(fps->at(value).Full().invariant.mean, 26.0) << "fingerprinted as the bias copy_ left, not the sum";
  EXPECT_DOUBLE_EQ(fps->at(value).Full().invariant.max, 41.0);
  // Computed twice (copy_'s end, addmm's end), never three times: linear
  // hands back what addmm made.
  // (Counted on the traced thread: a copy each, nested in its op.)
  int fingerprint_ops = 0;
  for (const OpEvent& op : trace->ops) {
    fingerprint_ops += trace->strings[op.name_id] == "magneton::fingerprint" && op.parent_id != kNoId;
  }
  EXPECT_EQ(fingerprint_ops, 3) << "the bias input, copy_'s result, addmm's result";
}

// A view that reads its value's elements in the value's own order, adding
// or dropping size-1 dims (HF Conv1D's view(1, 1, n) of its (1, n) addmm
// result), takes the value's fingerprint instead of computing it again; a
// view that reorders the elements (t()) computes its own.
TEST(Recorder, AViewThatOnlyAddsSizeOneDimsTakesItsValuesFingerprint) {
  std::string path = TempPath("unsqueeze_values.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> buffer = {3, 1, 4, 1, 5, 9};
  FakeTensor value{reinterpret_cast<uintptr_t>(buffer.data()), 0, {2, 3}, {3, 1}};
  FakeTensor unsqueezed{value.addr, 0, {1, 2, 1, 3}, {6, 3, 3, 1}};
  FakeTensor transposed{value.addr, 0, {3, 2}, {1, 3}};
  auto op = [&](const char* name, const FakeTensor* in, const FakeTensor& out, bool view) {
    const int64_t id = rec->BeginOp(rec->InternString(name), kNoId);
    if (in) rec->AddInput(0, WithData(*in, buffer.data()));
    TensorView v = WithData(out, buffer.data());
    v.is_view = view;
    rec->AddOutput(0, v);
    rec->EndOp("");
    return id;
  };
  const int64_t made = op("aten::mul", nullptr, value, false);
  const int64_t view = op("aten::view", &value, unsqueezed, true);
  const int64_t t = op("aten::t", &value, transposed, true);
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  ASSERT_TRUE(trace->meta.extra.count("recorder.fingerprints_reused"));
  EXPECT_EQ(trace->meta.extra.at("recorder.fingerprints_reused"), "1");
  const Fingerprint f_value = fps->at(Output(*trace, made)).Full();
  EXPECT_EQ(EncodeFingerprint(fps->at(Output(*trace, view)).Full()), EncodeFingerprint(f_value));
  EXPECT_NE(EncodeFingerprint(fps->at(Output(*trace, t)).Full()), EncodeFingerprint(f_value));
  EXPECT_TRUE(Equivalent(fps->at(Output(*trace, t)).Full(), f_value, 1e-6));
}

TEST(Recorder, OpsFromManyThreadsNestPerThread) {
  std::string path = TempPath("threads.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  constexpr int kThreads = 4, kOps = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([rec, t] {
      int64_t outer = rec->InternString("aten::linear");
      int64_t inner = rec->InternString("aten::addmm");
      rec->PushScope("layer" + std::to_string(t), "Linear");
      std::vector<int64_t> shape = {8}, strides = {1};
      for (int i = 0; i < kOps; ++i) {
        uintptr_t addr = 0x100000u * (t + 1) + 64u * static_cast<uintptr_t>(i);
        TensorView v{addr, 0, shape.data(), strides.data(), 1, "float32", "cpu", 0};
        rec->BeginOp(outer, kNoId);
        rec->AddInput(0, v);
        rec->BeginOp(inner, kNoId);
        rec->AddOutput(0, v);
        rec->EndOp("");
        rec->EndOp("");
      }
      rec->PopScope();
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(Recorder::Stop().ok());
  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->ops.size(), static_cast<size_t>(kThreads * kOps * 2));
  std::map<int64_t, const OpEvent*> by_id;
  for (const OpEvent& op : trace->ops) by_id[op.id] = &op;
  std::set<int64_t> tids;
  for (const OpEvent& op : trace->ops) {
    tids.insert(op.thread_id);
    if (trace->str(op.name_id) == "aten::addmm") {
      ASSERT_NE(op.parent_id, kNoId);
      const OpEvent* parent = by_id.at(op.parent_id);
      EXPECT_EQ(parent->thread_id, op.thread_id);
      EXPECT_EQ(trace->str(parent->name_id), "aten::linear");
      EXPECT_EQ(trace->ScopePath(op.scope_id), trace->ScopePath(parent->scope_id));
    } else {
      EXPECT_EQ(op.parent_id, kNoId);
    }
  }
  EXPECT_EQ(tids.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(trace->tensors.size(), static_cast<size_t>(kThreads * kOps * 2));
}

// --values fingerprints are taken on the traced thread while the op is
// pending (a copy of the value): that time is written as a recorder op,
// nested in the op when it lies inside the op's interval, beside it when an
// engine reported an end time before its outputs were fingerprinted. The
// fingerprint thread's work is a recorder op too, top-level on its own thread.
TEST(Recorder, FingerprintingIsARecorderOpOfItsOwn) {
  std::string path = TempPath("fpspans.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> buffer(1 << 16, 0.5f);
  FakeTensor in{reinterpret_cast<uintptr_t>(buffer.data()), 0, {256, 256}, {256, 1}};
  FakeTensor out{reinterpret_cast<uintptr_t>(buffer.data()) + 4, 0, {256, 256}, {256, 1}};
  const int64_t outer = rec->BeginOp(rec->InternString("engine::block"), kNoId);
  const int64_t inner = rec->BeginOp(rec->InternString("engine::relu"), kNoId);
  rec->AddInput(0, WithData(in, buffer.data()));
  rec->AddOutput(0, WithData(out, buffer.data()));
  rec->EndOp("");
  // An engine that measured the op itself: its end is before the output's fingerprint.
  const int64_t timed = rec->BeginOp(rec->InternString("engine::add"), kNoId);
  const int64_t timed_start = MonotonicNowNs();
  const int64_t timed_end = MonotonicNowNs();
  FakeTensor out2{reinterpret_cast<uintptr_t>(buffer.data()) + 8, 0, {256, 256}, {256, 1}};
  rec->AddOutput(0, WithData(out2, buffer.data()));
  rec->EndOp("", timed_start, timed_end);
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::vector<const OpEvent*> spans, worker_spans;
  for (const OpEvent& op : trace->ops) {
    if (!IsRecorderOp(*trace, op)) continue;
    (op.thread_id == trace->ops[outer].thread_id ? spans : worker_spans).push_back(&op);
  }
  ASSERT_FALSE(worker_spans.empty());
  for (const OpEvent* span : worker_spans) {
    EXPECT_EQ(trace->str(span->name_id), kFingerprintOpName);
    EXPECT_EQ(span->parent_id, kNoId);
    EXPECT_LE(span->start_ns, span->end_ns);
  }
  ASSERT_EQ(spans.size(), 3u);  // relu's input and output, add's output
  for (const OpEvent* span : spans) EXPECT_EQ(trace->str(span->name_id), kFingerprintOpName);
  const OpEvent& relu = trace->ops[inner];
  EXPECT_EQ(spans[0]->parent_id, inner);
  EXPECT_EQ(spans[1]->parent_id, inner);
  for (int k = 0; k < 2; ++k) {
    EXPECT_GE(spans[k]->start_ns, relu.start_ns);
    EXPECT_LE(spans[k]->end_ns, relu.end_ns);
    EXPECT_LE(spans[k]->start_ns, spans[k]->end_ns);
  }
  EXPECT_EQ(spans[2]->parent_id, outer) << "after add's reported end: beside it, in its parent";
  EXPECT_GE(spans[2]->start_ns, trace->ops[timed].end_ns);
}


// A scripted device (the hardware fake of the --values device path): reads
// the parts from host memory it owns, as the torch reader does on a GPU, or
// answers with the status it is given.
class ScriptedDeviceValues final : public DeviceValueReader {
 public:
  ScriptedDeviceValues(const std::vector<float>* values, Status answer = Status::Ok())
      : values_(values), answer_(std::move(answer)) {}
  Status ReadParts(const DeviceValueRequest& request, DeviceValueParts* parts) const override {
    ++reads;
    if (!answer_.ok()) return answer_;
    // One block, two-pass; the grid by logical index (contiguous storage).
    BlockMoments b;
    b.count = static_cast<int64_t>(values_->size());
    double sum = 0;
    b.min = b.max = (*values_)[0];
    for (float v : *values_) {
      sum += v;
      b.min = std::min<double>(b.min, v);
      b.max = std::max<double>(b.max, v);
    }
    b.mean = sum / b.count;
    for (float v : *values_) {
      const double d = v - b.mean;
      b.m2 += d * d;
      b.m3 += d * d * d;
      b.m4 += d * d * d * d;
    }
    parts->blocks = {b};
    std::vector<int64_t> index = {0};
    for (const auto& axis : request.axis_offsets) {
      std::vector<int64_t> next;
      for (int64_t base : index)
        for (int64_t off : axis) next.push_back(base + off);
      index = std::move(next);
    }
    for (int64_t i : index) parts->grid_values.push_back((*values_)[i]);
    return Status::Ok();
  }
  mutable int reads = 0;

 private:
  const std::vector<float>* values_;
  Status answer_;
};

// --values on a device tensor: the recorder asks the hook's reader for the
// parts (never for the values) and writes a fingerprint equal to the host
// one of the same values, timed as a recorder op; a reader that cannot read
// now is counted as skipped, one that fails as an error with its reason.
TEST(Recorder, DeviceValuesAreFingerprintedThroughTheirReader) {
  std::string path = TempPath("device_values.mtrace");
  Recorder* rec = StartRecordingValues(path);
  ASSERT_NE(rec, nullptr);
  std::vector<float> values(96 * 128);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.37 * i) * 3 + 1;
  ScriptedDeviceValues device(&values);
  ScriptedDeviceValues capturing(&values, Unavailable("a CUDA graph is being captured"));
  ScriptedDeviceValues broken(&values, Internal("device out of memory"));
  FakeTensor on_gpu{0x9000, 0, {96, 128}, {128, 1}};
  FakeTensor host_copy{reinterpret_cast<uintptr_t>(values.data()), 0, {96, 128}, {128, 1}};
  FakeTensor later{0xA000, 0, {96, 128}, {128, 1}};
  FakeTensor failing{0xB000, 0, {96, 128}, {128, 1}};
  auto device_view = [](const FakeTensor& t, const DeviceValueReader* reader) {
    TensorView v = t.view();
    v.device = "cuda:0";
    v.device_values = reader;
    return v;
  };
  const int64_t op = rec->BeginOp(rec->InternString("aten::relu"), kNoId);
  rec->AddInput(0, device_view(on_gpu, &device));
  rec->AddInput(1, WithData(host_copy, values.data()));
  rec->AddInput(2, device_view(later, &capturing));
  rec->AddInput(3, device_view(failing, &broken));
  rec->EndOp("");
  ASSERT_TRUE(Recorder::Stop().ok());
  EXPECT_EQ(device.reads, 1);
  EXPECT_EQ(capturing.reads, 1);

  auto trace = ReadTrace(path);
  auto fps = LoadFingerprints(path);
  ASSERT_TRUE(trace.ok() && fps.ok());
  const int64_t gpu_id = Input(*trace, op, 0), host_id = Input(*trace, op, 1);
  ASSERT_TRUE(fps->count(gpu_id)) << "the device tensor has no fingerprint";
  ASSERT_TRUE(fps->count(host_id));
  EXPECT_TRUE(Equivalent(fps->at(gpu_id).Full(), fps->at(host_id).Full(), 1e-9)) << CompareFingerprints(fps->at(gpu_id).Full(), fps->at(host_id).Full(), 1e-9).reason;
  EXPECT_EQ(fps->at(gpu_id).Full().invariant.quantiles, fps->at(host_id).Full().invariant.quantiles);
  EXPECT_FALSE(fps->count(Input(*trace, op, 2)));
  EXPECT_FALSE(fps->count(Input(*trace, op, 3)));
  int spans = 0;
  for (const OpEvent& o : trace->ops) spans += IsRecorderOp(*trace, o) && o.parent_id == op;
  EXPECT_EQ(spans, 4) << "every read, answered or not, is the recorder's time";
  const auto& meta = trace->meta.extra;
  EXPECT_EQ(meta.at("recorder.device_fingerprints"), "1");
  EXPECT_EQ(meta.at("recorder.device_fingerprints_skipped"), "1");
  EXPECT_EQ(meta.at("recorder.device_fingerprint_errors"), "1");
  EXPECT_EQ(meta.at("recorder.device_fingerprint_error"), "device out of memory");
}

// The recorder's memory follows what is live (issue 15): the values of a
// storage a hook found freed are forgotten, and so are a written storage's
// older versions. Forgetting never aliases: a key seen again after it was
// forgotten is a new value (in torch it cannot be seen again: storage ids
// are never reused, version counters only move forward).
TEST(Recorder, ValuesOfFreedStoragesAndOlderVersionsAreForgotten) {
  std::string path = TempPath("forget.mtrace");
  ASSERT_TRUE(Recorder::Start(path, RunMetadata{}).ok());
  Recorder* rec = Recorder::Active();
  auto with_uid = [](const FakeTensor& t, uint64_t uid) {
    TensorView v = t.view();
    v.storage_uid = uid;
    return v;
  };
  auto op = [&](const char* name, std::vector<TensorView> in, std::vector<TensorView> out) {
    int64_t id = rec->BeginOp(rec->InternString(name), kNoId);
    for (size_t i = 0; i < in.size(); ++i) rec->AddInput(static_cast<int32_t>(i), in[i]);
    for (size_t i = 0; i < out.size(); ++i) rec->AddOutput(static_cast<int32_t>(i), out[i]);
    rec->EndOp("");
    return id;
  };
  FakeTensor a{0x6000, 0, {4}, {1}}, b{0x7000, 0, {4}, {1}};
  FakeTensor b_view{0x7000, 1, {2}, {1}};
  const int64_t make_a = op("aten::relu", {}, {with_uid(a, 11)});
  const int64_t make_b = op("aten::relu", {}, {with_uid(b, 12)});
  const int64_t view_b = op("aten::narrow", {with_uid(b, 12)}, {with_uid(b_view, 12)});
  FakeTensor b1 = b;
  b1.version = 1;
  const int64_t write_b = op("aten::add_", {with_uid(b, 12)}, {with_uid(b1, 12)});
  rec->ForgetStorages({11, 99});  // 99: never seen, nothing to forget
  const int64_t read_a = op("aten::sum", {with_uid(a, 11)}, {});
  const int64_t read_old_view = op("aten::sum", {with_uid(b_view, 12)}, {});
  const int64_t read_b1 = op("aten::sum", {with_uid(b1, 12)}, {});
  ASSERT_TRUE(Recorder::Stop().ok());

  auto trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(Input(*trace, view_b), Output(*trace, make_b));  // before anything is forgotten: linked
  EXPECT_NE(Input(*trace, read_a), Output(*trace, make_a));  // storage 11 freed: forgotten
  EXPECT_EQ(trace->tensors[Input(*trace, read_a)].producer_op_id, kNoId);
  EXPECT_NE(Input(*trace, read_old_view), Output(*trace, view_b));  // version 0 of storage 12: superseded
  EXPECT_EQ(Input(*trace, read_b1), Output(*trace, write_b));       // the live version is kept
  // b@0, its view and a: three values let go; b@1 (and the two new values
  // the late reads made) still held at stop.
  EXPECT_EQ(trace->meta.extra.at("recorder.tensors_forgotten"), "3");
  EXPECT_EQ(trace->meta.extra.at("recorder.tensors_held_at_stop"), "3");
}

}  // namespace
}  // namespace magneton
