/* float32 GEMM for products of at most 32 columns with AVX2 and FMA, for
 * CPUs without AVX-512 (sgemm_small.c's kernel needs it): attention's
 * per-head products (28 x 28 x 8, 28 x 8 x 28) and a small transformer's
 * 32-feature products, which OpenBLAS runs one call and one packing at a
 * time. The same scheme as sgemm_small.c in 8-lane registers: op(B) read in
 * place, or copied once into a dense K x N block (alpha folded in); each
 * block of rows of C keeps its N columns in at most four 8-lane registers
 * per row while A's entries are broadcast. Each element of C is one fused
 * multiply-add chain over k in order, whatever the block height, and beta C
 * is added last with one more. */
#include "linalg_util.h"
#include "cpu_features.h"
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "avx2_tail.h"

#define AVX2 __attribute__((target("avx2,fma")))
#define MAX_N 32
#define MAX_KN 16384       /* floats of the packed op(B) (64 KiB) */
#define MAX_INPLACE 131072 /* floats of op(B) read in place (L2-resident) */

/* lanes [0, n) of 8 set, for the masked loads and stores of a row's last
 * vector */
AVX2 static inline __m256i lanes8(int64_t n)
{
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : (int)n), idx);
}

/* acc[r][v] += a(r, k) op(B)[k, 8v .. 8v + 7] for one k: op(B)'s row at b,
 * its last vector loaded whole (lanes past N are never stored) or, where
 * that would read past op(B)'s storage, under mlast */
AVX2 static inline __attribute__((always_inline)) void k_step(const int nv, const int rb, __m256 acc[][4],
                                                               const float *b, const float *const *ar, int64_t ko,
                                                               __m256i mlast, const bool masked)
{
    __m256 bv[4];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++)
        bv[v] = v < nv - 1 || !masked ? _mm256_loadu_ps(b + 8 * v) : _mm256_maskload_ps(b + 8 * v, mlast);
#pragma GCC unroll 12
    for (int r = 0; r < rb; r++) {
        __m256 x = _mm256_broadcast_ss(ar[r] + ko);
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm256_fmadd_ps(x, bv[v], acc[r][v]);
    }
}

/* Rows [i0, i0 + nr) of C (nr <= rb) from op(B) at bp (K x N, row stride
 * ldp), nv 8-lane column vectors per row, the last one under mlast; rows
 * past nr read row nr - 1 of A again and are not stored. always_inline with
 * constant nv and rb keeps the accumulators in registers. */
AVX2 static inline __attribute__((always_inline)) void
rows_block(const int nv, const int rb, int64_t i0, int nr, __m256i mlast, int nlast, int64_t K, int64_t kplain,
           const float *A, int64_t lda, bool ta, const float *bp, int64_t ldp, float beta, float *C, int64_t ldc)
{
    __m256 acc[12][4];
#pragma GCC unroll 12
    for (int r = 0; r < rb; r++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm256_setzero_ps();
    }
    /* a(i, k) = A[k * lda + i] when ta, else A[i * lda + k] */
    const float *ar[12];
    int64_t ka = ta ? lda : 1;
#pragma GCC unroll 12
    for (int r = 0; r < rb; r++)
        ar[r] = A + (i0 + (r < nr ? r : nr - 1)) * (ta ? 1 : lda);
    for (int64_t k = 0; k < kplain; k++)
        k_step(nv, rb, acc, bp + k * ldp, ar, k * ka, mlast, false);
    for (int64_t k = kplain; k < K; k++)
        k_step(nv, rb, acc, bp + k * ldp, ar, k * ka, mlast, true);
    __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 12
    for (int r = 0; r < rb; r++) {
        if (r >= nr)
            break;
        float *c = C + (i0 + r) * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            __m256 x = acc[r][v];
            if (v < nv - 1) {
                if (beta != 0)
                    x = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8 * v), x);
                _mm256_storeu_ps(c + 8 * v, x);
            } else {
                if (beta != 0)
                    x = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c + 8 * v, mlast), x);
                lt_avx2_store_first(c + 8 * v, x, nlast);
            }
        }
    }
}

typedef void (*rows_fn)(int64_t M, __m256i mlast, int nlast, int64_t K, int64_t kplain, const float *A,
                        int64_t lda, bool ta, const float *bp, int64_t ldp, float beta, float *C, int64_t ldc);

#define ROWS_FN(NV, RBV)                                                                                    \
    AVX2 static void rows_##NV##_##RBV(int64_t M, __m256i mlast, int nlast, int64_t K, int64_t kplain,      \
                                       const float *A, int64_t lda, bool ta, const float *bp, int64_t ldp, \
                                       float beta, float *C, int64_t ldc)                                  \
    {                                                                                                      \
        int64_t i = 0;                                                                                     \
        for (; i + RBV <= M; i += RBV)                                                                     \
            rows_block(NV, RBV, i, RBV, mlast, nlast, K, kplain, A, lda, ta, bp, ldp, beta, C, ldc);       \
        if (i < M)                                                                                         \
            rows_block(NV, RBV, i, (int)(M - i), mlast, nlast, K, kplain, A, lda, ta, bp, ldp, beta, C,    \
                       ldc);                                                                               \
    }
ROWS_FN(1, 6)
ROWS_FN(1, 7)
ROWS_FN(1, 8)
ROWS_FN(1, 12)
ROWS_FN(2, 4)
ROWS_FN(2, 5)
ROWS_FN(2, 6)
ROWS_FN(3, 2)
ROWS_FN(3, 3)
ROWS_FN(3, 4)
ROWS_FN(4, 3)

/* Block heights per column-vector count (at most 12 accumulators in the 16
 * registers; for four vectors, three rows whose multiply-adds read op(B)'s
 * row from L1, 1.5x faster than two at 3584 x 32 x 128): the one whose
 * blocks cover M with the fewest rows computed, the tallest on ties (M = 28
 * rows of an attention head: four blocks of 7 for one vector) */
static const struct {
    int rb;
    rows_fn fn;
} row_plans[4][4] = {
    {{6, rows_1_6}, {7, rows_1_7}, {8, rows_1_8}, {12, rows_1_12}},
    {{4, rows_2_4}, {5, rows_2_5}, {6, rows_2_6}, {0, NULL}},
    {{2, rows_3_2}, {3, rows_3_3}, {4, rows_3_4}, {0, NULL}},
    {{3, rows_4_3}, {0, NULL}, {0, NULL}, {0, NULL}},
};

static rows_fn rows_plan(int nv, int64_t M)
{
    rows_fn best = NULL;
    int64_t best_rows = 0;
    for (int c = 0; c < 4 && row_plans[nv - 1][c].fn; c++) {
        int64_t rb = row_plans[nv - 1][c].rb, rows = (M + rb - 1) / rb * rb;
        if (!best || rows <= best_rows) {
            best = row_plans[nv - 1][c].fn;
            best_rows = rows;
        }
    }
    return best;
}

/* One product; bp is scratch for the packed op(B) (K * N floats). */
AVX2 static void run_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                           int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc, float *bp,
                           rows_fn fn)
{
    int nv = (int)((N + 7) / 8), nlast = (int)(N - 8 * (nv - 1));
    __m256i mlast = lanes8(nlast);
    /* op(B)[k, j] = B[k * ldb + j], or B[j * ldb + k] when tb: read in
     * place when it is B itself (the last vector of a row loaded whole
     * while that stays inside B), else copied times alpha into rows of
     * whole vectors, zero past N */
    const float *b = bp;
    int64_t ldp = 8 * nv, kplain = K;
    if (!tb && alpha == 1.0f) {
        b = B;
        ldp = ldb;
        int64_t room = (K - 1) * ldb + N - 8 * nv;
        kplain = room < 0 ? 0 : room / ldb + 1 < K ? room / ldb + 1 : K;
    } else if (!tb) {
        __m256 va = _mm256_set1_ps(alpha);
        for (int64_t k = 0; k < K; k++)
            for (int v = 0; v < nv; v++) {
                const float *src = B + k * ldb + 8 * v;
                __m256 x = v < nv - 1 ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, mlast);
                _mm256_storeu_ps(bp + k * ldp + 8 * v, _mm256_mul_ps(va, x));
            }
    } else {
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = N; j < ldp; j++)
                bp[k * ldp + j] = 0.0f;
        for (int64_t j = 0; j < N; j++) {
            const float *src = B + j * ldb;
            for (int64_t k = 0; k < K; k++)
                bp[k * ldp + j] = alpha * src[k];
        }
    }
    fn(M, mlast, nlast, K, kplain, A, lda, ta, b, ldp, beta, C, ldc);
}

/* a transposed A over a long K (a weight gradient summed over the batch)
 * streams op(B) once per block of rows: OpenBLAS's packing is faster there
 * (0.16 against 0.11 ms at 32 x 32 x 3584) */
#define MAX_K_TA 512

static bool small_ok(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha)
{
    if (!lt_cpu_avx2_gemm() || M < 1 || N < 1 || K < 1 || N > MAX_N || (ta && K > MAX_K_TA))
        return false;
    return K * ((N + 7) / 8 * 8) <= MAX_KN || (!tb && alpha == 1.0f && K * N <= MAX_INPLACE);
}

bool lt_sgemm_small_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (!small_ok(ta, tb, M, N, K, alpha))
        return false;
    float bp[MAX_KN] __attribute__((aligned(32)));
    run_small(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bp, rows_plan((int)((N + 7) / 8), M));
    return true;
}

bool lt_sgemm_small_avx2_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                 int64_t lda, const int64_t *offa, const float *B, int64_t ldb, const int64_t *offb,
                                 float beta, float *C, int64_t ldc, const int64_t *offc, int64_t nb)
{
    if (!small_ok(ta, tb, M, N, K, alpha))
        return false;
    float bp[MAX_KN] __attribute__((aligned(32)));
    rows_fn fn = rows_plan((int)((N + 7) / 8), M);
    for (int64_t i = 0; i < nb; i++)
        run_small(ta, tb, M, N, K, alpha, A + offa[i], lda, B + offb[i], ldb, beta, C + offc[i], ldc, bp, fn);
    return true;
}

#else

bool lt_sgemm_small_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta,
        (void)C, (void)ldc;
    return false;
}

bool lt_sgemm_small_avx2_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                 int64_t lda, const int64_t *offa, const float *B, int64_t ldb, const int64_t *offb,
                                 float beta, float *C, int64_t ldc, const int64_t *offc, int64_t nb)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)offa, (void)B, (void)ldb,
        (void)offb, (void)beta, (void)C, (void)ldc, (void)offc, (void)nb;
    return false;
}

#endif
