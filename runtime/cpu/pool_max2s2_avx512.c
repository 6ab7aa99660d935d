/* MaxPool on float32 planes for 2x2 windows with stride 2 wholly inside
 * the image (lt_nn_plain2d: CNNs' pooling), 16 windows of a grid row a
 * step with AVX-512: a window row's two taps for 16 windows are the even
 * and odd lanes of 32 image floats, split apart by permutes. The maximum
 * is taken in scan order with the scalar kernels' comparison (a tap
 * replaces the best only when v > best: max_ps(v, best)), so NaNs and
 * signed zeros come out bit for bit alike. Rows of the grid (over every
 * plane) are shared out among the threads in chunks taken in turn, so a
 * thread that loses its core leaves its rows to the other. */
#include "nn_util.h"
#include "cpu_features.h"
#include <omp.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* lanes [0, q) of the first of two registers, and of the second */
static inline __mmask16 lo_mask(int64_t q) { return (__mmask16)(q >= 16 ? 0xffff : (1u << (q < 0 ? 0 : q)) - 1); }
static inline __mmask16 hi_mask(int64_t q) { return (__mmask16)(q > 16 ? (1u << (q - 16)) - 1 : 0); }

/* grid rows [r0, r1) of every plane laid end to end */
AVX512 static void fwd_rows(const float *x, float *y, int64_t r0, int64_t r1, int64_t oh, int64_t ow, int64_t iw,
                            int64_t in_plane)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t row = r0; row < r1; row++) {
        const float *a = x + row / oh * in_plane + 2 * (row % oh) * iw, *b = a + iw;
        float *yr = y + row * ow;
        for (int64_t ox = 0; ox < ow; ox += 16) {
            int64_t n = ow - ox < 16 ? ow - ox : 16, c = 2 * ox;
            __mmask16 ma = lo_mask(2 * n), mb = hi_mask(2 * n);
            /* (a masked load whose masked-off part crosses into another
             * page is slow, even wholly masked off: the second registers
             * only when needed) */
            __m512 a0 = _mm512_maskz_loadu_ps(ma, a + c), b0 = _mm512_maskz_loadu_ps(ma, b + c);
            __m512 a1 = n > 8 ? _mm512_maskz_loadu_ps(mb, a + c + 16) : _mm512_setzero_ps();
            __m512 b1 = n > 8 ? _mm512_maskz_loadu_ps(mb, b + c + 16) : _mm512_setzero_ps();
            __m512 best = _mm512_permutex2var_ps(a0, even, a1);
            best = _mm512_max_ps(_mm512_permutex2var_ps(a0, odd, a1), best);
            best = _mm512_max_ps(_mm512_permutex2var_ps(b0, even, b1), best);
            best = _mm512_max_ps(_mm512_permutex2var_ps(b0, odd, b1), best);
            _mm512_mask_storeu_ps(yr + ox, lo_mask(n), best);
        }
    }
}

bool lt_nn_maxpool2s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y)
{
    if (!lt_cpu_avx512() || g->nsp != 2 || g->k[0] != 2 || g->k[1] != 2 || g->s[0] != 2 || g->s[1] != 2 ||
        !lt_nn_plain2d(g))
        return false;
    int64_t oh = g->grid[0], ow = g->grid[1], iw = g->img[1], in_plane = g->img[0] * iw, rows = planes * oh;
    /* chunks of about 16384 outputs: a few dozen for the threads to take */
    int64_t chunk = 16384 / ow + 1, nchunks = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1) if (nchunks > 1 && rows * ow * 4 >= LT_NN_PAR_MIN)
    for (int64_t q = 0; q < nchunks; q++) {
        int64_t r1 = (q + 1) * chunk < rows ? (q + 1) * chunk : rows;
        fwd_rows(x, y, q * chunk, r1, oh, ow, iw, in_plane);
    }
    return true;
}

#else

bool lt_nn_maxpool2s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y) { return false; }

#endif
