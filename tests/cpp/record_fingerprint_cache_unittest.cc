// The --values fingerprint cache alone (src/record/fingerprint_cache.h): a
// view takes a kept fingerprint only of the value it views, read at the same
// offset through the same value layout, with a version counter; otherwise
// the fingerprint is computed and its time returned to charge the recorder.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "fingerprint/fingerprint.h"
#include "record/fingerprint_cache.h"
#include "test_util.h"

namespace magneton::record {
namespace {

using testing::FingerprintRowsByTensor;
using testing::NewTestTrace;
using testing::TestTrace;

struct View {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  const float* data = nullptr;
  bool version_tracked = true;
  std::string_view dtype = "float32";
  TensorView view() const {
    TensorView v;
    v.storage_addr = 0x1000;
    v.storage_offset = offset;
    v.sizes = shape.data();
    v.strides = strides.data();
    v.ndim = static_cast<int32_t>(shape.size());
    v.dtype = dtype;
    v.device = "cpu";
    v.version_tracked = version_tracked;
    v.host_data = data + offset;
    return v;
  }
};

TEST(FingerprintCache, AViewTakesTheFingerprintKeptForItsValueReadTheSameWay) {
  TestTrace t = NewTestTrace("reuse.mtrace");
  std::atomic<int64_t> next_op_id{0};
  FingerprintCache cache(t.writer.get(), &next_op_id);
  const float data[8] = {1, -2, 3, 4.5f, 5, 6, 7, 8};
  const View value{{2, 3}, {3, 1}, 0, data};
  const View unsqueezed{{1, 2, 3}, {6, 3, 1}, 0, data};  // the same elements in the same order
  const View transposed{{3, 2}, {1, 3}, 0, data};       // the same elements, another order

  const auto computed = cache.FingerprintValue(0, value.view(), kNoId);
  ASSERT_TRUE(computed.has_value());  // computed: its time is the recorder's
  EXPECT_LE(computed->start_ns, computed->end_ns);
  EXPECT_FALSE(cache.FingerprintValue(1, unsqueezed.view(), /*viewed_id=*/0).has_value());  // taken
  EXPECT_EQ(cache.fingerprints_reused(), 1);
  EXPECT_TRUE(cache.FingerprintValue(2, transposed.view(), 0).has_value());  // another layout: computed
  // ...and kept for the value too, so the next transpose of it takes it.
  EXPECT_FALSE(cache.FingerprintValue(3, transposed.view(), 0).has_value());
  // A view of the taken view finds it under the view's own id.
  EXPECT_FALSE(cache.FingerprintValue(4, unsqueezed.view(), 1).has_value());
  EXPECT_EQ(cache.fingerprints_reused(), 3);
  EXPECT_GT(cache.bytes_cached(), 0u);

  cache.Finish();  // the fingerprint thread's last rows, before the writer closes
  ASSERT_TRUE(t.writer->Close().ok());
  const std::map<int64_t, std::string> rows = FingerprintRowsByTensor(t.path);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows.at(1), rows.at(0));
  EXPECT_EQ(rows.at(3), rows.at(2));
  EXPECT_EQ(rows.at(4), rows.at(0));
  EXPECT_NE(rows.at(2), rows.at(0));
}

TEST(FingerprintCache, NothingIsTakenAcrossValuesOffsetsOrUntrackedWrites) {
  TestTrace t = NewTestTrace("no_reuse.mtrace");
  std::atomic<int64_t> next_op_id{0};
  FingerprintCache cache(t.writer.get(), &next_op_id);
  const float data[8] = {1, -2, 3, 4.5f, 5, 6, 7, 8};
  const View value{{2, 3}, {3, 1}, 0, data};
  ASSERT_TRUE(cache.FingerprintValue(0, value.view(), kNoId).has_value());
  // Not a view (no viewed id): never taken, even with the same layout.
  EXPECT_TRUE(cache.FingerprintValue(1, value.view(), kNoId).has_value());
  // Another offset into the value.
  const View shifted{{2, 3}, {3, 1}, 2, data};
  EXPECT_TRUE(cache.FingerprintValue(2, shifted.view(), 0).has_value());
  // No version counter (inference mode): the values may have changed.
  View untracked = value;
  untracked.version_tracked = false;
  EXPECT_TRUE(cache.FingerprintValue(3, untracked.view(), 0).has_value());
  // The viewed value was forgotten (Drop): computed again.
  cache.Drop(0);
  EXPECT_TRUE(cache.FingerprintValue(4, value.view(), 0).has_value());
  cache.Clear();
  EXPECT_EQ(cache.bytes_cached(), 0u);
  EXPECT_TRUE(cache.FingerprintValue(5, value.view(), 4).has_value());
  EXPECT_EQ(cache.fingerprints_reused(), 0);
  // A dtype without a fingerprint: nothing written, no time spent.
  View complex = value;
  complex.dtype = "complex64";
  EXPECT_FALSE(cache.FingerprintValue(6, complex.view(), kNoId).has_value());
  cache.Finish();  // the fingerprint thread's last rows, before the writer closes
  ASSERT_TRUE(t.writer->Close().ok());
  const std::map<int64_t, std::string> rows = FingerprintRowsByTensor(t.path);
  EXPECT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows.count(6), 0u);
}

// A view that reads its value's elements in another order (a transpose, a
// permute) takes the kept fingerprint's invariant part and computes only its
// strong part: the row written is what computing it whole gives, bit for bit.
// Other elements (another offset, a part), other dims (a reshape: its pairs
// of size and stride are not the value's) or dims that share a stride
// compute everything.
TEST(FingerprintCache, APermutedViewTakesTheInvariantPartOfItsValue) {
  TestTrace t = NewTestTrace("permuted.mtrace");
  std::atomic<int64_t> next_op_id{0};
  FingerprintCache cache(t.writer.get(), &next_op_id);
  std::vector<float> data(2 * 3 * 4 + 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((i * 7919) % 23) - 11.5f;
  const View value{{2, 3, 4}, {12, 4, 1}, 0, data.data()};
  const View permuted{{4, 2, 3}, {1, 12, 4}, 0, data.data()};
  const View transposed{{2, 4, 3}, {12, 1, 4}, 0, data.data()};
  const View shifted{{4, 2, 3}, {1, 12, 4}, 4, data.data()};   // other elements
  const View reshaped{{6, 4}, {4, 1}, 0, data.data()};         // the same elements, other dims
  const View strided{{3, 4}, {4, 1}, 0, data.data()};          // a part of them
  const View overlapping{{2, 2}, {1, 1}, 0, data.data()};      // dims that share a stride

  ASSERT_TRUE(cache.FingerprintValue(0, value.view(), kNoId).has_value());
  ASSERT_TRUE(cache.FingerprintValue(1, permuted.view(), 0).has_value());    // computed: its strong part
  ASSERT_TRUE(cache.FingerprintValue(2, transposed.view(), 1).has_value());  // via the view's own entry
  cache.Drain();
  EXPECT_EQ(cache.invariants_reused(), 2);
  ASSERT_TRUE(cache.FingerprintValue(3, shifted.view(), 0).has_value());
  ASSERT_TRUE(cache.FingerprintValue(4, strided.view(), 0).has_value());
  ASSERT_TRUE(cache.FingerprintValue(5, overlapping.view(), 0).has_value());
  ASSERT_TRUE(cache.FingerprintValue(6, reshaped.view(), 0).has_value());
  cache.Drain();
  EXPECT_EQ(cache.invariants_reused(), 2);
  EXPECT_EQ(cache.fingerprints_reused(), 0);

  cache.Finish();  // the fingerprint thread's last rows, before the writer closes
  ASSERT_TRUE(t.writer->Close().ok());
  const std::map<int64_t, std::string> rows = FingerprintRowsByTensor(t.path);
  ASSERT_EQ(rows.size(), 7u);
  const std::vector<View> views = {value, permuted, transposed, shifted, strided, overlapping, reshaped};
  for (size_t i = 0; i < views.size(); ++i) {
    TensorBuffer buffer{views[i].data + views[i].offset, DType::kFloat32, views[i].shape, views[i].strides};
    auto whole = EncodeValueFingerprint(buffer);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(rows.at(static_cast<int64_t>(i)), *whole) << "view " << i;
  }
  EXPECT_NE(rows.at(1), rows.at(0));  // the strong part is the view's own
}

}  // namespace
}  // namespace magneton::record
