/* The register tile the two lane kernels of the convolution share
 * (nn_conv_filter.c: output channels in the lanes; nn_conv_images.c:
 * images in the lanes): 8 rows by 32 lanes in 16 AVX-512 registers,
 * acc[2 k + h] for row k and lanes 16 h .. 16 h + 15. Each step broadcasts
 * bp[off[k]] for the 8 rows and adds its product with the 32 floats at vp
 * (aligned) to the rows' sums, one multiply-add a register, rows in order.
 * Used inside an AVX-512 function:
 *     LT_CONV_TILE_BEGIN(acc, more, off);   (more: go on from acc's values)
 *     for (...) LT_CONV_TILE_STEP(bp, vp);
 *     LT_CONV_TILE_END(acc);                (the sums back into acc) */
#ifndef LT_CPU_NN_CONV_TILE_H
#define LT_CPU_NN_CONV_TILE_H

#include <immintrin.h>

#define LT_CONV_TILE_BEGIN(acc, more, off)                                                                         \
    __m512 a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7;                                        \
    if (more) {                                                                                                    \
        a0 = (acc)[0], b0 = (acc)[1], a1 = (acc)[2], b1 = (acc)[3], a2 = (acc)[4], b2 = (acc)[5];                  \
        a3 = (acc)[6], b3 = (acc)[7], a4 = (acc)[8], b4 = (acc)[9], a5 = (acc)[10], b5 = (acc)[11];                \
        a6 = (acc)[12], b6 = (acc)[13], a7 = (acc)[14], b7 = (acc)[15];                                            \
    } else {                                                                                                       \
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _mm512_setzero_ps();                                               \
        b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = a0;                                                                \
    }                                                                                                              \
    const int64_t f0 = (off)[0], f1 = (off)[1], f2 = (off)[2], f3 = (off)[3], f4 = (off)[4], f5 = (off)[5],        \
                  f6 = (off)[6], f7 = (off)[7]

#define LT_CONV_TILE_ROW(a, b, bp, f)                                                                              \
    do {                                                                                                           \
        __m512 v_ = _mm512_set1_ps((bp)[f]);                                                                       \
        a = _mm512_fmadd_ps(v_, lo_, a);                                                                           \
        b = _mm512_fmadd_ps(v_, hi_, b);                                                                           \
    } while (0)

#define LT_CONV_TILE_STEP(bp, vp)                                                                                  \
    do {                                                                                                           \
        const float *p_ = (bp);                                                                                    \
        __m512 lo_ = _mm512_load_ps(vp), hi_ = _mm512_load_ps((vp) + 16);                                         \
        LT_CONV_TILE_ROW(a0, b0, p_, f0);                                                                          \
        LT_CONV_TILE_ROW(a1, b1, p_, f1);                                                                          \
        LT_CONV_TILE_ROW(a2, b2, p_, f2);                                                                          \
        LT_CONV_TILE_ROW(a3, b3, p_, f3);                                                                          \
        LT_CONV_TILE_ROW(a4, b4, p_, f4);                                                                          \
        LT_CONV_TILE_ROW(a5, b5, p_, f5);                                                                          \
        LT_CONV_TILE_ROW(a6, b6, p_, f6);                                                                          \
        LT_CONV_TILE_ROW(a7, b7, p_, f7);                                                                          \
    } while (0)

#define LT_CONV_TILE_END(acc)                                                                                      \
    do {                                                                                                           \
        (acc)[0] = a0, (acc)[1] = b0, (acc)[2] = a1, (acc)[3] = b1, (acc)[4] = a2, (acc)[5] = b2;                  \
        (acc)[6] = a3, (acc)[7] = b3, (acc)[8] = a4, (acc)[9] = b4, (acc)[10] = a5, (acc)[11] = b5;                \
        (acc)[12] = a6, (acc)[13] = b6, (acc)[14] = a7, (acc)[15] = b7;                                            \
    } while (0)

#endif
