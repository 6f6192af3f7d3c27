// Reading real ggml_tensor structs (from the ggml.h the hook is built
// against) into what the C ABI records, with a fake ggml function table:
// weights vs activations, host vs device buffers, views, dtypes.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ggml_hook/ggml_node.h"

namespace magneton::ggml_hook {
namespace {

// Stand-ins for buffers: only their addresses matter to the fake functions.
char g_weights_buffer, g_compute_buffer, g_device_buffer;
ggml_backend_buffer_t Buf(char* b) { return reinterpret_cast<ggml_backend_buffer_t>(b); }

GgmlApi FakeApi() {
  GgmlApi api;
  api.type_size = [](ggml_type t) -> size_t { return t == GGML_TYPE_F16 ? 2 : 4; };
  api.blck_size = [](ggml_type) -> int64_t { return 1; };
  api.type_name = [](ggml_type t) -> const char* {
    return t == GGML_TYPE_F16 ? "f16" : t == GGML_TYPE_I32 ? "i32" : "f32";
  };
  api.buffer_is_host = [](ggml_backend_buffer_t b) { return b != Buf(&g_device_buffer); };
  api.buffer_get_usage = [](ggml_backend_buffer_t b) {
    return b == Buf(&g_weights_buffer) ? GGML_BACKEND_BUFFER_USAGE_WEIGHTS : GGML_BACKEND_BUFFER_USAGE_COMPUTE;
  };
  api.buffer_name = [](ggml_backend_buffer_t) -> const char* { return "CUDA0"; };
  return api;
}

ggml_tensor Tensor(ggml_type type, std::vector<int64_t> ne, void* data, char* buffer) {
  ggml_tensor t;
  std::memset(&t, 0, sizeof(t));
  t.type = type;
  size_t stride = type == GGML_TYPE_F16 ? 2 : 4;
  for (int i = 0; i < GGML_MAX_DIMS; ++i) {
    t.ne[i] = i < static_cast<int>(ne.size()) ? ne[i] : 1;
    t.nb[i] = stride;
    stride *= static_cast<size_t>(t.ne[i]);
  }
  t.data = data;
  t.buffer = Buf(buffer);
  return t;
}

std::vector<int64_t> Sizes(const TensorDesc& d) { return {d.layout.sizes, d.layout.sizes + d.layout.ndim}; }

TEST(GgmlNode, WeightMatrixIsReversedAndMarked) {
  // wqkv of a 64-wide model: ggml ne = [64, 192] ({n_embd, 3*n_embd}).
  std::vector<float> data(64 * 192);
  ggml_tensor w = Tensor(GGML_TYPE_F32, {64, 192}, data.data(), &g_weights_buffer);
  TensorDesc d;
  ASSERT_TRUE(DescribeTensor(&w, FakeApi(), &d));
  EXPECT_EQ(Sizes(d), (std::vector<int64_t>{192, 64}));
  EXPECT_EQ(d.dtype, "float32");
  EXPECT_EQ(d.device, "cpu");
  EXPECT_TRUE(d.is_weight);
  EXPECT_EQ(d.host_data, data.data());
  magneton_tensor c = ToCTensor(d);
  EXPECT_EQ(c.ndim, 2);
  EXPECT_EQ(c.sizes[0], 192);
  EXPECT_EQ(c.strides[0], 64);
  EXPECT_EQ(c.strides[1], 1);
  EXPECT_STREQ(c.dtype, "float32");
  EXPECT_EQ(c.version, 0);
}

TEST(GgmlNode, ViewSharesItsSourceStorage) {
  std::vector<uint16_t> cache(64 * 16);
  ggml_tensor k = Tensor(GGML_TYPE_F16, {64, 16}, cache.data(), &g_compute_buffer);
  // Rows 2..5 of the cache, as ggml_view_2d(k, 64, 4, k.nb[1], 2*k.nb[1]) builds it.
  ggml_tensor v = Tensor(GGML_TYPE_F16, {64, 4}, cache.data() + 2 * 64, nullptr);
  v.nb[1] = k.nb[1];
  v.view_src = &k;
  v.view_offs = 2 * k.nb[1];
  v.op = GGML_OP_VIEW;
  TensorDesc dk, dv;
  ASSERT_TRUE(DescribeTensor(&k, FakeApi(), &dk));
  ASSERT_TRUE(DescribeTensor(&v, FakeApi(), &dv));
  EXPECT_EQ(dv.layout.storage_addr, dk.layout.storage_addr);
  EXPECT_EQ(dv.layout.storage_offset, 128);
  EXPECT_EQ(Sizes(dv), (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(dv.dtype, "float16");
  EXPECT_FALSE(dv.is_weight);  // buffer taken from the view's source
  EXPECT_EQ(dv.host_data, cache.data() + 2 * 64);
}

TEST(GgmlNode, DeviceBuffersHaveNoHostData) {
  float dummy = 0;
  ggml_tensor t = Tensor(GGML_TYPE_F32, {8, 2}, &dummy, &g_device_buffer);
  TensorDesc d;
  ASSERT_TRUE(DescribeTensor(&t, FakeApi(), &d));
  EXPECT_EQ(d.device, "cuda:0");
  EXPECT_EQ(d.host_data, nullptr);
}

TEST(GgmlNode, UnallocatedTensorsAreSkipped) {
  ggml_tensor t = Tensor(GGML_TYPE_I32, {7}, nullptr, &g_compute_buffer);
  TensorDesc d;
  EXPECT_FALSE(DescribeTensor(&t, FakeApi(), &d));
}

}  // namespace
}  // namespace magneton::ggml_hook
