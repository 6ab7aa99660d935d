/* CPU kernel: GridSample (opset 16's 2-d form and opset 20's N-d form).
 * Each output point is a small list of (input offset, weight) taps, the
 * tensor product of per-axis taps that follow the ONNX reference: grid
 * coordinates are denormalized, padded (border, reflection), and every tap
 * reads through the padding rule (zeros, clamp or reflect): grid_util.h,
 * shared with GridSampleGrad. */
#include "grid_util.h"
#include "norm_util.h"
#include <math.h>
#include <string.h>

lt_status lt_img_grid_params(lt_kctx *k, const lt_tensor *x, const lt_tensor *grid, lt_grid_params *p)
{
    const lt_node *node = k->node;
    memset(p, 0, sizeof *p);
    p->k = x->rank - 2;
    if (p->k < 1 || p->k > LT_GS_MAX_SPATIAL || grid->rank != x->rank || grid->dims[grid->rank - 1] != p->k ||
        grid->dims[0] != x->dims[0])
        return lt_k_fail(k, LT_ERR_RUNTIME, "grid must be (N, spatial..., %d) with X's N; X has rank %d", p->k,
                         x->rank);
    static const char *const modes[] = {"linear", "bilinear", "nearest", "cubic", "bicubic"};
    static const int mode_ids[] = {LT_GS_LINEAR, LT_GS_LINEAR, LT_GS_NEAREST, LT_GS_CUBIC, LT_GS_CUBIC};
    const char *m = lt_attr_str(node, "mode", node->opset >= 20 ? "linear" : "bilinear");
    p->mode = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(m, modes[i]) == 0)
            p->mode = mode_ids[i];
    const char *pm = lt_attr_str(node, "padding_mode", "zeros");
    p->pad = strcmp(pm, "zeros") == 0 ? LT_GS_ZEROS : strcmp(pm, "border") == 0 ? LT_GS_BORDER
                                                  : strcmp(pm, "reflection") == 0 ? LT_GS_REFLECTION : -1;
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
        p->maxt *= p->mode == LT_GS_CUBIC ? 4 : p->mode == LT_GS_LINEAR ? 2 : 1;
    return LT_OK;
}

#define GS_APPLY(T, S)                                                                                          \
    static void apply_##S(const lt_grid_params *p, const T *x, const double *grid, T *y, int64_t nb, int64_t c, \
                          int64_t img, int64_t pts)                                                             \
    {                                                                                                           \
        _Pragma("omp parallel for if (nb * pts * c > LT_NU_PAR && nb * pts > 1) schedule(static)")              \
        for (int64_t np = 0; np < nb * pts; np++) {                                                             \
            int64_t b = np / pts, q = np % pts, off[p->maxt];                                                   \
            double wt[p->maxt];                                                                                 \
            int nt = lt_gs_taps(p, grid + np * p->k, off, wt, NULL, false);                                     \
            for (int64_t ch = 0; ch < c; ch++) {                                                                \
                const T *xi = x + (b * c + ch) * img;                                                           \
                double acc = 0;                                                                                 \
                for (int t = 0; t < nt; t++)                                                                    \
                    acc += wt[t] * xi[off[t]];                                                                  \
                y[(b * c + ch) * pts + q] = (T)acc;                                                             \
            }                                                                                                   \
        }                                                                                                       \
    }
GS_APPLY(float, f32)
GS_APPLY(double, f64)

lt_status lt_cpu_grid_sample(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *grid = lt_k_in(k, 1);
    if (!x || !grid)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X and grid");
    if (!lt_dtype_is_float(x->dtype) && !lt_dtype_is_int(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be numeric, got %s", lt_dtype_name(x->dtype));
    lt_grid_params p;
    lt_status s = lt_img_grid_params(k, x, grid, &p);
    if (s != LT_OK)
        return s;
    int64_t nb = x->dims[0], c = x->dims[1], img = lt_shape_numel(p.k, x->dims + 2);
    int64_t ydims[LT_MAX_RANK];
    ydims[0] = nb;
    ydims[1] = c;
    for (int a = 0; a < p.k; a++)
        ydims[2 + a] = grid->dims[1 + a];
    int64_t pts = lt_shape_numel(p.k, ydims + 2);
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, ydims, &y)) != LT_OK || y->numel == 0)
        return s;
    if (img == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot sample from an empty image");
    bool f32 = x->dtype == LT_F32;
    const void *xw = lt_nu_work_in(k, x, f32);
    const double *gw = xw ? lt_nu_as_f64(k, grid) : NULL;
    void *yw = gw ? lt_nu_work_out(k, y, f32) : NULL;
    if (!yw)
        return LT_ERR_RUNTIME;
    if (f32)
        apply_f32(&p, xw, gw, yw, nb, c, img, pts);
    else
        apply_f64(&p, xw, gw, yw, nb, c, img, pts);
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}
