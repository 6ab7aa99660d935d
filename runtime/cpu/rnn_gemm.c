/* float32 products with a recurrent weight packed once (AVX-512, or AVX2
 * and FMA): a recurrence multiplies the same R by a new state every step
 * (h R^T forward, the gate gradients times R backward), and a general GEMM
 * packs R again each time. Here op(R) is packed once per kernel call into
 * panels of 32 columns (k-major, the last one zero-padded); each step's
 * product reads the state rows in place, 8 rows by 32 columns of
 * accumulators at a time with AVX-512, 6 rows by 16 columns (half a panel)
 * with AVX2, and every output's sum runs over k in order from zero, one FMA
 * a term, so results do not depend on how the batch is split over threads
 * (nor on which of the two kernels ran). */
#include "grad_rnn_util.h"
#include "cpu_features.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "avx2_tail.h"

#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))
#define NR 32 /* panel width */
#define MR 8  /* AVX-512 block rows */
#define HR 16 /* AVX2 block columns: half a panel */
#define MR2 6 /* AVX2 block rows */

static inline __mmask16 mask_of(int64_t n)
{
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

bool lt_rgemm_have(void) { return lt_cpu_avx512_gemm() || lt_cpu_avx2_gemm(); }

int64_t lt_rgemm_packed_len(int64_t N, int64_t K)
{
    return (N + NR - 1) / NR * NR * K;
}

/* column c of op(B) rows k0 .. k0 + K - 1 of a panel: dst[k * NR + c] */
static void pack_part(bool tb, int64_t n0, int64_t nc, int64_t K, const float *B, int64_t ldb, float *dst)
{
    for (int64_t k = 0; k < K; k++) {
        for (int64_t c = 0; c < nc; c++)
            dst[k * NR + c] = tb ? B[(n0 + c) * ldb + k] : B[k * ldb + n0 + c];
        for (int64_t c = nc; c < NR; c++)
            dst[k * NR + c] = 0;
    }
}

void lt_rgemm_pack2(bool tb, int64_t N, int64_t K1, const float *B1, int64_t ldb1, int64_t K2, const float *B2,
                    int64_t ldb2, float *packed)
{
    int64_t K = K1 + K2;
    for (int64_t p = 0; p * NR < N; p++) {
        float *dst = packed + p * NR * K;
        int64_t n0 = p * NR, nc = N - n0 < NR ? N - n0 : NR;
        pack_part(tb, n0, nc, K1, B1, ldb1, dst);
        pack_part(tb, n0, nc, K2, B2, ldb2, dst + K1 * NR);
    }
}

void lt_rgemm_pack(bool tb, int64_t N, int64_t K, const float *B, int64_t ldb, float *packed)
{
    lt_rgemm_pack2(tb, N, K, B, ldb, 0, NULL, 0, packed);
}

/* rows i0 .. i0 + R - 1 (R a constant where inlined) of C's columns n0 ..
 * n0 + nc - 1: [A1 | A2] (K1 then K2 columns) times the panel */
AVX512 static inline __attribute__((always_inline)) void block(const int R, int64_t K1, const float *A1,
                                                               int64_t lda1, int64_t K2, const float *A2,
                                                               int64_t lda2, const float *pb, float beta, float *C,
                                                               int64_t ldc, int64_t nc)
{
    __m512 acc[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K1; k++) {
        __m512 b0 = _mm512_loadu_ps(pb + k * NR), b1 = _mm512_loadu_ps(pb + k * NR + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 a = _mm512_set1_ps(A1[r * lda1 + k]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    pb += K1 * NR;
    for (int64_t k = 0; k < K2; k++) {
        __m512 b0 = _mm512_loadu_ps(pb + k * NR), b1 = _mm512_loadu_ps(pb + k * NR + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 a = _mm512_set1_ps(A2[r * lda2 + k]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    __mmask16 m0 = mask_of(nc), m1 = mask_of(nc - 16);
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        float *c = C + r * ldc;
        if (beta != 0) {
            acc[r][0] = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), acc[r][1]);
        }
        _mm512_mask_storeu_ps(c, m0, acc[r][0]);
        _mm512_mask_storeu_ps(c + 16, m1, acc[r][1]);
    }
}

AVX512 static void run2_avx512(int64_t M, int64_t N, int64_t K1, const float *A1, int64_t lda1, int64_t K2,
                               const float *A2, int64_t lda2, const float *packed, float beta, float *C, int64_t ldc)
{
    int64_t K = K1 + K2;
    for (int64_t p = 0; p * NR < N; p++) {
        const float *pb = packed + p * NR * K;
        int64_t n0 = p * NR, nc = N - n0 < NR ? N - n0 : NR;
        int64_t i = 0;
        for (; i + MR <= M; i += MR)
            block(MR, K1, A1 + i * lda1, lda1, K2, A2 + i * lda2, lda2, pb, beta, C + i * ldc + n0, ldc, nc);
        for (; i + 4 <= M; i += 4)
            block(4, K1, A1 + i * lda1, lda1, K2, A2 + i * lda2, lda2, pb, beta, C + i * ldc + n0, ldc, nc);
        for (; i < M; i++)
            block(1, K1, A1 + i * lda1, lda1, K2, A2 + i * lda2, lda2, pb, beta, C + i * ldc + n0, ldc, nc);
    }
}

/* the AVX2 block: rows i0 .. i0 + R - 1 (R <= MR2, a constant where
 * inlined) of C's columns n0 .. n0 + nc - 1 (nc <= HR) against half a
 * panel (pb: its first column; its rows NR apart) */
AVX2 static inline __attribute__((always_inline)) void block_avx2(const int R, int64_t K1, const float *A1,
                                                                  int64_t lda1, int64_t K2, const float *A2,
                                                                  int64_t lda2, const float *pb, float beta, float *C,
                                                                  int64_t ldc, int64_t nc)
{
    __m256 acc[MR2][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K1; k++) {
        __m256 b0 = _mm256_loadu_ps(pb + k * NR), b1 = _mm256_loadu_ps(pb + k * NR + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 a = _mm256_broadcast_ss(A1 + r * lda1 + k);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    pb += K1 * NR;
    for (int64_t k = 0; k < K2; k++) {
        __m256 b0 = _mm256_loadu_ps(pb + k * NR), b1 = _mm256_loadu_ps(pb + k * NR + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 a = _mm256_broadcast_ss(A2 + r * lda2 + k);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    __m256i m0 = lt_avx2_lanes(0, nc), m1 = lt_avx2_lanes(0, nc - 8);
    __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        float *c = C + r * ldc;
        if (nc == HR) {
            if (beta != 0) {
                acc[r][0] = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8), acc[r][1]);
            }
            _mm256_storeu_ps(c, acc[r][0]);
            _mm256_storeu_ps(c + 8, acc[r][1]);
        } else {
            if (beta != 0) {
                acc[r][0] = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c, m0), acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c + 8, m1), acc[r][1]);
            }
            _mm256_maskstore_ps(c, m0, acc[r][0]);
            _mm256_maskstore_ps(c + 8, m1, acc[r][1]);
        }
    }
}

/* rows i0 .. M - 1 (fewer than MR2) of one half panel */
AVX2 static void rest_avx2(int64_t rows, int64_t K1, const float *A1, int64_t lda1, int64_t K2, const float *A2,
                           int64_t lda2, const float *pb, float beta, float *C, int64_t ldc, int64_t nc)
{
    switch (rows) {
    case 5: block_avx2(5, K1, A1, lda1, K2, A2, lda2, pb, beta, C, ldc, nc); break;
    case 4: block_avx2(4, K1, A1, lda1, K2, A2, lda2, pb, beta, C, ldc, nc); break;
    case 3: block_avx2(3, K1, A1, lda1, K2, A2, lda2, pb, beta, C, ldc, nc); break;
    case 2: block_avx2(2, K1, A1, lda1, K2, A2, lda2, pb, beta, C, ldc, nc); break;
    case 1: block_avx2(1, K1, A1, lda1, K2, A2, lda2, pb, beta, C, ldc, nc); break;
    default: break;
    }
}

/* half panels outermost: one half's K rows of 16 columns (a cache line
 * each) and a batch slice's rows of A stay in L1 while the blocks run */
AVX2 static void run2_avx2(int64_t M, int64_t N, int64_t K1, const float *A1, int64_t lda1, int64_t K2,
                           const float *A2, int64_t lda2, const float *packed, float beta, float *C, int64_t ldc)
{
    int64_t K = K1 + K2;
    for (int64_t n0 = 0; n0 < N; n0 += HR) {
        const float *pb = packed + n0 / NR * NR * K + n0 % NR;
        int64_t nc = N - n0 < HR ? N - n0 : HR, i = 0;
        for (; i + MR2 <= M; i += MR2)
            block_avx2(MR2, K1, A1 + i * lda1, lda1, K2, A2 + i * lda2, lda2, pb, beta, C + i * ldc + n0, ldc, nc);
        rest_avx2(M - i, K1, A1 + i * lda1, lda1, K2, A2 + i * lda2, lda2, pb, beta, C + i * ldc + n0, ldc, nc);
    }
}

void lt_rgemm_run2(int64_t M, int64_t N, int64_t K1, const float *A1, int64_t lda1, int64_t K2, const float *A2,
                   int64_t lda2, const float *packed, float beta, float *C, int64_t ldc)
{
    if (lt_cpu_avx512_gemm())
        run2_avx512(M, N, K1, A1, lda1, K2, A2, lda2, packed, beta, C, ldc);
    else
        run2_avx2(M, N, K1, A1, lda1, K2, A2, lda2, packed, beta, C, ldc);
}

void lt_rgemm_run(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *packed, float beta,
                  float *C, int64_t ldc)
{
    lt_rgemm_run2(M, N, K, A, lda, 0, A, lda, packed, beta, C, ldc);
}

#else

bool lt_rgemm_have(void) { return false; }
int64_t lt_rgemm_packed_len(int64_t N, int64_t K) { return (N + 31) / 32 * 32 * K; }
void lt_rgemm_pack2(bool tb, int64_t N, int64_t K1, const float *B1, int64_t ldb1, int64_t K2, const float *B2,
                    int64_t ldb2, float *packed)
{
    (void)tb, (void)N, (void)K1, (void)B1, (void)ldb1, (void)K2, (void)B2, (void)ldb2, (void)packed;
}
void lt_rgemm_pack(bool tb, int64_t N, int64_t K, const float *B, int64_t ldb, float *packed)
{
    (void)tb, (void)N, (void)K, (void)B, (void)ldb, (void)packed;
}
void lt_rgemm_run2(int64_t M, int64_t N, int64_t K1, const float *A1, int64_t lda1, int64_t K2, const float *A2,
                   int64_t lda2, const float *packed, float beta, float *C, int64_t ldc)
{
    (void)M, (void)N, (void)K1, (void)A1, (void)lda1, (void)K2, (void)A2, (void)lda2, (void)packed, (void)beta,
        (void)C, (void)ldc;
}
void lt_rgemm_run(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *packed, float beta,
                  float *C, int64_t ldc)
{
    (void)M, (void)N, (void)K, (void)A, (void)lda, (void)packed, (void)beta, (void)C, (void)ldc;
}

#endif
