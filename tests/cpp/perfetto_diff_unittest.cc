// `magneton export --perfetto-diff` on a recorded pair (tests/cpp/diff_fixture.h:
// the fused side A wastes energy against the decomposed side B) run through
// the analysis session as `magneton diff` runs it: the document's processes,
// region slices and their findings, flow pairs, the shared time axis, and
// the energy counter tracks with their provenance in the name.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analysis/session_data.h"
#include "diff_fixture.h"
#include "magneton/analysis.h"
#include "report/chrome_export.h"
#include "report/perfetto_diff.h"
#include "test_util.h"

namespace magneton {
namespace {

using nlohmann::json;

json ExportDiff(testing::Side a, testing::Side b) {
  auto data = std::make_unique<analysis::SessionData>();
  data->a.push_back({a.path, std::move(a.trace), std::move(a.fps)});
  data->b.push_back({b.path, std::move(b.trace), std::move(b.fps)});
  auto session = AnalysisSession::FromData(std::move(data));
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (!session.ok()) return nullptr;
  Status st = (*session)->Diff();
  EXPECT_TRUE(st.ok()) << st.message();
  std::ostringstream out;
  st = report::WritePerfettoDiff((*session)->data().report_input(), out);
  EXPECT_TRUE(st.ok()) << st.message();
  return json::parse(out.str());
}

json FusedVsDecomposed() {
  return ExportDiff(testing::Record("fused.mtrace", true, false), testing::Record("decomposed.mtrace", false, false));
}

std::vector<json> Events(const json& doc, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == ph) out.push_back(e);
  }
  return out;
}

TEST(PerfettoDiff, TwoProcessesLabelledAAndB) {
  json doc = FusedVsDecomposed();
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::map<int64_t, std::string> names;
  for (const json& e : Events(doc, "M")) {
    if (e["name"] == "process_name") names[e["pid"].get<int64_t>()] = e["args"]["name"];
  }
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[1].rfind("A: ", 0), 0u) << names[1];
  EXPECT_EQ(names[2].rfind("B: ", 0), 0u) << names[2];
  // Every op of both runs is a slice of its process.
  std::map<int64_t, int> op_slices;
  for (const json& e : Events(doc, "X")) {
    if (e["cat"] == "op") ++op_slices[e["pid"].get<int64_t>()];
  }
  EXPECT_EQ(op_slices[1], 3);  // fused: linear, linear, relu
  EXPECT_EQ(op_slices[2], 5);  // decomposed: mm, add, mm, add, relu
}

TEST(PerfettoDiff, RegionSlicesCarryTheFindingOnBothSides) {
  json doc = FusedVsDecomposed();
  std::map<int64_t, std::vector<json>> regions;  // pid -> slices
  for (const json& e : Events(doc, "X")) {
    if (e["cat"] == "region") regions[e["pid"].get<int64_t>()].push_back(e);
  }
  ASSERT_FALSE(regions[1].empty());
  ASSERT_EQ(regions[1].size(), regions[2].size());
  const std::set<std::string> verdicts = {"waste", "trade_off", "inconclusive", "equal"};
  bool waste_on_a = false;
  for (const auto& [pid, slices] : regions) {
    for (const json& s : slices) {
      const json& args = s["args"];
      EXPECT_TRUE(verdicts.count(args["verdict"].get<std::string>())) << args.dump();
      EXPECT_EQ(args["side"], pid == 1 ? "A" : "B");
      EXPECT_EQ(args["energy_provenance"], "estimated");
      EXPECT_EQ(args["energy_domain"], "cpu-estimate");
      EXPECT_TRUE(args["energy_a_uj"].is_number());
      EXPECT_TRUE(args["energy_b_uj"].is_number());
      EXPECT_TRUE(args.contains("energy_ratio_interval"));
      EXPECT_TRUE(args.contains("root_cause"));
      EXPECT_EQ(s["name"].get<std::string>().rfind("#" + std::to_string(args["rank"].get<int>()) + " ", 0), 0u);
      if (pid == 1 && args["verdict"] == "waste") {
        waste_on_a = true;
        EXPECT_EQ(args["costlier_side"], "A");
        EXPECT_GT(args["energy_a_uj"].get<double>(), args["energy_b_uj"].get<double>());
        EXPECT_GT(args["energy_ratio"].get<double>(), 1.0);
      }
    }
  }
  EXPECT_TRUE(waste_on_a);
  // Slices on one region track never overlap in part (a track's slices must nest).
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& [pid, slices] : regions) {
    for (const json& s : slices) {
      tracks[{pid, s["tid"].get<int64_t>()}].push_back(
          {s["ts"].get<double>(), s["ts"].get<double>() + s["dur"].get<double>()});
    }
  }
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first);
  }
  EXPECT_EQ(doc["otherData"]["regions"]["instance_pairs_drawn"].get<size_t>(), regions[1].size());
}

TEST(PerfettoDiff, FlowsLinkEachRegionToItsPartner) {
  json doc = FusedVsDecomposed();
  std::vector<json> regions;
  for (const json& e : Events(doc, "X")) {
    if (e["cat"] == "region") regions.push_back(e);
  }
  // The region slice enclosing a flow end, or null.
  auto enclosing = [&](const json& flow) -> const json* {
    for (const json& r : regions) {
      const double ts = flow["ts"].get<double>(), start = r["ts"].get<double>();
      if (r["pid"] == flow["pid"] && r["tid"] == flow["tid"] && start <= ts && ts <= start + r["dur"].get<double>()) {
        return &r;
      }
    }
    return nullptr;
  };
  std::map<int64_t, json> starts, finishes;
  for (const json& e : Events(doc, "s")) starts[e["id"].get<int64_t>()] = e;
  for (const json& e : Events(doc, "f")) finishes[e["id"].get<int64_t>()] = e;
  ASSERT_FALSE(starts.empty());
  ASSERT_EQ(starts.size(), finishes.size());
  EXPECT_EQ(starts.size(), regions.size() / 2);
  for (const auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id)) << "flow " << id << " has no end";
    const json& f = finishes[id];
    EXPECT_EQ(f["bp"], "e");
    EXPECT_EQ(s["cat"], f["cat"]);
    EXPECT_EQ(s["name"], f["name"]);
    EXPECT_NE(s["pid"], f["pid"]);  // A to B
    EXPECT_LE(s["ts"].get<double>(), f["ts"].get<double>());  // read in time order
    const json* rs = enclosing(s);
    const json* rf = enclosing(f);
    ASSERT_TRUE(rs && rf) << "flow " << id << " is not inside a region slice";
    // Both ends are the same finding's same instance.
    EXPECT_EQ((*rs)["args"]["rank"], (*rf)["args"]["rank"]);
    EXPECT_EQ((*rs)["args"]["instance"], (*rf)["args"]["instance"]);
  }
}

TEST(PerfettoDiff, BothRunsStartTheirJobAtOneInstant) {
  json doc = FusedVsDecomposed();
  const double job_ts = doc["otherData"]["job_start_ts_us"].get<double>();
  // The fixture's samples start 1 µs before the first op on both sides.
  EXPECT_DOUBLE_EQ(job_ts, 1.0);
  std::map<int64_t, double> first_op;
  for (const json& e : Events(doc, "X")) {
    if (e["cat"] != "op") continue;
    const int64_t pid = e["pid"];
    const double ts = e["ts"];
    if (!first_op.count(pid) || ts < first_op[pid]) first_op[pid] = ts;
  }
  EXPECT_DOUBLE_EQ(first_op[1], job_ts);
  EXPECT_DOUBLE_EQ(first_op[2], job_ts);
  EXPECT_NE(doc["otherData"]["time_axis"].get<std::string>().find("job start"), std::string::npos);
  for (const json& e : doc["traceEvents"]) {
    if (e.contains("ts")) EXPECT_GE(e["ts"].get<double>(), 0.0) << e.dump();
  }
}

TEST(PerfettoDiff, EnergyCounterTracksSayEstimated) {
  json doc = FusedVsDecomposed();
  std::map<int64_t, std::set<std::string>> tracks;
  for (const json& e : Events(doc, "C")) {
    const std::string name = e["name"];
    tracks[e["pid"].get<int64_t>()].insert(name);
    EXPECT_EQ(name.find("measured"), std::string::npos) << name;
    EXPECT_NE(name.find("(estimated)"), std::string::npos) << name;
    if (e["args"].contains("W")) EXPECT_NEAR(e["args"]["W"].get<double>(), 10.0, 1e-9);  // the fixture's 10 W
  }
  for (int64_t pid : {1, 2}) {
    EXPECT_TRUE(tracks[pid].count("cpu-estimate power (estimated)")) << pid;
    EXPECT_TRUE(tracks[pid].count("cpu-estimate energy (estimated)")) << pid;
  }
  EXPECT_EQ(doc["otherData"]["energy_counters"]["A"][0]["provenance"], "estimated");
}

// The single-run export draws counters too, and labels a measured domain
// measured: the label follows the samples' provenance, not the export.
TEST(ChromeExportCounters, LabelFollowsProvenance) {
  testing::Side side = testing::Record("one.mtrace", true, false);
  for (EnergySample& s : side.trace.energy_samples) s.provenance = Provenance::kMeasured;
  // A power-only estimated domain beside it: 2 W then 4 W.
  side.trace.energy_samples.push_back({"gpu-est", 1000, std::nan(""), 2000.0, Provenance::kEstimated, "scripted"});
  side.trace.energy_samples.push_back({"gpu-est", 3000, std::nan(""), 4000.0, Provenance::kEstimated, "scripted"});
  std::ostringstream out;
  ASSERT_TRUE(WriteChromeTrace(side.trace, out).ok());
  json doc = json::parse(out.str());
  std::map<std::string, std::vector<json>> by_track;
  for (const json& e : Events(doc, "C")) by_track[e["name"]].push_back(e);
  ASSERT_TRUE(by_track.count("cpu-estimate power (measured)"));
  ASSERT_TRUE(by_track.count("gpu-est power (estimated)"));
  EXPECT_FALSE(by_track.count("cpu-estimate power (estimated)"));
  EXPECT_FALSE(by_track.count("gpu-est power (measured)"));
  const auto& gpu = by_track["gpu-est power (estimated)"];
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_DOUBLE_EQ(gpu[0]["args"]["W"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(gpu[1]["args"]["W"].get<double>(), 4.0);
  // Trapezoid: (2 + 4) / 2 W over 2 µs = 6 µJ.
  const auto& gpu_energy = by_track["gpu-est energy (estimated)"];
  ASSERT_EQ(gpu_energy.size(), 2u);
  EXPECT_NEAR(gpu_energy[1]["args"]["J"].get<double>(), 6e-6, 1e-15);
  // Ops carry their attributed energy with its provenance.
  bool op_energy = false;
  for (const json& e : Events(doc, "X")) {
    if (e["args"].contains("energy")) {
      op_energy = true;
      EXPECT_EQ(e["args"]["energy"]["cpu-estimate"]["provenance"], "measured");
    }
  }
  EXPECT_TRUE(op_energy);
}

}  // namespace
}  // namespace magneton
