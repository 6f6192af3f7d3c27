// Tensor identity alone (src/record/tensor_identity.h): which value a
// tensor is, when a value is forgotten, when the storage sweep is asked
// for, and which values --values may fingerprint now.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "record/fingerprint_cache.h"
#include "record/tensor_identity.h"
#include "test_util.h"

namespace magneton::record {
namespace {

using testing::NewTestTrace;
using testing::TestTrace;

struct Fake {
  uint64_t addr = 0x1000;
  int64_t offset = 0;
  std::vector<int64_t> shape{2, 3}, strides{3, 1};
  int64_t version = 0;
  uint64_t storage_uid = 0;
  const void* data = nullptr;
  TensorView view() const {
    TensorView v;
    v.storage_addr = addr;
    v.storage_offset = offset;
    v.sizes = shape.data();
    v.strides = strides.data();
    v.ndim = static_cast<int32_t>(shape.size());
    v.dtype = "float32";
    v.device = "cpu";
    v.version = version;
    v.storage_uid = storage_uid;
    v.host_data = data;
    return v;
  }
};

// One part under test, with the parts it writes through.
struct Identity {
  explicit Identity(const std::string& name, bool record_values = false)
      : trace(NewTestTrace(name)),
        cache(trace.writer.get(), &next_op_id),
        tensors(trace.writer.get(), &cache, &sweep_due, record_values) {}
  TestTrace trace;
  std::atomic<bool> sweep_due{false};
  std::atomic<int64_t> next_op_id{0};
  FingerprintCache cache;
  TensorIdentity tensors;
  int64_t In(const Fake& f, int64_t op) { return tensors.Resolve(f.view(), /*is_output=*/false, op).id; }
  int64_t Out(const Fake& f, int64_t op) { return tensors.Resolve(f.view(), /*is_output=*/true, op).id; }
  // Reads the trace back, with ops 0..n_ops-1 written first: the reader
  // keeps a tensor's producer only when that op is in the trace.
  Trace Close(int64_t n_ops) {
    trace.writer->AppendString(0, "op");
    for (int64_t id = 0; id < n_ops; ++id) {
      OpEvent op;
      op.id = id;
      op.name_id = 0;
      trace.writer->AppendOp(std::move(op), {});
    }
    return trace.Close();
  }
};

TEST(TensorIdentity, AnInputIsTheValueLastSeenUnderItsKey) {
  Identity s("inputs.mtrace");
  Fake x;
  const int64_t id = s.In(x, 0);
  EXPECT_EQ(s.In(x, 1), id);
  Fake moved = x;
  moved.offset = 3;
  EXPECT_NE(s.In(moved, 2), id);  // another place in the storage
  Fake transposed = x;
  transposed.shape = {3, 2};
  transposed.strides = {1, 3};
  EXPECT_NE(s.In(transposed, 2), id);  // another layout
  Fake written = x;
  written.version = 1;
  EXPECT_NE(s.In(written, 2), id);  // another version
  Fake other_storage = x;
  other_storage.storage_uid = 42;  // same address, another buffer
  EXPECT_NE(s.In(other_storage, 2), id);
  EXPECT_EQ(s.In(x, 3), id);
  const Trace trace = s.Close(4);
  ASSERT_EQ(trace.tensors.size(), 5u);
  EXPECT_EQ(trace.tensors[id].producer_op_id, kNoId);  // an input nobody made: a model input
  EXPECT_EQ(trace.tensors[id].shape, (std::vector<int64_t>{2, 3}));
}

TEST(TensorIdentity, AnOutputIsNewUnlessItsOpOrANestedOneMadeIt) {
  Identity s("outputs.mtrace");
  Fake x;
  const int64_t made = s.Out(x, /*op=*/5);
  EXPECT_EQ(s.Out(x, 5), made);  // the same op hands it back again
  EXPECT_EQ(s.Out(x, 4), made);  // an enclosing op (lower id) returns its nested op's result
  const int64_t later = s.Out(x, 6);  // a later op writing the same key makes a new value
  EXPECT_NE(later, made);
  EXPECT_EQ(s.In(x, 7), later);
  const Trace trace = s.Close(8);
  EXPECT_EQ(trace.tensors[made].producer_op_id, 5);
  EXPECT_EQ(trace.tensors[later].producer_op_id, 6);
}

TEST(TensorIdentity, AViewIdenticalToItsInputIsThatValue) {
  Identity s("views.mtrace");
  Fake x;
  const int64_t input = s.In(x, 1);
  TensorView same = x.view();
  same.is_view = true;
  EXPECT_EQ(s.tensors.Resolve(same, /*is_output=*/true, 2, /*viewed_id=*/input).id, input);
  // Not a view (an op that wrote the same buffer in place): a new value.
  EXPECT_NE(s.tensors.Resolve(x.view(), /*is_output=*/true, 3, input).id, input);
}

TEST(TensorIdentity, AWriteForgetsOlderVersionsOfItsStorageOnly) {
  Identity s("versions.mtrace");
  Fake x;
  x.storage_uid = 7;
  const int64_t v0 = s.In(x, 0);
  Fake x1 = x;
  x1.version = 1;
  const int64_t v1 = s.Out(x1, 1);
  EXPECT_EQ(s.tensors.counts().forgotten, 1);
  EXPECT_EQ(s.tensors.counts().held, 1);
  EXPECT_NE(s.In(x, 2), v0);  // forgotten: comes back only as a new value
  EXPECT_EQ(s.In(x1, 3), v1);
  // Without a storage uid the recorder cannot tell which views share a
  // counter, so nothing is forgotten.
  Identity u("versions_no_uid.mtrace");
  Fake y;
  const int64_t y0 = u.In(y, 0);
  Fake y1 = y;
  y1.version = 1;
  u.Out(y1, 1);
  EXPECT_EQ(u.tensors.counts().forgotten, 0);
  EXPECT_EQ(u.In(y, 2), y0);
}

TEST(TensorIdentity, ForgetStoragesForgetsOnlyThoseStorages) {
  Identity s("forget.mtrace");
  Fake a, b;
  a.storage_uid = 11;
  b.storage_uid = 12;
  b.addr = 0x2000;
  const int64_t a_id = s.In(a, 0), b_id = s.In(b, 0);
  s.tensors.ForgetStorages({11, 99});  // 99: never seen, nothing to forget
  EXPECT_EQ(s.tensors.counts().forgotten, 1);
  EXPECT_EQ(s.tensors.counts().held, 1);
  EXPECT_NE(s.In(a, 1), a_id);
  EXPECT_EQ(s.In(b, 1), b_id);
  s.tensors.ForgetAll();
  EXPECT_EQ(s.tensors.counts().held, 0);
  EXPECT_EQ(s.tensors.counts().forgotten, 3);
  EXPECT_NE(s.In(b, 2), b_id);
}

TEST(TensorIdentity, TheSweepIsAskedForAtTheFloorAndAgainOnlyOnceTheTableHasDoubled) {
  Identity s("sweep.mtrace");
  Fake f;
  f.storage_uid = 1;
  auto add = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      ++f.storage_uid;
      s.In(f, 0);
    }
  };
  add(TensorIdentity::kSweepFloor - 1);
  EXPECT_FALSE(s.sweep_due.load());
  add(1);
  EXPECT_TRUE(s.sweep_due.load());
  s.tensors.ForgetStorages({});  // a sweep that found nothing freed still lowers the flag
  EXPECT_FALSE(s.sweep_due.load());
  add(TensorIdentity::kSweepFloor - 1);  // below twice what the sweep left
  EXPECT_FALSE(s.sweep_due.load());
  add(1);
  EXPECT_TRUE(s.sweep_due.load());
}

TEST(TensorIdentity, AddOverwrittenAndAddNamedAreAlwaysNewValues) {
  Identity s("overwritten.mtrace");
  Fake x;
  const int64_t before = s.In(x, 0);
  const int64_t overwritten = s.tensors.AddOverwritten(x.view(), /*op_id=*/1);
  EXPECT_NE(overwritten, before);
  EXPECT_EQ(s.In(x, 2), overwritten);  // later readers see the written value
  TensorMeta named;
  named.dtype = "float32";
  named.device = "cpu";
  named.producer_op_id = 2;
  named.id = 1234;  // assigned here, whatever the engine put
  const int64_t named_id = s.tensors.AddNamed(named);
  EXPECT_EQ(named_id, overwritten + 1);
  const Trace trace = s.Close(3);
  EXPECT_EQ(trace.tensors[overwritten].producer_op_id, 1);
  EXPECT_EQ(trace.tensors[named_id].producer_op_id, 2);
}

// --values: a value is fingerprinted when its values exist and only once;
// buffers that hold whatever the allocator left, and their views, are not.
TEST(TensorIdentity, ValuesAreFingerprintedOnceTheyHoldValues) {
  Identity s("fingerprint_now.mtrace", /*record_values=*/true);
  float data[6] = {};
  Fake plain;
  plain.data = data;
  EXPECT_TRUE(s.tensors.Resolve(plain.view(), false, 0).fingerprint);
  EXPECT_FALSE(s.tensors.Resolve(plain.view(), false, 1).fingerprint);  // the same value again

  // An allocation inside op 10 (nested op 11), its view, then op 10 hands
  // the buffer back as its output once its kernel has written it.
  Fake buffer;
  buffer.addr = 0x2000;
  buffer.data = data;
  TensorView empty = buffer.view();
  empty.uninitialized = true;
  const TensorIdentity::Resolved allocated = s.tensors.Resolve(empty, true, 11);
  EXPECT_FALSE(allocated.fingerprint);
  Fake narrowed = buffer;
  narrowed.shape = {3};
  narrowed.strides = {1};
  TensorView view = narrowed.view();
  view.is_view = true;
  EXPECT_FALSE(s.tensors.Resolve(view, true, 12, /*viewed_id=*/allocated.id).fingerprint);
  const TensorIdentity::Resolved filled = s.tensors.Resolve(buffer.view(), true, 10);
  EXPECT_EQ(filled.id, allocated.id);
  EXPECT_TRUE(filled.fingerprint);
  EXPECT_FALSE(s.tensors.Resolve(buffer.view(), true, 10).fingerprint);  // once
  EXPECT_EQ(s.tensors.counts().uninitialized, 1);  // the view still holds nothing it was given

  // An input first seen inside a nested op: a buffer its parent allocated.
  Fake fresh;
  fresh.addr = 0x3000;
  fresh.data = data;
  TensorView nested = fresh.view();
  nested.nested_input = true;
  EXPECT_FALSE(s.tensors.Resolve(nested, false, 20).fingerprint);
  EXPECT_EQ(s.tensors.counts().fresh_nested_inputs, 1);

  // Values it cannot read (no host data, no device reader): never.
  Fake unreadable;
  unreadable.addr = 0x4000;
  EXPECT_FALSE(s.tensors.Resolve(unreadable.view(), false, 21).fingerprint);
}

TEST(TensorIdentity, WithoutValuesNothingIsFingerprintedOrCounted) {
  Identity s("no_values.mtrace", /*record_values=*/false);
  float data[6] = {};
  Fake plain;
  plain.data = data;
  EXPECT_FALSE(s.tensors.Resolve(plain.view(), false, 0).fingerprint);
  TensorView nested = plain.view();
  nested.storage_addr = 0x5000;
  nested.nested_input = true;
  EXPECT_FALSE(s.tensors.Resolve(nested, false, 1).fingerprint);
  EXPECT_EQ(s.tensors.counts().fresh_nested_inputs, 0);
  EXPECT_EQ(s.tensors.counts().uninitialized, 0);
}

// A value written into its buffer by a nested op (addmm's nested copy_ of
// the bias) may be written again by the enclosing op's kernel: when the
// enclosing op hands it back, it is fingerprinted again, as its output.
TEST(TensorIdentity, ABufferWrittenByANestedOpIsFingerprintedAgainAsTheEnclosingOpsOutput) {
  Identity s("buffer_write.mtrace", /*record_values=*/true);
  float data[6] = {};
  Fake out;
  out.data = data;
  const TensorIdentity::Resolved nested =
      s.tensors.Resolve(out.view(), true, /*op_id=*/2, kNoId, /*buffer_write=*/true);
  EXPECT_TRUE(nested.fingerprint);
  const TensorIdentity::Resolved outer = s.tensors.Resolve(out.view(), true, /*op_id=*/1);
  EXPECT_EQ(outer.id, nested.id);
  EXPECT_TRUE(outer.fingerprint);
  EXPECT_FALSE(s.tensors.Resolve(out.view(), true, 0).fingerprint);  // now final: no third time
  // Written by the nested op as a plain output (not into an input's buffer):
  // its fingerprint stands.
  Fake other = out;
  other.addr = 0x9000;
  EXPECT_TRUE(s.tensors.Resolve(other.view(), true, 2).fingerprint);
  EXPECT_FALSE(s.tensors.Resolve(other.view(), true, 1).fingerprint);
  const Trace trace = s.Close(3);
  EXPECT_EQ(trace.tensors[outer.id].producer_op_id, 2);  // the row is the one written first
}

// Hooks resolve tensors from every thread: ids stay unique and dense.
TEST(TensorIdentity, ThreadsGetDistinctIdsForDistinctValues) {
  Identity s("threads.mtrace");
  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::vector<int64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Fake f;
      for (int k = 0; k < kPerThread; ++k) {
        f.addr = 0x100000 * (i + 1) + 64 * k;
        f.storage_uid = f.addr;
        ids[i].push_back(s.In(f, k));
        ids[i].push_back(s.In(f, k));  // the same value read again
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<int64_t> all;
  for (const auto& v : ids) {
    for (size_t k = 0; k < v.size(); k += 2) {
      EXPECT_EQ(v[k], v[k + 1]);
      all.push_back(v[k]);
    }
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  for (size_t k = 0; k < all.size(); ++k) EXPECT_EQ(all[k], static_cast<int64_t>(k));
}

}  // namespace
}  // namespace magneton::record
