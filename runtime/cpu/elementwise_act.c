/* CPU kernels: activations (Sigmoid, Relu, Elu, Selu, Celu, LeakyRelu,
 * HardSigmoid, HardSwish, Softplus, Softsign, ThresholdedRelu, Gelu, Mish,
 * Shrink, PRelu, Swish, SwiGLU). Each is written once for float and double through FN2;
 * float16/bfloat16 compute in float32. */
#include "elementwise_bcast.h"
#include "elementwise_vmath.h"
#include "vact.h"
#include <tgmath.h>

#define ROW LT_EW_UNARY_ROW

/* Defines name_f (float) and name_d (double) from one body, in which T is
 * the float type, x the value and p the op's attributes. */
#define FN2(name, BODY)                                                     \
    static inline float name##_f(float x, const lt_ew_par *p)               \
    {                                                                       \
        typedef float T;                                                    \
        (void)p;                                                            \
        (void)sizeof(T);                                                    \
        BODY                                                                \
    }                                                                       \
    static inline double name##_d(double x, const lt_ew_par *p)             \
    {                                                                       \
        typedef double T;                                                   \
        (void)p;                                                            \
        (void)sizeof(T);                                                    \
        BODY                                                                \
    }
#define CALL(name, x) _Generic((x), float: name##_f, double: name##_d)(x, p)

/* float: the vectorizable form; double: exp(-|x|) never overflows */
static inline float sigmoid_f(float x, const lt_ew_par *p) { return lt_ew_sigmoidf(x); }
static inline double sigmoid_d(double x, const lt_ew_par *p)
{
    double e = exp(-fabs(x)), r = 1 / (1 + e);
    return x >= 0 ? r : e * r;
}
/* float takes the vectorizable expm1 / log1p, double libm's */
#define EXPM1(x) _Generic((x), float: lt_ew_expm1f, double: expm1)(x)
static inline float softplus_f(float x, const lt_ew_par *p) { return lt_ew_softplusf(x); }
static inline double softplus_d(double x, const lt_ew_par *p) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
FN2(elu, return x < 0 ? (T)p->alpha * EXPM1(x) : x;)
FN2(selu, return x <= 0 ? (T)p->gamma * (T)p->alpha * EXPM1(x) : (T)p->gamma * x;)
FN2(celu, return x > 0 ? x : (T)p->alpha * EXPM1(x / (T)p->alpha);)
/* comparisons rather than fmin/fmax so NaN propagates */
FN2(hsig, T v = (T)p->alpha * x + (T)p->beta; return v < 0 ? 0 : (v > 1 ? 1 : v);)
FN2(hswish, T v = x / 6 + (T)0.5; return x * (v < 0 ? 0 : (v > 1 ? 1 : v));)
/* Gelu, exact form: 1 + erf(t) = erfc(-t) keeps precision for x << 0 */
static inline float gelu_f(float x, const lt_ew_par *p) { return 0.5f * x * lt_ew_erf1pf(x * 0.7071067811865476f); }
static inline double gelu_d(double x, const lt_ew_par *p) { return 0.5 * x * erfc(x * -0.7071067811865476); }
/* Gelu, approximate = "tanh" */
static inline float gelut_f(float x, const lt_ew_par *p)
{
    return 0.5f * x * (1 + lt_ew_tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
static inline double gelut_d(double x, const lt_ew_par *p)
{
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
static inline float mish_f(float x, const lt_ew_par *p) { return lt_ew_mishf(x); }
static inline double mish_d(double x, const lt_ew_par *p) { return x * tanh(softplus_d(x, p)); }
/* Swish (opset 24): x sigmoid(alpha x); SwiGLU (opset 28) gates b with it */
FN2(swish, T z = (T)p->alpha * x; return x * CALL(sigmoid, z);)
FN2(shrink, return x < -(T)p->lambd ? x + (T)p->bias : (x > (T)p->lambd ? x - (T)p->bias : 0);)

#define L LT_EW_PAR_LIGHT

/* Rows, table and descriptor of a float activation (attributes arrive per
 * call in an lt_ew_par). */
#define ACT(op, EXPR, PAR, VIA_F64)                                                      \
    LT_EW_FLOATS(ROW, op, LT_EW_SAME, EXPR)                                              \
    static const lt_ew_row op##_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(op)};           \
    static const lt_ew_op op##_op = {op##_rows, LT_EW_OUT_SAME, VIA_F64, PAR};

/* Sigmoid: float rows through the AVX2 array form */
static void sigmoid_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    lt_vsigmoidf(in[0], out, n);
}
ROW(sigmoid_f64, double, double, double, CALL(sigmoid, x))
static const lt_ew_row sigmoid_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(sigmoid)};
static const lt_ew_op sigmoid_op = {sigmoid_rows, LT_EW_OUT_SAME, false, LT_EW_PAR_HEAVY};
/* Gelu (exact): float rows through the array form too */
static void gelu_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    lt_vgeluf(in[0], out, n);
}
ROW(gelu_f64, double, double, double, CALL(gelu, x))
static const lt_ew_row gelu_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(gelu)};
static const lt_ew_op gelu_op = {gelu_rows, LT_EW_OUT_SAME, false, LT_EW_PAR_HEAVY};
/* Softplus: float rows through the array form too (FusedElementwise's
 * step runs the same one) */
static void softplus_f32(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step)
{
    lt_vsoftplusf(in[0], out, n);
}
ROW(softplus_f64, double, double, double, CALL(softplus, x))
static const lt_ew_row softplus_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(softplus)};
static const lt_ew_op softplus_op = {softplus_rows, LT_EW_OUT_SAME, false, LT_EW_PAR_HEAVY};
ACT(softsign, x / (1 + fabs(x)), L, false)
ACT(elu, CALL(elu, x), L, false)
ACT(selu, CALL(selu, x), L, false)
ACT(celu, CALL(celu, x), L, false)
ACT(leaky, x < 0 ? (ti_t)p->alpha * x : x, L, false)
ACT(hsig, CALL(hsig, x), L, false)
ACT(hswish, CALL(hswish, x), L, false)
ACT(threlu, x > (ti_t)p->alpha ? x : 0, L, false)
ACT(gelut, CALL(gelut, x), L, false)
ACT(mish, CALL(mish, x), L, false)
ACT(shrink, CALL(shrink, x), L, true) /* Shrink takes every numeric type */
ACT(swish, CALL(swish, x), L, false)
LT_EW_FLOATS(LT_EW_BINARY_ROW, swiglu, LT_EW_SAME, CALL(swish, x) * y)
static const lt_ew_row swiglu_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(swiglu)};
static const lt_ew_op swiglu_op = {swiglu_rows, LT_EW_OUT_SAME, false, L};

/* Relu: floats and (opset 14) signed ints */
LT_EW_FLOATS(ROW, relu, LT_EW_SAME, x < 0 ? 0 : x) /* keeps NaN */
LT_EW_SINTS(ROW, relu, LT_EW_SAME, x < 0 ? 0 : x)
static const lt_ew_row relu_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(relu) LT_EW_TAB_SINTS(relu)};
static const lt_ew_op relu_op = {relu_rows, LT_EW_OUT_SAME, false, L};
/* ReluGrad (dy, y): dy where Relu's output y > 0, else 0, in one pass. y > 0
 * exactly where Relu's input x > 0 (a NaN x gives a NaN y: neither passes),
 * so this is Where(Greater(x, 0), dy, 0) without the bool tensor. */
LT_EW_FLOATS(LT_EW_BINARY_ROW, relu_grad, LT_EW_SAME, y > 0 ? x : 0)
LT_EW_SINTS(LT_EW_BINARY_ROW, relu_grad, LT_EW_SAME, y > 0 ? x : 0)
static const lt_ew_row relu_grad_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(relu_grad) LT_EW_TAB_SINTS(relu_grad)};
static const lt_ew_op relu_grad_op = {relu_grad_rows, LT_EW_OUT_SAME, false, L};

static lt_status run(lt_kctx *k, const lt_ew_op *op, const lt_ew_par *p) { return lt_ew_unary(k, op, p); }

static lt_status k_sigmoid(lt_kctx *k) { return run(k, &sigmoid_op, NULL); }
static lt_status k_softplus(lt_kctx *k) { return run(k, &softplus_op, NULL); }
static lt_status k_softsign(lt_kctx *k) { return run(k, &softsign_op, NULL); }
static lt_status k_relu(lt_kctx *k) { return run(k, &relu_op, NULL); }
static lt_status k_relu_grad(lt_kctx *k) { return lt_ew_binary(k, &relu_grad_op, NULL); }
static lt_status k_hswish(lt_kctx *k) { return run(k, &hswish_op, NULL); }
static lt_status k_mish(lt_kctx *k) { return run(k, &mish_op, NULL); }

static lt_status k_swish(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 1.0f)};
    return run(k, &swish_op, &p);
}

/* SwiGLU does not broadcast: A and B have one shape */
static lt_status k_swiglu(lt_kctx *k)
{
    const lt_tensor *a = lt_k_in(k, 0), *b = lt_k_in(k, 1);
    if (!a || !b)
        return lt_k_fail(k, LT_ERR_INVALID, "needs inputs A and B");
    bool same = a->rank == b->rank;
    for (int i = 0; same && i < a->rank; i++)
        same = a->dims[i] == b->dims[i];
    if (!same)
        return lt_k_fail(k, LT_ERR_INVALID, "A and B must have the same shape (SwiGLU does not broadcast)");
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 1.0f)};
    return lt_ew_binary(k, &swiglu_op, &p);
}

static lt_status k_elu(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 1.0f)};
    return run(k, &elu_op, &p);
}

static lt_status k_selu(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 1.67326319217681884765625f),
                   .gamma = lt_attr_float(k->node, "gamma", 1.05070102214813232421875f)};
    return run(k, &selu_op, &p);
}

static lt_status k_celu(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 1.0f)};
    if (p.alpha == 0)
        return lt_k_fail(k, LT_ERR_INVALID, "alpha must not be 0");
    return run(k, &celu_op, &p);
}

static lt_status k_leaky(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 0.01f)};
    return run(k, &leaky_op, &p);
}

static lt_status k_hsig(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 0.2f), .beta = lt_attr_float(k->node, "beta", 0.5f)};
    return run(k, &hsig_op, &p);
}

static lt_status k_threlu(lt_kctx *k)
{
    lt_ew_par p = {.alpha = lt_attr_float(k->node, "alpha", 1.0f)};
    return run(k, &threlu_op, &p);
}

static lt_status k_gelu(lt_kctx *k)
{
    const char *a = lt_attr_str(k->node, "approximate", "none");
    if (strcmp(a, "tanh") == 0)
        return run(k, &gelut_op, NULL);
    if (strcmp(a, "none") != 0)
        return lt_k_fail(k, LT_ERR_INVALID, "approximate must be 'none' or 'tanh', not '%s'", a);
    return run(k, &gelu_op, NULL);
}

static lt_status k_shrink(lt_kctx *k)
{
    lt_ew_par p = {.lambd = lt_attr_float(k->node, "lambd", 0.5f), .bias = lt_attr_float(k->node, "bias", 0.0f)};
    return run(k, &shrink_op, &p);
}

/* PRelu: slope broadcasts one-directionally onto X; integer products wrap */
LT_EW_FLOATS(LT_EW_BINARY_ROW, prelu, LT_EW_SAME, x < 0 ? y * x : x)
LT_EW_SINTS(LT_EW_BINARY_ROW, prelu, LT_EW_SAME, x < 0 ? (ti_t)((ut_t)y * (ut_t)x) : x)
LT_EW_UINTS(LT_EW_BINARY_ROW, prelu, LT_EW_SAME, x)
static const lt_ew_row prelu_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(prelu)};

static lt_status k_prelu(lt_kctx *k)
{
    static const lt_ew_op o = {prelu_rows, LT_EW_OUT_SAME, false, L};
    const lt_tensor *x = lt_k_in(k, 0), *slope = lt_k_in(k, 1);
    if (!x || !slope)
        return lt_k_fail(k, LT_ERR_INVALID, "needs inputs X and slope");
    if (x->dtype != slope->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "X is %s but slope is %s", lt_dtype_name(x->dtype),
                         lt_dtype_name(slope->dtype));
    lt_dtype cd = lt_ew_compute_dtype(prelu_rows, x->dtype, false);
    if (cd == LT_UNDEFINED)
        return lt_ew_fail_dtype(k, x->dtype);
    lt_tensor s = *slope;
    /* before opset 7 a 1-D slope of X's channel count is per channel (dim 1) */
    if (k->node->opset < 7 && s.rank == 1 && x->rank >= 2 && s.dims[0] == x->dims[1] && s.dims[0] != 1) {
        s.rank = x->rank - 1;
        for (int d = 1; d < s.rank; d++)
            s.dims[d] = 1;
    }
    const lt_tensor *in[2] = {x, &s};
    return lt_ew_run(k, &o, NULL, 2, in, cd, x->dtype, x->rank, x->dims);
}

void lt_cpu_register_elementwise_act(lt_kernel_fn *tab)
{
    tab[LT_OP_SIGMOID] = k_sigmoid;
    tab[LT_OP_SOFTPLUS] = k_softplus;
    tab[LT_OP_SOFTSIGN] = k_softsign;
    tab[LT_OP_RELU] = k_relu;
    tab[LT_OP_RELU_GRAD] = k_relu_grad;
    tab[LT_OP_ELU] = k_elu;
    tab[LT_OP_SELU] = k_selu;
    tab[LT_OP_CELU] = k_celu;
    tab[LT_OP_LEAKY_RELU] = k_leaky;
    tab[LT_OP_HARD_SIGMOID] = k_hsig;
    tab[LT_OP_HARD_SWISH] = k_hswish;
    tab[LT_OP_THRESHOLDED_RELU] = k_threlu;
    tab[LT_OP_GELU] = k_gelu;
    tab[LT_OP_MISH] = k_mish;
    tab[LT_OP_SHRINK] = k_shrink;
    tab[LT_OP_P_RELU] = k_prelu;
    tab[LT_OP_SWISH] = k_swish;
    tab[LT_OP_SWI_GLU] = k_swiglu;
}
