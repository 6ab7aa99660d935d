/* MaxPool and MaxPoolGrad on float32 planes for 3x3 windows with stride 2,
 * unit dilation and every window wholly inside the image (lt_nn_plain2d:
 * SqueezeNet's and AlexNet's pools), 16 windows of a grid row a step with
 * AVX-512. A window row's three taps for 16 windows are the even, odd and
 * shifted-even lanes of 33 image floats, split apart by permutes.
 *
 * The forward takes the maximum with the scalar kernels' comparison (a tap
 * replaces the best only when v > best), so NaNs and signed zeros come out
 * alike. The gradient finds each window's first maximum in scan order the
 * same way and adds dy into dx row by row: per image row, a grid row's
 * contributions go in window order (an even column's share of the window
 * to its left before its own), grid row after grid row, which is the
 * order the scalar kernel's dx[at] += dy adds them in, so the sums match
 * bit for bit. */
#include "nn_util.h"
#include "cpu_features.h"
#include <omp.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

static bool usable(const lt_nn_geom *g)
{
    return g->nsp == 2 && g->k[0] == 3 && g->k[1] == 3 && g->s[0] == 2 && g->s[1] == 2 && g->d[0] == 1 &&
           g->d[1] == 1 && lt_nn_plain2d(g);
}

/* lanes [0, q) of the first of two registers, and of the second */
static inline __mmask16 lo_mask(int64_t q) { return (__mmask16)(q >= 16 ? 0xffff : (1u << (q < 0 ? 0 : q)) - 1); }
static inline __mmask16 hi_mask(int64_t q) { return (__mmask16)(q > 16 ? (1u << (q - 16)) - 1 : 0); }

typedef struct idx3 {
    __m512i even, odd, lo, hi;
} idx3;

AVX512 static idx3 perms(void)
{
    return (idx3){_mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
                  _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31),
                  _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
                  _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)};
}

/* The three taps of one window row for the n (1..16) windows whose first
 * column is r[0], r[2], ...: t[0] reads r[2i], t[1] r[2i + 1], t[2]
 * r[2i + 2]; lanes from n on are 0. Reads r[0 .. 2n]. */
AVX512 static inline void row_taps(const idx3 *p, const float *r, int64_t n, __m512 *t)
{
    __mmask16 a = lo_mask(2 * n), b = hi_mask(2 * n), a2 = lo_mask(2 * n - 1), b2 = hi_mask(2 * n - 1);
    /* (a masked load whose masked-off part crosses into another page is
     * slow, even wholly masked off: the second registers only when needed) */
    __m512 x0 = _mm512_maskz_loadu_ps(a, r), y0 = _mm512_maskz_loadu_ps(a2, r + 2);
    __m512 x1 = n > 8 ? _mm512_maskz_loadu_ps(b, r + 16) : _mm512_setzero_ps();
    __m512 y1 = n > 8 ? _mm512_maskz_loadu_ps(b2, r + 18) : _mm512_setzero_ps();
    t[0] = _mm512_permutex2var_ps(x0, p->even, x1);
    t[1] = _mm512_permutex2var_ps(x0, p->odd, x1);
    t[2] = _mm512_permutex2var_ps(y0, p->even, y1);
}

AVX512 static void fwd_plane(const float *x, float *y, int64_t iw, int64_t oh, int64_t ow)
{
    idx3 p = perms();
    for (int64_t oy = 0; oy < oh; oy++) {
        const float *r0 = x + 2 * oy * iw;
        float *yr = y + oy * ow;
        for (int64_t ox = 0; ox < ow; ox += 16) {
            int64_t n = ow - ox < 16 ? ow - ox : 16;
            __m512 t[9];
            for (int ty = 0; ty < 3; ty++)
                row_taps(&p, r0 + ty * iw + 2 * ox, n, t + 3 * ty);
            /* max_ps(v, best) is v > best ? v : best */
            __m512 best = t[0];
            for (int q = 1; q < 9; q++)
                best = _mm512_max_ps(t[q], best);
            _mm512_mask_storeu_ps(yr + ox, lo_mask(n), best);
        }
    }
}

/* lane k of v */
AVX512 static inline float lane(__m512 v, int64_t k)
{
    return _mm512_cvtss_f32(_mm512_permutexvar_ps(_mm512_set1_epi32((int)k), v));
}

/* Writes image row d's columns [0, 2n) from its even and odd columns */
AVX512 static inline void put_row(const idx3 *p, float *d, int64_t n, __m512 ev, __m512 od)
{
    _mm512_mask_storeu_ps(d, lo_mask(2 * n), _mm512_permutex2var_ps(ev, p->lo, od));
    _mm512_mask_storeu_ps(d + 16, hi_mask(2 * n), _mm512_permutex2var_ps(ev, p->hi, od));
}

/* Grid row oy's shares go to image rows 2 oy, 2 oy + 1 and 2 oy + 2; the
 * last is also row 2 (oy + 1)'s first, so its sums wait in pend (even and
 * odd columns, 16 windows a chunk, and the column after the last window)
 * and dx is written once, never read: a read of what a masked store has
 * just written stalls until that store retires. */
AVX512 static void grad_plane(const float *x, const float *dy, float *dx, int64_t iw, int64_t ih, int64_t oh,
                              int64_t ow, float *pend)
{
    idx3 p = perms();
    int64_t chunks = (ow + 15) / 16;
    float *pe = pend, *po = pend + 16 * chunks, pend_tail = 0;
    const __m512 zero = _mm512_setzero_ps();
    memset(dx, 0, sizeof(float) * (size_t)(ih * iw));
    for (int64_t q = 0; q < 32 * chunks; q++)
        pend[q] = 0;
    for (int64_t oy = 0; oy < oh; oy++) {
        const float *r0 = x + 2 * oy * iw, *gy = dy + oy * ow;
        float *d0 = dx + 2 * oy * iw;
        /* per window row: the third taps' shares of the previous 16 windows */
        __m512 carry[3] = {zero, zero, zero};
        for (int64_t ch = 0; ch < chunks; ch++) {
            int64_t ox = 16 * ch, n = ow - ox < 16 ? ow - ox : 16, c = 2 * ox;
            __m512 t[9];
            for (int ty = 0; ty < 3; ty++)
                row_taps(&p, r0 + ty * iw + c, n, t + 3 * ty);
            /* the first maximum in scan order */
            __m512 best = t[0];
            __m512i at = _mm512_setzero_si512();
            for (int q = 1; q < 9; q++) {
                __mmask16 gt = _mm512_cmp_ps_mask(t[q], best, _CMP_GT_OQ);
                best = _mm512_mask_blend_ps(gt, best, t[q]);
                at = _mm512_mask_mov_epi32(at, gt, _mm512_set1_epi32(q));
            }
            __m512 g = _mm512_maskz_loadu_ps(lo_mask(n), gy + ox);
            for (int ty = 0; ty < 3; ty++) {
                __m512 s[3];
                for (int tx = 0; tx < 3; tx++)
                    s[tx] = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, _mm512_set1_epi32(3 * ty + tx)), g);
                /* lane i: the third tap's share of window ox + i - 1 */
                __m512 left = _mm512_castsi512_ps(
                    _mm512_alignr_epi32(_mm512_castps_si512(s[2]), _mm512_castps_si512(carry[ty]), 15));
                carry[ty] = s[2];
                /* each sum in window order: the row above's, then the left window's, then its own */
                __m512 ev0 = ty == 0 ? _mm512_loadu_ps(pe + ox) : zero, od0 = ty == 0 ? _mm512_loadu_ps(po + ox) : zero;
                __m512 ev = _mm512_add_ps(_mm512_add_ps(ev0, left), s[0]), od = _mm512_add_ps(od0, s[1]);
                float tail = 0;
                if (ox + n == ow) {
                    /* the last window's third tap: the column after the row's stretch */
                    float t0 = ty == 0 ? pend_tail : 0;
                    tail = t0 + lane(s[2], n - 1);
                }
                if (ty == 2) {
                    _mm512_storeu_ps(pe + ox, ev);
                    _mm512_storeu_ps(po + ox, od);
                    if (ox + n == ow)
                        pend_tail = tail;
                } else {
                    float *d = d0 + ty * iw;
                    put_row(&p, d + c, n, ev, od);
                    if (ox + n == ow)
                        d[2 * ow] = tail;
                }
            }
        }
    }
    /* image row 2 oh: the last grid row's third window row alone */
    float *d = dx + 2 * oh * iw;
    for (int64_t ch = 0; ch < chunks; ch++) {
        int64_t ox = 16 * ch, n = ow - ox < 16 ? ow - ox : 16;
        put_row(&p, d + 2 * ox, n, _mm512_loadu_ps(pe + ox), _mm512_loadu_ps(po + ox));
    }
    d[2 * ow] = pend_tail;
}

/* the gradient's pending row lives on the stack: grids up to 16 x this wide */
#define MAX_CHUNKS 64

static bool ready(const lt_nn_geom *g) { return lt_cpu_avx512() && usable(g); }

bool lt_nn_maxpool3s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y)
{
    if (!ready(g))
        return false;
    int64_t ih = g->img[0], iw = g->img[1], oh = g->grid[0], ow = g->grid[1];
#pragma omp parallel for schedule(static) if (planes > 1 && planes * oh * ow * 9 >= LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < planes; pl++)
        fwd_plane(x + pl * ih * iw, y + pl * oh * ow, iw, oh, ow);
    return true;
}

bool lt_nn_maxpool3s2_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx)
{
    if (!ready(g) || g->grid[1] > 16 * MAX_CHUNKS)
        return false;
    int64_t ih = g->img[0], iw = g->img[1], oh = g->grid[0], ow = g->grid[1];
#pragma omp parallel for schedule(static) if (planes > 1 && planes * oh * ow * 9 >= LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < planes; pl++) {
        float pend[32 * MAX_CHUNKS];
        grad_plane(x + pl * ih * iw, dy + pl * oh * ow, dx + pl * ih * iw, iw, ih, oh, ow, pend);
    }
    return true;
}

#else

bool lt_nn_maxpool3s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y) { return false; }

bool lt_nn_maxpool3s2_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx)
{
    return false;
}

#endif
