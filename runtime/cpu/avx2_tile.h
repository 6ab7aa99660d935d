/* The AVX2 pieces that the float32 GEMM (sgemm_avx2.c) and the convolution
 * panels (nn_conv_panels_avx2.c) share: the 8x8 in-register transpose that
 * packs transposed operands, and the sums of the 6 x 16 register tile (12
 * of the 16 ymm registers as accumulators, two for a row of the 16-column
 * operand and one for a broadcast). Only for x86-64 GCC builds; the
 * callers' functions carry target("avx2,fma"). */
#ifndef LT_CPU_AVX2_TILE_H
#define LT_CPU_AVX2_TILE_H

#include <immintrin.h>
#include <stdint.h>

#define LT_AVX2_MR 6
#define LT_AVX2_NR 16

/* r[0..7] become their transpose: r[c] = (old r[0][c], ..., old r[7][c]) */
__attribute__((target("avx2,fma"), always_inline)) static inline void lt_avx2_tr8(__m256 *r)
{
    __m256 t[8], u[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4h + j], 128-bit half l: element 4l + j of rows 4h .. 4h + 3 */
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
        u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

/* acc[r][h] = sum over k < kc of pa[k MR + r] * pb[k NR + 8 h + lane], in
 * order of k, from zero: op(A) packed in panels of MR rows, op(B) in
 * panels of NR columns */
__attribute__((target("avx2,fma"), always_inline)) static inline void
lt_avx2_tile_sums(int64_t kc, const float *pa, const float *pb, __m256 acc[LT_AVX2_MR][2])
{
    /* fully unrolled, so that the 12 accumulators live in registers */
#pragma GCC unroll 6
    for (int r = 0; r < LT_AVX2_MR; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(pb + k * LT_AVX2_NR), b1 = _mm256_loadu_ps(pb + k * LT_AVX2_NR + 8);
        const float *a = pa + k * LT_AVX2_MR;
#pragma GCC unroll 6
        for (int r = 0; r < LT_AVX2_MR; r++) {
            __m256 ar = _mm256_broadcast_ss(a + r);
            acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
        }
    }
}

#endif
