// One trace as columns (report/trace_tables.h), the tables magneton.open
// hands to Python: columns in their documented order and of one length, the
// user's frame past library frames, and per-op energy in the domain with the
// most energy unless one is named, with its provenance on every row.
#include "report/trace_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace magneton::report {
namespace {

int64_t Str(Trace& t, const std::string& s) {
  t.strings.push_back(s);
  return static_cast<int64_t>(t.strings.size()) - 1;
}

// One module scope, one user line calling into a library, two ops (the
// second nested in the first), one tensor each way, and two energy domains:
// a measured package counter and an estimate with less energy.
Trace TwoOps() {
  Trace t;
  const int64_t user_file = Str(t, "/home/me/train.py");
  const int64_t lib_file = Str(t, "/usr/lib/python3/site-packages/torch/f.py");
  const int64_t step = Str(t, "step"), linear = Str(t, "linear");
  t.frames.push_back({0, user_file, 12, step});
  t.frames.push_back({1, lib_file, 99, linear});
  t.call_paths.push_back({0, 0, kNoId});  // train.py:12
  t.call_paths.push_back({1, 1, 0});      // torch/f.py:99 called from train.py:12
  const int64_t net = Str(t, "Net"), fc = Str(t, "fc"), linear_type = Str(t, "Linear");
  t.scopes.push_back({0, net, net, kNoId});
  t.scopes.push_back({1, fc, linear_type, 0});
  const int64_t linear_op = Str(t, "aten::linear"), addmm = Str(t, "aten::addmm");
  auto op = [&](int64_t id, int64_t name_id, int64_t start_ns, int64_t end_ns, int64_t parent_id) {
    OpEvent e;
    e.id = id;
    e.name_id = name_id;
    e.thread_id = 7;
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    e.parent_id = parent_id;
    e.scope_id = 1;
    e.call_path_id = 1;
    t.ops.push_back(e);
  };
  op(0, linear_op, 1000, 5000, kNoId);
  op(1, addmm, 2000, 4000, 0);  // nested in the first
  t.ops[0].args = "[1]";
  auto tensor = [&](int64_t id, std::vector<int64_t> shape, int64_t producer_op_id) {
    TensorMeta m;
    m.id = id;
    m.storage_addr = 0x1000 * static_cast<uint64_t>(id + 1);
    m.strides = {shape[1], 1};
    m.shape = std::move(shape);
    m.dtype = "float32";
    m.device = "cpu";
    m.producer_op_id = producer_op_id;
    t.tensors.push_back(m);
  };
  tensor(0, {2, 3}, kNoId);
  tensor(1, {2, 4}, 1);
  t.op_tensors = {{0, TensorRole::kInput, 0, 0}, {0, TensorRole::kOutput, 0, 1}, {1, TensorRole::kOutput, 0, 1}};
  t.config.push_back({"env.OMP_NUM_THREADS", "1", "env"});
  for (int64_t ts : {0, 6000}) {
    const double at = static_cast<double>(ts);
    t.energy_samples.push_back({"cpu-package-0", ts, at, NAN, Provenance::kMeasured, "rapl"});
    t.energy_samples.push_back({"cpu-estimate", ts, at * 0.5, NAN, Provenance::kEstimated, "estimate"});
  }
  return t;
}

const Column& Col(const Table& table, const std::string& name) {
  for (const Column& c : table) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no column " << name;
  static const Column kNone;
  return kNone;
}

template <typename T>
const std::vector<T>& Values(const Table& table, const std::string& name) {
  return std::get<std::vector<T>>(Col(table, name).values);
}

std::vector<std::string> Names(const Table& table) {
  std::vector<std::string> out;
  for (const Column& c : table) out.push_back(c.name);
  return out;
}

TEST(TraceTablesTest, OpsCarryTimesParentsScopesAndTheUsersFrame) {
  auto tables = TraceAsTables(TwoOps(), "");
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  const Table& ops = tables->ops;
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"op_id", "name", "thread_id", "start_ns", "end_ns", "duration_ns",
                                                   "self_ns", "parent_id", "scope", "user_frame", "frame", "inputs",
                                                   "outputs", "args"}));
  for (const Column& c : ops) std::visit([&](const auto& v) { EXPECT_EQ(v.size(), 2u) << c.name; }, c.values);
  EXPECT_EQ(Values<std::string>(ops, "name"), (std::vector<std::string>{"aten::linear", "aten::addmm"}));
  EXPECT_EQ(Values<int64_t>(ops, "duration_ns"), (std::vector<int64_t>{4000, 2000}));
  EXPECT_EQ(Values<int64_t>(ops, "self_ns"), (std::vector<int64_t>{2000, 2000}));  // the nested op's time excluded
  EXPECT_EQ(Values<int64_t>(ops, "parent_id"), (std::vector<int64_t>{kNoId, 0}));
  EXPECT_EQ(Values<std::string>(ops, "scope")[0], "Net/fc");
  // The innermost frame is torch's; the line a developer changes is the one that called it.
  EXPECT_EQ(Values<std::string>(ops, "frame")[0], "/usr/lib/python3/site-packages/torch/f.py:99:linear");
  EXPECT_EQ(Values<std::string>(ops, "user_frame")[0], "/home/me/train.py:12:step");
  EXPECT_EQ(Values<std::vector<int64_t>>(ops, "inputs")[0], (std::vector<int64_t>{0}));
  EXPECT_EQ(Values<std::vector<int64_t>>(ops, "outputs")[1], (std::vector<int64_t>{1}));
  EXPECT_EQ(Values<std::string>(ops, "args")[0], "[1]");

  EXPECT_EQ(Values<std::vector<int64_t>>(tables->tensors, "shape")[1], (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Values<int64_t>(tables->tensors, "producer_op_id"), (std::vector<int64_t>{kNoId, 1}));
  EXPECT_EQ(Values<std::string>(tables->config, "key"), (std::vector<std::string>{"env.OMP_NUM_THREADS"}));
}

TEST(TraceTablesTest, EnergyIsInTheLargestDomainUnlessOneIsNamedWithProvenanceOnEveryRow) {
  auto largest = TraceAsTables(TwoOps(), "");
  ASSERT_TRUE(largest.ok()) << largest.status().message();
  EXPECT_EQ(largest->energy_info.domain, "cpu-package-0");
  EXPECT_EQ(largest->energy_info.provenance, "measured");
  EXPECT_EQ(largest->energy_info.domains, (std::vector<std::string>{"cpu-estimate", "cpu-package-0"}));
  EXPECT_EQ(Values<std::string>(largest->energy, "provenance"), (std::vector<std::string>{"measured", "measured"}));
  // 1 uJ/ns; each op's own 2000 ns, the outer op's inclusive 4000 ns.
  EXPECT_NEAR(Values<double>(largest->energy, "energy_uj")[0], 2000, 1e-6);
  EXPECT_NEAR(Values<double>(largest->energy, "inclusive_uj")[0], 4000, 1e-6);

  auto estimate = TraceAsTables(TwoOps(), "cpu-estimate");
  ASSERT_TRUE(estimate.ok()) << estimate.status().message();
  EXPECT_EQ(estimate->energy_info.provenance, "estimated");
  EXPECT_EQ(Values<std::string>(estimate->energy, "provenance"), (std::vector<std::string>{"estimated", "estimated"}));
  EXPECT_EQ(Values<std::string>(estimate->energy, "domain")[1], "cpu-estimate");
  EXPECT_NEAR(Values<double>(estimate->energy, "energy_uj")[1], 1000, 1e-6);

  auto missing = TraceAsTables(TwoOps(), "gpu-0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(),
            "energy domain 'gpu-0' is not in this trace (it has: cpu-estimate, cpu-package-0)");
}

TEST(TraceTablesTest, ATraceWithoutSamplesHasAnEmptyEnergyTableAndSaysWhy) {
  Trace t = TwoOps();
  t.energy_samples.clear();
  auto tables = TraceAsTables(t, "");
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  EXPECT_EQ(Names(tables->energy).size(), 8u);  // the columns are there, empty
  EXPECT_TRUE(Values<double>(tables->energy, "energy_uj").empty());
  EXPECT_EQ(tables->energy_info.domain, "");
  EXPECT_NE(tables->energy_info.note.find("no energy samples"), std::string::npos);
  EXPECT_EQ(Values<std::string>(tables->ops, "name").size(), 2u);  // the ops are still all there
}

}  // namespace
}  // namespace magneton::report
