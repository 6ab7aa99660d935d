/* CPU kernels: nn family (convolutions, pools, RoI ops, Col2Im). This file
 * registers the family and holds what its kernels share: im2col / col2im,
 * GEMM dispatch, dtype conversions (nn_util.h). */
#include "nn_util.h"
#include "linalg_util.h"
#include "cpu_features.h"
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

/* The range [lo, hi) of window positions p in [0, n) for which p*s + off
 * lies inside [0, size). */
static void valid_range(int64_t off, int64_t s, int64_t size, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = size - off <= 0 ? 0 : (size - off + s - 1) / s;
    if (b > n)
        b = n;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}

/* Walks the column-matrix row (c, tap) over the columns [c0, c1) one run
 * at a time: a run is the window positions along the last grid axis for
 * fixed outer positions, clipped to the column range. For each run it
 * gives the offset of the run's position 0 in the tile (may be negative),
 * the image offset of position 0, the clipped positions [a, b) and whether
 * the outer coordinates lie inside the image; inside the image along the
 * last axis are positions [lo, hi). */
typedef struct row_iter {
    const lt_nn_geom *g;
    int64_t off[LT_MAX_RANK]; /* tap * dilation - pad_begin per axis */
    int64_t pos[LT_MAX_RANK]; /* outer grid coordinates of the next run */
    int64_t lo, hi, width, q, qend, c0, c1;
} row_iter;

static void row_iter_init(row_iter *it, const lt_nn_geom *g, int64_t tap, int64_t c0, int64_t c1)
{
    int n = g->nsp;
    it->g = g;
    for (int d = n - 1; d >= 0; d--) {
        it->off[d] = tap % g->k[d] * g->d[d] - g->pb[d];
        tap /= g->k[d];
    }
    valid_range(it->off[n - 1], g->s[n - 1], g->img[n - 1], g->grid[n - 1], &it->lo, &it->hi);
    it->width = g->grid[n - 1];
    it->c0 = c0;
    it->c1 = c1;
    it->q = c0 / it->width;
    it->qend = (c1 + it->width - 1) / it->width;
    int64_t q = it->q;
    for (int d = n - 2; d >= 0; d--) {
        it->pos[d] = q % g->grid[d];
        q /= g->grid[d];
    }
}

typedef struct run {
    int64_t colo, imgo, a, b;
    bool inside;
} run;

static inline bool row_iter_next(row_iter *it, run *r)
{
    if (it->q >= it->qend)
        return false;
    const lt_nn_geom *g = it->g;
    int last = g->nsp - 1;
    bool ok = true;
    int64_t base = 0;
    for (int d = 0; d < last; d++) {
        int64_t i = it->pos[d] * g->s[d] + it->off[d];
        ok = ok && i >= 0 && i < g->img[d];
        base = base * g->img[d] + i;
    }
    int64_t start = it->q * it->width;
    r->colo = start - it->c0;
    r->imgo = base * g->img[last] + it->off[last];
    r->a = it->c0 > start ? it->c0 - start : 0;
    r->b = it->c1 - start < it->width ? it->c1 - start : it->width;
    r->inside = ok;
    it->q++;
    for (int d = last - 1; d >= 0; d--) {
        if (++it->pos[d] < g->grid[d])
            break;
        it->pos[d] = 0;
    }
    return true;
}

/* the clipped run [a, b) split by the image's extent [lo, hi) */
static inline void clip(const row_iter *it, const run *r, int64_t *plo, int64_t *phi)
{
    int64_t x = it->lo > r->a ? it->lo : r->a, y = it->hi < r->b ? it->hi : r->b;
    *plo = x;
    *phi = y > x ? y : x;
}

/* Per window column kx of a 2-D geometry: the grid columns [lo, hi) whose
 * tap lands inside the image, and the image column of grid column 0. */
static void cols2d(const lt_nn_geom *g, int64_t kx, int64_t *lo, int64_t *hi, int64_t *off)
{
    *off = kx * g->d[1] - g->pb[1];
    valid_range(*off, g->s[1], g->img[1], g->grid[1], lo, hi);
}

/* The general 2-D im2col, im2row and col2im loops, inlined into a
 * baseline x86-64 and an AVX2 compiled form (nn.c's callers pick one; the
 * same copies and the same adds in the same order either way) */
static inline __attribute__((always_inline)) void im2col2d_body(const float *img, float *col, int64_t ldc,
                                                                 const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t sh = g->s[0], sw = g->s[1];
    for (int64_t c = 0; c < channels; c++) {
        const float *src = img + c * H * W;
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t kx = 0; kx < KW; kx++) {
                float *dst = col + ((c * KH + ky) * KW + kx) * ldc;
                int64_t lo, hi, xoff, yoff = ky * g->d[0] - g->pb[0];
                cols2d(g, kx, &lo, &hi, &xoff);
                for (int64_t oy = 0; oy < OH; oy++) {
                    float *d = dst + oy * OW;
                    int64_t iy = oy * sh + yoff;
                    if (iy < 0 || iy >= H) {
                        memset(d, 0, sizeof(float) * (size_t)OW);
                        continue;
                    }
                    const float *s = src + iy * W + xoff;
                    for (int64_t ox = 0; ox < lo; ox++)
                        d[ox] = 0;
                    if (sw == 1) {
#pragma omp simd
                        for (int64_t ox = lo; ox < hi; ox++)
                            d[ox] = s[ox];
                    } else
                        for (int64_t ox = lo; ox < hi; ox++)
                            d[ox] = s[ox * sw];
                    for (int64_t ox = hi; ox < OW; ox++)
                        d[ox] = 0;
                }
            }
    }
}

static inline __attribute__((always_inline)) void im2row2d_body(const float *img, float *row, int64_t ldr,
                                                                 const lt_nn_geom *g, int64_t channels)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t sh = g->s[0], sw = g->s[1], dh = g->d[0], dw = g->d[1];
    for (int64_t oy = 0; oy < OH; oy++)
        for (int64_t ox = 0; ox < OW; ox++) {
            float *dst = row + (oy * OW + ox) * ldr;
            int64_t x0 = ox * sw - g->pb[1];
            /* the taps kx whose column lands inside the image */
            int64_t lo = x0 >= 0 ? 0 : (-x0 + dw - 1) / dw, hi = W - x0 <= 0 ? 0 : (W - x0 + dw - 1) / dw;
            hi = hi < KW ? hi : KW;
            lo = lo < hi ? lo : hi;
            for (int64_t c = 0; c < channels; c++)
                for (int64_t ky = 0; ky < KH; ky++) {
                    float *d = dst + (c * KH + ky) * KW;
                    int64_t iy = oy * sh + ky * dh - g->pb[0];
                    if (iy < 0 || iy >= H) {
                        memset(d, 0, sizeof(float) * (size_t)KW);
                        continue;
                    }
                    const float *s = img + (c * H + iy) * W + x0;
                    for (int64_t kx = 0; kx < lo; kx++)
                        d[kx] = 0;
                    for (int64_t kx = lo; kx < hi; kx++)
                        d[kx] = s[kx * dw];
                    for (int64_t kx = hi; kx < KW; kx++)
                        d[kx] = 0;
                }
        }
}

static inline __attribute__((always_inline)) void col2im2d_body(const float *col, int64_t ldc, float *img,
                                                                 const lt_nn_geom *g, int64_t ch0, int64_t ch1)
{
    int64_t H = g->img[0], W = g->img[1], OH = g->grid[0], OW = g->grid[1], KH = g->k[0], KW = g->k[1];
    int64_t sh = g->s[0], sw = g->s[1];
    for (int64_t c = ch0; c < ch1; c++) {
        float *dst = img + c * H * W;
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t kx = 0; kx < KW; kx++) {
                const float *src = col + ((c * KH + ky) * KW + kx) * ldc;
                int64_t lo, hi, xoff, yoff = ky * g->d[0] - g->pb[0];
                cols2d(g, kx, &lo, &hi, &xoff);
                for (int64_t oy = 0; oy < OH; oy++) {
                    int64_t iy = oy * sh + yoff;
                    if (iy < 0 || iy >= H)
                        continue;
                    const float *s = src + oy * OW;
                    float *d = dst + iy * W + xoff;
                    if (sw == 1) {
#pragma omp simd
                        for (int64_t ox = lo; ox < hi; ox++)
                            d[ox] += s[ox];
                    } else
                        for (int64_t ox = lo; ox < hi; ox++)
                            d[ox * sw] += s[ox];
                }
            }
    }
}

#define COLS_FNS(NAME, ATTR)                                                                                      \
    ATTR static void im2col2d_##NAME(const float *img, float *col, int64_t ldc, const lt_nn_geom *g,             \
                                     int64_t channels)                                                            \
    {                                                                                                             \
        im2col2d_body(img, col, ldc, g, channels);                                                                \
    }                                                                                                             \
    ATTR static void im2row2d_##NAME(const float *img, float *row, int64_t ldr, const lt_nn_geom *g,             \
                                     int64_t channels)                                                            \
    {                                                                                                             \
        im2row2d_body(img, row, ldr, g, channels);                                                                \
    }                                                                                                             \
    ATTR static void col2im2d_##NAME(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, \
                                     int64_t ch1)                                                                 \
    {                                                                                                             \
        col2im2d_body(col, ldc, img, g, ch0, ch1);                                                                \
    }
COLS_FNS(base, )
#if defined(__x86_64__) && defined(__GNUC__)
COLS_FNS(avx2, __attribute__((target("avx2,fma"))))
#define COLS(fn) (lt_cpu_avx2() ? fn##_avx2 : fn##_base)
#else
#define COLS(fn) fn##_base
#endif
#undef COLS_FNS

void lt_nn_im2col2d_f32(const float *img, float *col, int64_t ldc, const lt_nn_geom *g, int64_t channels)
{
    if (!lt_nn_im2col2d_avx512(img, col, ldc, g, channels))
        COLS(im2col2d)(img, col, ldc, g, channels);
}

void lt_nn_im2row2d_f32(const float *img, float *row, int64_t ldr, const lt_nn_geom *g, int64_t channels)
{
    if (!lt_nn_im2row2d_avx512(img, row, ldr, g, channels))
        COLS(im2row2d)(img, row, ldr, g, channels);
}

void lt_nn_col2im2d_f32(const float *col, int64_t ldc, float *img, const lt_nn_geom *g, int64_t ch0, int64_t ch1)
{
    if (!lt_nn_col2im2d_avx512(col, ldc, img, g, ch0, ch1))
        COLS(col2im2d)(col, ldc, img, g, ch0, ch1);
}
#undef COLS

/* A geometry of 1 to 3 spatial axes as three, missing leading axes of
 * size 1 (window 1, stride 1, no pads). */
typedef struct geom3 {
    int64_t k[3], s[3], d[3], pb[3], img[3], grid[3];
} geom3;

static void geom3_of(const lt_nn_geom *g, geom3 *t)
{
    int lead = 3 - g->nsp;
    for (int a = 0; a < 3; a++) {
        int d = a - lead;
        t->k[a] = d < 0 ? 1 : g->k[d];
        t->s[a] = d < 0 ? 1 : g->s[d];
        t->d[a] = d < 0 ? 1 : g->d[d];
        t->pb[a] = d < 0 ? 0 : g->pb[d];
        t->img[a] = d < 0 ? 1 : g->img[d];
        t->grid[a] = d < 0 ? 1 : g->grid[d];
    }
}

/* Columns [c0, c1) of the column matrix rows [r0, r1) (row c K + tap) of a
 * float32 image of up to 3 spatial axes, walked as output rows (z, y) with
 * the x runs clipped once per tap: im2col writes them (zeros outside the
 * image), col2im adds them back. The general loops' per-run bookkeeping
 * over any number of axes costs more than the copying at these sizes. */
static inline __attribute__((always_inline)) void cols3_f32(float *img, float *col, const lt_nn_geom *g,
                                                          int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                                          bool add)
{
    geom3 t;
    geom3_of(g, &t);
    int64_t K = t.k[0] * t.k[1] * t.k[2], plane = t.img[0] * t.img[1] * t.img[2];
    int64_t ow = t.grid[2], oh = t.grid[1], sx = t.s[2], tw = c1 - c0;
    int64_t q0 = c0 / ow, q1 = (c1 + ow - 1) / ow;
    for (int64_t r = r0; r < r1; r++) {
        int64_t tap = r % K, tx = tap % t.k[2], ty = tap / t.k[2] % t.k[1], tz = tap / (t.k[2] * t.k[1]);
        int64_t offz = tz * t.d[0] - t.pb[0], offy = ty * t.d[1] - t.pb[1], offx = tx * t.d[2] - t.pb[2];
        int64_t lo, hi;
        valid_range(offx, sx, t.img[2], ow, &lo, &hi);
        float *src = img + (r / K) * plane;
        float *row = col + (r - r0) * tw - c0; /* index by grid column */
        int64_t oz = q0 / oh, oy = q0 % oh;
        for (int64_t q = q0; q < q1; q++) {
            int64_t start = q * ow, a = c0 > start ? c0 - start : 0, b = c1 - start < ow ? c1 - start : ow;
            int64_t iz = oz * t.s[0] + offz, iy = oy * t.s[1] + offy;
            float *d = row + start;
            if (++oy == oh) {
                oy = 0;
                oz++;
            }
            if (iz < 0 || iz >= t.img[0] || iy < 0 || iy >= t.img[1]) {
                if (!add)
                    memset(d + a, 0, sizeof(float) * (size_t)(b - a));
                continue;
            }
            float *sp = src + (iz * t.img[1] + iy) * t.img[2] + offx;
            int64_t x0 = lo > a ? lo : a, x1 = hi < b ? hi : b;
            if (x1 < x0)
                x1 = x0;
            if (add && sx == 1) {
#pragma omp simd
                for (int64_t p = x0; p < x1; p++)
                    sp[p] += d[p];
                continue;
            }
            if (add) {
                for (int64_t p = x0; p < x1; p++)
                    sp[p * sx] += d[p];
                continue;
            }
            for (int64_t p = a; p < x0; p++)
                d[p] = 0;
            if (sx == 1)
                memcpy(d + x0, sp + x0, sizeof(float) * (size_t)(x1 - x0));
            else
                for (int64_t p = x0; p < x1; p++)
                    d[p] = sp[p * sx];
            for (int64_t p = x1; p < b; p++)
                d[p] = 0;
        }
    }
}

void lt_nn_im2col(const void *img, void *col, size_t esz, const lt_nn_geom *g, int64_t channels, int64_t c0,
                  int64_t c1)
{
    if (esz == 4 && g->nsp == 2 && c0 == 0 && c1 == g->grid[0] * g->grid[1]) {
        lt_nn_im2col2d_f32(img, col, c1, g, channels);
        return;
    }
    if (esz == 4 && g->nsp <= 3) {
        cols3_f32((float *)img, col, g, 0, channels * lt_nn_prod(g->nsp, g->k), c0, c1, false);
        return;
    }
    int64_t K = lt_nn_prod(g->nsp, g->k), plane = lt_nn_prod(g->nsp, g->img);
    int64_t s = g->s[g->nsp - 1], tw = c1 - c0;
    for (int64_t r = 0; r < channels * K; r++) {
        row_iter it;
        row_iter_init(&it, g, r % K, c0, c1);
        run u;
        int64_t lo, hi;
        if (esz == 4) {
            const float *src = (const float *)img + (r / K) * plane;
            float *dst = (float *)col + r * tw;
            while (row_iter_next(&it, &u)) {
                /* offsets may be negative: index only valid positions */
                if (!u.inside) {
                    memset(dst + u.colo + u.a, 0, sizeof(float) * (u.b - u.a));
                    continue;
                }
                clip(&it, &u, &lo, &hi);
                for (int64_t p = u.a; p < lo; p++)
                    dst[u.colo + p] = 0;
                if (s == 1)
                    memcpy(dst + u.colo + lo, src + u.imgo + lo, sizeof(float) * (hi - lo));
                else
                    for (int64_t p = lo; p < hi; p++)
                        dst[u.colo + p] = src[u.imgo + p * s];
                for (int64_t p = hi; p < u.b; p++)
                    dst[u.colo + p] = 0;
            }
        } else {
            const double *src = (const double *)img + (r / K) * plane;
            double *dst = (double *)col + r * tw;
            while (row_iter_next(&it, &u)) {
                if (!u.inside) {
                    memset(dst + u.colo + u.a, 0, sizeof(double) * (u.b - u.a));
                    continue;
                }
                clip(&it, &u, &lo, &hi);
                for (int64_t p = u.a; p < lo; p++)
                    dst[u.colo + p] = 0;
                for (int64_t p = lo; p < hi; p++)
                    dst[u.colo + p] = src[u.imgo + p * s];
                for (int64_t p = hi; p < u.b; p++)
                    dst[u.colo + p] = 0;
            }
        }
    }
}

void lt_nn_col2im(const void *col, void *img, size_t esz, const lt_nn_geom *g, int64_t ch0, int64_t ch1, int64_t c0,
                  int64_t c1)
{
    if (esz == 4 && g->nsp == 2 && c0 == 0 && c1 == g->grid[0] * g->grid[1]) {
        lt_nn_col2im2d_f32(col, c1, img, g, ch0, ch1);
        return;
    }
    if (esz == 4 && g->nsp <= 3) {
        int64_t K = lt_nn_prod(g->nsp, g->k);
        cols3_f32(img, (float *)col + ch0 * K * (c1 - c0), g, ch0 * K, ch1 * K, c0, c1, true);
        return;
    }
    int64_t K = lt_nn_prod(g->nsp, g->k), plane = lt_nn_prod(g->nsp, g->img);
    int64_t s = g->s[g->nsp - 1], tw = c1 - c0;
    for (int64_t r = ch0 * K; r < ch1 * K; r++) {
        row_iter it;
        row_iter_init(&it, g, r % K, c0, c1);
        run u;
        int64_t lo, hi;
        if (esz == 4) {
            float *dst = (float *)img + (r / K) * plane;
            const float *src = (const float *)col + r * tw;
            while (row_iter_next(&it, &u))
                if (u.inside) {
                    clip(&it, &u, &lo, &hi);
                    for (int64_t p = lo; p < hi; p++)
                        dst[u.imgo + p * s] += src[u.colo + p];
                }
        } else {
            double *dst = (double *)img + (r / K) * plane;
            const double *src = (const double *)col + r * tw;
            while (row_iter_next(&it, &u))
                if (u.inside) {
                    clip(&it, &u, &lo, &hi);
                    for (int64_t p = lo; p < hi; p++)
                        dst[u.imgo + p * s] += src[u.colo + p];
                }
        }
    }
}

void lt_nn_gemm(size_t esz, bool trans_a, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                int64_t ldb, bool accumulate, void *c, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        if (!accumulate)
            for (int64_t i = 0; i < m; i++)
                memset((char *)c + (size_t)(i * ldc) * esz, 0, (size_t)n * esz);
        return;
    }
    /* callers keep every size and leading dimension within int (checked
     * where the kernel validates its shapes) */
    if (esz == 4 && lt_sgemm_avx512(trans_a, false, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc))
        return;
    /* without AVX-512, the AVX2 kernel where it beats OpenBLAS */
    if (esz == 4 && lt_sgemm_avx2_here() && lt_sgemm_avx2_pays(m, n, k) &&
        lt_sgemm_avx2(trans_a, false, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc))
        return;
    enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
    if (esz == 4)
        cblas_sgemm(CblasRowMajor, ta, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb,
                    accumulate ? 1.0f : 0.0f, c, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, ta, CblasNoTrans, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb,
                    accumulate ? 1.0 : 0.0, c, (int)ldc);
}

double *lt_nn_f64_of(lt_kctx *k, const lt_tensor *t)
{
    double *v = lt_k_scratch(k, sizeof(double) * (size_t)t->numel);
    if (!v) {
        lt_k_fail(k, LT_ERR_NOMEM, "out of memory (%lld bytes of scratch)", (long long)(8 * t->numel));
        return NULL;
    }
    if (t->dtype == LT_F32) {
        const float *s = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            v[i] = s[i];
    } else if (t->dtype == LT_F64) {
        memcpy(v, t->data, sizeof(double) * (size_t)t->numel);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            v[i] = lt_tensor_get_f64(t, i);
    }
    return v;
}

const float *lt_nn_f32_of(lt_kctx *k, const lt_tensor *t)
{
    if (t->dtype == LT_F32)
        return t->data;
    float *v = lt_k_scratch(k, sizeof(float) * (size_t)t->numel);
    if (!v) {
        lt_k_fail(k, LT_ERR_NOMEM, "out of memory (%lld bytes of scratch)", (long long)(4 * t->numel));
        return NULL;
    }
    for (int64_t i = 0; i < t->numel; i++)
        v[i] = (float)lt_tensor_get_f64(t, i);
    return v;
}

/* integer range of an integer dtype */
static void int_range(lt_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case LT_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case LT_U8: *lo = 0; *hi = UINT8_MAX; break;
    case LT_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case LT_U16: *lo = 0; *hi = UINT16_MAX; break;
    case LT_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case LT_U32: *lo = 0; *hi = UINT32_MAX; break;
    case LT_U64: *lo = 0; *hi = 18446744073709549568.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; break;
    }
}

void lt_nn_store_f64(lt_tensor *t, const double *v)
{
    if (t->dtype == LT_F64) {
        memcpy(t->data, v, sizeof(double) * (size_t)t->numel);
        return;
    }
    if (t->dtype == LT_F32) {
        float *d = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            d[i] = (float)v[i];
        return;
    }
    if (lt_dtype_is_int(t->dtype)) {
        double lo, hi;
        int_range(t->dtype, &lo, &hi);
        for (int64_t i = 0; i < t->numel; i++) {
            double x = isnan(v[i]) ? 0 : nearbyint(v[i]);
            lt_tensor_set_f64(t, i, x < lo ? lo : x > hi ? hi : x);
        }
        return;
    }
    for (int64_t i = 0; i < t->numel; i++)
        lt_tensor_set_f64(t, i, v[i]);
}

void lt_nn_store_f32(lt_tensor *t, const float *v)
{
    if (t->dtype == LT_F32) {
        if (t->data != v)
            memcpy(t->data, v, sizeof(float) * (size_t)t->numel);
        return;
    }
    if (t->dtype == LT_F16 || t->dtype == LT_BF16) {
        uint16_t *d = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            d[i] = t->dtype == LT_F16 ? lt_f32_to_f16(v[i]) : lt_f32_to_bf16(v[i]);
        return;
    }
    double lo = -INFINITY, hi = INFINITY;
    bool is_int = lt_dtype_is_int(t->dtype);
    if (is_int)
        int_range(t->dtype, &lo, &hi);
    for (int64_t i = 0; i < t->numel; i++) {
        double x = v[i];
        if (is_int) {
            x = isnan(x) ? 0 : nearbyint(x);
            x = x < lo ? lo : x > hi ? hi : x;
        }
        lt_tensor_set_f64(t, i, x);
    }
}

lt_status lt_nn_kernel(lt_kctx *k, int nsp, const int64_t *w_dims, int64_t *kernel)
{
    int nk;
    const int64_t *ks = lt_attr_ints(k->node, "kernel_shape", &nk);
    if (ks && nk > 0) {
        if (nk != nsp)
            return lt_k_fail(k, LT_ERR_INVALID, "kernel_shape has %d values for %d spatial axes", nk, nsp);
        for (int i = 0; i < nsp; i++) {
            if (w_dims && ks[i] != w_dims[i])
                return lt_k_fail(k, LT_ERR_INVALID, "kernel_shape %lld disagrees with the weights' %lld on axis %d",
                                 (long long)ks[i], (long long)w_dims[i], i);
            kernel[i] = ks[i];
        }
        return LT_OK;
    }
    if (!w_dims)
        return lt_k_fail(k, LT_ERR_INVALID, "the kernel_shape attribute is required");
    for (int i = 0; i < nsp; i++)
        kernel[i] = w_dims[i];
    return LT_OK;
}

void lt_cpu_register_nn(lt_kernel_fn *tab)
{
    lt_nn_register_conv(tab);
    lt_nn_register_convt(tab);
    lt_nn_register_pool(tab);
    lt_nn_register_roi(tab);
}
