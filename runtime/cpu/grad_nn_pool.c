/* CPU kernels: MaxPoolGrad, AveragePoolGrad and LpPoolGrad. Each output's
 * window is listed (in-image taps, in the forward's scan order) from
 * per-axis tables and dy is scattered onto its taps: all of it onto the
 * first maximum, an equal share onto every tap, or the Lp norm's partial
 * derivative. Planes (N x C) are independent and run in parallel. */
#include "grad_nn_util.h"
#include "cpu_features.h"
#include <math.h>
#include <omp.h>
#include <string.h>

typedef enum { GP_MAX, GP_AVG, GP_LP } gp_kind;

/* Per axis and window position: the window's first coordinate, its taps
 * inside the image [lo, hi) and its taps inside the padded image. */
typedef struct gp_win {
    int64_t start, lo, hi, padded;
} gp_win;

typedef struct gp_job {
    lt_nn_geom g;
    gp_kind kind;
    bool count_pad; /* AveragePool: pads count in the divisor */
    double p;       /* LpPool */
    int64_t planes, in_plane, out_plane, taps;
    gp_win *tab[LT_MAX_RANK];
} gp_job;

static void fill_tables(gp_job *j)
{
    const lt_nn_geom *g = &j->g;
    for (int d = 0; d < g->nsp; d++)
        for (int64_t q = 0; q < g->grid[d]; q++) {
            int64_t st = q * g->s[d] - g->pb[d], dil = g->d[d], in = g->img[d], k = g->k[d];
            /* taps t with 0 <= st + t * dil < in, and st + t * dil < in + pe */
            int64_t lo = st >= 0 ? 0 : (-st + dil - 1) / dil;
            int64_t hi = in - st <= 0 ? 0 : (in - st + dil - 1) / dil;
            int64_t pad = in + g->pe[d] - st <= 0 ? 0 : (in + g->pe[d] - st + dil - 1) / dil;
            hi = hi < k ? hi : k;
            j->tab[d][q] = (gp_win){st, lo < hi ? lo : hi, hi, pad < k ? pad : k};
        }
}

/* In-plane offsets of the in-image taps of the window at grid position
 * pos, in scan order (last axis fastest); returns their count and in
 * *padded the count of taps inside the padded image. */
static int64_t window(const gp_job *j, const int64_t *pos, int64_t *offs, int64_t *padded)
{
    const lt_nn_geom *g = &j->g;
    int n = g->nsp, last = n - 1;
    const gp_win *w[LT_MAX_RANK];
    int64_t t[LT_MAX_RANK], count = 1, pc = 1;
    for (int d = 0; d < n; d++) {
        w[d] = &j->tab[d][pos[d]];
        t[d] = w[d]->lo;
        count *= w[d]->hi - w[d]->lo;
        pc *= w[d]->padded;
    }
    *padded = pc;
    if (count == 0)
        return 0;
    int64_t m = 0, dl = g->d[last];
    for (;;) {
        int64_t base = 0;
        for (int d = 0; d < last; d++)
            base = base * g->img[d] + w[d]->start + t[d] * g->d[d];
        base = base * g->img[last] + w[last]->start;
        for (int64_t q = w[last]->lo; q < w[last]->hi; q++)
            offs[m++] = base + q * dl;
        int d = last - 1;
        while (d >= 0 && ++t[d] >= w[d]->hi) {
            t[d] = w[d]->lo;
            d--;
        }
        if (d < 0)
            break;
    }
    return m;
}

/* window() for up to 3 spatial axes: missing leading axes have size 1,
 * and the taps come from three plain loops */
static inline int64_t window3(const gp_job *j, const int64_t *pos, int64_t *offs, int64_t *padded)
{
    static const gp_win unit = {0, 0, 1, 1};
    const lt_nn_geom *g = &j->g;
    int lead = 3 - g->nsp;
    const gp_win *w[3];
    int64_t img[3], dil[3];
    for (int a = 0; a < 3; a++) {
        int d = a - lead;
        w[a] = d < 0 ? &unit : &j->tab[d][pos[d]];
        img[a] = d < 0 ? 1 : g->img[d];
        dil[a] = d < 0 ? 1 : g->d[d];
    }
    *padded = w[0]->padded * w[1]->padded * w[2]->padded;
    int64_t m = 0;
    for (int64_t tz = w[0]->lo; tz < w[0]->hi; tz++) {
        int64_t rz = (w[0]->start + tz * dil[0]) * img[1];
        for (int64_t ty = w[1]->lo; ty < w[1]->hi; ty++) {
            int64_t ry = (rz + w[1]->start + ty * dil[1]) * img[2] + w[2]->start;
            for (int64_t tx = w[2]->lo; tx < w[2]->hi; tx++)
                offs[m++] = ry + tx * dil[2];
        }
    }
    return m;
}

/* d y / d e for y = (sum |e|^p)^(1/p): sign(e) (|e| / y)^(p - 1), y > 0 */
static inline double lp_partial(double e, double y, double p)
{
    if (p == 2)
        return e / y;
    if (e == 0)
        return 0;
    double s = e < 0 ? -1 : 1;
    return p == 1 ? s : s * pow(fabs(e) / y, p - 1);
}

/* One instance per working type T. */
#define GP_RUN(T, S)                                                                                          \
    static void gp_run_##S(const gp_job *j, const T *x, const T *dy, const T *y, T *dx, int64_t *offs_all)     \
    {                                                                                                         \
        const lt_nn_geom *g = &j->g;                                                                          \
        bool parallel = j->planes > 1 && (double)j->planes * (double)j->out_plane * (double)j->taps >=        \
                                             LT_NN_PAR_MIN;                                                   \
        _Pragma("omp parallel for schedule(static) if (parallel)")                                            \
        for (int64_t pl = 0; pl < j->planes; pl++) {                                                          \
            int64_t *offs = offs_all + (size_t)omp_get_thread_num() * (size_t)j->taps;                        \
            const T *xp = x + pl * j->in_plane, *dyp = dy + pl * j->out_plane;                                \
            const T *yp = y ? y + pl * j->out_plane : NULL;                                                   \
            T *dxp = dx + pl * j->in_plane;                                                                   \
            int64_t pos[LT_MAX_RANK] = {0};                                                                   \
            memset(dxp, 0, sizeof(T) * (size_t)j->in_plane);                                                  \
            for (int64_t o = 0; o < j->out_plane; o++) {                                                      \
                int64_t padded, cnt = g->nsp <= 3 ? window3(j, pos, offs, &padded)                           \
                                                  : window(j, pos, offs, &padded);                            \
                for (int d = g->nsp - 1; d >= 0 && ++pos[d] >= g->grid[d]; d--)                               \
                    pos[d] = 0;                                                                               \
                T gv = dyp[o];                                                                                \
                if (cnt == 0)                                                                                 \
                    continue; /* an empty window's output is a constant */                                    \
                if (j->kind == GP_MAX) {                                                                      \
                    /* the first maximum in scan order took the forward's value */                            \
                    int64_t at = offs[0];                                                                     \
                    T best = xp[at];                                                                          \
                    for (int64_t q = 1; q < cnt; q++) {                                                       \
                        T v = xp[offs[q]];                                                                    \
                        if (v > best) {                                                                       \
                            best = v;                                                                         \
                            at = offs[q];                                                                     \
                        }                                                                                     \
                    }                                                                                         \
                    dxp[at] += gv;                                                                            \
                } else if (j->kind == GP_AVG) {                                                               \
                    int64_t div = j->count_pad ? padded : cnt;                                                \
                    T share = div ? (T)((double)gv / (double)div) : 0;                                        \
                    for (int64_t q = 0; q < cnt; q++)                                                         \
                        dxp[offs[q]] += share;                                                                \
                } else {                                                                                      \
                    double yv = 0, p = j->p;                                                                  \
                    if (yp) {                                                                                 \
                        yv = yp[o];                                                                           \
                    } else {                                                                                  \
                        for (int64_t q = 0; q < cnt; q++)                                                     \
                            yv += pow(fabs((double)xp[offs[q]]), p);                                          \
                        yv = pow(yv, 1 / p);                                                                  \
                    }                                                                                         \
                    if (!(yv > 0))                                                                            \
                        continue; /* every tap is 0: the norm has no derivative there */                      \
                    for (int64_t q = 0; q < cnt; q++)                                                         \
                        dxp[offs[q]] += (T)((double)gv * lp_partial(xp[offs[q]], yv, p));                     \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }
GP_RUN(float, f32)
GP_RUN(double, f64)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* One row pair of 2x2 stride-2 windows that tile the plane, 16 windows a
 * step with AVX-512: even and odd columns split apart, the first maximum
 * picked by masks, the four results interleaved back. */
__attribute__((target("avx512f"))) static void max_grad_2x2_avx512(const float *x0, const float *x1, const float *gy,
                                                                   float *d0, float *d1, int64_t ow)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (int64_t ox = 0; ox < ow; ox += 16) {
        int64_t n = ow - ox < 16 ? ow - ox : 16, c = 2 * ox;
        __mmask16 m = (__mmask16)((1u << n) - 1), ma = (__mmask16)(n >= 8 ? 0xffff : (1u << (2 * n)) - 1),
                  mb = (__mmask16)(n > 8 ? (1u << (2 * (n - 8))) - 1 : 0);
        __m512 r0a = _mm512_maskz_loadu_ps(ma, x0 + c), r0b = _mm512_maskz_loadu_ps(mb, x0 + c + 16);
        __m512 r1a = _mm512_maskz_loadu_ps(ma, x1 + c), r1b = _mm512_maskz_loadu_ps(mb, x1 + c + 16);
        __m512 a = _mm512_permutex2var_ps(r0a, even, r0b), b = _mm512_permutex2var_ps(r0a, odd, r0b);
        __m512 e = _mm512_permutex2var_ps(r1a, even, r1b), f = _mm512_permutex2var_ps(r1a, odd, r1b);
        __m512 g = _mm512_maskz_loadu_ps(m, gy + ox);
        /* the same comparisons as the scalar path, so NaNs fall out alike */
        __mmask16 tb = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ);
        __m512 best = _mm512_mask_blend_ps(tb, a, b);
        __mmask16 te = _mm512_cmp_ps_mask(e, best, _CMP_GT_OQ);
        best = _mm512_mask_blend_ps(te, best, e);
        __mmask16 tf = _mm512_cmp_ps_mask(f, best, _CMP_GT_OQ);
        __mmask16 ne = (__mmask16)~te, nf = (__mmask16)~tf;
        __m512 ga = _mm512_maskz_mov_ps((__mmask16)(~tb & ne & nf), g), gb = _mm512_maskz_mov_ps((__mmask16)(tb & ne & nf), g);
        __m512 ge = _mm512_maskz_mov_ps((__mmask16)(te & nf), g), gf = _mm512_maskz_mov_ps(tf, g);
        _mm512_mask_storeu_ps(d0 + c, ma, _mm512_permutex2var_ps(ga, lo, gb));
        _mm512_mask_storeu_ps(d0 + c + 16, mb, _mm512_permutex2var_ps(ga, hi, gb));
        _mm512_mask_storeu_ps(d1 + c, ma, _mm512_permutex2var_ps(ge, lo, gf));
        _mm512_mask_storeu_ps(d1 + c + 16, mb, _mm512_permutex2var_ps(ge, hi, gf));
    }
}

static bool have_avx512(void) { return lt_cpu_avx512(); }
#else
static void max_grad_2x2_avx512(const float *x0, const float *x1, const float *gy, float *d0, float *d1, int64_t ow) {}
static bool have_avx512(void) { return false; }
#endif

/* One row pair of 2x2 stride-2 windows that tile the plane, by selects,
 * not branches (random data mispredicts them); compiled for baseline
 * x86-64 and for AVX2 */
static inline __attribute__((always_inline)) void max_grad_2x2_body(const float *x0, const float *x1, const float *gy,
                                                                     float *d0, float *d1, int64_t ow)
{
#pragma omp simd
    for (int64_t ox = 0; ox < ow; ox++) {
        int64_t c = 2 * ox;
        float a = x0[c], b = x0[c + 1], e = x1[c], f = x1[c + 1], gv = gy[ox];
        bool tb = b > a;
        float best = tb ? b : a;
        bool te = e > best;
        best = te ? e : best;
        bool tf = f > best;
        /* the first maximum in scan order takes dy */
        d0[c] = !tb && !te && !tf ? gv : 0;
        d0[c + 1] = tb && !te && !tf ? gv : 0;
        d1[c] = te && !tf ? gv : 0;
        d1[c + 1] = tf ? gv : 0;
    }
}

static void max_grad_2x2_base(const float *x0, const float *x1, const float *gy, float *d0, float *d1, int64_t ow)
{
    max_grad_2x2_body(x0, x1, gy, d0, d1, ow);
}
#if defined(__x86_64__) && defined(__GNUC__)
/* Eight 2x2 windows of x (16 floats of a row) split into their even and
 * odd columns: [x0 x2 .. x14] and [x1 x3 .. x15]. */
__attribute__((target("avx2,fma"))) static inline void split_even_odd(const float *x, __m256 *even, __m256 *odd)
{
    __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
    /* per 128-bit lane: [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6], then the
     * 64-bit quarters put in order */
    __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* the inverse: a's and b's lanes interleaved, [a0 b0 a1 b1 .. a7 b7], stored */
__attribute__((target("avx2,fma"))) static inline void store_interleaved(float *d, __m256 a, __m256 b)
{
    __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(d + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* One row pair, eight windows a step with AVX2 (the same comparisons and
 * choices as max_grad_2x2_body, as masks and blends: random data defeats
 * the branches a compiler makes of the selects), the rest by the body. */
__attribute__((target("avx2,fma"))) static void max_grad_2x2_avx2(const float *x0, const float *x1, const float *gy,
                                                                  float *d0, float *d1, int64_t ow)
{
    int64_t ox = 0;
    for (; ox + 8 <= ow; ox += 8) {
        int64_t c = 2 * ox;
        __m256 a, b, e, f;
        split_even_odd(x0 + c, &a, &b);
        split_even_odd(x1 + c, &e, &f);
        __m256 g = _mm256_loadu_ps(gy + ox);
        __m256 tb = _mm256_cmp_ps(b, a, _CMP_GT_OQ);
        __m256 best = _mm256_blendv_ps(a, b, tb);
        __m256 te = _mm256_cmp_ps(e, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, e, te);
        __m256 tf = _mm256_cmp_ps(f, best, _CMP_GT_OQ);
        /* gf where f won; ge where e won and f did not; then b, then a */
        __m256 gf = _mm256_and_ps(tf, g), rest = _mm256_andnot_ps(tf, g);
        __m256 ge = _mm256_and_ps(te, rest);
        rest = _mm256_andnot_ps(te, rest);
        __m256 gb = _mm256_and_ps(tb, rest), ga = _mm256_andnot_ps(tb, rest);
        store_interleaved(d0 + c, ga, gb);
        store_interleaved(d1 + c, ge, gf);
    }
    if (ox < ow)
        max_grad_2x2_body(x0 + 2 * ox, x1 + 2 * ox, gy + ox, d0 + 2 * ox, d1 + 2 * ox, ow - ox);
}
#define MAX_GRAD_2X2 (lt_cpu_avx2() ? max_grad_2x2_avx2 : max_grad_2x2_base)
#else
#define MAX_GRAD_2X2 max_grad_2x2_base
#endif

/* MaxPoolGrad on float32 planes with lt_nn_plain2d 2x2 stride-2 windows:
 * dy goes to the first maximum of each window in scan order, found with
 * gp_run's comparisons, by straight loops. */
static void max_grad2d_f32(const gp_job *j, const float *x, const float *dy, float *dx)
{
    const lt_nn_geom *g = &j->g;
    int64_t oh = g->grid[0], ow = g->grid[1], iw = g->img[1];
    /* 2x2 windows that tile the plane write all of it: no zeroing first */
    bool tiles = 2 * oh == g->img[0] && 2 * ow == iw, wide = tiles && have_avx512();
#pragma omp parallel for schedule(dynamic, lt_par_chunk(j->planes)) if (j->planes > 1 && j->planes * j->in_plane >= 4 * LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < j->planes; pl++) {
        const float *xp = x + pl * j->in_plane, *dyp = dy + pl * j->out_plane;
        float *dxp = dx + pl * j->in_plane;
        if (tiles) {
            for (int64_t oy = 0; oy < oh; oy++) {
                const float *x0 = xp + 2 * oy * iw, *x1 = x0 + iw;
                float *d0 = dxp + 2 * oy * iw, *d1 = d0 + iw;
                const float *gy = dyp + oy * ow;
                if (wide)
                    max_grad_2x2_avx512(x0, x1, gy, d0, d1, ow);
                else
                    MAX_GRAD_2X2(x0, x1, gy, d0, d1, ow);
            }
            continue;
        }
        memset(dxp, 0, sizeof(float) * (size_t)j->in_plane);
        for (int64_t oy = 0; oy < oh; oy++) {
            const float *xr = xp + oy * 2 * iw;
            float *dr = dxp + oy * 2 * iw;
            const float *gy = dyp + oy * ow;
            for (int64_t ox = 0; ox < ow; ox++) {
                int64_t c = 2 * ox, at = c;
                float best = xr[c];
                if (xr[c + 1] > best) {
                    best = xr[c + 1];
                    at = c + 1;
                }
                if (xr[iw + c] > best) {
                    best = xr[iw + c];
                    at = iw + c;
                }
                if (xr[iw + c + 1] > best)
                    at = iw + c + 1;
                dr[at] += gy[ox];
            }
        }
    }
}

/* MaxPoolGrad over two or three spatial axes (MaxPool2d, MaxPool3d), any
 * window; two axes are three with a leading axis of one. Each window's
 * first maximum in scan order is found without branches (a branch on the
 * comparison mispredicts on every new maximum), a 3x3 window with unit
 * dilation in one plane by a fixed offset list, and dy is added there. */
static void max_grad_any_f32(const gp_job *j, const float *x, const float *dy, float *dx)
{
    static const gp_win unit = {0, 0, 1, 1};
    const lt_nn_geom *g = &j->g;
    int lead = 3 - g->nsp;
    const gp_win *tz_tab = lead ? &unit : j->tab[0], *ty_tab = j->tab[1 - lead], *tx_tab = j->tab[2 - lead];
    int64_t od = lead ? 1 : g->grid[0], oh = g->grid[1 - lead], ow = g->grid[2 - lead];
    int64_t ih = g->img[1 - lead], iw = g->img[2 - lead];
    int64_t dd = lead ? 1 : g->d[0], dh = g->d[1 - lead], dw = g->d[2 - lead];
#pragma omp parallel for schedule(dynamic, lt_par_chunk(j->planes)) if (j->planes > 1 && j->planes * j->out_plane * j->taps >= LT_NN_PAR_MIN)
    for (int64_t pl = 0; pl < j->planes; pl++) {
        const float *xp = x + pl * j->in_plane, *gy = dy + pl * j->out_plane;
        float *dxp = dx + pl * j->in_plane;
        memset(dxp, 0, sizeof(float) * (size_t)j->in_plane);
        for (int64_t oz = 0; oz < od; oz++) {
            const gp_win *wz = &tz_tab[oz];
            int64_t nz = wz->hi - wz->lo, z0 = wz->start + wz->lo * dd;
            for (int64_t oy = 0; oy < oh; oy++, gy += ow) {
                const gp_win *wy = &ty_tab[oy];
                int64_t ny = wy->hi - wy->lo, y0 = wy->start + wy->lo * dh;
                if (nz <= 0 || ny <= 0)
                    continue; /* an empty window's output is a constant */
                for (int64_t ox = 0; ox < ow; ox++) {
                    const gp_win *wx = &tx_tab[ox];
                    int64_t nx = wx->hi - wx->lo, x0 = wx->start + wx->lo * dw;
                    if (nx <= 0)
                        continue;
                    int64_t at = (z0 * ih + y0) * iw + x0;
                    float best = xp[at];
                    if (nz == 1 && ny == 3 && nx == 3 && dh == 1 && dw == 1) {
                        const float *p = xp + at;
                        int64_t o[9] = {0, 1, 2, iw, iw + 1, iw + 2, 2 * iw, 2 * iw + 1, 2 * iw + 2}, bo = 0;
                        for (int q = 1; q < 9; q++) {
                            float v = p[o[q]];
                            bool gt = v > best;
                            best = gt ? v : best;
                            bo = gt ? o[q] : bo;
                        }
                        at += bo;
                    } else {
                        for (int64_t a = 0; a < nz; a++)
                            for (int64_t b = 0; b < ny; b++) {
                                int64_t row = ((z0 + a * dd) * ih + y0 + b * dh) * iw + x0;
                                for (int64_t c = 0; c < nx; c++) {
                                    float v = xp[row + c * dw];
                                    bool gt = v > best;
                                    best = gt ? v : best;
                                    at = gt ? row + c * dw : at;
                                }
                            }
                    }
                    dxp[at] += gy[ox];
                }
            }
        }
    }
}

/* LpPool's p: a float attribute in version 1, an int later */
static double lp_order(const lt_node *n)
{
    const lt_attr *a = lt_attr_find(n, "p");
    if (a && a->kind == LT_ATTR_INT)
        return (double)a->i;
    if (a && a->kind == LT_ATTR_FLOAT)
        return a->f;
    return 2;
}

/* (dy, x[, y]) -> dx */
static lt_status pool_grad(lt_kctx *k, gp_kind kind)
{
    const lt_tensor *dy = lt_gnn_need(k, 0, "dy"), *x = dy ? lt_gnn_need(k, 1, "x") : NULL;
    const lt_tensor *y = kind == GP_LP ? lt_k_in(k, 2) : NULL;
    if (!x)
        return LT_ERR_INVALID;
    lt_status s;
    if ((s = lt_gnn_float(k, dy, "dy")) != LT_OK || (s = lt_gnn_float(k, x, "x")) != LT_OK)
        return s;
    if (dy->dtype != x->dtype || (y && y->dtype != x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy of type %s for x of type %s", lt_dtype_name(dy->dtype),
                         lt_dtype_name(x->dtype));
    if (x->rank < 3 || x->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N, C and at least one spatial axis)", x->rank);
    int nsp = x->rank - 2;
    int64_t kernel[LT_MAX_RANK];
    if ((s = lt_nn_kernel(k, nsp, NULL, kernel)) != LT_OK)
        return s;
    const lt_node *n = k->node;
    gp_job j = {.kind = kind, .count_pad = lt_attr_int(n, "count_include_pad", 0) != 0, .p = lp_order(n)};
    if (kind == GP_LP && !(j.p > 0))
        return lt_k_fail(k, LT_ERR_INVALID, "p = %g", j.p);
    char why[256];
    if (!lt_nn_window(n, nsp, x->dims + 2, kernel, lt_attr_int(n, "ceil_mode", 0) != 0, &j.g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    int64_t dims[LT_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < nsp; i++)
        dims[i + 2] = j.g.grid[i];
    if ((s = lt_gnn_same_shape(k, dy, "dy", x->rank, dims)) != LT_OK ||
        (y && (s = lt_gnn_same_shape(k, y, "y", x->rank, dims)) != LT_OK))
        return s;
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    j.planes = x->dims[0] * x->dims[1];
    j.in_plane = lt_nn_prod(nsp, x->dims + 2);
    j.out_plane = lt_nn_prod(nsp, j.g.grid);
    j.taps = lt_nn_prod(nsp, kernel);
    int64_t ntab = 0, bytes;
    for (int i = 0; i < nsp; i++)
        ntab += j.g.grid[i];
    gp_win *all = lt_k_scratch(k, sizeof(gp_win) * (size_t)(ntab ? ntab : 1));
    int64_t *offs = NULL;
    if (j.taps < 0 || !lt_nn_mul(j.taps, 8 * (int64_t)omp_get_max_threads(), &bytes) || !all ||
        !(offs = lt_k_scratch(k, (size_t)bytes)))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (window of %lld taps)", (long long)j.taps);
    for (int i = 0; i < nsp; all += j.g.grid[i++])
        j.tab[i] = all;
    fill_tables(&j);
    if (x->dtype == LT_F64) {
        gp_run_f64(&j, x->data, dy->data, y ? y->data : NULL, dx->data, offs);
        return LT_OK;
    }
    bool two = nsp == 2 && kernel[0] == 2 && kernel[1] == 2 && j.g.s[0] == 2 && j.g.s[1] == 2;
    if (x->dtype == LT_F32 && kind == GP_MAX && two && lt_nn_plain2d(&j.g)) {
        max_grad2d_f32(&j, x->data, dy->data, dx->data);
        return LT_OK;
    }
    if (x->dtype == LT_F32 && kind == GP_MAX && lt_nn_maxpool3s2_grad_f32(&j.g, j.planes, x->data, dy->data, dx->data))
        return LT_OK;
    if (x->dtype == LT_F32 && kind == GP_MAX &&
        lt_nn_maxpool3s2_any_grad_f32(&j.g, j.planes, x->data, dy->data, dx->data))
        return LT_OK;
    if (x->dtype == LT_F32 && kind == GP_MAX && (nsp == 2 || nsp == 3)) {
        max_grad_any_f32(&j, x->data, dy->data, dx->data);
        return LT_OK;
    }
    if (x->dtype == LT_F32) {
        gp_run_f32(&j, x->data, dy->data, y ? y->data : NULL, dx->data, offs);
        return LT_OK;
    }
    const float *xf = lt_nn_f32_of(k, x), *dyf = xf ? lt_nn_f32_of(k, dy) : NULL;
    const float *yf = dyf && y ? lt_nn_f32_of(k, y) : NULL;
    float *dxf = lt_k_scratch(k, sizeof(float) * (size_t)dx->numel);
    if (!dyf || (y && !yf))
        return LT_ERR_NOMEM;
    if (!dxf)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    gp_run_f32(&j, xf, dyf, yf, dxf, offs);
    lt_nn_store_f32(dx, dxf);
    return LT_OK;
}

static lt_status k_max_pool_grad(lt_kctx *k) { return pool_grad(k, GP_MAX); }
static lt_status k_average_pool_grad(lt_kctx *k) { return pool_grad(k, GP_AVG); }
static lt_status k_lp_pool_grad(lt_kctx *k) { return pool_grad(k, GP_LP); }

void lt_gnn_register_pool(lt_kernel_fn *tab)
{
    tab[LT_OP_MAX_POOL_GRAD] = k_max_pool_grad;
    tab[LT_OP_AVERAGE_POOL_GRAD] = k_average_pool_grad;
    tab[LT_OP_LP_POOL_GRAD] = k_lp_pool_grad;
}
