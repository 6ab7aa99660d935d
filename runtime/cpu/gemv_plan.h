/* The shape logic the matrix-vector kernels share (gemv_avx512.c,
 * gemv_avx2.c): a product with M, N or K of 1 as one call of an "axpy"
 * form, a "dot" form or a rank-1 update, each written per instruction set
 * (their comments say what they compute). */
#ifndef LT_CPU_GEMV_PLAN_H
#define LT_CPU_GEMV_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define LT_GEMV_XSTACK 4096 /* x of at most this many floats lives on the stack */

typedef struct lt_gemv_forms {
    /* y[j] = sum_k x[k] P[k ldp + j] (+ beta y), y's elements ys apart */
    void (*axpy)(int64_t K, int64_t N, const float *x, const float *P, int64_t ldp, float beta, float *y, int64_t ys);
    /* y[j] = sum_k x[k] P[j ldp + k] (+ beta y) */
    void (*dot)(int64_t K, int64_t N, const float *x, const float *P, int64_t ldp, float beta, float *y, int64_t ys);
    /* C[i, j] = alpha a[i as] b[j bs] + beta C[i, j] (bbuf: room for N floats) */
    void (*rank1)(int64_t M, int64_t N, float alpha, const float *a, int64_t as, const float *b, int64_t bs,
                  float beta, float *C, int64_t ldc, float *bbuf);
} lt_gemv_forms;

/* C = alpha op(A) op(B) + beta C with M, N or K of 1 by the forms f; false
 * (C untouched) for other shapes or when a buffer cannot be had */
static inline bool lt_gemv_run(const lt_gemv_forms *f, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                               float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                               float *C, int64_t ldc)
{
    if (M < 1 || N < 1 || K < 1 || (M != 1 && N != 1 && K != 1))
        return false;
    int64_t len = M == 1 || N == 1 ? K : N;
    float stack[LT_GEMV_XSTACK] __attribute__((aligned(64)));
    float *buf = len <= LT_GEMV_XSTACK ? stack : malloc(sizeof(float) * (size_t)len);
    if (!buf)
        return false;
    if (M == 1 || N == 1) {
        /* x: alpha times A's only row (M = 1) or B's only column (N = 1), made contiguous */
        int64_t xs = M == 1 ? (ta ? lda : 1) : (tb ? 1 : ldb);
        const float *xsrc = M == 1 ? A : B;
        for (int64_t k = 0; k < K; k++)
            buf[k] = alpha * xsrc[k * xs];
        /* P (k, j): M = 1: op(B)[k, j]; N = 1: op(A)[j, k] */
        bool along_out = M == 1 ? !tb : ta; /* P's elements are contiguous along j */
        const float *P = M == 1 ? B : A;
        int64_t ldp = M == 1 ? ldb : lda, n = M == 1 ? N : M, ys = M == 1 ? 1 : ldc;
        if (along_out)
            f->axpy(K, n, buf, P, ldp, beta, C, ys);
        else
            f->dot(K, n, buf, P, ldp, beta, C, ys);
    } else {
        f->rank1(M, N, alpha, A, ta ? 1 : lda, B, tb ? ldb : 1, beta, C, ldc, buf);
    }
    if (buf != stack)
        free(buf);
    return true;
}

#endif
