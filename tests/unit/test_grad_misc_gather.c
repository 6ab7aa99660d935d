/* GatherGrad, GatherElementsGrad and GatherNDGrad: finite differences
 * through the forward gathers in float64 and the probe reference (which
 * data element each output read) for axes, negative and repeated indices,
 * scalar indices, narrower GatherElements indices and batch_dims; float32
 * at sizes that take each parallel split; float16; bad input; the rules;
 * GatherGrad's padding row. */
#include "test_grad_misc.h"

typedef struct {
    const char *name; /* attribute name, NULL for none */
    int64_t v;
} int_attr;

static void set_attr(tu_graph *g, const void *ctx)
{
    const int_attr *a = ctx;
    if (a->name)
        tu_attr_int(g, a->name, a->v);
}

typedef struct {
    const char *what;
    lt_op fwd;
    int opset;
    int_attr attr;
    int xr;
    int64_t xd[4];
    int ir;
    int64_t id[4];
    int64_t iv[24]; /* indices; unused when random */
    bool random;    /* indices drawn in [lo, hi) */
    int64_t lo, hi;
    lt_dtype dt;
} gcase;

static lt_op grad_of(lt_op fwd)
{
    return fwd == LT_OP_GATHER ? LT_OP_GATHER_GRAD
           : fwd == LT_OP_GATHER_ELEMENTS ? LT_OP_GATHER_ELEMENTS_GRAD
                                          : LT_OP_GATHER_ND_GRAD;
}

static void run_case(const gcase *c, uint64_t seed)
{
    lt_value *x = tu_rand(LT_F64, c->xr, c->xd, -2, 2, seed);
    lt_value *ind;
    if (c->random) {
        ind = tu_rand(LT_I64, c->ir, c->id, (double)c->lo, (double)c->hi, seed + 1);
    } else {
        ind = gm_ints(c->ir, c->id, c->iv);
    }
    gm_fd f = {c->what, c->fwd, c->opset, 2, 0, (lt_value *[]){x, ind}, set_attr, &c->attr};
    gm_check_move(&f, grad_of(c->fwd), 3, (lt_value *[]){NULL, ind, x}, c->dt, 40, seed + 2);
    lt_value_free(ind);
    lt_value_free(x);
}

static void gather(void **state)
{
    (void)state;
    static const gcase cases[] = {
        {"Gather axis 0, repeats, negative", LT_OP_GATHER, 13, {"axis", 0}, 2, {5, 4}, 1, {3}, {0, -1, 0}},
        {"Gather axis 1, 2-D indices", LT_OP_GATHER, 13, {"axis", 1}, 3, {3, 5, 2}, 2, {2, 2}, {4, -5, 1, 4}},
        {"Gather axis -1, scalar index", LT_OP_GATHER, 13, {"axis", -1}, 3, {3, 5, 2}, 0, {0}, {1}},
        {"Gather 1-D data", LT_OP_GATHER, 13, {NULL, 0}, 1, {4}, 2, {2, 3}, {3, 2, 3, -4, 0, 0}},
        {"Gather opset 1 default axis", LT_OP_GATHER, 1, {NULL, 0}, 2, {3, 3}, 1, {4}, {2, 2, 0, 2}},
        {"Gather empty indices", LT_OP_GATHER, 13, {"axis", 1}, 2, {3, 3}, 1, {0}, {0}},
        /* float32 at sizes past the parallel threshold: destination-row
         * split (narrow rows), column split (wide rows), many outer rows */
        {"Gather embedding f32", LT_OP_GATHER, 13, {"axis", 0}, 2, {1000, 16}, 1, {4096}, {0}, true, -1000, 1000,
         LT_F32},
        {"Gather wide rows f32", LT_OP_GATHER, 13, {"axis", 0}, 2, {4, 3000}, 1, {50}, {0}, true, -4, 4, LT_F32},
        {"Gather outer rows f32", LT_OP_GATHER, 13, {"axis", 1}, 3, {64, 50, 8}, 1, {90}, {0}, true, 0, 50, LT_F32},
        {"Gather f16", LT_OP_GATHER, 13, {"axis", 0}, 2, {5, 4}, 1, {6}, {0}, true, -5, 5, LT_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gcase c = cases[i];
        if (c.dt == LT_UNDEFINED)
            c.dt = LT_F64;
        run_case(&c, 700 + 10 * i);
    }
}

static void gather_elements(void **state)
{
    (void)state;
    static const gcase cases[] = {
        {"GatherElements axis 0", LT_OP_GATHER_ELEMENTS, 13, {"axis", 0}, 2, {3, 4}, 2, {2, 4}, {0}, true, -3, 3},
        {"GatherElements axis 1", LT_OP_GATHER_ELEMENTS, 13, {"axis", 1}, 2, {3, 4}, 2, {3, 2}, {0}, true, -4, 4},
        {"GatherElements narrower trailing", LT_OP_GATHER_ELEMENTS, 11, {"axis", 1}, 3, {2, 3, 4}, 3, {2, 5, 3},
         {0}, true, -3, 3},
        {"GatherElements axis -1", LT_OP_GATHER_ELEMENTS, 13, {"axis", -1}, 3, {2, 3, 4}, 3, {1, 2, 6}, {0}, true,
         0, 4},
        {"GatherElements default axis", LT_OP_GATHER_ELEMENTS, 13, {NULL, 0}, 2, {2, 2}, 2, {2, 2}, {1, 1, 1, 0}},
        {"GatherElements axis 0 f32", LT_OP_GATHER_ELEMENTS, 13, {"axis", 0}, 2, {300, 200}, 2, {400, 200}, {0},
         true, -300, 300, LT_F32},
        {"GatherElements axis 1 f32", LT_OP_GATHER_ELEMENTS, 13, {"axis", 1}, 2, {300, 200}, 2, {300, 150}, {0},
         true, 0, 200, LT_F32},
        {"GatherElements bf16", LT_OP_GATHER_ELEMENTS, 13, {"axis", 1}, 2, {3, 4}, 2, {3, 5}, {0}, true, 0, 4,
         LT_BF16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gcase c = cases[i];
        if (c.dt == LT_UNDEFINED)
            c.dt = LT_F64;
        run_case(&c, 800 + 10 * i);
    }
}

static void gather_nd(void **state)
{
    (void)state;
    static const gcase cases[] = {
        {"GatherND elements, repeats", LT_OP_GATHER_ND, 13, {NULL, 0}, 2, {3, 4}, 2, {3, 2}, {0, 1, -3, 1, 2, -1}},
        {"GatherND slices", LT_OP_GATHER_ND, 11, {NULL, 0}, 3, {3, 4, 2}, 2, {3, 1}, {2, -1, 0}},
        {"GatherND batch_dims 1", LT_OP_GATHER_ND, 12, {"batch_dims", 1}, 3, {2, 3, 4}, 3, {2, 3, 1},
         {0, 2, 2, 1, -1, 1}},
        {"GatherND batch_dims 2", LT_OP_GATHER_ND, 13, {"batch_dims", 2}, 4, {2, 3, 4, 5}, 4, {2, 3, 2, 2}, {0},
         true, 0, 4},
        {"GatherND rows f32", LT_OP_GATHER_ND, 13, {NULL, 0}, 2, {100, 64}, 2, {5000, 1}, {0}, true, -100, 100,
         LT_F32},
        {"GatherND wide rows f32", LT_OP_GATHER_ND, 13, {NULL, 0}, 2, {4, 8000}, 2, {20, 1}, {0}, true, 0, 4,
         LT_F32},
        {"GatherND elements f32", LT_OP_GATHER_ND, 13, {NULL, 0}, 2, {50, 60}, 2, {40000, 2}, {0}, true, 0, 50,
         LT_F32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gcase c = cases[i];
        if (c.dt == LT_UNDEFINED)
            c.dt = LT_F64;
        run_case(&c, 900 + 10 * i);
    }
}

static void bad_input(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 1);
    lt_value *ind = gm_vec(2, (int64_t[]){0, 3});
    lt_value *dy = tu_rand(LT_F32, 2, (int64_t[]){2, 4}, -1, 1, 2);
    char msg[LT_ERR_MSG_MAX];
    int_attr none = {NULL, 0}, ax1 = {"axis", 1}, ax2 = {"axis", 2};
    /* index 3 out of range for axis 0 of size 3 */
    assert_int_equal(gm_run_status(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){dy, ind, x}, set_attr, &none, msg,
                                   sizeof msg),
                     LT_ERR_INVALID);
    assert_non_null(strstr(msg, "index 3"));
    /* dy of the wrong shape; a bad axis */
    assert_int_equal(gm_run_status(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){dy, ind, x}, set_attr, &ax1, msg,
                                   sizeof msg),
                     LT_ERR_INVALID);
    assert_non_null(strstr(msg, "dy has shape"));
    assert_int_equal(
        gm_run_status(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){dy, ind, x}, set_attr, &ax2, NULL, 0),
        LT_ERR_INVALID);
    /* GatherElements: index out of range, float indices */
    lt_value *ie = gm_ints(2, (int64_t[]){2, 4}, (int64_t[]){0, 1, 2, 3, -4, 0, 1, 2});
    assert_int_equal(gm_run_status(LT_OP_GATHER_ELEMENTS_GRAD, 13, 3, (lt_value *[]){dy, ie, x}, set_attr, &none,
                                   msg, sizeof msg),
                     LT_ERR_INVALID);
    assert_int_equal(
        gm_run_status(LT_OP_GATHER_ELEMENTS_GRAD, 13, 3, (lt_value *[]){dy, dy, x}, set_attr, &none, NULL, 0),
        LT_ERR_INVALID);
    /* GatherND: tuple component out of range; batch_dims too large */
    lt_value *in = gm_ints(2, (int64_t[]){2, 2}, (int64_t[]){0, 0, 1, 4});
    lt_value *dn = tu_rand(LT_F32, 1, (int64_t[]){2}, -1, 1, 3);
    assert_int_equal(
        gm_run_status(LT_OP_GATHER_ND_GRAD, 13, 3, (lt_value *[]){dn, in, x}, set_attr, &none, msg, sizeof msg),
        LT_ERR_INVALID);
    int_attr b2 = {"batch_dims", 2};
    assert_int_equal(gm_run_status(LT_OP_GATHER_ND_GRAD, 13, 3, (lt_value *[]){dn, in, x}, set_attr, &b2, NULL, 0),
                     LT_ERR_INVALID);
    /* integer dy is not a gradient */
    lt_value *di = tu_rand(LT_I32, 2, (int64_t[]){2, 4}, 0, 3, 4);
    lt_value *ok = gm_vec(2, (int64_t[]){0, 2});
    assert_int_equal(gm_run_status(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){di, ok, x}, set_attr, &none, NULL, 0),
                     LT_ERR_UNSUPPORTED);
    lt_value_free(ok);
    lt_value_free(di);
    lt_value_free(dn);
    lt_value_free(in);
    lt_value_free(ie);
    lt_value_free(dy);
    lt_value_free(ind);
    lt_value_free(x);
}

/* GatherGrad with padding_idx (ad/padding_rows.c): the named row of the
 * gathered axis takes nothing back, whatever dy holds there (NaN
 * included); every other element is the brute-force scatter-add. */
typedef struct {
    int64_t axis, pad;
} pad_attrs;

static void set_pad(tu_graph *g, const void *ctx)
{
    const pad_attrs *a = ctx;
    tu_attr_int(g, "axis", a->axis);
    tu_attr_int(g, "padding_idx", a->pad);
}

static void padding_row(void **state)
{
    (void)state;
    static const struct {
        int xr;
        int64_t xd[3];
        int64_t nidx, axis, pad;
        lt_dtype dt;
    } cases[] = {
        {2, {1000, 16}, 4096, 0, 0, LT_F32},  /* an embedding, past the parallel threshold */
        {2, {40, 3000}, 64, 0, 39, LT_F32},   /* wide rows: the column split */
        {3, {6, 9, 5}, 30, 1, 4, LT_F64},     /* axis 1: the row in every outer slice */
        {2, {12, 8}, 50, -2, 11, LT_F16},     /* through float32 scratch */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int r = cases[c].xr, axis = (int)(cases[c].axis < 0 ? cases[c].axis + r : cases[c].axis);
        int64_t n = cases[c].xd[axis], pad = cases[c].pad, outer = 1, inner = 1;
        for (int d = 0; d < axis; d++)
            outer *= cases[c].xd[d];
        for (int d = axis + 1; d < r; d++)
            inner *= cases[c].xd[d];
        lt_value *x = tu_rand(cases[c].dt, r, cases[c].xd, -1, 1, 40 + c);
        lt_value *ind = tu_rand(LT_I64, 1, (int64_t[]){cases[c].nidx}, (double)-n, (double)n, 50 + c);
        int64_t *iv = (int64_t *)ind->t.data;
        iv[0] = pad, iv[1] = pad - n, iv[2] = pad; /* the padding row, also as a negative index */
        int64_t dd[3];
        memcpy(dd, cases[c].xd, sizeof dd);
        dd[axis] = cases[c].nidx;
        lt_value *dy = tu_rand(cases[c].dt, r, dd, -1, 1, 60 + c);
        lt_tensor_set_f64(&dy->t, 1 * inner, NAN); /* dy at a padding position */
        pad_attrs a = {cases[c].axis, pad};
        lt_value *g = gm_run(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){dy, ind, x}, set_pad, &a, NULL);
        double *want = calloc((size_t)x->t.numel, sizeof *want);
        assert_non_null(want);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < cases[c].nidx; j++) {
                int64_t w = iv[j] < 0 ? iv[j] + n : iv[j];
                if (w == pad)
                    continue;
                for (int64_t i = 0; i < inner; i++)
                    want[(o * n + w) * inner + i] += lt_tensor_get_f64(&dy->t, (o * cases[c].nidx + j) * inner + i);
            }
        double tol = cases[c].dt == LT_F64 ? 1e-12 : cases[c].dt == LT_F32 ? 1e-4 : 2e-2;
        for (int64_t e = 0; e < x->t.numel; e++) {
            double v = lt_tensor_get_f64(&g->t, e);
            if (!(fabs(v - want[e]) <= tol * fmax(1, fabs(want[e]))))
                fail_msg("case %zu element %lld: %g, want %g", c, (long long)e, v, want[e]);
            if ((e / inner) % n == pad)
                assert_true(v == 0);
        }
        /* without the attribute the padding row does take its share */
        int_attr ax = {"axis", cases[c].axis};
        lt_value *h = gm_run(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){dy, ind, x}, set_attr, &ax, NULL);
        assert_true(isnan(lt_tensor_get_f64(&h->t, pad * inner)));
        /* a row out of range is refused */
        pad_attrs bad = {cases[c].axis, n};
        char msg[LT_ERR_MSG_MAX];
        assert_int_equal(gm_run_status(LT_OP_GATHER_GRAD, 13, 3, (lt_value *[]){dy, ind, x}, set_pad, &bad, msg,
                                       sizeof msg),
                         LT_ERR_INVALID);
        assert_non_null(strstr(msg, "padding_idx"));
        free(want);
        lt_value_free(h);
        lt_value_free(g);
        lt_value_free(dy);
        lt_value_free(ind);
        lt_value_free(x);
    }
}

/* Empty data or empty indices give (empty or zero) gradients, no error. */
static void empty_tensors(void **state)
{
    (void)state;
    int_attr none = {NULL, 0};
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){2, 0}, -1, 1, 1), *ind = gm_vec(2, (int64_t[]){1, 0});
    lt_value *dy = tu_rand(LT_F32, 2, (int64_t[]){2, 0}, -1, 1, 2);
    static const lt_op ops[] = {LT_OP_GATHER_GRAD, LT_OP_GATHER_ND_GRAD};
    for (int i = 0; i < 2; i++) {
        lt_value *in = i ? gm_ints(2, (int64_t[]){2, 1}, (int64_t[]){1, 0}) : ind;
        lt_value *g = gm_run(ops[i], 13, 3, (lt_value *[]){dy, in, x}, set_attr, &none, NULL);
        assert_int_equal(g->t.numel, 0);
        assert_int_equal(g->t.dims[0], 2);
        lt_value_free(g);
        if (i)
            lt_value_free(in);
    }
    lt_value *x2 = tu_rand(LT_F64, 2, (int64_t[]){3, 2}, -1, 1, 3);
    lt_value *e = gm_ints(2, (int64_t[]){0, 2}, (int64_t[]){0}), *dy2 = tu_rand(LT_F64, 2, (int64_t[]){0, 2}, -1, 1, 4);
    lt_value *g = gm_run(LT_OP_GATHER_ELEMENTS_GRAD, 13, 3, (lt_value *[]){dy2, e, x2}, set_attr, &none, NULL);
    tu_assert_close(g, (double[]){0, 0, 0, 0, 0, 0}, 6, 0, 0, 3);
    lt_value_free(g);
    lt_value_free(dy2);
    lt_value_free(e);
    lt_value_free(x2);
    lt_value_free(dy);
    lt_value_free(ind);
    lt_value_free(x);
}

static void shape_rules(void **state)
{
    (void)state;
    lt_type dy = gm_type(LT_F32, 2, (int64_t[]){2, 4}), ind = gm_type(LT_I64, 1, (int64_t[]){2});
    lt_type x = gm_type(LT_F32, 2, (int64_t[]){3, 4});
    static const lt_op ops[] = {LT_OP_GATHER_GRAD, LT_OP_GATHER_ELEMENTS_GRAD, LT_OP_GATHER_ND_GRAD};
    for (int i = 0; i < 3; i++) {
        lt_type t = gm_infer(ops[i], 13, 3, (const lt_type *[]){&dy, &ind, &x}, NULL, NULL, LT_OK);
        gm_assert_type(&t, LT_F32, 2, (int64_t[]){3, 4});
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gather),    cmocka_unit_test(gather_elements), cmocka_unit_test(gather_nd),
        cmocka_unit_test(bad_input), cmocka_unit_test(padding_row), cmocka_unit_test(empty_tensors),   cmocka_unit_test(shape_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
