// Op arguments as JSON (trace/op_args.h): what the writer emits for tricky
// values, that the reader gives back exactly that, and that bad documents
// are refused with the reason.
#include "trace/op_args.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace magneton {
namespace {

using nlohmann::json;

json MustParse(const std::string& text) {
  auto parsed = ParseOpArgs(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message() << " in " << text;
  return parsed.ok() ? *parsed : json();
}

std::string ParseError(const std::string& text) {
  auto parsed = ParseOpArgs(text);
  EXPECT_FALSE(parsed.ok()) << text << " was accepted";
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().message();
}

TEST(OpArgs, TrickyValuesRoundTripExactly) {
  std::string out;
  OpArgsWriter w(&out);
  w.BeginList();
  w.Tensor(0);
  w.String(R"(it's "quoted", with, commas \ and a
newline)");
  w.BeginList();  // nested lists, an empty one and None inside
  w.Int(1);
  w.BeginList();
  w.Int(-2);
  w.BeginList();
  w.EndList();
  w.EndList();
  w.Null();
  w.EndList();
  w.Null();
  w.Int(-7);
  w.Int(std::numeric_limits<int64_t>::min());
  w.Int(std::numeric_limits<int64_t>::max());
  w.Float(1e-12);
  w.Float(1.0);
  w.Float(-0.0);
  w.Float(std::numeric_limits<double>::infinity());
  w.Float(-std::numeric_limits<double>::infinity());
  w.Float(std::nan(""));
  w.Bool(true);
  w.Typed(kArgDtype, "float32");
  w.Typed(kArgMemoryFormat, "channels_last");
  w.Typed(kArgLayout, "strided");
  w.Typed(kArgDevice, "cuda:0");
  w.Complex(1.5, -std::numeric_limits<double>::infinity());
  w.Tensor(3);
  w.EndList();
  EXPECT_EQ(out,
            R"([{"t":0},"it's \"quoted\", with, commas \\ and a\nnewline",[1,[-2,[]],null],null,-7,)"
            R"(-9223372036854775808,9223372036854775807,1e-12,1.0,-0.0,{"float":"inf"},{"float":"-inf"},)"
            R"({"float":"nan"},true,{"dtype":"float32"},{"memory_format":"channels_last"},{"layout":"strided"},)"
            R"({"device":"cuda:0"},{"complex":[1.5,{"float":"-inf"}]},{"t":3}])");

  json args = MustParse(out);
  ASSERT_EQ(args.size(), 20u);
  EXPECT_EQ(KindOf(args[0]), ArgKind::kTensor);
  EXPECT_EQ(TensorSlot(args[0]), 0);
  EXPECT_EQ(args[1].get<std::string>(), "it's \"quoted\", with, commas \\ and a\nnewline");
  EXPECT_EQ(KindOf(args[2]), ArgKind::kList);
  EXPECT_EQ(args[2][1][0].get<int64_t>(), -2);
  EXPECT_TRUE(args[2][1][1].empty());
  EXPECT_EQ(KindOf(args[2][2]), ArgKind::kNull);
  EXPECT_EQ(KindOf(args[3]), ArgKind::kNull);
  EXPECT_EQ(args[4].get<int64_t>(), -7);
  EXPECT_EQ(args[5].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(args[6].get<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(KindOf(args[7]), ArgKind::kFloat);
  EXPECT_EQ(FloatValue(args[7]), 1e-12);  // shortest round-trip text: exact
  EXPECT_EQ(KindOf(args[8]), ArgKind::kFloat) << "1.0 must not read back as an integer";
  EXPECT_TRUE(std::signbit(FloatValue(args[9])));
  EXPECT_EQ(FloatValue(args[10]), std::numeric_limits<double>::infinity());
  EXPECT_EQ(FloatValue(args[11]), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(FloatValue(args[12])));
  EXPECT_EQ(KindOf(args[13]), ArgKind::kBool);
  EXPECT_EQ(KindOf(args[14]), ArgKind::kDtype);
  EXPECT_EQ(TypedValue(args[14]), "float32");
  EXPECT_EQ(KindOf(args[15]), ArgKind::kMemoryFormat);
  EXPECT_EQ(KindOf(args[16]), ArgKind::kLayout);
  EXPECT_EQ(KindOf(args[17]), ArgKind::kDevice);
  EXPECT_EQ(KindOf(args[18]), ArgKind::kComplex);
  EXPECT_EQ(TensorSlot(args[19]), 3);
  // The canonical text is the writer's.
  EXPECT_EQ(WriteOpArgs(args), out);
  EXPECT_EQ(FormatOpArgs(args),
            R"(%0, "it's \"quoted\", with, commas \\ and a\nnewline", [1, [-2, []], None], None, -7, )"
            R"(-9223372036854775808, 9223372036854775807, 1e-12, 1.0, -0.0, inf, -inf, nan, True, torch.float32, )"
            R"(torch.channels_last, torch.strided, device(cuda:0), complex(1.5, -inf), %3)");
}

TEST(OpArgs, StringsAreEscapedToValidJson) {
  std::string out;
  OpArgsWriter w(&out);
  w.BeginList();
  w.String(std::string("nul\0tab\tbell\x07", 13));
  w.String("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5");  // valid UTF-8 stays as it is
  w.String("cut \xE2\x82");  // a name truncated inside a character (ggml's 64-byte names)
  w.String("\xFF\xC0\x80");  // bytes that start no valid sequence, an overlong NUL
  w.EndList();
  EXPECT_EQ(out, "[\"nul\\u0000tab\\tbell\\u0007\",\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5\","
                 "\"cut \xEF\xBF\xBD\xEF\xBF\xBD\",\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"]");
  json args = MustParse(out);
  EXPECT_EQ(args[0].get<std::string>(), std::string("nul\0tab\tbell\x07", 13));
  EXPECT_EQ(args[1].get<std::string>(), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x94\xA5");
}

TEST(OpArgs, NamedParamsForOtherEngines) {
  std::string out;
  OpArgsWriter w(&out);
  w.BeginParams();
  w.Key("name");
  w.String("attn_norm-0");
  w.Key("src");
  w.BeginList();
  w.Int(1);
  w.Int(0);
  w.EndList();
  w.Key("precision");
  w.Typed(kArgRepr, "Precision.DEFAULT");
  w.EndParams();
  EXPECT_EQ(out, R"({"name":"attn_norm-0","src":[1,0],"precision":{"repr":"Precision.DEFAULT"}})");
  json args = MustParse(out);
  EXPECT_TRUE(args.is_object());
  EXPECT_EQ(args["src"][0].get<int64_t>(), 1);
  EXPECT_EQ(FormatOpArgs(args), R"(name="attn_norm-0", precision=repr(Precision.DEFAULT), src=[1, 0])");
  // A tag-like name at the top level is a parameter, not a typed value.
  EXPECT_TRUE(ParseOpArgs(R"({"t":"x","dtype":[1,2]})").ok());
}

TEST(OpArgs, EmptyTextIsNoArguments) {
  json args = MustParse("");
  EXPECT_TRUE(args.is_array());
  EXPECT_TRUE(args.empty());
  EXPECT_EQ(FormatOpArgs(args), "");
}

TEST(OpArgs, BadDocumentsAreRefusedWithTheReason) {
  EXPECT_NE(ParseError("%,%,1").find("not JSON"), std::string::npos);  // a version-1 text
  EXPECT_NE(ParseError("[1,").find("not JSON"), std::string::npos);
  EXPECT_NE(ParseError("3").find("not a list or a params object"), std::string::npos);
  EXPECT_NE(ParseError(R"(["ok",{"t":-1}])").find("args[1] has a tensor slot"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"t":2147483648}])").find("tensor slot"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"t":1.5}])").find("tensor slot"), std::string::npos);
  EXPECT_NE(ParseError(R"([[{"tensor":0}]])").find("args[0][0] has unknown tag 'tensor'"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"t":0,"dtype":"float32"}])").find("2 keys"), std::string::npos);
  EXPECT_NE(ParseError(R"([{}])").find("0 keys"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"float":"INF"}])").find("not inf, -inf or nan"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"dtype":6}])").find("not a string"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"complex":[1]}])").find("[re, im]"), std::string::npos);
  EXPECT_NE(ParseError(R"([{"complex":[1,"x"]}])").find("not a number"), std::string::npos);
  EXPECT_NE(ParseError("[18446744073709551615]").find("int64 range"), std::string::npos);
  EXPECT_NE(ParseError(R"({"name":{"t":0,"x":1}})").find("args.name"), std::string::npos);
  EXPECT_NE(ParseError("[1e999]").find("not JSON"), std::string::npos);
  std::string deep(kMaxOpArgsDepth + 1, '[');
  deep += std::string(kMaxOpArgsDepth + 1, ']');
  EXPECT_NE(ParseError(deep).find("deeper than"), std::string::npos);
  // The positive twin: the deepest allowed nesting is accepted.
  std::string ok(kMaxOpArgsDepth, '[');
  ok += std::string(kMaxOpArgsDepth, ']');
  EXPECT_TRUE(ParseOpArgs(ok).ok());
}

}  // namespace
}  // namespace magneton
