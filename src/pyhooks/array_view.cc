#include "pyhooks/array_view.h"

#include <cstring>
#include <string_view>
#include <unordered_map>

namespace magneton {
namespace {

// A new reference to obj.name, or null with no error set.
PyObject* Attr(PyObject* obj, const char* name) {
  PyObject* v = PyObject_GetAttrString(obj, name);
  if (!v) PyErr_Clear();
  return v;
}

bool ReadShape(PyObject* shape, std::vector<int64_t>* sizes) {
  if (!shape || !PyTuple_Check(shape)) return false;
  Py_ssize_t n = PyTuple_GET_SIZE(shape);
  sizes->resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    if (d == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    (*sizes)[static_cast<size_t>(i)] = d;
  }
  return true;
}

// dtype.name and dtype.itemsize of an array's dtype, last read for this dtype object.
struct DTypeInfo {
  PyObject* dtype = nullptr;  // held: a cached pointer cannot come back as another object
  std::string name;
  int64_t itemsize = 0;
};

// The last dtypes read (NumPy's dtypes are long-lived, and dtype.name alone
// costs ~2 µs; the call of a jitted function passes the same few over and
// over). Used with the GIL held.
DTypeInfo g_dtypes[8];
size_t g_next_dtype = 0;

// On a miss of the ring above: dtype.name by dtype class and item size. NumPy computes `name` in
// Python (numpy/_core/_dtype.py, ~15 µs a call: most of a small TF op's
// recording cost), so names are cached per dtype class and item size, which
// determine the name (NumPy 2 gives each dtype kind, ml_dtypes' bfloat16
// included, a class of its own; flexible kinds name their size). The cache is
// read and written with the GIL held. Dtype classes live as long as their module.
struct DTypeKey {
  PyTypeObject* type;
  int64_t itemsize;
  bool operator==(const DTypeKey& o) const { return type == o.type && itemsize == o.itemsize; }
};
struct DTypeKeyHash {
  size_t operator()(const DTypeKey& k) const {
    return std::hash<const void*>()(k.type) ^ (std::hash<int64_t>()(k.itemsize) << 1);
  }
};

bool ReadDType(PyObject* obj, std::string* name, int64_t* itemsize) {
  static auto* names = new std::unordered_map<DTypeKey, std::string, DTypeKeyHash>();
  PyObject* dtype = Attr(obj, "dtype");
  if (!dtype) return false;
  for (const DTypeInfo& c : g_dtypes) {
    if (c.dtype == dtype) {
      Py_DECREF(dtype);
      *name = c.name;
      *itemsize = c.itemsize;
      return true;
    }
  }
  PyObject* size = Attr(dtype, "itemsize");
  bool ok = size && PyLong_Check(size);
  if (ok) *itemsize = PyLong_AsLongLong(size);
  Py_XDECREF(size);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    ok = false;
  }
  const DTypeKey key{Py_TYPE(dtype), ok ? *itemsize : -1};
  auto it = ok ? names->find(key) : names->end();
  if (it != names->end()) {
    *name = it->second;
  } else if (ok) {
    PyObject* n = Attr(dtype, "name");
    const char* text = n && PyUnicode_Check(n) ? PyUnicode_AsUTF8(n) : nullptr;
    ok = text != nullptr;
    if (ok) {
      *name = text;
      // Not for the generic np.dtype class (a NumPy 1 dtype): its name varies within it.
      if (std::string_view(Py_TYPE(dtype)->tp_name) != "numpy.dtype") names->emplace(key, *name);
    }
    Py_XDECREF(n);
    if (PyErr_Occurred()) PyErr_Clear();
  }
  if (ok) {
    DTypeInfo& slot = g_dtypes[g_next_dtype++ % 8];
    Py_XDECREF(slot.dtype);
    Py_INCREF(dtype);
    slot = {dtype, *name, *itemsize};
  }
  Py_DECREF(dtype);
  return ok;
}

void ContiguousStrides(const std::vector<int64_t>& sizes, std::vector<int64_t>* strides) {
  strides->resize(sizes.size());
  int64_t step = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    (*strides)[i] = step;
    step *= sizes[i] > 0 ? sizes[i] : 1;
  }
}

// "cpu" for host buffers (torch's spelling, so devices compare across
// engines), else "<platform>:<id>". Sets *host when the buffer is in host memory.
// Devices live as long as the backend: the last few read are kept, held.
struct DeviceInfo {
  PyObject* device = nullptr;
  std::string name;
  bool host = false;
};
DeviceInfo g_devices[4];
size_t g_next_device = 0;

// The arrays' shardings (`_sharding`: an attribute, where `device` is a
// Python property walking the sharding's device set, ~2 µs): an executable's
// outputs share one, so the last few are kept, held, with their device.
DeviceInfo g_shardings[4];
size_t g_next_sharding = 0;

bool ReadJaxDeviceUncached(PyObject* obj, std::string* device, bool* host);

bool ReadJaxDevice(PyObject* obj, std::string* device, bool* host) {
  PyObject* sharding = PyObject_GetAttrString(obj, "_sharding");
  if (!sharding) {
    PyErr_Clear();
    return ReadJaxDeviceUncached(obj, device, host);
  }
  for (const DeviceInfo& c : g_shardings) {
    if (c.device == sharding) {
      Py_DECREF(sharding);
      *device = c.name;
      *host = c.host;
      return true;
    }
  }
  const bool ok = ReadJaxDeviceUncached(obj, device, host);
  if (ok) {
    DeviceInfo& slot = g_shardings[g_next_sharding++ % 4];
    Py_XDECREF(slot.device);
    slot = {sharding, *device, *host};  // the reference is the slot's
  } else {
    Py_DECREF(sharding);
  }
  return ok;
}

bool ReadJaxDeviceUncached(PyObject* obj, std::string* device, bool* host) {
  PyObject* dev = Attr(obj, "device");  // raises for arrays sharded over devices
  if (!dev) return false;
  for (const DeviceInfo& c : g_devices) {
    if (c.device == dev) {
      Py_DECREF(dev);
      *device = c.name;
      *host = c.host;
      return true;
    }
  }
  PyObject* platform = Attr(dev, "platform");
  PyObject* id = Attr(dev, "id");
  const char* p = platform && PyUnicode_Check(platform) ? PyUnicode_AsUTF8(platform) : nullptr;
  bool ok = p != nullptr;
  if (ok) {
    *host = std::string_view(p) == "cpu";
    *device = *host ? std::string("cpu") : std::string(p) + ":" + std::to_string(id ? PyLong_AsLong(id) : 0);
  }
  Py_XDECREF(platform);
  Py_XDECREF(id);
  if (PyErr_Occurred()) PyErr_Clear();
  if (ok) {
    DeviceInfo& slot = g_devices[g_next_device++ % 4];
    Py_XDECREF(slot.device);
    Py_INCREF(dev);
    slot = {dev, *device, *host};
  }
  Py_DECREF(dev);
  return ok;
}

bool JaxArrayToView(PyObject* obj, bool with_host_data, bool block, ArrayView* out) {
  if (block) {
    PyObject* r = PyObject_CallMethod(obj, "block_until_ready", nullptr);
    if (!r) {
      PyErr_Clear();
      return false;
    }
    Py_DECREF(r);
  }
  PyObject* ptr = PyObject_CallMethod(obj, "unsafe_buffer_pointer", nullptr);
  if (!ptr) {  // deleted, sharded over devices, or an extended dtype (PRNG keys)
    PyErr_Clear();
    return false;
  }
  uint64_t addr = PyLong_AsUnsignedLongLong(ptr);
  Py_DECREF(ptr);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  PyObject* shape = Attr(obj, "shape");
  bool ok = ReadShape(shape, &out->sizes);
  Py_XDECREF(shape);
  int64_t itemsize = 0;
  bool host = false;
  ok = ok && ReadDType(obj, &out->dtype, &itemsize) && ReadJaxDevice(obj, &out->device, &host);
  if (!ok) return false;
  // XLA's default layout on every backend is dense row-major.
  ContiguousStrides(out->sizes, &out->strides);
  out->view.storage_addr = addr;
  out->view.host_data = with_host_data && host && addr != 0 ? reinterpret_cast<const void*>(addr) : nullptr;
  // Immutable values: a buffer address names one value until it is freed, and
  // freed addresses are reused at once, so no fingerprint may be reused by key.
  out->view.version_tracked = false;
  return true;
}

bool NumpyToView(PyObject* obj, bool with_host_data, ArrayView* out) {
  PyObject* iface = Attr(obj, "__array_interface__");
  if (!iface) return false;
  bool ok = PyDict_Check(iface);
  PyObject* data = ok ? PyDict_GetItemString(iface, "data") : nullptr;  // borrowed
  PyObject* strides = ok ? PyDict_GetItemString(iface, "strides") : nullptr;
  ok = ok && data && PyTuple_Check(data) && PyTuple_GET_SIZE(data) >= 1 &&
       ReadShape(PyDict_GetItemString(iface, "shape"), &out->sizes);
  uint64_t addr = ok ? PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0)) : 0;
  if (PyErr_Occurred()) {
    PyErr_Clear();
    ok = false;
  }
  int64_t itemsize = 0;
  ok = ok && ReadDType(obj, &out->dtype, &itemsize) && itemsize > 0;
  if (ok && strides && strides != Py_None) {
    std::vector<int64_t> bytes;
    ok = ReadShape(strides, &bytes);
    out->strides.clear();
    for (int64_t b : bytes) {
      ok = ok && b % itemsize == 0;
      out->strides.push_back(b / itemsize);
    }
  } else if (ok) {
    ContiguousStrides(out->sizes, &out->strides);
  }
  Py_DECREF(iface);
  if (!ok) return false;
  out->device = "cpu";
  out->view.storage_addr = addr;
  out->view.host_data = with_host_data && addr != 0 ? reinterpret_cast<const void*>(addr) : nullptr;
  out->view.version_tracked = false;  // writable in place without a counter
  return true;
}

// A TensorFlow EagerTensor: `_numpy()` of a host tensor is a NumPy array over
// the tensor's own buffer (no copy; TF keeps the buffer alive while the
// tensor lives), read as any NumPy array. Tensors on another device would be
// copied to host by `_numpy()`, so only their shape and dtype are read;
// resource handles and strings (object arrays) are not arrays of values.
bool TfEagerTensorToView(PyObject* obj, bool with_host_data, ArrayView* out) {
  PyObject* device = Attr(obj, "device");
  const char* d = device && PyUnicode_Check(device) ? PyUnicode_AsUTF8(device) : nullptr;
  const bool host = d != nullptr && std::strstr(d, "device:CPU:") != nullptr;
  std::string other = d && !host ? std::string(d) : std::string();
  Py_XDECREF(device);
  if (PyErr_Occurred()) PyErr_Clear();
  if (!d) return false;
  if (host) {
    PyObject* array = PyObject_CallMethod(obj, "_numpy", nullptr);
    if (!array) {  // a resource or variant handle
      PyErr_Clear();
      return false;
    }
    bool ok = NumpyToView(array, with_host_data, out) && out->dtype != "object";
    Py_DECREF(array);
    return ok;
  }
  PyObject* shape = Attr(obj, "shape");  // a TensorShape: its dims as a tuple
  PyObject* dims = shape ? PyObject_CallMethod(shape, "as_list", nullptr) : nullptr;
  PyObject* tuple = dims ? PySequence_Tuple(dims) : nullptr;
  bool ok = ReadShape(tuple, &out->sizes);
  Py_XDECREF(tuple);
  Py_XDECREF(dims);
  Py_XDECREF(shape);
  if (PyErr_Occurred()) PyErr_Clear();
  PyObject* np_dtype = nullptr;
  PyObject* dtype = ok ? Attr(obj, "dtype") : nullptr;
  if (dtype) np_dtype = Attr(dtype, "as_numpy_dtype");
  PyObject* np_dtype_obj = np_dtype ? PyObject_CallNoArgs(np_dtype) : nullptr;  // a NumPy scalar: .dtype
  int64_t itemsize = 0;
  ok = ok && np_dtype_obj && ReadDType(np_dtype_obj, &out->dtype, &itemsize);
  Py_XDECREF(np_dtype_obj);
  Py_XDECREF(np_dtype);
  Py_XDECREF(dtype);
  if (PyErr_Occurred()) PyErr_Clear();
  if (!ok) return false;
  ContiguousStrides(out->sizes, &out->strides);
  out->device = other;
  out->view.storage_addr = 0;
  out->view.host_data = nullptr;
  out->view.version_tracked = false;
  return true;
}

// TF makes its EagerTensor type at run time, named by its module path.
bool IsTfEagerTensor(PyObject* obj) {
  std::string_view name = Py_TYPE(obj)->tp_name;
  return name == "EagerTensor" || name == "tensorflow.python.framework.ops.EagerTensor";
}

// numpy.ndarray or a subclass (JAX wraps literals in one), found by name so
// that magneton needs no NumPy headers.
bool IsNumpyArray(PyObject* obj) {
  PyObject* mro = Py_TYPE(obj)->tp_mro;
  if (!mro || !PyTuple_Check(mro)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    if (std::strcmp(reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_name, "numpy.ndarray") == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool ArrayToView(PyObject* obj, bool with_host_data, bool block, ArrayView* out) {
  if (!obj || PyFloat_Check(obj) || PyLong_Check(obj) || PyBool_Check(obj) || PyComplex_Check(obj)) return false;
  out->view = TensorView{};
  bool ok = false;
  // A JAX PRNG key array: its values are the uint32 array it wraps.
  if (std::strstr(Py_TYPE(obj)->tp_name, "PRNGKeyArray")) {
    PyObject* base = PyObject_GetAttrString(obj, "_base_array");
    if (!base) {
      PyErr_Clear();
      return false;
    }
    ok = base != obj && ArrayToView(base, with_host_data, block, out);
    Py_DECREF(base);
    return ok;
  }
  if (IsTfEagerTensor(obj)) {
    ok = TfEagerTensorToView(obj, with_host_data, out);
  } else if (PyObject_HasAttrString(obj, "unsafe_buffer_pointer")) {
    ok = JaxArrayToView(obj, with_host_data, block, out);
  } else if (IsNumpyArray(obj)) {
    // Not NumPy scalars: their __array_interface__ points into a temporary.
    ok = NumpyToView(obj, with_host_data, out);
  }
  if (!ok) return false;
  out->view.sizes = out->sizes.data();
  out->view.strides = out->strides.data();
  out->view.ndim = static_cast<int32_t>(out->sizes.size());
  out->view.dtype = out->dtype;
  out->view.device = out->device;
  return true;
}

}  // namespace magneton
