/* String casts (lt_cpu_cast_string): numbers to numpy-style shortest text,
 * text to floats, integers and bools, called directly with a kernel
 * context. Expected texts were taken from numpy 1.24's str() of the same
 * values. */
#include "test_misc.h"
#include "runtime/cpu/misc_string.h"
#include "runtime/exec.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Casts `in` to dtype `to` through lt_cpu_cast_string; returns the status
 * and the result in *out (caller frees). */
static lt_status cast(const lt_value *in, lt_dtype to, lt_value **out, lt_err *err)
{
    tu_graph g = tu_single(LT_OP_CAST, 13, 1, 1);
    lt_exec ex;
    assert_int_equal(lt_exec_init(&ex, g.m, err), LT_OK);
    lt_value *inv[1] = {(lt_value *)in}, *outv[1] = {NULL};
    lt_kctx k = {.ex = &ex, .node = g.node, .nin = 1, .nout = 1, .in = inv, .out = outv, .err = err};
    lt_value *o = lt_value_new_tensor();
    assert_int_equal(lt_tensor_alloc(&o->t, to, in->t.rank, in->t.dims, err), LT_OK);
    lt_status s = lt_cpu_cast_string(&k, &in->t, to, &o->t);
    lt_exec_fini(&ex);
    tu_free(&g);
    *out = o;
    return s;
}

static void check_texts(const lt_value *in, const char *const *want)
{
    lt_err err;
    lt_value *o;
    assert_int_equal(cast(in, LT_STRING, &o, &err), LT_OK);
    for (int64_t i = 0; i < in->t.numel; i++)
        if (strcmp(tm_str(o, i), want[i]) != 0)
            fail_msg("element %lld: \"%s\", expected \"%s\"", (long long)i, tm_str(o, i), want[i]);
    lt_value_free(o);
}

static void float_to_string(void **state)
{
    (void)state;
    const double v[] = {0.9767611026763916, 1.0, -0.0, 1e16, 9.999999e15, 1e-4, 9.99e-5, 123456789.0,
                        1.5e-10, 3.4e38, 1e-45, NAN, INFINITY, -INFINITY, 0.1, -3.25e-7,
                        16777216.0, 0.039187792688608170, 2.5, 0.0};
    const char *want[] = {"0.9767611", "1.0", "-0.0", "1e+16", "9999999000000000.0", "1e-04", "9.99e-05",
                          "123456790.0", "1.5e-10", "3.4e+38", "1e-45", "nan", "inf", "-inf", "0.1",
                          "-3.25e-07", "16777216.0", "0.039187793", "2.5", "0.0"};
    int64_t n = sizeof v / sizeof *v;
    lt_value *x = tu_from(LT_F32, 1, &n, v);
    check_texts(x, want);
    lt_value_free(x);
}

static void double_half_to_string(void **state)
{
    (void)state;
    const double d[] = {1.0, 1e16, 0.1, 1.0 / 3.0, 1e-5, 1e300, 5e-324, -2.0};
    const char *dw[] = {"1.0", "1e+16", "0.1", "0.3333333333333333", "1e-05", "1e+300", "5e-324", "-2.0"};
    int64_t n = 8;
    lt_value *x = tu_from(LT_F64, 1, &n, d);
    check_texts(x, dw);
    lt_value_free(x);

    /* 2^-6: the closest 4-digit text (0.01562) misses, its neighbour fits */
    const double h[] = {1.0, 0.1, 1e-5, 65504.0, 6e-8, 0.015625};
    const char *hw[] = {"1.0", "0.1", "1e-05", "65500.0", "6e-08", "0.01563"};
    n = 6;
    x = tu_from(LT_F16, 1, &n, h);
    check_texts(x, hw);
    lt_value_free(x);
}

static void ints_to_string(void **state)
{
    (void)state;
    int64_t n = 3;
    const double i8[] = {-5, 7, -128};
    const char *w8[] = {"-5", "7", "-128"};
    lt_value *x = tu_from(LT_I8, 1, &n, i8);
    check_texts(x, w8);
    lt_value_free(x);

    x = tu_from(LT_U64, 1, &n, i8); /* overwritten below */
    ((uint64_t *)x->t.data)[0] = UINT64_MAX;
    ((uint64_t *)x->t.data)[1] = 0;
    ((uint64_t *)x->t.data)[2] = 12345678901234567890ull;
    const char *w64[] = {"18446744073709551615", "0", "12345678901234567890"};
    check_texts(x, w64);
    lt_value_free(x);

    const double b[] = {1, 0, 1};
    const char *wb[] = {"True", "False", "True"};
    x = tu_from(LT_BOOL, 1, &n, b);
    check_texts(x, wb);
    lt_value_free(x);
}

/* Random floats over many magnitudes: text reads back exactly, and no
 * shorter %.*e rounding would have. */
static void float_roundtrip_shortest(void **state)
{
    (void)state;
    uint64_t seed = 11;
    int64_t n = 2000;
    lt_value *u = tu_rand(LT_F64, 1, &n, -1, 1, seed);
    lt_value *e = tu_rand(LT_F64, 1, &n, -40, 38, seed + 1);
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(tu_get(u, i) * pow(10.0, floor(tu_get(e, i))));
    lt_value *x = tu_from(LT_F32, 1, &n, v);
    lt_err err;
    lt_value *o;
    assert_int_equal(cast(x, LT_STRING, &o, &err), LT_OK);
    for (int64_t i = 0; i < n; i++) {
        const char *s = tm_str(o, i);
        float back = strtof(s, NULL);
        if (back != (float)v[i])
            fail_msg("seed %llu: %.9g printed as \"%s\"", (unsigned long long)seed, v[i], s);
        /* significant digits: leading and trailing zeros do not count */
        char dig[64];
        int sig = 0;
        for (const char *c = s; *c && *c != 'e'; c++)
            if (*c >= '0' && *c <= '9' && (sig || *c != '0'))
                dig[sig++] = *c;
        while (sig > 0 && dig[sig - 1] == '0')
            sig--;
        if (sig > 1) { /* one digit fewer must not identify the value */
            char buf[64];
            snprintf(buf, sizeof buf, "%.*e", sig - 2, fabs(v[i]));
            if (strtof(buf, NULL) == (float)fabs(v[i]))
                fail_msg("seed %llu: \"%s\" is not the shortest (\"%s\" reads back too)", (unsigned long long)seed,
                         s, buf);
        }
    }
    /* and back through the string-to-float direction */
    lt_value *y;
    assert_int_equal(cast(o, LT_F32, &y, &err), LT_OK);
    for (int64_t i = 0; i < n; i++)
        assert_true(((float *)y->t.data)[i] == (float)v[i]);
    lt_value_free(y);
    lt_value_free(o);
    lt_value_free(x);
    lt_value_free(u);
    lt_value_free(e);
    free(v);
}

static void string_to_float(void **state)
{
    (void)state;
    const char *s[] = {"0.47892547", "NaN", "INF", "+INF", "-INF", "-inf", "Infinity", " 2.5 ", "1e3", "-0", "nan"};
    int64_t n = 11;
    lt_value *x = tm_strings(1, &n, s);
    lt_err err;
    lt_value *o;
    assert_int_equal(cast(x, LT_F32, &o, &err), LT_OK);
    const float *f = o->t.data;
    assert_true(f[0] == 0.47892547f);
    assert_true(isnan(f[1]) && isnan(f[10]));
    assert_true(isinf(f[2]) && f[2] > 0 && isinf(f[3]) && f[3] > 0 && isinf(f[6]) && f[6] > 0);
    assert_true(isinf(f[4]) && f[4] < 0 && isinf(f[5]) && f[5] < 0);
    assert_true(f[7] == 2.5f && f[8] == 1000.0f && f[9] == 0.0f && signbit(f[9]));
    lt_value_free(o);

    assert_int_equal(cast(x, LT_F64, &o, &err), LT_OK);
    assert_true(((double *)o->t.data)[0] == 0.47892547);
    lt_value_free(o);
    assert_int_equal(cast(x, LT_F16, &o, &err), LT_OK);
    assert_int_equal(((uint16_t *)o->t.data)[7], lt_f32_to_f16(2.5f));
    lt_value_free(o);
    lt_value_free(x);

    const char *bad[] = {"1.5", "abc"};
    n = 2;
    x = tm_strings(1, &n, bad);
    assert_int_equal(cast(x, LT_F32, &o, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "abc"));
    lt_value_free(o);
    lt_value_free(x);
}

static void string_to_int_bool(void **state)
{
    (void)state;
    const char *s[] = {"42", "-7", "2.9", "-2.9", "+3", "-2147483648"};
    int64_t n = 6;
    lt_value *x = tm_strings(1, &n, s);
    lt_err err;
    lt_value *o;
    assert_int_equal(cast(x, LT_I32, &o, &err), LT_OK);
    const int32_t want[] = {42, -7, 2, -2, 3, INT32_MIN};
    for (int i = 0; i < 6; i++)
        assert_int_equal(((int32_t *)o->t.data)[i], want[i]);
    lt_value_free(o);
    assert_int_equal(cast(x, LT_U8, &o, &err), LT_ERR_INVALID); /* -7 does not fit */
    lt_value_free(o);
    lt_value_free(x);

    const char *big[] = {"18446744073709551615", "128"};
    n = 2;
    x = tm_strings(1, &n, big);
    assert_int_equal(cast(x, LT_U64, &o, &err), LT_OK);
    assert_true(((uint64_t *)o->t.data)[0] == UINT64_MAX);
    lt_value_free(o);
    assert_int_equal(cast(x, LT_I64, &o, &err), LT_ERR_INVALID);
    lt_value_free(o);
    lt_value_free(x);

    const char *b[] = {"True", "false", "0", "2", "FALSE"};
    n = 5;
    x = tm_strings(1, &n, b);
    assert_int_equal(cast(x, LT_BOOL, &o, &err), LT_OK);
    const uint8_t wb[] = {1, 0, 0, 1, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(((uint8_t *)o->t.data)[i], wb[i]);
    lt_value_free(o);
    assert_int_equal(cast(x, LT_STRING, &o, &err), LT_OK);
    assert_string_equal(tm_str(o, 3), "2");
    lt_value_free(o);
    lt_value_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float_to_string),   cmocka_unit_test(double_half_to_string),
        cmocka_unit_test(ints_to_string),    cmocka_unit_test(float_roundtrip_shortest),
        cmocka_unit_test(string_to_float),   cmocka_unit_test(string_to_int_bool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
