/* float32 matrix-vector products and rank-1 updates with AVX-512, for the
 * products whose M, N or K is 1 (a single vector times a weight matrix: a
 * TreeLSTM node, a batch of one; the weight gradient of one vector pair).
 * Those are bound by reading the matrix once: the GEMM kernels would pack
 * it first (and OpenBLAS's do for M < 4), touching it twice.
 *
 * y = alpha x op(P) + beta y with P's elements either contiguous along the
 * output (the "axpy" form: rows of P are added into y, four at a time) or
 * along the sum (the "dot" form: eight dot products of rows of P with x at
 * a time). M = 1 is x = A's row, P = op(B); N = 1 is the same with the
 * roles swapped (y = op(A) b is y^T = b^T op(A)^T). K = 1 is C = alpha a b^T
 * + beta C, row by row. Every output's sum runs in a fixed order, so
 * results do not depend on the thread count. */
#include "linalg_util.h"
#include "cpu_features.h"
#include "gemv_plan.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))
#define JC 2048     /* output columns accumulated per pass of the axpy form */

static inline __mmask16 mask_of(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* y[j * ys] = (beta ? beta y[j * ys] : 0) + acc[j] for j < n */
AVX512 static void store_out(const float *acc, int64_t n, float beta, float *y, int64_t ys)
{
    if (ys != 1) {
        for (int64_t j = 0; j < n; j++)
            y[j * ys] = beta == 0 ? acc[j] : beta * y[j * ys] + acc[j];
        return;
    }
    __m512 vb = _mm512_set1_ps(beta);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = mask_of(n - j);
        __m512 a = _mm512_maskz_loadu_ps(m, acc + j);
        if (beta != 0)
            a = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, y + j), a);
        _mm512_mask_storeu_ps(y + j, m, a);
    }
}

/* y[j] = sum_k x[k] P[k * ldp + j] (+ beta y): rows of P added in groups of four */
AVX512 static void gemv_axpy(int64_t K, int64_t N, const float *x, const float *P, int64_t ldp, float beta, float *y,
                             int64_t ys)
{
    float acc[JC] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < N; j0 += JC) {
        int64_t nc = N - j0 < JC ? N - j0 : JC;
        memset(acc, 0, sizeof(float) * (size_t)nc);
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
            const float *p0 = P + k * ldp + j0, *p1 = p0 + ldp, *p2 = p1 + ldp, *p3 = p2 + ldp;
            __m512 x0 = _mm512_set1_ps(x[k]), x1 = _mm512_set1_ps(x[k + 1]), x2 = _mm512_set1_ps(x[k + 2]),
                   x3 = _mm512_set1_ps(x[k + 3]);
            for (int64_t j = 0; j < nc; j += 16) {
                __mmask16 m = mask_of(nc - j);
                __m512 a = _mm512_maskz_loadu_ps(m, acc + j);
                a = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, p0 + j), a);
                a = _mm512_fmadd_ps(x1, _mm512_maskz_loadu_ps(m, p1 + j), a);
                a = _mm512_fmadd_ps(x2, _mm512_maskz_loadu_ps(m, p2 + j), a);
                a = _mm512_fmadd_ps(x3, _mm512_maskz_loadu_ps(m, p3 + j), a);
                _mm512_mask_storeu_ps(acc + j, m, a);
            }
        }
        for (; k < K; k++) {
            const float *p0 = P + k * ldp + j0;
            __m512 x0 = _mm512_set1_ps(x[k]);
            for (int64_t j = 0; j < nc; j += 16) {
                __mmask16 m = mask_of(nc - j);
                __m512 a = _mm512_maskz_loadu_ps(m, acc + j);
                a = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(m, p0 + j), a);
                _mm512_mask_storeu_ps(acc + j, m, a);
            }
        }
        store_out(acc, nc, beta, y + j0 * ys, ys);
    }
}

/* y[j] = sum_k x[k] P[j * ldp + k] (+ beta y): eight rows of P at a time */
AVX512 static void gemv_dot(int64_t K, int64_t N, const float *x, const float *P, int64_t ldp, float beta, float *y,
                            int64_t ys)
{
    float out[8];
    int64_t j = 0;
    for (; j + 8 <= N; j += 8) {
        const float *p = P + j * ldp;
        __m512 s[8];
        for (int r = 0; r < 8; r++)
            s[r] = _mm512_setzero_ps();
        for (int64_t k = 0; k < K; k += 16) {
            __mmask16 m = mask_of(K - k);
            __m512 xv = _mm512_maskz_loadu_ps(m, x + k);
            for (int r = 0; r < 8; r++)
                s[r] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, p + r * ldp + k), s[r]);
        }
        for (int r = 0; r < 8; r++)
            out[r] = _mm512_reduce_add_ps(s[r]);
        store_out(out, 8, beta, y + j * ys, ys);
    }
    for (; j < N; j++) {
        const float *p = P + j * ldp;
        __m512 s = _mm512_setzero_ps();
        for (int64_t k = 0; k < K; k += 16) {
            __mmask16 m = mask_of(K - k);
            s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + k), _mm512_maskz_loadu_ps(m, p + k), s);
        }
        out[0] = _mm512_reduce_add_ps(s);
        store_out(out, 1, beta, y + j * ys, ys);
    }
}

/* C[i, j] = alpha a[i] b[j] + beta C[i, j] */
AVX512 static void rank1(int64_t M, int64_t N, float alpha, const float *a, int64_t as, const float *b, int64_t bs,
                         float beta, float *C, int64_t ldc, float *bbuf)
{
    const float *bv = b;
    if (bs != 1) {
        for (int64_t j = 0; j < N; j++)
            bbuf[j] = b[j * bs];
        bv = bbuf;
    }
    __m512 vb = _mm512_set1_ps(beta);
    for (int64_t i = 0; i < M; i++) {
        __m512 ai = _mm512_set1_ps(alpha * a[i * as]);
        float *c = C + i * ldc;
        for (int64_t j = 0; j < N; j += 16) {
            __mmask16 m = mask_of(N - j);
            __m512 v = _mm512_mul_ps(ai, _mm512_maskz_loadu_ps(m, bv + j));
            if (beta == 1)
                v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, c + j), v);
            else if (beta != 0)
                v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, c + j), v);
            _mm512_mask_storeu_ps(c + j, m, v);
        }
    }
}

static bool have_avx512(void) { return lt_cpu_avx512_gemm(); }

bool lt_sgemv_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    static const lt_gemv_forms forms = {gemv_axpy, gemv_dot, rank1};
    return have_avx512() && lt_gemv_run(&forms, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#else

bool lt_sgemv_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta,
        (void)C, (void)ldc;
    return false;
}

#endif
