/* CPU kernels: AffineGrid (opset 20) and its gradient
 *   AffineGridGrad (dgrid, theta, size) -> dtheta.
 * grid[n, p, r] = sum_c theta[n, r, c] base[p, c], base[p] = (x, y[, z], 1)
 * with x along W, y along H, z along D, each in [-1, 1]: the pixel centres
 * when align_corners=0, the corner pixels' centres when 1. So
 * dtheta[n, r, c] = sum_p dgrid[n, p, r] base[p, c]. */
#include "norm_util.h"
#include <string.h>

typedef struct ag_geom {
    int64_t N, sp[3]; /* spatial sizes, outermost first (D, H, W or H, W) */
    int k;            /* 2 or 3 */
    int64_t pts;      /* points per image */
    bool align;
} ag_geom;

static lt_status ag_setup(lt_kctx *k, ag_geom *g, const lt_tensor *theta, const lt_tensor *size)
{
    if (!theta || !size)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs theta and size");
    if (!lt_dtype_is_float(theta->dtype) || theta->rank != 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "theta must be a float (N, 2, 3) or (N, 3, 4) tensor");
    if (!lt_dtype_is_int(size->dtype) || size->rank != 1 || (size->numel != 4 && size->numel != 5))
        return lt_k_fail(k, LT_ERR_RUNTIME, "size must be an integer vector (N, C, H, W) or (N, C, D, H, W)");
    g->k = (int)size->numel - 2;
    if (theta->dims[1] != g->k || theta->dims[2] != g->k + 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "theta is %lldx%lld, a %dd size needs %dx%d", (long long)theta->dims[1],
                         (long long)theta->dims[2], g->k, g->k, g->k + 1);
    g->N = lt_tensor_get_i64(size, 0);
    if (g->N != theta->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "size's N %lld differs from theta's %lld", (long long)g->N,
                         (long long)theta->dims[0]);
    g->pts = 1;
    for (int d = 0; d < g->k; d++) {
        g->sp[d] = lt_tensor_get_i64(size, 2 + d);
        if (g->sp[d] < 0 || g->sp[d] > (int64_t)1 << 24)
            return lt_k_fail(k, LT_ERR_RUNTIME, "spatial size %lld is out of range", (long long)g->sp[d]);
        g->pts *= g->sp[d];
    }
    g->align = lt_attr_int(k->node, "align_corners", 0) != 0;
    return LT_OK;
}

/* coordinate i of n along one axis */
static double ag_coord(const ag_geom *g, int64_t i, int64_t n)
{
    if (g->align)
        return n > 1 ? -1 + 2.0 * (double)i / (double)(n - 1) : -1;
    return -1 + (2.0 * (double)i + 1) / (double)n;
}

/* base[0..k] of point p: x, y[, z], 1 */
static void ag_base(const ag_geom *g, int64_t p, double *b)
{
    for (int d = g->k - 1; d >= 0; d--) {
        int64_t i = p % g->sp[d];
        p /= g->sp[d];
        b[g->k - 1 - d] = ag_coord(g, i, g->sp[d]);
    }
    b[g->k] = 1;
}

static lt_status affine_grid(lt_kctx *k)
{
    const lt_tensor *theta = lt_k_in(k, 0);
    ag_geom g;
    lt_status st = ag_setup(k, &g, theta, lt_k_in(k, 1));
    if (st != LT_OK)
        return st;
    int64_t dims[5] = {g.N};
    for (int d = 0; d < g.k; d++)
        dims[1 + d] = g.sp[d];
    dims[1 + g.k] = g.k;
    const double *th = lt_nu_as_f64(k, theta);
    double *w = th ? lt_nu_scratch(k, g.N * g.pts * g.k, sizeof *w) : NULL;
    if (!w)
        return LT_ERR_RUNTIME;
    int c = g.k + 1;
    for (int64_t p = 0; p < g.pts; p++) {
        double b[4];
        ag_base(&g, p, b);
        for (int64_t n = 0; n < g.N; n++)
            for (int r = 0; r < g.k; r++) {
                double s = 0;
                for (int j = 0; j < c; j++)
                    s += th[(n * g.k + r) * c + j] * b[j];
                w[(n * g.pts + p) * g.k + r] = s;
            }
    }
    lt_tensor *y;
    st = lt_k_out(k, 0, theta->dtype, g.k + 2, dims, &y);
    if (st == LT_OK)
        lt_nu_store_f64(y, w);
    return st;
}

static lt_status affine_grid_grad(lt_kctx *k)
{
    const lt_tensor *dg = lt_k_in(k, 0), *theta = lt_k_in(k, 1);
    ag_geom g;
    lt_status st = ag_setup(k, &g, theta, lt_k_in(k, 2));
    if (st != LT_OK)
        return st;
    if (!dg || dg->numel != g.N * g.pts * g.k)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dgrid must have the grid's %lld elements", (long long)(g.N * g.pts * g.k));
    const double *d = lt_nu_as_f64(k, dg);
    double *w = d ? lt_nu_scratch(k, theta->numel, sizeof *w) : NULL;
    if (!w)
        return LT_ERR_RUNTIME;
    memset(w, 0, (size_t)theta->numel * sizeof *w);
    int c = g.k + 1;
    for (int64_t p = 0; p < g.pts; p++) {
        double b[4];
        ag_base(&g, p, b);
        for (int64_t n = 0; n < g.N; n++)
            for (int r = 0; r < g.k; r++) {
                double v = d[(n * g.pts + p) * g.k + r];
                for (int j = 0; j < c; j++)
                    w[(n * g.k + r) * c + j] += v * b[j];
            }
    }
    lt_tensor *t;
    st = lt_k_out(k, 0, theta->dtype, theta->rank, theta->dims, &t);
    if (st == LT_OK)
        lt_nu_store_f64(t, w);
    return st;
}

void lt_cpu_register_affine_grid(lt_kernel_fn *tab)
{
    tab[LT_OP_AFFINE_GRID] = affine_grid;
    tab[LT_OP_AFFINE_GRID_GRAD] = affine_grid_grad;
}
