/* Elementwise integer and logic semantics: wrapping arithmetic, division by
 * zero and INT_MIN / -1 (no trap), Mod's sign rules, Pow across dtypes,
 * BitShift, bitwise and logical ops, comparisons. */
#include "test_elementwise.h"
#include <limits.h>

static lt_value *bin(lt_op op, int opset, lt_value *a, lt_value *b, lt_status want)
{
    lt_value *in[2] = {a, b};
    return ew_run(op, opset, 2, in, want);
}

static void wrapping_arith(void **state)
{
    (void)state;
    int64_t d[1] = {3};
    double a[3] = {INT32_MAX, INT32_MIN, 5}, b[3] = {1, 1, -7};
    lt_value *out = bin(LT_OP_ADD, 14, tu_from(LT_I32, 1, d, a), tu_from(LT_I32, 1, d, b), LT_OK);
    double w[3] = {INT32_MIN, INT32_MIN + 1, -2};
    tu_assert_close(out, w, 3, 0, 0, 0);
    lt_value_free(out);
    out = bin(LT_OP_SUB, 14, tu_from(LT_I32, 1, d, a), tu_from(LT_I32, 1, d, b), LT_OK);
    double ws[3] = {INT32_MAX - 1, INT32_MAX, 12};
    tu_assert_close(out, ws, 3, 0, 0, 0);
    lt_value_free(out);
    double u[3] = {65535, 300, 2}, v[3] = {65535, 300, 3};
    out = bin(LT_OP_MUL, 14, tu_from(LT_U16, 1, d, u), tu_from(LT_U16, 1, d, v), LT_OK);
    double wm[3] = {1, (300 * 300) % 65536, 6};
    tu_assert_close(out, wm, 3, 0, 0, 0);
    lt_value_free(out);
}

static void division(void **state)
{
    (void)state;
    int64_t d[4] = {4};
    double a[4] = {-7, 7, INT32_MIN, 9}, b[4] = {2, -2, -1, 3}, w[4] = {-3, -3, INT32_MIN, 3};
    lt_value *out = bin(LT_OP_DIV, 14, tu_from(LT_I32, 1, d, a), tu_from(LT_I32, 1, d, b), LT_OK);
    tu_assert_close(out, w, 4, 0, 0, 0);
    lt_value_free(out);
    /* a zero divisor fails with a message for every integer type */
    const lt_dtype dts[4] = {LT_I32, LT_I64, LT_U8, LT_I8};
    double z[4] = {1, 0, 2, 3};
    for (int t = 0; t < 4; t++) {
        assert_null(bin(LT_OP_DIV, 14, tu_from(dts[t], 1, d, b), tu_from(dts[t], 1, d, z), LT_ERR_INVALID));
        assert_null(bin(LT_OP_MOD, 13, tu_from(dts[t], 1, d, b), tu_from(dts[t], 1, d, z), LT_ERR_INVALID));
    }
    /* floats divide by zero to inf */
    out = bin(LT_OP_DIV, 14, tu_from(LT_F32, 1, d, a), tu_from(LT_F32, 1, d, z), LT_OK);
    assert_true(isinf(tu_get(out, 1)) && tu_get(out, 1) > 0);
    lt_value_free(out);
}

static double pymod(double x, double y)
{
    double r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

static void modulo(void **state)
{
    (void)state;
    int64_t d[1] = {200};
    const lt_dtype dts[4] = {LT_I32, LT_I64, LT_I8, LT_F32};
    for (int t = 0; t < 4; t++)
        for (int fm = 0; fm < 2; fm++) {
            uint64_t seed = 300 + (uint64_t)(t * 2 + fm);
            lt_value *a = tu_rand(dts[t], 1, d, -50, 50, seed), *b = tu_rand(dts[t], 1, d, 1, 9, seed + 1);
            /* mixed divisor signs: negate every other one */
            for (int i = 0; i < 200; i += 2)
                lt_tensor_set_f64(&b->t, i, -tu_get(b, i));
            double want[200];
            for (int i = 0; i < 200; i++) {
                double x = tu_get(a, i), y = tu_get(b, i);
                want[i] = fm ? fmod(x, y) : pymod(x, y);
            }
            tu_graph g = tu_single(LT_OP_MOD, 13, 2, 1);
            tu_attr_int(&g, "fmod", fm);
            lt_value *in[2] = {a, b};
            lt_value *out = ew_exec(&g, 2, in, LT_OK);
            tu_assert_close(out, want, 200, 1e-6, 1e-6, seed);
            lt_value_free(out);
            tu_free(&g);
        }
    /* INT64_MIN % -1 is 0, not a trap */
    int64_t d2[1] = {2};
    double x[2] = {(double)INT64_MIN, -9}, y[2] = {-1, -1}, w[2] = {0, 0};
    lt_value *out = bin(LT_OP_MOD, 13, tu_from(LT_I64, 1, d2, x), tu_from(LT_I64, 1, d2, y), LT_OK);
    tu_assert_close(out, w, 2, 0, 0, 0);
    lt_value_free(out);
}

static void power(void **state)
{
    (void)state;
    int64_t d[6] = {6};
    /* int ** int stays exact */
    double b[6] = {2, -3, 2, 1, -1, 7}, e[6] = {10, 3, -1, -5, -3, 0}, w[6] = {1024, -27, 0, 1, -1, 1};
    lt_value *out = bin(LT_OP_POW, 15, tu_from(LT_I32, 1, d, b), tu_from(LT_I64, 1, d, e), LT_OK);
    assert_int_equal(out->t.dtype, LT_I32);
    tu_assert_close(out, w, 6, 0, 0, 0);
    lt_value_free(out);
    /* int ** float goes through double and truncates */
    double ef[6] = {0.5, 2, 1.5, 3, 2, 0.5}, wf[6], bp[6] = {2, 3, 2, 1, 1, 7};
    for (int i = 0; i < 6; i++)
        wf[i] = trunc(pow(bp[i], ef[i]));
    out = bin(LT_OP_POW, 15, tu_from(LT_I64, 1, d, bp), tu_from(LT_F32, 1, d, ef), LT_OK);
    assert_int_equal(out->t.dtype, LT_I64);
    tu_assert_close(out, wf, 6, 0, 0, 0);
    lt_value_free(out);
    /* float ** float, float ** int, float16 ** float, scalar fast paths */
    int64_t dn[1] = {500}, d0[1] = {0};
    const lt_dtype bts[3] = {LT_F32, LT_F32, LT_F16}, ets[3] = {LT_F32, LT_I32, LT_F32};
    for (int c = 0; c < 3; c++) {
        lt_value *x = tu_rand(bts[c], 1, dn, 0.1, 3, 40 + c), *y = tu_rand(ets[c], 1, dn, -3, 3, 50 + c);
        double want[500];
        for (int i = 0; i < 500; i++)
            want[i] = pow(tu_get(x, i), tu_get(y, i));
        out = bin(LT_OP_POW, 15, x, y, LT_OK);
        assert_int_equal(out->t.dtype, bts[c]);
        tu_assert_close(out, want, 500, bts[c] == LT_F16 ? 2e-3 : 2e-6, 0, 40 + c);
        lt_value_free(out);
    }
    const double sc[4] = {2, 3, 1, 0.5};
    for (int c = 0; c < 4; c++) {
        lt_value *x = tu_rand(LT_F32, 1, dn, -3, 3, 60 + c);
        double want[500];
        for (int i = 0; i < 500; i++)
            want[i] = pow(tu_get(x, i), sc[c]);
        out = bin(LT_OP_POW, 15, x, tu_from(LT_F32, 0, d0, &sc[c]), LT_OK);
        for (int i = 0; i < 500; i++)
            if (isnan(want[i]))
                assert_true(isnan(tu_get(out, i)));
            else
                assert_true(fabs(tu_get(out, i) - want[i]) <= 2e-6 * fabs(want[i]));
        lt_value_free(out);
    }
}

static void shifts_and_bits(void **state)
{
    (void)state;
    int64_t d[4] = {4};
    double x[4] = {1, 255, 16, 3};
    const lt_dtype dts[3] = {LT_U8, LT_U32, LT_U64};
    const int width[3] = {8, 32, 64};
    for (int t = 0; t < 3; t++)
        for (int left = 0; left < 2; left++) {
            tu_graph g = tu_single(LT_OP_BIT_SHIFT, 11, 2, 1);
            tu_attr_str(&g, "direction", left ? "LEFT" : "RIGHT");
            double sh[4] = {3, 1, width[t] + 1.0, 0}, w[4];
            for (int i = 0; i < 4; i++) {
                uint64_t v = (uint64_t)x[i], n = (uint64_t)sh[i];
                uint64_t r = n >= (uint64_t)width[t] ? 0 : left ? v << n : v >> n;
                if (width[t] < 64)
                    r &= (1ull << width[t]) - 1;
                w[i] = (double)r;
            }
            lt_value *in[2] = {tu_from(dts[t], 1, d, x), tu_from(dts[t], 1, d, sh)};
            lt_value *out = ew_exec(&g, 2, in, LT_OK);
            tu_assert_close(out, w, 4, 0, 0, 0);
            lt_value_free(out);
            tu_free(&g);
        }
    double a[4] = {12, -1, 0, 85}, b[4] = {10, 7, 5, 51};
    const lt_op ops[3] = {LT_OP_BITWISE_AND, LT_OP_BITWISE_OR, LT_OP_BITWISE_XOR};
    for (int o = 0; o < 3; o++) {
        double w[4];
        for (int i = 0; i < 4; i++) {
            int16_t p = (int16_t)a[i], q = (int16_t)b[i];
            w[i] = o == 0 ? (p & q) : o == 1 ? (p | q) : (p ^ q);
        }
        lt_value *out = bin(ops[o], 18, tu_from(LT_I16, 1, d, a), tu_from(LT_I16, 1, d, b), LT_OK);
        tu_assert_close(out, w, 4, 0, 0, 0);
        lt_value_free(out);
    }
}

/* Signed BitShift (opset 28): arithmetic right shifts, left shifts dropping
 * what passes the sign bit, negative or too wide shifts leaving the sign
 * fill. Expected values worked out by hand in two's complement. */
static lt_value *shift(lt_dtype dt, int opset, bool left, int n, const double *x, const double *y, lt_status want)
{
    int64_t d[1] = {n};
    tu_graph g = tu_single(LT_OP_BIT_SHIFT, opset, 2, 1);
    tu_attr_str(&g, "direction", left ? "LEFT" : "RIGHT");
    lt_value *in[2] = {tu_from(dt, 1, d, x), tu_from(dt, 1, d, y)};
    lt_value *out = ew_exec(&g, 2, in, want);
    tu_free(&g);
    return out;
}

static void signed_shifts(void **state)
{
    (void)state;
    double lx[7] = {1, -3, 64, -128, 5, 7, -1}, ly[7] = {3, 2, 1, 1, -1, 8, 7};
    double lw[7] = {8, -12, -128, 0, 0, 0, -128};
    lt_value *out = shift(LT_I8, 28, true, 7, lx, ly, LT_OK);
    tu_assert_close(out, lw, 7, 0, 0, 0);
    lt_value_free(out);
    double rx[7] = {-16, 16, -1, -128, -5, 5, -5}, ry[7] = {2, 2, 7, 7, 8, -1, 1};
    double rw[7] = {-4, 4, -1, -1, -1, 0, -3};
    out = shift(LT_I8, 28, false, 7, rx, ry, LT_OK);
    tu_assert_close(out, rw, 7, 0, 0, 0);
    lt_value_free(out);
    double qx[4] = {-1, 3, -7, 1}, qy[4] = {63, 64, 1, 62};
    double qlw[4] = {-9223372036854775808.0, 0, -14, 4611686018427387904.0};
    out = shift(LT_I64, 28, true, 4, qx, qy, LT_OK);
    tu_assert_close(out, qlw, 4, 0, 0, 0);
    lt_value_free(out);
    double qrw[4] = {-1, 0, -4, 0};
    out = shift(LT_I64, 28, false, 4, qx, qy, LT_OK);
    tu_assert_close(out, qrw, 4, 0, 0, 0);
    lt_value_free(out);
    double sx[3] = {-300, 300, -2}, sy[3] = {4, 31, 32}, sw[3] = {-19, 0, -1};
    out = shift(LT_I32, 28, false, 3, sx, sy, LT_OK);
    tu_assert_close(out, sw, 3, 0, 0, 0);
    lt_value_free(out);
    /* before opset 28 BitShift is defined on unsigned types only */
    assert_null(shift(LT_I16, 11, true, 3, sx, sy, LT_ERR_INVALID));
}

static void comparisons_and_logic(void **state)
{
    (void)state;
    int64_t da[2] = {3, 4}, db[1] = {4};
    const lt_op ops[5] = {LT_OP_EQUAL, LT_OP_GREATER, LT_OP_GREATER_OR_EQUAL, LT_OP_LESS, LT_OP_LESS_OR_EQUAL};
    const lt_dtype dts[4] = {LT_F32, LT_I64, LT_F16, LT_U16};
    for (int o = 0; o < 5; o++)
        for (int t = 0; t < 4; t++) {
            uint64_t seed = 500 + (uint64_t)(o * 4 + t);
            lt_value *a = tu_rand(dts[t], 2, da, 0, 4, seed), *b = tu_rand(dts[t], 1, db, 0, 4, seed + 1);
            double w[12];
            for (int i = 0; i < 12; i++) {
                double x = tu_get(a, i), y = tu_get(b, i % 4);
                w[i] = o == 0 ? x == y : o == 1 ? x > y : o == 2 ? x >= y : o == 3 ? x < y : x <= y;
            }
            lt_value *out = bin(ops[o], 13, a, b, LT_OK);
            assert_int_equal(out->t.dtype, LT_BOOL);
            ew_assert_shape(out, 2, da);
            tu_assert_close(out, w, 12, 0, 0, seed);
            lt_value_free(out);
        }
    const lt_op lops[4] = {LT_OP_AND, LT_OP_OR, LT_OP_XOR, LT_OP_EQUAL};
    for (int o = 0; o < 4; o++) {
        lt_value *a = tu_rand(LT_BOOL, 2, da, 0, 2, 600 + o), *b = tu_rand(LT_BOOL, 1, db, 0, 2, 610 + o);
        double w[12];
        for (int i = 0; i < 12; i++) {
            int x = tu_get(a, i) != 0, y = tu_get(b, i % 4) != 0;
            w[i] = o == 0 ? (x && y) : o == 1 ? (x || y) : o == 2 ? (x != y) : (x == y);
        }
        lt_value *out = bin(lops[o], 7, a, b, LT_OK);
        assert_int_equal(out->t.dtype, LT_BOOL);
        tu_assert_close(out, w, 12, 0, 0, 600 + o);
        lt_value_free(out);
    }
    /* logical ops refuse non-bool inputs */
    assert_null(bin(LT_OP_AND, 7, tu_rand(LT_I32, 1, db, 0, 2, 1), tu_rand(LT_I32, 1, db, 0, 2, 2),
                    LT_ERR_INVALID));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wrapping_arith), cmocka_unit_test(division),
        cmocka_unit_test(modulo),         cmocka_unit_test(power),
        cmocka_unit_test(shifts_and_bits), cmocka_unit_test(comparisons_and_logic),
        cmocka_unit_test(signed_shifts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
