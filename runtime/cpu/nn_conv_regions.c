/* float32 2-D convolutions (one group) over small grids, a batch at a time,
 * by regions. Along each spatial axis the window positions fall into runs
 * whose windows keep the same taps inside the image (the padding cuts the
 * others off); a region is one run of rows by one run of columns, and all
 * its positions read the same rectangle of taps, wholly inside the image.
 * Per region the convolution is a product with the weights cut down to
 * those taps and with the region's positions of a block of images side by
 * side as columns: no column holds padding, so no product is spent on the
 * zeros that an im2col over a small padded image is mostly made of (at a
 * 1x1 image a 3x3 pad-1 kernel keeps only its centre tap), and a block of
 * images makes the products wide enough for the GEMM kernel where one
 * image's grid (a few positions) is not.
 *
 * Matrices are tap-major (row (tap, channel)) and the weights are read as
 * [M, taps, C], so a row of a region's taps is one run of weight columns.
 * Forward: y[region] = W_r [M, T_r C] * cols_r [T_r C, block positions].
 * Data gradient: dx += col2im of W_r^T * dy[region], region after region.
 * Filter gradient: dW_r += dy[region] * rows_r (the columns as rows), each
 * part of dW's rows on its own thread, then added into dW's taps. Each sum
 * runs in the same order whatever the thread count. */
#include "nn_util.h"
#include "cpu_features.h"
#include "linalg_util.h"
#include <omp.h>
#include <string.h>

/* about this many columns (block images x region positions) per product */
#define COLS 512
/* the copies split into this many parts a thread */
#define PARTS 4

typedef struct span1 {
    int64_t o0, o1; /* grid positions */
    int64_t t0, t1; /* the taps inside the image for each of them */
} span1;

typedef struct region {
    int64_t oy0, oy1, ox0, ox1, ty0, ty1, tx0, tx1;
    int64_t npos, ntap, rows; /* rows = channels x taps */
    int64_t nb, nblk, cols;   /* images per block, blocks, columns of a full block */
    int64_t woff;             /* the region's filter-gradient sum [M, rows] in one buffer */
} region;

typedef struct plan {
    const lt_nn_geom *g;
    int64_t n, c, m, L, plane;
    int nreg;
    region *reg;
    unsigned char *used; /* per tap: whether some region reads it */
    int64_t wsize;    /* the regions' filter-gradient sums [M, rows] */
    int64_t max_rc;   /* largest rows x cols */
    int64_t max_cols; /* largest cols */
    int nth;       /* the threads the work is cut for: LT_PAR_PLAN, whatever the count that runs it */
    bool parallel; /* worth sharing among threads */
} plan;

static int64_t cdiv(int64_t a, int64_t d) { return a >= 0 ? (a + d - 1) / d : -((-a) / d); }

/* the runs of axis ax; at most grid[ax] of them */
static int axis_spans(const lt_nn_geom *g, int ax, span1 *out)
{
    int64_t I = g->img[ax], O = g->grid[ax], k = g->k[ax], s = g->s[ax], d = g->d[ax], pb = g->pb[ax];
    int cnt = 0;
    for (int64_t o = 0; o < O; o++) {
        /* tap t reads o s + t d - pb, inside when 0 <= that < I */
        int64_t lo = cdiv(pb - o * s, d), hi = cdiv(I + pb - o * s, d);
        lo = lo < 0 ? 0 : lo;
        hi = hi > k ? k : hi;
        if (hi <= lo)
            lo = hi = 0;
        if (cnt && out[cnt - 1].t0 == lo && out[cnt - 1].t1 == hi)
            out[cnt - 1].o1 = o + 1;
        else
            out[cnt++] = (span1){o, o + 1, lo, hi};
    }
    return cnt;
}

static lt_status plan_of(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, plan *p)
{
    memset(p, 0, sizeof *p);
    p->g = g;
    p->n = n;
    p->c = c;
    p->m = m;
    p->L = g->grid[0] * g->grid[1];
    p->plane = g->img[0] * g->img[1];
    span1 *sy = lt_k_scratch(k, sizeof(span1) * (size_t)(g->grid[0] + g->grid[1]));
    p->reg = lt_k_scratch(k, sizeof(region) * (size_t)p->L);
    p->used = lt_k_scratch(k, (size_t)(g->k[0] * g->k[1]));
    if (!sy || !p->reg || !p->used)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution regions)");
    memset(p->used, 0, (size_t)(g->k[0] * g->k[1]));
    span1 *sx = sy + g->grid[0];
    /* the blocks and parts follow from the sizes, never from the threads
     * that run them (par.h): the products, so the bits, stay the same */
    p->nth = LT_PAR_PLAN;
    double flops = 2.0 * (double)n * (double)m * (double)p->L * (double)c * (double)(g->k[0] * g->k[1]);
    p->parallel = flops >= 8.0 * LT_NN_PAR_MIN;
    int ny = axis_spans(g, 0, sy), nx = axis_spans(g, 1, sx);
    for (int a = 0; a < ny; a++)
        for (int b = 0; b < nx; b++) {
            region *r = &p->reg[p->nreg++];
            r->oy0 = sy[a].o0, r->oy1 = sy[a].o1, r->ty0 = sy[a].t0, r->ty1 = sy[a].t1;
            r->ox0 = sx[b].o0, r->ox1 = sx[b].o1, r->tx0 = sx[b].t0, r->tx1 = sx[b].t1;
            r->npos = (r->oy1 - r->oy0) * (r->ox1 - r->ox0);
            r->ntap = (r->ty1 - r->ty0) * (r->tx1 - r->tx0);
            r->rows = c * r->ntap;
            r->nb = cdiv(COLS, r->npos);
            r->nb = r->nb > n ? n : r->nb;
            /* in parallel, every region's images in a block per thread at
             * least: the threads split the images, not the work of one
             * block (each part would gather that block again) */
            if (p->parallel && r->nb * p->nth > n)
                r->nb = cdiv(n, p->nth);
            r->nblk = cdiv(n, r->nb);
            r->cols = r->nb * r->npos;
            for (int64_t ty = r->ty0; ty < r->ty1; ty++)
                for (int64_t tx = r->tx0; tx < r->tx1; tx++)
                    p->used[ty * g->k[1] + tx] = 1;
            r->woff = p->wsize;
            p->wsize += m * r->rows;
            if (r->rows * r->cols > p->max_rc)
                p->max_rc = r->rows * r->cols;
            if (r->cols > p->max_cols)
                p->max_cols = r->cols;
        }
    return LT_OK;
}

/* C[m, n] (+)= op(A)[m, k] * B[k, n] */
static void gemm(bool ta, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
                 bool acc, float *c, int64_t ldc)
{
    if (n < 32 && lt_sgemm_small(ta, false, m, n, k, 1.0f, a, lda, b, ldb, acc ? 1.0f : 0.0f, c, ldc))
        return;
    lt_nn_gemm(4, ta, m, n, k, a, lda, b, ldb, acc, c, ldc);
}

/* [rows, c, K] -> [rows, K, c] for rows r0..r1: each tap's channels side by
 * side, so that a run of taps' weights is one run of columns; only the taps
 * marked in used (all when NULL) */
static void taps_last(const float *src, float *dst, int64_t c, int64_t K, const unsigned char *used, int64_t r0,
                      int64_t r1)
{
    for (int64_t o = r0; o < r1; o++) {
        const float *s = src + o * c * K;
        float *d = dst + o * c * K;
        for (int64_t t = 0; t < K; t++)
            if (!used || used[t])
                for (int64_t ch = 0; ch < c; ch++)
                    d[t * c + ch] = s[ch * K + t];
    }
}

/* The image element that tap (ky, kx) of position (oy, ox) reads, as an
 * offset into one channel plane */
static inline int64_t img_at(const lt_nn_geom *g, int64_t oy, int64_t ox, int64_t ky, int64_t kx)
{
    return (oy * g->s[0] + ky * g->d[0] - g->pb[0]) * g->img[1] + ox * g->s[1] + kx * g->d[1] - g->pb[1];
}

/* Column matrix of region r over images i0..i0+nb, channels c0..c1: row
 * ((a, b), c - c0) (tap-major), column (i, py, px), nb npos columns. With
 * add, the adjoint: the matrix is added into the images. */
static void cols_move(const plan *p, const region *r, float *img, int64_t i0, int64_t nb, float *col, int64_t c0,
                      int64_t c1, bool add)
{
    const lt_nn_geom *g = p->g;
    int64_t nty = r->ty1 - r->ty0, ntx = r->tx1 - r->tx0, ny = r->oy1 - r->oy0, nx = r->ox1 - r->ox0;
    int64_t cols = nb * r->npos, sw = g->s[1], step = g->s[0] * g->img[1];
    for (int64_t a = 0; a < nty; a++)
        for (int64_t b = 0; b < ntx; b++) {
            int64_t base = img_at(g, r->oy0, r->ox0, r->ty0 + a, r->tx0 + b);
            for (int64_t c = c0; c < c1; c++) {
                float *d = col + ((a * ntx + b) * (c1 - c0) + c - c0) * cols;
                for (int64_t i = 0; i < nb; i++) {
                    float *src = img + ((i0 + i) * p->c + c) * p->plane + base;
                    for (int64_t py = 0; py < ny; py++, d += nx, src += step)
                        for (int64_t px = 0; px < nx; px++) {
                            if (add)
                                src[px * sw] += d[px];
                            else
                                d[px] = src[px * sw];
                        }
                }
            }
        }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static bool have_avx512(void) { return lt_cpu_avx512(); }

#define AVX512 __attribute__((target("avx512f")))

static inline __mmask16 lanes(int64_t from, int64_t n) { return (__mmask16)(((1u << n) - 1) << from); }

/* cols_move for unit column strides and dilations where a region row's
 * taps read at most 16 image columns: each image row is loaded once into
 * a register (or summed in one), and each tap's stretch is one masked move
 * through a pointer shifted by the tap's lane offset (the lanes outside the
 * mask are never touched) */
AVX512 static void cols_move16(const plan *p, const region *r, float *img, int64_t i0, int64_t nb, float *col,
                               int64_t c0, int64_t c1, bool add)
{
    const lt_nn_geom *g = p->g;
    int64_t nty = r->ty1 - r->ty0, ntx = r->tx1 - r->tx0, ny = r->oy1 - r->oy0, nx = r->ox1 - r->ox0;
    int64_t cols = nb * r->npos, cc = c1 - c0, W = g->img[1], step = g->s[0] * W, tstep = cc * cols;
    __mmask16 all = lanes(0, nx + ntx - 1);
    int64_t base = img_at(g, r->oy0, r->ox0, r->ty0, r->tx0);
    /* image after image within a channel: a tap's row of the matrix is
     * then read or written in order */
    for (int64_t c = c0; c < c1; c++)
        for (int64_t i = 0; i < nb; i++) {
            float *plane = img + ((i0 + i) * p->c + c) * p->plane + base;
            float *dc = col + (c - c0) * cols + i * r->npos;
            for (int64_t a = 0; a < nty; a++)
                for (int64_t py = 0; py < ny; py++) {
                    float *src = plane + a * g->d[0] * W + py * step;
                    float *d = dc + a * ntx * tstep + py * nx;
                    if (add) {
                        __m512 acc = _mm512_maskz_loadu_ps(all, src);
                        for (int64_t b = 0; b < ntx; b++)
                            acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(lanes(b, nx), d + b * tstep - b));
                        _mm512_mask_storeu_ps(src, all, acc);
                    } else {
                        __m512 v = _mm512_maskz_loadu_ps(all, src);
                        for (int64_t b = 0; b < ntx; b++)
                            _mm512_mask_storeu_ps(d + b * tstep - b, lanes(b, nx), v);
                    }
                }
        }
}

/* grid_gather and grid_scatter (below) with 16-lane moves; a region of
 * whole grid rows is one run per image */
AVX512 static void grid_move16(const plan *p, const region *r, float *grid, int64_t i0, int64_t nb, int64_t m0,
                               int64_t m1, float *mat, const float *bias, bool scatter)
{
    int64_t nx = r->ox1 - r->ox0, ny = r->oy1 - r->oy0, cols = nb * r->npos, OW = p->g->grid[1];
    int64_t len = nx, rows = ny;
    if (nx == OW) {
        len = nx * ny;
        rows = 1;
    }
    /* channel after channel within an image: the grid is read or written
     * in order */
    for (int64_t i = 0; i < nb; i++)
        for (int64_t o = m0; o < m1; o++) {
            float *d = mat + (o - m0) * cols + i * r->npos;
            __m512 bv = _mm512_set1_ps(bias ? bias[o] : 0.0f);
            float *s = grid + ((i0 + i) * p->m + o) * p->L + r->oy0 * OW + r->ox0;
            for (int64_t py = 0; py < rows; py++, d += len, s += OW)
                for (int64_t j = 0; j < len; j += 16) {
                    __mmask16 mk = lanes(0, len - j < 16 ? len - j : 16);
                    if (scatter)
                        _mm512_mask_storeu_ps(s + j, mk, _mm512_add_ps(_mm512_maskz_loadu_ps(mk, d + j), bv));
                    else
                        _mm512_mask_storeu_ps(d + j, mk, _mm512_maskz_loadu_ps(mk, s + j));
                }
        }
}
#else
static bool have_avx512(void) { return false; }
static void cols_move16(const plan *p, const region *r, float *img, int64_t i0, int64_t nb, float *col, int64_t c0,
                        int64_t c1, bool add)
{
    cols_move(p, r, img, i0, nb, col, c0, c1, add);
}
static void grid_move16(const plan *p, const region *r, float *grid, int64_t i0, int64_t nb, int64_t m0, int64_t m1,
                        float *mat, const float *bias, bool scatter)
{
}
#endif

static void cols_of(const plan *p, const region *r, float *img, int64_t i0, int64_t nb, float *col, int64_t c0,
                    int64_t c1, bool add)
{
    const lt_nn_geom *g = p->g;
    if (g->s[1] == 1 && g->d[1] == 1 && (r->ox1 - r->ox0) + (r->tx1 - r->tx0) <= 17 && have_avx512())
        cols_move16(p, r, img, i0, nb, col, c0, c1, add);
    else
        cols_move(p, r, img, i0, nb, col, c0, c1, add);
}

/* The columns as rows, from the images with channels last (xt [n, plane,
 * c]): dst [nb npos, rows], row (i, py, px), column ((a, b), c) */
static void rows_of(const plan *p, const region *r, const float *xt, int64_t i0, int64_t nb, float *dst)
{
    const lt_nn_geom *g = p->g;
    int64_t nty = r->ty1 - r->ty0, ntx = r->tx1 - r->tx0, c = p->c;
    /* with unit dilation a run of taps reads a run of image columns */
    int64_t run = g->d[1] == 1 ? ntx : 1;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t oy = r->oy0; oy < r->oy1; oy++)
            for (int64_t ox = r->ox0; ox < r->ox1; ox++) {
                const float *src = xt + (i0 + i) * p->plane * c;
                for (int64_t a = 0; a < nty; a++)
                    for (int64_t b = 0; b < ntx; b += run) {
                        int64_t at = img_at(g, oy, ox, r->ty0 + a, r->tx0 + b) * c;
                        memcpy(dst, src + at, sizeof(float) * (size_t)(run * c));
                        dst += run * c;
                    }
            }
}

/* grid rows m0..m1 of region r over images i0..i0+nb -> a matrix [m1 - m0,
 * nb npos] */
static void grid_gather(const plan *p, const region *r, const float *grid, int64_t i0, int64_t nb, int64_t m0,
                        int64_t m1, float *dst)
{
    if (have_avx512()) {
        grid_move16(p, r, (float *)grid, i0, nb, m0, m1, dst, NULL, false);
        return;
    }
    int64_t nx = r->ox1 - r->ox0, cols = nb * r->npos, OW = p->g->grid[1];
    for (int64_t o = m0; o < m1; o++) {
        float *d = dst + (o - m0) * cols;
        for (int64_t i = 0; i < nb; i++) {
            const float *s = grid + ((i0 + i) * p->m + o) * p->L + r->oy0 * OW + r->ox0;
            for (int64_t py = r->oy0; py < r->oy1; py++, d += nx, s += OW)
                for (int64_t px = 0; px < nx; px++)
                    d[px] = s[px];
        }
    }
}

/* the inverse, with the bias (or 0) added; src NULL: the bias alone */
static void grid_scatter(const plan *p, const region *r, const float *src, int64_t i0, int64_t nb, int64_t m0,
                         int64_t m1, const float *bias, float *grid)
{
    if (src && have_avx512()) {
        grid_move16(p, r, grid, i0, nb, m0, m1, (float *)src, bias, true);
        return;
    }
    int64_t nx = r->ox1 - r->ox0, cols = nb * r->npos, OW = p->g->grid[1];
    for (int64_t o = m0; o < m1; o++) {
        const float *s = src ? src + (o - m0) * cols : NULL;
        float bv = bias ? bias[o] : 0.0f;
        for (int64_t i = 0; i < nb; i++) {
            float *d = grid + ((i0 + i) * p->m + o) * p->L + r->oy0 * OW + r->ox0;
            for (int64_t py = r->oy0; py < r->oy1; py++, d += OW) {
                if (!s) {
                    for (int64_t px = 0; px < nx; px++)
                        d[px] = bv;
                    continue;
                }
                for (int64_t px = 0; px < nx; px++)
                    d[px] = s[px] + bv;
                s += nx;
            }
        }
    }
}

/* a split of n into parts: part t starts at n t / parts */
static int64_t part_lo(int64_t n, int64_t t, int64_t parts) { return n * t / parts; }

static lt_status no_memory(lt_kctx *k) { return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution buffers)"); }

/* the weights with taps before channels (w itself for 1-tap kernels) */
static const float *weights_taps_last(lt_kctx *k, const plan *p, const float *w)
{
    int64_t K = p->g->k[0] * p->g->k[1];
    if (K == 1)
        return w;
    return lt_k_scratch(k, sizeof(float) * (size_t)(p->m * p->c * K));
}

lt_status lt_nn_conv_regions(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *x,
                             const float *w, const float *bias, float *y)
{
    plan p;
    lt_status s = plan_of(k, g, n, c, m, &p);
    if (s != LT_OK)
        return s;
    int64_t K = g->k[0] * g->k[1], KW = g->k[1];
    /* (region, block) items; the output rows split too when they are fewer
     * than the threads want */
    int64_t base = 0;
    for (int q = 0; q < p.nreg; q++)
        base += p.reg[q].nblk;
    int64_t ms = 1;
    if (p.parallel && base < p.nth) {
        ms = cdiv(p.nth, base);
        int64_t most = m / 32 > 1 ? m / 32 : 1;
        ms = ms > most ? most : ms;
    }
    int64_t items = 0;
    for (int q = 0; q < p.nreg; q++)
        items += p.reg[q].nblk * ms;
    int nt = lt_par_threads(items, p.parallel);
    const float *wt = weights_taps_last(k, &p, w);
    float *bufs = lt_k_scratch(k, sizeof(float) * (size_t)((p.max_rc + m * p.max_cols) * nt));
    int64_t *first = lt_k_scratch(k, sizeof(int64_t) * (size_t)(p.nreg + 1));
    if (!wt || !bufs || !first)
        return no_memory(k);
    first[0] = 0;
    for (int q = 0; q < p.nreg; q++)
        first[q + 1] = first[q] + p.reg[q].nblk * ms;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *colb = bufs + (p.max_rc + m * p.max_cols) * t, *out = colb + p.max_rc;
        if (wt != w) {
#pragma omp for schedule(dynamic, 1)
            for (int part = 0; part < PARTS * nt; part++)
                taps_last(w, (float *)wt, c, K, p.used, part_lo(m, part, PARTS * nt),
                          part_lo(m, part + 1, PARTS * nt));
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            int q = 0;
            while (first[q + 1] <= it)
                q++;
            const region *r = &p.reg[q];
            int64_t blk = (it - first[q]) / ms, mp = (it - first[q]) % ms;
            int64_t i0 = blk * r->nb, nb = n - i0 < r->nb ? n - i0 : r->nb, cols = nb * r->npos;
            int64_t m0 = part_lo(m, mp, ms), m1 = part_lo(m, mp + 1, ms);
            if (r->ntap == 0) {
                /* windows wholly in the padding */
                grid_scatter(&p, r, NULL, i0, nb, m0, m1, bias, y);
                continue;
            }
            cols_of(&p, r, (float *)x, i0, nb, colb, 0, c, false);
            /* one product per tap row, or one for all when they span the
             * kernel's width (their weights are then one run) */
            int64_t nty = r->ty1 - r->ty0, ntx = r->tx1 - r->tx0, run = ntx == KW ? nty : 1;
            for (int64_t a = 0; a < nty; a += run)
                gemm(false, m1 - m0, cols, run * ntx * c, wt + m0 * K * c + ((r->ty0 + a) * KW + r->tx0) * c, K * c,
                     colb + a * ntx * c * cols, cols, a > 0, out, cols);
            grid_scatter(&p, r, out, i0, nb, m0, m1, bias, y);
        }
    }
    return LT_OK;
}

lt_status lt_nn_conv_regions_data(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const float *dy,
                                  const float *w, float *dx)
{
    plan p;
    lt_status s = plan_of(k, g, n, c, m, &p);
    if (s != LT_OK)
        return s;
    int64_t K = g->k[0] * g->k[1], KW = g->k[1];
    /* an item: a block of images (the smallest of the regions' blocks)
     * through every region in order, so that items write apart (the
     * regions overlap in dx, the images do not) and no thread waits for
     * another between regions; with fewer blocks than threads, parts of
     * the channels too */
    int64_t nb = n;
    for (int q = 0; q < p.nreg; q++)
        if (p.reg[q].ntap && p.reg[q].nb < nb)
            nb = p.reg[q].nb;
    int64_t nblk = cdiv(n, nb), cs = 1;
    if (p.parallel && nblk < p.nth) {
        cs = cdiv(p.nth, nblk);
        cs = cs > c ? c : cs;
    }
    int nt = lt_par_threads(nblk * cs, p.parallel);
    const float *wt = weights_taps_last(k, &p, w);
    float *bufs = lt_k_scratch(k, sizeof(float) * (size_t)((p.max_rc + m * p.max_cols) * nt));
    if (!wt || !bufs)
        return no_memory(k);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *colb = bufs + (p.max_rc + m * p.max_cols) * t, *dyb = colb + p.max_rc;
        /* in small parts to whichever thread is free: a thread the system
         * does not schedule holds up one part, not a share */
        if (wt != w) {
#pragma omp for schedule(dynamic, 1)
            for (int part = 0; part < PARTS * nt; part++)
                taps_last(w, (float *)wt, c, K, p.used, part_lo(m, part, PARTS * nt),
                          part_lo(m, part + 1, PARTS * nt));
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < nblk * cs; it++) {
            int64_t blk = it / cs, cp = it % cs;
            int64_t i0 = blk * nb, nbb = n - i0 < nb ? n - i0 : nb;
            int64_t c0 = part_lo(c, cp, cs), c1 = part_lo(c, cp + 1, cs), cc = c1 - c0;
            for (int64_t i = i0; i < i0 + nbb; i++)
                memset(dx + (i * c + c0) * p.plane, 0, sizeof(float) * (size_t)(cc * p.plane));
            for (int q = 0; q < p.nreg; q++) {
                const region *r = &p.reg[q];
                if (r->ntap == 0)
                    continue;
                int64_t cols = nbb * r->npos, nty = r->ty1 - r->ty0, ntx = r->tx1 - r->tx0;
                grid_gather(&p, r, dy, i0, nbb, 0, m, dyb);
                if (cc == c) {
                    /* all channels: a tap row's rows are one run of weight columns */
                    int64_t run = ntx == KW ? nty : 1;
                    for (int64_t a = 0; a < nty; a += run)
                        gemm(true, run * ntx * c, cols, m, wt + ((r->ty0 + a) * KW + r->tx0) * c, K * c, dyb, cols,
                             false, colb + a * ntx * c * cols, cols);
                } else {
                    for (int64_t a = 0; a < nty; a++)
                        for (int64_t b = 0; b < ntx; b++)
                            gemm(true, cc, cols, m, wt + ((r->ty0 + a) * KW + r->tx0 + b) * c + c0, K * c, dyb, cols,
                                 false, colb + (a * ntx + b) * cc * cols, cols);
                }
                cols_of(&p, r, dx, i0, nbb, colb, c0, c1, true);
            }
        }
    }
    return LT_OK;
}

lt_status lt_nn_conv_regions_filter(lt_kctx *k, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m,
                                    const float *dy, const float *x, float *dw)
{
    plan p;
    lt_status s = plan_of(k, g, n, c, m, &p);
    if (s != LT_OK)
        return s;
    /* one part of dW's rows a planned thread, of at least 8 rows (each
     * part reads every block's rows again) */
    int64_t ms = p.parallel ? p.nth : 1;
    if (ms > 1 && m / ms < 8)
        ms = m / 8 > 1 ? m / 8 : 1;
    int nt = lt_par_threads(ms, p.parallel);
    int64_t K = g->k[0] * g->k[1], KW = g->k[1], per = p.max_rc + m * p.max_cols + K * c;
    float *acc = lt_k_scratch(k, sizeof(float) * (size_t)(p.wsize ? p.wsize : 1));
    float *bufs = lt_k_scratch(k, sizeof(float) * (size_t)(per * nt));
    /* the images with channels last (x itself for 1x1 images) */
    const float *xt = p.plane == 1 ? x : lt_k_scratch(k, sizeof(float) * (size_t)(n * c * p.plane));
    if (!acc || !bufs || !xt)
        return no_memory(k);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *rowb = bufs + per * t, *dyb = rowb + p.max_rc, *dt = dyb + m * p.max_cols;
        if (xt != x) {
#pragma omp for schedule(dynamic, 1)
            for (int part = 0; part < PARTS * nt; part++)
                taps_last(x, (float *)xt, c, p.plane, NULL, part_lo(n, part, PARTS * nt),
                          part_lo(n, part + 1, PARTS * nt));
        }
        /* each part sums its rows of every region over the whole batch */
#pragma omp for schedule(dynamic, 1)
        for (int64_t mp = 0; mp < ms; mp++) {
            int64_t m0 = part_lo(m, mp, ms), m1 = part_lo(m, mp + 1, ms);
            for (int q = 0; q < p.nreg; q++) {
                const region *r = &p.reg[q];
                if (r->ntap == 0)
                    continue;
                float *ar = acc + r->woff + m0 * r->rows;
                for (int64_t blk = 0; blk < r->nblk; blk++) {
                    int64_t i0 = blk * r->nb, nb = n - i0 < r->nb ? n - i0 : r->nb, cols = nb * r->npos;
                    grid_gather(&p, r, dy, i0, nb, m0, m1, dyb);
                    rows_of(&p, r, xt, i0, nb, rowb);
                    gemm(false, m1 - m0, r->rows, cols, dyb, cols, rowb, r->rows, blk > 0, ar, r->rows);
                }
            }
        }
        /* dW's taps: the regions' sums added in region order, then the
         * channels put back before the taps */
#pragma omp for schedule(dynamic, 8)
        for (int64_t o = 0; o < m; o++) {
            for (int64_t tp = 0; tp < K; tp++)
                if (p.used[tp])
                    memset(dt + tp * c, 0, sizeof(float) * (size_t)c);
            for (int q = 0; q < p.nreg; q++) {
                const region *r = &p.reg[q];
                int64_t nty = r->ty1 - r->ty0, ntx = r->tx1 - r->tx0;
                const float *src = acc + r->woff + o * r->rows;
                for (int64_t a = 0; a < nty; a++) {
                    float *d = dt + ((r->ty0 + a) * KW + r->tx0) * c;
                    for (int64_t e = 0; e < ntx * c; e++)
                        d[e] += *src++;
                }
            }
            float *d = dw + o * c * K;
            memset(d, 0, sizeof(float) * (size_t)(c * K));
            for (int64_t tp = 0; tp < K; tp++)
                if (p.used[tp])
                    for (int64_t ch = 0; ch < c; ch++)
                        d[ch * K + tp] = dt[tp * c + ch];
        }
    }
    return LT_OK;
}

bool lt_nn_regions(size_t esz, const lt_nn_geom *g, int64_t groups, int64_t n, int64_t m, bool filter)
{
    if (esz != 4 || g->nsp != 2 || groups != 1 || n < 2)
        return false;
    int64_t L = g->grid[0] * g->grid[1], K = g->k[0] * g->k[1];
    if (L <= 0 || L >= 256 || K <= 0)
        return false;
    /* a 1x1 kernel: the products of a few positions an image are thin (and
     * with few output channels the gathers cost more than they save); its
     * filter gradient's per-image products (positions summed) need no
     * gather, and beat the regions' beyond one position */
    if (K == 1)
        return L <= (filter ? 1 : 16) && m >= 16;
    /* the share of the im2col matrix read from the image: per axis, the
     * taps inside the image over all the taps; from half on, the blocked
     * im2col's products spend less on zeros than the regions on gathers */
    double inside = 1;
    for (int ax = 0; ax < 2; ax++) {
        span1 sp[256];
        int ns = axis_spans(g, ax, sp);
        int64_t sum = 0;
        for (int i = 0; i < ns; i++)
            sum += (sp[i].o1 - sp[i].o0) * (sp[i].t1 - sp[i].t0);
        inside *= (double)sum / (double)(g->grid[ax] * g->k[ax]);
    }
    return inside < 0.5;
}
