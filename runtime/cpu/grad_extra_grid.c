/* CPU kernel: GridSampleGrad (dy, X, grid) -> dX, dgrid. Each output point
 * reads a few input taps (the forward's rules, runtime/cpu/image_grid.c:
 * coordinates denormalized, padded, every tap read through the padding
 * rule). dX scatters dy onto the taps with their weights; dgrid contracts
 * dy with X at the taps through each weight's derivative along every grid
 * coordinate (the chain through denormalization, border clamping or
 * reflection, and the linear or cubic kernel). Nearest sampling is
 * piecewise constant in the grid: its dgrid is zero. */
#include "grad_extra.h"
#include "norm_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

#define GS_MAX_SPATIAL (LT_MAX_RANK - 2)

typedef struct gs_params {
    int mode, pad, k, maxt;
    bool align;
    int64_t len[GS_MAX_SPATIAL];    /* input spatial sizes, outermost first */
    int64_t stride[GS_MAX_SPATIAL]; /* element strides of those axes */
} gs_params;

/* x folded into [lo, hi] at the nearer border; *slope is d result / dx */
static double reflect(double x, double lo, double hi, double *slope)
{
    double rng = hi - lo;
    *slope = 1;
    if (rng <= 0) {
        *slope = 0;
        return lo;
    }
    if (x < lo || x > hi) {
        double dx = x < lo ? lo - x : x - hi, n = floor(dx / rng), r = dx - n * rng;
        bool even = fmod(n, 2) == 0;
        /* an even number of folds runs against x, an odd one with it */
        *slope = even ? -1 : 1;
        if (x < lo)
            return even ? lo + r : hi - r;
        return even ? hi - r : lo + r;
    }
    return x;
}

/* the cubic convolution kernel (A = -0.75) and its derivative */
static double keys(double t)
{
    const double a = -0.75;
    t = fabs(t);
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

static double keys_d(double t)
{
    const double a = -0.75;
    double sg = t < 0 ? -1 : 1;
    t = fabs(t);
    if (t <= 1)
        return sg * (3 * (a + 2) * t - 2 * (a + 3)) * t;
    if (t < 2)
        return sg * ((3 * a * t - 10 * a) * t + 8 * a);
    return 0;
}

/* Taps of one axis for normalized coordinate g: up to 4 indices (-1 where
 * the zeros padding reads 0), weights, and the weights' derivatives by g. */
static int axis_taps(const gs_params *p, int axis, double g, int64_t *idx, double *w, double *dw)
{
    int64_t len = p->len[axis];
    double lo = p->align ? 0 : -0.5, hi = p->align ? (double)len - 1 : (double)len - 0.5;
    double x = p->align ? (g + 1) / 2 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2;
    double dx = p->align ? (double)(len - 1) / 2 : (double)len / 2; /* d x / d g */
    if (!(fabs(x) < 1e15)) {
        x = x > 0 ? 1e15 : -1e15;
        dx = 0;
    }
    if (p->mode == GS_NEAREST) {
        x = p->k == 3 ? round(x) : nearbyint(x);
        dx = 0;
    }
    if (x < lo || x > hi) {
        if (p->pad == GS_BORDER) {
            x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
            dx = 0;
        } else if (p->pad == GS_REFLECTION) {
            double slope;
            x = reflect(x, lo, hi, &slope);
            dx *= slope;
        }
    }
    int n;
    double x0 = floor(x), t = x - x0, unused;
    int64_t first;
    if (p->mode == GS_NEAREST) {
        n = 1;
        first = (int64_t)x;
        w[0] = 1;
        dw[0] = 0;
    } else if (p->mode == GS_LINEAR) {
        n = 2;
        first = (int64_t)x0;
        w[0] = 1 - t;
        w[1] = t;
        dw[0] = -dx;
        dw[1] = dx;
    } else {
        n = 4;
        first = (int64_t)x0 - 1;
        for (int i = 0; i < 4; i++) {
            w[i] = keys(t + 1 - i);
            dw[i] = keys_d(t + 1 - i) * dx;
        }
    }
    for (int i = 0; i < n; i++) {
        int64_t j = first + i;
        if (j < 0 || j >= len) {
            if (p->pad == GS_ZEROS)
                j = -1;
            else if (p->pad == GS_BORDER)
                j = j < 0 ? 0 : len - 1;
            else
                j = (int64_t)reflect((double)j, lo, hi, &unused);
            if (j >= len)
                j = len - 1;
        }
        idx[i] = j;
    }
    return n;
}

/* The taps of one output point: offsets into one (n, c) image, weights and
 * (when dwt is not NULL) dwt[a * maxt + t], tap t's weight differentiated
 * by the coordinate of spatial axis a. Taps in the zeros padding are left
 * out; returns the count. */
static int point_taps(const gs_params *p, const double *g, int64_t *off, double *wt, double *dwt)
{
    int64_t idx[GS_MAX_SPATIAL][4];
    double w[GS_MAX_SPATIAL][4], dw[GS_MAX_SPATIAL][4];
    int n[GS_MAX_SPATIAL], cnt[GS_MAX_SPATIAL] = {0}, total = 0, k = p->k;
    /* the grid's last dim lists coordinates innermost axis first (x, y, z) */
    for (int a = 0; a < k; a++)
        n[a] = axis_taps(p, a, g[k - 1 - a], idx[a], w[a], dw[a]);
    for (;;) {
        int64_t o = 0;
        double ww = 1;
        bool zero = false;
        for (int a = 0; a < k; a++) {
            int64_t j = idx[a][cnt[a]];
            zero = zero || j < 0;
            o += j * p->stride[a];
            ww *= w[a][cnt[a]];
        }
        if (!zero) {
            off[total] = o;
            wt[total] = ww;
            for (int a = 0; dwt && a < k; a++) {
                double d = dw[a][cnt[a]];
                for (int b = 0; b < k; b++)
                    if (b != a)
                        d *= w[b][cnt[b]];
                dwt[a * p->maxt + total] = d;
            }
            total++;
        }
        int a = k - 1;
        while (a >= 0 && ++cnt[a] == n[a])
            cnt[a--] = 0;
        if (a < 0)
            break;
    }
    return total;
}

typedef struct gs_job {
    gs_params p;
    int64_t nb, c, img, pts;
    const double *grid;
    double *dgrid;       /* NULL unless wanted */
    int64_t block;       /* points whose taps are kept at once for the dX scatter */
    int64_t *boff;       /* [block][maxt] */
    double *bwt;         /* [block][maxt] */
    int *bcnt;           /* [block] */
    int64_t *toff;       /* per thread [maxt] (dgrid alone) */
    double *twt, *tdw;   /* per thread [maxt], [k][maxt] */
} gs_job;

/* Per batch image, points in blocks: the taps of a block's points (and
 * their dgrid, which needs nothing but the taps, X and dy), then dy of
 * those points scattered onto dX, channels in parallel. */
#define GS_GRAD(T, S)                                                                                             \
    static void grad_##S(const gs_job *j, const T *x, const T *dy, T *dx)                                        \
    {                                                                                                            \
        const gs_params *p = &j->p;                                                                              \
        int64_t c = j->c, img = j->img, pts = j->pts, maxt = p->maxt;                                            \
        int k = p->k;                                                                                            \
        for (int64_t b = 0; b < j->nb; b++)                                                                      \
            for (int64_t q0 = 0; q0 < pts; q0 += j->block) {                                                     \
                int64_t np = pts - q0 < j->block ? pts - q0 : j->block;                                          \
                _Pragma("omp parallel for schedule(static) if (np * c * maxt > LT_NU_PAR && np > 1)")              \
                for (int64_t i = 0; i < np; i++) {                                                               \
                    int tid = omp_get_thread_num();                                                              \
                    int64_t q = q0 + i;                                                                          \
                    int64_t *off = dx ? j->boff + i * maxt : j->toff + tid * maxt;                               \
                    double *wt = dx ? j->bwt + i * maxt : j->twt + tid * maxt;                                   \
                    double *dwt = j->dgrid ? j->tdw + (int64_t)tid * k * maxt : NULL;                            \
                    int nt = point_taps(p, j->grid + (b * pts + q) * k, off, wt, dwt);                           \
                    j->bcnt[i] = nt;                                                                             \
                    if (!dwt)                                                                                    \
                        continue;                                                                                \
                    double acc[GS_MAX_SPATIAL] = {0};                                                            \
                    for (int64_t ch = 0; ch < c; ch++) {                                                         \
                        double g = dy[(b * c + ch) * pts + q];                                                   \
                        const T *xi = x + (b * c + ch) * img;                                                    \
                        for (int a = 0; a < k && g != 0; a++) {                                                  \
                            double s = 0;                                                                        \
                            for (int t = 0; t < nt; t++)                                                         \
                                s += dwt[a * maxt + t] * xi[off[t]];                                             \
                            acc[a] += g * s;                                                                     \
                        }                                                                                        \
                    }                                                                                            \
                    for (int a = 0; a < k; a++)                                                                  \
                        j->dgrid[(b * pts + q) * k + k - 1 - a] = acc[a];                                        \
                }                                                                                                \
                if (!dx)                                                                                         \
                    continue;                                                                                    \
                _Pragma("omp parallel for schedule(static) if (np * c * maxt > LT_NU_PAR && c > 1)")               \
                for (int64_t ch = 0; ch < c; ch++) {                                                             \
                    T *di = dx + (b * c + ch) * img;                                                             \
                    const T *gi = dy + (b * c + ch) * pts + q0;                                                  \
                    for (int64_t i = 0; i < np; i++) {                                                           \
                        const int64_t *off = j->boff + i * maxt;                                                 \
                        const double *wt = j->bwt + i * maxt;                                                    \
                        T g = gi[i];                                                                             \
                        for (int t = 0; t < j->bcnt[i]; t++)                                                     \
                            di[off[t]] += (T)wt[t] * g;                                                          \
                    }                                                                                            \
                }                                                                                                \
            }                                                                                                    \
    }
GS_GRAD(float, f32)
GS_GRAD(double, f64)

static lt_status parse(lt_kctx *k, const lt_tensor *x, const lt_tensor *grid, gs_params *p)
{
    const lt_node *node = k->node;
    memset(p, 0, sizeof *p);
    p->k = x->rank - 2;
    if (p->k < 1 || p->k > GS_MAX_SPATIAL || grid->rank != x->rank || grid->dims[grid->rank - 1] != p->k ||
        grid->dims[0] != x->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "grid must be (N, spatial..., %d) with X's N; X has rank %d", p->k,
                         x->rank);
    static const char *const modes[] = {"linear", "bilinear", "nearest", "cubic", "bicubic"};
    static const int mode_ids[] = {GS_LINEAR, GS_LINEAR, GS_NEAREST, GS_CUBIC, GS_CUBIC};
    const char *m = lt_attr_str(node, "mode", node->opset >= 20 ? "linear" : "bilinear");
    p->mode = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(m, modes[i]) == 0)
            p->mode = mode_ids[i];
    const char *pm = lt_attr_str(node, "padding_mode", "zeros");
    p->pad = strcmp(pm, "zeros") == 0 ? GS_ZEROS : strcmp(pm, "border") == 0 ? GS_BORDER
                                                 : strcmp(pm, "reflection") == 0 ? GS_REFLECTION : -1;
    if (p->mode < 0 || p->pad < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported mode '%s' or padding_mode '%s'", m, pm);
    p->align = lt_attr_int(node, "align_corners", 0) != 0;
    int64_t st = 1;
    for (int a = p->k - 1; a >= 0; a--) {
        p->len[a] = x->dims[2 + a];
        p->stride[a] = st;
        st *= p->len[a];
    }
    p->maxt = 1;
    for (int a = 0; a < p->k; a++)
        p->maxt *= p->mode == GS_CUBIC ? 4 : p->mode == GS_LINEAR ? 2 : 1;
    return LT_OK;
}

lt_status lt_gx_grid_sample_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_k_in(k, 0), *x = lt_k_in(k, 1), *grid = lt_k_in(k, 2);
    if (!dy || !x || !grid)
        return lt_k_fail(k, LT_ERR_INVALID, "needs dy, X and grid");
    if (!lt_dtype_is_float(x->dtype) || dy->dtype != x->dtype || !lt_dtype_is_float(grid->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy and X must share a float type and grid be float (%s, %s, %s)",
                         lt_dtype_name(dy->dtype), lt_dtype_name(x->dtype), lt_dtype_name(grid->dtype));
    gs_job j;
    memset(&j, 0, sizeof j);
    lt_status s = parse(k, x, grid, &j.p);
    if (s != LT_OK)
        return s;
    int kk = j.p.k;
    j.nb = x->dims[0];
    j.c = x->dims[1];
    j.img = lt_shape_numel(kk, x->dims + 2);
    j.pts = lt_shape_numel(kk, grid->dims + 1);
    bool ok = dy->rank == x->rank && dy->dims[0] == j.nb && dy->dims[1] == j.c;
    for (int a = 0; ok && a < kk; a++)
        ok = dy->dims[2 + a] == grid->dims[1 + a];
    if (!ok)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dy must be (N, C, grid's spatial sizes...)");
    lt_tensor *dx = NULL, *dg = NULL;
    if (lt_k_want(k, 0) && (s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK)
        return s;
    if (lt_k_want(k, 1) && (s = lt_k_out(k, 1, grid->dtype, grid->rank, grid->dims, &dg)) != LT_OK)
        return s;
    if (dx && dx->numel)
        memset(dx->data, 0, lt_tensor_nbytes(dx));
    if (dg && dg->numel)
        memset(dg->data, 0, lt_tensor_nbytes(dg));
    if (dx && dx->numel == 0)
        dx = NULL;
    if (dg && dg->numel == 0)
        dg = NULL;
    if ((!dx && !dg) || dy->numel == 0)
        return LT_OK;
    if (j.img == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot sample from an empty image");
    bool f32 = x->dtype == LT_F32;
    int nt = omp_get_max_threads();
    int64_t maxt = j.p.maxt;
    j.block = (1 << 16) / maxt;
    j.block = j.block < 1 ? 1 : j.block > j.pts ? j.pts : j.block;
    const void *xw = lt_nu_work_in(k, x, f32), *dyw = xw ? lt_nu_work_in(k, dy, f32) : NULL;
    j.grid = dyw ? lt_nu_as_f64(k, grid) : NULL;
    void *dxw = j.grid && dx ? lt_nu_work_out(k, dx, f32) : NULL;
    j.dgrid = j.grid && dg ? lt_nu_work_out(k, dg, false) : NULL;
    j.bcnt = lt_nu_scratch(k, j.block, sizeof *j.bcnt);
    if (!j.grid || (dx && !dxw) || (dg && !j.dgrid) || !j.bcnt)
        return LT_ERR_RUNTIME;
    if (dx) {
        j.boff = lt_nu_scratch(k, j.block * maxt, sizeof *j.boff);
        j.bwt = lt_nu_scratch(k, j.block * maxt, sizeof *j.bwt);
        if (!j.boff || !j.bwt)
            return LT_ERR_RUNTIME;
        if (dxw != dx->data)
            memset(dxw, 0, (f32 ? sizeof(float) : sizeof(double)) * (size_t)dx->numel);
    } else {
        j.toff = lt_nu_scratch(k, nt * maxt, sizeof *j.toff);
        j.twt = lt_nu_scratch(k, nt * maxt, sizeof *j.twt);
        if (!j.toff || !j.twt)
            return LT_ERR_RUNTIME;
    }
    if (dg && !(j.tdw = lt_nu_scratch(k, nt * kk * maxt, sizeof *j.tdw)))
        return LT_ERR_RUNTIME;
    if (f32)
        grad_f32(&j, xw, dyw, dxw);
    else
        grad_f64(&j, xw, dyw, dxw);
    if (dx)
        lt_nu_work_store(dx, dxw, f32);
    if (dg)
        lt_nu_work_store(dg, j.dgrid, false);
    return LT_OK;
}
