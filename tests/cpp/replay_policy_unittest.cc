// Which op names `magneton replay` calls (replay/replay_policy.h): a trace
// names its ops, and a name is data — aten::from_file, c10d and the profiler
// are refused however a trace spells them.
#include <gtest/gtest.h>

#include <string>

#include "replay/replay_policy.h"

namespace magneton::replay {
namespace {

TEST(ReplayPolicy, PlainATenKernelsAreReplayed) {
  for (const char* name : {"aten::addmm", "aten::add.Tensor", "aten::mm", "aten::gelu", "aten::_softmax",
                           "aten::_to_copy", "aten::_foreach_add_.List", "aten::copy_", "aten::add_.Tensor",
                           "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::empty.memory_format"}) {
    EXPECT_TRUE(CheckReplayOpName(name).ok()) << name << ": " << CheckReplayOpName(name).message();
  }
}

TEST(ReplayPolicy, OpsThatReachOutsideTheirTensorsAreRefusedWithTheNameAndWhy) {
  for (const char* name :
       {"aten::from_file", "aten::_nested_from_file", "aten::_print", "aten::record_stream", "aten::_assert_async",
        "aten::_assert_async.msg", "aten::set_.source_Storage", "aten::_local_scalar_dense",
        "aten::_record_function_enter", "aten::_cudnn_init_dropout_state", "aten::wait", "aten::save"}) {
    const Status s = CheckReplayOpName(name);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << name;
    EXPECT_EQ(s.message().rfind(std::string(kRefusedPrefix) + name + ": ", 0), 0u) << s.message();
  }
}

TEST(ReplayPolicy, OnlyTheATenNamespace) {
  for (const char* name : {"c10d::allreduce_", "profiler::_record_function_enter_new", "prims::add", "foo::bar",
                           "torchvision::nms", "from_file", "aten::", "Aten::add"}) {
    const Status s = CheckReplayOpName(name);
    EXPECT_FALSE(s.ok()) << name;
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
}

TEST(ReplayPolicy, StringsOnlyForEnumLikeParameters) {
  EXPECT_TRUE(ReplayAllowsStringArg("gelu", "approximate", "tanh"));
  EXPECT_TRUE(ReplayAllowsStringArg("div", "rounding_mode", "floor"));
  EXPECT_TRUE(ReplayAllowsStringArg("einsum", "equation", "bij,bjk->bik"));
  EXPECT_FALSE(ReplayAllowsStringArg("from_file", "filename", "x"));
  EXPECT_FALSE(ReplayAllowsStringArg("gelu", "approximate", "/home/user/.ssh/id_rsa"));
  EXPECT_FALSE(ReplayAllowsStringArg("gelu", "other", "tanh"));
  EXPECT_FALSE(ReplayAllowsStringArg("einsum", "equation", std::string(100, 'a')));
}

}  // namespace
}  // namespace magneton::replay
