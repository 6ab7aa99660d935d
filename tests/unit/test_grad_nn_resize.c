/* ResizeGrad: central finite differences through the Resize kernel in
 * float64 for every mode, coordinate transformation, nearest rounding,
 * antialias, axes, aspect policy and the legacy (opset 10) form, plus
 * float32 against float64. */
#include "test_grad_nn.h"
#include <string.h>

typedef struct cfg {
    const char *name;
    int opset, rank;
    int64_t dims[5];
    const char *mode, *coord, *nearest;
    int nscale; /* scales given (count), else sizes */
    float scales[5];
    int nsize;
    int64_t sizes[5];
    int nroi;
    float roi[10];
    int naxes;
    int64_t axes[5];
    float cubic_a, extrapolation;
    int exclude_outside, antialias;
    const char *policy;
} cfg;

static void set_attrs(tu_graph *g, const cfg *f)
{
    tu_attr_str(g, "mode", f->mode);
    if (f->coord)
        tu_attr_str(g, "coordinate_transformation_mode", f->coord);
    if (f->nearest)
        tu_attr_str(g, "nearest_mode", f->nearest);
    if (f->cubic_a != 0)
        tu_attr_float(g, "cubic_coeff_a", f->cubic_a);
    if (f->extrapolation != 0)
        tu_attr_float(g, "extrapolation_value", f->extrapolation);
    if (f->exclude_outside)
        tu_attr_int(g, "exclude_outside", 1);
    if (f->antialias)
        tu_attr_int(g, "antialias", 1);
    if (f->naxes)
        tu_attr_ints(g, "axes", f->naxes, f->axes);
    if (f->policy)
        tu_attr_str(g, "keep_aspect_ratio_policy", f->policy);
}

static lt_value *f32_vec(int n, const float *v)
{
    double d[10];
    int64_t dims[1] = {n};
    for (int i = 0; i < n; i++)
        d[i] = v[i];
    return tu_from(LT_F32, 1, dims, d);
}

static void run_cfg(const cfg *f, uint64_t seed)
{
    print_message("%s\n", f->name);
    bool legacy = f->opset < 11;
    lt_value *x = tu_rand(LT_F64, f->rank, f->dims, -1, 1, seed);
    lt_value *roi = f->nroi ? f32_vec(f->nroi, f->roi) : NULL;
    lt_value *scales = f->nscale ? f32_vec(f->nscale, f->scales) : NULL, *sizes = NULL;
    if (f->nsize) {
        double d[5];
        int64_t dims[1] = {f->nsize};
        for (int i = 0; i < f->nsize; i++)
            d[i] = (double)f->sizes[i];
        sizes = tu_from(LT_I64, 1, dims, d);
    }
    /* the forward: Resize-10 (X, scales), later (X, roi, scales, sizes) */
    int nfin = legacy ? 2 : 4;
    tu_graph fwd = tu_single(LT_OP_RESIZE, f->opset, nfin, 1);
    set_attrs(&fwd, f);
    lt_value *fin[4] = {x, roi, scales, sizes};
    if (legacy)
        fin[1] = scales;
    for (int i = 1; i < nfin; i++)
        if (!fin[i])
            tu_omit_input(&fwd, i);
    lt_value *y = gn_run(&fwd, fin, 1, 0);
    lt_value *dy = tu_rand(LT_F64, f->rank, y->t.dims, -1, 1, seed + 1);

    /* the gradient: (dy, x, roi, scales, sizes) at every opset */
    tu_graph gg = tu_single(LT_OP_RESIZE_GRAD, f->opset, 5, 1);
    set_attrs(&gg, f);
    lt_value *gin[5] = {dy, x, roi, scales, sizes};
    for (int i = 2; i < 5; i++)
        if (!gin[i])
            tu_omit_input(&gg, i);
    lt_value *dx = gn_run(&gg, gin, 1, 0);
    assert_memory_equal(dx->t.dims, x->t.dims, sizeof(int64_t) * f->rank);
    gn_fd("ResizeGrad dx", &fwd, fin, 0, 1, 0, dy, dx, seed, 1e-5);
    /* linear in x: <dy, resize(x)> = <dx, x> exactly (affine where the
     * crop fills outputs with extrapolation_value) */
    double l = gn_dot(dy, y);
    if (f->extrapolation == 0)
        assert_true(fabs(gn_dot(dx, x) - l) <= 1e-10 * (1 + fabs(l)));
    gn_f32_matches("  float32 dx", &gg, gin, 5, 1, 0, dx, 1e-4);
    if (legacy) {
        /* the forward's (X, scales) passed on as they stand: scales at 2 */
        tu_graph g2 = tu_single(LT_OP_RESIZE_GRAD, f->opset, 4, 1);
        set_attrs(&g2, f);
        tu_omit_input(&g2, 3);
        lt_value *in2[4] = {dy, x, scales, NULL};
        lt_value *dx2 = gn_run(&g2, in2, 1, 0);
        double *want = malloc(sizeof(double) * (size_t)dx->t.numel);
        for (int64_t i = 0; i < dx->t.numel; i++)
            want[i] = tu_get(dx, i);
        tu_assert_close(dx2, want, dx->t.numel, 0, 0, seed);
        free(want);
        lt_value_free(dx2);
        tu_free(&g2);
    }
    lt_value_free(dx);
    lt_value_free(dy);
    lt_value_free(y);
    lt_value_free(x);
    if (roi)
        lt_value_free(roi);
    if (scales)
        lt_value_free(scales);
    if (sizes)
        lt_value_free(sizes);
    tu_free(&fwd);
    tu_free(&gg);
}

static void run_all(const cfg *cases, int n, uint64_t seed0)
{
    for (int i = 0; i < n; i++)
        run_cfg(&cases[i], seed0 + 10 * (uint64_t)i);
}

#define R4 4, {1, 2, 4, 5}

static void resize_nearest(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"nearest asymmetric floor x2", 13, R4, "nearest", "asymmetric", "floor", 4, {1, 1, 2, 2}},
        {"nearest half_pixel round_prefer_ceil x0.6", 13, R4, "nearest", "half_pixel", "round_prefer_ceil", 4,
         {1, 1, 0.6f, 0.6f}},
        {"nearest round_prefer_floor x1.7", 13, R4, "nearest", NULL, NULL, 4, {1, 1, 1.7f, 1.5f}},
        {"nearest tf_half_pixel_for_nn ceil, sizes", 13, R4, "nearest", "tf_half_pixel_for_nn", "ceil", 0, {0}, 4,
         {1, 2, 7, 3}},
        {"nearest align_corners, sizes", 13, R4, "nearest", "align_corners", "round_prefer_ceil", 0, {0}, 4,
         {1, 3, 3, 8}},
        {"nearest tf_crop_and_resize", 13, R4, "nearest", "tf_crop_and_resize", NULL, 0, {0}, 4, {1, 2, 5, 4}, 8,
         {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f}, .extrapolation = 2.5f},
        {"nearest opset 10 (legacy)", 10, R4, "nearest", NULL, NULL, 4, {1, 1, 2.5f, 0.5f}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 10);
}

static void resize_linear(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"linear half_pixel x1.7 x2.3", 13, R4, "linear", NULL, NULL, 4, {1, 1, 1.7f, 2.3f}},
        {"linear half_pixel down x0.5", 13, R4, "linear", "half_pixel", NULL, 4, {1, 1, 0.5f, 0.6f}},
        {"linear align_corners, sizes", 13, R4, "linear", "align_corners", NULL, 0, {0}, 4, {1, 2, 7, 3}},
        {"linear pytorch_half_pixel to 1", 13, R4, "linear", "pytorch_half_pixel", NULL, 0, {0}, 4, {1, 2, 1, 7}},
        {"linear asymmetric", 13, R4, "linear", "asymmetric", NULL, 4, {1, 1, 1.5f, 3}},
        {"linear half_pixel_symmetric", 19, R4, "linear", "half_pixel_symmetric", NULL, 4, {1, 1, 1.6f, 0.7f}},
        {"linear tf_crop_and_resize", 13, R4, "linear", "tf_crop_and_resize", NULL, 0, {0}, 4, {1, 2, 6, 4}, 8,
         {0, 0, 0.1f, -0.3f, 1, 1, 0.8f, 1.2f}, .extrapolation = -1},
        {"linear antialias down", 18, R4, "linear", NULL, NULL, 4, {1, 1, 0.6f, 0.45f}, .antialias = 1},
        {"linear axes [3, 2]", 18, R4, "linear", NULL, NULL, 2, {1.4f, 0.8f}, .naxes = 2, .axes = {3, 2}},
        {"linear not_larger sizes, axes", 18, R4, "linear", NULL, NULL, 0, {0}, 2, {9, 7}, .naxes = 2,
         .axes = {2, 3}, .policy = "not_larger"},
        {"linear not_smaller sizes", 18, R4, "linear", NULL, NULL, 0, {0}, 4, {1, 2, 6, 6}, .policy = "not_smaller"},
        {"linear opset 10 (legacy)", 10, R4, "linear", NULL, NULL, 4, {1, 1, 1.5f, 2}},
        {"trilinear rank 5", 13, 5, {1, 1, 3, 4, 3}, "linear", "align_corners", NULL, 5, {1, 1, 2, 0.75f, 1.5f}},
        {"linear rank 2", 11, 2, {3, 4}, "linear", NULL, NULL, 2, {2, 1.5f}},
        {"linear parallel", 13, 4, {2, 8, 32, 32}, "linear", NULL, NULL, 4, {1, 1, 2, 2}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 100);
}

static void resize_cubic(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"cubic half_pixel", 13, R4, "cubic", NULL, NULL, 4, {1, 1, 1.6f, 2.2f}},
        {"cubic a=-0.5 exclude_outside", 13, R4, "cubic", "asymmetric", NULL, 4, {1, 1, 2, 0.7f},
         .cubic_a = -0.5f, .exclude_outside = 1},
        {"cubic align_corners, sizes", 13, R4, "cubic", "align_corners", NULL, 0, {0}, 4, {1, 2, 3, 9}},
        {"cubic antialias down", 18, R4, "cubic", NULL, NULL, 4, {1, 1, 0.5f, 0.7f}, .antialias = 1},
        {"cubic tf_crop_and_resize", 13, R4, "cubic", "tf_crop_and_resize", NULL, 0, {0}, 4, {1, 2, 5, 5}, 8,
         {0, 0, 0.2f, 0, 1, 1, 1.1f, 0.6f}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 200);
}

/* Upsample's gradient is ResizeGrad at the Upsample's opset: scales from
 * the attribute (Upsample-7) or height_scale / width_scale (Upsample-1) */
static void upsample_legacy(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 3, 4};
    float sc[4] = {1, 1, 2, 1.5f};
    for (int v = 0; v < 2; v++) {
        const char *mode = v ? "nearest" : "linear";
        int opset = v ? 1 : 7;
        print_message("upsample-%d %s\n", opset, mode);
        lt_value *x = tu_rand(LT_F64, 4, xd, -1, 1, 900 + (uint64_t)v);
        tu_graph fwd = tu_single(LT_OP_UPSAMPLE, opset, 1, 1), gg = tu_single(LT_OP_RESIZE_GRAD, opset, 5, 1);
        for (int i = 0; i < 2; i++) {
            tu_graph *g = i ? &gg : &fwd;
            tu_attr_str(g, "mode", mode);
            if (v) {
                tu_attr_float(g, "height_scale", 2);
                tu_attr_float(g, "width_scale", 1.5f);
            } else {
                tu_attr_floats(g, "scales", 4, sc);
            }
        }
        for (int i = 2; i < 5; i++)
            tu_omit_input(&gg, i);
        lt_value *fin[1] = {x};
        lt_value *y = gn_run(&fwd, fin, 1, 0);
        lt_value *dy = tu_rand(LT_F64, 4, y->t.dims, -1, 1, 910 + (uint64_t)v);
        lt_value *gin[5] = {dy, x, NULL, NULL, NULL};
        lt_value *dx = gn_run(&gg, gin, 1, 0);
        gn_fd("ResizeGrad dx (Upsample)", &fwd, fin, 0, 1, 0, dy, dx, 900, 1e-5);
        lt_value_free(dx);
        lt_value_free(dy);
        lt_value_free(y);
        lt_value_free(x);
        tu_free(&fwd);
        tu_free(&gg);
    }
}

static void resize_grad_errors(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 1, 2, 2}, yd[4] = {1, 1, 4, 5};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 1), *dy = tu_rand(LT_F32, 4, yd, -1, 1, 2);
    float sc[4] = {1, 1, 2, 2};
    lt_value *scales = f32_vec(4, sc), *out[1] = {NULL};
    lt_err err;
    tu_graph g = tu_single(LT_OP_RESIZE_GRAD, 13, 5, 1);
    tu_attr_str(&g, "mode", "linear");
    tu_omit_input(&g, 2);
    tu_omit_input(&g, 4);
    lt_value *in[5] = {dy, x, NULL, scales, NULL};
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    assert_non_null(strstr(err.msg, "dy has shape"));
    in[3] = NULL;
    tu_free(&g);
    g = tu_single(LT_OP_RESIZE_GRAD, 13, 5, 1);
    for (int i = 2; i < 5; i++)
        tu_omit_input(&g, i);
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK); /* neither scales nor sizes */
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(dy);
    lt_value_free(scales);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_nearest),
        cmocka_unit_test(resize_linear),
        cmocka_unit_test(resize_cubic),
        cmocka_unit_test(upsample_legacy),
        cmocka_unit_test(resize_grad_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
