/* ConvGradData, ConvGradFilter, ConvTransposeGradData and
 * ConvTransposeGradFilter: central finite differences through the Conv and
 * ConvTranspose kernels in float64 over every attribute variant (fixed
 * seeds), float32 against float64, and bad shapes. */
#include "test_grad_nn.h"
#include <string.h>

typedef struct cfg {
    const char *name;
    bool transpose;
    int nsp;
    int64_t n, c, m, group; /* c: x's channels, m: y's */
    int64_t img[3], k[3], s[3], d[3], pads[6];
    const char *auto_pad; /* NULL: explicit pads */
    int64_t opad[3];      /* ConvTranspose output_padding (all 0: absent) */
    int64_t oshape[3];    /* ConvTranspose output_shape (0: absent) */
    bool kshape;          /* write kernel_shape */
} cfg;

static void set_attrs(tu_graph *g, const cfg *f)
{
    int nsp = f->nsp;
    tu_attr_ints(g, "strides", nsp, f->s);
    tu_attr_ints(g, "dilations", nsp, f->d);
    if (f->auto_pad)
        tu_attr_str(g, "auto_pad", f->auto_pad);
    else
        tu_attr_ints(g, "pads", 2 * nsp, f->pads);
    if (f->group != 1)
        tu_attr_int(g, "group", f->group);
    if (f->kshape)
        tu_attr_ints(g, "kernel_shape", nsp, f->k);
    if (f->opad[0] || f->opad[1] || f->opad[2])
        tu_attr_ints(g, "output_padding", nsp, f->opad);
    if (f->oshape[0])
        tu_attr_ints(g, "output_shape", nsp, f->oshape);
}

static void run_cfg(const cfg *f, uint64_t seed)
{
    int nsp = f->nsp, r = nsp + 2;
    int64_t xd[5] = {f->n, f->c}, wd[5];
    wd[0] = f->transpose ? f->c : f->m;
    wd[1] = f->transpose ? f->m / f->group : f->c / f->group;
    for (int i = 0; i < nsp; i++) {
        xd[i + 2] = f->img[i];
        wd[i + 2] = f->k[i];
    }
    print_message("%s\n", f->name);
    lt_value *x = tu_rand(LT_F64, r, xd, -1, 1, seed), *w = tu_rand(LT_F64, r, wd, -1, 1, seed + 1);
    tu_graph fwd = tu_single(f->transpose ? LT_OP_CONV_TRANSPOSE : LT_OP_CONV, 11, 2, 1);
    set_attrs(&fwd, f);
    lt_value *fin[2] = {x, w};
    lt_value *y = gn_run(&fwd, fin, 1, 0);
    lt_value *dy = tu_rand(LT_F64, r, y->t.dims, -1, 1, seed + 2);

    tu_graph gd = tu_single(f->transpose ? LT_OP_CONV_TRANSPOSE_GRAD_DATA : LT_OP_CONV_GRAD_DATA, 11, 3, 1);
    tu_graph gf = tu_single(f->transpose ? LT_OP_CONV_TRANSPOSE_GRAD_FILTER : LT_OP_CONV_GRAD_FILTER, 11, 3, 1);
    set_attrs(&gd, f);
    set_attrs(&gf, f);
    lt_value *din[3] = {dy, w, x}, *fin2[3] = {dy, x, w};
    lt_value *dx = gn_run(&gd, din, 1, 0), *dw = gn_run(&gf, fin2, 1, 0);
    assert_int_equal(dx->t.dtype, LT_F64);
    assert_memory_equal(dx->t.dims, x->t.dims, sizeof(int64_t) * r);
    assert_memory_equal(dw->t.dims, w->t.dims, sizeof(int64_t) * r);

    char what[96];
    snprintf(what, sizeof what, "%s dx", f->transpose ? "ConvTransposeGradData" : "ConvGradData");
    gn_fd(what, &fwd, fin, 0, 1, 0, dy, dx, seed, 1e-5);
    snprintf(what, sizeof what, "%s dW", f->transpose ? "ConvTransposeGradFilter" : "ConvGradFilter");
    gn_fd(what, &fwd, fin, 1, 1, 0, dy, dw, seed, 1e-5);
    /* both maps are linear in each argument: <dy, f(x, W)> = <dx, x> = <dW, W> */
    double l = gn_dot(dy, y);
    assert_true(fabs(gn_dot(dx, x) - l) <= 1e-10 * (1 + fabs(l)));
    assert_true(fabs(gn_dot(dw, w) - l) <= 1e-10 * (1 + fabs(l)));
    gn_f32_matches("  float32 dx", &gd, din, 3, 1, 0, dx, 1e-4);
    gn_f32_matches("  float32 dW", &gf, fin2, 3, 1, 0, dw, 1e-4);

    lt_value_free(dx);
    lt_value_free(dw);
    lt_value_free(dy);
    lt_value_free(y);
    lt_value_free(x);
    lt_value_free(w);
    tu_free(&fwd);
    tu_free(&gd);
    tu_free(&gf);
}

static void run_all(const cfg *cases, int n, uint64_t seed0)
{
    for (int i = 0; i < n; i++)
        run_cfg(&cases[i], seed0 + 10 * (uint64_t)i);
}

static void conv_grads(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"conv 2-d, pads 1", false, 2, 2, 3, 4, 1, {6, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        {"conv strides, dilations, asymmetric pads", false, 2, 2, 2, 3, 1, {9, 11}, {3, 2}, {2, 3}, {2, 1},
         {1, 0, 2, 1}, .kshape = true},
        {"conv group 2", false, 2, 2, 4, 6, 2, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        {"conv depthwise", false, 2, 2, 4, 8, 4, {6, 5}, {3, 3}, {2, 1}, {1, 1}, {1, 1, 1, 1}},
        {"conv SAME_UPPER", false, 2, 1, 2, 3, 1, {7, 8}, {4, 4}, {2, 3}, {1, 1}, {0}, "SAME_UPPER"},
        {"conv SAME_LOWER", false, 2, 1, 2, 3, 1, {7, 8}, {4, 4}, {2, 3}, {1, 1}, {0}, "SAME_LOWER"},
        {"conv VALID", false, 2, 2, 2, 2, 1, {6, 6}, {3, 2}, {1, 2}, {1, 1}, {0}, "VALID"},
        {"conv 1-d", false, 1, 2, 3, 2, 1, {10}, {3}, {2}, {1}, {2, 1}},
        {"conv 3-d", false, 3, 1, 2, 2, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}},
        /* 3-D over a batch, grouped and strided too */
        {"conv 3-d, batch 4", false, 3, 4, 4, 6, 1, {4, 5, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1},
         {1, 1, 1, 1, 1, 1}},
        {"conv 3-d grouped, strides, dilation, batch 3", false, 3, 3, 4, 4, 2, {5, 6, 4}, {2, 3, 2},
         {2, 1, 2}, {1, 2, 1}, {1, 0, 1, 1, 0, 1}},
        {"conv 1x1 (no im2col)", false, 2, 2, 3, 4, 1, {5, 4}, {1, 1}, {1, 1}, {1, 1}, {0}},
        {"conv 1x1 stride 2", false, 2, 2, 3, 4, 1, {5, 4}, {1, 1}, {2, 2}, {1, 1}, {0}},
        /* big enough for the parallel paths: batch slices, channel blocks,
         * one image shared by the threads */
        {"conv batch 4, parallel", false, 2, 4, 8, 16, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        {"conv one image, parallel", false, 2, 1, 16, 16, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        {"conv one image 1x1, parallel", false, 2, 1, 32, 32, 1, {20, 20}, {1, 1}, {1, 1}, {1, 1}, {0}},
        {"conv depthwise, parallel", false, 2, 4, 16, 16, 16, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        /* depthwise as the mobile networks write it (nn_conv_depthwise.c) */
        {"depthwise stride 2 (MobileNet)", false, 2, 3, 8, 8, 8, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"depthwise stride 2, pads 0 1 (TF SAME)", false, 2, 2, 5, 5, 5, {8, 7}, {3, 3}, {2, 2}, {1, 1},
         {0, 0, 1, 1}},
        {"depthwise 5x5 stride 2 (EfficientNet)", false, 2, 2, 3, 3, 3, {11, 10}, {5, 5}, {2, 2}, {1, 1},
         {2, 2, 2, 2}},
        {"depthwise 7x7 (ConvNeXt)", false, 2, 2, 4, 4, 4, {9, 8}, {7, 7}, {1, 1}, {1, 1}, {3, 3, 3, 3}},
        {"depthwise dilated, multiplier 2", false, 2, 2, 3, 6, 3, {9, 9}, {3, 3}, {1, 2}, {2, 2}, {2, 1, 2, 3}},
        {"depthwise 1-d, multiplier 3", false, 1, 2, 3, 9, 3, {12}, {5}, {1}, {2}, {4, 2}},
        {"depthwise 1-d stride 3", false, 1, 2, 4, 4, 4, {13}, {3}, {3}, {1}, {1, 0}},
        {"depthwise kernel past the image", false, 2, 1, 2, 2, 2, {2, 3}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}},
        {"depthwise batch 32", false, 2, 32, 16, 16, 16, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        /* groups over a batch of small grids: blocks of images a group */
        {"grouped width 16, 4x4 grid", false, 2, 8, 64, 64, 4, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        {"grouped stride 2 (RegNet)", false, 2, 6, 32, 32, 2, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"grouped, few taps (filter sums transposed)", false, 2, 4, 4, 64, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}},
        {"grouped, batch 40 (slices)", false, 2, 40, 32, 32, 4, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        {"depthwise plane over 1024 (row sweep)", false, 2, 2, 3, 3, 3, {40, 30}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}},
        {"depthwise 80 channels (blocks of 16)", false, 2, 2, 80, 80, 80, {5, 5}, {3, 3}, {2, 2}, {1, 1},
         {1, 1, 1, 1}},
        {"depthwise 300 channels (blocks of 64)", false, 2, 2, 300, 300, 300, {3, 3}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 100);
}

static void conv_transpose_grads(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"convT stride 2, output_padding", true, 2, 2, 3, 2, 1, {4, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1},
         .opad = {1, 0}},
        {"convT group 2, dilations", true, 2, 2, 4, 6, 2, {4, 4}, {2, 3}, {1, 1}, {2, 1}, {0, 1, 1, 0}},
        {"convT output_shape (negative pad)", true, 2, 1, 2, 3, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {0},
         .oshape = {7, 8}},
        {"convT SAME_LOWER", true, 2, 2, 2, 2, 1, {3, 4}, {3, 2}, {2, 3}, {1, 1}, {0}, "SAME_LOWER"},
        {"convT SAME_UPPER", true, 2, 1, 3, 2, 1, {3, 4}, {4, 2}, {2, 2}, {1, 1}, {0}, "SAME_UPPER"},
        {"convT 1-d", true, 1, 2, 2, 3, 1, {5}, {3}, {3}, {1}, {1, 0}},
        {"convT 3-d", true, 3, 1, 2, 2, 1, {3, 2, 3}, {2, 2, 3}, {2, 1, 1}, {1, 2, 1}, {0, 1, 0, 1, 0, 1}},
        {"convT depthwise", true, 2, 2, 4, 4, 4, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"convT batch 2, parallel", true, 2, 2, 16, 8, 1, {10, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 500);
}

/* float16 goes through float32 */
static void conv_grad_half(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {1, 3, 3, 3};
    lt_value *x = tu_rand(LT_F64, 4, xd, -1, 1, 7), *w = tu_rand(LT_F64, 4, wd, -1, 1, 8);
    lt_value *dy = tu_rand(LT_F64, 4, yd, -1, 1, 9);
    lt_value *xh = gn_cast(x, LT_F16), *wh = gn_cast(w, LT_F16), *dyh = gn_cast(dy, LT_F16);
    for (int filter = 0; filter < 2; filter++) {
        tu_graph g = tu_single(filter ? LT_OP_CONV_GRAD_FILTER : LT_OP_CONV_GRAD_DATA, 13, 3, 1);
        lt_value *in[3] = {dy, filter ? x : w, filter ? w : x};
        lt_value *inh[3] = {dyh, filter ? xh : wh, filter ? wh : xh};
        lt_value *want = gn_run(&g, in, 1, 0), *got = gn_run(&g, inh, 1, 0);
        assert_int_equal(got->t.dtype, LT_F16);
        double *wv = malloc(sizeof(double) * (size_t)want->t.numel);
        for (int64_t i = 0; i < want->t.numel; i++)
            wv[i] = tu_get(want, i);
        tu_assert_close(got, wv, want->t.numel, 2e-2, 2e-2, 9);
        free(wv);
        lt_value_free(want);
        lt_value_free(got);
        tu_free(&g);
    }
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(dy);
    lt_value_free(xh);
    lt_value_free(wh);
    lt_value_free(dyh);
}

/* dy of the wrong shape, mismatched channels: a status and a message */
static void conv_grad_errors(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, bad[4] = {1, 3, 4, 3}, wbad[4] = {3, 3, 3, 3};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 1), *w = tu_rand(LT_F32, 4, wd, -1, 1, 2);
    lt_value *dy = tu_rand(LT_F32, 4, bad, -1, 1, 3), *wb = tu_rand(LT_F32, 4, wbad, -1, 1, 4);
    lt_value *out[1] = {NULL};
    lt_err err;
    tu_graph g = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1);
    lt_value *in[3] = {dy, w, x};
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    assert_non_null(strstr(err.msg, "dy has shape"));
    in[1] = wb;
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    tu_free(&g);
    g = tu_single(LT_OP_CONV_TRANSPOSE_GRAD_FILTER, 11, 3, 1);
    lt_value *in2[3] = {dy, x, w};
    assert_int_not_equal(tu_run(&g, in2, out, &err), LT_OK);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(dy);
    lt_value_free(wb);
}

/* an empty batch: dx is empty and dW is zero */
static void conv_grad_empty(void **state)
{
    (void)state;
    int64_t xd[4] = {0, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, yd[4] = {0, 3, 3, 3};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 1), *w = tu_rand(LT_F32, 4, wd, -1, 1, 2);
    lt_value *dy = tu_rand(LT_F32, 4, yd, -1, 1, 3);
    tu_graph g = tu_single(LT_OP_CONV_GRAD_FILTER, 11, 3, 1);
    lt_value *in[3] = {dy, x, w};
    lt_value *dw = gn_run(&g, in, 1, 0);
    assert_int_equal(dw->t.numel, 54);
    for (int64_t i = 0; i < dw->t.numel; i++)
        assert_true(tu_get(dw, i) == 0);
    tu_free(&g);
    g = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1);
    lt_value *in2[3] = {dy, w, x};
    lt_value *dx = gn_run(&g, in2, 1, 0);
    assert_int_equal(dx->t.numel, 0);
    tu_free(&g);
    lt_value_free(dw);
    lt_value_free(dx);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(dy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_grads),
        cmocka_unit_test(conv_transpose_grads),
        cmocka_unit_test(conv_grad_half),
        cmocka_unit_test(conv_grad_errors),
        cmocka_unit_test(conv_grad_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
