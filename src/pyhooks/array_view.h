// A Python array object (a JAX Array, a NumPy ndarray) seen as a TensorView,
// for engines whose hooks live in Python (JAX). Reads attributes only: no
// copies, and the values stay where they are.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

#include "magneton/recorder.h"

namespace magneton {

// Owns what a TensorView borrows (shape, strides, names).
struct ArrayView {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements, like torch's
  std::string dtype;
  std::string device;
  TensorView view;  // points into the fields above once filled
};

// Fills `out` from `obj`; false (and no Python error set) when `obj` is not
// an array with a readable buffer (Python scalars, tokens, key arrays on an
// engine without buffer pointers). JAX arrays are immutable, so their values
// are identified by buffer address and layout alone. `block` waits for an
// asynchronously computed JAX array first (its buffer is read for --values).
// Requires the GIL.
bool ArrayToView(PyObject* obj, bool with_host_data, bool block, ArrayView* out);

}  // namespace magneton
