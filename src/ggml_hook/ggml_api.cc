#include "ggml_hook/ggml_api.h"

#include <dlfcn.h>

#include <cstring>

namespace magneton::ggml_hook {
namespace {

std::string DlError() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

template <typename Fn>
Status Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) return NotFound(std::string("ggml symbol ") + name + " not found: " + DlError());
  return Status::Ok();
}

// Builds a tiny graph with the loaded library (no data allocated) and reads
// it through the struct compiled in here: any field that moved shows up.
Status ProbeLayout(void* handle, const GgmlApi& api) {
  decltype(&ggml_init) init = nullptr;
  decltype(&ggml_free) free_ctx = nullptr;
  decltype(&ggml_new_tensor_4d) new_4d = nullptr;
  decltype(&ggml_view_2d) view_2d = nullptr;
  decltype(&ggml_add) add = nullptr;
  decltype(&ggml_set_name) set_name = nullptr;
  decltype(&ggml_get_name) get_name = nullptr;
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_init", &init));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_free", &free_ctx));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_new_tensor_4d", &new_4d));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_view_2d", &view_2d));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_add", &add));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_set_name", &set_name));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_get_name", &get_name));

  ggml_init_params params{};
  params.mem_size = 64 * 1024;  // tensor headers only: no_alloc
  params.mem_buffer = nullptr;
  params.no_alloc = true;
  ggml_context* ctx = init(params);
  if (ctx == nullptr) return Internal("ggml_init failed for the layout probe");
  ggml_tensor* a = new_4d(ctx, GGML_TYPE_F32, 3, 5, 7, 2);
  set_name(a, "probe-1");
  ggml_tensor* v = view_2d(ctx, a, 3, 4, a->nb[1], a->nb[1]);
  ggml_tensor* s = add(ctx, a, a);
  std::string diff;
  auto check = [&](bool ok, const char* what) {
    if (!ok) diff += diff.empty() ? what : std::string(", ") + what;
  };
  check(a->type == GGML_TYPE_F32, "type");
  check(a->ne[0] == 3 && a->ne[1] == 5 && a->ne[2] == 7 && a->ne[3] == 2, "ne");
  check(a->nb[0] == 4 && a->nb[1] == 12 && a->nb[2] == 60 && a->nb[3] == 420, "nb");
  check(get_name(a) == a->name && std::strcmp(a->name, "probe-1") == 0, "name");
  check(v->view_src == a && v->view_offs == 12 && v->op == GGML_OP_VIEW, "view_src/view_offs/op");
  check(s->op == GGML_OP_ADD && s->src[0] == a && s->src[1] == a && s->src[2] == nullptr, "op/src");
  check(std::strcmp(api.op_desc(s), "ADD") == 0 && std::strcmp(api.op_desc(v), "VIEW") == 0, "op numbering");
  check(std::strcmp(api.type_name(GGML_TYPE_I32), "i32") == 0 && api.type_size(GGML_TYPE_F16) == 2, "type numbering");
  free_ctx(ctx);
  if (!diff.empty()) {
    return FailedPrecondition("the loaded ggml's tensor layout differs from the ggml.h magneton was built against (" +
                              diff + "): reinstall magneton with `pip install --no-build-isolation .` "
                              "after installing llama-cpp-python");
  }
  return Status::Ok();
}

}  // namespace

Status BindGgml(const std::string& library_path, GgmlApi* api) {
  // Already loaded by llama_cpp: this only takes a reference, never a second copy.
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(library_path.c_str(), RTLD_NOW);
  if (handle == nullptr) return NotFound("cannot open " + library_path + ": " + DlError());
  GgmlApi loaded;
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_op_desc", &loaded.op_desc));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_type_name", &loaded.type_name));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_type_size", &loaded.type_size));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_blck_size", &loaded.blck_size));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_backend_buffer_is_host", &loaded.buffer_is_host));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_backend_buffer_get_usage", &loaded.buffer_get_usage));
  MAGNETON_RETURN_IF_ERROR(Resolve(handle, "ggml_backend_buffer_name", &loaded.buffer_name));
  MAGNETON_RETURN_IF_ERROR(ProbeLayout(handle, loaded));
  *api = loaded;
  return Status::Ok();
}

}  // namespace magneton::ggml_hook
