/* CPU kernel: ResizeGrad, the adjoint of Resize (and of Resize-10 /
 * Upsample, which map asymmetrically). Every mode of the forward is a
 * separable linear map: per axis, each output coordinate reads a few input
 * taps with fixed weights (nearest: one tap of weight 1). The gradient
 * applies the transposed per-axis maps: each output's dy is scattered onto
 * its taps with the same weights. Outputs that tf_crop_and_resize fills
 * with extrapolation_value depend on no input and pass nothing back.
 * The tap tables follow the forward (runtime/cpu/image_resize.c) exactly. */
#include "grad_nn_util.h"
#include "image_util.h"
#include "norm_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

typedef struct rg_axis {
    int64_t in, out;
    int ntap;
    int64_t *idx;     /* out * ntap input indices, clamped into [0, in) */
    double *w;        /* out * ntap weights */
    uint8_t *outside; /* the output coordinate left the crop: no taps */
    bool identity;
} rg_axis;

static int find_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* ---- the forward's parameters from the node ---- */

static bool nonempty(const lt_tensor *t) { return t && t->numel > 0; }

static lt_status rg_modes(lt_kctx *k, lt_resize *p, bool legacy)
{
    const lt_node *n = k->node;
    static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear"};
    const char *m = lt_attr_str(n, "mode", "nearest");
    int mi = find_name(m, modes, 4);
    if (mi < 0 || (legacy && mi == LT_RS_CUBIC))
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported mode '%s'", m);
    p->mode = mi == 3 ? LT_RS_LINEAR : mi;
    p->cubic_a = -0.75;
    if (legacy) {
        p->coord = LT_RS_ASYMMETRIC;
        p->nearest = LT_RS_SIMPLE;
        return LT_OK;
    }
    static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *c = lt_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    const char *nm = lt_attr_str(n, "nearest_mode", "round_prefer_floor");
    if ((p->coord = find_name(c, coords, 7)) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported coordinate_transformation_mode '%s'", c);
    if ((p->nearest = find_name(nm, nearest, 4)) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported nearest_mode '%s'", nm);
    p->cubic_a = lt_attr_float(n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = lt_attr_int(n, "exclude_outside", 0) != 0;
    p->antialias = lt_attr_int(n, "antialias", 0) != 0 && p->mode != LT_RS_NEAREST;
    return LT_OK;
}

/* scales given: output size floor(scale * in) */
static lt_status rg_scales(lt_kctx *k, lt_resize *p, const lt_tensor *x, const double *sc, const int *axes, int na)
{
    for (int d = 0; d < x->rank; d++)
        p->scale[d] = 1;
    for (int i = 0; i < na; i++) {
        if (!(sc[i] > 0) || !isfinite(sc[i]))
            return lt_k_fail(k, LT_ERR_RUNTIME, "scale %g for axis %d must be positive", sc[i], axes[i]);
        p->scale[axes[i]] = sc[i];
    }
    for (int d = 0; d < x->rank; d++) {
        p->out_f[d] = p->scale[d] * (double)x->dims[d];
        if (p->out_f[d] > 9.0e15)
            return lt_k_fail(k, LT_ERR_RUNTIME, "output size along axis %d is too large", d);
        p->out[d] = (int64_t)floor(p->out_f[d]);
    }
    return LT_OK;
}

/* sizes given: scales follow, or one scale for all under the aspect policy */
static lt_status rg_sizes(lt_kctx *k, lt_resize *p, const lt_tensor *x, const lt_tensor *sizes, const int *axes,
                          int na)
{
    static const char *const pols[] = {"stretch", "not_larger", "not_smaller"};
    const char *pol = lt_attr_str(k->node, "keep_aspect_ratio_policy", "stretch");
    int pi = find_name(pol, pols, 3);
    if (pi < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "unsupported keep_aspect_ratio_policy '%s'", pol);
    for (int d = 0; d < x->rank; d++) {
        p->out[d] = x->dims[d];
        p->out_f[d] = (double)x->dims[d];
        p->scale[d] = 1;
    }
    double common = pi == 1 ? INFINITY : 0;
    for (int i = 0; i < na; i++) {
        int64_t v = lt_tensor_get_i64(sizes, i), in = x->dims[axes[i]];
        if (v < 0 || v > ((int64_t)1 << 50) || (in == 0 && v != 0))
            return lt_k_fail(k, LT_ERR_RUNTIME, "size %lld for axis %d of %lld", (long long)v, axes[i], (long long)in);
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
    for (int i = 0; i < na; i++) {
        int d = axes[i];
        p->scale[d] = common;
        p->out_f[d] = common * (double)x->dims[d];
        p->out[d] = (int64_t)(p->out_f[d] + 0.5);
    }
    return LT_OK;
}

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
    const lt_node *n = k->node;
    memset(p, 0, sizeof *p);
    p->rank = x->rank;
    bool legacy = n->opset < 11;
    lt_status st = rg_modes(k, p, legacy);
    int axes[LT_MAX_RANK], na = x->rank;
    for (int d = 0; d < x->rank; d++) {
        axes[d] = d;
        p->roi_end[d] = 1;
    }
    if (st != LT_OK)
        return st;
    if (legacy) {
        double sc[LT_MAX_RANK];
        if ((st = rg_legacy_scales(k, x, sc)) != LT_OK)
            return st;
        return rg_scales(k, p, x, sc, axes, na);
    }
    int nav;
    const int64_t *av = lt_attr_ints(n, "axes", &nav);
    if (av && n->opset >= 18) {
        bool seen[LT_MAX_RANK] = {false};
        if (nav > x->rank)
            return lt_k_fail(k, LT_ERR_RUNTIME, "%d axes for a rank-%d input", nav, x->rank);
        for (int i = 0; i < nav; i++) {
            int64_t a = av[i] < 0 ? av[i] + x->rank : av[i];
            if (a < 0 || a >= x->rank || seen[a])
                return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range or repeated", (long long)av[i]);
            seen[a] = true;
            axes[i] = (int)a;
        }
        na = nav;
    }
    const lt_tensor *roi = lt_k_in(k, 2), *scales = lt_k_in(k, 3), *sizes = lt_k_in(k, 4);
    if (nonempty(sizes)) {
        if (sizes->numel != na || !lt_dtype_is_int(sizes->dtype))
            return lt_k_fail(k, LT_ERR_RUNTIME, "sizes must hold %d integers", na);
        st = rg_sizes(k, p, x, sizes, axes, na);
    } else if (nonempty(scales)) {
        if (scales->numel != na)
            return lt_k_fail(k, LT_ERR_RUNTIME, "scales has %lld elements, expected %d", (long long)scales->numel,
                             na);
        const double *sc = lt_nu_as_f64(k, scales);
        st = sc ? rg_scales(k, p, x, sc, axes, na) : LT_ERR_RUNTIME;
    } else {
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs non-empty scales or sizes");
    }
    if (st != LT_OK || p->coord != LT_RS_TF_CROP_AND_RESIZE)
        return st;
    if (!nonempty(roi))
        return lt_k_fail(k, LT_ERR_RUNTIME, "tf_crop_and_resize needs roi");
    /* starts then ends, for the axes or for every dim */
    bool all = roi->numel == 2 * (int64_t)x->rank;
    if (roi->numel != 2 * (int64_t)na && !all)
        return lt_k_fail(k, LT_ERR_RUNTIME, "roi has %lld elements, expected %d", (long long)roi->numel, 2 * na);
    int cnt = all ? x->rank : na;
    for (int i = 0; i < cnt; i++) {
        int d = all ? i : axes[i];
        p->roi_start[d] = lt_tensor_get_f64(roi, i);
        p->roi_end[d] = lt_tensor_get_f64(roi, cnt + i);
    }
    return LT_OK;
}

/* ---- tap tables ---- */

/* input coordinate that output coordinate x maps to along axis d */
static double in_coord(const lt_resize *p, int d, int64_t in, double x)
{
    double s = p->scale[d], len = p->out_f[d], a = p->roi_start[d], b = p->roi_end[d];
    switch (p->coord) {
    case LT_RS_HALF_PIXEL_SYMMETRIC: {
        double ratio = (double)p->out[d] / len;
        return (double)in / 2 * (1 - ratio) + (x + 0.5) / s - 0.5;
    }
    case LT_RS_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5) / s - 0.5 : 0;
    case LT_RS_ALIGN_CORNERS: return len == 1 ? 0 : x * (double)(in - 1) / (len - 1);
    case LT_RS_ASYMMETRIC: return x / s;
    case LT_RS_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case LT_RS_TF_CROP_AND_RESIZE:
        if (len == 1)
            return (b - a) * (double)(in - 1) / 2 + a * (double)(in - 1);
        return a * (double)(in - 1) + x * (b - a) * (double)(in - 1) / (len - 1);
    default: return (x + 0.5) / s - 0.5;
    }
}

/* Keys' cubic kernel with coefficient a */
static double keys(double t, double a)
{
    t = fabs(t);
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

static int64_t nearest_of(const lt_resize *p, double x, double scale)
{
    double f = floor(x), r = x - f;
    int64_t i = (int64_t)f;
    if (r == 0)
        return i;
    switch (p->nearest) {
    case LT_RS_ROUND_PREFER_CEIL: return i + (r >= 0.5);
    case LT_RS_FLOOR: return i;
    case LT_RS_CEIL: return i + 1;
    case LT_RS_SIMPLE: return i + (scale < 1);
    default: return i + (r > 0.5);
    }
}

static lt_status rg_axis_build(lt_kctx *k, const lt_resize *p, int d, int64_t in, rg_axis *ax)
{
    memset(ax, 0, sizeof *ax);
    ax->in = in;
    ax->out = p->out[d];
    double s1 = p->scale[d] < 1 ? p->scale[d] : 1;
    int first = 0;
    if (p->mode == LT_RS_LINEAR)
        first = p->antialias ? (int)floor(-1 / s1) + 1 : 0;
    else if (p->mode == LT_RS_CUBIC)
        first = p->antialias ? (int)floor(-2 / s1) + 1 : -1;
    ax->ntap = p->mode == LT_RS_NEAREST ? 1 : 2 - 2 * first;
    if (ax->out > 0 && in <= 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot resize axis %d of size 0 to %lld", d, (long long)ax->out);
    int64_t nt = ax->out * ax->ntap, n = ax->ntap;
    ax->idx = lt_nu_scratch(k, nt ? nt : 1, sizeof *ax->idx);
    ax->w = ax->idx ? lt_nu_scratch(k, nt ? nt : 1, sizeof *ax->w) : NULL;
    ax->outside = ax->w ? lt_nu_scratch(k, ax->out ? ax->out : 1, 1) : NULL;
    if (!ax->outside)
        return LT_ERR_NOMEM;
    ax->identity = ax->out == in;
    for (int64_t j = 0; j < ax->out; j++) {
        int64_t *idx = ax->idx + j * n;
        double *w = ax->w + j * n, x = in_coord(p, d, in, (double)j);
        ax->outside[j] = p->coord == LT_RS_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1));
        if (p->mode == LT_RS_NEAREST) {
            idx[0] = nearest_of(p, x, p->scale[d]);
            w[0] = 1;
        } else {
            /* x = base + r with r in (0, 1]; tap t sits at base + first + t */
            double base = ceil(x) - 1, r = x - base, sum = 0;
            for (int t = 0; t < n; t++) {
                int i = first + t;
                idx[t] = (int64_t)base + i;
                if (p->mode == LT_RS_LINEAR)
                    w[t] = p->antialias ? fmax(0, 1 - fabs((i - r) * s1)) : (i == 0 ? 1 - r : r);
                else
                    w[t] = keys(p->antialias ? (i - r) * s1 : i - r, p->cubic_a);
                sum += w[t];
            }
            if (p->antialias && sum != 0)
                for (int t = 0; t < n; t++)
                    w[t] /= sum;
            if (p->exclude_outside) {
                sum = 0;
                for (int t = 0; t < n; t++) {
                    if (idx[t] < 0 || idx[t] >= in)
                        w[t] = 0;
                    sum += w[t];
                }
                if (sum != 0)
                    for (int t = 0; t < n; t++)
                        w[t] /= sum;
            }
        }
        for (int t = 0; t < n; t++) {
            idx[t] = idx[t] < 0 ? 0 : idx[t] >= in ? in - 1 : idx[t];
            /* identity: the only non-zero tap reads j with weight 1 */
            if (ax->outside[j] || (w[t] != 0 && (idx[t] != j || w[t] != 1)))
                ax->identity = false;
        }
    }
    return LT_OK;
}

/* ---- the transposed per-axis map ---- */

/* dst [outer, in, inner] = sum over the taps of src [outer, out, inner].
 * Work items are (outer index, block of inner): disjoint parts of dst. */
#define RG_PASS(T, S)                                                                                          \
    static void tpass_##S(const T *src, T *dst, int64_t outer, int64_t inner, const rg_axis *ax)             \
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
    rg_axis ax[LT_MAX_RANK];
    for (int d = 0; d < r; d++) {
        if ((st = rg_axis_build(k, &p, d, x->dims[d], &ax[d])) != LT_OK)
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
