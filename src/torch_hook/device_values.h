// --values for tensors outside host memory (docs/TRACE_FORMAT.md, "Device
// fingerprints"): the fingerprint's parts are computed where the values live
// with ATen ops issued from C++ — fp64 block reductions and an indexed
// gather of the host fingerprint's sample grid, on a side stream on CUDA —
// and only those scalars and grid values are copied back, never the tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <string_view>

#include "magneton/recorder.h"
#include "magneton/status.h"

namespace magneton {

// Which tensors take the device path:
//   kAuto  (default) tensors on a device; host tensors are read in place;
//   kAll   host tensors too: the device code run on CPU tensors (tests, and
//          a check of the device path where no GPU is);
//   kOff   none: device tensors are not fingerprinted (as before the device path).
// MAGNETON_DEVICE_FINGERPRINTS=auto|all|off sets it at each install().
enum class DeviceFingerprintMode { kAuto, kAll, kOff };
StatusOr<DeviceFingerprintMode> ParseDeviceFingerprintMode(std::string_view text);
std::string_view DeviceFingerprintModeName(DeviceFingerprintMode mode);
void SetDeviceFingerprintMode(DeviceFingerprintMode mode);
DeviceFingerprintMode GetDeviceFingerprintMode();

enum class ValuePath { kNone, kHost, kDevice };
std::string_view ValuePathName(ValuePath path);
// The one choice --values makes for a tensor: read in place (host), through
// the device reader, or not at all (no storage, no data yet, a Python
// tensor subclass whose ops would re-enter Python, a nested tensor).
ValuePath SelectValuePath(const at::Tensor& t);

// The reader the recorder calls for a device tensor (recorder.h). Borrowed:
// valid while the tensor it was made for is.
class TorchDeviceValues final : public DeviceValueReader {
 public:
  explicit TorchDeviceValues(const at::Tensor& tensor) : tensor_(tensor) {}
  Status ReadParts(const DeviceValueRequest& request, DeviceValueParts* parts) const override;

 private:
  const at::Tensor& tensor_;
};

// While a CUDA graph is being captured anywhere in the process, reading
// values would synchronise a capturing stream and break the user's capture:
// the reader answers Unavailable (counted as skipped). The Python side
// brackets torch.cuda.CUDAGraph.capture_begin/capture_end with these.
void NoteGraphCaptureBegin();
void NoteGraphCaptureEnd();
int GraphCapturesInProgress();

// Whether the reader runs on a side stream for a tensor on `device` (CUDA
// and ROCm tensors: both are DeviceType::CUDA in torch), else on the
// device's current stream (CPU has none).
bool UsesSideStream(const c10::Device& device);

}  // namespace magneton
