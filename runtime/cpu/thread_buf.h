/* Buffers a thread keeps for its later calls (no allocation once a
 * steady-state step has run, their pages faulted in when allocated),
 * freed when the thread ends: the float
 * products' packing buffers, a split product's shared packed op(A), the
 * depthwise convolution's plane buffers.
 * One slot per use, so one use's buffer never moves under another's. */
#ifndef LT_CPU_THREAD_BUF_H
#define LT_CPU_THREAD_BUF_H

#include <stddef.h>

enum {
    LT_THREAD_BUF_SGEMM,    /* sgemm_avx2.c / sgemm_avx512.c: a call's packed panels */
    LT_THREAD_BUF_SHARED_A, /* linalg_gemm.c: op(A) packed once for a split product's chunks */
    LT_THREAD_BUF_DEPTHWISE, /* nn_conv_depthwise.c: a padded plane and a wide grid */
    LT_THREAD_BUF_SLOTS
};

/* The calling thread's buffer in slot, at least bytes long and 64-byte
 * aligned; NULL when out of memory. Growing it does not keep its
 * contents. */
void *lt_thread_buf(int slot, size_t bytes);

#endif
