/* Image family kernels (Resize, Upsample, GridSample) against hand-derived
 * values and against test-side re-implementations of the ONNX reference
 * algorithms (per output point, nested 1-d interpolation, neighbours picked
 * by distance in an edge-padded axis). */
#include "testutil.h"
#include "ir/shape_image.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void run_ok(tu_graph *g, lt_value *const *in, lt_value **out)
{
    lt_err err = {{0}};
    lt_status s = tu_run(g, in, out, &err);
    if (s != LT_OK)
        fail_msg("run failed: %s", err.msg);
}

/* ---- reference Resize ---- */
typedef struct rcfg {
    int rank;
    int64_t in[4], out[4];
    double scale[4];
    const char *mode, *coord, *nearest;
    double a, extrap;
    int exclude, antialias;
    double roi_s[4], roi_e[4];
} rcfg;

static double cmp_near_at;
static int by_distance(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    double da = fabs(cmp_near_at - (double)a), db = fabs(cmp_near_at - (double)b);
    if (da != db)
        return da < db ? -1 : 1;
    return a < b ? -1 : a > b;
}
static int ascending(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return a < b ? -1 : a > b;
}

static double keys_a(double t, double a)
{
    t = fabs(t);
    if (t <= 1)
        return (a + 2) * t * t * t - (a + 3) * t * t + 1;
    if (t < 2)
        return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
    return 0;
}

/* Coefficients for ratio r in (0, 1]; returns how many. */
static int ref_coeffs(const rcfg *c, double r, double scale, double *w)
{
    if (strcmp(c->mode, "nearest") == 0) {
        if (r == 1) {
            w[0] = 0, w[1] = 1;
        } else if (strcmp(c->nearest, "round_prefer_floor") == 0) {
            w[0] = r <= 0.5, w[1] = r > 0.5;
        } else if (strcmp(c->nearest, "round_prefer_ceil") == 0) {
            w[0] = r < 0.5, w[1] = r >= 0.5;
        } else if (strcmp(c->nearest, "floor") == 0) {
            w[0] = 1, w[1] = 0;
        } else {
            w[0] = 0, w[1] = 1;
        }
        return 2;
    }
    double s = scale < 1 ? scale : 1, sum = 0;
    if (strcmp(c->mode, "linear") == 0) {
        if (!c->antialias) {
            w[0] = 1 - r, w[1] = r;
            return 2;
        }
        int start = (int)floor(-1 / s) + 1, n = 2 - 2 * start;
        for (int i = 0; i < n; i++) {
            double v = 1 - fabs((start + i - r) * s);
            w[i] = v < 0 ? 0 : v > 1 ? 1 : v;
            sum += w[i];
        }
        for (int i = 0; i < n; i++)
            w[i] /= sum;
        return n;
    }
    if (!c->antialias) {
        double a = c->a;
        w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
        w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
        w[2] = ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1;
        w[3] = ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a;
        return 4;
    }
    int start = (int)floor(-2 / s) + 1, n = 2 - 2 * start;
    for (int i = 0; i < n; i++) {
        w[i] = keys_a(s * (start + i - r), c->a);
        sum += w[i];
    }
    for (int i = 0; i < n; i++)
        w[i] /= sum;
    return n;
}

static double ref_interp(const rcfg *c, const double *x, int axis, int64_t base, const int64_t *pos)
{
    if (axis == c->rank)
        return x[base];
    int64_t stride = 1;
    for (int d = axis + 1; d < c->rank; d++)
        stride *= c->in[d];
    double in = (double)c->in[axis], s = c->scale[axis], ow = s * in, xr = (double)pos[axis], xo;
    const char *m = c->coord;
    if (strcmp(m, "align_corners") == 0)
        xo = ow == 1 ? 0 : xr * (in - 1) / (ow - 1);
    else if (strcmp(m, "asymmetric") == 0)
        xo = xr / s;
    else if (strcmp(m, "tf_crop_and_resize") == 0) {
        double a = c->roi_s[axis], b = c->roi_e[axis];
        xo = ow == 1 ? (b - a) * (in - 1) / 2 : xr * (b - a) * (in - 1) / (ow - 1);
        xo += a * (in - 1);
        if (xo < 0 || xo > in - 1)
            return c->extrap;
    } else if (strcmp(m, "pytorch_half_pixel") == 0)
        xo = ow == 1 ? -0.5 : (xr + 0.5) / s - 0.5;
    else if (strcmp(m, "half_pixel_symmetric") == 0) {
        double adj = (double)c->out[axis] / ow, center = in / 2;
        xo = center * (1 - adj) + (xr + 0.5) / s - 0.5;
    } else
        xo = (xr + 0.5) / s - 0.5;
    double r = xo == floor(xo) ? 1 : xo - floor(xo), w[64];
    int n = ref_coeffs(c, r, s, w);
    int pad = (n + 1) / 2;
    int64_t cand[64], len = c->in[axis] + 2 * pad;
    for (int64_t i = 0; i < len; i++)
        cand[i] = i;
    cmp_near_at = xo + pad;
    qsort(cand, (size_t)len, sizeof *cand, by_distance);
    qsort(cand, (size_t)n, sizeof *cand, ascending);
    if (c->exclude) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            int64_t idx = cand[i] - pad;
            if (idx < 0 || idx >= c->in[axis])
                w[i] = 0;
            sum += w[i];
        }
        for (int i = 0; i < n; i++)
            w[i] /= sum;
    }
    double acc = 0;
    for (int i = 0; i < n; i++) {
        int64_t idx = cand[i] - pad;
        idx = idx < 0 ? 0 : idx >= c->in[axis] ? c->in[axis] - 1 : idx;
        if (w[i] != 0)
            acc += w[i] * ref_interp(c, x, axis + 1, base + idx * stride, pos);
    }
    return acc;
}

static double *ref_resize(const rcfg *c, const lt_value *xv, int64_t *nout)
{
    int64_t in_n = xv->t.numel, n = 1;
    double *x = malloc(sizeof *x * (size_t)in_n);
    for (int64_t i = 0; i < in_n; i++)
        x[i] = tu_get(xv, i);
    for (int d = 0; d < c->rank; d++)
        n *= c->out[d];
    double *y = malloc(sizeof *y * (size_t)(n ? n : 1));
    for (int64_t e = 0; e < n; e++) {
        int64_t pos[4], rem = e;
        for (int d = c->rank - 1; d >= 0; d--) {
            pos[d] = rem % c->out[d];
            rem /= c->out[d];
        }
        y[e] = ref_interp(c, x, 0, 0, pos);
    }
    free(x);
    *nout = n;
    return y;
}

/* One Resize case: the node gets the attributes named in c and the scales
 * or sizes given; the expected shape is c->out. */
typedef struct rinput {
    int opset;
    lt_dtype dt;
    const float *scales;
    const int64_t *sizes;
    int nss; /* elements of scales or sizes */
    const int64_t *axes;
    int naxes;
    const char *policy;
    const float *roi;
    int nroi;
} rinput;

static void check_resize(const rcfg *c, const rinput *ri, uint64_t seed, double tol)
{
    tu_graph g = tu_single(LT_OP_RESIZE, ri->opset, 4, 1);
    tu_attr_str(&g, "mode", c->mode);
    tu_attr_str(&g, "coordinate_transformation_mode", c->coord);
    if (c->nearest)
        tu_attr_str(&g, "nearest_mode", c->nearest);
    tu_attr_float(&g, "cubic_coeff_a", (float)c->a);
    tu_attr_int(&g, "exclude_outside", c->exclude);
    tu_attr_float(&g, "extrapolation_value", (float)c->extrap);
    if (c->antialias)
        tu_attr_int(&g, "antialias", 1);
    if (ri->axes)
        tu_attr_ints(&g, "axes", ri->naxes, ri->axes);
    if (ri->policy)
        tu_attr_str(&g, "keep_aspect_ratio_policy", ri->policy);
    int64_t nd[1] = {ri->nss}, rd[1] = {ri->nroi}, zero[1] = {0};
    double buf[16];
    lt_value *in[4] = {tu_rand(ri->dt, c->rank, c->in, -4, 6, seed), NULL, NULL, NULL};
    if (ri->roi) {
        for (int i = 0; i < ri->nroi; i++)
            buf[i] = ri->roi[i];
        in[1] = tu_from(LT_F32, 1, rd, buf);
    } else {
        in[1] = tu_from(LT_F32, 1, zero, buf);
    }
    if (ri->scales) {
        for (int i = 0; i < ri->nss; i++)
            buf[i] = ri->scales[i];
        in[2] = tu_from(LT_F32, 1, nd, buf);
        tu_omit_input(&g, 3);
    } else {
        for (int i = 0; i < ri->nss; i++)
            buf[i] = (double)ri->sizes[i];
        in[3] = tu_from(LT_I64, 1, nd, buf);
        in[2] = tu_from(LT_F32, 1, zero, buf);
    }
    int64_t n;
    double *want = ref_resize(c, in[0], &n);
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    assert_int_equal(out[0]->t.rank, c->rank);
    for (int d = 0; d < c->rank; d++)
        if (out[0]->t.dims[d] != c->out[d])
            fail_msg("seed %llu: dim %d is %lld, expected %lld", (unsigned long long)seed, d,
                     (long long)out[0]->t.dims[d], (long long)c->out[d]);
    tu_assert_close(out[0], want, n, tol, tol, seed);
    free(want);
    for (int i = 0; i < 4; i++)
        lt_value_free(in[i]);
    lt_value_free(out[0]);
    tu_free(&g);
}

/* Fills c's out and scale from float scales over all dims. */
static void by_scales(rcfg *c, const float *s)
{
    for (int d = 0; d < c->rank; d++) {
        c->scale[d] = s[d];
        c->out[d] = (int64_t)floor((double)s[d] * (double)c->in[d]);
    }
}

static void by_sizes(rcfg *c, const int64_t *sz)
{
    for (int d = 0; d < c->rank; d++) {
        c->out[d] = sz[d];
        c->scale[d] = (double)sz[d] / (double)c->in[d];
    }
}

static void resize_hand_linear(void **state)
{
    (void)state;
    /* [1, 2] doubled with half_pixel: x = -0.25, 0.25, 0.75, 1.25 */
    tu_graph g = tu_single(LT_OP_RESIZE, 13, 3, 1);
    tu_attr_str(&g, "mode", "linear");
    tu_omit_input(&g, 1);
    int64_t xd[4] = {1, 1, 1, 2}, sd[1] = {4};
    double xv[2] = {1, 2}, sv[4] = {1, 1, 1, 2}, want[4] = {1, 1.25, 1.75, 2};
    lt_value *in[3] = {tu_from(LT_F32, 4, xd, xv), NULL, tu_from(LT_F32, 1, sd, sv)};
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 4, 1e-7, 1e-7, 0);
    lt_value_free(in[0]);
    lt_value_free(in[2]);
    lt_value_free(out[0]);
    tu_free(&g);
}

static void resize_modes_vs_reference(void **state)
{
    (void)state;
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    static const float scale_sets[3][4] = {{1, 1, 2.5f, 1.5f}, {1, 1, 0.6f, 0.8f}, {1, 2, 1.75f, 0.5f}};
    uint64_t seed = 100;
    for (int ci = 0; ci < 4; ci++)
        for (int mi = 0; mi < 3; mi++)
            for (int si = 0; si < 3; si++, seed++) {
                rcfg c = {.rank = 4, .in = {2, 2, 5, 4}, .mode = modes[mi], .coord = coords[ci],
                          .nearest = nearest[seed % 4], .a = -0.75};
                by_scales(&c, scale_sets[si]);
                rinput ri = {.opset = 13, .dt = LT_F32, .scales = scale_sets[si], .nss = 4};
                check_resize(&c, &ri, seed, 1e-4);
            }
}

static void resize_cubic_options(void **state)
{
    (void)state;
    const float s[4] = {1, 1, 0.6f, 1.8f};
    /* A = -0.5 with exclude_outside, in double precision */
    rcfg c = {.rank = 4, .in = {1, 2, 6, 4}, .mode = "cubic", .coord = "half_pixel", .a = -0.5, .exclude = 1};
    by_scales(&c, s);
    rinput ri = {.opset = 13, .dt = LT_F64, .scales = s, .nss = 4};
    check_resize(&c, &ri, 201, 1e-9);
    /* float16 data, asymmetric */
    c.coord = "asymmetric";
    c.exclude = 0;
    ri.dt = LT_F16;
    check_resize(&c, &ri, 202, 2e-2);
}

static void resize_antialias(void **state)
{
    (void)state;
    const float s[4] = {1, 1, 0.4f, 0.6f};
    const char *modes[2] = {"linear", "cubic"};
    for (int mi = 0; mi < 2; mi++) {
        rcfg c = {.rank = 4, .in = {1, 2, 10, 7}, .mode = modes[mi], .coord = "half_pixel", .a = -0.75,
                  .antialias = 1};
        by_scales(&c, s);
        rinput ri = {.opset = 18, .dt = LT_F32, .scales = s, .nss = 4};
        check_resize(&c, &ri, 300 + mi, 1e-4);
    }
}

static void resize_tf_crop_and_resize(void **state)
{
    (void)state;
    const int64_t sz[4] = {1, 1, 3, 5};
    const float roi[8] = {0, 0, 0.4f, -0.2f, 1, 1, 0.6f, 1.3f};
    const char *modes[2] = {"linear", "nearest"};
    for (int mi = 0; mi < 2; mi++) {
        rcfg c = {.rank = 4, .in = {1, 1, 4, 4}, .mode = modes[mi], .coord = "tf_crop_and_resize",
                  .nearest = "round_prefer_floor", .a = -0.75, .extrap = 10};
        by_sizes(&c, sz);
        for (int d = 0; d < 4; d++) {
            c.roi_s[d] = roi[d];
            c.roi_e[d] = roi[4 + d];
        }
        rinput ri = {.opset = 13, .dt = LT_F32, .sizes = sz, .nss = 4, .roi = roi, .nroi = 8};
        check_resize(&c, &ri, 400 + mi, 1e-5);
    }
}

/* Opset 18 axes with keep_aspect_ratio_policy, and half_pixel_symmetric
 * where scale * in is not a whole number. */
static void resize_axes_and_policy(void **state)
{
    (void)state;
    const int64_t axes[2] = {3, 2}, sz[2] = {6, 7};
    /* not_larger: scale = min(6/4, 7/5) = 1.4; out = round(1.4 * 5), round(1.4 * 4) */
    rcfg c = {.rank = 4, .in = {1, 2, 5, 4}, .mode = "linear", .coord = "half_pixel", .a = -0.75};
    for (int d = 0; d < 4; d++) {
        c.scale[d] = d >= 2 ? 1.4 : 1;
        c.out[d] = c.in[d];
    }
    c.out[2] = 7;
    c.out[3] = 6;
    rinput ri = {.opset = 18, .dt = LT_F32, .sizes = sz, .nss = 2, .axes = axes, .naxes = 2,
                 .policy = "not_larger"};
    check_resize(&c, &ri, 501, 1e-5);
    /* not_smaller: scale = max(1.5, 1.4) */
    c.scale[2] = c.scale[3] = 1.5;
    c.out[2] = 8; /* round(7.5) half up */
    c.out[3] = 6;
    ri.policy = "not_smaller";
    check_resize(&c, &ri, 502, 1e-5);

    const float s[4] = {1, 1, 0.7f, 1.3f};
    rcfg h = {.rank = 4, .in = {1, 1, 5, 3}, .mode = "cubic", .coord = "half_pixel_symmetric", .a = -0.75};
    by_scales(&h, s);
    rinput rh = {.opset = 19, .dt = LT_F32, .scales = s, .nss = 4};
    check_resize(&h, &rh, 503, 1e-5);
}

static void resize_nearest_int8(void **state)
{
    (void)state;
    const float s[3] = {1, 1.5f, 0.5f};
    rcfg c = {.rank = 3, .in = {2, 4, 6}, .mode = "nearest", .coord = "asymmetric", .nearest = "ceil", .a = -0.75};
    by_scales(&c, s);
    rinput ri = {.opset = 13, .dt = LT_I8, .scales = s, .nss = 3};
    check_resize(&c, &ri, 601, 0);
}

/* Resize-10 and Upsample map asymmetrically; nearest floors when growing
 * and takes the ceiling when shrinking. */
static void resize_legacy(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_RESIZE, 10, 2, 1);
    int64_t xd[2] = {1, 5}, sd[1] = {2};
    double xv[5] = {10, 11, 12, 13, 14}, sv[2] = {1, 0.6}, want[3] = {10, 12, 14};
    lt_value *in[2] = {tu_from(LT_F32, 2, xd, xv), tu_from(LT_F32, 1, sd, sv)};
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 3, 0, 0, 0);
    lt_value_free(out[0]);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);

    /* Upsample-7, scales attribute: repeat */
    g = tu_single(LT_OP_UPSAMPLE, 7, 1, 1);
    const float us[3] = {1, 2, 3};
    tu_attr_floats(&g, "scales", 3, us);
    int64_t ud[3] = {1, 2, 2};
    double uv[4] = {1, 2, 3, 4};
    double uw[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
    lt_value *uin[1] = {tu_from(LT_F32, 3, ud, uv)};
    run_ok(&g, uin, out);
    assert_int_equal(out[0]->t.dims[2], 6);
    tu_assert_close(out[0], uw, 24, 0, 0, 0);
    lt_value_free(out[0]);
    lt_value_free(uin[0]);
    tu_free(&g);

    /* Upsample-9 linear: x = 0, 0.5, 1, 1.5 over [1, 2] */
    g = tu_single(LT_OP_UPSAMPLE, 9, 2, 1);
    tu_attr_str(&g, "mode", "linear");
    int64_t ld[1] = {2}, lsd[1] = {1};
    double lv[2] = {1, 2}, ls[1] = {2}, lw[4] = {1, 1.5, 2, 2};
    lt_value *lin[2] = {tu_from(LT_F32, 1, ld, lv), tu_from(LT_F32, 1, lsd, ls)};
    run_ok(&g, lin, out);
    tu_assert_close(out[0], lw, 4, 1e-7, 0, 0);
    lt_value_free(out[0]);
    lt_value_free(lin[0]);
    lt_value_free(lin[1]);
    tu_free(&g);
}

/* One Resize-13 of x by scales (a [4] tensor): out[0] gets the result. */
static void resize_from(const char *producer, const char *mode, const char *coord, const char *nearest, lt_value *x,
                        const double *sc, lt_value **out)
{
    tu_graph g = tu_single(LT_OP_RESIZE, 13, 3, 1);
    if (producer)
        g.m->producer_name = producer;
    tu_attr_str(&g, "mode", mode);
    tu_attr_str(&g, "coordinate_transformation_mode", coord);
    tu_attr_str(&g, "nearest_mode", nearest);
    tu_omit_input(&g, 1);
    int64_t sd[1] = {4};
    lt_value *in[3] = {x, NULL, tu_from(LT_F32, 1, sd, sc)};
    run_ok(&g, in, out);
    lt_value_free(in[2]);
    tu_free(&g);
}

static void resize_by(const char *mode, const char *coord, const char *nearest, lt_value *x, const double *sc,
                      lt_value **out)
{
    resize_from(NULL, mode, coord, nearest, x, sc, out);
}

/* align_corners where the scale makes the length fractional (7 x 1.5 =
 * 10.5, 10 out): the ONNX reference (and its backend test data) divides by
 * 10.5 - 1, PyTorch and onnxruntime by 10 - 1, so a file PyTorch's exporter
 * wrote (producer "pytorch": F.interpolate(scale_factor=1.5,
 * align_corners=True)) resizes a ramp to i * 6 / 9, any other to
 * i * 6 / 9.5 */
static void resize_align_corners_fractional(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 1, 1, 7};
    double ramp[7] = {0, 1, 2, 3, 4, 5, 6}, sc[4] = {1, 1, 1, 1.5};
    for (int torch = 0; torch < 2; torch++) {
        lt_value *x = tu_from(LT_F32, 4, xd, ramp), *out[1] = {0};
        resize_from(torch ? "pytorch" : "onnx-example", "linear", "align_corners", "round_prefer_floor", x, sc, out);
        assert_int_equal(out[0]->t.dims[3], 10);
        for (int i = 0; i < 10; i++) {
            double want = i * 6.0 / (torch ? 9.0 : 9.5);
            if (!(fabs(tu_get(out[0], i) - want) <= 1e-5))
                fail_msg("%s file: y[%d] = %.7g, want %.7g", torch ? "a torch" : "an onnx", i, tu_get(out[0], i), want);
        }
        lt_value_free(x);
        lt_value_free(out[0]);
    }
}

/* tf_half_pixel_for_nn keeps an axis of scale 1 (batch, channels) as it
 * is: (x + 0.5) / 1 rounded up, or interpolated, read the next sample
 * (onnxruntime and TensorFlow keep them). Each [b, c] slice of a batch
 * resized at once equals the slice resized alone. */
static void resize_tf_nn_keeps_unscaled_axes(void **state)
{
    (void)state;
    static const char *const modes[3][2] = {{"nearest", "round_prefer_ceil"}, {"nearest", "ceil"},
                                            {"linear", "round_prefer_floor"}};
    int64_t xd[4] = {2, 3, 3, 4}, sd[4] = {1, 1, 3, 4};
    double sc[4] = {1, 1, 2, 1.5};
    for (int m = 0; m < 3; m++) {
        lt_value *x = tu_rand(LT_F32, 4, xd, -4, 6, 40 + (uint64_t)m), *all[1] = {0};
        resize_by(modes[m][0], "tf_half_pixel_for_nn", modes[m][1], x, sc, all);
        assert_int_equal(all[0]->t.dims[2], 6);
        assert_int_equal(all[0]->t.dims[3], 6);
        for (int64_t bc = 0; bc < 6; bc++) {
            double v[12];
            for (int i = 0; i < 12; i++)
                v[i] = tu_get(x, bc * 12 + i);
            lt_value *one = tu_from(LT_F32, 4, sd, v), *alone[1] = {0};
            resize_by(modes[m][0], "tf_half_pixel_for_nn", modes[m][1], one, sc, alone);
            for (int i = 0; i < 36; i++)
                if (tu_get(all[0], bc * 36 + i) != tu_get(alone[0], i))
                    fail_msg("%s/%s: slice %lld entry %d is %g, alone %g", modes[m][0], modes[m][1], (long long)bc,
                             i, tu_get(all[0], bc * 36 + i), tu_get(alone[0], i));
            lt_value_free(one);
            lt_value_free(alone[0]);
        }
        lt_value_free(x);
        lt_value_free(all[0]);
    }
}

/* An output length from a float scale is floor of the float32 product, as
 * onnxruntime computes it and PyTorch's own length agrees: 5 * 2.6f is
 * 13.0f (in float64 12.9999995, which floors to 12), in the kernel and in
 * shape inference. */
static void resize_length_float32_product(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 1, 5, 2};
    double sc[4] = {1, 1, 2.6, 1};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 9), *out[1] = {0};
    resize_by("nearest", "asymmetric", "floor", x, sc, out);
    assert_int_equal(out[0]->t.dims[2], 13);
    /* output row 12 reads row floor(12 / 2.6) = 4 */
    assert_true(tu_get(out[0], 12 * 2) == tu_get(x, 4 * 2));
    assert_int_equal(lt_resize_len(5, (double)2.6f), 13);
    assert_int_equal(lt_resize_len(4, (double)0.6f), 2);
    assert_int_equal(lt_resize_len((int64_t)1 << 30, 1.0), (int64_t)1 << 30);
    lt_value_free(x);
    lt_value_free(out[0]);
}

static void resize_errors(void **state)
{
    (void)state;
    int64_t xd[2] = {2, 3}, sd[1] = {3}, zd[1] = {0};
    double sv[3] = {1, 2, 2};
    lt_err err = {{0}};
    lt_value *out[1] = {0};
    /* three scales for a rank-2 input */
    tu_graph g = tu_single(LT_OP_RESIZE, 13, 3, 1);
    tu_omit_input(&g, 1);
    lt_value *in[3] = {tu_rand(LT_F32, 2, xd, 0, 1, 1), NULL, tu_from(LT_F32, 1, sd, sv)};
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "scales"));
    tu_free(&g);
    lt_value_free(in[2]);
    /* neither scales nor sizes */
    g = tu_single(LT_OP_RESIZE, 13, 3, 1);
    tu_omit_input(&g, 1);
    in[2] = tu_from(LT_F32, 1, zd, sv);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(in[2]);
    /* tf_crop_and_resize without roi */
    g = tu_single(LT_OP_RESIZE, 13, 3, 1);
    tu_attr_str(&g, "coordinate_transformation_mode", "tf_crop_and_resize");
    tu_omit_input(&g, 1);
    double s2[2] = {1, 2};
    int64_t s2d[1] = {2};
    in[2] = tu_from(LT_F32, 1, s2d, s2);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "roi"));
    tu_free(&g);
    lt_value_free(in[2]);
    lt_value_free(in[0]);
}

/* ---- reference GridSample ---- */
typedef struct gcfg {
    int k;
    int64_t len[3];
    const char *mode, *pad;
    int align;
} gcfg;

static double g_reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (x < lo) {
        double dx = lo - x;
        int n = (int)(dx / rng);
        double r = dx - n * rng;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int n = (int)(dx / rng);
        double r = dx - n * rng;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

static double g_pixel(const gcfg *c, const double *img, int axis, const int64_t *idx, const double *lo,
                      const double *hi)
{
    int64_t off = 0;
    for (int a = 0; a < c->k; a++) {
        int64_t i = idx[a], d = c->len[a];
        if (strcmp(c->pad, "zeros") == 0) {
            if (i < 0 || i >= d)
                return 0;
        } else if (strcmp(c->pad, "border") == 0) {
            i = i < 0 ? 0 : i >= d ? d - 1 : i;
        } else {
            i = (int64_t)g_reflect((double)i, lo[a], hi[a]);
        }
        off = off * d + i;
    }
    (void)axis;
    return img[off];
}

/* Nested 1-d interpolation over axes axis..k-1 at coordinates x. */
static double g_interp(const gcfg *c, const double *img, int axis, int64_t *idx, const double *x, const double *lo,
                       const double *hi)
{
    if (axis == c->k)
        return g_pixel(c, img, axis, idx, lo, hi);
    double x0 = floor(x[axis]), t = x[axis] - x0, acc = 0, w[4];
    int n, first;
    if (strcmp(c->mode, "cubic") == 0) {
        n = 4, first = -1;
        w[0] = keys_a(t + 1, -0.75), w[1] = keys_a(t, -0.75), w[2] = keys_a(1 - t, -0.75),
        w[3] = keys_a(2 - t, -0.75);
    } else {
        n = 2, first = 0;
        w[0] = 1 - t, w[1] = t;
    }
    for (int i = 0; i < n; i++) {
        idx[axis] = (int64_t)x0 + first + i;
        acc += w[i] * g_interp(c, img, axis + 1, idx, x, lo, hi);
    }
    return acc;
}

static double g_point(const gcfg *c, const double *img, const double *gxy)
{
    double x[3], lo[3], hi[3];
    int64_t idx[3];
    for (int a = 0; a < c->k; a++) {
        double n = gxy[c->k - 1 - a], d = (double)c->len[a];
        x[a] = c->align ? (n + 1) / 2 * (d - 1) : ((n + 1) * d - 1) / 2;
        lo[a] = c->align ? 0 : -0.5;
        hi[a] = c->align ? d - 1 : d - 0.5;
        if (strcmp(c->mode, "nearest") == 0)
            x[a] = nearbyint(x[a]);
        if (x[a] < lo[a] || x[a] > hi[a]) {
            if (strcmp(c->pad, "border") == 0)
                x[a] = x[a] < 0 ? 0 : x[a] > d - 1 ? d - 1 : x[a];
            else if (strcmp(c->pad, "reflection") == 0)
                x[a] = g_reflect(x[a], lo[a], hi[a]);
        }
    }
    if (strcmp(c->mode, "nearest") == 0) {
        for (int a = 0; a < c->k; a++)
            idx[a] = (int64_t)x[a];
        return g_pixel(c, img, 0, idx, lo, hi);
    }
    return g_interp(c, img, 0, idx, x, lo, hi);
}

static void check_grid(const gcfg *c, int opset, const char *mode_name, uint64_t seed)
{
    const int64_t nb = 2, ch = 2, opts = 5;
    int64_t xd[5] = {nb, ch}, gd[5] = {nb};
    int64_t img = 1, pts = 1;
    for (int a = 0; a < c->k; a++) {
        xd[2 + a] = c->len[a];
        gd[1 + a] = a == 0 ? opts : 3;
        img *= c->len[a];
        pts *= gd[1 + a];
    }
    gd[1 + c->k] = c->k;
    tu_graph g = tu_single(LT_OP_GRID_SAMPLE, opset, 2, 1);
    tu_attr_str(&g, "mode", mode_name);
    tu_attr_str(&g, "padding_mode", c->pad);
    tu_attr_int(&g, "align_corners", c->align);
    /* grid beyond [-1, 1] to exercise the padding modes */
    lt_value *in[2] = {tu_rand(LT_F32, 2 + c->k, xd, -3, 3, seed), tu_rand(LT_F32, 2 + c->k, gd, -1.7, 1.7, seed + 1)};
    double *want = malloc(sizeof *want * (size_t)(nb * ch * pts)), *im = malloc(sizeof *im * (size_t)img);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t cc = 0; cc < ch; cc++) {
            for (int64_t i = 0; i < img; i++)
                im[i] = tu_get(in[0], (b * ch + cc) * img + i);
            for (int64_t q = 0; q < pts; q++) {
                double gxy[3];
                for (int a = 0; a < c->k; a++)
                    gxy[a] = tu_get(in[1], (b * pts + q) * c->k + a);
                want[(b * ch + cc) * pts + q] = g_point(c, im, gxy);
            }
        }
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, nb * ch * pts, 1e-5, 1e-5, seed);
    free(want);
    free(im);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(out[0]);
    tu_free(&g);
}

static void gridsample_vs_reference(void **state)
{
    (void)state;
    static const char *const pads[] = {"zeros", "border", "reflection"};
    static const char *const modes16[] = {"bilinear", "nearest", "bicubic"};
    static const char *const modes[] = {"linear", "nearest", "cubic"};
    uint64_t seed = 700;
    for (int pi = 0; pi < 3; pi++)
        for (int mi = 0; mi < 3; mi++)
            for (int al = 0; al < 2; al++, seed += 2) {
                gcfg c = {.k = 2, .len = {4, 5}, .mode = modes[mi], .pad = pads[pi], .align = al};
                check_grid(&c, 16, modes16[mi], seed);
                if (mi < 2) {
                    gcfg c3 = {.k = 3, .len = {3, 4, 2}, .mode = modes[mi], .pad = pads[pi], .align = al};
                    check_grid(&c3, 20, modes[mi], seed + 1);
                }
            }
}

static void gridsample_hand(void **state)
{
    (void)state;
    /* 2x2 image, align_corners: grid (0, 0) is the mean of the four pixels,
     * (-1, -1) the top-left one, (1, -1) the top-right one */
    tu_graph g = tu_single(LT_OP_GRID_SAMPLE, 16, 2, 1);
    tu_attr_int(&g, "align_corners", 1);
    int64_t xd[4] = {1, 1, 2, 2}, gd[4] = {1, 1, 3, 2};
    double xv[4] = {1, 2, 3, 4}, gv[6] = {0, 0, -1, -1, 1, -1}, want[3] = {2.5, 1, 2};
    lt_value *in[2] = {tu_from(LT_F32, 4, xd, xv), tu_from(LT_F32, 4, gd, gv)};
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 3, 1e-6, 1e-6, 0);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(out[0]);
    tu_free(&g);
}

/* mode nearest rounds a coordinate that lies halfway between two pixels to
 * the even one (np.rint in the ONNX reference) on 2-d and 3-d images alike;
 * each pixel holds 1 + 100 z + 10 y + x, so an output names the pixel read */
static void gridsample_nearest_halfway(void **state)
{
    (void)state;
    typedef struct hcase {
        int k, align;
        int64_t len[3];         /* spatial sizes, outermost first */
        int np;                 /* points */
        double g[3][3];         /* grid coordinates, innermost first */
        double want[3];
    } hcase;
    static const hcase cases[] = {
        /* align_corners 1, sizes (3, 3, 5): x = 2 (gx + 1), y = gy + 1, z = gz + 1;
         * (0.5, 0.5, 1.5) -> (0, 0, 2), (2.5, 1.5, 0.5) -> (2, 2, 0), (1.5, 1, 1) -> (2, 1, 1) */
        {3, 1, {3, 3, 5}, 3, {{-0.75, -0.5, 0.5}, {0.25, 0.5, -0.5}, {-0.25, 0, 0}}, {201, 23, 113}},
        /* align_corners 0, sizes (2, 2, 4): x = 2 gx + 1.5, y = gy + 0.5, z = gz + 0.5;
         * x = -0.5 rounds to -0 (pixel 0), not to -1 (the zeros padding) */
        {3, 0, {2, 2, 4}, 2, {{-1, 0, 0}, {0, -1, 0.5}}, {1, 103}},
        /* the same points on 2-d images */
        {2, 1, {3, 5}, 3, {{-0.75, -0.5}, {0.25, 0.5}, {-0.25, 0}}, {1, 23, 13}},
        {2, 0, {2, 4}, 2, {{-1, 0}, {0, -1}}, {1, 3}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const hcase *c = &cases[ci];
        int64_t xd[5] = {1, 1}, gd[5] = {1, c->np}, img = 1;
        for (int a = 0; a < c->k; a++) {
            xd[2 + a] = c->len[a];
            img *= c->len[a];
        }
        for (int a = 1; a < c->k; a++)
            gd[1 + a] = 1;
        gd[1 + c->k] = c->k;
        double xv[64], gv[9];
        for (int64_t i = 0; i < img; i++) {
            int64_t r = i, pos[3] = {0};
            for (int a = c->k - 1; a >= 0; a--) {
                pos[a] = r % c->len[a];
                r /= c->len[a];
            }
            /* pos[k-1] is x, pos[k-2] y, pos[k-3] z */
            xv[i] = 1 + (double)pos[c->k - 1] + 10 * (double)pos[c->k - 2] + (c->k == 3 ? 100 * (double)pos[0] : 0);
        }
        for (int q = 0; q < c->np; q++)
            for (int a = 0; a < c->k; a++)
                gv[q * c->k + a] = c->g[q][a];
        tu_graph g = tu_single(LT_OP_GRID_SAMPLE, c->k == 3 ? 20 : 16, 2, 1);
        tu_attr_str(&g, "mode", "nearest");
        tu_attr_int(&g, "align_corners", c->align);
        lt_value *in[2] = {tu_from(LT_F32, 2 + c->k, xd, xv), tu_from(LT_F32, 2 + c->k, gd, gv)};
        lt_value *out[1] = {0};
        run_ok(&g, in, out);
        tu_assert_close(out[0], c->want, c->np, 0, 0, ci);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
        lt_value_free(out[0]);
        tu_free(&g);
    }
}

static void gridsample_errors(void **state)
{
    (void)state;
    /* a grid whose last dim is 3 for a 2-d image */
    tu_graph g = tu_single(LT_OP_GRID_SAMPLE, 16, 2, 1);
    int64_t xd[4] = {1, 1, 2, 2}, gd[4] = {1, 2, 2, 3};
    lt_value *in[2] = {tu_rand(LT_F32, 4, xd, 0, 1, 1), tu_rand(LT_F32, 4, gd, -1, 1, 2)};
    lt_value *out[1] = {0};
    lt_err err = {{0}};
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "grid"));
    tu_free(&g);
    g = tu_single(LT_OP_GRID_SAMPLE, 16, 2, 1);
    tu_attr_str(&g, "padding_mode", "wrap");
    lt_value_free(in[1]);
    int64_t gd2[4] = {1, 2, 2, 2};
    in[1] = tu_rand(LT_F32, 4, gd2, -1, 1, 2);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "wrap"));
    tu_free(&g);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

/* ---- shape inference with constant scales ---- */
static void infer_shapes(void **state)
{
    (void)state;
    lt_err err = {{0}};
    tu_graph g = tu_single(LT_OP_RESIZE, 13, 3, 1);
    tu_omit_input(&g, 1);
    int64_t xd[4] = {1, 3, 5, 4};
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 4, xd);
    /* scales as a module parameter (initializer) */
    int pi = lt_module_add_param(g.m, "scales");
    lt_ival *sv = lt_ival_new(g.m, g.m->main, "scales");
    sv->param = pi;
    g.m->params[pi].value = sv;
    int64_t sd[1] = {4};
    lt_tensor *t = &g.m->params[pi].data;
    t->dtype = LT_F32;
    t->rank = 1;
    t->dims[0] = 4;
    t->numel = 4;
    t->data = malloc(4 * sizeof(float));
    const float s[4] = {1, 1, 0.6f, 2.5f};
    memcpy(t->data, s, sizeof s);
    lt_type_tensor(&sv->type, LT_F32, 1, sd);
    g.node->in[2] = sv;
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    const lt_type *o = &g.node->out[0]->type;
    assert_int_equal(o->rank, 4);
    assert_int_equal(o->dims[1].v, 3);
    assert_int_equal(o->dims[2].v, 3);
    assert_int_equal(o->dims[3].v, 10);
    tu_free(&g);

    g = tu_single(LT_OP_GRID_SAMPLE, 16, 2, 1);
    int64_t gd[4] = {1, 6, 7, 2};
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 4, xd);
    lt_type_tensor(&g.m->main->params[1]->type, LT_F32, 4, gd);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    o = &g.node->out[0]->type;
    assert_int_equal(o->dims[1].v, 3);
    assert_int_equal(o->dims[2].v, 6);
    assert_int_equal(o->dims[3].v, 7);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_hand_linear),
        cmocka_unit_test(resize_modes_vs_reference),
        cmocka_unit_test(resize_cubic_options),
        cmocka_unit_test(resize_antialias),
        cmocka_unit_test(resize_tf_crop_and_resize),
        cmocka_unit_test(resize_axes_and_policy),
        cmocka_unit_test(resize_nearest_int8),
        cmocka_unit_test(resize_legacy),
        cmocka_unit_test(resize_tf_nn_keeps_unscaled_axes),
        cmocka_unit_test(resize_length_float32_product), cmocka_unit_test(resize_align_corners_fractional),
        cmocka_unit_test(resize_errors),
        cmocka_unit_test(gridsample_vs_reference),
        cmocka_unit_test(gridsample_hand),
        cmocka_unit_test(gridsample_nearest_halfway),
        cmocka_unit_test(gridsample_errors),
        cmocka_unit_test(infer_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
