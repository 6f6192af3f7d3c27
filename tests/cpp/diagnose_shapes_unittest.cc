// ShapeContrast: the same op kinds on larger inputs are named by their shapes.
#include <gtest/gtest.h>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

// One op per entry of `rows`, named `name`, reading a float32 [rows, 64].
Trace SideWith(const std::string& name, const std::vector<int64_t>& rows) {
  Trace t;
  t.strings = {name};
  for (size_t i = 0; i < rows.size(); ++i) {
    OpEvent op;
    op.id = static_cast<int64_t>(i);
    op.name_id = 0;
    t.ops.push_back(op);
    TensorMeta m;
    m.id = static_cast<int64_t>(i);
    m.shape = {rows[i], 64};
    m.dtype = "float32";
    t.tensors.push_back(m);
    t.op_tensors.push_back({op.id, TensorRole::kInput, 0, m.id});
  }
  return t;
}

TEST(DiagnoseShapes, LargerInputsOfTheSameOpsAreNamed) {
  Trace a = SideWith("aten::addmm", {128, 128}), b = SideWith("aten::addmm", {48, 48});
  const std::string s = ShapeContrast(a, {0, 1}, b, {0, 1}, 'A', 'B');
  EXPECT_NE(s.find("2.7×"), std::string::npos) << s;
  EXPECT_NE(s.find("aten::addmm reads [128, 64] where B reads [48, 64]"), std::string::npos) << s;
  EXPECT_NE(s.find("padding"), std::string::npos) << s;
}

TEST(DiagnoseShapes, SameOrSmallerInputsSayNothing) {
  Trace a = SideWith("aten::addmm", {128}), b = SideWith("aten::addmm", {128});
  EXPECT_EQ(ShapeContrast(a, {0}, b, {0}, 'A', 'B'), "");
  Trace small = SideWith("aten::addmm", {120});
  EXPECT_EQ(ShapeContrast(small, {0}, a, {0}, 'A', 'B'), "");  // the costlier side reads less: not a shape cause
}

}  // namespace
}  // namespace magneton::diagnose

namespace magneton::diagnose {
namespace {

TEST(DiagnoseFrames, PassThroughFramesAreNotTheApi) {
  EXPECT_TRUE(IsPassThroughFrame(
      ParseFrame("/py/site-packages/torch/utils/_contextlib.py:124:context_decorator.<locals>.decorate_context")));
  EXPECT_TRUE(IsPassThroughFrame(ParseFrame("/py/site-packages/torch/nn/modules/module.py:1784:_call_impl")));
  EXPECT_TRUE(IsPassThroughFrame(ParseFrame("/usr/lib/python3.11/functools.py:50:wrapper")));
  EXPECT_FALSE(IsPassThroughFrame(ParseFrame("/py/site-packages/transformers/generation/utils.py:2100:generate")));
  EXPECT_FALSE(IsPassThroughFrame(ParseFrame("/py/site-packages/jax/_src/scipy/linalg.py:312:expm")));
  EXPECT_FALSE(IsPassThroughFrame(ParseFrame("/x/model.py:10:wrapper_config")));  // a name, not a suffix match
}

}  // namespace
}  // namespace magneton::diagnose
