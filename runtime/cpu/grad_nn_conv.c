/* CPU kernels: ConvGradData, ConvGradFilter, ConvTransposeGradData and
 * ConvTransposeGradFilter. A convolution and its transpose are one map seen
 * from two sides: an image side (Conv's input, ConvTranspose's output) and a
 * grid side (the window positions), with weights laid out [grid channels,
 * image channels / group, taps...] in both. Three cores cover all six
 * products: grid = W * im2col(image) (Conv forward, ConvTranspose's data
 * gradient), image = col2im(W^T * grid) (ConvTranspose forward, Conv's data
 * gradient) and dW = grid * im2col(image)^T summed over the batch (both
 * filter gradients); depthwise convolutions' gradients are swept directly
 * (nn_conv_depthwise.c). float32 and float64 run natively, the half types
 * through float32. */
#include "grad_nn_util.h"
#include "linalg_util.h"
#include "nn_conv_depthwise.h"
#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <string.h>

typedef struct gc_job {
    lt_nn_geom g; /* img: the image side's spatial dims; grid: the grid side's */
    size_t esz;
    int64_t n, groups;
    int64_t gch, ich; /* channels on the grid side and on the image side */
    /* per group: grid channels P, image channels Q, taps K, R = Q * K;
     * positions L on the grid, plane elements on the image */
    int64_t P, Q, K, R, L, plane;
    bool direct; /* 1-tap window, unit strides, no pads: im2col is the identity */
} gc_job;

/* column buffers stay below this many bytes per thread */
#define TILE_BYTES ((int64_t)2 << 20)
/* the filter gradient's per-thread partial sums stay below this in all */
#define PARTIAL_BYTES ((int64_t)64 << 20)

static int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }

/* Column tile width for a buffer of `rows` rows, narrowed so that `tasks`
 * tasks give every planned thread work (par.h: the tiles, so the products
 * and their bits, do not depend on the threads that run them) when the
 * work is worth sharing. */
static int64_t pick_tile(int64_t rows, size_t esz, int64_t L, int64_t tasks, bool worth)
{
    int64_t tile = rows ? TILE_BYTES / (rows * (int64_t)esz) : L;
    tile = tile < 64 ? 64 : tile / 16 * 16;
    if (worth && tasks < LT_PAR_PLAN) {
        int64_t split = (LT_PAR_PLAN + tasks - 1) / tasks, t2 = round16((L + split - 1) / split);
        tile = t2 < tile ? t2 : tile;
    }
    tile = tile > L ? L : tile;
    return tile < 1 ? 1 : tile;
}

/* C[m, n] += A[m, k] * B[n, k]^T */
static void gemm_nt(size_t esz, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                    int64_t ldb, void *c, int64_t ldc)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return;
    if (esz == 4 && lt_sgemm_avx512(false, true, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc))
        return;
    /* without AVX-512, the AVX2 kernel where it beats OpenBLAS */
    if (esz == 4 && lt_sgemm_avx2_here() && lt_sgemm_avx2_pays(m, n, k) &&
        lt_sgemm_avx2(false, true, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc))
        return;
    if (esz == 4 && n < m && m * n <= 4096) {
        /* too few columns for the AVX-512 (or AVX2) tile: C^T = B A^T has more */
        float t[4096];
        if (lt_sgemm_avx512(false, true, n, m, k, 1.0f, b, ldb, a, lda, 0.0f, t, m) ||
            (lt_sgemm_avx2_here() && lt_sgemm_avx2(false, true, n, m, k, 1.0f, b, ldb, a, lda, 0.0f, t, m))) {
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++)
                    ((float *)c)[i * ldc + j] += t[j * m + i];
            return;
        }
    }
    if (esz == 4)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb,
                    1.0f, c, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb,
                    1.0, c, (int)ldc);
}

static lt_status too_big(lt_kctx *k) { return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (convolution buffers)"); }

/* ---- float32 2-D convolutions with small grids (lt_nn_blocked): per image
 * the products are thin (one side the grid's L positions), so several
 * images' columns are set side by side and each GEMM covers a block of
 * images. ---- */
static bool gc_blocked(const gc_job *j) { return lt_nn_blocked(j->esz, &j->g, j->groups, j->direct, j->L, j->n); }

/* the jobs that run by regions (nn_conv_regions.c) */
static bool gc_regions(const gc_job *j, bool filter)
{
    return lt_nn_regions(j->esz, &j->g, j->groups, j->n, j->gch, filter);
}

static int64_t gc_block_images(const gc_job *j) { return lt_nn_block_images(j->L, j->n); }

/* dst [P, nb L]: group gi's grid rows of images i0..i0+nb side by side */
static void gc_gather_grid(const gc_job *j, const float *grid, int64_t gi, int64_t i0, int64_t nb, float *dst)
{
    int64_t P = j->P, L = j->L;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t p = 0; p < P; p++)
            memcpy(dst + p * nb * L + i * L, grid + ((i0 + i) * j->gch + gi * P + p) * L, sizeof(float) * (size_t)L);
}

/* gc_filter for gc_blocked jobs: one partial sum per slice of blocks. With
 * fewer taps than the AVX-512 tile's 32 columns (a first layer: RGB or
 * grey input) and enough output channels, the slices sum dW's transpose
 * [R, P] = cols [R, m L] * dy^T instead, P columns wide. */
static lt_status gc_filter_blocked(lt_kctx *k, const gc_job *j, const float *grid, const float *img, float *dw)
{
    int64_t P = j->P, R = j->R, L = j->L, n = j->n, nb = gc_block_images(j), nblk = (n + nb - 1) / nb;
    int64_t G = j->groups, wsize = P * R, cols = nb * L;
    bool tr = R < 32 && P >= 32;
    bool worth = 2.0 * (double)n * (double)(G * wsize) * (double)L >= 8.0 * LT_NN_PAR_MIN;
    /* the slices follow from the sizes (par.h), the threads share them
     * with the groups */
    int ns = worth ? lt_par_pieces(nblk) : 1, nt = lt_par_threads(ns * G, worth);
    bool apart = ns > 1 || tr;
    float *part = apart ? lt_k_scratch(k, sizeof(float) * (size_t)(G * wsize * ns)) : dw;
    float *bufs = lt_k_scratch(k, sizeof(float) * (size_t)((P + R) * cols * nt));
    if (!part || !bufs)
        return too_big(k);
    memset(part, 0, sizeof(float) * (size_t)(G * wsize * ns));
    /* slice s always sums the same blocks in the same order, and the slices
     * are added in order: the same bits on every run and thread count
     * (training resumes bit-exactly), whichever thread takes a slice */
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *dyb = bufs + (P + R) * cols * omp_get_thread_num(), *colb = dyb + P * cols;
#pragma omp for schedule(dynamic, 1)
        for (int64_t u = 0; u < ns * G; u++) {
            int64_t s = u / G, gi = u % G;
            float *acc = part + (apart ? (s * G + gi) * wsize : gi * wsize);
            for (int64_t b = nblk * s / ns; b < nblk * (s + 1) / ns; b++) {
                int64_t i0 = b * nb, m = n - i0 < nb ? n - i0 : nb;
                gc_gather_grid(j, grid, gi, i0, m, dyb);
                const float *ig = img + gi * j->Q * j->plane;
                if (tr) {
                    for (int64_t i = 0; i < m; i++)
                        lt_nn_im2col2d_f32(ig + (i0 + i) * j->ich * j->plane, colb + i * L, m * L, &j->g, j->Q);
                    gemm_nt(4, R, P, m * L, colb, m * L, dyb, m * L, acc, P);
                    continue;
                }
                /* the columns as rows [m L, R]: a plain B operand, no transpose to pack */
                for (int64_t i = 0; i < m; i++)
                    lt_nn_im2row2d_f32(ig + (i0 + i) * j->ich * j->plane, colb + i * L * R, R, &j->g, j->Q);
                lt_nn_gemm(4, false, P, R, m * L, dyb, m * L, colb, R, true, acc, R);
            }
        }
    }
    if (apart)
        for (int64_t gi = 0; gi < G; gi++)
            for (int64_t q = 0; q < wsize; q++) {
                /* dW[p, r] from [p, r] or, transposed, [r, p] */
                int64_t at = tr ? q % R * P + q / R : q;
                float v = 0;
                for (int64_t s = 0; s < ns; s++)
                    v += part[(s * G + gi) * wsize + at];
                dw[gi * wsize + q] = v;
            }
    return LT_OK;
}

/* gc_backward for gc_blocked jobs: (block of images, group) in parallel */
static lt_status gc_backward_blocked(lt_kctx *k, const gc_job *j, const float *grid, const float *w, float *img)
{
    int64_t P = j->P, R = j->R, L = j->L, Q = j->Q, n = j->n, nb = gc_block_images(j), nblk = (n + nb - 1) / nb;
    int64_t G = j->groups, cols = nb * L, items = nblk * G;
    int nth = omp_get_max_threads();
    bool parallel =
        nth > 1 && items > 1 && 2.0 * (double)n * (double)j->gch * (double)L * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int nt = parallel ? (items < nth ? (int)items : nth) : 1;
    float *bufs = lt_k_scratch(k, sizeof(float) * (size_t)((P + R) * cols * nt));
    if (!bufs)
        return too_big(k);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num();
        float *dyb = bufs + (P + R) * cols * t, *colb = dyb + P * cols;
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < items; item++) {
            int64_t b = item / G, gi = item % G, i0 = b * nb, m = n - i0 < nb ? n - i0 : nb;
            gc_gather_grid(j, grid, gi, i0, m, dyb);
            lt_nn_gemm(4, true, R, m * L, P, w + gi * P * R, R, dyb, m * L, false, colb, m * L);
            for (int64_t i = 0; i < m; i++) {
                float *it = img + ((i0 + i) * j->ich + gi * Q) * j->plane;
                memset(it, 0, sizeof(float) * (size_t)(Q * j->plane));
                lt_nn_col2im2d_f32(colb + i * L, m * L, it, &j->g, 0, Q);
            }
        }
    }
    return LT_OK;
}

/* grid [N, gch, L] = W_g [P, R] * im2col(image [N, ich, plane]) per group */
static lt_status gc_forward(lt_kctx *k, const gc_job *j, const char *img, const char *w, char *out)
{
    size_t esz = j->esz;
    int64_t tasks = j->n * j->groups, L = j->L, R = j->R, P = j->P;
    if (tasks == 0 || L == 0 || P == 0)
        return LT_OK; /* the output is empty */
    if (R == 0) {
        memset(out, 0, (size_t)(tasks * P * L) * esz);
        return LT_OK;
    }
    if (esz == 4 && lt_nn_conv_images_usable(&j->g, j->groups, j->n, j->Q))
        return lt_nn_conv_images(k, &j->g, j->n, j->Q, P, (const float *)img, (const float *)w, NULL, (float *)out);
    if (gc_regions(j, false))
        return lt_nn_conv_regions(k, &j->g, j->n, j->Q, P, (const float *)img, (const float *)w, NULL, (float *)out);
    if (esz == 4 && lt_nn_conv_panels_usable(&j->g, j->groups, j->Q))
        return lt_nn_conv_panels(k, &j->g, j->n, j->Q, P, (const float *)img, (const float *)w, NULL, (float *)out);
    bool worth = 2.0 * (double)tasks * (double)P * (double)L * (double)R >= 8.0 * LT_NN_PAR_MIN;
    int64_t tile = pick_tile(R, esz, L, tasks, worth), ntiles = (L + tile - 1) / tile, bytes;
    int nt = lt_par_threads(tasks * ntiles, worth);
    int nbuf = j->direct ? 0 : nt;
    char *scratch = NULL;
    if (nbuf && (!lt_nn_mul(R * tile, (int64_t)esz * nbuf, &bytes) || !(scratch = lt_k_scratch(k, (size_t)bytes))))
        return too_big(k);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < tasks * ntiles; it++) {
        int64_t t = it / ntiles, n = t / j->groups, gi = t % j->groups;
        int64_t c0 = it % ntiles * tile, c1 = c0 + tile < L ? c0 + tile : L;
        const char *it_img = img + (size_t)((n * j->ich + gi * j->Q) * j->plane) * esz;
        const char *col = it_img + (size_t)c0 * esz;
        int64_t ldb = L;
        if (!j->direct) {
            char *buf = scratch + (size_t)(R * tile) * esz * (size_t)omp_get_thread_num();
            lt_nn_im2col(it_img, buf, esz, &j->g, j->Q, c0, c1);
            col = buf;
            ldb = c1 - c0;
        }
        char *o = out + (size_t)((n * j->gch + gi * P) * L + c0) * esz;
        lt_nn_gemm(esz, false, P, c1 - c0, R, w + (size_t)(gi * P * R) * esz, R, col, ldb, false, o, L);
    }
    return LT_OK;
}

/* With unit strides, one group and pads within the kernel's reach, the
 * data gradient is itself a convolution, of dy: dx[c, i] = sum over o and
 * taps t of w[o, c, t] dy[o, i + pb - t d], i.e. dy padded by d (k - 1) -
 * pb before and d (k - 1) - pe after, read by the weights flipped and
 * transposed to [C, M, k]. Fills g2 with that convolution's geometry when
 * it runs by panels: at least 64 image channels, a plane at most 5/4 of
 * the grid. */
static bool gc_data_as_conv(const gc_job *j, lt_nn_geom *g2)
{
    if (j->esz != 4 || j->groups != 1 || j->g.nsp != 2)
        return false;
    *g2 = j->g;
    for (int a = 0; a < 2; a++) {
        int64_t reach = j->g.d[a] * (j->g.k[a] - 1);
        if (j->g.s[a] != 1 || reach < j->g.pb[a] || reach < j->g.pe[a])
            return false;
        g2->img[a] = j->g.grid[a];
        g2->grid[a] = j->g.img[a];
        g2->pb[a] = reach - j->g.pb[a];
        g2->pe[a] = reach - j->g.pe[a];
    }
    /* it computes Q x P taps products per image position against the
     * col2im's per grid position, and each panel it packs serves Q / 8
     * tiles: worth it for many image channels and little more image than
     * grid */
    return j->Q >= 64 && 4 * j->plane <= 5 * j->L && lt_nn_conv_panels_usable(g2, 1, j->P);
}

static lt_status gc_data_panels(lt_kctx *k, const gc_job *j, const lt_nn_geom *g2, const float *dy, const float *w,
                                float *dx)
{
    int64_t P = j->P, Q = j->Q, K = j->K;
    float *wt = lt_k_scratch(k, sizeof(float) * (size_t)(P * Q * K));
    if (!wt)
        return too_big(k);
    for (int64_t o = 0; o < P; o++)
        for (int64_t c = 0; c < Q; c++) {
            const float *src = w + (o * Q + c) * K;
            float *dst = wt + (c * P + o) * K + K - 1;
            for (int64_t t = 0; t < K; t++)
                dst[-t] = src[t];
        }
    return lt_nn_conv_panels(k, g2, j->n, P, Q, dy, wt, NULL, dx);
}

/* image [N, ich, plane] = col2im(W_g^T [R, P] * grid [N, gch, L]) per group */
static lt_status gc_backward(lt_kctx *k, const gc_job *j, const char *grid, const char *w, char *img)
{
    size_t esz = j->esz;
    int64_t tasks = j->n * j->groups, L = j->L, R = j->R, P = j->P, Q = j->Q, plane = j->plane;
    if (tasks == 0 || Q == 0 || plane == 0)
        return LT_OK; /* the output is empty */
    if (L == 0 || P == 0) {
        memset(img, 0, (size_t)(tasks * Q * plane) * esz);
        return LT_OK;
    }
    lt_nn_geom g2;
    bool as_conv = gc_data_as_conv(j, &g2);
    if (as_conv && j->K == 1) /* a 1x1 kernel: panels before regions, as in the forward */
        return gc_data_panels(k, j, &g2, (const float *)grid, (const float *)w, (float *)img);
    if (j->esz == 4 && lt_nn_conv_images_usable(&j->g, j->groups, j->n, P))
        return lt_nn_conv_images_data(k, &j->g, j->n, Q, P, (const float *)grid, (const float *)w, (float *)img);
    if (gc_regions(j, false))
        return lt_nn_conv_regions_data(k, &j->g, j->n, Q, P, (const float *)grid, (const float *)w, (float *)img);
    if (as_conv)
        return gc_data_panels(k, j, &g2, (const float *)grid, (const float *)w, (float *)img);
    if (gc_blocked(j))
        return gc_backward_blocked(k, j, (const float *)grid, (const float *)w, (float *)img);
    /* enough images x groups for every planned thread (par.h): one task
     * per thread at a time; else the threads share each task, its
     * columns cut for LT_PAR_PLAN threads */
    bool worth = 2.0 * (double)tasks * (double)P * (double)L * (double)R >= 8.0 * LT_NN_PAR_MIN;
    bool per_task = !worth || tasks >= LT_PAR_PLAN;
    int64_t tile = pick_tile(R, esz, L, per_task ? tasks : 1, !per_task), bytes;
    int nt = lt_par_threads(per_task ? tasks : LT_PAR_PLAN, worth);
    int nbuf = j->direct ? 0 : per_task ? nt : 1;
    char *scratch = NULL;
    if (nbuf && (!lt_nn_mul(R * tile, (int64_t)esz * nbuf, &bytes) || !(scratch = lt_k_scratch(k, (size_t)bytes))))
        return too_big(k);
    if (per_task) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
        for (int64_t t = 0; t < tasks; t++) {
            int64_t n = t / j->groups, gi = t % j->groups;
            const char *gt = grid + (size_t)((n * j->gch + gi * P) * L) * esz, *wt = w + (size_t)(gi * P * R) * esz;
            char *it = img + (size_t)((n * j->ich + gi * Q) * plane) * esz;
            if (j->direct) {
                lt_nn_gemm(esz, true, R, L, P, wt, R, gt, L, false, it, plane);
                continue;
            }
            char *col = scratch + (size_t)(R * tile) * esz * (size_t)omp_get_thread_num();
            memset(it, 0, (size_t)(Q * plane) * esz);
            for (int64_t c0 = 0; c0 < L; c0 += tile) {
                int64_t c1 = c0 + tile < L ? c0 + tile : L;
                lt_nn_gemm(esz, true, R, c1 - c0, P, wt, R, gt + (size_t)c0 * esz, L, false, col, c1 - c0);
                lt_nn_col2im(col, it, esz, &j->g, 0, Q, c0, c1);
            }
        }
        return LT_OK;
    }
    for (int64_t t = 0; t < tasks; t++) {
        int64_t n = t / j->groups, gi = t % j->groups;
        const char *gt = grid + (size_t)((n * j->gch + gi * P) * L) * esz, *wt = w + (size_t)(gi * P * R) * esz;
        char *it = img + (size_t)((n * j->ich + gi * Q) * plane) * esz;
#pragma omp parallel num_threads(nt) if (nt > 1)
        {
            /* the GEMMs' columns in LT_PAR_PLAN parts whatever the thread
             * count, the threads taking parts tid, tid + nth, ... */
            int tid = omp_get_thread_num(), nth = omp_get_num_threads(), np = LT_PAR_PLAN;
            if (j->direct) {
                /* the image is the column matrix: split its columns */
                int64_t blk = round16((L + np - 1) / np);
                for (int pc = tid; pc < np; pc += nth) {
                    int64_t c0 = blk * pc, c1 = c0 + blk < L ? c0 + blk : L;
                    if (c0 < c1)
                        lt_nn_gemm(esz, true, R, c1 - c0, P, wt, R, gt + (size_t)c0 * esz, L, false,
                                   it + (size_t)c0 * esz, plane);
                }
            } else {
                int64_t q0 = Q * tid / nth, q1 = Q * (tid + 1) / nth;
                memset(it + (size_t)(q0 * plane) * esz, 0, (size_t)((q1 - q0) * plane) * esz);
                for (int64_t c0 = 0; c0 < L; c0 += tile) {
                    int64_t c1 = c0 + tile < L ? c0 + tile : L, tw = c1 - c0;
                    /* the tile's GEMM split by columns, its scatter by channels */
                    int64_t blk = round16((tw + np - 1) / np);
                    for (int pc = tid; pc < np; pc += nth) {
                        int64_t a = blk * pc, b = a + blk < tw ? a + blk : tw;
                        if (a < b)
                            lt_nn_gemm(esz, true, R, b - a, P, wt, R, gt + (size_t)(c0 + a) * esz, L, false,
                                       scratch + (size_t)a * esz, tw);
                    }
#pragma omp barrier
                    lt_nn_col2im(scratch, it, esz, &j->g, q0, q1, c0, c1);
#pragma omp barrier
                }
            }
        }
    }
    return LT_OK;
}

/* dW [gch, R] = sum over the batch of grid_g [P, L] * im2col(image_g)^T.
 * Work units are (batch slice, group, block of image channels): units of
 * one slice write disjoint parts of that slice's partial sum, and the
 * slices' sums are added at the end. */
static lt_status gc_filter(lt_kctx *k, const gc_job *j, const char *grid, const char *img, char *dw)
{
    size_t esz = j->esz;
    int64_t G = j->groups, P = j->P, Q = j->Q, K = j->K, R = j->R, L = j->L, plane = j->plane;
    int64_t wsize = j->gch * R, n = j->n;
    if (wsize == 0)
        return LT_OK;
    /* regions, lanes and panels write dW whole: no clearing first (ResNet's last
     * stage has 9.4 MB of it a layer) */
    if (n > 0 && L > 0 && gc_regions(j, true))
        return lt_nn_conv_regions_filter(k, &j->g, n, Q, P, (const float *)grid, (const float *)img, (float *)dw);
    if (n > 0 && L > 0 && esz == 4 && lt_nn_conv_filter_lanes_usable(&j->g, G, Q, P))
        return lt_nn_conv_filter_lanes(k, &j->g, n, Q, P, (const float *)grid, (const float *)img, (float *)dw);
    if (n > 0 && L > 0 && esz == 4 && lt_nn_conv_panels_filter_usable(&j->g, G, Q, P))
        return lt_nn_conv_panels_filter(k, &j->g, n, Q, P, (const float *)grid, (const float *)img, (float *)dw);
    memset(dw, 0, (size_t)wsize * esz);
    if (n == 0 || L == 0)
        return LT_OK;
    if (gc_blocked(j))
        return gc_filter_blocked(k, j, (const float *)grid, (const float *)img, (float *)dw);
    /* slices of the batch (partial sums) and blocks of channels cut for
     * LT_PAR_PLAN threads whatever the count that runs them (par.h) */
    bool worth = 2.0 * (double)n * (double)wsize * (double)L >= 8.0 * LT_NN_PAR_MIN;
    int64_t nslices = 1, nblocks = 1;
    if (worth) {
        int64_t fit = PARTIAL_BYTES / (wsize * (int64_t)esz);
        nslices = lt_par_pieces(n);
        nslices = fit < nslices ? (fit < 1 ? 1 : fit) : nslices;
        nblocks = (LT_PAR_PLAN + nslices * G - 1) / (nslices * G);
        nblocks = nblocks > Q ? Q : nblocks < 1 ? 1 : nblocks;
    }
    int64_t qb = (Q + nblocks - 1) / nblocks, rb = qb * K, bytes;
    int64_t tile = j->direct ? L : pick_tile(rb, esz, L, 1, false);
    int nt = lt_par_threads(nslices * G * nblocks, worth);
    char *acc = dw, *cols = NULL;
    if (nslices > 1) {
        if (!lt_nn_mul(wsize * nslices, (int64_t)esz, &bytes) || !(acc = lt_k_scratch(k, (size_t)bytes)))
            return too_big(k);
        memset(acc, 0, (size_t)bytes);
    }
    int nbuf = j->direct ? 0 : nt;
    if (nbuf && (!lt_nn_mul(rb * tile, (int64_t)esz * nbuf, &bytes) || !(cols = lt_k_scratch(k, (size_t)bytes))))
        return too_big(k);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int64_t u = 0; u < nslices * G * nblocks; u++) {
        int64_t s = u / (G * nblocks), gi = u / nblocks % G, b = u % nblocks;
        int64_t q0 = Q * b / nblocks, q1 = Q * (b + 1) / nblocks, n0 = n * s / nslices, n1 = n * (s + 1) / nslices;
        char *c = acc + (size_t)(s * wsize + gi * P * R + q0 * K) * esz;
        char *buf = cols ? cols + (size_t)(rb * tile) * esz * (size_t)omp_get_thread_num() : NULL;
        for (int64_t i = n0; i < n1 && q0 < q1; i++) {
            const char *gp = grid + (size_t)((i * j->gch + gi * P) * L) * esz;
            const char *ip = img + (size_t)((i * j->ich + gi * Q + q0) * plane) * esz;
            for (int64_t t0 = 0; t0 < L; t0 += tile) {
                int64_t t1 = t0 + tile < L ? t0 + tile : L;
                const char *col = ip + (size_t)t0 * esz;
                int64_t ldb = L;
                if (!j->direct) {
                    lt_nn_im2col(ip, buf, esz, &j->g, q1 - q0, t0, t1);
                    col = buf;
                    ldb = t1 - t0;
                }
                gemm_nt(esz, P, (q1 - q0) * K, t1 - t0, gp + (size_t)t0 * esz, L, col, ldb, c, R);
            }
        }
    }
    if (nslices > 1) {
#pragma omp parallel for schedule(static) if (wsize * nslices >= LT_NN_PAR_MIN)
        for (int64_t i = 0; i < wsize; i++) {
            if (esz == 4) {
                float v = 0;
                for (int64_t s = 0; s < nslices; s++)
                    v += ((const float *)acc)[s * wsize + i];
                ((float *)dw)[i] = v;
            } else {
                double v = 0;
                for (int64_t s = 0; s < nslices; s++)
                    v += ((const double *)acc)[s * wsize + i];
                ((double *)dw)[i] = v;
            }
        }
    }
    return LT_OK;
}

/* Fills the job from the forward node's attributes and its x and W: x is
 * Conv's input (image side) or ConvTranspose's input (grid side). Gives the
 * shape dy must have in ydims. */
static lt_status gc_setup(lt_kctx *k, const lt_tensor *x, const lt_tensor *w, bool transpose, gc_job *j,
                          int64_t *ydims)
{
    if (x->rank < 3 || x->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N, C and at least one spatial axis)", x->rank);
    if (w->rank != x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d with weights of rank %d", x->rank, w->rank);
    memset(j, 0, sizeof *j);
    j->groups = lt_attr_int(k->node, "group", 1);
    if (j->groups < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "group %lld", (long long)j->groups);
    j->n = x->dims[0];
    int64_t c = x->dims[1];
    if (!transpose) {
        int64_t cw;
        j->ich = c;
        j->gch = w->dims[0];
        if (!lt_nn_mul(w->dims[1], j->groups, &cw) || c != cw || j->gch % j->groups)
            return lt_k_fail(k, LT_ERR_RUNTIME, "input has %lld channels, weights [%lld, %lld, ...], group %lld",
                             (long long)c, (long long)w->dims[0], (long long)w->dims[1], (long long)j->groups);
    } else {
        j->gch = c;
        if (w->dims[0] != c || c % j->groups || !lt_nn_mul(w->dims[1], j->groups, &j->ich))
            return lt_k_fail(k, LT_ERR_RUNTIME, "input has %lld channels, weights [%lld, %lld, ...], group %lld",
                             (long long)c, (long long)w->dims[0], (long long)w->dims[1], (long long)j->groups);
    }
    int nsp = x->rank - 2;
    int64_t kernel[LT_MAX_RANK];
    lt_status s = lt_nn_kernel(k, nsp, w->dims + 2, kernel);
    if (s != LT_OK)
        return s;
    char why[256];
    bool ok = transpose ? lt_nn_window_transpose(k->node, nsp, x->dims + 2, kernel, &j->g, why, sizeof why)
                        : lt_nn_window(k->node, nsp, x->dims + 2, kernel, false, &j->g, why, sizeof why);
    if (!ok)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    j->P = j->gch / j->groups;
    j->Q = j->ich / j->groups;
    j->K = lt_nn_prod(nsp, j->g.k);
    j->L = lt_nn_prod(nsp, j->g.grid);
    j->plane = lt_nn_prod(nsp, j->g.img);
    if (j->K < 0 || j->L < 0 || j->plane < 0 || !lt_nn_mul(j->Q, j->K, &j->R) || j->R > INT_MAX ||
        j->L > INT_MAX || j->P > INT_MAX || j->plane > INT_MAX)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "convolution too large for one GEMM");
    j->direct = j->K == 1;
    for (int i = 0; i < nsp; i++)
        j->direct = j->direct && j->g.s[i] == 1 && j->g.pb[i] == 0 && j->g.pe[i] == 0;
    ydims[0] = j->n;
    ydims[1] = transpose ? j->ich : j->gch;
    for (int i = 0; i < nsp; i++)
        ydims[i + 2] = transpose ? j->g.img[i] : j->g.grid[i];
    /* every tensor's offsets below stay in range: the largest is N x
     * channels x plane, which the shapes' element counts bound */
    int64_t t;
    if (!lt_nn_mul(j->n, j->ich, &t) || !lt_nn_mul(t, j->plane, &t) || !lt_nn_mul(j->n, j->gch, &t) ||
        !lt_nn_mul(t, j->L, &t))
        return lt_k_fail(k, LT_ERR_RUNTIME, "convolution sizes overflow");
    return LT_OK;
}

typedef enum { GC_DATA, GC_FILTER } gc_what;

/* One gradient kernel: dy is input 0; `a` (input 1) and `b` (input 2) are
 * (W, x) for the data gradients and (x, W) for the filter gradients; the
 * output takes b's shape. */
static lt_status conv_grad(lt_kctx *k, bool transpose, gc_what what)
{
    const lt_tensor *dy = lt_gnn_need(k, 0, "dy"), *a = dy ? lt_gnn_need(k, 1, what == GC_DATA ? "W" : "x") : NULL;
    const lt_tensor *b = a ? lt_gnn_need(k, 2, what == GC_DATA ? "x" : "W") : NULL;
    if (!b)
        return LT_ERR_INVALID;
    const lt_tensor *x = what == GC_DATA ? b : a, *w = what == GC_DATA ? a : b;
    lt_status s;
    if ((s = lt_gnn_float(k, dy, "dy")) != LT_OK || (s = lt_gnn_float(k, x, "x")) != LT_OK ||
        (s = lt_gnn_float(k, w, "W")) != LT_OK)
        return s;
    if (dy->dtype != x->dtype || w->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy, x and W of types %s, %s, %s (one type expected)",
                         lt_dtype_name(dy->dtype), lt_dtype_name(x->dtype), lt_dtype_name(w->dtype));
    gc_job j;
    int64_t ydims[LT_MAX_RANK];
    if ((s = gc_setup(k, x, w, transpose, &j, ydims)) != LT_OK ||
        (s = lt_gnn_same_shape(k, dy, "dy", x->rank, ydims)) != LT_OK)
        return s;
    lt_tensor *out;
    if ((s = lt_k_out(k, 0, b->dtype, b->rank, b->dims, &out)) != LT_OK || out->numel == 0)
        return s;
    bool native = x->dtype == LT_F32 || x->dtype == LT_F64;
    j.esz = x->dtype == LT_F64 ? 8 : 4;
    const char *pdy = dy->data, *px = x->data, *pw = w->data;
    char *po = out->data;
    if (!native) {
        pdy = (const char *)lt_nn_f32_of(k, dy);
        px = pdy ? (const char *)lt_nn_f32_of(k, x) : NULL;
        pw = px ? (const char *)lt_nn_f32_of(k, w) : NULL;
        if (!pw)
            return LT_ERR_NOMEM;
        if (!(po = lt_k_scratch(k, sizeof(float) * (size_t)out->numel)))
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    if (!transpose && lt_nn_depthwise_usable(&j.g, j.groups, j.ich, j.gch)) {
        if (what == GC_DATA)
            lt_nn_depthwise_grad_data(j.esz, &j.g, j.n, j.ich, j.gch, pdy, pw, po);
        else
            lt_nn_depthwise_grad_filter(j.esz, &j.g, j.n, j.ich, j.gch, pdy, px, po);
    } else if (what == GC_DATA)
        s = transpose ? gc_forward(k, &j, pdy, pw, po) : gc_backward(k, &j, pdy, pw, po);
    else
        s = transpose ? gc_filter(k, &j, px, pdy, po) : gc_filter(k, &j, pdy, px, po);
    if (s == LT_OK && !native)
        lt_nn_store_f32(out, (const float *)po);
    return s;
}

static lt_status k_conv_grad_data(lt_kctx *k) { return conv_grad(k, false, GC_DATA); }
static lt_status k_conv_grad_filter(lt_kctx *k) { return conv_grad(k, false, GC_FILTER); }
static lt_status k_convt_grad_data(lt_kctx *k) { return conv_grad(k, true, GC_DATA); }
static lt_status k_convt_grad_filter(lt_kctx *k) { return conv_grad(k, true, GC_FILTER); }

void lt_gnn_register_conv(lt_kernel_fn *tab)
{
    tab[LT_OP_CONV_GRAD_DATA] = k_conv_grad_data;
    tab[LT_OP_CONV_GRAD_FILTER] = k_conv_grad_filter;
    tab[LT_OP_CONV_TRANSPOSE_GRAD_DATA] = k_convt_grad_data;
    tab[LT_OP_CONV_TRANSPOSE_GRAD_FILTER] = k_convt_grad_filter;
}
