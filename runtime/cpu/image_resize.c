/* The resize engine behind Resize and Upsample. Every axis gets a table of
 * taps (source index, weight) per output coordinate, built as the ONNX
 * reference builds its 1-D interpolation; nearest mode is then a gather of
 * raw elements, linear and cubic a separable pass per axis that changes.
 * ResizeGrad (grad_nn_resize.c) applies the same tables transposed. */
#include "image_util.h"
#include "norm_util.h"
#include <math.h>
#include <string.h>

static double coord(const lt_resize *p, int d, int64_t in, double x)
{
    double s = p->scale[d], of = p->out_f[d];
    switch (p->coord) {
    case LT_RS_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)p->out[d] / of, center = (double)in / 2;
        return center * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    case LT_RS_PYTORCH_HALF_PIXEL: return of > 1 ? (x + 0.5) / s - 0.5 : 0;
    case LT_RS_ALIGN_CORNERS: return of == 1 ? 0 : x * (double)(in - 1) / (of - 1);
    case LT_RS_ASYMMETRIC: return x / s;
    case LT_RS_TF_HALF_PIXEL_FOR_NN:
        /* an axis kept as it is (batch, channels) stays itself, as in
         * TensorFlow and onnxruntime: x + 0.5 would round or interpolate
         * into the next sample */
        return s == 1 && p->out[d] == in ? x : (x + 0.5) / s;
    case LT_RS_TF_CROP_AND_RESIZE: {
        double a = p->roi_start[d], b = p->roi_end[d];
        if (of == 1)
            return (b - a) * (double)(in - 1) / 2 + a * (double)(in - 1);
        return a * (double)(in - 1) + x * (b - a) * (double)(in - 1) / (of - 1);
    }
    default: return (x + 0.5) / s - 0.5;
    }
}

/* Number of taps per output coordinate and the offset of the first tap
 * from the base index. */
static int tap_span(const lt_resize *p, double scale, int *first)
{
    double s = scale < 1 ? scale : 1;
    if (p->mode == LT_RS_NEAREST) {
        *first = 0;
        return 1;
    }
    if (p->mode == LT_RS_LINEAR) {
        *first = p->antialias ? (int)floor(-1 / s) + 1 : 0;
        return 2 - 2 * *first;
    }
    *first = p->antialias ? (int)floor(-2 / s) + 1 : -1;
    return 2 - 2 * *first;
}

static int64_t nearest_index(const lt_resize *p, double x, double scale)
{
    double f = floor(x), r = x - f;
    if (r == 0)
        return (int64_t)f;
    switch (p->nearest) {
    case LT_RS_ROUND_PREFER_CEIL: return (int64_t)f + (r >= 0.5);
    case LT_RS_FLOOR: return (int64_t)f;
    case LT_RS_CEIL: return (int64_t)f + 1;
    case LT_RS_SIMPLE: return (int64_t)f + (scale < 1);
    default: return (int64_t)f + (r > 0.5);
    }
}

/* Fills the taps of output coordinate j. The base index b and ratio r in
 * (0, 1] place x = b + r; tap t sits at b + first + t. */
static void taps_at(const lt_resize *p, int d, lt_rs_axis *ax, int64_t j, int first)
{
    int n = ax->ntap;
    int64_t *idx = ax->idx + j * n;
    double *w = ax->w + j * n, x = coord(p, d, ax->in, (double)j);
    if (p->coord == LT_RS_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(ax->in - 1)))
        ax->outside[j] = 1;
    if (p->mode == LT_RS_NEAREST) {
        idx[0] = nearest_index(p, x, p->scale[d]);
        w[0] = 1;
    } else {
        double b = ceil(x) - 1, r = x - b, s = p->scale[d] < 1 ? p->scale[d] : 1, sum = 0;
        for (int t = 0; t < n; t++) {
            int i = first + t;
            idx[t] = (int64_t)b + i;
            if (p->mode == LT_RS_LINEAR)
                w[t] = p->antialias ? fmax(0, 1 - fabs((i - r) * s)) : (i == 0 ? 1 - r : r);
            else
                w[t] = lt_img_cubic(p->antialias ? (i - r) * s : i - r, p->cubic_a);
            sum += w[t];
        }
        if (p->antialias && sum != 0)
            for (int t = 0; t < n; t++)
                w[t] /= sum;
        if (p->exclude_outside) {
            sum = 0;
            for (int t = 0; t < n; t++) {
                if (idx[t] < 0 || idx[t] >= ax->in)
                    w[t] = 0;
                sum += w[t];
            }
            if (sum != 0)
                for (int t = 0; t < n; t++)
                    w[t] /= sum;
        }
    }
    for (int t = 0; t < n; t++)
        idx[t] = idx[t] < 0 ? 0 : idx[t] >= ax->in ? ax->in - 1 : idx[t];
}

lt_status lt_img_resize_axis(lt_kctx *k, const lt_resize *p, int d, int64_t in, lt_rs_axis *ax)
{
    int first;
    memset(ax, 0, sizeof *ax);
    ax->in = in;
    ax->out = p->out[d];
    ax->ntap = tap_span(p, p->scale[d], &first);
    if (ax->out > 0 && in <= 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot resize axis %d of size 0 to %lld", d, (long long)ax->out);
    int64_t nt = ax->out * ax->ntap;
    ax->idx = lt_nu_scratch(k, nt, sizeof *ax->idx);
    ax->w = ax->idx ? lt_nu_scratch(k, nt, sizeof *ax->w) : NULL;
    ax->outside = ax->w ? lt_nu_scratch(k, ax->out, 1) : NULL;
    if (!ax->outside)
        return LT_ERR_NOMEM;
    memset(ax->outside, 0, (size_t)ax->out);
    ax->identity = ax->out == in;
    for (int64_t j = 0; j < ax->out; j++) {
        taps_at(p, d, ax, j, first);
        /* identity: the only non-zero tap reads j with weight 1 */
        for (int t = 0; t < ax->ntap && ax->identity; t++) {
            double w = ax->w[j * ax->ntap + t];
            int64_t i = ax->idx[j * ax->ntap + t];
            if (ax->outside[j] || (w != 0 && (i != j || w != 1)))
                ax->identity = false;
        }
    }
    return LT_OK;
}

/* ---- nearest: gather raw elements ---- */
static lt_status gather(lt_kctx *k, const lt_tensor *x, lt_tensor *y, const lt_resize *p, lt_rs_axis *ax)
{
    int r = x->rank;
    size_t es = lt_dtype_size(x->dtype);
    /* per axis: byte offset of each output coordinate's source, -1 outside */
    int64_t *off[LT_MAX_RANK], stride = (int64_t)es;
    for (int d = r - 1; d >= 0; d--) {
        off[d] = lt_nu_scratch(k, ax[d].out, sizeof **off);
        if (!off[d])
            return LT_ERR_NOMEM;
        for (int64_t j = 0; j < ax[d].out; j++)
            off[d][j] = ax[d].outside[j] ? -1 : ax[d].idx[j] * stride;
        stride *= x->dims[d];
    }
    unsigned char fill[16] = {0};
    if (p->coord == LT_RS_TF_CROP_AND_RESIZE) {
        lt_tensor one = {.dtype = x->dtype, .rank = 0, .numel = 1, .data = fill};
        lt_nu_store_f64(&one, &p->extrapolation);
    }
    int64_t last = r > 0 ? ax[r - 1].out : 1, rows = last ? y->numel / last : 0;
    const unsigned char *src = x->data;
    unsigned char *dst = y->data;
    if (r == 0) {
        memcpy(dst, src, es);
        return LT_OK;
    }
#pragma omp parallel for if (y->numel > LT_NU_PAR && rows > 1) schedule(static)
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, base = 0;
        bool out = false;
        for (int d = r - 2; d >= 0; d--) {
            int64_t o = off[d][rem % ax[d].out];
            rem /= ax[d].out;
            out = out || o < 0;
            base += o;
        }
        unsigned char *dp = dst + row * last * es;
        const int64_t *ol = off[r - 1];
        if (es == 4 && !out) {
            /* 4-byte elements: a fixed-size copy the compiler inlines */
            for (int64_t j = 0; j < last; j++)
                memcpy(dp + j * 4, ol[j] < 0 ? fill : src + base + ol[j], 4);
            continue;
        }
        for (int64_t j = 0; j < last; j++, dp += es) {
            int64_t o = ol[j];
            memcpy(dp, (out || o < 0) ? fill : src + base + o, es);
        }
    }
    return LT_OK;
}

/* ---- linear / cubic: one pass per axis that changes ---- */
#define RS_PASS(T, S)                                                                                        \
    static void pass_##S(const T *src, T *dst, int64_t outer, int64_t inner, const lt_rs_axis *ax, T fill)   \
    {                                                                                                        \
        int64_t on = ax->out, n = ax->ntap;                                                                  \
        _Pragma("omp parallel for if (outer * on * inner > LT_NU_PAR && outer * on > 1) schedule(static)")   \
        for (int64_t oj = 0; oj < outer * on; oj++) {                                                        \
            int64_t o = oj / on, j = oj % on;                                                                \
            T *dp = dst + oj * inner;                                                                        \
            if (ax->outside[j]) {                                                                            \
                for (int64_t e = 0; e < inner; e++)                                                          \
                    dp[e] = fill;                                                                            \
                continue;                                                                                    \
            }                                                                                                \
            const int64_t *idx = ax->idx + j * n;                                                            \
            const double *w = ax->w + j * n;                                                                 \
            const T *sp = src + o * ax->in * inner;                                                          \
            if (inner == 1) {                                                                                \
                double acc = 0;                                                                              \
                for (int64_t t = 0; t < n; t++)                                                              \
                    if (w[t] != 0)                                                                           \
                        acc += w[t] * sp[idx[t]];                                                            \
                dp[0] = (T)acc;                                                                              \
                continue;                                                                                    \
            }                                                                                                \
            for (int64_t e = 0; e < inner; e++)                                                              \
                dp[e] = 0;                                                                                   \
            for (int64_t t = 0; t < n; t++) {                                                                \
                if (w[t] == 0)                                                                               \
                    continue;                                                                                \
                const T wt = (T)w[t], *q = sp + idx[t] * inner;                                              \
                _Pragma("omp simd")                                                                          \
                for (int64_t e = 0; e < inner; e++)                                                          \
                    dp[e] += wt * q[e];                                                                      \
            }                                                                                                \
        }                                                                                                    \
    }
RS_PASS(float, f32)
RS_PASS(double, f64)

static lt_status interpolate(lt_kctx *k, const lt_tensor *x, lt_tensor *y, const lt_resize *p, lt_rs_axis *ax)
{
    bool f32 = x->dtype == LT_F32;
    size_t es = f32 ? sizeof(float) : sizeof(double);
    const void *cur = lt_nu_work_in(k, x, f32);
    void *yw = cur ? lt_nu_work_out(k, y, f32) : NULL;
    if (!yw)
        return LT_ERR_RUNTIME;
    int64_t dims[LT_MAX_RANK];
    int r = x->rank, lastd = -1;
    for (int d = 0; d < r; d++) {
        dims[d] = x->dims[d];
        if (!ax[d].identity)
            lastd = d;
    }
    if (lastd < 0) {
        memcpy(yw, cur, (size_t)y->numel * es);
        lt_nu_work_store(y, yw, f32);
        return LT_OK;
    }
    /* innermost axes first, as the reference nests them; the last pass
     * writes straight into the output */
    int first_d = -1;
    for (int d = 0; d < r && first_d < 0; d++)
        if (!ax[d].identity)
            first_d = d;
    for (int d = r - 1; d >= 0; d--) {
        if (ax[d].identity)
            continue;
        int64_t outer = lt_shape_numel(d, dims), inner = lt_shape_numel(r - d - 1, dims + d + 1);
        dims[d] = ax[d].out;
        void *dst = d == first_d ? yw : lt_nu_scratch(k, lt_shape_numel(r, dims), es);
        if (!dst)
            return LT_ERR_NOMEM;
        if (f32)
            pass_f32(cur, dst, outer, inner, &ax[d], (float)p->extrapolation);
        else
            pass_f64(cur, dst, outer, inner, &ax[d], p->extrapolation);
        cur = dst;
    }
    lt_nu_work_store(y, yw, f32);
    return LT_OK;
}

lt_status lt_img_resize(lt_kctx *k, const lt_tensor *x, const lt_resize *p)
{
    if (x->dtype == LT_STRING || lt_dtype_size(x->dtype) == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot resize a %s tensor", lt_dtype_name(x->dtype));
    if (p->rank != x->rank)
        return lt_k_fail(k, LT_ERR_INTERNAL, "resize parameters are for rank %d, X has rank %d", p->rank, x->rank);
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, p->out, &y);
    if (st != LT_OK || y->numel == 0)
        return st;
    lt_rs_axis ax[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        if ((st = lt_img_resize_axis(k, p, d, x->dims[d], &ax[d])) != LT_OK)
            return st;
    if (p->mode == LT_RS_NEAREST)
        return gather(k, x, y, p, ax);
    if (x->dtype == LT_BOOL)
        return lt_k_fail(k, LT_ERR_RUNTIME, "linear and cubic resize need a numeric tensor, got bool");
    return interpolate(k, x, y, p, ax);
}
