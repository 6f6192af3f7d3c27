// The device fingerprint path (value_parts.h) run on the host: a scripted
// "device" computes the parts the way the torch reader does (fp64 block
// moments in blocks of any size, values gathered by logical index), and the
// result must equal the host fingerprint of the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "fingerprint/fingerprint.h"
#include "fingerprint/value_parts.h"

namespace magneton {
namespace {

FingerprintOptions Options() { return ValueFingerprintOptions(); }  // the recorder's

// The tensor's values in logical (row-major) order, read through its strides.
std::vector<double> Logical(const std::vector<float>& storage, const std::vector<int64_t>& shape,
                            const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> out;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    out.push_back(storage[off]);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// What a device computes: one block of moments per `block` values (two-pass,
// like the torch reader), and the grid gathered by linear index.
DeviceValueParts DeviceParts(const std::vector<double>& logical, const DeviceValueRequest& request, int64_t block) {
  DeviceValueParts parts;
  for (size_t lo = 0; lo < logical.size(); lo += block) {
    const size_t hi = std::min(logical.size(), lo + static_cast<size_t>(block));
    BlockMoments b;
    b.count = static_cast<int64_t>(hi - lo);
    double sum = 0;
    int64_t finite = 0;
    b.min = std::numeric_limits<double>::infinity();
    b.max = -b.min;
    for (size_t i = lo; i < hi; ++i) {
      const double v = logical[i];
      if (std::isnan(v)) {
        ++b.nan_count;
      } else if (std::isinf(v)) {
        ++(v > 0 ? b.pos_inf_count : b.neg_inf_count);
      } else {
        sum += v;
        ++finite;
        b.min = std::min(b.min, v);
        b.max = std::max(b.max, v);
      }
    }
    b.mean = finite ? sum / finite : 0;
    for (size_t i = lo; i < hi; ++i) {
      if (!std::isfinite(logical[i])) continue;
      const double d = logical[i] - b.mean;
      b.m2 += d * d;
      b.m3 += d * d * d;
      b.m4 += d * d * d * d;
    }
    parts.blocks.push_back(b);
  }
  // Outer sum of the per-axis offsets, last axis fastest.
  std::vector<int64_t> index = {0};
  for (const auto& axis : request.axis_offsets) {
    std::vector<int64_t> next;
    for (int64_t base : index) {
      for (int64_t off : axis) next.push_back(base + off);
    }
    index = std::move(next);
  }
  if (request.grid_elements == 0) index.clear();
  for (int64_t i : index) parts.grid_values.push_back(logical[i]);
  return parts;
}

void ExpectSame(const Fingerprint& host, const Fingerprint& device) {
  const auto& a = host.invariant;
  const auto& b = device.invariant;
  EXPECT_EQ(a.element_count, b.element_count);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.pos_inf_count, b.pos_inf_count);
  EXPECT_EQ(a.neg_inf_count, b.neg_inf_count);
  const double scale = std::max(1.0, a.rms());
  EXPECT_NEAR(a.mean, b.mean, 1e-12 * scale);
  EXPECT_NEAR(a.variance, b.variance, 1e-10 * scale * scale);
  EXPECT_NEAR(a.skewness, b.skewness, 1e-8);
  EXPECT_NEAR(a.kurtosis, b.kurtosis, 1e-8);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.quantiles, b.quantiles);  // the same grid values: bit for bit
  EXPECT_EQ(a.quantile_sample_size, b.quantile_sample_size);
  ASSERT_EQ(host.strong.present, device.strong.present);
  ASSERT_EQ(host.strong.marginals.size(), device.strong.marginals.size());
  for (size_t k = 0; k < host.strong.marginals.size(); ++k) {
    EXPECT_EQ(host.strong.marginals[k].chunk_sums, device.strong.marginals[k].chunk_sums);
  }
  ASSERT_EQ(host.strong.spectra.size(), device.strong.spectra.size());
  for (size_t k = 0; k < host.strong.spectra.size(); ++k) {
    EXPECT_EQ(host.strong.spectra[k].singular_values, device.strong.spectra[k].singular_values);
  }
  EXPECT_TRUE(Equivalent(host, device, 1e-9)) << CompareFingerprints(host, device, 1e-9).reason;
}

struct Case {
  const char* name;
  std::vector<int64_t> storage_shape;  // contiguous buffer the view reads
  std::vector<int64_t> shape, strides;
};

TEST(FingerprintParts, DeviceAndHostPathsAgreeOnViews) {
  const std::vector<Case> cases = {
      {"contiguous small", {6, 7}, {6, 7}, {7, 1}},
      {"transposed", {6, 7}, {7, 6}, {1, 7}},
      {"strided slice", {40, 30}, {20, 10}, {60, 3}},
      {"broadcast (zero stride)", {30}, {50, 30}, {0, 1}},
      {"large, sampled grid", {300, 400}, {300, 400}, {400, 1}},
      {"large permuted 3-d", {64, 48, 40}, {40, 64, 48}, {1, 1920, 40}},
      {"scalar", {1}, {}, {}},
      {"size-1 axes", {5}, {1, 5, 1}, {5, 1, 1}},
      {"empty", {4}, {0, 4}, {4, 1}},
  };
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(2.f, 3.f);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    int64_t n = 1;
    for (int64_t s : c.storage_shape) n *= s;
    std::vector<float> storage(static_cast<size_t>(n));
    for (float& x : storage) x = dist(rng);
    auto host = ComputeFingerprint(TensorBuffer{storage.data(), DType::kFloat32, c.shape, c.strides}, Options());
    ASSERT_TRUE(host.ok()) << host.status().message();
    const DeviceValueRequest request = MakeDeviceValueRequest(c.shape, Options());
    const std::vector<double> logical = Logical(storage, c.shape, c.strides);
    for (int64_t block : {int64_t{1000}, int64_t{1} << 22}) {
      auto device = FingerprintFromParts(DType::kFloat32, request, DeviceParts(logical, request, block), Options());
      ASSERT_TRUE(device.ok()) << device.status().message();
      ExpectSame(*host, *device);
    }
  }
}

TEST(FingerprintParts, NonFiniteValuesAreCountedAlike) {
  std::vector<float> v(5000);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (float& x : v) x = dist(rng);
  v[7] = std::numeric_limits<float>::quiet_NaN();
  v[1200] = std::numeric_limits<float>::infinity();
  v[4999] = -std::numeric_limits<float>::infinity();
  const std::vector<int64_t> shape = {50, 100};
  auto host = ComputeFingerprint(TensorBuffer{v.data(), DType::kFloat32, shape, {}}, Options());
  ASSERT_TRUE(host.ok());
  const DeviceValueRequest request = MakeDeviceValueRequest(shape, Options());
  auto device = FingerprintFromParts(DType::kFloat32, request, DeviceParts(Logical(v, shape, {100, 1}), request, 777),
                                     Options());
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ(device->invariant.nan_count, 1);
  EXPECT_EQ(device->invariant.pos_inf_count, 1);
  EXPECT_EQ(device->invariant.neg_inf_count, 1);
  ExpectSame(*host, *device);
}

TEST(FingerprintParts, TheGridIsTheHostGridInLogicalOrder) {
  // A transposed view's request is the request of its shape: offsets are
  // logical, so the device never needs the strides.
  const DeviceValueRequest a = MakeDeviceValueRequest({300, 400}, Options());
  ASSERT_EQ(a.axis_offsets.size(), 2u);
  EXPECT_EQ(a.grid_elements, static_cast<int64_t>(a.axis_offsets[0].size() * a.axis_offsets[1].size()));
  EXPECT_LE(a.grid_elements, Options().exact_max_elements);
  for (int64_t off : a.axis_offsets[0]) EXPECT_EQ(off % 400, 0);
  for (int64_t off : a.axis_offsets[1]) EXPECT_LT(off, 400);
  // Small tensors are gathered whole.
  const DeviceValueRequest b = MakeDeviceValueRequest({6, 7}, Options());
  EXPECT_EQ(b.grid_elements, 42);
  const DeviceValueRequest empty = MakeDeviceValueRequest({0, 4}, Options());
  EXPECT_EQ(empty.grid_elements, 0);
  const DeviceValueRequest scalar = MakeDeviceValueRequest({}, Options());
  EXPECT_EQ(scalar.grid_elements, 1);
  EXPECT_TRUE(scalar.axis_offsets.empty());
}

TEST(FingerprintParts, PartsThatCannotBeTheTensorsAreRefused) {
  std::vector<float> v(42, 1.5f);
  const std::vector<int64_t> shape = {6, 7};
  const DeviceValueRequest request = MakeDeviceValueRequest(shape, Options());
  const DeviceValueParts good = DeviceParts(Logical(v, shape, {7, 1}), request, 10);
  ASSERT_TRUE(FingerprintFromParts(DType::kFloat32, request, good, Options()).ok());

  DeviceValueParts short_blocks = good;
  short_blocks.blocks.pop_back();
  auto r1 = FingerprintFromParts(DType::kFloat32, request, short_blocks, Options());
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("the blocks hold"), std::string::npos) << r1.status().message();

  DeviceValueParts short_grid = good;
  short_grid.grid_values.pop_back();
  auto r2 = FingerprintFromParts(DType::kFloat32, request, short_grid, Options());
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("grid values"), std::string::npos);

  DeviceValueParts bad_counts = good;
  bad_counts.blocks[0].nan_count = bad_counts.blocks[0].count + 1;
  EXPECT_FALSE(FingerprintFromParts(DType::kFloat32, request, bad_counts, Options()).ok());
}

}  // namespace
}  // namespace magneton
