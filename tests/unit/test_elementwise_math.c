/* Elementwise unary math, activations and Clip against double references
 * from libm, in float32 (single- and multi-threaded sizes), float64 and
 * float16; integer Abs/Neg/Sign/Relu; hand-derived special values. */
#include "test_elementwise.h"

static double recip(double x) { return 1 / x; }
static double neg(double x) { return -x; }
static double sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static double sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double relu(double x) { return x > 0 ? x : 0; }
static double softplus(double x) { return log(1 + exp(x)); }
static double softsign(double x) { return x / (1 + fabs(x)); }
static double hswish(double x) { return x * fmax(0, fmin(1, x / 6 + 0.5)); }
static double mish(double x) { return x * tanh(log(1 + exp(x))); }
static double gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2))); }

typedef struct {
    lt_op op;
    double (*f)(double);
    double lo, hi;
} unary_case;

static const unary_case cases[] = {
    {LT_OP_ABS, fabs, -3, 3},         {LT_OP_ACOS, acos, -0.99, 0.99},  {LT_OP_ACOSH, acosh, 1, 5},
    {LT_OP_ASIN, asin, -0.99, 0.99},  {LT_OP_ASINH, asinh, -3, 3},      {LT_OP_ATAN, atan, -3, 3},
    {LT_OP_ATANH, atanh, -0.9, 0.9},  {LT_OP_COS, cos, -3, 3},          {LT_OP_COSH, cosh, -3, 3},
    {LT_OP_SIN, sin, -3, 3},          {LT_OP_SINH, sinh, -3, 3},        {LT_OP_TAN, tan, -1.5, 1.5},
    {LT_OP_TANH, tanh, -3, 3},        {LT_OP_EXP, exp, -5, 5},          {LT_OP_LOG, log, 0.01, 10},
    {LT_OP_SQRT, sqrt, 0, 10},        {LT_OP_RECIPROCAL, recip, 0.5, 4}, {LT_OP_NEG, neg, -3, 3},
    {LT_OP_FLOOR, floor, -9, 9},      {LT_OP_CEIL, ceil, -9, 9},        {LT_OP_SIGN, sign, -3, 3},
    {LT_OP_ERF, erf, -3, 3},          {LT_OP_SIGMOID, sigmoid, -20, 20}, {LT_OP_RELU, relu, -3, 3},
    {LT_OP_SOFTPLUS, softplus, -20, 20}, {LT_OP_SOFTSIGN, softsign, -3, 3},
    {LT_OP_HARD_SWISH, hswish, -5, 5}, {LT_OP_MISH, mish, -5, 5},      {LT_OP_GELU, gelu, -4, 4},
};

static void check_unary(const unary_case *c, lt_dtype dt, int64_t n, double rtol, uint64_t seed)
{
    int64_t d[1] = {n};
    lt_value *x = tu_rand(dt, 1, d, c->lo, c->hi, seed);
    double *want = malloc(sizeof *want * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        want[i] = c->f(tu_get(x, i));
    lt_value *in[1] = {x};
    lt_value *out = ew_run(c->op, 18, 1, in, LT_OK);
    assert_int_equal(out->t.dtype, dt);
    tu_assert_close(out, want, n, rtol, rtol * 1e-1, seed);
    lt_value_free(out);
    free(want);
}

static void unary_float32(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_unary(&cases[i], LT_F32, 1000, 2e-6, 50 + i);
        check_unary(&cases[i], LT_F32, 40000, 2e-6, 90 + i); /* threaded */
    }
}

static void unary_float64_float16(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_unary(&cases[i], LT_F64, 500, 1e-12, 150 + i);
        check_unary(&cases[i], LT_F16, 500, 2e-3, 250 + i);
        check_unary(&cases[i], LT_BF16, 100, 1e-2, 350 + i);
    }
}

static void special_values(void **state)
{
    (void)state;
    int64_t d[1] = {8};
    /* Round: halves go to the even neighbour */
    double xr[8] = {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, -2.6}, wr[8] = {0, 2, 2, -0.0, -2, 2, 3, -3};
    lt_value *in[1] = {tu_from(LT_F32, 1, d, xr)};
    lt_value *out = ew_run(LT_OP_ROUND, 11, 1, in, LT_OK);
    tu_assert_close(out, wr, 8, 0, 0, 0);
    lt_value_free(out);
    /* IsInf with each flag, IsNaN */
    double xi[8] = {INFINITY, -INFINITY, 1, NAN, 0, -1e30, 1e30, -INFINITY};
    for (int pos = 0; pos < 2; pos++)
        for (int negf = 0; negf < 2; negf++) {
            tu_graph g = tu_single(LT_OP_IS_INF, 10, 1, 1);
            tu_attr_int(&g, "detect_positive", pos);
            tu_attr_int(&g, "detect_negative", negf);
            lt_value *ii[1] = {tu_from(LT_F32, 1, d, xi)};
            out = ew_exec(&g, 1, ii, LT_OK);
            assert_int_equal(out->t.dtype, LT_BOOL);
            double w[8] = {pos, negf, 0, 0, 0, 0, 0, negf};
            tu_assert_close(out, w, 8, 0, 0, 0);
            lt_value_free(out);
            tu_free(&g);
        }
    lt_value *ni[1] = {tu_from(LT_F64, 1, d, xi)};
    out = ew_run(LT_OP_IS_NA_N, 13, 1, ni, LT_OK);
    double wn[8] = {0, 0, 0, 1, 0, 0, 0, 0};
    tu_assert_close(out, wn, 8, 0, 0, 0);
    lt_value_free(out);
    /* Relu and Sign keep NaN; Sqrt of a negative is NaN */
    double xn[1] = {NAN};
    int64_t d1[1] = {1};
    const lt_op keep[3] = {LT_OP_RELU, LT_OP_SIGN, LT_OP_SIGMOID};
    for (int i = 0; i < 3; i++) {
        lt_value *kk[1] = {tu_from(LT_F32, 1, d1, xn)};
        out = ew_run(keep[i], 14, 1, kk, LT_OK);
        assert_true(isnan(tu_get(out, 0)));
        lt_value_free(out);
    }
}

static void integer_unary(void **state)
{
    (void)state;
    int64_t d[5] = {5};
    double x[5] = {-128, -5, 0, 7, 127};
    double wabs[5] = {-128, 5, 0, 7, 127}; /* |INT8_MIN| wraps to itself */
    double wneg[5] = {-128, 5, 0, -7, -127};
    double wsign[5] = {-1, -1, 0, 1, 1};
    double wrelu[5] = {0, 0, 0, 7, 127};
    const lt_op ops[4] = {LT_OP_ABS, LT_OP_NEG, LT_OP_SIGN, LT_OP_RELU};
    const double *want[4] = {wabs, wneg, wsign, wrelu};
    for (int o = 0; o < 4; o++) {
        lt_value *in[1] = {tu_from(LT_I8, 1, d, x)};
        lt_value *out = ew_run(ops[o], 14, 1, in, LT_OK);
        assert_int_equal(out->t.dtype, LT_I8);
        tu_assert_close(out, want[o], 5, 0, 0, 0);
        lt_value_free(out);
    }
    /* Not, BitwiseNot */
    double b[5] = {1, 0, 0, 1, 1}, wb[5] = {0, 1, 1, 0, 0};
    lt_value *in[1] = {tu_from(LT_BOOL, 1, d, b)};
    lt_value *out = ew_run(LT_OP_NOT, 1, 1, in, LT_OK);
    tu_assert_close(out, wb, 5, 0, 0, 0);
    lt_value_free(out);
    double u[5] = {0, 1, 200, 255, 15}, wu[5] = {255, 254, 55, 0, 240};
    lt_value *iu[1] = {tu_from(LT_U8, 1, d, u)};
    out = ew_run(LT_OP_BITWISE_NOT, 18, 1, iu, LT_OK);
    tu_assert_close(out, wu, 5, 0, 0, 0);
    lt_value_free(out);
    /* float-only ops refuse integers with a message */
    lt_value *ie[1] = {tu_from(LT_I32, 1, d, x)};
    assert_null(ew_run(LT_OP_EXP, 13, 1, ie, LT_ERR_INVALID));
}

typedef struct {
    lt_op op;
    const char *a1, *a2;
    float v1, v2;
} act_case;

static double act_ref(const act_case *c, double x)
{
    double a = c->v1, b = c->v2;
    switch (c->op) {
    case LT_OP_ELU: return x < 0 ? a * (exp(x) - 1) : x;
    case LT_OP_SELU: return x <= 0 ? b * (a * exp(x) - a) : b * x;
    case LT_OP_CELU: return fmax(0, x) + fmin(0, a * (exp(x / a) - 1));
    case LT_OP_LEAKY_RELU: return x < 0 ? a * x : x;
    case LT_OP_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
    case LT_OP_THRESHOLDED_RELU: return x > a ? x : 0;
    case LT_OP_SHRINK: return x < -b ? x + a : x > b ? x - a : 0;
    default: return NAN;
    }
}

static void activations_with_attrs(void **state)
{
    (void)state;
    const act_case cases2[] = {
        {LT_OP_ELU, "alpha", NULL, 0.7f, 0},          {LT_OP_SELU, "alpha", "gamma", 1.5f, 2.5f},
        {LT_OP_CELU, "alpha", NULL, 1.7f, 0},         {LT_OP_LEAKY_RELU, "alpha", NULL, 0.13f, 0},
        {LT_OP_HARD_SIGMOID, "alpha", "beta", 0.3f, 0.4f}, {LT_OP_THRESHOLDED_RELU, "alpha", NULL, 0.6f, 0},
        {LT_OP_SHRINK, "bias", "lambd", 0.2f, 1.1f},
    };
    int64_t d[1] = {333};
    for (size_t i = 0; i < sizeof cases2 / sizeof *cases2; i++) {
        const act_case *c = &cases2[i];
        const lt_dtype dts[2] = {LT_F32, LT_F64};
        for (int t = 0; t < 2; t++) {
            tu_graph g = tu_single(c->op, 13, 1, 1);
            tu_attr_float(&g, c->a1, c->v1);
            if (c->a2)
                tu_attr_float(&g, c->a2, c->v2);
            lt_value *x = tu_rand(dts[t], 1, d, -4, 4, 70 + i);
            double want[333];
            for (int j = 0; j < 333; j++)
                want[j] = act_ref(c, tu_get(x, j));
            lt_value *in[1] = {x};
            lt_value *out = ew_exec(&g, 1, in, LT_OK);
            tu_assert_close(out, want, 333, 2e-6, 1e-7, 70 + i);
            lt_value_free(out);
            tu_free(&g);
        }
    }
    /* defaults: Selu's constants, LeakyRelu 0.01, HardSigmoid 0.2/0.5 */
    const act_case defs[] = {
        {LT_OP_SELU, NULL, NULL, 1.67326319217681884765625f, 1.05070102214813232421875f},
        {LT_OP_LEAKY_RELU, NULL, NULL, 0.01f, 0},
        {LT_OP_HARD_SIGMOID, NULL, NULL, 0.2f, 0.5f},
        {LT_OP_SHRINK, NULL, NULL, 0.0f, 0.5f},
    };
    for (size_t i = 0; i < sizeof defs / sizeof *defs; i++) {
        lt_value *x = tu_rand(LT_F32, 1, d, -4, 4, 80 + i);
        double want[333];
        for (int j = 0; j < 333; j++)
            want[j] = act_ref(&defs[i], tu_get(x, j));
        lt_value *in[1] = {x};
        lt_value *out = ew_run(defs[i].op, 13, 1, in, LT_OK);
        tu_assert_close(out, want, 333, 2e-6, 1e-7, 80 + i);
        lt_value_free(out);
    }
    /* Shrink on integers, Gelu's tanh form */
    double xi[5] = {-3, -1, 0, 1, 3}, wi[5] = {-1, 0, 0, 0, 1};
    int64_t d5[1] = {5};
    tu_graph g = tu_single(LT_OP_SHRINK, 13, 1, 1);
    tu_attr_float(&g, "lambd", 1.5f);
    tu_attr_float(&g, "bias", 2.0f);
    lt_value *ii[1] = {tu_from(LT_I32, 1, d5, xi)};
    lt_value *out = ew_exec(&g, 1, ii, LT_OK);
    assert_int_equal(out->t.dtype, LT_I32);
    tu_assert_close(out, wi, 5, 0, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    g = tu_single(LT_OP_GELU, 20, 1, 1);
    tu_attr_str(&g, "approximate", "tanh");
    lt_value *x = tu_rand(LT_F32, 1, d, -4, 4, 99);
    double want[333];
    for (int j = 0; j < 333; j++) {
        double v = tu_get(x, j);
        want[j] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    lt_value *gi[1] = {x};
    out = ew_exec(&g, 1, gi, LT_OK);
    tu_assert_close(out, want, 333, 2e-6, 1e-7, 99);
    lt_value_free(out);
    tu_free(&g);
}

static void clip_forms(void **state)
{
    (void)state;
    int64_t d[1] = {6}, d0[1] = {0};
    double x[6] = {-3, -0.6, -0.2, 0.3, 0.7, 4};
    /* opset 6: attributes */
    tu_graph g = tu_single(LT_OP_CLIP, 6, 1, 1);
    tu_attr_float(&g, "min", -0.5f);
    tu_attr_float(&g, "max", 0.5f);
    lt_value *in[1] = {tu_from(LT_F32, 1, d, x)};
    lt_value *out = ew_exec(&g, 1, in, LT_OK);
    double w1[6] = {-0.5, -0.5, -0.2, 0.3, 0.5, 0.5};
    tu_assert_close(out, w1, 6, 1e-7, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    /* opset 13: min only (max omitted) */
    g = tu_single(LT_OP_CLIP, 13, 3, 1);
    tu_omit_input(&g, 2);
    double lo = -0.4;
    /* the graph still has the omitted input's parameter: feed it junk */
    lt_value *in3[3] = {tu_from(LT_F32, 1, d, x), tu_from(LT_F32, 0, d0, &lo), tu_from(LT_F32, 1, d, x)};
    out = ew_exec(&g, 3, in3, LT_OK);
    double w2[6] = {-0.4, -0.4, -0.2, 0.3, 0.7, 4};
    tu_assert_close(out, w2, 6, 1e-7, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    /* int8 with min > max: everything becomes max */
    g = tu_single(LT_OP_CLIP, 13, 3, 1);
    double xi[6] = {-128, -5, 0, 5, 100, 127}, l = 10, h = 3;
    lt_value *ii[3] = {tu_from(LT_I8, 1, d, xi), tu_from(LT_I8, 0, d0, &l), tu_from(LT_I8, 0, d0, &h)};
    out = ew_exec(&g, 3, ii, LT_OK);
    double w3[6] = {3, 3, 3, 3, 3, 3};
    tu_assert_close(out, w3, 6, 0, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    /* uint8 max only, float16 with both, no bounds at all */
    g = tu_single(LT_OP_CLIP, 12, 3, 1);
    tu_omit_input(&g, 1);
    double xu[6] = {0, 5, 9, 10, 11, 255}, hu = 10;
    lt_value *iu[3] = {tu_from(LT_U8, 1, d, xu), tu_from(LT_F32, 1, d, x), tu_from(LT_U8, 0, d0, &hu)};
    out = ew_exec(&g, 3, iu, LT_OK);
    double w4[6] = {0, 5, 9, 10, 10, 10};
    tu_assert_close(out, w4, 6, 0, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    g = tu_single(LT_OP_CLIP, 13, 3, 1);
    double lh = -1, hh = 1;
    lt_value *ih[3] = {tu_from(LT_F16, 1, d, x), tu_from(LT_F16, 0, d0, &lh), tu_from(LT_F16, 0, d0, &hh)};
    out = ew_exec(&g, 3, ih, LT_OK);
    assert_int_equal(out->t.dtype, LT_F16);
    double w5[6] = {-1, -0.6, -0.2, 0.3, 0.7, 1};
    tu_assert_close(out, w5, 6, 1e-3, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    g = tu_single(LT_OP_CLIP, 11, 1, 1);
    lt_value *i1[1] = {tu_from(LT_F64, 1, d, x)};
    out = ew_exec(&g, 1, i1, LT_OK);
    tu_assert_close(out, x, 6, 0, 0, 0);
    lt_value_free(out);
    tu_free(&g);
    /* a non-scalar bound is an error */
    g = tu_single(LT_OP_CLIP, 13, 2, 1);
    lt_value *ib[2] = {tu_from(LT_F32, 1, d, x), tu_from(LT_F32, 1, d, x)};
    assert_null(ew_exec(&g, 2, ib, LT_ERR_INVALID));
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unary_float32),          cmocka_unit_test(unary_float64_float16),
        cmocka_unit_test(special_values),         cmocka_unit_test(integer_unary),
        cmocka_unit_test(activations_with_attrs), cmocka_unit_test(clip_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
