/* CPU kernels: image family. Resize and Upsample (every opset) are parsed
 * here into one lt_resize description (ResizeGrad reads its node with the
 * same functions) and run by image_resize.c; GridSample lives in
 * image_grid.c. */
#include "image_util.h"
#include "norm_util.h"
#include <math.h>
#include <string.h>

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

lt_status lt_img_resize_modes(lt_kctx *k, int rank, lt_resize *p, bool legacy)
{
    const lt_node *n = k->node;
    memset(p, 0, sizeof *p);
    p->rank = rank;
    for (int d = 0; d < rank; d++)
        p->roi_end[d] = 1;
    static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear"};
    const char *m = lt_attr_str(n, "mode", "nearest");
    int mi = name_index(m, modes, 4);
    if (mi < 0 || (legacy && mi == LT_RS_CUBIC))
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported mode '%s'", m);
    p->mode = mi == 3 ? LT_RS_LINEAR : mi;
    if (legacy) {
        p->coord = LT_RS_ASYMMETRIC;
        p->nearest = LT_RS_SIMPLE;
        p->cubic_a = -0.75;
        return LT_OK;
    }
    static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    const char *c = lt_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    if ((p->coord = name_index(c, coords, 7)) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported coordinate_transformation_mode '%s'", c);
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *nm = lt_attr_str(n, "nearest_mode", "round_prefer_floor");
    if ((p->nearest = name_index(nm, nearest, 4)) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported nearest_mode '%s'", nm);
    p->cubic_a = lt_attr_float(n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = lt_attr_int(n, "exclude_outside", 0) != 0;
    p->extrapolation = lt_attr_float(n, "extrapolation_value", 0.0f);
    p->antialias = lt_attr_int(n, "antialias", 0) != 0 && p->mode != LT_RS_NEAREST;
    return LT_OK;
}

lt_status lt_img_resize_scales(lt_kctx *k, lt_resize *p, const lt_tensor *x, const double *sc, const int *axes,
                               int naxes)
{
    for (int d = 0; d < x->rank; d++)
        p->scale[d] = 1;
    for (int i = 0; i < naxes; i++) {
        if (!(sc[i] > 0) || !isfinite(sc[i]))
            return lt_k_fail(k, LT_ERR_RUNTIME, "scale %g for axis %d must be positive", sc[i], axes[i]);
        p->scale[axes[i]] = sc[i];
    }
    for (int d = 0; d < x->rank; d++) {
        p->out_f[d] = p->scale[d] * (double)x->dims[d];
        if (p->out_f[d] > 9.0e15)
            return lt_k_fail(k, LT_ERR_RUNTIME, "output size along axis %d is too large", d);
        p->out[d] = lt_resize_len(x->dims[d], p->scale[d]);
        /* align_corners where the scale makes the length fractional (7 x
         * 1.5): the ONNX reference (and the backend test data) divides by
         * scale x length - 1, PyTorch and onnxruntime by the output's
         * integer length - 1, 0.72 apart on a ramp; a file torch exported
         * (F.interpolate(scale_factor=..., align_corners=True)) runs as
         * PyTorch computes it */
        if (p->coord == LT_RS_ALIGN_CORNERS && lt_k_from_pytorch(k))
            p->out_f[d] = (double)p->out[d];
    }
    return LT_OK;
}

/* Output sizes given: scales follow, or one common scale under
 * keep_aspect_ratio_policy (rounded half up, as the reference rounds). */
static lt_status from_sizes(lt_kctx *k, lt_resize *p, const lt_tensor *x, const lt_tensor *sizes, const int *axes,
                            int naxes)
{
    const char *pol = lt_attr_str(k->node, "keep_aspect_ratio_policy", "stretch");
    static const char *const pols[] = {"stretch", "not_larger", "not_smaller"};
    int pi = name_index(pol, pols, 3);
    if (pi < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported keep_aspect_ratio_policy '%s'", pol);
    for (int d = 0; d < x->rank; d++) {
        p->out[d] = x->dims[d];
        p->scale[d] = 1;
        p->out_f[d] = (double)x->dims[d];
    }
    double common = pi == 1 ? INFINITY : 0;
    for (int i = 0; i < naxes; i++) {
        int64_t v = lt_tensor_get_i64(sizes, i), in = x->dims[axes[i]];
        if (v < 0 || v > ((int64_t)1 << 50))
            return lt_k_fail(k, LT_ERR_RUNTIME, "size %lld for axis %d is out of range", (long long)v, axes[i]);
        if (in == 0 && v != 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "cannot resize axis %d of size 0 to %lld", axes[i], (long long)v);
        double s = in ? (double)v / (double)in : 1;
        p->out[axes[i]] = v;
        p->out_f[axes[i]] = (double)v;
        p->scale[axes[i]] = s;
        common = pi == 1 ? fmin(common, s) : fmax(common, s);
    }
    if (pi == 0)
        return LT_OK;
    if (!(common > 0) || !isfinite(common))
        return lt_k_fail(k, LT_ERR_RUNTIME, "keep_aspect_ratio_policy needs positive sizes");
    for (int i = 0; i < naxes; i++) {
        int d = axes[i];
        p->scale[d] = common;
        p->out_f[d] = common * (double)x->dims[d];
        p->out[d] = (int64_t)(p->out_f[d] + 0.5);
    }
    return LT_OK;
}

static bool present(const lt_tensor *t)
{
    return t && t->numel > 0;
}

lt_status lt_img_resize_shape(lt_kctx *k, lt_resize *p, const lt_tensor *x, const lt_tensor *roi,
                              const lt_tensor *scales, const lt_tensor *sizes)
{
    const lt_node *n = k->node;
    /* axes (opset 18): the dims that scales, sizes and roi speak about */
    int axes[LT_MAX_RANK], naxes = x->rank;
    for (int d = 0; d < x->rank; d++)
        axes[d] = d;
    int na;
    const int64_t *av = lt_attr_ints(n, "axes", &na);
    if (av && n->opset >= 18) {
        if (na > x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "%d axes for a rank-%d input", na, x->rank);
        bool seen[LT_MAX_RANK] = {false};
        for (int i = 0; i < na; i++) {
            int64_t a = av[i] < 0 ? av[i] + x->rank : av[i];
            if (a < 0 || a >= x->rank || seen[a])
                return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range or repeated", (long long)av[i]);
            seen[a] = true;
            axes[i] = (int)a;
        }
        naxes = na;
    }

    lt_status st;
    if (present(sizes)) {
        if (sizes->numel != naxes)
            return lt_k_fail(k, LT_ERR_RUNTIME, "sizes has %lld elements, expected %d", (long long)sizes->numel,
                             naxes);
        if (!lt_dtype_is_int(sizes->dtype))
            return lt_k_fail(k, LT_ERR_RUNTIME, "sizes must be int64, got %s", lt_dtype_name(sizes->dtype));
        st = from_sizes(k, p, x, sizes, axes, naxes);
    } else if (present(scales)) {
        if (scales->numel != naxes)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scales has %lld elements, expected %d", (long long)scales->numel,
                             naxes);
        const double *sc = lt_nu_as_f64(k, scales);
        st = sc ? lt_img_resize_scales(k, p, x, sc, axes, naxes) : LT_ERR_RUNTIME;
    } else {
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs non-empty scales or sizes");
    }
    if (st != LT_OK || p->coord != LT_RS_TF_CROP_AND_RESIZE)
        return st;
    if (!present(roi))
        return lt_k_fail(k, LT_ERR_RUNTIME, "tf_crop_and_resize needs roi");
    /* roi lists starts then ends, for the axes or for every dim */
    bool all = roi->numel == 2 * (int64_t)x->rank;
    if (roi->numel != 2 * (int64_t)naxes && !all)
        return lt_k_fail(k, LT_ERR_RUNTIME, "roi has %lld elements, expected %d", (long long)roi->numel, 2 * naxes);
    int cnt = all ? x->rank : naxes;
    for (int i = 0; i < cnt; i++) {
        int d = all ? i : axes[i];
        p->roi_start[d] = lt_tensor_get_f64(roi, i);
        p->roi_end[d] = lt_tensor_get_f64(roi, cnt + i);
    }
    return LT_OK;
}

static lt_status resize(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X");
    lt_resize p;
    bool legacy = k->node->opset < 11;
    lt_status st = lt_img_resize_modes(k, x->rank, &p, legacy);
    if (st != LT_OK)
        return st;
    /* Resize-10 has (X, scales) */
    const lt_tensor *roi = legacy ? NULL : lt_k_in(k, 1);
    const lt_tensor *scales = lt_k_in(k, legacy ? 1 : 2), *sizes = legacy ? NULL : lt_k_in(k, 3);
    if ((st = lt_img_resize_shape(k, &p, x, roi, scales, sizes)) != LT_OK)
        return st;
    return lt_img_resize(k, x, &p);
}

static lt_status upsample(lt_kctx *k)
{
    const lt_node *n = k->node;
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X");
    lt_resize p;
    lt_status st = lt_img_resize_modes(k, x->rank, &p, true);
    if (st != LT_OK)
        return st;
    double sc[LT_MAX_RANK];
    int axes[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        axes[d] = d;
        sc[d] = 1;
    }
    if (n->opset >= 9) {
        const lt_tensor *s = lt_k_in(k, 1);
        if (!s || s->numel != x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scales must have one element per dim of X (%d)", x->rank);
        for (int d = 0; d < x->rank; d++)
            sc[d] = lt_tensor_get_f64(s, d);
    } else if (n->opset >= 7) {
        int ns;
        const float *s = lt_attr_floats(n, "scales", &ns);
        if (!s || ns != x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scales must have one element per dim of X (%d)", x->rank);
        for (int d = 0; d < x->rank; d++)
            sc[d] = s[d];
    } else {
        /* Upsample-1: NCHW with height_scale and width_scale */
        if (x->rank != 4)
            return lt_k_fail(k, LT_ERR_RUNTIME, "Upsample-1 needs a 4-d input, got rank %d", x->rank);
        sc[2] = lt_attr_float(n, "height_scale", 1.0f);
        sc[3] = lt_attr_float(n, "width_scale", 1.0f);
    }
    if ((st = lt_img_resize_scales(k, &p, x, sc, axes, x->rank)) != LT_OK)
        return st;
    return lt_img_resize(k, x, &p);
}

void lt_cpu_register_image(lt_kernel_fn *tab)
{
    tab[LT_OP_RESIZE] = resize;
    tab[LT_OP_UPSAMPLE] = upsample;
    tab[LT_OP_GRID_SAMPLE] = lt_cpu_grid_sample;
}
