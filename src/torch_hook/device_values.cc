#include "torch_hook/device_values.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>

#include "fingerprint/value_parts.h"

namespace magneton {
namespace {

std::atomic<DeviceFingerprintMode> g_mode{DeviceFingerprintMode::kAuto};
std::atomic<int> g_captures{0};

// Values per block: nan, +inf, -inf, mean, m2, m3, m4, min, max.
constexpr int64_t kStatsPerBlock = 9;

// One side stream per device, taken from torch's pool once: every
// fingerprint of a device queues behind the previous one, never beside the
// program's own streams.
c10::Stream SideStream(const c10::Device& device) {
  static std::mutex mu;
  static std::array<std::optional<c10::Stream>, 64> streams;
  const size_t index = static_cast<size_t>(std::max<int>(device.index(), 0)) % streams.size();
  std::lock_guard<std::mutex> lock(mu);
  if (!streams[index] || streams[index]->device() != device) {
    c10::impl::VirtualGuardImpl impl(device.type());
    streams[index] = impl.getStreamFromGlobalPool(device, /*isHighPriority=*/false);
  }
  return *streams[index];
}

// The stats of one block as 9 fp64 scalars on its device (no sync).
at::Tensor BlockStats(const at::Tensor& block) {
  const at::Tensor v = block.to(at::kDouble);
  const at::Tensor finite = at::isfinite(v);
  const at::Tensor zero = at::zeros({}, v.options());
  const at::Tensor n_finite = finite.sum(at::kDouble);
  const at::Tensor mean = at::where(finite, v, zero).sum() / n_finite.clamp_min(1);
  const at::Tensor d = at::where(finite, v - mean, zero);
  const at::Tensor d2 = d * d;
  const double inf = std::numeric_limits<double>::infinity();
  return at::stack({at::isnan(v).sum(at::kDouble), at::isposinf(v).sum(at::kDouble),
                    at::isneginf(v).sum(at::kDouble), mean, d2.sum(), (d2 * d).sum(), (d2 * d2).sum(),
                    at::where(finite, v, at::full({}, inf, v.options())).min(),
                    at::where(finite, v, at::full({}, -inf, v.options())).max()});
}

// Views of `x` of at most max_elements each, together every element once.
template <typename Fn>
void ForEachBlock(const at::Tensor& x, int64_t max_elements, Fn&& fn) {
  if (x.numel() == 0) return;
  if (x.numel() <= max_elements || x.dim() == 0) {
    fn(x);
    return;
  }
  const int64_t rows = x.size(0);
  const int64_t inner = x.numel() / rows;
  if (inner > max_elements) {
    for (int64_t i = 0; i < rows; ++i) ForEachBlock(x.select(0, i), max_elements, fn);
    return;
  }
  const int64_t step = std::max<int64_t>(1, max_elements / inner);
  for (int64_t lo = 0; lo < rows; lo += step) fn(x.narrow(0, lo, std::min(step, rows - lo)));
}

// The grid's linear indices on the device: the per-axis offsets travel (a
// few hundred integers), their outer sum is formed there.
at::Tensor GridIndex(const DeviceValueRequest& request, const c10::Device& device) {
  std::vector<int64_t> flat;
  for (const auto& axis : request.axis_offsets) flat.insert(flat.end(), axis.begin(), axis.end());
  if (flat.empty()) return at::zeros({1}, at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor offsets = at::tensor(flat, at::kLong).to(device);
  const int64_t rank = static_cast<int64_t>(request.axis_offsets.size());
  at::Tensor index;
  int64_t start = 0;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t n = static_cast<int64_t>(request.axis_offsets[k].size());
    std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
    shape[k] = n;
    at::Tensor axis = offsets.narrow(0, start, n).view(shape);
    index = index.defined() ? index + axis : axis;
    start += n;
  }
  return index.reshape({-1});
}

}  // namespace

StatusOr<DeviceFingerprintMode> ParseDeviceFingerprintMode(std::string_view text) {
  if (text == "auto" || text.empty()) return DeviceFingerprintMode::kAuto;
  if (text == "all") return DeviceFingerprintMode::kAll;
  if (text == "off") return DeviceFingerprintMode::kOff;
  return InvalidArgument("device fingerprints: '" + std::string(text) + "' is not one of auto, all, off");
}

std::string_view DeviceFingerprintModeName(DeviceFingerprintMode mode) {
  switch (mode) {
    case DeviceFingerprintMode::kAll: return "all";
    case DeviceFingerprintMode::kOff: return "off";
    default: return "auto";
  }
}

void SetDeviceFingerprintMode(DeviceFingerprintMode mode) { g_mode.store(mode, std::memory_order_relaxed); }
DeviceFingerprintMode GetDeviceFingerprintMode() { return g_mode.load(std::memory_order_relaxed); }

std::string_view ValuePathName(ValuePath path) {
  switch (path) {
    case ValuePath::kHost: return "host";
    case ValuePath::kDevice: return "device";
    default: return "none";
  }
}

ValuePath SelectValuePath(const at::Tensor& t) {
  if (!t.defined() || t.layout() != c10::kStrided || !t.has_storage() || t.is_nested() || t.is_meta()) {
    return ValuePath::kNone;
  }
  // A tensor subclass (Python dispatch key): ATen ops on it would run its
  // __torch_dispatch__ from inside this hook.
  if (t.key_set().has(c10::DispatchKey::Python)) return ValuePath::kNone;
  // No data yet (fake tensors, empty allocations): nothing to read.
  if (t.storage().data() == nullptr) return ValuePath::kNone;
  const DeviceFingerprintMode mode = GetDeviceFingerprintMode();
  if (t.device().is_cpu()) return mode == DeviceFingerprintMode::kAll ? ValuePath::kDevice : ValuePath::kHost;
  return mode == DeviceFingerprintMode::kOff ? ValuePath::kNone : ValuePath::kDevice;
}

bool UsesSideStream(const c10::Device& device) { return device.is_cuda(); }

void NoteGraphCaptureBegin() { g_captures.fetch_add(1, std::memory_order_acq_rel); }
void NoteGraphCaptureEnd() {
  int now = g_captures.load(std::memory_order_acquire);
  while (now > 0 && !g_captures.compare_exchange_weak(now, now - 1, std::memory_order_acq_rel)) {
  }
}
int GraphCapturesInProgress() { return g_captures.load(std::memory_order_acquire); }

Status TorchDeviceValues::ReadParts(const DeviceValueRequest& request, DeviceValueParts* parts) const {
  if (GraphCapturesInProgress() > 0) {
    return Unavailable("a CUDA graph is being captured: reading values now would break the capture");
  }
  try {
    // Our own ops are not the program's: not recorded (by this hook or a
    // profiler), not differentiated, not autocast, not seen by Python
    // dispatch modes.
    at::RecordFunctionGuard no_record_function(false);
    c10::InferenceMode no_autograd;
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    c10::impl::ExcludeDispatchKeyGuard no_python(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));

    const c10::Device device = tensor_.device();
    c10::OptionalStreamGuard on_side_stream;
    if (UsesSideStream(device)) {
      // The side stream waits for the work queued so far on the current
      // stream (the op that made the value), then runs beside the program's.
      c10::impl::VirtualGuardImpl impl(device.type());
      const c10::Stream producer = impl.getStream(device);
      const c10::Stream side = SideStream(device);
      c10::Event ready(device.type());
      ready.record(producer);
      ready.block(side);
      on_side_stream.reset_stream(side);
    }
    const at::Tensor x = tensor_.detach();
    std::vector<at::Tensor> stats;
    std::vector<int64_t> counts;
    ForEachBlock(x, std::max<int64_t>(request.max_block_elements, 1), [&](const at::Tensor& block) {
      stats.push_back(BlockStats(block));
      counts.push_back(block.numel());
    });
    std::vector<at::Tensor> pieces;
    if (!stats.empty()) pieces.push_back(at::stack(stats).reshape({-1}));
    if (request.grid_elements > 0) pieces.push_back(at::take(x, GridIndex(request, device)).to(at::kDouble));
    parts->blocks.clear();
    parts->grid_values.clear();
    if (pieces.empty()) return Status::Ok();
    // One copy back (it waits for the side stream): the stats and the grid.
    const at::Tensor host = at::cat(pieces).to(at::kCPU).contiguous();
    const double* v = host.const_data_ptr<double>();
    const int64_t stats_values = static_cast<int64_t>(stats.size()) * kStatsPerBlock;
    if (host.numel() != stats_values + request.grid_elements) {
      return Internal("device fingerprint: " + std::to_string(host.numel()) + " values came back, expected " +
                      std::to_string(stats_values + request.grid_elements));
    }
    for (size_t b = 0; b < stats.size(); ++b) {
      const double* s = v + b * kStatsPerBlock;
      BlockMoments m;
      m.count = counts[b];
      m.nan_count = static_cast<int64_t>(s[0]);
      m.pos_inf_count = static_cast<int64_t>(s[1]);
      m.neg_inf_count = static_cast<int64_t>(s[2]);
      m.mean = s[3];
      m.m2 = s[4];
      m.m3 = s[5];
      m.m4 = s[6];
      m.min = s[7];
      m.max = s[8];
      parts->blocks.push_back(m);
    }
    parts->grid_values.assign(v + stats_values, v + stats_values + request.grid_elements);
    return Status::Ok();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Internal("device fingerprint failed: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace magneton
