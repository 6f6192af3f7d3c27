/* A native engine recording two layers of y = relu(x W) through the C ABI.
 * Usage: record_ops OUT.mtrace */
#include <stdio.h>
#include <stdlib.h>

#include "magneton/c_api.h"

static void matmul_relu(const float* x, const float* w, float* y, int n, int k, int m) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      float acc = 0;
      for (int p = 0; p < k; ++p) acc += x[i * k + p] * w[p * m + j];
      y[i * m + j] = acc > 0 ? acc : 0;
    }
}

enum { N = 4, K = 8 };

/* One recorded op inside its scope: out = relu(in W). */
static void layer(const char* scope, const magneton_tensor* tin, const magneton_tensor* tw,
                  const magneton_tensor* tout, const float* in, const float* w, float* out) {
  magneton_push_scope(scope, "Block");
  magneton_begin_op("native::matmul_relu");
  magneton_add_input(0, tin);
  magneton_add_input(1, tw);
  matmul_relu(in, w, out, N, K, K);
  magneton_add_output(0, tout);
  magneton_end_op("[{\"t\":0},{\"t\":1}]"); /* the op's arguments: two tensors */
  magneton_pop_scope();
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s OUT.mtrace\n", argv[0]);
    return 2;
  }
  if (magneton_start(argv[1], "c-example", "native-c", 0, 1) != MAGNETON_OK) {
    fprintf(stderr, "magneton: %s\n", magneton_last_error());
    return 1;
  }
  magneton_set_config("runtime.threads", "1", "runtime");
  float x[N * K], w0[K * K], w1[K * K], h[N * K], y[N * K];
  for (int i = 0; i < N * K; ++i) x[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < K * K; ++i) w0[i] = w1[i] = (float)((i * 13) % 5) - 2.0f;
  int64_t act_shape[2] = {N, K}, w_shape[2] = {K, K};
  magneton_tensor tx = {(uint64_t)(uintptr_t)x, 0, 2, act_shape, NULL, "float32", "cpu", 0, x};
  magneton_tensor tw0 = {(uint64_t)(uintptr_t)w0, 0, 2, w_shape, NULL, "float32", "cpu", 0, w0};
  magneton_tensor tw1 = {(uint64_t)(uintptr_t)w1, 0, 2, w_shape, NULL, "float32", "cpu", 0, w1};
  magneton_tensor th = {(uint64_t)(uintptr_t)h, 0, 2, act_shape, NULL, "float32", "cpu", 0, h};
  magneton_tensor ty = {(uint64_t)(uintptr_t)y, 0, 2, act_shape, NULL, "float32", "cpu", 0, y};

  layer("blk.0", &tx, &tw0, &th, x, w0, h);
  layer("blk.1", &th, &tw1, &ty, h, w1, y);

  if (magneton_stop() != MAGNETON_OK) {
    fprintf(stderr, "magneton: %s\n", magneton_last_error());
    return 1;
  }
  printf("%g\n", y[0]);
  return 0;
}
