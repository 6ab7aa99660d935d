/* CPU kernel: ResizeGrad, the adjoint of Resize (and of Resize-10 /
 * Upsample, which map asymmetrically). Every mode of the forward is a
 * separable linear map: per axis, each output coordinate reads a few input
 * taps with fixed weights (nearest: one tap of weight 1). The gradient
 * applies the transposed per-axis maps: each output's dy is scattered onto
 * its taps with the same weights. Outputs that tf_crop_and_resize fills
 * with extrapolation_value depend on no input and pass nothing back.
 * The parameters and tap tables are the forward's own (image_util.h). */
#include "grad_nn_util.h"
#include "image_util.h"
#include "norm_util.h"
#include <omp.h>
#include <string.h>

static bool nonempty(const lt_tensor *t) { return t && t->numel > 0; }

/* Legacy scales (Resize-10, Upsample): an input, at 3 as in the later
 * form or at 2 where the forward's (X, scales) were passed on as they
 * stand (there is no roi then); else Upsample-7's scales attribute, else
 * Upsample-1's height_scale and width_scale. */
static lt_status rg_legacy_scales(lt_kctx *k, const lt_tensor *x, double *sc)
{
    const lt_tensor *s = nonempty(lt_k_in(k, 3)) ? lt_k_in(k, 3) : lt_k_in(k, 2);
    int ns;
    const float *fs = lt_attr_floats(k->node, "scales", &ns);
    for (int d = 0; d < x->rank; d++)
        sc[d] = 1;
    if (s && s->numel > 0) {
        if (s->numel != x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scales has %lld elements for rank %d", (long long)s->numel, x->rank);
        for (int d = 0; d < x->rank; d++)
            sc[d] = lt_tensor_get_f64(s, d);
    } else if (fs) {
        if (ns != x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scales has %d values for rank %d", ns, x->rank);
        for (int d = 0; d < x->rank; d++)
            sc[d] = fs[d];
    } else if (lt_attr_find(k->node, "height_scale") || lt_attr_find(k->node, "width_scale")) {
        if (x->rank != 4)
            return lt_k_fail(k, LT_ERR_RUNTIME, "height_scale and width_scale need a 4-d input, got rank %d",
                             x->rank);
        sc[2] = lt_attr_float(k->node, "height_scale", 1.0f);
        sc[3] = lt_attr_float(k->node, "width_scale", 1.0f);
    } else {
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs scales");
    }
    return LT_OK;
}

/* Inputs (dy, x, roi, scales, sizes) and the attributes to the forward's
 * parameters. */
static lt_status rg_params(lt_kctx *k, const lt_tensor *x, lt_resize *p)
{
    bool legacy = k->node->opset < 11;
    lt_status st = lt_img_resize_modes(k, x->rank, p, legacy);
    if (st != LT_OK)
        return st;
    if (!legacy)
        return lt_img_resize_shape(k, p, x, lt_k_in(k, 2), lt_k_in(k, 3), lt_k_in(k, 4));
    double sc[LT_MAX_RANK];
    int axes[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        axes[d] = d;
    if ((st = rg_legacy_scales(k, x, sc)) != LT_OK)
        return st;
    return lt_img_resize_scales(k, p, x, sc, axes, x->rank);
}

/* ---- the transposed per-axis map ---- */

/* dst [outer, in, inner] = sum over the taps of src [outer, out, inner].
 * Work items are (outer index, block of inner): disjoint parts of dst. */
#define RG_PASS(T, S)                                                                                          \
    static void tpass_##S(const T *src, T *dst, int64_t outer, int64_t inner, const lt_rs_axis *ax)            \
    {                                                                                                          \
        int64_t on = ax->out, in = ax->in, n = ax->ntap, nth = omp_get_max_threads();                        \
        int64_t nblk = outer >= nth ? 1 : (nth + outer - 1) / outer;                                         \
        nblk = nblk > (inner + 63) / 64 ? (inner + 63) / 64 : nblk;                                          \
        nblk = nblk < 1 ? 1 : nblk;                                                                          \
        bool parallel = (double)outer * (double)(on + in) * (double)inner >= LT_NU_PAR && outer * nblk > 1; \
        _Pragma("omp parallel for schedule(static) if (parallel)")                                           \
        for (int64_t it = 0; it < outer * nblk; it++) {                                                      \
            int64_t o = it / nblk, b = it % nblk, e0 = inner * b / nblk, e1 = inner * (b + 1) / nblk;          \
            T *dp = dst + o * in * inner;                                                                    \
            const T *sp = src + o * on * inner;                                                              \
            for (int64_t i = 0; i < in; i++)                                                                 \
                memset(dp + i * inner + e0, 0, sizeof(T) * (size_t)(e1 - e0));                               \
            for (int64_t j = 0; j < on; j++) {                                                               \
                if (ax->outside[j])                                                                          \
                    continue;                                                                                \
                const T *q = sp + j * inner;                                                                 \
                for (int64_t t = 0; t < n; t++) {                                                            \
                    double wd = ax->w[j * n + t];                                                            \
                    if (wd == 0)                                                                             \
                        continue;                                                                            \
                    T wt = (T)wd, *r = dp + ax->idx[j * n + t] * inner;                                      \
                    _Pragma("omp simd")                                                                      \
                    for (int64_t e = e0; e < e1; e++)                                                        \
                        r[e] += wt * q[e];                                                                   \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
    }
RG_PASS(float, f32)
RG_PASS(double, f64)

static lt_status k_resize_grad(lt_kctx *k)
{
    const lt_tensor *dy = lt_gnn_need(k, 0, "dy"), *x = dy ? lt_gnn_need(k, 1, "x") : NULL;
    if (!x)
        return LT_ERR_INVALID;
    lt_status st;
    if ((st = lt_gnn_float(k, dy, "dy")) != LT_OK || (st = lt_gnn_float(k, x, "x")) != LT_OK)
        return st;
    lt_resize p;
    if ((st = rg_params(k, x, &p)) != LT_OK || (st = lt_gnn_same_shape(k, dy, "dy", x->rank, p.out)) != LT_OK)
        return st;
    lt_tensor *dx;
    if ((st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return st;
    bool f32 = dy->dtype == LT_F32;
    size_t es = f32 ? sizeof(float) : sizeof(double);
    const void *cur = lt_nu_work_in(k, dy, f32);
    void *dxw = cur ? lt_nu_work_out(k, dx, f32) : NULL;
    if (!dxw)
        return LT_ERR_RUNTIME;
    if (dy->numel == 0) {
        memset(dxw, 0, es * (size_t)dx->numel);
        lt_nu_work_store(dx, dxw, f32);
        return LT_OK;
    }
    int r = x->rank, last = -1;
    lt_rs_axis ax[LT_MAX_RANK];
    for (int d = 0; d < r; d++) {
        if ((st = lt_img_resize_axis(k, &p, d, x->dims[d], &ax[d])) != LT_OK)
            return st;
        if (!ax[d].identity)
            last = d;
    }
    if (last < 0) {
        memcpy(dxw, cur, es * (size_t)dx->numel);
        lt_nu_work_store(dx, dxw, f32);
        return LT_OK;
    }
    /* axes before d already have the input's size, axes after it the
     * output's; the last pass writes dx */
    int64_t dims[LT_MAX_RANK];
    for (int d = 0; d < r; d++)
        dims[d] = p.out[d];
    for (int d = 0; d < r; d++) {
        if (ax[d].identity)
            continue;
        int64_t outer = lt_shape_numel(d, dims), inner = lt_shape_numel(r - d - 1, dims + d + 1);
        dims[d] = ax[d].in;
        void *dst = d == last ? dxw : lt_nu_scratch(k, lt_shape_numel(r, dims), es);
        if (!dst)
            return LT_ERR_NOMEM;
        if (f32)
            tpass_f32(cur, dst, outer, inner, &ax[d]);
        else
            tpass_f64(cur, dst, outer, inner, &ax[d]);
        cur = dst;
    }
    lt_nu_work_store(dx, dxw, f32);
    return LT_OK;
}

void lt_gnn_register_resize(lt_kernel_fn *tab) { tab[LT_OP_RESIZE_GRAD] = k_resize_grad; }
