/* OneHot, Trilu, Compress and NonZero against loops in double. */
#include "testutil.h"
#include <string.h>

static lt_value *run_ok(tu_graph *g, lt_value **in)
{
    lt_value *out[2] = {0};
    lt_err err;
    if (tu_run(g, in, out, &err) != LT_OK)
        fail_msg("run failed: %s", err.msg);
    return out[0];
}

static void one_hot_float_indices(void **state)
{
    (void)state;
    /* float indices truncate; -4 wraps to 0; 5 and -5 are out of [-4, 4): all off */
    double iv[6] = {0, 2, -1, 5, 1.7, -4};
    lt_value *ind = tu_from(LT_F32, 2, (int64_t[]){2, 3}, iv);
    lt_value *depth = tu_from(LT_F64, 1, (int64_t[]){1}, (double[]){4.0});
    lt_value *val = tu_from(LT_I64, 1, (int64_t[]){2}, (double[]){-2, 7});
    tu_graph g = tu_single(LT_OP_ONE_HOT, 11, 3, 1);
    tu_attr_int(&g, "axis", 1);
    lt_value *in[3] = {ind, depth, val}, *y = run_ok(&g, in);
    assert_int_equal(y->t.dtype, LT_I64);
    assert_int_equal(y->t.rank, 3);
    assert_int_equal(y->t.dims[1], 4);
    int hot[6] = {0, 2, 3, -1, 1, 0};
    double want[24];
    for (int a = 0; a < 2; a++)
        for (int d = 0; d < 4; d++)
            for (int c = 0; c < 3; c++)
                want[(a * 4 + d) * 3 + c] = hot[a * 3 + c] == d ? 7 : -2;
    tu_assert_close(y, want, 24, 0, 0, 0);
    lt_value_free(y);
    tu_free(&g);
    /* default axis -1: depth innermost; int32 depth as a scalar */
    lt_value *depth2 = tu_from(LT_I32, 0, NULL, (double[]){3});
    lt_value *ind2 = tu_from(LT_I64, 1, (int64_t[]){3}, (double[]){2, -3, 3});
    lt_value *val2 = tu_from(LT_F32, 1, (int64_t[]){2}, (double[]){0.5, 1.5});
    g = tu_single(LT_OP_ONE_HOT, 9, 3, 1);
    lt_value *in2[3] = {ind2, depth2, val2};
    y = run_ok(&g, in2);
    /* opset 9 has no negative indices: -3 selects nothing */
    tu_assert_close(y, (double[]){.5, .5, 1.5, .5, .5, .5, .5, .5, .5}, 9, 0, 0, 0);
    lt_value_free(y);
    g.node->opset = 11;
    y = run_ok(&g, in2);
    tu_assert_close(y, (double[]){.5, .5, 1.5, 1.5, .5, .5, .5, .5, .5}, 9, 0, 0, 0);
    lt_value_free(y);
    tu_free(&g);
    lt_value_free(ind);
    lt_value_free(depth);
    lt_value_free(val);
    lt_value_free(ind2);
    lt_value_free(depth2);
    lt_value_free(val2);
}

static void trilu_all_k(void **state)
{
    (void)state;
    int64_t xd[3] = {2, 4, 5};
    int64_t ks[6] = {-6, -1, 0, 2, 7, INT64_MAX};
    for (int up = 0; up < 2; up++)
        for (int ki = 0; ki < 7; ki++) { /* ki == 6: k omitted */
            uint64_t seed = 300 + up * 10 + ki;
            lt_value *x = tu_rand(LT_F32, 3, xd, 1, 2, seed);
            lt_value *k = ki < 6 ? tu_from(LT_I64, 0, NULL, (double[]){0}) : NULL;
            if (k)
                ((int64_t *)k->t.data)[0] = ks[ki];
            tu_graph g = tu_single(LT_OP_TRILU, 14, k ? 2 : 1, 1); /* one input: k absent */
            tu_attr_int(&g, "upper", up);
            lt_value *in[2] = {x, k}, *y = run_ok(&g, in);
            int64_t kv = k ? ks[ki] : 0;
            double want[40];
            for (int b = 0; b < 2; b++)
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 5; j++) {
                        int p = (b * 4 + i) * 5 + j;
                        bool keep = up ? (double)j - i >= (double)kv : (double)j - i <= (double)kv;
                        want[p] = keep ? tu_get(x, p) : 0;
                    }
            tu_assert_close(y, want, 40, 0, 0, seed);
            lt_value_free(y);
            lt_value_free(x);
            lt_value_free(k);
            tu_free(&g);
        }
}

static void compress_cases(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_I16, 2, (int64_t[]){3, 4}, -100, 100, 51);
    /* axis 1, condition shorter than the axis */
    lt_value *c = tu_from(LT_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1});
    tu_graph g = tu_single(LT_OP_COMPRESS, 11, 2, 1);
    tu_attr_int(&g, "axis", -1);
    lt_value *in[2] = {x, c}, *y = run_ok(&g, in);
    assert_int_equal(y->t.dims[0], 3);
    assert_int_equal(y->t.dims[1], 2);
    double want[6];
    for (int i = 0; i < 3; i++) {
        want[2 * i] = tu_get(x, 4 * i);
        want[2 * i + 1] = tu_get(x, 4 * i + 2);
    }
    tu_assert_close(y, want, 6, 0, 0, 51);
    lt_value_free(y);
    tu_free(&g);
    lt_value_free(c);
    /* no axis: flattened */
    c = tu_from(LT_BOOL, 1, (int64_t[]){12}, (double[]){0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    g = tu_single(LT_OP_COMPRESS, 9, 2, 1);
    in[1] = c;
    y = run_ok(&g, in);
    tu_assert_close(y, (double[]){tu_get(x, 1), tu_get(x, 2), tu_get(x, 11)}, 3, 0, 0, 51);
    lt_value_free(y);
    lt_value_free(c);
    /* true beyond the flattened size */
    c = tu_from(LT_BOOL, 1, (int64_t[]){13}, (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    in[1] = c;
    lt_value *out[1] = {0};
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "12"));
    tu_free(&g);
    lt_value_free(c);
    lt_value_free(x);
}

static void non_zero_order(void **state)
{
    (void)state;
    uint64_t seed = 61;
    int64_t xd[3] = {3, 4, 2};
    lt_value *x = tu_rand(LT_I32, 3, xd, -1, 2, seed); /* about a third are zero */
    tu_graph g = tu_single(LT_OP_NON_ZERO, 13, 1, 1);
    lt_value *in[1] = {x}, *y = run_ok(&g, in);
    double coords[3][24];
    int n = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 2; c++)
                if (tu_get(x, (a * 4 + b) * 2 + c) != 0) {
                    coords[0][n] = a;
                    coords[1][n] = b;
                    coords[2][n++] = c;
                }
    assert_true(n > 0 && n < 24);
    assert_int_equal(y->t.dtype, LT_I64);
    assert_int_equal(y->t.dims[0], 3);
    assert_int_equal(y->t.dims[1], n);
    double want[72];
    for (int d = 0; d < 3; d++)
        memcpy(want + d * n, coords[d], sizeof(double) * n);
    tu_assert_close(y, want, 3 * n, 0, 0, seed);
    lt_value_free(y);
    lt_value_free(x);
    /* float16 with a negative zero, which is zero */
    x = tu_from(LT_F16, 1, (int64_t[]){4}, (double[]){-0.0, 1.5, 0, -2});
    in[0] = x;
    y = run_ok(&g, in);
    tu_assert_close(y, (double[]){1, 3}, 2, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(x);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_hot_float_indices),
        cmocka_unit_test(trilu_all_k),
        cmocka_unit_test(compress_cases),
        cmocka_unit_test(non_zero_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
