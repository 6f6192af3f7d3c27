// The ggml functions the hook calls, resolved at run time from the ggml
// library llama.cpp already loaded (dlopen of its path + dlsym), so the hook
// does not link against one particular libggml-base.so. The struct layout
// comes from the ggml.h the hook was compiled against; Bind() checks it
// against the loaded library before the hook reads any tensor.
#pragma once

#include <string>

#include "ggml-backend.h"
#include "ggml.h"
#include "magneton/status.h"

namespace magneton::ggml_hook {

struct GgmlApi {
  decltype(&ggml_op_desc) op_desc = nullptr;
  decltype(&ggml_type_name) type_name = nullptr;
  decltype(&ggml_type_size) type_size = nullptr;
  decltype(&ggml_blck_size) blck_size = nullptr;
  decltype(&ggml_backend_buffer_is_host) buffer_is_host = nullptr;
  decltype(&ggml_backend_buffer_get_usage) buffer_get_usage = nullptr;
  decltype(&ggml_backend_buffer_name) buffer_name = nullptr;
};

// Resolves the functions from the loaded library at `library_path` (e.g.
// .../llama_cpp/lib/libggml-base.so) and checks the tensor layout with a
// probe graph built by that library (shapes, byte strides, names, views,
// sources, op numbering). FailedPrecondition says what differs.
Status BindGgml(const std::string& library_path, GgmlApi* api);

}  // namespace magneton::ggml_hook
