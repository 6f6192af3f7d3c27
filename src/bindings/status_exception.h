// The one Status -> Python exception mapping, used by every nanobind module
// (magneton._core and magneton._torch_hook): the same failure raises the
// same exception type whichever module reports it.
#pragma once

#include <nanobind/nanobind.h>

#include "magneton/status.h"

namespace magneton {

// The Python exception type for a non-OK code.
inline PyObject* ExceptionTypeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kNotFound: return PyExc_FileNotFoundError;
    case StatusCode::kPermissionDenied: return PyExc_PermissionError;
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorrupt:          // the file's content is bad input
    case StatusCode::kVersionMismatch:  // so is a file of another schema version
      return PyExc_ValueError;
    case StatusCode::kUnavailable:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kInternal:
    case StatusCode::kOk:
      break;
  }
  return PyExc_RuntimeError;
}

// Safe with or without the GIL: bindings that release it around the core
// (nb::call_guard<nb::gil_scoped_release>) report from inside that scope.
[[noreturn]] inline void ThrowStatus(const Status& st) {
  nanobind::gil_scoped_acquire gil;
  PyErr_SetString(ExceptionTypeFor(st.code()), st.message().c_str());
  throw nanobind::python_error();  // holds the exception; safe to unwind without the GIL
}

inline void ThrowIfError(const Status& st) {
  if (!st.ok()) ThrowStatus(st);
}

}  // namespace magneton
