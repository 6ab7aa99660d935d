/* ReduceSumLike: finite differences through Expand (whose gradient it is)
 * in float64, a direct broadcasting-sum loop for float32/float64 at sizes
 * that take each parallel path, integer wrapping, float16, shapes that
 * cannot be summed, and the shape rule. */
#include "test_grad_misc.h"

/* want[like index] += g[p], like lined up with g from the right. */
static double *ref_sum_like(const lt_value *g, int rl, const int64_t *ld)
{
    int64_t ln = 1;
    for (int d = 0; d < rl; d++)
        ln *= ld[d];
    double *want = calloc((size_t)(ln ? ln : 1), sizeof(double));
    const lt_tensor *t = &g->t;
    for (int64_t p = 0; p < t->numel; p++) {
        int64_t rem = p, li = 0, ls = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            int64_t c = rem % t->dims[d];
            rem /= t->dims[d];
            int dl = d - (t->rank - rl);
            if (dl >= 0) {
                li += (ld[dl] == 1 ? 0 : c) * ls;
                ls *= ld[dl];
            }
        }
        want[li] += lt_tensor_get_f64(t, p);
    }
    return want;
}

static lt_value *sum_like(lt_value *g, lt_value *like)
{
    return gm_run(LT_OP_REDUCE_SUM_LIKE, 1, 2, (lt_value *[]){g, like}, NULL, NULL, NULL);
}

typedef struct {
    int gr;
    int64_t gd[5];
    int lr;
    int64_t ld[5];
} shape_case;

static void fd_through_expand(void **state)
{
    (void)state;
    static const shape_case cases[] = {
        {3, {4, 3, 5}, 2, {3, 1}},    {3, {4, 3, 5}, 3, {1, 3, 1}}, {3, {4, 3, 5}, 0, {0}},
        {3, {4, 3, 5}, 3, {4, 1, 5}}, {3, {4, 3, 5}, 1, {5}},       {3, {4, 3, 5}, 3, {4, 3, 5}},
        {3, {6, 1, 4}, 3, {1, 1, 4}}, {4, {2, 3, 2, 3}, 4, {2, 1, 2, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const shape_case *sc = &cases[c];
        uint64_t seed = 100 + c;
        lt_value *x = tu_rand(LT_F64, sc->lr, sc->ld, -2, 2, seed);
        lt_value *shape = gm_vec(sc->gr, sc->gd);
        lt_value *dy = tu_rand(LT_F64, sc->gr, sc->gd, -1, 1, seed + 1);
        lt_value *grad = sum_like(dy, x);
        assert_int_equal(grad->t.rank, sc->lr);
        char name[64];
        snprintf(name, sizeof name, "ReduceSumLike case %zu wrt like", c);
        gm_fd f = {name, LT_OP_EXPAND, 13, 2, 0, (lt_value *[]){x, shape}, NULL, NULL};
        gm_fd_check(&f, dy, grad, 40, 1e-7, seed);
        lt_value_free(grad);
        lt_value_free(dy);
        lt_value_free(shape);
        lt_value_free(x);
    }
}

/* Sizes above the parallel threshold: partial sums over input chunks
 * (strong reductions) and output ranges (mild ones), inner axis kept or
 * reduced, in float32 and float64 against the double loop. */
static void big_against_loop(void **state)
{
    (void)state;
    static const shape_case cases[] = {
        {2, {256, 300}, 1, {300}},          {2, {256, 300}, 2, {256, 1}},
        {3, {64, 2, 300}, 3, {64, 1, 300}}, {3, {300, 64, 2}, 3, {300, 64, 1}},
        {4, {8, 16, 32, 32}, 3, {16, 1, 1}}, {1, {40000}, 0, {0}},
        {3, {7, 5000, 3}, 3, {7, 1, 3}},    {2, {3, 40000}, 2, {3, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const shape_case *sc = &cases[c];
        for (int f32 = 0; f32 < 2; f32++) {
            uint64_t seed = 200 + c;
            lt_value *g = tu_rand(f32 ? LT_F32 : LT_F64, sc->gr, sc->gd, -1, 1, seed);
            lt_value *like = tu_rand(LT_F32, sc->lr, sc->ld, 0, 1, seed + 1);
            lt_value *got = sum_like(g, like);
            assert_int_equal(got->t.dtype, g->t.dtype);
            assert_int_equal(got->t.rank, sc->lr);
            for (int d = 0; d < sc->lr; d++)
                assert_int_equal(got->t.dims[d], sc->ld[d]);
            double *want = ref_sum_like(g, sc->lr, sc->ld);
            tu_assert_close(got, want, like->t.numel, f32 ? 1e-5 : 1e-12, f32 ? 1e-4 : 1e-10, seed);
            free(want);
            lt_value_free(got);
            lt_value_free(like);
            lt_value_free(g);
        }
    }
}

static void int_and_half_types(void **state)
{
    (void)state;
    /* int32: exact sums */
    lt_value *g = tu_rand(LT_I32, 3, (int64_t[]){5, 4, 3}, -100, 100, 7);
    lt_value *like = tu_rand(LT_I32, 2, (int64_t[]){1, 3}, 0, 5, 8);
    lt_value *got = sum_like(g, like);
    assert_int_equal(got->t.dtype, LT_I32);
    double *want = ref_sum_like(g, 2, (int64_t[]){1, 3});
    tu_assert_close(got, want, 3, 0, 0, 7);
    free(want);
    lt_value_free(got);
    lt_value_free(like);
    lt_value_free(g);
    /* uint8 wraps as Add does: 3 * 200 = 600 = 88 (mod 256) */
    g = tu_from(LT_U8, 2, (int64_t[]){3, 2}, (double[]){200, 1, 200, 2, 200, 3});
    like = tu_from(LT_U8, 1, (int64_t[]){2}, (double[]){0, 0});
    got = sum_like(g, like);
    tu_assert_close(got, (double[]){88, 6}, 2, 0, 0, 0);
    lt_value_free(got);
    lt_value_free(like);
    lt_value_free(g);
    /* int64 beyond 2^53 */
    g = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&g->t, LT_I64, 1, (int64_t[]){2}, &err), LT_OK);
    ((int64_t *)g->t.data)[0] = ((int64_t)1 << 60) + 1;
    ((int64_t *)g->t.data)[1] = 2;
    like = tu_from(LT_I64, 0, NULL, (double[]){0});
    got = sum_like(g, like);
    assert_true(((int64_t *)got->t.data)[0] == ((int64_t)1 << 60) + 3);
    lt_value_free(got);
    lt_value_free(like);
    lt_value_free(g);
    /* float16 and bfloat16 through float32 */
    for (int bf = 0; bf < 2; bf++) {
        g = tu_rand(bf ? LT_BF16 : LT_F16, 2, (int64_t[]){6, 5}, -1, 1, 9);
        like = tu_rand(bf ? LT_BF16 : LT_F16, 1, (int64_t[]){5}, 0, 1, 10);
        got = sum_like(g, like);
        assert_int_equal(got->t.dtype, g->t.dtype);
        want = ref_sum_like(g, 1, (int64_t[]){5});
        tu_assert_close(got, want, 5, bf ? 1e-2 : 2e-3, bf ? 2e-2 : 4e-3, 9);
        free(want);
        lt_value_free(got);
        lt_value_free(like);
        lt_value_free(g);
    }
}

static void reshape_only_and_errors(void **state)
{
    (void)state;
    /* like with extra leading 1s: nothing to sum, g reshaped */
    lt_value *g = tu_rand(LT_F32, 1, (int64_t[]){3}, -1, 1, 11);
    lt_value *like = tu_rand(LT_F32, 3, (int64_t[]){1, 1, 3}, -1, 1, 12);
    lt_value *got = sum_like(g, like);
    assert_int_equal(got->t.rank, 3);
    double want[3] = {tu_get(g, 0), tu_get(g, 1), tu_get(g, 2)};
    tu_assert_close(got, want, 3, 0, 0, 11);
    lt_value_free(got);
    lt_value_free(like);
    /* an empty reduced axis gives zeros */
    lt_value *e = tu_rand(LT_F32, 2, (int64_t[]){0, 3}, -1, 1, 13);
    like = tu_rand(LT_F32, 1, (int64_t[]){3}, -1, 1, 14);
    got = sum_like(e, like);
    tu_assert_close(got, (double[]){0, 0, 0}, 3, 0, 0, 13);
    lt_value_free(got);
    lt_value_free(like);
    lt_value_free(e);
    /* shapes that do not broadcast */
    static const shape_case bad[] = {
        {2, {4, 3}, 2, {2, 3}}, {2, {4, 1}, 2, {4, 3}}, {1, {3}, 3, {2, 1, 3}}};
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        lt_value *gg = tu_rand(LT_F32, bad[c].gr, bad[c].gd, -1, 1, 15);
        lt_value *ll = tu_rand(LT_F32, bad[c].lr, bad[c].ld, -1, 1, 16);
        char msg[LT_ERR_MSG_MAX];
        assert_int_equal(gm_run_status(LT_OP_REDUCE_SUM_LIKE, 1, 2, (lt_value *[]){gg, ll}, NULL, NULL, msg,
                                       sizeof msg),
                         LT_ERR_INVALID);
        assert_non_null(strstr(msg, "ReduceSumLike"));
        lt_value_free(ll);
        lt_value_free(gg);
    }
    /* strings cannot be summed */
    lt_value *ss = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&ss->t, LT_STRING, 1, (int64_t[]){1}, &err), LT_OK);
    ((const char **)ss->t.data)[0] = lt_str_intern("a", 1);
    assert_int_equal(gm_run_status(LT_OP_REDUCE_SUM_LIKE, 1, 2, (lt_value *[]){ss, g}, NULL, NULL, NULL, 0),
                     LT_ERR_UNSUPPORTED);
    lt_value_free(ss);
    lt_value_free(g);
}

static void shape_rule(void **state)
{
    (void)state;
    lt_type g = gm_type(LT_F32, 3, (int64_t[]){4, 3, 5}), like = gm_type(LT_F32, 2, (int64_t[]){3, 1});
    lt_type t = gm_infer(LT_OP_REDUCE_SUM_LIKE, 1, 2, (const lt_type *[]){&g, &like}, NULL, NULL, LT_OK);
    gm_assert_type(&t, LT_F32, 2, (int64_t[]){3, 1});
    /* g's element type wins; like's shape stays even when g's is unknown */
    lt_type gu = gm_type(LT_F64, -1, NULL);
    t = gm_infer(LT_OP_REDUCE_SUM_LIKE, 1, 2, (const lt_type *[]){&gu, &like}, NULL, NULL, LT_OK);
    gm_assert_type(&t, LT_F64, 2, (int64_t[]){3, 1});
    /* a definite mismatch fails */
    lt_type bad = gm_type(LT_F32, 1, (int64_t[]){4});
    gm_infer(LT_OP_REDUCE_SUM_LIKE, 1, 2, (const lt_type *[]){&g, &bad}, NULL, NULL, LT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fd_through_expand),     cmocka_unit_test(big_against_loop),
        cmocka_unit_test(int_and_half_types),    cmocka_unit_test(reshape_only_and_errors),
        cmocka_unit_test(shape_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
