/* float32 GEMM for products with few columns (N <= 64), such as attention's
 * per-head products (28 x 28 x 8), a classifier's 10 outputs, or their
 * gradients. The blocked AVX-512 kernel (sgemm_avx512.c) wastes most of its
 * 32-wide tile on them and OpenBLAS spends more time in its call and
 * packing overhead than in arithmetic. Here op(B) is copied once into a
 * dense K x N block (alpha folded in) and each group of four rows of C
 * (eight when N <= 16) keeps its N columns in at most four 16-lane registers
 * per row while A's
 * entries are broadcast. Without AVX-512 the entry points hand the shapes
 * of at most 32 columns to the AVX2 form (sgemm_small_avx2.c). */
#include "linalg_util.h"
#include "cpu_features.h"
#include <stdint.h>
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
 * registers. Each element of C is one fused multiply-add chain over k in
 * order, whatever the block height. */
AVX512 static inline __attribute__((always_inline)) void
rows_block(const int nv, const int rb, int64_t i0, int nr, const __mmask16 *mk, int64_t K, const float *A,
           int64_t lda, bool ta, const float *bp, int64_t ldp, float beta, float *C, int64_t ldc)
{
    __m512 acc[16][4];
    /* only the last of the nv vectors can be partial: one mask in the loop */
    const __mmask16 mlast = mk[nv - 1];
#pragma GCC unroll 16
    for (int r = 0; r < rb; r++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm512_setzero_ps();
    }
    if (ta) {
        /* a(i, k) = A[k * lda + i]: the block's entries of one k side by
         * side, one pointer */
        const float *a0 = A + i0;
        int last = nr - 1;
        for (int64_t k = 0; k < K; k++) {
            const float *b = bp + k * ldp, *a = a0 + k * lda;
            __m512 bv[4];
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                bv[v] = v < nv - 1 ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(mlast, b + 16 * v);
#pragma GCC unroll 16
            for (int r = 0; r < rb; r++) {
                __m512 x = _mm512_set1_ps(a[r < nr ? r : last]);
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++)
                    acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
            }
        }
    } else {
        /* a(i, k) = A[i * lda + k] */
        const float *ar[16];
#pragma GCC unroll 16
        for (int r = 0; r < rb; r++)
            ar[r] = A + (i0 + (r < nr ? r : nr - 1)) * lda;
        for (int64_t k = 0; k < K; k++) {
            const float *b = bp + k * ldp;
            __m512 bv[4];
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                bv[v] = v < nv - 1 ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(mlast, b + 16 * v);
#pragma GCC unroll 16
            for (int r = 0; r < rb; r++) {
                __m512 x = _mm512_set1_ps(ar[r][k]);
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++)
                    acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
            }
        }
    }
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int r = 0; r < rb; r++) {
        if (r >= nr)
            break;
        float *c = C + (i0 + r) * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            __m512 x = acc[r][v];
            if (beta != 0)
                x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk[v], c + 16 * v), x);
            _mm512_mask_storeu_ps(c + 16 * v, mk[v], x);
        }
    }
}

typedef void (*rows_fn)(int64_t M, int rb, const __mmask16 *mk, int64_t K, const float *A, int64_t lda, bool ta,
                        const float *bp, int64_t ldp, float beta, float *C, int64_t ldc);

#define ROWS_FN(NV, RBV)                                                                                         \
    AVX512 static void rows_##NV##_##RBV(int64_t M, int rb, const __mmask16 *mk, int64_t K, const float *A,      \
                                         int64_t lda, bool ta, const float *bp, int64_t ldp, float beta,         \
                                         float *C, int64_t ldc)                                                  \
    {                                                                                                           \
        (void)rb;                                                                                               \
        int64_t i = 0;                                                                                          \
        for (; i + RBV <= M; i += RBV)                                                                          \
            rows_block(NV, RBV, i, RBV, mk, K, A, lda, ta, bp, ldp, beta, C, ldc);                              \
        if (i < M)                                                                                              \
            rows_block(NV, RBV, i, (int)(M - i), mk, K, A, lda, ta, bp, ldp, beta, C, ldc);                     \
    }
ROWS_FN(1, 8)
ROWS_FN(1, 12)
ROWS_FN(1, 14)
ROWS_FN(1, 16)
ROWS_FN(2, 6)
ROWS_FN(2, 7)
ROWS_FN(2, 8)
ROWS_FN(3, 4)
ROWS_FN(3, 5)
ROWS_FN(3, 6)
ROWS_FN(4, 4)
ROWS_FN(4, 5)
ROWS_FN(4, 6)

/* Block heights per column-vector count (enough accumulators to cover the
 * multiply-add latency, at most 28 registers with op(B)'s row): the one
 * whose blocks cover M with the fewest rows computed, the tallest on ties
 * (M = 28 rows of an attention head: two blocks of 14). */
static const struct {
    int rb;
    rows_fn fn;
} row_plans[4][4] = {
    {{8, rows_1_8}, {12, rows_1_12}, {14, rows_1_14}, {16, rows_1_16}},
    {{6, rows_2_6}, {7, rows_2_7}, {8, rows_2_8}, {0, NULL}},
    {{4, rows_3_4}, {5, rows_3_5}, {6, rows_3_6}, {0, NULL}},
    {{4, rows_4_4}, {5, rows_4_5}, {6, rows_4_6}, {0, NULL}},
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
AVX512 static void run_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                             int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc, float *bp,
                             rows_fn fn)
{
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
    } else if ((N - 1) * ldb < INT32_MAX / 4) {
        /* op(B)'s row k is B's column k: gathered 16 rows of B at a time */
        __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32((int)ldb));
        __m512 va = _mm512_set1_ps(alpha);
        for (int64_t k = 0; k < K; k++)
            for (int v = 0; v < nv; v++) {
                __m512 g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk[v], idx, B + 16 * v * ldb + k, 4);
                _mm512_mask_storeu_ps(bp + k * N + 16 * v, mk[v], alpha == 1.0f ? g : _mm512_mul_ps(va, g));
            }
    } else {
        for (int64_t j = 0; j < N; j++) {
            const float *src = B + j * ldb;
            for (int64_t k = 0; k < K; k++)
                bp[k * N + j] = alpha * src[k];
        }
    }
    fn(M, 0, mk, K, A, lda, ta, b, ldp, beta, C, ldc);
}

/* op(B) is packed (K * N floats, at most SMALL_MAX_KN) unless it is B
 * itself, read in place up to SMALL_MAX_INPLACE floats (L2-resident: every
 * block of rows streams all of it) */
#define SMALL_MAX_INPLACE 131072

static bool small_ok(bool tb, int64_t M, int64_t N, int64_t K, float alpha)
{
    if (!lt_cpu_avx512_gemm() || M < 1 || N < 1 || K < 1 || N > SMALL_MAX_N)
        return false;
    return K * N <= SMALL_MAX_KN || (!tb && alpha == 1.0f && K * N <= SMALL_MAX_INPLACE);
}

bool lt_sgemm_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (!lt_cpu_avx512_gemm())
        return lt_sgemm_small_avx2(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (!small_ok(tb, M, N, K, alpha))
        return false;
    float bp[SMALL_MAX_KN] __attribute__((aligned(64)));
    run_small(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bp, rows_plan((int)((N + 15) / 16), M));
    return true;
}

/* ---- at most 8 columns, A not transposed: k in pairs ----
 * One 8-column row would fill half a register and take one broadcast per
 * multiply-add. Here lane 2j + e of a row's accumulator sums a(i, k) op(B)[k,
 * j] over the k of parity e: op(B) is packed as pairs of rows interleaved
 * (bp[p * 16 + 2j + e] = alpha op(B)[2p + e, j], zero past N), and one
 * 64-bit broadcast of a(i, 2p), a(i, 2p + 1) (adjacent in A's row) feeds 16
 * lanes. The two halves are added at the end; an odd last k updates the
 * even lanes alone, so nothing past A's row is read. */

AVX512 static void pack_pairs(bool tb, int64_t N, int64_t K, float alpha, const float *B, int64_t ldb, float *bp)
{
    int64_t np = (K + 1) / 2;
    __m512 va = _mm512_set1_ps(alpha);
    if (!tb) {
        /* rows 2p and 2p + 1 of B interleaved */
        const __m512i mix = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        __mmask16 mk = lanes(N);
        for (int64_t p = 0; p < np; p++) {
            __m512 r0 = _mm512_maskz_loadu_ps(mk, B + 2 * p * ldb);
            __m512 r1 = 2 * p + 1 < K ? _mm512_maskz_loadu_ps(mk, B + (2 * p + 1) * ldb) : _mm512_setzero_ps();
            _mm512_storeu_ps(bp + p * 16, _mm512_mul_ps(va, _mm512_permutex2var_ps(r0, mix, r1)));
        }
        return;
    }
    /* op(B)[2p, j], op(B)[2p + 1, j] lie side by side in B's row j */
    for (int64_t p = 0; p < np; p++) {
        _mm512_storeu_ps(bp + p * 16, _mm512_setzero_ps());
        bool two = 2 * p + 1 < K;
        for (int64_t j = 0; j < N; j++) {
            const float *src = B + j * ldb + 2 * p;
            bp[p * 16 + 2 * j] = alpha * src[0];
            if (two)
                bp[p * 16 + 2 * j + 1] = alpha * src[1];
        }
    }
}

AVX512 static inline __attribute__((always_inline)) void pair_block(const int rb, int64_t i0, int nr, __mmask16 mk,
                                                                    int64_t K, const float *A, int64_t lda,
                                                                    const float *bp, float beta, float *C,
                                                                    int64_t ldc)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < rb; r++)
        acc[r] = _mm512_setzero_ps();
    const float *ar[16];
#pragma GCC unroll 16
    for (int r = 0; r < rb; r++)
        ar[r] = A + (i0 + (r < nr ? r : nr - 1)) * lda;
    int64_t kp = K / 2;
    for (int64_t p = 0; p < kp; p++) {
        __m512 b = _mm512_loadu_ps(bp + p * 16);
#pragma GCC unroll 16
        for (int r = 0; r < rb; r++) {
            double two;
            memcpy(&two, ar[r] + 2 * p, sizeof two);
            acc[r] = _mm512_fmadd_ps(_mm512_castpd_ps(_mm512_set1_pd(two)), b, acc[r]);
        }
    }
    if (K & 1) {
        __m512 b = _mm512_loadu_ps(bp + kp * 16);
#pragma GCC unroll 16
        for (int r = 0; r < rb; r++)
            acc[r] = _mm512_mask3_fmadd_ps(_mm512_set1_ps(ar[r][K - 1]), b, acc[r], 0x5555);
    }
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int r = 0; r < rb; r++) {
        if (r >= nr)
            break;
        float *c = C + (i0 + r) * ldc;
        __m512 x = _mm512_permutexvar_ps(even, _mm512_add_ps(acc[r], _mm512_permute_ps(acc[r], 0xb1)));
        if (beta != 0)
            x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, c), x);
        _mm512_mask_storeu_ps(c, mk, x);
    }
}

typedef void (*pair_fn)(int64_t M, __mmask16 mk, int64_t K, const float *A, int64_t lda, const float *bp,
                        float beta, float *C, int64_t ldc);

#define PAIR_FN(RBV)                                                                                            \
    AVX512 static void pairs_##RBV(int64_t M, __mmask16 mk, int64_t K, const float *A, int64_t lda,              \
                                   const float *bp, float beta, float *C, int64_t ldc)                           \
    {                                                                                                           \
        int64_t i = 0;                                                                                          \
        for (; i + RBV <= M; i += RBV)                                                                          \
            pair_block(RBV, i, RBV, mk, K, A, lda, bp, beta, C, ldc);                                           \
        if (i < M)                                                                                              \
            pair_block(RBV, i, (int)(M - i), mk, K, A, lda, bp, beta, C, ldc);                                  \
    }
PAIR_FN(8)
PAIR_FN(12)
PAIR_FN(14)
PAIR_FN(16)

static pair_fn pairs_plan(int64_t M)
{
    static const struct {
        int rb;
        pair_fn fn;
    } plans[4] = {{8, pairs_8}, {12, pairs_12}, {14, pairs_14}, {16, pairs_16}};
    pair_fn best = NULL;
    int64_t best_rows = 0;
    for (int c = 0; c < 4; c++) {
        int64_t rows = (M + plans[c].rb - 1) / plans[c].rb * plans[c].rb;
        if (!best || rows <= best_rows) {
            best = plans[c].fn;
            best_rows = rows;
        }
    }
    return best;
}

bool lt_sgemm_small_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const int64_t *offa, const float *B, int64_t ldb, const int64_t *offb,
                            float beta, float *C, int64_t ldc, const int64_t *offc, int64_t nb)
{
    if (!lt_cpu_avx512_gemm())
        return lt_sgemm_small_avx2_batched(ta, tb, M, N, K, alpha, A, lda, offa, B, ldb, offb, beta, C, ldc, offc,
                                           nb);
    if (!small_ok(tb, M, N, K, alpha))
        return false;
    float bp[SMALL_MAX_KN] __attribute__((aligned(64)));
    if (N <= 8 && !ta && K >= 2 && (K + 1) / 2 * 16 <= SMALL_MAX_KN) {
        pair_fn fn = pairs_plan(M);
        __mmask16 mk = lanes(N);
        for (int64_t i = 0; i < nb; i++) {
            pack_pairs(tb, N, K, alpha, B + offb[i], ldb, bp);
            fn(M, mk, K, A + offa[i], lda, bp, beta, C + offc[i], ldc);
        }
        return true;
    }
    rows_fn fn = rows_plan((int)((N + 15) / 16), M);
    for (int64_t i = 0; i < nb; i++)
        run_small(ta, tb, M, N, K, alpha, A + offa[i], lda, B + offb[i], ldb, beta, C + offc[i], ldc, bp, fn);
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

bool lt_sgemm_small_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const int64_t *offa, const float *B, int64_t ldb, const int64_t *offb,
                            float beta, float *C, int64_t ldc, const int64_t *offc, int64_t nb)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)offa, (void)B, (void)ldb,
        (void)offb, (void)beta, (void)C, (void)ldc, (void)offc, (void)nb;
    return false;
}

#endif
