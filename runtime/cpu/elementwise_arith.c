/* CPU kernels: Add, Sub, Mul, Div, Mod, Pow with numpy broadcasting.
 * Integer +,-,* wrap (computed in an unsigned type); integer Div and Mod
 * fail on a zero divisor instead of trapping, and INT_MIN / -1 wraps. */
#include "elementwise_bcast.h"
#include <tgmath.h>

#define BROW LT_EW_BINARY_ROW
#define L LT_EW_PAR_LIGHT

LT_EW_FLOATS(BROW, add, LT_EW_SAME, x + y)
LT_EW_INTS(BROW, add, LT_EW_SAME, (ut_t)x + (ut_t)y)
LT_EW_FLOATS(BROW, sub, LT_EW_SAME, x - y)
LT_EW_INTS(BROW, sub, LT_EW_SAME, (ut_t)x - (ut_t)y)
LT_EW_FLOATS(BROW, mul, LT_EW_SAME, x * y)
LT_EW_INTS(BROW, mul, LT_EW_SAME, (ut_t)x * (ut_t)y)
LT_EW_FLOATS(BROW, div, LT_EW_SAME, x / y)
LT_EW_SINTS(BROW, div, LT_EW_SAME, y == -1 ? (ti_t)(0 - (ut_t)x) : x / y)
LT_EW_UINTS(BROW, div, LT_EW_SAME, x / y)
static const lt_ew_row add_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(add)};
static const lt_ew_row sub_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(sub)};
static const lt_ew_row mul_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(mul)};
static const lt_ew_row div_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(div)};

/* Mod, fmod = 0: the result takes the divisor's sign (Python's %);
 * fmod = 1: the dividend's (C's fmod and %). x % -1 is 0 either way. */
static inline float pymod_f(float x, float y)
{
    float r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}
static inline double pymod_d(double x, double y)
{
    double r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}
#define PYMOD(x, y) _Generic((x), float: pymod_f, double: pymod_d)(x, y)
LT_EW_FLOATS(BROW, pymod, LT_EW_SAME, PYMOD(x, y))
LT_EW_SINTS(BROW, pymod, LT_EW_SAME,
            y == -1 ? 0 : (x % y != 0 && ((x % y < 0) != (y < 0)) ? x % y + y : x % y))
LT_EW_UINTS(BROW, pymod, LT_EW_SAME, x % y)
LT_EW_FLOATS(BROW, cmod, LT_EW_SAME, fmod(x, y))
LT_EW_SINTS(BROW, cmod, LT_EW_SAME, y == -1 ? 0 : x % y)
LT_EW_UINTS(BROW, cmod, LT_EW_SAME, x % y)
static const lt_ew_row pymod_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(pymod)};
static const lt_ew_row cmod_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(cmod)};

/* Whether an integer tensor holds a 0 (an element whose bytes are all 0). */
#define HAS_ZERO(T)                                   \
    {                                                 \
        const T *p = t->data;                         \
        for (int64_t i = 0; i < t->numel; i++)        \
            if (p[i] == 0)                            \
                return true;                          \
        return false;                                 \
    }
static bool has_zero(const lt_tensor *t)
{
    switch (lt_dtype_size(t->dtype)) {
    case 1: HAS_ZERO(uint8_t)
    case 2: HAS_ZERO(uint16_t)
    case 4: HAS_ZERO(uint32_t)
    case 8: HAS_ZERO(uint64_t)
    default: return false;
    }
}

static lt_status int_divisor_check(lt_kctx *k)
{
    const lt_tensor *b = lt_k_in(k, 1);
    if (b && lt_dtype_is_int(b->dtype) && has_zero(b))
        return lt_k_fail(k, LT_ERR_RUNTIME, "integer division by zero");
    return LT_OK;
}

static lt_status k_add(lt_kctx *k)
{
    static const lt_ew_op o = {add_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_binary(k, &o, NULL);
}

static lt_status k_sub(lt_kctx *k)
{
    static const lt_ew_op o = {sub_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_binary(k, &o, NULL);
}

static lt_status k_mul(lt_kctx *k)
{
    static const lt_ew_op o = {mul_rows, LT_EW_OUT_SAME, false, L};
    return lt_ew_binary(k, &o, NULL);
}

static lt_status k_div(lt_kctx *k)
{
    static const lt_ew_op o = {div_rows, LT_EW_OUT_SAME, false, L};
    lt_status s = int_divisor_check(k);
    return s != LT_OK ? s : lt_ew_binary(k, &o, NULL);
}

static lt_status k_mod(lt_kctx *k)
{
    static const lt_ew_op py = {pymod_rows, LT_EW_OUT_SAME, false, L};
    static const lt_ew_op c = {cmod_rows, LT_EW_OUT_SAME, false, L};
    lt_status s = int_divisor_check(k);
    return s != LT_OK ? s : lt_ew_binary(k, lt_attr_int(k->node, "fmod", 0) ? &c : &py, NULL);
}

/* ---- Pow: base and exponent may differ in type (opset 12+) ---- */

/* Integer power by squaring, wrapping like repeated multiplication. A
 * negative exponent leaves only 1 and -1 with a nonzero integer result. */
static inline int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, m = (uint64_t)b;
    while (e) {
        if (e & 1)
            r *= m;
        m *= m;
        e >>= 1;
    }
    return (int64_t)r;
}

static void pow_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    const float *a = in[0], *b = in[1];
    float *o = out;
    int64_t sa = step[0], sb = step[1];
    if (sb == 0 && sa == 1) {
        float y = b[0];
        if (y == 2) {
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                o[i] = a[i] * a[i];
        } else if (y == 1) {
            memcpy(o, a, sizeof *o * (size_t)n);
        } else if (y == 3) {
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                o[i] = a[i] * a[i] * a[i];
        } else {
            for (int64_t i = 0; i < n; i++)
                o[i] = powf(a[i], y);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++)
        o[i] = powf(a[i * sa], b[i * sb]);
}

LT_EW_BINARY_ROW(pow_f64, double, double, double, pow(x, y))
LT_EW_BINARY_ROW(pow_i64, int64_t, int64_t, uint64_t, ipow(x, y))
static const lt_ew_row pow_rows[LT_DTYPE_COUNT] = {[LT_F32] = pow_f32, [LT_F64] = pow_f64, [LT_I64] = pow_i64};

static lt_status k_pow(lt_kctx *k)
{
    static const lt_ew_op o = {pow_rows, LT_EW_OUT_SAME, false, L};
    const lt_tensor *a = lt_k_in(k, 0), *b = lt_k_in(k, 1);
    if (!a || !b)
        return lt_k_fail(k, LT_ERR_INVALID, "needs inputs X and Y");
    lt_dtype bt = a->dtype, et = b->dtype;
    bool bint = lt_dtype_is_int(bt), eint = lt_dtype_is_int(et) || et == LT_BOOL;
    if (!(bint || lt_dtype_is_float(bt)))
        return lt_ew_fail_dtype(k, bt);
    if (!(eint || lt_dtype_is_float(et)))
        return lt_ew_fail_dtype(k, et);
    /* integer ** integer stays exact; integer ** float goes through double
     * as numpy does; float ** anything in the wider of the float types */
    lt_dtype cd = bint && eint ? LT_I64 : (bint || bt == LT_F64 || et == LT_F64) ? LT_F64 : LT_F32;
    lt_tensor bl;
    lt_status s = lt_ew_legacy_bcast(k, a, &b, &bl);
    if (s != LT_OK)
        return s;
    const lt_tensor *in[2] = {a, b};
    return lt_ew_run(k, &o, NULL, 2, in, cd, bt, -1, NULL);
}

void lt_cpu_register_elementwise_arith(lt_kernel_fn *tab)
{
    tab[LT_OP_ADD] = k_add;
    tab[LT_OP_SUB] = k_sub;
    tab[LT_OP_MUL] = k_mul;
    tab[LT_OP_DIV] = k_div;
    tab[LT_OP_MOD] = k_mod;
    tab[LT_OP_POW] = k_pow;
}
