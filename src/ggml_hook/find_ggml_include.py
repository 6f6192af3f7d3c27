"""Prints the directory holding the ggml.h that llama-cpp-python installed
(used by CMake to build the llama.cpp hook); exits 1 when there is none."""

import importlib.util
import os
import sys
import sysconfig

candidates = []
spec = importlib.util.find_spec("llama_cpp")
if spec is not None and spec.submodule_search_locations:
    pkg = list(spec.submodule_search_locations)[0]
    candidates += [os.path.join(pkg, "include"), os.path.join(os.path.dirname(pkg), "include")]
for key in ("platlib", "purelib"):
    candidates.append(os.path.join(sysconfig.get_paths()[key], "include"))
for c in candidates:
    if os.path.isfile(os.path.join(c, "ggml.h")) and os.path.isfile(os.path.join(c, "ggml-backend.h")):
        print(os.path.abspath(c))
        sys.exit(0)
sys.exit(1)
