/* Random ops: shapes and types, seeded reproducibility, and sample moments
 * within generous bounds (several standard errors). */
#include "testutil.h"
#include "ir/infer.h"
#include <math.h>
#include <string.h>

static lt_value *run_ok(tu_graph *g, lt_value **in)
{
    lt_value *out[1] = {0};
    lt_err err;
    if (tu_run(g, in, out, &err) != LT_OK)
        fail_msg("run failed: %s", err.msg);
    return out[0];
}

static void moments(const lt_value *v, double *mean, double *sd)
{
    double s = 0, s2 = 0;
    int64_t n = v->t.numel;
    for (int64_t i = 0; i < n; i++) {
        double x = tu_get(v, i);
        s += x;
        s2 += x * x;
    }
    *mean = s / n;
    *sd = sqrt(s2 / n - *mean * *mean);
}

static lt_value *normal(float seed, bool with_seed)
{
    tu_graph g = tu_single(LT_OP_RANDOM_NORMAL, 1, 0, 1);
    tu_attr_ints(&g, "shape", 2, (int64_t[]){200, 100});
    tu_attr_float(&g, "mean", 2.0f);
    tu_attr_float(&g, "scale", 0.5f);
    if (with_seed)
        tu_attr_float(&g, "seed", seed);
    lt_value *y = run_ok(&g, NULL);
    tu_free(&g);
    return y;
}

static void random_normal(void **state)
{
    (void)state;
    lt_value *a = normal(3.0f, true), *b = normal(3.0f, true), *c = normal(4.0f, true);
    assert_int_equal(a->t.dtype, LT_F32);
    assert_int_equal(a->t.rank, 2);
    assert_int_equal(a->t.dims[1], 100);
    assert_memory_equal(a->t.data, b->t.data, 20000 * sizeof(float));
    assert_memory_not_equal(a->t.data, c->t.data, 20000 * sizeof(float));
    double m, sd;
    moments(a, &m, &sd);
    assert_true(fabs(m - 2.0) < 0.025);
    assert_true(fabs(sd - 0.5) < 0.025);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
    a = normal(0, false); /* no seed: the executor's stream */
    moments(a, &m, &sd);
    assert_true(fabs(m - 2.0) < 0.025);
    lt_value_free(a);
}

static void random_uniform_and_like(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_RANDOM_UNIFORM, 1, 0, 1);
    tu_attr_ints(&g, "shape", 1, (int64_t[]){20000});
    tu_attr_float(&g, "low", -1.0f);
    tu_attr_float(&g, "high", 3.0f);
    tu_attr_int(&g, "dtype", LT_F64);
    lt_value *y = run_ok(&g, NULL);
    tu_free(&g);
    assert_int_equal(y->t.dtype, LT_F64);
    double lo = 1e9, hi = -1e9, m, sd;
    for (int64_t i = 0; i < y->t.numel; i++) {
        lo = fmin(lo, tu_get(y, i));
        hi = fmax(hi, tu_get(y, i));
    }
    assert_true(lo >= -1.0 && lo < -0.99 && hi < 3.0 && hi > 2.99);
    moments(y, &m, &sd);
    assert_true(fabs(m - 1.0) < 0.06);
    lt_value_free(y);

    /* Like: the input's shape, its dtype unless the attribute says otherwise */
    lt_value *x = tu_rand(LT_F16, 2, (int64_t[]){3, 7}, -1, 1, 5);
    for (int over = 0; over < 2; over++) {
        g = tu_single(LT_OP_RANDOM_UNIFORM_LIKE, 1, 1, 1);
        if (over)
            tu_attr_int(&g, "dtype", LT_F64);
        lt_value *in[1] = {x};
        y = run_ok(&g, in);
        assert_int_equal(y->t.dtype, over ? LT_F64 : LT_F16);
        assert_int_equal(y->t.dims[1], 7);
        for (int64_t i = 0; i < y->t.numel; i++)
            assert_true(tu_get(y, i) >= 0 && tu_get(y, i) <= 1);
        lt_value_free(y);
        tu_free(&g);
    }
    lt_value_free(x);
    /* an integer input without dtype has no float type to produce */
    x = tu_rand(LT_I32, 1, (int64_t[]){4}, 0, 5, 6);
    g = tu_single(LT_OP_RANDOM_NORMAL_LIKE, 1, 1, 1);
    lt_value *in[1] = {x}, *out[1] = {0};
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
}

static void bernoulli(void **state)
{
    (void)state;
    /* probabilities 0 and 1 are exact */
    double p[6] = {0, 1, 1, 0, 1, 0};
    lt_value *x = tu_from(LT_F64, 1, (int64_t[]){6}, p);
    tu_graph g = tu_single(LT_OP_BERNOULLI, 15, 1, 1);
    tu_attr_int(&g, "dtype", LT_BOOL);
    lt_value *in[1] = {x}, *y = run_ok(&g, in);
    assert_int_equal(y->t.dtype, LT_BOOL);
    tu_assert_close(y, p, 6, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(x);
    tu_free(&g);
    /* 0.3 on many draws, float output like the input, seeded: reproducible */
    x = tu_rand(LT_F32, 1, (int64_t[]){20000}, 0.3, 0.3, 0);
    lt_value *ys[2];
    for (int r = 0; r < 2; r++) {
        g = tu_single(LT_OP_BERNOULLI, 15, 1, 1);
        tu_attr_float(&g, "seed", 7.0f);
        in[0] = x;
        ys[r] = run_ok(&g, in);
        tu_free(&g);
    }
    assert_int_equal(ys[0]->t.dtype, LT_F32);
    assert_memory_equal(ys[0]->t.data, ys[1]->t.data, 20000 * sizeof(float));
    double m, sd;
    moments(ys[0], &m, &sd);
    assert_true(fabs(m - 0.3) < 0.02);
    lt_value_free(ys[0]);
    lt_value_free(ys[1]);
    lt_value_free(x);
}

static void multinomial(void **state)
{
    (void)state;
    double lp[8] = {-INFINITY, -INFINITY, 0.5, -INFINITY, log(0.1), log(0.2), log(0.3), log(0.4)};
    lt_value *x = tu_from(LT_F32, 2, (int64_t[]){2, 4}, lp);
    tu_graph g = tu_single(LT_OP_MULTINOMIAL, 7, 1, 1);
    tu_attr_int(&g, "sample_size", 20000);
    tu_attr_int(&g, "dtype", LT_I64);
    tu_attr_float(&g, "seed", 1.0f);
    lt_value *in[1] = {x}, *y = run_ok(&g, in);
    assert_int_equal(y->t.dtype, LT_I64);
    assert_int_equal(y->t.dims[0], 2);
    assert_int_equal(y->t.dims[1], 20000);
    double freq[4] = {0};
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(tu_get(y, i), 2);
        freq[(int)tu_get(y, 20000 + i)] += 1.0 / 20000;
    }
    for (int c = 0; c < 4; c++)
        assert_true(fabs(freq[c] - 0.1 * (c + 1)) < 0.02);
    lt_value_free(y);
    lt_value_free(x);
    tu_free(&g);
}

static void infer_types(void **state)
{
    (void)state;
    lt_err err;
    tu_graph g = tu_single(LT_OP_RANDOM_NORMAL, 1, 0, 1);
    tu_attr_ints(&g, "shape", 3, (int64_t[]){2, 0, 5});
    tu_attr_int(&g, "dtype", LT_F16);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    const lt_type *t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_F16);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->dims[2].v, 5);
    tu_free(&g);
    g = tu_single(LT_OP_MULTINOMIAL, 7, 1, 1);
    tu_attr_int(&g, "sample_size", 9);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 2, (int64_t[]){4, 10});
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_I32);
    assert_int_equal(t->dims[0].v, 4);
    assert_int_equal(t->dims[1].v, 9);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_normal), cmocka_unit_test(random_uniform_and_like), cmocka_unit_test(bernoulli),
        cmocka_unit_test(multinomial),   cmocka_unit_test(infer_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
