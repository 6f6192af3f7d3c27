// _core.ingest_tf_profile: TensorFlow's profiler events of the tf.function
// graphs a recording ran into it (record/tf_profile.h). Apart from
// core_module.cc to keep that small.
#pragma once

#include <nanobind/nanobind.h>

namespace magneton {
void RegisterTfBindings(nanobind::module_& m);
}  // namespace magneton
