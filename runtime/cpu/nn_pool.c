/* CPU kernels: MaxPool (with Indices), AveragePool, LpPool and the global
 * pools. Windows are N-D: per-axis tables give each window position its
 * in-image taps; float32 with up to 3 spatial axes runs direct loops over
 * them, everything else lists each window's taps and reduces them in double
 * (types without a native path convert through double). */
#include "nn_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

typedef struct pool_job {
    lt_nn_geom g;
    pool_kind kind;
    bool count_pad;    /* AveragePool: padding counts in the divisor */
    double p;          /* LpPool */
    int storage_order; /* MaxPool Indices: 0 row-major, 1 column-major */
    int64_t planes, in_plane, out_plane, taps;
    size_t esz;
    const void *x;
    void *y;
    int64_t *ind;
} pool_job;

/* Per axis and window position: where the window starts, its taps inside
 * the image [lo, hi), and its taps inside the padded image. Computed once
 * per kernel call so that no output position divides. */
typedef struct axis_win {
    int64_t start, lo, hi, padded;
} axis_win;

static void axis_tables(const lt_nn_geom *g, axis_win **tab)
{
    for (int d = 0; d < g->nsp; d++)
        for (int64_t p = 0; p < g->grid[d]; p++) {
            int64_t st = p * g->s[d] - g->pb[d], dil = g->d[d], in = g->img[d], k = g->k[d];
            int64_t a = st >= 0 ? 0 : (-st + dil - 1) / dil;
            int64_t b = in - st <= 0 ? 0 : (in - st + dil - 1) / dil;
            int64_t pend = in + g->pe[d] - st <= 0 ? 0 : (in + g->pe[d] - st + dil - 1) / dil;
            b = b < k ? b : k;
            tab[d][p] = (axis_win){st, a < b ? a : b, b, pend < k ? pend : k};
        }
}

/* The in-plane offsets of the taps of the window at grid position pos that
 * lie inside the image, in scan order; returns their count, and in *padded
 * the count of taps inside the padded image. */
static int64_t window_taps(const lt_nn_geom *g, axis_win *const *tab, const int64_t *pos, int64_t *offs,
                           int64_t *padded)
{
    int n = g->nsp, last = n - 1;
    const axis_win *w[LT_MAX_RANK];
    int64_t t[LT_MAX_RANK], count = 1, pc = 1;
    for (int d = 0; d < n; d++) {
        w[d] = &tab[d][pos[d]];
        t[d] = w[d]->lo;
        count *= w[d]->hi - w[d]->lo;
        pc *= w[d]->padded;
    }
    *padded = pc;
    if (count == 0)
        return 0;
    int64_t m = 0, dl = g->d[last], lo = w[last]->lo, hi = w[last]->hi;
    for (;;) {
        int64_t base = 0;
        for (int d = 0; d < last; d++)
            base = base * g->img[d] + w[d]->start + t[d] * g->d[d];
        base = base * g->img[last] + w[last]->start;
        for (int64_t q = lo; q < hi; q++)
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

/* row-major in-plane offset to the column-major one (storage_order 1) */
static int64_t column_major(const lt_nn_geom *g, int64_t off)
{
    int64_t coord[LT_MAX_RANK], r = 0;
    for (int d = g->nsp - 1; d >= 0; d--) {
        coord[d] = off % g->img[d];
        off /= g->img[d];
    }
    for (int d = g->nsp - 1; d >= 0; d--)
        r = r * g->img[d] + coord[d];
    return r;
}

static inline double load(const pool_job *j, const void *x, int64_t i)
{
    return j->esz == 4 ? (double)((const float *)x)[i] : ((const double *)x)[i];
}

/* one output element from its window's taps */
static void reduce(const pool_job *j, int64_t plane, int64_t o, const int64_t *offs, int64_t cnt, int64_t padded)
{
    const char *x = (const char *)j->x + (size_t)(plane * j->in_plane) * j->esz;
    double v;
    if (j->kind == POOL_MAX) {
        /* the first maximum in scan order wins; an empty window gives 0 */
        double best = cnt ? load(j, x, offs[0]) : 0;
        int64_t at = cnt ? offs[0] : 0;
        for (int64_t q = 1; q < cnt; q++) {
            double e = load(j, x, offs[q]);
            if (e > best) {
                best = e;
                at = offs[q];
            }
        }
        v = best;
        if (j->ind)
            j->ind[o] = plane * j->in_plane + (j->storage_order ? column_major(&j->g, at) : at);
    } else if (j->kind == POOL_AVG) {
        double sum = 0;
        for (int64_t q = 0; q < cnt; q++)
            sum += load(j, x, offs[q]);
        int64_t div = j->count_pad ? padded : cnt;
        v = div ? sum / (double)div : 0;
    } else {
        double sum = 0;
        for (int64_t q = 0; q < cnt; q++) {
            double e = load(j, x, offs[q]);
            sum += j->p == 2 ? e * e : j->p == 1 ? fabs(e) : pow(fabs(e), j->p);
        }
        v = j->p == 2 ? sqrt(sum) : j->p == 1 ? sum : pow(sum, 1.0 / j->p);
    }
    if (j->esz == 4)
        ((float *)j->y)[o] = (float)v;
    else
        ((double *)j->y)[o] = v;
}

/* The fast path: float32 with up to 3 spatial axes, run as 3-D (missing
 * leading axes have size 1) with direct loops over each window. */
static void pool3_f32(const pool_job *j, axis_win *const *tab)
{
    static const axis_win unit = {0, 0, 1, 1};
    const lt_nn_geom *g = &j->g;
    int lead = 3 - g->nsp;
    const axis_win *t3[3];
    int64_t img[3], grid[3], dil[3];
    for (int a = 0; a < 3; a++) {
        int d = a - lead;
        img[a] = d < 0 ? 1 : g->img[d];
        grid[a] = d < 0 ? 1 : g->grid[d];
        dil[a] = d < 0 ? 1 : g->d[d];
        t3[a] = d < 0 ? &unit : tab[d];
    }
    int64_t rows = j->planes * grid[0] * grid[1], w = img[2], hw = img[1] * img[2];
    bool parallel = rows * grid[2] * j->taps >= LT_NN_PAR_MIN;
#pragma omp parallel for schedule(dynamic, lt_par_chunk(rows)) if (parallel)
    for (int64_t row = 0; row < rows; row++) {
        int64_t plane = row / (grid[0] * grid[1]);
        const axis_win *wz = &t3[0][row / grid[1] % grid[0]];
        const axis_win *wy = &t3[1][row % grid[1]];
        const float *x = (const float *)j->x + plane * j->in_plane;
        float *y = (float *)j->y + row * grid[2];
        int64_t *ind = j->ind ? j->ind + row * grid[2] : NULL;
        for (int64_t ox = 0; ox < grid[2]; ox++) {
            const axis_win *wx = &t3[2][ox];
            int64_t cnt = (wz->hi - wz->lo) * (wy->hi - wy->lo) * (wx->hi - wx->lo);
            /* the maximum starts at the first tap; the comparisons are
             * selects, not branches (random data mispredicts them) */
            int64_t at = cnt ? (wz->start + wz->lo * dil[0]) * hw + (wy->start + wy->lo * dil[1]) * w + wx->start +
                                   wx->lo * dil[2]
                             : 0;
            float best = cnt ? x[at] : 0;
            double sum = 0;
            for (int64_t tz = wz->lo; tz < wz->hi; tz++)
                for (int64_t ty = wy->lo; ty < wy->hi; ty++) {
                    int64_t base = (wz->start + tz * dil[0]) * hw + (wy->start + ty * dil[1]) * w + wx->start;
                    const float *r = x + base;
                    if (j->kind == POOL_MAX && !ind) {
                        for (int64_t tx = wx->lo; tx < wx->hi; tx++)
                            best = r[tx * dil[2]] > best ? r[tx * dil[2]] : best;
                    } else if (j->kind == POOL_MAX) {
                        for (int64_t tx = wx->lo; tx < wx->hi; tx++) {
                            float v = r[tx * dil[2]];
                            bool gt = v > best;
                            best = gt ? v : best;
                            at = gt ? base + tx * dil[2] : at;
                        }
                    } else if (j->kind == POOL_AVG) {
                        for (int64_t tx = wx->lo; tx < wx->hi; tx++)
                            sum += r[tx * dil[2]];
                    } else {
                        for (int64_t tx = wx->lo; tx < wx->hi; tx++) {
                            double e = fabs((double)r[tx * dil[2]]);
                            sum += j->p == 2 ? e * e : j->p == 1 ? e : pow(e, j->p);
                        }
                    }
                }
            if (j->kind == POOL_MAX) {
                y[ox] = best;
                if (ind)
                    ind[ox] = plane * j->in_plane + (j->storage_order ? column_major(g, at) : at);
            } else if (j->kind == POOL_AVG) {
                int64_t div = j->count_pad ? wz->padded * wy->padded * wx->padded : cnt;
                y[ox] = div ? (float)(sum / (double)div) : 0;
            } else {
                y[ox] = (float)(j->p == 2 ? sqrt(sum) : j->p == 1 ? sum : pow(sum, 1.0 / j->p));
            }
        }
    }
}

/* MaxPool on float32 planes with lt_nn_plain2d 2x2 stride-2 windows and no
 * Indices (CNNs' pooling): straight loops. The maximum is taken in scan
 * order with the same comparisons as pool3_f32, so NaNs fall out the same
 * way. */
static void maxpool2d_f32(const pool_job *j)
{
    const lt_nn_geom *g = &j->g;
    int64_t oh = g->grid[0], ow = g->grid[1], iw = g->img[1];
    int64_t rows = j->planes * oh;
#pragma omp parallel for schedule(dynamic, lt_par_chunk(rows)) if (rows * ow * j->taps >= 4 * LT_NN_PAR_MIN)
    for (int64_t row = 0; row < rows; row++) {
        int64_t plane = row / oh, oy = row % oh;
        const float *r0 = (const float *)j->x + plane * j->in_plane + oy * 2 * iw, *r1 = r0 + iw;
        float *y = (float *)j->y + row * ow;
        for (int64_t ox = 0; ox < ow; ox++) {
            float best = r0[2 * ox], v = r0[2 * ox + 1];
            best = v > best ? v : best;
            v = r1[2 * ox];
            best = v > best ? v : best;
            v = r1[2 * ox + 1];
            y[ox] = v > best ? v : best;
        }
    }
}

/* MaxPool without Indices on float32 planes with 2 spatial axes and any
 * pads, strides, dilations or ceil_mode: pool3_f32's comparisons in scan
 * order from the per-axis tables, with windows wholly inside the image of
 * 3x3 taps and dilation 1 unrolled. */
static void maxpool2d_any_f32(const pool_job *j, axis_win *const *tab)
{
    const lt_nn_geom *g = &j->g;
    int64_t oh = g->grid[0], ow = g->grid[1], iw = g->img[1], dh = g->d[0], dw = g->d[1];
    int64_t rows = j->planes * oh;
#pragma omp parallel for schedule(dynamic, lt_par_chunk(rows)) if (rows * ow * j->taps >= LT_NN_PAR_MIN)
    for (int64_t row = 0; row < rows; row++) {
        int64_t plane = row / oh;
        const axis_win *wy = &tab[0][row % oh];
        const float *x = (const float *)j->x + plane * j->in_plane;
        float *y = (float *)j->y + row * ow;
        int64_t ny = wy->hi - wy->lo, r0 = (wy->start + wy->lo * dh) * iw;
        for (int64_t ox = 0; ox < ow; ox++) {
            const axis_win *wx = &tab[1][ox];
            int64_t nx = wx->hi - wx->lo;
            if (ny <= 0 || nx <= 0) {
                y[ox] = 0; /* an empty window gives 0 */
                continue;
            }
            const float *p = x + r0 + wx->start + wx->lo * dw;
            float best = p[0];
            if (ny == 3 && nx == 3 && dh == 1 && dw == 1) {
                best = p[1] > best ? p[1] : best;
                best = p[2] > best ? p[2] : best;
                for (int ty = 1; ty < 3; ty++) {
                    const float *r = p + ty * iw;
                    best = r[0] > best ? r[0] : best;
                    best = r[1] > best ? r[1] : best;
                    best = r[2] > best ? r[2] : best;
                }
            } else {
                for (int64_t ty = 0; ty < ny; ty++) {
                    const float *r = p + ty * dh * iw;
                    for (int64_t tx = 0; tx < nx; tx++)
                        best = r[tx * dw] > best ? r[tx * dw] : best;
                }
            }
            y[ox] = best;
        }
    }
}

static void pool_run(const pool_job *j, axis_win *const *tab, int64_t *offs_all)
{
    int64_t total = j->planes * j->out_plane;
    const lt_nn_geom *g = &j->g;
    bool parallel = total * j->taps >= LT_NN_PAR_MIN;
#pragma omp parallel if (parallel)
    {
        int tid = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t a = total * tid / nt, b = total * (tid + 1) / nt;
        int64_t *offs = offs_all + (size_t)tid * (size_t)j->taps;
        int64_t pos[LT_MAX_RANK], plane = a / j->out_plane, r = a % j->out_plane;
        for (int d = g->nsp - 1; d >= 0; d--) {
            pos[d] = r % g->grid[d];
            r /= g->grid[d];
        }
        for (int64_t o = a; o < b; o++) {
            int64_t padded, cnt = window_taps(g, tab, pos, offs, &padded);
            reduce(j, plane, o, offs, cnt, padded);
            int d = g->nsp - 1;
            while (d >= 0 && ++pos[d] >= g->grid[d])
                pos[d--] = 0;
            plane += d < 0;
        }
    }
}

/* Runs a windowed pool of the given kind on input 0 into output 0 (and the
 * Indices output 1 of MaxPool when wanted). */
static lt_status pool(lt_kctx *k, pool_kind kind, double p)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input");
    bool ok_type = lt_dtype_is_float(x->dtype) || (kind == POOL_MAX && lt_dtype_is_int(x->dtype));
    if (!ok_type)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of type %s", lt_dtype_name(x->dtype));
    if (x->rank < 3 || x->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N, C and at least one spatial axis)", x->rank);
    int nsp = x->rank - 2;
    int64_t kernel[LT_MAX_RANK];
    lt_status s = lt_nn_kernel(k, nsp, NULL, kernel);
    if (s != LT_OK)
        return s;
    pool_job j = {.kind = kind, .p = p};
    const lt_node *n = k->node;
    char why[256];
    if (!lt_nn_window(n, nsp, x->dims + 2, kernel, lt_attr_int(n, "ceil_mode", 0) != 0, &j.g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    j.count_pad = lt_attr_int(n, "count_include_pad", 0) != 0;
    j.storage_order = (int)lt_attr_int(n, "storage_order", 0);
    if (j.storage_order != 0 && j.storage_order != 1)
        return lt_k_fail(k, LT_ERR_INVALID, "storage_order %d", j.storage_order);
    int64_t dims[LT_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < nsp; i++)
        dims[i + 2] = j.g.grid[i];
    lt_tensor *y, *ind = NULL;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, dims, &y)) != LT_OK)
        return s;
    if (kind == POOL_MAX && lt_k_want(k, 1) && (s = lt_k_out(k, 1, LT_I64, x->rank, dims, &ind)) != LT_OK)
        return s;
    j.planes = x->dims[0] * x->dims[1];
    j.in_plane = lt_nn_prod(nsp, x->dims + 2);
    j.out_plane = lt_nn_prod(nsp, j.g.grid);
    j.taps = lt_nn_prod(nsp, kernel);
    if (y->numel == 0)
        return LT_OK;
    int nth = omp_get_max_threads();
    int64_t bytes, ntab = 0;
    int64_t *offs;
    for (int i = 0; i < nsp; i++)
        ntab += j.g.grid[i];
    axis_win *tab[LT_MAX_RANK], *all = lt_k_scratch(k, sizeof(axis_win) * (size_t)ntab);
    if (j.taps < 0 || !lt_nn_mul(j.taps, 8 * (int64_t)nth, &bytes) || !(offs = lt_k_scratch(k, (size_t)bytes)) ||
        !all)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (window of %lld taps)", (long long)j.taps);
    for (int i = 0; i < nsp; all += j.g.grid[i++])
        tab[i] = all;
    axis_tables(&j.g, tab);
    j.ind = ind ? ind->data : NULL;
    if (x->dtype == LT_F32 || x->dtype == LT_F64) {
        j.esz = x->dtype == LT_F32 ? 4 : 8;
        j.x = x->data;
        j.y = y->data;
        bool two = nsp == 2 && kernel[0] == 2 && kernel[1] == 2 && j.g.s[0] == 2 && j.g.s[1] == 2;
        bool max32 = j.esz == 4 && kind == POOL_MAX && !ind;
        if (max32 && lt_nn_maxpool2s2_f32(&j.g, j.planes, x->data, y->data))
            return LT_OK;
        else if (max32 && two && lt_nn_plain2d(&j.g))
            maxpool2d_f32(&j);
        else if (max32 && lt_nn_maxpool3s2_f32(&j.g, j.planes, x->data, y->data))
            return LT_OK;
        else if (max32 && lt_nn_maxpool3s2_any_f32(&j.g, j.planes, x->data, y->data))
            return LT_OK;
        else if (j.esz == 4 && kind == POOL_MAX && !ind && nsp == 2)
            maxpool2d_any_f32(&j, tab);
        else if (j.esz == 4 && nsp <= 3)
            pool3_f32(&j, tab);
        else
            pool_run(&j, tab, offs);
        return LT_OK;
    }
    j.esz = 8;
    j.x = lt_nn_f64_of(k, x);
    j.y = lt_k_scratch(k, sizeof(double) * (size_t)y->numel);
    if (!j.x)
        return LT_ERR_NOMEM;
    if (!j.y)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    pool_run(&j, tab, offs);
    lt_nn_store_f64(y, j.y);
    return LT_OK;
}

/* LpPool and GlobalLpPool: p is a float attribute in version 1, an int later */
static double lp_order(const lt_node *n)
{
    const lt_attr *a = lt_attr_find(n, "p");
    if (a && a->kind == LT_ATTR_INT)
        return (double)a->i;
    if (a && a->kind == LT_ATTR_FLOAT)
        return a->f;
    return 2;
}

static lt_status k_max_pool(lt_kctx *k) { return pool(k, POOL_MAX, 0); }
static lt_status k_average_pool(lt_kctx *k) { return pool(k, POOL_AVG, 0); }

static lt_status k_lp_pool(lt_kctx *k)
{
    double p = lp_order(k->node);
    if (!(p > 0))
        return lt_k_fail(k, LT_ERR_INVALID, "p = %g", p);
    return pool(k, POOL_LP, p);
}

/* Global pools: each [N, C] plane reduces to one value. */
static lt_status global_pool(lt_kctx *k, pool_kind kind, double p)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input");
    if (!lt_dtype_is_float(x->dtype) && !(kind == POOL_MAX && lt_dtype_is_int(x->dtype)))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of type %s", lt_dtype_name(x->dtype));
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N and C)", x->rank);
    if (kind == POOL_LP && !(p > 0))
        return lt_k_fail(k, LT_ERR_INVALID, "p = %g", p);
    int64_t dims[LT_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        dims[i] = i < 2 ? x->dims[i] : 1;
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, dims, &y);
    if (s != LT_OK || y->numel == 0)
        return s;
    int64_t planes = y->numel, len = x->numel / planes;
    pool_job j = {.kind = kind, .p = p, .esz = 8};
    const void *src = x->data;
    double *dst = lt_k_scratch(k, sizeof(double) * (size_t)planes);
    if (x->dtype == LT_F32)
        j.esz = 4;
    else if (x->dtype != LT_F64 && !(src = lt_nn_f64_of(k, x)))
        return LT_ERR_NOMEM;
    if (!dst)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
#pragma omp parallel for schedule(dynamic, lt_par_chunk(planes)) if (x->numel >= LT_NN_PAR_MIN)
    for (int64_t q = 0; q < planes; q++) {
        const char *row = (const char *)src + (size_t)(q * len) * j.esz;
        double acc = kind == POOL_MAX ? (len ? load(&j, row, 0) : 0) : 0;
        if (j.esz == 4) {
            const float *r = (const float *)row;
            if (kind == POOL_MAX)
                for (int64_t i = 1; i < len; i++)
                    acc = r[i] > acc ? r[i] : acc;
            else if (kind == POOL_AVG)
                for (int64_t i = 0; i < len; i++)
                    acc += r[i];
            else
                for (int64_t i = 0; i < len; i++)
                    acc += p == 2 ? (double)r[i] * r[i] : pow(fabs((double)r[i]), p);
        } else {
            const double *r = (const double *)row;
            if (kind == POOL_MAX)
                for (int64_t i = 1; i < len; i++)
                    acc = r[i] > acc ? r[i] : acc;
            else if (kind == POOL_AVG)
                for (int64_t i = 0; i < len; i++)
                    acc += r[i];
            else
                for (int64_t i = 0; i < len; i++)
                    acc += p == 2 ? r[i] * r[i] : pow(fabs(r[i]), p);
        }
        if (kind == POOL_AVG)
            acc = len ? acc / (double)len : 0;
        else if (kind == POOL_LP)
            acc = p == 2 ? sqrt(acc) : pow(acc, 1.0 / p);
        dst[q] = acc;
    }
    lt_nn_store_f64(y, dst);
    return LT_OK;
}

static lt_status k_global_average_pool(lt_kctx *k) { return global_pool(k, POOL_AVG, 0); }
static lt_status k_global_max_pool(lt_kctx *k) { return global_pool(k, POOL_MAX, 0); }
static lt_status k_global_lp_pool(lt_kctx *k) { return global_pool(k, POOL_LP, lp_order(k->node)); }

void lt_nn_register_pool(lt_kernel_fn *tab)
{
    tab[LT_OP_MAX_POOL] = k_max_pool;
    tab[LT_OP_AVERAGE_POOL] = k_average_pool;
    tab[LT_OP_LP_POOL] = k_lp_pool;
    tab[LT_OP_GLOBAL_AVERAGE_POOL] = k_global_average_pool;
    tab[LT_OP_GLOBAL_MAX_POOL] = k_global_max_pool;
    tab[LT_OP_GLOBAL_LP_POOL] = k_global_lp_pool;
}
