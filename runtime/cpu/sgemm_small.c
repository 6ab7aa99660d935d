/* float32 GEMM for products with few columns (N <= 64), such as attention's
 * per-head products (28 x 28 x 8), a classifier's 10 outputs, or their
 * gradients. The blocked AVX-512 kernel (sgemm_avx512.c) wastes most of its
 * 32-wide tile on them and OpenBLAS spends more time in its call and
 * packing overhead than in arithmetic. Here op(B) is copied once into a
 * dense K x N block (alpha folded in) and each group of four rows of C
 * (eight when N <= 16) keeps its N columns in at most four 16-lane registers
 * per row while A's
 * entries are broadcast. */
#include "linalg_util.h"
#include "cpu_features.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))
#define SMALL_MAX_N 64
#define SMALL_MAX_KN 16384 /* floats of the packed op(B) (64 KiB) */
static inline __mmask16 lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

/* Rows [i0, i0 + nr) of C (nr <= rb) from op(B) at bp (K x N, row stride
 * ldp), nv 16-lane column vectors per row; rows past nr read row nr - 1 of
 * A again and are not stored, so the loop is the same for every block.
 * always_inline with constant nv and rb keeps the accumulators in
 * registers. */
AVX512 static inline __attribute__((always_inline)) void
rows_block(const int nv, const int rb, int64_t i0, int nr, const __mmask16 *mk, int64_t K, const float *A,
           int64_t lda, bool ta, const float *bp, int64_t ldp, float beta, float *C, int64_t ldc)
{
    __m512 acc[8][4];
#pragma GCC unroll 8
    for (int r = 0; r < rb; r++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm512_setzero_ps();
    }
    /* a(i, k): A[i * lda + k], or A[k * lda + i] when ta */
    int64_t sr = ta ? 1 : lda, sk = ta ? lda : 1;
    const float *ar[8];
#pragma GCC unroll 8
    for (int r = 0; r < rb; r++)
        ar[r] = A + (i0 + (r < nr ? r : nr - 1)) * sr;
    for (int64_t k = 0; k < K; k++) {
        const float *b = bp + k * ldp;
        __m512 bv[4];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            bv[v] = _mm512_maskz_loadu_ps(mk[v], b + 16 * v);
        int64_t ko = k * sk;
#pragma GCC unroll 8
        for (int r = 0; r < rb; r++) {
            __m512 a = _mm512_set1_ps(ar[r][ko]);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm512_fmadd_ps(a, bv[v], acc[r][v]);
        }
    }
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
    for (int r = 0; r < rb; r++) {
        if (r >= nr)
            break;
        float *c = C + (i0 + r) * ldc;
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            __m512 x = acc[r][v];
            if (beta != 0)
                x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk[v], c + 16 * v), x);
            _mm512_mask_storeu_ps(c + 16 * v, mk[v], x);
        }
    }
}

#define ROWS_FN(NV, RBV)                                                                                          \
    AVX512 static void rows_##NV(int64_t M, const __mmask16 *mk, int64_t K, const float *A, int64_t lda, bool ta, \
                                 const float *bp, int64_t ldp, float beta, float *C, int64_t ldc)               \
    {                                                                                                            \
        for (int64_t i = 0; i < M; i += RBV)                                                                     \
            rows_block(NV, RBV, i, M - i < RBV ? (int)(M - i) : RBV, mk, K, A, lda, ta, bp, ldp, beta, C, ldc);  \
    }
ROWS_FN(1, 8)
ROWS_FN(2, 4)
ROWS_FN(3, 4)
ROWS_FN(4, 4)

AVX512 static void run_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                             int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    float bp[SMALL_MAX_KN] __attribute__((aligned(64)));
    const float *b = bp;
    int64_t ldp = N;
    int nv = (int)((N + 15) / 16);
    __mmask16 mk[4];
    for (int v = 0; v < 4; v++)
        mk[v] = v < nv ? lanes(N - 16 * v) : 0;
    /* op(B)[k, j] = B[k * ldb + j], or B[j * ldb + k] when tb: read in
     * place when it is B itself, else copied (times alpha) */
    if (!tb && alpha == 1.0f) {
        b = B;
        ldp = ldb;
    } else if (!tb) {
        __m512 va = _mm512_set1_ps(alpha);
        for (int64_t k = 0; k < K; k++)
            for (int v = 0; v < nv; v++)
                _mm512_mask_storeu_ps(bp + k * N + 16 * v, mk[v],
                                      _mm512_mul_ps(va, _mm512_maskz_loadu_ps(mk[v], B + k * ldb + 16 * v)));
    } else {
        for (int64_t j = 0; j < N; j++) {
            const float *src = B + j * ldb;
            for (int64_t k = 0; k < K; k++)
                bp[k * N + j] = alpha * src[k];
        }
    }
    switch (nv) {
    case 1: rows_1(M, mk, K, A, lda, ta, b, ldp, beta, C, ldc); break;
    case 2: rows_2(M, mk, K, A, lda, ta, b, ldp, beta, C, ldc); break;
    case 3: rows_3(M, mk, K, A, lda, ta, b, ldp, beta, C, ldc); break;
    default: rows_4(M, mk, K, A, lda, ta, b, ldp, beta, C, ldc); break;
    }
}

bool lt_sgemm_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (!lt_cpu_avx512_gemm() || M < 1 || N < 1 || K < 1 || N > SMALL_MAX_N || K * N > SMALL_MAX_KN)
        return false;
    run_small(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return true;
}

#else

bool lt_sgemm_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta,
        (void)C, (void)ldc;
    return false;
}

#endif
