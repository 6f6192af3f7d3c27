#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "magneton/trace_reader.h"
#include "report/chrome_export.h"
#include "test_util.h"

namespace magneton {
namespace {

TEST(ChromeExport, EmitsCompleteEventsPerfettoCanLoad) {
  auto trace = ReadTrace(testing::WriteSampleTrace("run.mtrace", 4));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::ostringstream out;
  ASSERT_TRUE(WriteChromeTrace(*trace, out).ok());
  auto doc = nlohmann::json::parse(out.str());
  ASSERT_TRUE(doc.contains("traceEvents"));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  int complete = 0, metadata = 0;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e["pid"].is_number_integer());
    ASSERT_TRUE(e["tid"].is_number_integer());
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e["ts"].is_number());
      EXPECT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["name"] == "aten::linear" || e["name"] == "aten::addmm");
      EXPECT_EQ(e["args"]["scope"], "Net/fc");
      EXPECT_EQ(e["args"]["source"], "model.py:20:forward");
    } else if (e["ph"] == "M") {
      ++metadata;
    }
  }
  EXPECT_EQ(complete, 8);
  EXPECT_GE(metadata, 2);  // process and thread names
}

}  // namespace
}  // namespace magneton
