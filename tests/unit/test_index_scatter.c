/* Scatter, ScatterElements and ScatterND with every reduction against
 * sequential loops in double, duplicates included; bounds errors. */
#include "testutil.h"
#include <string.h>

static int64_t wrap(int64_t v, int64_t n) { return v < 0 ? v + n : v; }

static const char *const reds[] = {"none", "add", "mul", "max", "min"};

static double combine(int r, double a, double b)
{
    switch (r) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return b > a ? b : a;
    case 4: return b < a ? b : a;
    default: return b;
    }
}

static lt_value *run_ok(tu_graph *g, lt_value **in)
{
    lt_value *out[2] = {0};
    lt_err err;
    if (tu_run(g, in, out, &err) != LT_OK)
        fail_msg("run failed: %s", err.msg);
    return out[0];
}

/* ScatterElements on [4,5,3] along axis 1 with indices [4,6,2] (repeats
 * guaranteed: 6 > 5), every reduction, f32 and i32. */
static void scatter_elements_reductions(void **state)
{
    (void)state;
    int64_t xd[3] = {4, 5, 3}, id[3] = {4, 6, 2};
    lt_dtype types[2] = {LT_F32, LT_I32};
    for (int ti = 0; ti < 2; ti++)
        for (int r = 0; r < 5; r++) {
            uint64_t seed = 100 + ti * 10 + r;
            lt_value *x = tu_rand(types[ti], 3, xd, -4, 4, seed);
            lt_value *ind = tu_rand(LT_I64, 3, id, -5, 5, seed + 1);
            lt_value *u = tu_rand(types[ti], 3, id, -4, 4, seed + 2);
            tu_graph g = tu_single(LT_OP_SCATTER_ELEMENTS, 18, 3, 1);
            tu_attr_int(&g, "axis", -2);
            tu_attr_str(&g, "reduction", reds[r]);
            lt_value *in[3] = {x, ind, u}, *y = run_ok(&g, in);
            double want[60];
            for (int i = 0; i < 60; i++)
                want[i] = tu_get(x, i);
            for (int a = 0; a < 4; a++)
                for (int j = 0; j < 6; j++)
                    for (int c = 0; c < 2; c++) {
                        int64_t p = (a * 6 + j) * 2 + c, w = wrap((int64_t)tu_get(ind, p), 5);
                        int64_t q = (a * 5 + w) * 3 + c;
                        want[q] = combine(r, want[q], tu_get(u, p));
                    }
            tu_assert_close(y, want, 60, 1e-6, 1e-6, seed);
            lt_value_free(y);
            lt_value_free(x);
            lt_value_free(ind);
            lt_value_free(u);
            tu_free(&g);
        }
}

/* The deprecated Scatter (opset 9) and the spec's ScatterElements example 2. */
static void scatter_opset9_example(void **state)
{
    (void)state;
    lt_value *x = tu_from(LT_F32, 2, (int64_t[]){1, 5}, (double[]){1, 2, 3, 4, 5});
    lt_value *ind = tu_from(LT_I64, 2, (int64_t[]){1, 2}, (double[]){1, 3});
    lt_value *u = tu_from(LT_F32, 2, (int64_t[]){1, 2}, (double[]){1.1, 2.1});
    tu_graph g = tu_single(LT_OP_SCATTER, 9, 3, 1);
    tu_attr_int(&g, "axis", 1);
    lt_value *in[3] = {x, ind, u}, *y = run_ok(&g, in);
    tu_assert_close(y, (double[]){1, 1.1, 3, 2.1, 5}, 5, 1e-6, 0, 0);
    lt_value_free(y);
    tu_free(&g);
    /* bool data, add = or */
    lt_value *xb = tu_from(LT_BOOL, 1, (int64_t[]){4}, (double[]){0, 1, 0, 0});
    lt_value *ib = tu_from(LT_I32, 1, (int64_t[]){3}, (double[]){2, 2, 1});
    lt_value *ub = tu_from(LT_BOOL, 1, (int64_t[]){3}, (double[]){1, 1, 0});
    g = tu_single(LT_OP_SCATTER_ELEMENTS, 16, 3, 1);
    tu_attr_str(&g, "reduction", "add");
    lt_value *inb[3] = {xb, ib, ub};
    y = run_ok(&g, inb);
    tu_assert_close(y, (double[]){0, 1, 1, 0}, 4, 0, 0, 0);
    lt_value_free(y);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(ind);
    lt_value_free(u);
    lt_value_free(xb);
    lt_value_free(ib);
    lt_value_free(ub);
}

/* ScatterND on [5,4,3] with 2-tuples (slices of 3), repeats, every reduction. */
static void scatter_nd_reductions(void **state)
{
    (void)state;
    int64_t xd[3] = {5, 4, 3}, id[3] = {3, 4, 2}, ud[3] = {3, 4, 3};
    for (int r = 0; r < 5; r++) {
        uint64_t seed = 200 + r;
        lt_value *x = tu_rand(LT_F64, 3, xd, -3, 3, seed);
        lt_value *ind = tu_rand(LT_I64, 3, id, -2, 2, seed + 1); /* few distinct tuples: many repeats */
        lt_value *u = tu_rand(LT_F64, 3, ud, -3, 3, seed + 2);
        tu_graph g = tu_single(LT_OP_SCATTER_ND, 18, 3, 1);
        if (r)
            tu_attr_str(&g, "reduction", reds[r]);
        lt_value *in[3] = {x, ind, u}, *y = run_ok(&g, in);
        double want[60];
        for (int i = 0; i < 60; i++)
            want[i] = tu_get(x, i);
        for (int t = 0; t < 12; t++) {
            int64_t i0 = wrap((int64_t)tu_get(ind, 2 * t), 5), i1 = wrap((int64_t)tu_get(ind, 2 * t + 1), 4);
            for (int c = 0; c < 3; c++)
                want[(i0 * 4 + i1) * 3 + c] = combine(r, want[(i0 * 4 + i1) * 3 + c], tu_get(u, t * 3 + c));
        }
        tu_assert_close(y, want, 60, 1e-12, 1e-12, seed);
        lt_value_free(y);
        lt_value_free(x);
        lt_value_free(ind);
        lt_value_free(u);
        tu_free(&g);
    }
}

static void scatter_bounds(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){3, 3}, -1, 1, 7);
    lt_value *ind = tu_from(LT_I64, 2, (int64_t[]){1, 2}, (double[]){0, -4});
    lt_value *u = tu_rand(LT_F32, 2, (int64_t[]){1, 2}, -1, 1, 8);
    lt_value *in[3] = {x, ind, u}, *out[1] = {0};
    lt_err err;
    tu_graph g = tu_single(LT_OP_SCATTER_ELEMENTS, 13, 3, 1);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "-4"));
    tu_free(&g);

    lt_value *ind2 = tu_from(LT_I64, 2, (int64_t[]){1, 2}, (double[]){1, 3});
    lt_value *u2 = tu_rand(LT_F32, 1, (int64_t[]){1}, -1, 1, 9);
    lt_value *in2[3] = {x, ind2, u2};
    g = tu_single(LT_OP_SCATTER_ND, 13, 3, 1);
    assert_int_equal(tu_run(&g, in2, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "index 3"));
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(ind);
    lt_value_free(u);
    lt_value_free(ind2);
    lt_value_free(u2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scatter_elements_reductions),
        cmocka_unit_test(scatter_opset9_example),
        cmocka_unit_test(scatter_nd_reductions),
        cmocka_unit_test(scatter_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
