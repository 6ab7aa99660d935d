/* CPU kernel: GridSampleGrad (dy, X, grid) -> dX, dgrid. Each output point
 * reads a few input taps (the forward's own, runtime/cpu/grid_util.h:
 * coordinates denormalized, padded, every tap read through the padding
 * rule). dX scatters dy onto the taps with their weights; dgrid contracts
 * dy with X at the taps through each weight's derivative along every grid
 * coordinate (the chain through denormalization, border clamping or
 * reflection, and the linear or cubic kernel). Nearest sampling is
 * piecewise constant in the grid: its dgrid is zero. */
#include "grad_sampling.h"
#include "grid_util.h"
#include "norm_util.h"
#include <omp.h>
#include <string.h>

typedef struct gs_job {
    lt_grid_params p;
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
        const lt_grid_params *p = &j->p;                                                                         \
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
                    int nt = lt_gs_taps(p, j->grid + (b * pts + q) * k, off, wt, dwt, true);                     \
                    j->bcnt[i] = nt;                                                                             \
                    if (!dwt)                                                                                    \
                        continue;                                                                                \
                    double acc[LT_GS_MAX_SPATIAL] = {0};                                                         \
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
    lt_status s = lt_img_grid_params(k, x, grid, &j.p);
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
