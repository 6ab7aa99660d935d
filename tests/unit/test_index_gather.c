/* Gather, GatherElements, GatherND against straightforward loops in double,
 * plus bounds errors and shape inference. */
#include "testutil.h"
#include "ir/infer.h"
#include <string.h>

static int64_t wrap(int64_t v, int64_t n) { return v < 0 ? v + n : v; }

/* Runs g on inputs; asserts success and returns output 0. */
static lt_value *run_ok(tu_graph *g, lt_value **in)
{
    lt_value *out[4] = {0};
    lt_err err;
    lt_status s = tu_run(g, in, out, &err);
    if (s != LT_OK)
        fail_msg("run failed: %s", err.msg);
    return out[0];
}

/* Runs g on inputs; asserts an invalid-input error (an index out of range:
 * bad data, exit 2 from the CLI) whose message contains want. */
static void run_fails(tu_graph *g, lt_value **in, const char *want)
{
    lt_value *out[4] = {0};
    lt_err err;
    lt_status s = tu_run(g, in, out, &err);
    assert_int_equal(s, LT_ERR_INVALID);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
}

static void gather_axis1_negative(void **state)
{
    (void)state;
    uint64_t seed = 11;
    int64_t xd[3] = {3, 4, 5}, id[2] = {2, 3};
    lt_value *x = tu_rand(LT_F32, 3, xd, -2, 2, seed), *ind = tu_rand(LT_I64, 2, id, -4, 4, seed + 1);
    tu_graph g = tu_single(LT_OP_GATHER, 13, 2, 1);
    tu_attr_int(&g, "axis", -2);
    lt_value *in[2] = {x, ind}, *y = run_ok(&g, in);
    double want[3 * 6 * 5];
    int p = 0;
    for (int a = 0; a < 3; a++)
        for (int j = 0; j < 6; j++)
            for (int c = 0; c < 5; c++)
                want[p++] = tu_get(x, (a * 4 + wrap((int64_t)tu_get(ind, j), 4)) * 5 + c);
    assert_int_equal(y->t.rank, 4);
    assert_int_equal(y->t.dims[1], 2);
    assert_int_equal(y->t.dims[2], 3);
    tu_assert_close(y, want, 90, 0, 0, seed);
    lt_value_free(y);
    lt_value_free(x);
    lt_value_free(ind);
    tu_free(&g);
}

/* int32 indices, 1-byte and 8-byte data, scalar index drops the axis */
static void gather_types_scalar_index(void **state)
{
    (void)state;
    int64_t xd[2] = {4, 3};
    lt_value *x8 = tu_rand(LT_U8, 2, xd, 0, 250, 3), *x64 = tu_rand(LT_I64, 2, xd, -1e6, 1e6, 4);
    lt_value *ind = tu_from(LT_I32, 0, NULL, (double[]){-1});
    lt_value *xs[2] = {x8, x64};
    for (int t = 0; t < 2; t++) {
        tu_graph g = tu_single(LT_OP_GATHER, 11, 2, 1);
        lt_value *in[2] = {xs[t], ind}, *y = run_ok(&g, in);
        assert_int_equal(y->t.rank, 1);
        assert_int_equal(y->t.dtype, xs[t]->t.dtype);
        double want[3] = {tu_get(xs[t], 9), tu_get(xs[t], 10), tu_get(xs[t], 11)};
        tu_assert_close(y, want, 3, 0, 0, 3);
        lt_value_free(y);
        tu_free(&g);
    }
    lt_value_free(x8);
    lt_value_free(x64);
    lt_value_free(ind);
}

/* big enough for the parallel path; inner size 1 (last axis) */
static void gather_large_last_axis(void **state)
{
    (void)state;
    int64_t xd[2] = {300, 200}, id[1] = {150};
    lt_value *x = tu_rand(LT_F32, 2, xd, -1, 1, 21), *ind = tu_rand(LT_I32, 1, id, -200, 200, 22);
    tu_graph g = tu_single(LT_OP_GATHER, 13, 2, 1);
    tu_attr_int(&g, "axis", 1);
    lt_value *in[2] = {x, ind}, *y = run_ok(&g, in);
    static double want[300 * 150];
    for (int a = 0; a < 300; a++)
        for (int j = 0; j < 150; j++)
            want[a * 150 + j] = tu_get(x, a * 200 + wrap((int64_t)tu_get(ind, j), 200));
    tu_assert_close(y, want, 300 * 150, 0, 0, 21);
    lt_value_free(y);
    lt_value_free(x);
    lt_value_free(ind);
    tu_free(&g);
}

static void gather_out_of_range(void **state)
{
    (void)state;
    int64_t xd[2] = {3, 2}, id[1] = {3};
    lt_value *x = tu_rand(LT_F32, 2, xd, -1, 1, 5), *ind = tu_from(LT_I64, 1, id, (double[]){0, 3, 1});
    tu_graph g = tu_single(LT_OP_GATHER, 13, 2, 1);
    lt_value *in[2] = {x, ind};
    run_fails(&g, in, "index 3");
    lt_value_free(ind);
    ind = tu_from(LT_I64, 1, id, (double[]){0, -4, 1});
    in[1] = ind;
    run_fails(&g, in, "size 3");
    lt_value_free(x);
    lt_value_free(ind);
    tu_free(&g);
}

static void gather_elements_narrow(void **state)
{
    (void)state;
    uint64_t seed = 31;
    /* indices narrower than data on the non-axis dims */
    int64_t xd[3] = {4, 5, 6}, id[3] = {3, 7, 4};
    lt_value *x = tu_rand(LT_F64, 3, xd, -5, 5, seed), *ind = tu_rand(LT_I64, 3, id, -5, 5, seed + 1);
    tu_graph g = tu_single(LT_OP_GATHER_ELEMENTS, 13, 2, 1);
    tu_attr_int(&g, "axis", 1);
    lt_value *in[2] = {x, ind}, *y = run_ok(&g, in);
    double want[3 * 7 * 4];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 7; b++)
            for (int c = 0; c < 4; c++) {
                int64_t p = (a * 7 + b) * 4 + c, j = wrap((int64_t)tu_get(ind, p), 5);
                want[p] = tu_get(x, (a * 5 + j) * 6 + c);
            }
    tu_assert_close(y, want, 84, 0, 0, seed);
    assert_int_equal(y->t.dims[1], 7);
    lt_value_free(y);
    lt_value_free(ind);
    ind = tu_from(LT_I64, 3, (int64_t[]){1, 1, 1}, (double[]){5});
    in[1] = ind;
    run_fails(&g, in, "index 5");
    lt_value_free(x);
    lt_value_free(ind);
    tu_free(&g);
}

static void gather_nd_batch(void **state)
{
    (void)state;
    uint64_t seed = 41;
    /* data [2,3,4,5], indices [2,6,2], batch_dims 1 -> output [2,6,5] */
    int64_t xd[4] = {2, 3, 4, 5}, id[3] = {2, 6, 2};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, seed);
    lt_value *ind = tu_rand(LT_I32, 3, id, -3, 3, seed + 1);
    tu_graph g = tu_single(LT_OP_GATHER_ND, 13, 2, 1);
    tu_attr_int(&g, "batch_dims", 1);
    lt_value *in[2] = {x, ind}, *y = run_ok(&g, in);
    double want[2 * 6 * 5];
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 6; t++) {
            int64_t i0 = wrap((int64_t)tu_get(ind, (b * 6 + t) * 2), 3);
            int64_t i1 = wrap((int64_t)tu_get(ind, (b * 6 + t) * 2 + 1), 4);
            for (int c = 0; c < 5; c++)
                want[(b * 6 + t) * 5 + c] = tu_get(x, ((b * 3 + i0) * 4 + i1) * 5 + c);
        }
    assert_int_equal(y->t.rank, 3);
    tu_assert_close(y, want, 60, 0, 0, seed);
    lt_value_free(y);
    lt_value_free(ind);
    /* second component out of range for dim size 4 */
    ind = tu_from(LT_I64, 3, (int64_t[]){2, 1, 2}, (double[]){0, 1, 2, 4});
    in[1] = ind;
    run_fails(&g, in, "index 4");
    lt_value_free(x);
    lt_value_free(ind);
    tu_free(&g);
}

static void gather_nd_full_tuples(void **state)
{
    (void)state;
    /* the spec's example 2: data [[0,1],[2,3]], indices [[1],[0]] -> rows */
    lt_value *x = tu_from(LT_I32, 2, (int64_t[]){2, 2}, (double[]){0, 1, 2, 3});
    lt_value *ind = tu_from(LT_I64, 2, (int64_t[]){2, 1}, (double[]){1, 0});
    tu_graph g = tu_single(LT_OP_GATHER_ND, 11, 2, 1);
    lt_value *in[2] = {x, ind}, *y = run_ok(&g, in);
    tu_assert_close(y, (double[]){2, 3, 0, 1}, 4, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(ind);
    ind = tu_from(LT_I64, 2, (int64_t[]){2, 2}, (double[]){0, 0, 1, 1});
    in[1] = ind;
    y = run_ok(&g, in);
    tu_assert_close(y, (double[]){0, 3}, 2, 0, 0, 0);
    assert_int_equal(y->t.rank, 1);
    lt_value_free(y);
    lt_value_free(x);
    lt_value_free(ind);
    tu_free(&g);
}

/* Output types the rules give for known input shapes. */
static void infer_shapes(void **state)
{
    (void)state;
    lt_err err;
    tu_graph g = tu_single(LT_OP_GATHER, 13, 2, 1);
    tu_attr_int(&g, "axis", 1);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F16, 3, (int64_t[]){2, 3, 4});
    lt_type_tensor(&g.m->main->params[1]->type, LT_I64, 2, (int64_t[]){5, 6});
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    const lt_type *t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_F16);
    assert_int_equal(t->rank, 4);
    assert_int_equal(t->dims[0].v, 2);
    assert_int_equal(t->dims[1].v, 5);
    assert_int_equal(t->dims[2].v, 6);
    assert_int_equal(t->dims[3].v, 4);
    tu_free(&g);

    g = tu_single(LT_OP_GATHER_ND, 13, 2, 1);
    tu_attr_int(&g, "batch_dims", 1);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 4, (int64_t[]){2, 3, 4, 5});
    lt_type_tensor(&g.m->main->params[1]->type, LT_I64, 3, (int64_t[]){2, 6, 2});
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    t = &g.node->out[0]->type;
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->dims[1].v, 6);
    assert_int_equal(t->dims[2].v, 5);
    tu_free(&g);

    /* float indices are a definite error */
    g = tu_single(LT_OP_GATHER_ELEMENTS, 13, 2, 1);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 1, (int64_t[]){4});
    lt_type_tensor(&g.m->main->params[1]->type, LT_F32, 1, (int64_t[]){4});
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gather_axis1_negative),  cmocka_unit_test(gather_types_scalar_index),
        cmocka_unit_test(gather_large_last_axis), cmocka_unit_test(gather_out_of_range),
        cmocka_unit_test(gather_elements_narrow), cmocka_unit_test(gather_nd_batch),
        cmocka_unit_test(gather_nd_full_tuples),  cmocka_unit_test(infer_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
