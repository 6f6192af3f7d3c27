/* The llama.cpp/ggml eval callback that records every graph node through
 * Magneton's C ABI. Loaded with ctypes by python/magneton/recorders/
 * llama_recorder.py, which puts magneton_ggml_eval_callback into
 * llama_context_params.cb_eval. */
#ifndef MAGNETON_GGML_HOOK_H_
#define MAGNETON_GGML_HOOK_H_

#include <stdbool.h>

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Resolves ggml from the loaded library at `ggml_base_path` and checks the
 * tensor layout. 0 on success; else magneton_ggml_error() says why. */
int magneton_ggml_bind(const char* ggml_base_path);
const char* magneton_ggml_error(void);

/* user_data for a context whose params already had a callback: ours runs
 * alongside it (its answers are honoured). Lives as long as the process. */
void* magneton_ggml_chain(ggml_backend_sched_eval_callback previous, void* previous_user_data);

/* The callback: while a recording is active it asks for every node, so the
 * scheduler computes nodes one at a time and the op's interval is that
 * node's compute. user_data: NULL or from magneton_ggml_chain. */
bool magneton_ggml_eval_callback(struct ggml_tensor* t, bool ask, void* user_data);

/* ggml_type_name of the bound ggml ("f16"), for config snapshots. */
const char* magneton_ggml_type_name(int type);

/* Nodes recorded since the process started (for tests and diagnostics). */
long long magneton_ggml_nodes_recorded(void);

#ifdef __cplusplus
}
#endif

#endif /* MAGNETON_GGML_HOOK_H_ */
