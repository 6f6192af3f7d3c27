#include "torch_hook/value_functions.h"

#include <ATen/ATen.h>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings/status_exception.h"
#include "fingerprint/fingerprint.h"
#include "magneton/recorder.h"
#include "torch_hook/device_values.h"
#include "torch_hook/torch_names.h"

namespace nb = nanobind;

namespace magneton {
namespace {

// A tensor over memory a Python tensor owns (it stays alive during the
// call): what the hook would see of it, without linking torch's Python API.
StatusOr<at::Tensor> TensorOver(int64_t data_ptr, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& strides, const std::string& dtype,
                                const std::string& device) {
  MAGNETON_ASSIGN_OR_RETURN(c10::ScalarType type, DtypeFromName(dtype));
  if (strides.size() != shape.size()) return InvalidArgument("strides and shape differ in rank");
  try {
    // No data (a meta tensor, an empty one): a tensor like it, which holds none either.
    if (data_ptr == 0) {
      return at::empty_strided(shape, strides, at::TensorOptions().dtype(type).device(c10::Device(device)));
    }
    return at::from_blob(reinterpret_cast<void*>(data_ptr), shape, strides,
                         at::TensorOptions().dtype(type).device(c10::Device(device)));
  } catch (const std::exception& e) {
    std::string what = e.what();
    return InvalidArgument("cannot view the tensor: " + what.substr(0, what.find('\n')));
  }
}

// The encoded fingerprint --values would record for `t`, by one path.
StatusOr<std::string> FingerprintByPath(const at::Tensor& t, const std::string& path) {
  const std::string dtype(DtypeName(t.scalar_type()));
  const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  if (path == "device") return Recorder::EncodeDeviceValueFingerprint(TorchDeviceValues(t), dtype, shape);
  if (path != "host") return InvalidArgument("path must be 'host' or 'device', not '" + path + "'");
  if (!t.device().is_cpu()) return InvalidArgument("the host path reads host memory; this tensor is on " + t.device().str());
  MAGNETON_ASSIGN_OR_RETURN(DType parsed, ParseDType(dtype));
  TensorBuffer buffer;
  buffer.data = t.data_ptr();
  buffer.dtype = parsed;
  buffer.shape = shape;
  buffer.strides.assign(t.strides().begin(), t.strides().end());
  return Recorder::EncodeValueFingerprint(buffer);
}

nb::dict ToDict(const Fingerprint& fp) {
  nb::dict d;
  const LayoutInvariantPart& v = fp.invariant;
  d["element_count"] = v.element_count;
  d["nan_count"] = v.nan_count;
  d["pos_inf_count"] = v.pos_inf_count;
  d["neg_inf_count"] = v.neg_inf_count;
  d["mean"] = v.mean;
  d["variance"] = v.variance;
  d["skewness"] = v.skewness;
  d["kurtosis"] = v.kurtosis;
  d["min"] = v.min;
  d["max"] = v.max;
  d["quantiles"] = std::vector<double>(v.quantiles.begin(), v.quantiles.end());
  d["quantile_sample_size"] = v.quantile_sample_size;
  d["strong"] = fp.strong.present;
  std::vector<std::vector<double>> marginals, spectra;
  for (const AxisMarginal& m : fp.strong.marginals) marginals.push_back(m.chunk_sums);
  for (const UnfoldingSpectrum& s : fp.strong.spectra) spectra.push_back(s.singular_values);
  d["marginals"] = marginals;
  d["spectra"] = spectra;
  return d;
}

StatusOr<Fingerprint> Decode(const nb::bytes& data, const std::string& kind) {
  return DecodeFingerprint(kind, std::string_view(static_cast<const char*>(data.data()), data.size()));
}

}  // namespace

void DefineValueFunctions(nb::module_& m) {
  m.def(
      "set_device_fingerprints",
      [](const std::string& mode) {
        auto parsed = ParseDeviceFingerprintMode(mode);
        ThrowIfError(parsed.status());
        SetDeviceFingerprintMode(*parsed);
      },
      nb::arg("mode"),
      "Which tensors --values fingerprints where they live: 'auto' (device tensors), 'all' (CPU tensors too, "
      "through the device code), 'off' (device tensors are not fingerprinted).");
  m.def("device_fingerprints", [] { return std::string(DeviceFingerprintModeName(GetDeviceFingerprintMode())); });
  m.def(
      "note_graph_capture", [](bool begin) { begin ? NoteGraphCaptureBegin() : NoteGraphCaptureEnd(); },
      nb::arg("begin"), "Brackets a CUDA graph capture: device fingerprints are skipped (and counted) meanwhile.");
  m.def("graph_captures_in_progress", &GraphCapturesInProgress);
  m.def(
      "value_path",
      [](int64_t data_ptr, std::vector<int64_t> shape, std::vector<int64_t> strides, const std::string& dtype,
         const std::string& device) {
        auto tensor = TensorOver(data_ptr, shape, strides, dtype, device);
        ThrowIfError(tensor.status());
        std::string out(ValuePathName(SelectValuePath(*tensor)));
        if (out == "device" && UsesSideStream(tensor->device())) out += " (side stream)";
        return out;
      },
      nb::arg("data_ptr"), nb::arg("shape"), nb::arg("strides"), nb::arg("dtype"), nb::arg("device"),
      "The path --values takes for a tensor: 'host', 'device', 'device (side stream)' or 'none' "
      "(magneton.recorders.torch_values.value_path takes the tensor).");
  m.def(
      "fingerprint_values",
      [](int64_t data_ptr, std::vector<int64_t> shape, std::vector<int64_t> strides, const std::string& dtype,
         const std::string& device, const std::string& path) {
        StatusOr<std::string> encoded = [&]() -> StatusOr<std::string> {
          nb::gil_scoped_release release;
          MAGNETON_ASSIGN_OR_RETURN(at::Tensor t, TensorOver(data_ptr, shape, strides, dtype, device));
          return FingerprintByPath(t, path);
        }();
        ThrowIfError(encoded.status());
        return nb::bytes(encoded->data(), encoded->size());
      },
      nb::arg("data_ptr"), nb::arg("shape"), nb::arg("strides"), nb::arg("dtype"), nb::arg("device"),
      nb::arg("path"), "The encoded (mfp3) fingerprint --values would record, through path 'host' or 'device'.");
  m.def(
      "decode_fingerprint",
      [](const nb::bytes& data, const std::string& kind) {
        auto fp = Decode(data, kind);
        ThrowIfError(fp.status());
        return ToDict(*fp);
      },
      nb::arg("data"), nb::arg("kind") = std::string(kFingerprintKind),
      "A fingerprint's fields, as a dict (kind: the fingerprints row's, 'mfp3', 'mfp2' or 'mfp1').");
  m.def(
      "compare_fingerprints",
      [](const nb::bytes& a, const nb::bytes& b, double epsilon) {
        auto fa = Decode(a, std::string(kFingerprintKind));
        ThrowIfError(fa.status());
        auto fb = Decode(b, std::string(kFingerprintKind));
        ThrowIfError(fb.status());
        const EquivalenceVerdict v = CompareFingerprints(*fa, *fb, epsilon);
        return nb::make_tuple(v.equivalent, v.reason);
      },
      nb::arg("a"), nb::arg("b"), nb::arg("epsilon"),
      "(equivalent, reason) at tolerance epsilon, as `magneton match` decides (docs/MATCHING.md).");
}

}  // namespace magneton
