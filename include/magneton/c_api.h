/* Magneton's C ABI: lets native engines (llama.cpp/ggml, libtorch apps,
 * custom runtimes) record ops into the same trace model without Python.
 * All functions are thread-safe; ops nest per thread. Strings are copied.
 * magneton_stop() may run while other threads are inside these calls: it waits
 * for calls in flight; an op begun before a stop and ended after it (or under
 * a later recording) is dropped, never written half.
 * Functions returning int return a magneton_status (magneton_last_error() says
 * why when it is not MAGNETON_OK). */
#ifndef MAGNETON_C_API_H_
#define MAGNETON_C_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. The values are part of the ABI: new codes are only appended. */
typedef enum magneton_status {
  MAGNETON_OK = 0,
  MAGNETON_INVALID_ARGUMENT = 1,    /* e.g. a NULL path */
  MAGNETON_NOT_FOUND = 2,           /* a file or directory does not exist */
  MAGNETON_PERMISSION_DENIED = 3,   /* a file cannot be read, created or replaced */
  MAGNETON_CORRUPT = 4,             /* a file exists but cannot be trusted */
  MAGNETON_VERSION_MISMATCH = 5,    /* a trace of another schema version */
  MAGNETON_UNAVAILABLE = 6,         /* hardware or library not present */
  MAGNETON_FAILED_PRECONDITION = 7, /* already recording, or nothing is recording */
  MAGNETON_INTERNAL = 8             /* SQLite or system error */
} magneton_status;

typedef struct magneton_tensor {
  uint64_t storage_addr;   /* base address of the storage: aliases share it */
  int64_t storage_offset;  /* in elements */
  int32_t ndim;
  const int64_t* sizes;    /* ndim entries, outermost first (ggml users: reverse ne[]) */
  const int64_t* strides;  /* ndim entries in elements, or NULL for contiguous */
  const char* dtype;       /* "float32", "float16", "bfloat16", "int32", ... */
  const char* device;      /* "cpu", "cuda:0", ... */
  int64_t version;         /* bump on every in-place write; 0 if unknown (values are
                              then never assumed unchanged under the same address) */
  const void* host_data;   /* element [0,...,0] when readable here (for --values), else NULL */
} magneton_tensor;

/* Starts recording into `path`. engine: e.g. "llama.cpp". Returns a magneton_status. */
int magneton_start(const char* path, const char* label, const char* engine, int sample_energy, int record_values);
/* Stops and closes the trace (one file), after waiting for calls in flight on
 * other threads. Returns a magneton_status: MAGNETON_FAILED_PRECONDITION when
 * nothing is recording. */
int magneton_stop(void);
/* 1 while a recording is active, else 0. */
int magneton_is_recording(void);
// Whether a recording is active and its window open (windowed recording):
// an engine asks this once per unit of work (a graph) and records all or none
// of its ops, so that every begin has its end.
int magneton_recording_open(void);
/* Why the last failing call on this thread failed ("" if none). */
const char* magneton_last_error(void);

/* An op on the calling thread: begin, then inputs/outputs, then end.
 * Returns the op id, or -1 when nothing is recording.
 * args: the op's non-tensor arguments as JSON (docs/TRACE_FORMAT.md, "Op
 * arguments"): a list of positional values, [{"t":0},{"t":1},1.0] (a tensor
 * is {"t": input slot}), or an object of named parameters,
 * {"name":"attn_norm-0","src":[0,1]}; NULL or "" for none. Text that is not
 * such JSON is kept as {"unparsed": "<text>"}, counted in the trace's
 * meta('capi.unparsed_args'), and magneton_last_error() says why. */
int64_t magneton_begin_op(const char* name);
void magneton_add_input(int32_t slot, const magneton_tensor* tensor);
void magneton_add_output(int32_t slot, const magneton_tensor* tensor);
void magneton_end_op(const char* args);
/* Ends the op with the interval the engine measured itself on
 * magneton_now_ns()'s clock, e.g. a node's compute without the hook's own
 * bookkeeping around it. */
void magneton_end_op_at(const char* args, int64_t start_ns, int64_t end_ns);
/* CLOCK_MONOTONIC in ns: the clock of every op and energy sample. */
int64_t magneton_now_ns(void);

/* Module-like scopes on the calling thread ("blk.0/attn"). */
void magneton_push_scope(const char* name, const char* type);
void magneton_pop_scope(void);

/* A config snapshot entry: source is "global_flag", "env", "model_config", "call_arg" or "runtime". */
void magneton_set_config(const char* key, const char* value, const char* source);

#ifdef __cplusplus
}
#endif

#endif /* MAGNETON_C_API_H_ */
