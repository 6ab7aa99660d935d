/* CPU kernels: unary math (trigonometric, hyperbolic, exp/log, rounding,
 * Abs/Neg/Sign, Erf), IsInf/IsNaN, Not and BitwiseNot. float16/bfloat16
 * compute in float32. */
#include "elementwise_bcast.h"
#include "elementwise_vmath.h"
#include "vact.h"
#include <tgmath.h>

/* float rows take the vectorizable version, double rows libm's */
#define VF(ff, df, x) _Generic((x), float: ff, double: df)(x)

#define ROW LT_EW_UNARY_ROW

/* An op defined on float types only. */
#define FLOAT_OP(op, EXPR, PAR)                                                          \
    LT_EW_FLOATS(ROW, op, LT_EW_SAME, EXPR)                                              \
    static const lt_ew_row op##_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(op)};           \
    static lt_status k_##op(lt_kctx *k)                                                  \
    {                                                                                    \
        static const lt_ew_op o = {op##_rows, LT_EW_OUT_SAME, false, PAR};               \
        return lt_ew_unary(k, &o, NULL);                                                 \
    }

#define H LT_EW_PAR_HEAVY
#define L LT_EW_PAR_LIGHT
FLOAT_OP(acos, acos(x), H)
FLOAT_OP(acosh, acosh(x), H)
FLOAT_OP(asin, asin(x), H)
FLOAT_OP(asinh, asinh(x), H)
FLOAT_OP(atan, atan(x), H)
FLOAT_OP(atanh, atanh(x), H)
FLOAT_OP(cos, cos(x), H)
FLOAT_OP(cosh, cosh(x), H)
FLOAT_OP(sin, sin(x), H)
FLOAT_OP(sinh, sinh(x), H)
FLOAT_OP(tan, tan(x), H)
/* Tanh: float rows through the AVX2 array form (recurrent nets spend much
 * of their time here) */
static void tanh_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    lt_vtanhf(in[0], out, n);
}
ROW(tanh_f64, double, double, double, tanh(x))
static const lt_ew_row tanh_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(tanh)};
static lt_status k_tanh(lt_kctx *k)
{
    static const lt_ew_op o = {tanh_rows, LT_EW_OUT_SAME, false, H};
    return lt_ew_unary(k, &o, NULL);
}
/* Exp and Erf: float rows through the AVX2 array forms, as Tanh */
static void exp_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    lt_vexpf(in[0], out, n);
}
ROW(exp_f64, double, double, double, exp(x))
static const lt_ew_row exp_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(exp)};
static lt_status k_exp(lt_kctx *k)
{
    static const lt_ew_op o = {exp_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}
FLOAT_OP(log, log(x), H)
FLOAT_OP(sqrt, sqrt(x), L)
static void erf_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    lt_verff(in[0], out, n);
}
ROW(erf_f64, double, double, double, erf(x))
static const lt_ew_row erf_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(erf)};
static lt_status k_erf(lt_kctx *k)
{
    static const lt_ew_op o = {erf_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}
FLOAT_OP(reciprocal, 1 / x, L)
FLOAT_OP(floor, floor(x), L)
FLOAT_OP(ceil, ceil(x), L)
FLOAT_OP(round, rint(x), L) /* the default rounding mode: half to even */

/* Abs, Neg, Sign: every numeric type. Integer negation wraps (INT_MIN
 * stays INT_MIN) through the unsigned type instead of overflowing. */
LT_EW_FLOATS(ROW, abs, LT_EW_SAME, fabs(x))
LT_EW_SINTS(ROW, abs, LT_EW_SAME, x < 0 ? (ti_t)(0 - (ut_t)x) : x)
LT_EW_UINTS(ROW, abs, LT_EW_SAME, x)
LT_EW_FLOATS(ROW, neg, LT_EW_SAME, -x)
LT_EW_INTS(ROW, neg, LT_EW_SAME, (ti_t)(0 - (ut_t)x))
LT_EW_FLOATS(ROW, sign, LT_EW_SAME, x > 0 ? 1 : (x < 0 ? -1 : x)) /* keeps NaN */
LT_EW_SINTS(ROW, sign, LT_EW_SAME, (x > 0) - (x < 0))
LT_EW_UINTS(ROW, sign, LT_EW_SAME, x > 0)
static const lt_ew_row abs_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(abs)};
static const lt_ew_row neg_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(neg)};
static const lt_ew_row sign_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(sign)};

static lt_status k_abs(lt_kctx *k)
{
    static const lt_ew_op o = {abs_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}

static lt_status k_neg(lt_kctx *k)
{
    static const lt_ew_op o = {neg_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}

static lt_status k_sign(lt_kctx *k)
{
    static const lt_ew_op o = {sign_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}

/* IsInf (detect_positive / detect_negative in flag_a / flag_b), IsNaN */
LT_EW_FLOATS(ROW, isinf, LT_EW_BOOL, isinf(x) && (x > 0 ? p->flag_a : p->flag_b))
LT_EW_FLOATS(ROW, isnan, LT_EW_BOOL, x != x)
static const lt_ew_row isinf_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(isinf)};
static const lt_ew_row isnan_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(isnan)};

/* IsInf / IsNaN of a float8 (or float4) tensor by its codes' values: the
 * fnuz types, e4m3fn and float4 have no infinities, e5m2 does */
static lt_status narrow_test(lt_kctx *k, const lt_tensor *x, bool nan, bool pos, bool neg)
{
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, LT_BOOL, x->rank, x->dims, &y);
    if (s != LT_OK)
        return s;
    const uint8_t *c = x->data;
    uint8_t *o = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = lt_narrow_to_f64(x->dtype, c[i]);
        o[i] = nan ? v != v : isinf(v) && (v > 0 ? pos : neg);
    }
    return LT_OK;
}

static lt_status k_isinf(lt_kctx *k)
{
    static const lt_ew_op o = {isinf_rows, LT_EW_OUT_BOOL, false, L};
    lt_ew_par p = {.flag_a = lt_attr_int(k->node, "detect_positive", 1) != 0,
                   .flag_b = lt_attr_int(k->node, "detect_negative", 1) != 0};
    const lt_tensor *x = lt_k_in(k, 0);
    if (x && lt_dtype_is_narrow_float(x->dtype))
        return narrow_test(k, x, false, p.flag_a, p.flag_b);
    return lt_ew_unary(k, &o, &p);
}

static lt_status k_isnan(lt_kctx *k)
{
    static const lt_ew_op o = {isnan_rows, LT_EW_OUT_BOOL, false, L};
    const lt_tensor *x = lt_k_in(k, 0);
    if (x && lt_dtype_is_narrow_float(x->dtype))
        return narrow_test(k, x, true, false, false);
    return lt_ew_unary(k, &o, NULL);
}

/* Not on bool; BitwiseNot on integers */
ROW(not_b, uint8_t, uint8_t, uint32_t, x == 0)
LT_EW_INTS(ROW, bnot, LT_EW_SAME, ~x)
static const lt_ew_row not_rows[LT_DTYPE_COUNT] = {[LT_BOOL] = not_b};
static const lt_ew_row bnot_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_INTS(bnot)};

static lt_status k_not(lt_kctx *k)
{
    static const lt_ew_op o = {not_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}

static lt_status k_bnot(lt_kctx *k)
{
    static const lt_ew_op o = {bnot_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_unary(k, &o, NULL);
}

void lt_cpu_register_elementwise_unary(lt_kernel_fn *tab)
{
    tab[LT_OP_ACOS] = k_acos;
    tab[LT_OP_ACOSH] = k_acosh;
    tab[LT_OP_ASIN] = k_asin;
    tab[LT_OP_ASINH] = k_asinh;
    tab[LT_OP_ATAN] = k_atan;
    tab[LT_OP_ATANH] = k_atanh;
    tab[LT_OP_COS] = k_cos;
    tab[LT_OP_COSH] = k_cosh;
    tab[LT_OP_SIN] = k_sin;
    tab[LT_OP_SINH] = k_sinh;
    tab[LT_OP_TAN] = k_tan;
    tab[LT_OP_TANH] = k_tanh;
    tab[LT_OP_EXP] = k_exp;
    tab[LT_OP_LOG] = k_log;
    tab[LT_OP_SQRT] = k_sqrt;
    tab[LT_OP_ERF] = k_erf;
    tab[LT_OP_RECIPROCAL] = k_reciprocal;
    tab[LT_OP_FLOOR] = k_floor;
    tab[LT_OP_CEIL] = k_ceil;
    tab[LT_OP_ROUND] = k_round;
    tab[LT_OP_ABS] = k_abs;
    tab[LT_OP_NEG] = k_neg;
    tab[LT_OP_SIGN] = k_sign;
    tab[LT_OP_IS_INF] = k_isinf;
    tab[LT_OP_IS_NA_N] = k_isnan;
    tab[LT_OP_NOT] = k_not;
    tab[LT_OP_BITWISE_NOT] = k_bnot;
}
