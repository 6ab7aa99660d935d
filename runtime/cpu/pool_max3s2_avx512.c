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
 * bit for bit.
 *
 * Windows that the image clips (pads, ceil_mode: ResNet's 3x3 stride-2 pad-1
 * pool) take the *_any kernels: per grid row, the windows holding all three
 * of their columns in the image run 16 a step over the row's in-image
 * window rows, the others one by one; the gradient finds every window's
 * first maximum that way and then adds dy at it window by window in grid
 * order, the scalar kernel's order again. */
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
#pragma omp parallel for schedule(dynamic, lt_par_chunk(planes)) if (planes > 1 && planes * oh * ow * 9 >= LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < planes; pl++)
        fwd_plane(x + pl * ih * iw, y + pl * oh * ow, iw, oh, ow);
    return true;
}

bool lt_nn_maxpool3s2_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx)
{
    if (!ready(g) || g->grid[1] > 16 * MAX_CHUNKS)
        return false;
    int64_t ih = g->img[0], iw = g->img[1], oh = g->grid[0], ow = g->grid[1];
#pragma omp parallel for schedule(dynamic, lt_par_chunk(planes)) if (planes > 1 && planes * oh * ow * 9 >= LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < planes; pl++) {
        float pend[32 * MAX_CHUNKS];
        grad_plane(x + pl * ih * iw, dy + pl * oh * ow, dx + pl * ih * iw, iw, ih, oh, ow, pend);
    }
    return true;
}


/* ---- any pads and ceil_mode: windows that the image clips ---- */

/* The in-image taps of window p along an axis of `in` elements (stride 2,
 * pad pb before): its first tap's coordinate and their count (0 for a
 * window wholly in the padding) */
static inline int64_t clip3(int64_t p, int64_t pb, int64_t in, int64_t *first)
{
    int64_t st = 2 * p - pb, lo = st < 0 ? -st : 0, hi = in - st < 3 ? in - st : 3;
    *first = st + lo;
    return hi > lo ? hi - lo : 0;
}

/* The grid columns [*ox0, *ox1) whose windows hold all 3 columns in the image */
static inline void full_cols(const lt_nn_geom *g, int64_t *ox0, int64_t *ox1)
{
    int64_t pb = g->pb[1], iw = g->img[1], ow = g->grid[1];
    int64_t a = (pb + 1) / 2, b = iw - 3 + pb < 0 ? 0 : (iw - 3 + pb) / 2 + 1;
    b = b < ow ? b : ow;
    *ox0 = a < b ? a : b;
    *ox1 = b;
}

/* Window (ny rows from image row ry) at grid column ox: the first maximum
 * in scan order over its in-image taps, as an in-plane offset, and its
 * value in *best; -1 for a window with no tap in the image. */
static inline int64_t scalar_window(const float *x, int64_t iw, int64_t pbx, int64_t ry, int64_t ny, int64_t ox,
                                    float *best)
{
    int64_t cx, nx = clip3(ox, pbx, iw, &cx);
    if (ny <= 0 || nx <= 0)
        return -1;
    int64_t at = ry * iw + cx;
    float b = x[at];
    for (int64_t r = 0; r < ny; r++)
        for (int64_t c = 0; c < nx; c++) {
            int64_t o = (ry + r) * iw + cx + c;
            bool gt = x[o] > b;
            b = gt ? x[o] : b;
            at = gt ? o : at;
        }
    *best = b;
    return at;
}

/* grid rows [r0, r1) of every plane laid end to end */
AVX512 static void fwd_rows_any(const lt_nn_geom *g, const float *x, float *y, int64_t r0, int64_t r1)
{
    idx3 p = perms();
    int64_t ih = g->img[0], iw = g->img[1], oh = g->grid[0], ow = g->grid[1], pby = g->pb[0], pbx = g->pb[1];
    int64_t ox0, ox1;
    full_cols(g, &ox0, &ox1);
    for (int64_t row = r0; row < r1; row++) {
        const float *xp = x + row / oh * ih * iw;
        float *yr = y + row * ow;
        int64_t ry, ny = clip3(row % oh, pby, ih, &ry);
        for (int64_t ox = 0; ox < ow; ox++) {
            if (ox == ox0 && ny > 0)
                ox = ox1; /* the full columns go below */
            if (ox >= ow)
                break;
            float b = 0;
            scalar_window(xp, iw, pbx, ry, ny, ox, &b);
            yr[ox] = b; /* an empty window gives 0 */
        }
        if (ny <= 0)
            continue;
        for (int64_t ox = ox0; ox < ox1; ox += 16) {
            int64_t n = ox1 - ox < 16 ? ox1 - ox : 16;
            const float *r = xp + ry * iw + 2 * ox - pbx;
            __m512 t[9];
            for (int ty = 0; ty < ny; ty++)
                row_taps(&p, r + ty * iw, n, t + 3 * ty);
            __m512 best = t[0];
            for (int q = 1; q < 3 * ny; q++)
                best = _mm512_max_ps(t[q], best);
            _mm512_mask_storeu_ps(yr + ox, lo_mask(n), best);
        }
    }
}

/* The gradient of one plane: each window's first maximum (16 full-column
 * windows a step with AVX-512, the clipped ones one by one) as an in-plane
 * offset, then dy added there window by window in grid order, as the
 * scalar kernel adds it. at: ow entries. */
AVX512 static void grad_plane_any(const lt_nn_geom *g, const float *x, const float *dy, float *dx, int32_t *at)
{
    idx3 p = perms();
    int64_t ih = g->img[0], iw = g->img[1], oh = g->grid[0], ow = g->grid[1], pby = g->pb[0], pbx = g->pb[1];
    int64_t ox0, ox1;
    full_cols(g, &ox0, &ox1);
    memset(dx, 0, sizeof(float) * (size_t)(ih * iw));
    const __m512i lanes = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t oy = 0; oy < oh; oy++) {
        int64_t ry, ny = clip3(oy, pby, ih, &ry);
        if (ny <= 0)
            continue; /* windows wholly in the padding take nothing */
        /* the taps' offsets from a window's first tap */
        __m512i toff = _mm512_setr_epi32(0, 1, 2, (int)iw, (int)iw + 1, (int)iw + 2, (int)(2 * iw), (int)(2 * iw + 1),
                                         (int)(2 * iw + 2), 0, 0, 0, 0, 0, 0, 0);
        for (int64_t ox = 0; ox < ow; ox++) {
            if (ox == ox0)
                ox = ox1;
            if (ox >= ow)
                break;
            float b;
            at[ox] = (int32_t)scalar_window(x, iw, pbx, ry, ny, ox, &b);
        }
        for (int64_t ox = ox0; ox < ox1; ox += 16) {
            int64_t n = ox1 - ox < 16 ? ox1 - ox : 16, c = ry * iw + 2 * ox - pbx;
            __m512 t[9];
            for (int ty = 0; ty < ny; ty++)
                row_taps(&p, x + c + ty * iw, n, t + 3 * ty);
            __m512 best = t[0];
            __m512i q = _mm512_setzero_si512();
            for (int k = 1; k < 3 * ny; k++) {
                __mmask16 gt = _mm512_cmp_ps_mask(t[k], best, _CMP_GT_OQ);
                best = _mm512_mask_blend_ps(gt, best, t[k]);
                q = _mm512_mask_mov_epi32(q, gt, _mm512_set1_epi32(k));
            }
            /* offset = the window's first tap (c + 2 i) + the tap's offset */
            __m512i off = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32((int)c), lanes),
                                           _mm512_permutexvar_epi32(q, toff));
            _mm512_mask_storeu_epi32(at + ox, lo_mask(n), off);
        }
        const float *gy = dy + oy * ow;
        for (int64_t ox = 0; ox < ow; ox++)
            if (at[ox] >= 0)
                dx[at[ox]] += gy[ox];
    }
}

/* the gradient's offsets live on the stack: grids up to this wide */
#define MAX_ANY_OW 4096

static bool any_ready(const lt_nn_geom *g)
{
    return lt_cpu_avx512() && g->nsp == 2 && g->k[0] == 3 && g->k[1] == 3 && g->s[0] == 2 && g->s[1] == 2 &&
           g->d[0] == 1 && g->d[1] == 1 && g->grid[0] >= 1 && g->grid[1] >= 1 && g->grid[1] <= MAX_ANY_OW &&
           g->img[0] * g->img[1] < INT32_MAX / 2;
}

bool lt_nn_maxpool3s2_any_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y)
{
    if (!any_ready(g))
        return false;
    int64_t rows = planes * g->grid[0], ow = g->grid[1];
    /* chunks of about 8192 outputs, taken in turn by the threads */
    int64_t chunk = 8192 / ow + 1, nchunks = (rows + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1) if (nchunks > 1 && rows * ow * 9 >= LT_NN_PAR_MIN)
    for (int64_t q = 0; q < nchunks; q++)
        fwd_rows_any(g, x, y, q * chunk, (q + 1) * chunk < rows ? (q + 1) * chunk : rows);
    return true;
}

bool lt_nn_maxpool3s2_any_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx)
{
    if (!any_ready(g))
        return false;
    int64_t in_plane = g->img[0] * g->img[1], out_plane = g->grid[0] * g->grid[1];
#pragma omp parallel for schedule(dynamic, lt_par_chunk(planes)) if (planes > 1 && planes * out_plane * 9 >= LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < planes; pl++) {
        int32_t at[MAX_ANY_OW];
        grad_plane_any(g, x + pl * in_plane, dy + pl * out_plane, dx + pl * in_plane, at);
    }
    return true;
}

#else

bool lt_nn_maxpool3s2_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y) { return false; }
bool lt_nn_maxpool3s2_any_f32(const lt_nn_geom *g, int64_t planes, const float *x, float *y) { return false; }
bool lt_nn_maxpool3s2_any_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx)
{
    return false;
}

bool lt_nn_maxpool3s2_grad_f32(const lt_nn_geom *g, int64_t planes, const float *x, const float *dy, float *dx)
{
    return false;
}

#endif
