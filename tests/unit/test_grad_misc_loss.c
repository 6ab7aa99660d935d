/* SoftmaxCrossEntropyLossGrad and NegativeLogLikelihoodLossGrad: finite
 * differences with respect to the scores / log-probabilities through the
 * forward losses in float64, over reductions, class weights, ignore_index
 * and (N, C, d1, d2) inputs; float32/float16 against float64; an
 * all-ignored mean batch; bad input; the shape rule. */
#include "test_grad_misc.h"

typedef struct {
    const char *red; /* NULL: attribute absent (mean) */
    bool has_ii;
    int64_t ii;
} loss_attrs;

static void set_attrs(tu_graph *g, const void *ctx)
{
    const loss_attrs *a = ctx;
    if (a->red)
        tu_attr_str(g, "reduction", a->red);
    if (a->has_ii)
        tu_attr_int(g, "ignore_index", a->ii);
}

/* Targets in [0, c), every third one replaced by the ignore index. */
static lt_value *targets(int rank, const int64_t *dims, int64_t c, const loss_attrs *a, uint64_t seed)
{
    lt_value *t = tu_rand(LT_I64, rank, dims, 0, (double)c, seed);
    if (a->has_ii)
        for (int64_t i = 0; i < t->t.numel; i += 3)
            ((int64_t *)t->t.data)[i] = a->ii;
    return t;
}

static void fd_all_variants(void **state)
{
    (void)state;
    static const char *const reds[] = {NULL, "none", "sum", "mean"};
    static const struct {
        int rank;
        int64_t dims[4];
    } shapes[] = {{2, {5, 4}}, {4, {3, 4, 2, 3}}};
    static const int64_t iis[] = {1, -100};
    int n = 0;
    for (int sce = 0; sce < 2; sce++)
        for (int r = 0; r < 4; r++)
            for (int w = 0; w < 2; w++)
                for (int ii = 0; ii < 3; ii++)
                    for (int s = 0; s < 2; s++, n++) {
                        loss_attrs a = {reds[r], ii > 0, ii > 0 ? iis[ii - 1] : 0};
                        int rank = shapes[s].rank;
                        const int64_t *dims = shapes[s].dims;
                        int64_t tdims[3] = {dims[0], dims[2], dims[3]};
                        uint64_t seed = 500 + n;
                        lt_value *x = tu_rand(LT_F64, rank, dims, -3, 3, seed);
                        lt_value *t = targets(rank - 1, tdims, dims[1], &a, seed + 1);
                        lt_value *wt = w ? tu_rand(LT_F64, 1, &dims[1], 0.2, 2, seed + 2) : NULL;
                        lt_op fwd = sce ? LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS : LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS;
                        lt_op op = sce ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD;
                        lt_value *fin[3] = {x, t, wt};
                        lt_value *loss = gm_run(fwd, 13, wt ? 3 : 2, fin, set_attrs, &a, NULL);
                        lt_value *dl = tu_rand(LT_F64, loss->t.rank, loss->t.dims, 0.5, 1.5, seed + 3);
                        lt_value *grad =
                            gm_run(op, 13, wt ? 4 : 3, (lt_value *[]){dl, x, t, wt}, set_attrs, &a, NULL);
                        char name[96];
                        snprintf(name, sizeof name, "%s %s%s%s rank %d", sce ? "SCEGrad" : "NLLGrad",
                                 a.red ? a.red : "default", w ? " weights" : "",
                                 ii == 1 ? " ii=1" : ii == 2 ? " ii=-100" : "", rank);
                        gm_fd f = {name, fwd, 13, wt ? 3 : 2, 0, fin, set_attrs, &a};
                        gm_fd_check(&f, dl, grad, 40, 1e-6, seed);
                        lt_value_free(grad);
                        lt_value_free(dl);
                        lt_value_free(loss);
                        if (wt)
                            lt_value_free(wt);
                        lt_value_free(t);
                        lt_value_free(x);
                    }
}

/* Hand-derived NLL mean with weights: loss = -(w0 x[0,0] + w1 x[1,1]) /
 * (w0 + w1); with w = (1, 3) the gradient is -1/4 at [0,0], -3/4 at [1,1]. */
static void hand_values(void **state)
{
    (void)state;
    lt_value *x = tu_from(LT_F32, 2, (int64_t[]){2, 2}, (double[]){-0.5, -1, -2, -0.1});
    lt_value *t = gm_vec(2, (int64_t[]){0, 1});
    lt_value *w = tu_from(LT_F32, 1, (int64_t[]){2}, (double[]){1, 3});
    lt_value *dl = tu_from(LT_F32, 0, NULL, (double[]){1});
    loss_attrs a = {NULL, false, 0};
    lt_value *g = gm_run(LT_OP_NLL_LOSS_GRAD, 13, 4, (lt_value *[]){dl, x, t, w}, set_attrs, &a, NULL);
    tu_assert_close(g, (double[]){-0.25, 0, 0, -0.75}, 4, 1e-7, 1e-7, 0);
    lt_value_free(g);
    /* SCE sum with equal scores: softmax 1/2 each, dx = p - onehot */
    lt_value *z = tu_from(LT_F32, 2, (int64_t[]){2, 2}, (double[]){0, 0, 1, 1});
    a.red = "sum";
    g = gm_run(LT_OP_SCE_LOSS_GRAD, 13, 3, (lt_value *[]){dl, z, t, NULL}, set_attrs, &a, NULL);
    tu_assert_close(g, (double[]){-0.5, 0.5, 0.5, -0.5}, 4, 1e-6, 1e-7, 0);
    lt_value_free(g);
    lt_value_free(z);
    lt_value_free(dl);
    lt_value_free(w);
    lt_value_free(t);
    lt_value_free(x);
}

/* Nothing counted: the mean loss is NaN, its gradient zero. */
static void all_ignored_mean(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 1);
    lt_value *t = gm_vec(3, (int64_t[]){2, 2, 2});
    lt_value *dl = tu_from(LT_F32, 0, NULL, (double[]){1});
    loss_attrs a = {"mean", true, 2};
    for (int sce = 0; sce < 2; sce++) {
        lt_value *g = gm_run(sce ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD, 13, 3, (lt_value *[]){dl, x, t},
                             set_attrs, &a, NULL);
        double zero[12] = {0};
        tu_assert_close(g, zero, 12, 0, 0, 1);
        lt_value_free(g);
    }
    lt_value_free(dl);
    lt_value_free(t);
    lt_value_free(x);
}

/* float32 above the parallel threshold and float16, against float64. */
static void narrow_types(void **state)
{
    (void)state;
    static const struct {
        int rank;
        int64_t dims[4];
        lt_dtype dt;
    } cases[] = {{2, {256, 200}, LT_F32}, {4, {4, 10, 30, 30}, LT_F32}, {3, {6, 5, 4}, LT_F16}};
    loss_attrs a = {"mean", true, 3};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int sce = 0; sce < 2; sce++) {
            int rank = cases[c].rank;
            const int64_t *dims = cases[c].dims;
            int64_t tdims[3] = {dims[0], dims[2], dims[3]};
            lt_value *x = tu_rand(cases[c].dt, rank, dims, -3, 3, 600 + c);
            lt_value *x64 = tu_rand(LT_F64, rank, dims, 0, 1, 0);
            for (int64_t i = 0; i < x->t.numel; i++)
                lt_tensor_set_f64(&x64->t, i, tu_get(x, i));
            lt_value *t = targets(rank - 1, tdims, dims[1], &a, 601 + c);
            lt_value *dl = tu_from(cases[c].dt, 0, NULL, (double[]){1.5});
            lt_value *dl64 = tu_from(LT_F64, 0, NULL, (double[]){1.5});
            lt_op op = sce ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD;
            lt_value *got = gm_run(op, 13, 3, (lt_value *[]){dl, x, t}, set_attrs, &a, NULL);
            lt_value *want = gm_run(op, 13, 3, (lt_value *[]){dl64, x64, t}, set_attrs, &a, NULL);
            assert_int_equal(got->t.dtype, cases[c].dt);
            bool h = cases[c].dt == LT_F16;
            gm_assert_same(got, want, h ? 5e-3 : 1e-5, h ? 1e-4 : 1e-8, lt_op_names[op]);
            lt_value_free(want);
            lt_value_free(got);
            lt_value_free(dl64);
            lt_value_free(dl);
            lt_value_free(t);
            lt_value_free(x64);
            lt_value_free(x);
        }
}

static void bad_input(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){3, 4}, -1, 1, 1);
    lt_value *t = gm_vec(3, (int64_t[]){0, 4, 1});
    lt_value *dl = tu_from(LT_F32, 0, NULL, (double[]){1});
    char msg[LT_ERR_MSG_MAX];
    /* a target outside [0, C) */
    assert_int_equal(gm_run_status(LT_OP_SCE_LOSS_GRAD, 13, 3, (lt_value *[]){dl, x, t}, NULL, NULL, msg, sizeof msg),
                     LT_ERR_INVALID);
    assert_non_null(strstr(msg, "target 4"));
    /* dloss of the wrong shape for reduction none */
    lt_value *t2 = gm_vec(3, (int64_t[]){0, 3, 1});
    loss_attrs a = {"none", false, 0};
    assert_int_equal(
        gm_run_status(LT_OP_NLL_LOSS_GRAD, 13, 3, (lt_value *[]){dl, x, t2}, set_attrs, &a, msg, sizeof msg),
        LT_ERR_INVALID);
    /* a bad reduction, a bad weight, targets of the wrong shape */
    loss_attrs b = {"max", false, 0};
    assert_int_equal(gm_run_status(LT_OP_NLL_LOSS_GRAD, 13, 3, (lt_value *[]){dl, x, t2}, set_attrs, &b, NULL, 0),
                     LT_ERR_INVALID);
    lt_value *w = tu_rand(LT_F32, 1, (int64_t[]){3}, 0, 1, 2);
    assert_int_equal(gm_run_status(LT_OP_SCE_LOSS_GRAD, 13, 4, (lt_value *[]){dl, x, t2, w}, NULL, NULL, NULL, 0),
                     LT_ERR_INVALID);
    lt_value *t3 = gm_vec(4, (int64_t[]){0, 1, 2, 3});
    assert_int_equal(gm_run_status(LT_OP_SCE_LOSS_GRAD, 13, 3, (lt_value *[]){dl, x, t3}, NULL, NULL, NULL, 0),
                     LT_ERR_INVALID);
    lt_value_free(t3);
    lt_value_free(w);
    lt_value_free(t2);
    lt_value_free(dl);
    lt_value_free(t);
    lt_value_free(x);
}

static void shape_rule(void **state)
{
    (void)state;
    lt_type dl = gm_type(LT_F32, 0, NULL), x = gm_type(LT_F32, 3, (int64_t[]){8, 5, 3});
    lt_type t = gm_type(LT_I64, 2, (int64_t[]){8, 3});
    for (int sce = 0; sce < 2; sce++) {
        lt_op op = sce ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD;
        lt_type o = gm_infer(op, 13, 3, (const lt_type *[]){&dl, &x, &t}, NULL, NULL, LT_OK);
        gm_assert_type(&o, LT_F32, 3, (int64_t[]){8, 5, 3});
        lt_type bad = gm_type(LT_F32, 1, (int64_t[]){8});
        gm_infer(op, 13, 3, (const lt_type *[]){&dl, &bad, &t}, NULL, NULL, LT_ERR_INVALID);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fd_all_variants), cmocka_unit_test(hand_values), cmocka_unit_test(all_ignored_mean),
        cmocka_unit_test(narrow_types),    cmocka_unit_test(bad_input),   cmocka_unit_test(shape_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
