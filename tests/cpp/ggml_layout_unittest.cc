// ggml node -> Magneton tensor layout: reversed dims, byte -> element
// strides, views resolved to their root allocation, names -> layer scopes.
#include <gtest/gtest.h>

#include <vector>

#include "ggml_hook/ggml_layout.h"

namespace magneton::ggml_hook {
namespace {

GgmlLayoutIn Contiguous(std::vector<int64_t> ne, uint64_t type_size = 4) {
  GgmlLayoutIn in;
  in.type_size_bytes = type_size;
  uint64_t stride = type_size;
  for (size_t i = 0; i < 4; ++i) {
    in.ne[i] = i < ne.size() ? ne[i] : 1;
    in.nb[i] = stride;
    stride *= static_cast<uint64_t>(in.ne[i]);
  }
  in.data_addr = 0x10000;
  return in;
}

std::vector<int64_t> Sizes(const TensorLayout& l) { return {l.sizes, l.sizes + l.ndim}; }
std::vector<int64_t> Strides(const TensorLayout& l) { return {l.strides, l.strides + l.ndim}; }

TEST(GgmlLayout, ReversesDimsAndDropsTrailingOnes) {
  // An activation of 7 tokens x 64 channels: ggml ne = [64, 7, 1, 1].
  TensorLayout l;
  ASSERT_TRUE(ToTensorLayout(Contiguous({64, 7}), &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{7, 64}));
  EXPECT_EQ(Strides(l), (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(l.storage_addr, 0x10000u);
  EXPECT_EQ(l.storage_offset, 0);

  // Interior size-1 dims stay (one head), trailing ones go.
  ASSERT_TRUE(ToTensorLayout(Contiguous({32, 1, 5}), &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{5, 1, 32}));
  EXPECT_EQ(Strides(l), (std::vector<int64_t>{32, 32, 1}));

  // A scalar keeps one dim.
  ASSERT_TRUE(ToTensorLayout(Contiguous({1}), &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{1}));
}

TEST(GgmlLayout, ByteStridesBecomeElementStridesPerDtype) {
  TensorLayout l;
  ASSERT_TRUE(ToTensorLayout(Contiguous({8, 3, 2}, /*f16*/ 2), &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{2, 3, 8}));
  EXPECT_EQ(Strides(l), (std::vector<int64_t>{24, 8, 1}));
}

TEST(GgmlLayout, PermutedViewKeepsRootAndOffset) {
  // Q of 2 heads x 4 dims over 5 tokens, taken out of a fused [5, 24] QKV
  // row by ggml_view_3d at byte offset 8*4 (the K part), then permuted
  // (ne [4, 5, 2], i.e. [head, token, dim] outermost first).
  GgmlLayoutIn in;
  in.type_size_bytes = 4;
  in.ne[0] = 4;  in.nb[0] = 4;       // dim within the head
  in.ne[1] = 5;  in.nb[1] = 24 * 4;  // token: one fused row
  in.ne[2] = 2;  in.nb[2] = 4 * 4;   // head
  in.ne[3] = 1;  in.nb[3] = 24 * 4 * 5;
  in.view_root_addr = 0x20000;
  in.view_offset_bytes = 8 * 4;
  in.data_addr = 0x20000 + 8 * 4;
  TensorLayout l;
  ASSERT_TRUE(ToTensorLayout(in, &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{2, 5, 4}));
  EXPECT_EQ(Strides(l), (std::vector<int64_t>{4, 24, 1}));
  EXPECT_EQ(l.storage_addr, 0x20000u);  // shared with the fused tensor
  EXPECT_EQ(l.storage_offset, 8);
}

TEST(GgmlLayout, TransposedViewHasSwappedStrides) {
  GgmlLayoutIn in = Contiguous({6, 3});
  std::swap(in.ne[0], in.ne[1]);
  std::swap(in.nb[0], in.nb[1]);
  in.view_root_addr = in.data_addr;
  TensorLayout l;
  ASSERT_TRUE(ToTensorLayout(in, &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(Strides(l), (std::vector<int64_t>{1, 6}));
}

TEST(GgmlLayout, QuantizedRowsCountElementsPerBlock) {
  // q8_0: 32 elements in 34-byte blocks; a [2, 64] matrix has 2 blocks a row.
  GgmlLayoutIn in;
  in.type_size_bytes = 34;
  in.block_elements = 32;
  in.ne[0] = 64; in.nb[0] = 34;
  in.ne[1] = 2;  in.nb[1] = 68;
  in.nb[2] = in.nb[3] = 136;
  in.data_addr = 0x30000;
  TensorLayout l;
  ASSERT_TRUE(ToTensorLayout(in, &l));
  EXPECT_EQ(Sizes(l), (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(Strides(l), (std::vector<int64_t>{64, 1}));
}

TEST(GgmlLayout, RejectsStridesThatAreNotWholeElements) {
  GgmlLayoutIn in = Contiguous({4, 4});
  in.nb[1] = 18;  // 4.5 floats
  TensorLayout l;
  EXPECT_FALSE(ToTensorLayout(in, &l));
  in = Contiguous({4, 4});
  in.view_root_addr = 0x10000;
  in.view_offset_bytes = 2;
  EXPECT_FALSE(ToTensorLayout(in, &l));
}

TEST(GgmlLayout, DtypeNames) {
  EXPECT_EQ(DtypeName("f32"), "float32");
  EXPECT_EQ(DtypeName("f16"), "float16");
  EXPECT_EQ(DtypeName("bf16"), "bfloat16");
  EXPECT_EQ(DtypeName("i32"), "int32");
  EXPECT_EQ(DtypeName("q8_0"), "ggml.q8_0");
}

TEST(GgmlLayout, LayerScopesFromNodeNames) {
  EXPECT_EQ(LayerOfNodeName("attn_norm-0"), 0);
  EXPECT_EQ(LayerOfNodeName("ffn_up-12"), 12);
  EXPECT_EQ(LayerOfNodeName("Qcur-1 (view) (permuted)"), 1);
  EXPECT_EQ(LayerOfNodeName("cache_k_l3 (view)"), 3);
  EXPECT_EQ(LayerOfNodeName("cache_k_l0 (view) (copy of Kcur-0)"), 0);
  EXPECT_EQ(LayerOfNodeName("blk.7.attn_output.weight"), 7);
  EXPECT_EQ(LayerOfNodeName("blk.x.weight"), -1);
  EXPECT_EQ(LayerOfNodeName("inp_embd"), -1);
  EXPECT_EQ(LayerOfNodeName("result_output"), -1);
  EXPECT_EQ(LayerOfNodeName("node_17"), -1);
  EXPECT_EQ(LayerOfNodeName("f32"), -1);
  EXPECT_EQ(LayerOfNodeName(""), -1);
  EXPECT_EQ(BaseNodeName("Qcur-0 (view) (permuted)"), "Qcur");
  EXPECT_EQ(BaseNodeName("result_norm"), "result_norm");
  EXPECT_EQ(BaseNodeName(" (view)"), "");
}

}  // namespace
}  // namespace magneton::ggml_hook
