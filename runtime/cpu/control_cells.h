/* Accumulation cells with deferred products (control_cells.c). */
#ifndef LT_CPU_CONTROL_CELLS_H
#define LT_CPU_CONTROL_CELLS_H

#include "../runtime.h"
#include <stdint.h>

/* How many AccGemm products the process has deferred into cells (summed
 * later as one GEMM) rather than added at once: tests check that their
 * shapes take the deferred path. */
uint64_t lt_cells_deferred(void);

/* AccGemm (cell, A, B) {alpha, transA, transB}: the cell [M, N] and
 * op(A) [M, K], op(B) [K, N], checked (one line naming what does not fit);
 * the CPU's kernel (control_cells.c) and the cuda one read them so. */
typedef struct lt_acc_gemm {
    const lt_tensor *c, *a, *b;
    bool ta, tb;
    double alpha;
    int64_t M, N, K;
} lt_acc_gemm;
lt_status lt_acc_gemm_args(lt_kctx *k, lt_acc_gemm *g);

#endif
