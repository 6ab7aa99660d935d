/* Softmax, LogSoftmax, Hardmax (legacy 2-D coercion and single-axis forms),
 * LpNormalization and MeanVarianceNormalization against double loops. */
#include "testutil.h"
#include "runtime/cpu/reduce_util.h"
#include "runtime/cpu/cpu_features.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SOFTMAX, LOGSOFTMAX, HARDMAX };
static const lt_op smx_ops[3] = {LT_OP_SOFTMAX, LT_OP_LOG_SOFTMAX, LT_OP_HARDMAX};

/* Reference over the outer x c x inner view. */
static void ref_smx(int mode, const lt_tensor *x, int64_t outer, int64_t c, int64_t inner, double *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double m = -INFINITY, s = 0;
            int64_t am = 0;
            for (int64_t j = 0; j < c; j++) {
                double v = lt_tensor_get_f64(x, (o * c + j) * inner + i);
                if (v > m) {
                    m = v;
                    am = j;
                }
            }
            for (int64_t j = 0; j < c; j++)
                s += exp(lt_tensor_get_f64(x, (o * c + j) * inner + i) - m);
            for (int64_t j = 0; j < c; j++) {
                int64_t at = (o * c + j) * inner + i;
                double v = lt_tensor_get_f64(x, at);
                y[at] = mode == SOFTMAX ? exp(v - m) / s : mode == LOGSOFTMAX ? v - m - log(s) : (double)(j == am);
            }
        }
}

static lt_value *run1(lt_op op, int opset, lt_value *x, const char *attr, int64_t v, const char *attr2, int64_t v2)
{
    tu_graph g = tu_single(op, opset, 1, 1);
    if (attr)
        tu_attr_int(&g, attr, v);
    if (attr2)
        tu_attr_int(&g, attr2, v2);
    lt_value *in[1] = {x}, *out[1] = {NULL};
    lt_err err;
    lt_status s = tu_run(&g, in, out, &err);
    if (s != LT_OK)
        fail_msg("%s-%d: %s", lt_op_names[op], opset, err.msg);
    tu_free(&g);
    return out[0];
}

static int64_t prod(const int64_t *d, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++)
        p *= d[i];
    return p;
}

static void check_smx(lt_dtype dt, int rank, const int64_t *dims, int opset, bool set_axis, int64_t axis,
                      uint64_t seed)
{
    bool legacy = opset < 13;
    int64_t ax = set_axis ? axis : legacy ? 1 : -1;
    int a = (int)(ax < 0 ? ax + rank : ax);
    int64_t outer = prod(dims, 0, a), c = legacy ? prod(dims, a, rank) : dims[a];
    int64_t inner = legacy ? 1 : prod(dims, a + 1, rank);
    for (int mode = 0; mode < 3; mode++) {
        lt_value *x = tu_rand(dt, rank, dims, -4, 4, seed + mode);
        double *want = malloc(sizeof(double) * (size_t)x->t.numel);
        ref_smx(mode, &x->t, outer, c, inner, want);
        lt_value *y = run1(smx_ops[mode], opset, x, set_axis ? "axis" : NULL, axis, NULL, 0);
        assert_int_equal(y->t.dtype, dt);
        double tol = dt == LT_BF16 ? 3e-2 : dt == LT_F16 ? 4e-3 : dt == LT_F64 ? 1e-12 : 2e-6;
        tu_assert_close(y, want, x->t.numel, tol, tol, seed + mode);
        free(want);
        lt_value_free(y);
        lt_value_free(x);
    }
}

static void softmax_axis_forms(void **state)
{
    (void)state;
    int64_t d3[3] = {3, 4, 5};
    /* opset 13: one axis, default -1 */
    check_smx(LT_F32, 3, d3, 13, false, 0, 10);
    check_smx(LT_F32, 3, d3, 13, true, 0, 20);
    check_smx(LT_F32, 3, d3, 13, true, 1, 30);
    check_smx(LT_F32, 3, d3, 13, true, -2, 40);
    /* before 13: coerced to 2-D, default axis 1 */
    check_smx(LT_F32, 3, d3, 11, false, 0, 50);
    check_smx(LT_F32, 3, d3, 1, true, 0, 60);
    check_smx(LT_F32, 3, d3, 11, true, -1, 70);
    check_smx(LT_F32, 3, d3, 11, true, 3, 80); /* axis == rank: every element alone */
    int64_t d1[1] = {6};
    check_smx(LT_F32, 1, d1, 11, false, 0, 90); /* default axis 1 on rank 1 */
}

static void softmax_types_and_sizes(void **state)
{
    (void)state;
    int64_t d3[3] = {2, 5, 7};
    check_smx(LT_F64, 3, d3, 13, true, 1, 100);
    check_smx(LT_F16, 3, d3, 13, true, 1, 110);
    check_smx(LT_BF16, 3, d3, 11, true, 1, 120);
    /* inner wider than one block, and a long parallel row set */
    int64_t wide[3] = {3, 6, 700}, rows[2] = {400, 129};
    check_smx(LT_F32, 3, wide, 13, true, 1, 130);
    check_smx(LT_F32, 2, rows, 13, false, 0, 140);
    /* rows of 1 to 65: whole and partial 16-lane pieces of the vector
     * row loop, attention's 28 keys */
    static const int64_t lens[] = {1, 15, 16, 17, 28, 31, 32, 33, 48, 64, 65};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        int64_t d[4] = {2, 3, 5, lens[i]};
        check_smx(LT_F32, 4, d, 13, false, 0, 150 + 10 * i);
    }
    /* rows of 17 to 32 kept in registers, over the threads */
    int64_t att[4] = {2, 2048, 4, 28};
    check_smx(LT_F32, 4, att, 13, false, 0, 290);
}

/* a NaN anywhere in a row makes the whole row NaN; other rows are untouched */
static void softmax_nan_row(void **state)
{
    (void)state;
    int64_t d[2] = {2, 20};
    double v[40];
    for (int i = 0; i < 40; i++)
        v[i] = 0.1 * i;
    v[7] = NAN;
    for (int q = 0; q < 4; q++) {
        /* the NaN in the first or (rows past 16) the second piece */
        int op = q & 1;
        v[7] = q < 2 ? NAN : 0.7;
        v[18] = q < 2 ? 1.8 : NAN;
        lt_value *x = tu_from(LT_F32, 2, d, v);
        lt_value *y = run1(smx_ops[op], 13, x, NULL, 0, NULL, 0);
        for (int i = 0; i < 20; i++)
            assert_true(isnan(tu_get(y, i)));
        for (int i = 20; i < 40; i++)
            assert_false(isnan(tu_get(y, i)));
        lt_value_free(y);
        lt_value_free(x);
    }
}

static void softmax_large_values(void **state)
{
    (void)state;
    int64_t d[2] = {2, 3};
    double v[6] = {1000, 1001, 1002, -1000, -1001, -1002};
    lt_value *x = tu_from(LT_F32, 2, d, v);
    lt_value *y = run1(LT_OP_SOFTMAX, 13, x, NULL, 0, NULL, 0);
    double e0 = exp(-2), e1 = exp(-1), s = e0 + e1 + 1;
    double want[6] = {e0 / s, e1 / s, 1 / s, 1 / s, e1 / s, e0 / s};
    tu_assert_close(y, want, 6, 1e-6, 1e-7, 0);
    lt_value_free(y);
    y = run1(LT_OP_LOG_SOFTMAX, 13, x, NULL, 0, NULL, 0);
    double lw[6];
    for (int i = 0; i < 6; i++)
        lw[i] = log(want[i]);
    tu_assert_close(y, lw, 6, 1e-6, 1e-6, 0);
    lt_value_free(y);
    lt_value_free(x);
    /* masked entries (-inf) get exactly 0, the rest a proper softmax */
    int64_t d4[1] = {4};
    double mk[4] = {-INFINITY, 0, 1, -INFINITY};
    x = tu_from(LT_F32, 1, d4, mk);
    y = run1(LT_OP_SOFTMAX, 13, x, NULL, 0, NULL, 0);
    double mw[4] = {0, 1 / (1 + exp(1)), exp(1) / (1 + exp(1)), 0};
    tu_assert_close(y, mw, 4, 1e-6, 0, 0);
    lt_value_free(y);
    lt_value_free(x);
    /* the same in a row of 28 (two pieces in registers): -inf keys in both */
    int64_t d28[1] = {28};
    double m28[28], w28[28], s28 = 0;
    /* and the row's maximum, far past exp's range, in the second piece */
    for (int i = 0; i < 28; i++)
        m28[i] = i % 5 == 1 ? -INFINITY : i == 20 ? 200.0 : i > 16 ? 199.0 + 0.25 * (i % 3) : 0.25 * (i % 7);
    for (int i = 0; i < 28; i++)
        s28 += exp(m28[i] - 200.0);
    for (int i = 0; i < 28; i++)
        w28[i] = exp(m28[i] - 200.0) / s28;
    x = tu_from(LT_F32, 1, d28, m28);
    y = run1(LT_OP_SOFTMAX, 13, x, NULL, 0, NULL, 0);
    tu_assert_close(y, w28, 28, 1e-6, 1e-6, 0);
    for (int i = 1; i < 28; i += 5)
        assert_true(tu_get(y, i) == 0.0);
    lt_value_free(y);
    lt_value_free(x);
    /* Hardmax: ties go to the first index */
    double t[6] = {1, 3, 3, 2, 2, 0};
    x = tu_from(LT_F32, 2, d, t);
    y = run1(LT_OP_HARDMAX, 13, x, NULL, 0, NULL, 0);
    double hw[6] = {0, 1, 0, 1, 0, 0};
    tu_assert_close(y, hw, 6, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(x);
}

static void lp_normalization(void **state)
{
    (void)state;
    int64_t d[3] = {3, 4, 5};
    for (int p = 1; p <= 2; p++)
        for (int axis = -1; axis <= 1; axis++) {
            uint64_t seed = 200 + p * 10 + axis;
            lt_value *x = tu_rand(LT_F32, 3, d, -2, 2, seed);
            int a = axis < 0 ? 2 : axis;
            int64_t outer = prod(d, 0, a), c = d[a], inner = prod(d, a + 1, 3);
            double want[60];
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < inner; i++) {
                    double n = 0;
                    for (int64_t j = 0; j < c; j++) {
                        double v = tu_get(x, (o * c + j) * inner + i);
                        n += p == 1 ? fabs(v) : v * v;
                    }
                    if (p == 2)
                        n = sqrt(n);
                    for (int64_t j = 0; j < c; j++)
                        want[(o * c + j) * inner + i] = tu_get(x, (o * c + j) * inner + i) / n;
                }
            lt_value *y = run1(LT_OP_LP_NORMALIZATION, 1, x, "axis", axis, "p", p);
            tu_assert_close(y, want, 60, 1e-6, 1e-7, seed);
            lt_value_free(y);
            lt_value_free(x);
        }
    /* a zero vector stays zero */
    int64_t d2[2] = {2, 2};
    double z[4] = {0, 0, 3, 4};
    lt_value *x = tu_from(LT_F64, 2, d2, z);
    lt_value *y = run1(LT_OP_LP_NORMALIZATION, 1, x, NULL, 0, NULL, 0);
    double want[4] = {0, 0, 0.6, 0.8};
    tu_assert_close(y, want, 4, 1e-15, 0, 0);
    lt_value_free(y);
    lt_value_free(x);
}

/* MVN reference: mean and variance over the masked axes of a rank-4 tensor. */
static void ref_mvn(const lt_value *x, const bool *mask, double *y)
{
    const int64_t *d = x->t.dims;
    int64_t n = x->t.numel;
    for (int64_t i = 0; i < n; i++) {
        int64_t ci[4], rem = i;
        for (int k = 3; k >= 0; k--) {
            ci[k] = rem % d[k];
            rem /= d[k];
        }
        double s = 0, ss = 0, cnt = 0;
        for (int64_t j = 0; j < n; j++) {
            int64_t cj[4], r2 = j;
            for (int k = 3; k >= 0; k--) {
                cj[k] = r2 % d[k];
                r2 /= d[k];
            }
            bool same = true;
            for (int k = 0; k < 4; k++)
                if (!mask[k] && cj[k] != ci[k])
                    same = false;
            if (!same)
                continue;
            double v = tu_get(x, j);
            s += v;
            ss += v * v;
            cnt++;
        }
        double mean = s / cnt, var = ss / cnt - mean * mean;
        y[i] = (tu_get(x, i) - mean) / (sqrt(var) + 1e-9);
    }
}

static void mvn(void **state)
{
    (void)state;
    int64_t d[4] = {2, 3, 4, 2};
    double want[48];
    /* default axes [0, 2, 3]: scattered, so permuted and back */
    lt_value *x = tu_rand(LT_F32, 4, d, -3, 5, 300);
    bool m023[4] = {true, false, true, true};
    ref_mvn(x, m023, want);
    lt_value *y = run1(LT_OP_MEAN_VARIANCE_NORMALIZATION, 13, x, NULL, 0, NULL, 0);
    tu_assert_close(y, want, 48, 1e-5, 1e-5, 300);
    lt_value_free(y);
    /* contiguous axes [2, 3] */
    tu_graph g = tu_single(LT_OP_MEAN_VARIANCE_NORMALIZATION, 9, 1, 1);
    int64_t a23[2] = {2, 3};
    tu_attr_ints(&g, "axes", 2, a23);
    lt_value *in[1] = {x}, *out[1];
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    bool m23[4] = {false, false, true, true};
    ref_mvn(x, m23, want);
    tu_assert_close(out[0], want, 48, 1e-5, 1e-5, 301);
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(x);
    /* float16 */
    x = tu_rand(LT_F16, 4, d, -1, 1, 302);
    ref_mvn(x, m023, want);
    y = run1(LT_OP_MEAN_VARIANCE_NORMALIZATION, 13, x, NULL, 0, NULL, 0);
    assert_int_equal(y->t.dtype, LT_F16);
    tu_assert_close(y, want, 48, 4e-3, 4e-3, 302);
    lt_value_free(y);
    lt_value_free(x);
}

/* The vectorizable exp of the float paths against double exp. */
static void fast_exp(void **state)
{
    (void)state;
    double worst = 0;
    for (float x = -87.3f; x < 88.7f; x += 0.0137f) {
        double e = exp((double)x), got = lt_red_expf(x);
        double rel = fabs(got - e) / e;
        worst = rel > worst ? rel : worst;
    }
    assert_true(worst < 2.5e-7); /* about 2 ulp */
    assert_true(lt_red_expf(0) == 1.0f);
    assert_true(lt_red_expf(-INFINITY) == 0.0f);
    assert_true(lt_red_expf(-1000.0f) == 0.0f);
    assert_true(isinf(lt_red_expf(INFINITY)) && lt_red_expf(1000.0f) > 0);
    assert_true(isnan(lt_red_expf(NAN)));
    assert_true(isnan(lt_red_expf(-NAN)));
}

/* The AVX2 row kernel (softmax_avx2.c) called directly, on any CPU with
 * AVX2 and FMA, as softmax and as log-softmax: rows of 1 to 100 (whole and
 * partial 8-lane vectors, attention's 28), enough rows to span several of
 * its blocks and both threads, and rows longer than a block (a vocabulary,
 * summed a block at a time), against double; a NaN row, -inf entries
 * (exactly 0, or -inf) and a maximum far past exp's range; in place too.
 * Without AVX2 it refuses. */
static void softmax_rows_avx2(void **state)
{
    (void)state;
    static const int64_t lens[] = {1, 7, 8, 9, 28, 33, 100, 2049, 5003};
    uint64_t seed = 400;
    for (int logsm = 0; logsm < 2; logsm++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            int64_t c = lens[l], rows = c > 1000 ? 13 : 301, n = rows * c, d[1] = {n};
            lt_value *xv = tu_rand(LT_F32, 1, d, -6, 6, seed++);
            float *x = (float *)xv->t.data, *y = malloc(sizeof *y * (size_t)n);
            assert_non_null(y);
            if (c > 2) {
                x[5 * c + 1] = NAN;                      /* row 5: all NaN */
                x[7 * c] = x[7 * c + c - 1] = -INFINITY; /* row 7: two zeros (log: -inf) */
                x[9 * c + c / 2] = 300.0f;               /* row 9: one, the rest underflow */
            }
            if (!lt_softmax_rows_avx2(x, y, rows, c, logsm)) {
                assert_false(lt_cpu_avx2());
                lt_value_free(xv);
                free(y);
                return;
            }
            for (int64_t r = 0; r < rows; r++) {
                const float *xr = x + r * c;
                double m = -INFINITY, s = 0;
                bool nan = false;
                for (int64_t j = 0; j < c; j++) {
                    nan |= isnan(xr[j]);
                    m = xr[j] > m ? xr[j] : m;
                }
                for (int64_t j = 0; j < c; j++)
                    s += exp((double)xr[j] - m);
                for (int64_t j = 0; j < c; j++) {
                    double got = y[r * c + j];
                    double want = logsm ? ((double)xr[j] - m) - log(s) : exp((double)xr[j] - m) / s;
                    bool ok = nan ? isnan(got)
                              : isinf(xr[j]) ? got == (logsm ? -INFINITY : 0.0)
                              : logsm ? fabs(got - want) <= 2e-6 * (1 + fabs(want))
                                      : fabs(got - want) <= 1e-6 * want + 1e-12;
                    if (!ok)
                        fail_msg("%s row %lld of %lld: y[%lld] = %.9g, want %.9g", logsm ? "log-softmax" : "softmax",
                                 (long long)r, (long long)c, (long long)j, got, nan ? NAN : want);
                }
            }
            /* in place: the same values */
            assert_true(lt_softmax_rows_avx2(x, x, rows, c, logsm));
            for (int64_t i = 0; i < n; i++)
                if (!(x[i] == y[i] || (isnan(x[i]) && isnan(y[i]))))
                    fail_msg("in place: %lld differs (%.9g, %.9g)", (long long)i, x[i], y[i]);
            lt_value_free(xv);
            free(y);
        }
}

static void bad_axis(void **state)
{
    (void)state;
    int64_t d[2] = {2, 3};
    lt_value *x = tu_rand(LT_F32, 2, d, -1, 1, 1), *out[1];
    lt_err err;
    tu_graph g = tu_single(LT_OP_SOFTMAX, 13, 1, 1);
    tu_attr_int(&g, "axis", 2);
    lt_value *in[1] = {x};
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "axis"));
    tu_free(&g);
    lt_value_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_axis_forms), cmocka_unit_test(softmax_types_and_sizes),
        cmocka_unit_test(softmax_large_values), cmocka_unit_test(softmax_nan_row), cmocka_unit_test(lp_normalization),
        cmocka_unit_test(mvn), cmocka_unit_test(fast_exp), cmocka_unit_test(softmax_rows_avx2),
        cmocka_unit_test(bad_axis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
