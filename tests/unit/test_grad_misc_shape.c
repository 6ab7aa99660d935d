/* SliceGrad and PadGrad: finite differences through the forward Slice /
 * Pad in float64 and the probe reference (which x element each output
 * read) for negative steps, clamping, INT64 sentinels, empty slices, the
 * opset 1 attribute form; every pad mode with pads beyond the axis size,
 * negative pads, axes, the opset 1/2 attribute forms; float32 at parallel
 * sizes, float16 and int32; bad input; the shape rules. */
#include "test_grad_misc.h"

/* ---- SliceGrad ---- */
typedef struct {
    const char *what;
    int opset;
    int xr;
    int64_t xd[4];
    int n;
    int64_t starts[4], ends[4], axes[4], steps[4];
    bool has_axes, has_steps;
    lt_dtype dt;
} scase;

static void slice_attrs(tu_graph *g, const void *ctx)
{
    const scase *c = ctx;
    if (c->opset >= 10)
        return;
    tu_attr_ints(g, "starts", c->n, c->starts);
    tu_attr_ints(g, "ends", c->n, c->ends);
    if (c->has_axes)
        tu_attr_ints(g, "axes", c->n, c->axes);
}

static void slice_cases(void **state)
{
    (void)state;
    static const scase cases[] = {
        {"Slice plain", 13, 2, {6, 5}, 2, {1, 0}, {5, 5}, {0}, {0}},
        {"Slice reversed, step -2", 13, 2, {6, 5}, 1, {-1}, {-7}, {0}, {-2}, true, true},
        {"Slice sentinels", 13, 3, {4, 5, 6}, 2, {5, 0}, {INT64_MIN, INT64_MAX}, {2, 0}, {-1, 2}, true, true},
        {"Slice clamped", 11, 3, {4, 5, 6}, 1, {-3}, {100}, {-1}, {1}, true, true},
        {"Slice empty", 13, 2, {4, 5}, 1, {3}, {1}, {0}, {1}, true, true},
        {"Slice huge step", 13, 2, {4, 5}, 1, {1}, {5}, {1}, {10}, true, true},
        {"Slice reversed huge step", 13, 2, {4, 5}, 1, {3}, {-100}, {1}, {-7}, true, true},
        {"Slice all axes negative steps", 10, 3, {3, 4, 5}, 3, {2, 3, 4}, {-10, 0, 1}, {0, 1, 2}, {-1, -2, -3},
         true, true},
        {"Slice opset 1 attributes", 1, 3, {4, 5, 6}, 2, {1, -4}, {3, 1000}, {2, 0}, {0}, true},
        {"Slice opset 9 no axes", 9, 2, {4, 5}, 2, {-3, 1}, {-1, 4}, {0}, {0}},
        {"Slice f32 large", 13, 2, {200, 600}, 2, {0, -1}, {200, -601}, {0, 1}, {2, -3}, true, true, LT_F32},
        {"Slice f16", 13, 2, {6, 5}, 1, {4}, {0}, {1}, {-1}, true, true, LT_F16},
        {"Slice int32", 13, 2, {6, 5}, 1, {1}, {6}, {0}, {2}, true, true, LT_I32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const scase *c = &cases[i];
        uint64_t seed = 1000 + 10 * i;
        lt_value *x = tu_rand(LT_F64, c->xr, c->xd, -2, 2, seed);
        lt_value *st = NULL, *en = NULL, *ax = NULL, *sp = NULL;
        if (c->opset >= 10) {
            st = gm_vec(c->n, c->starts);
            en = gm_vec(c->n, c->ends);
            ax = c->has_axes ? gm_vec(c->n, c->axes) : NULL;
            sp = c->has_steps ? gm_vec(c->n, c->steps) : NULL;
        }
        int nin = c->opset >= 10 ? 5 : 1;
        gm_fd f = {c->what, LT_OP_SLICE, c->opset, nin, 0, (lt_value *[]){x, st, en, ax, sp}, slice_attrs, c};
        gm_check_move(&f, LT_OP_SLICE_GRAD, nin + 1, (lt_value *[]){NULL, x, st, en, ax, sp},
                      c->dt ? c->dt : LT_F64, 40, seed + 1);
        lt_value *vals[4] = {st, en, ax, sp};
        for (int j = 0; j < 4; j++)
            if (vals[j])
                lt_value_free(vals[j]);
        lt_value_free(x);
    }
}

/* ---- PadGrad ---- */
typedef struct {
    const char *what;
    int opset;
    const char *mode; /* NULL: attribute absent (constant) */
    int xr;
    int64_t xd[4];
    int np;
    int64_t pads[8];
    int na; /* > 0: opset 18 axes input */
    int64_t axes[4];
    lt_dtype dt;
} pcase;

static void pad_attrs(tu_graph *g, const void *ctx)
{
    const pcase *c = ctx;
    if (c->mode)
        tu_attr_str(g, "mode", c->mode);
    if (c->opset < 11) {
        tu_attr_ints(g, c->opset < 2 ? "paddings" : "pads", c->np, c->pads);
        tu_attr_float(g, "value", 0.5f);
    }
}

static void pad_cases(void **state)
{
    (void)state;
    static const pcase cases[] = {
        {"Pad constant", 13, NULL, 2, {3, 4}, 4, {1, 0, 2, 3}},
        {"Pad constant, negative pads", 13, "constant", 2, {4, 5}, 4, {-1, 2, 1, -2}},
        {"Pad constant, all cropped", 13, "constant", 2, {4, 5}, 4, {0, -3, 0, -2}},
        {"Pad reflect", 13, "reflect", 2, {3, 4}, 4, {2, 1, 1, 3}},
        {"Pad reflect beyond the axis", 13, "reflect", 2, {3, 4}, 4, {4, 0, 5, 7}},
        {"Pad reflect, negative pads", 13, "reflect", 2, {4, 5}, 4, {-1, 1, 2, -1}},
        {"Pad reflect, size-1 axis", 13, "reflect", 2, {1, 4}, 4, {2, 1, 2, 0}},
        {"Pad edge", 11, "edge", 3, {2, 3, 4}, 6, {1, 0, 2, 0, 3, 1}},
        {"Pad wrap beyond the axis", 19, "wrap", 2, {3, 4}, 4, {1, 5, 2, 6}},
        {"Pad axes (opset 18)", 18, "reflect", 3, {2, 3, 4}, 2, {2, 3}, 1, {-1}},
        {"Pad two axes (opset 18)", 18, "edge", 3, {2, 3, 4}, 4, {1, 2, 0, 3}, 2, {0, 2}},
        {"Pad opset 2 attributes", 2, "edge", 2, {3, 4}, 4, {0, 1, 2, 1}},
        {"Pad opset 1 paddings", 1, "constant", 2, {3, 4}, 4, {1, -1, 0, 2}},
        {"Pad reflect f32 large", 13, "reflect", 4, {64, 3, 32, 32}, 8, {0, 0, 2, 2, 0, 0, 2, 2}, 0, {0},
         LT_F32},
        {"Pad constant f32 large", 13, NULL, 4, {64, 3, 32, 32}, 8, {0, 0, 1, 1, 0, 0, 1, 1}, 0, {0}, LT_F32},
        {"Pad wrap f16", 19, "wrap", 2, {3, 4}, 4, {1, 2, 2, 1}, 0, {0}, LT_F16},
        {"Pad constant int32", 13, NULL, 2, {3, 4}, 4, {1, 0, 2, 3}, 0, {0}, LT_I32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const pcase *c = &cases[i];
        uint64_t seed = 1200 + 10 * i;
        lt_value *x = tu_rand(LT_F64, c->xr, c->xd, -2, 2, seed);
        lt_value *pads = NULL, *cval = NULL, *axes = NULL;
        int nin = 1;
        if (c->opset >= 11) {
            pads = gm_vec(c->np, c->pads);
            cval = tu_from(LT_F64, 0, NULL, (double[]){0.5}); /* not an x position for the probe */
            axes = c->na ? gm_vec(c->na, c->axes) : NULL;
            nin = 4;
        }
        gm_fd f = {c->what, LT_OP_PAD, c->opset, nin, 0, (lt_value *[]){x, pads, cval, axes}, pad_attrs, c};
        gm_check_move(&f, LT_OP_PAD_GRAD, nin + 1, (lt_value *[]){NULL, x, pads, cval, axes}, c->dt ? c->dt : LT_F64,
                      40, seed + 1);
        if (pads)
            lt_value_free(pads);
        if (cval)
            lt_value_free(cval);
        if (axes)
            lt_value_free(axes);
        lt_value_free(x);
    }
}

static void bad_input(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 1);
    lt_value *dy = tu_rand(LT_F32, 2, (int64_t[]){2, 4}, -1, 1, 2);
    lt_value *st = gm_vec(1, (int64_t[]){0}), *en = gm_vec(1, (int64_t[]){3}), *zero = gm_vec(1, (int64_t[]){0});
    char msg[LT_ERR_MSG_MAX];
    /* the slice is [3, 4], dy [2, 4] */
    assert_int_equal(gm_run_status(LT_OP_SLICE_GRAD, 13, 4, (lt_value *[]){dy, x, st, en}, NULL, NULL, msg, sizeof msg),
                     LT_ERR_INVALID);
    assert_non_null(strstr(msg, "dy has shape [2,4], expected [3,4]"));
    assert_int_equal(
        gm_run_status(LT_OP_SLICE_GRAD, 13, 6, (lt_value *[]){dy, x, st, en, NULL, zero}, NULL, NULL, msg, sizeof msg),
        LT_ERR_INVALID);
    assert_non_null(strstr(msg, "step"));
    /* Pad: dy not the padded shape; an unknown mode; reflect on integers */
    lt_value *pads = gm_vec(4, (int64_t[]){0, 0, 0, 0});
    assert_int_equal(gm_run_status(LT_OP_PAD_GRAD, 13, 3, (lt_value *[]){dy, x, pads}, NULL, NULL, msg, sizeof msg),
                     LT_ERR_INVALID);
    pcase bad = {"", 13, "mirror"}, refl = {"", 13, "reflect"};
    assert_int_equal(gm_run_status(LT_OP_PAD_GRAD, 13, 3, (lt_value *[]){x, x, pads}, pad_attrs, &bad, NULL, 0),
                     LT_ERR_INVALID);
    lt_value *xi = tu_rand(LT_I32, 2, (int64_t[]){3, 4}, -5, 5, 3);
    assert_int_equal(gm_run_status(LT_OP_PAD_GRAD, 13, 3, (lt_value *[]){xi, xi, pads}, pad_attrs, &refl, NULL, 0),
                     LT_ERR_UNSUPPORTED);
    lt_value *p3 = gm_vec(3, (int64_t[]){0, 0, 0});
    assert_int_equal(gm_run_status(LT_OP_PAD_GRAD, 13, 3, (lt_value *[]){x, x, p3}, NULL, NULL, NULL, 0),
                     LT_ERR_INVALID);
    lt_value_free(p3);
    lt_value_free(xi);
    lt_value_free(pads);
    lt_value_free(zero);
    lt_value_free(en);
    lt_value_free(st);
    lt_value_free(dy);
    lt_value_free(x);
}

static void shape_rules(void **state)
{
    (void)state;
    lt_type dy = gm_type(LT_F32, 2, (int64_t[]){2, 4}), x = gm_type(LT_F32, 2, (int64_t[]){3, 4});
    lt_type v = gm_type(LT_I64, 1, (int64_t[]){1});
    lt_type t = gm_infer(LT_OP_SLICE_GRAD, 13, 4, (const lt_type *[]){&dy, &x, &v, &v}, NULL, NULL, LT_OK);
    gm_assert_type(&t, LT_F32, 2, (int64_t[]){3, 4});
    t = gm_infer(LT_OP_PAD_GRAD, 13, 3, (const lt_type *[]){&dy, &x, &v}, NULL, NULL, LT_OK);
    gm_assert_type(&t, LT_F32, 2, (int64_t[]){3, 4});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slice_cases),
        cmocka_unit_test(pad_cases),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(shape_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
