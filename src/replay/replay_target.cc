#include "replay/replay_target.h"

#include <algorithm>

#include "trace/op_args.h"

namespace magneton::replay {
namespace {

// "cuda" (the current device, which torch's replay process leaves at 0) is cuda:0.
std::string Canonical(const std::string& device) {
  if (device.find(':') == std::string::npos && device != "cpu" && device != "meta") return device + ":0";
  return device;
}

void CollectArgDevices(const nlohmann::json& node, std::vector<std::string>* out) {
  if (node.is_array()) {
    for (const auto& item : node) CollectArgDevices(item, out);
  } else if (KindOf(node) == ArgKind::kDevice) {
    out->push_back(TypedValue(node));
  }
}

}  // namespace

bool IsDeviceDomain(const std::string& domain) { return domain.rfind("gpu-", 0) == 0; }

StatusOr<ReplayTarget> SelectReplayTarget(const PlannedOp& op) {
  std::vector<std::string> devices;
  for (const PlannedInput& in : op.inputs) devices.push_back(in.device);
  // Ops without a device input make their tensors on the device they name
  // (aten::empty, randn, arange with device=cuda:0).
  if (auto args = ParseOpArgs(op.args); args.ok()) CollectArgDevices(*args, &devices);
  ReplayTarget target;
  for (const std::string& raw : devices) {
    const std::string d = Canonical(raw);
    if (d == "cpu" || d == "meta" || d.empty()) continue;  // a CPU scalar beside GPU tensors is still a GPU op
    if (target.on_device && d != target.device) {
      return InvalidArgument(op.name + ": tensors on two devices (" + target.device + ", " + d +
                             "); replay runs an op on one");
    }
    target.device = d;
    target.on_device = true;
  }
  if (target.on_device && target.device.rfind("cuda:", 0) == 0) {
    target.device_domain = "gpu-" + target.device.substr(5);
    target.want_graph = true;
  }
  return target;
}

double MinEnergyDeltaUj(const std::string& meter_names) {
  double step_uj = 0;
  auto has = [&](const char* name) { return meter_names.find(name) != std::string::npos; };
  if (has("rapl") || has("perf-power")) step_uj = std::max(step_uj, 61.0);
  if (has("nvml")) step_uj = std::max(step_uj, 1000.0);
  return 100 * step_uj;
}

}  // namespace magneton::replay
