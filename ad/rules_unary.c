/* Gradient rules: the remaining activations and unary math (each reads like
 * its derivative), Mod and CastLike, the piecewise-constant ops whose
 * gradient is zero. */
#include "rules_util.h"
#include <math.h>
#include <string.h>

#define UB(v, i) lt_ad_unbroadcast(c, (v), in[i])

/* ---- activations ---- */
RULE(r_selu)
{
    float alpha = lt_attr_float(n, "alpha", 1.67326319217681884765625f);
    float gamma = lt_attr_float(n, "gamma", 1.05070102214813232421875f);
    /* below zero y = gamma alpha (e^x - 1), so y' = y + gamma alpha */
    lt_ival *neg = OP2(MUL, G, OP2(ADD, out[0], K((double)gamma * alpha)));
    return ACC(0, OP3(WHERE, OP2(GREATER, in[0], K(0)), OP2(MUL, G, K(gamma)), neg));
}

RULE(r_celu)
{
    float alpha = lt_attr_float(n, "alpha", 1.0f);
    lt_ival *neg = OP2(MUL, G, OP1(EXP, OP2(DIV, in[0], K(alpha))));
    return ACC(0, OP3(WHERE, OP2(GREATER, in[0], K(0)), G, neg));
}

RULE(r_gelu)
{
    lt_ival *x = in[0], *d;
    if (!strcmp(lt_attr_str(n, "approximate", "none"), "tanh")) {
        /* y = x (1 + t) / 2, t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3) */
        double s = sqrt(2.0 / M_PI);
        lt_ival *x2 = OP2(MUL, x, x);
        lt_ival *u = OP2(MUL, OP2(MUL, x, OP2(ADD, K(1), OP2(MUL, x2, K(0.044715)))), K(s));
        lt_ival *t = OP1(TANH, u);
        lt_ival *du = OP2(MUL, OP2(ADD, K(1), OP2(MUL, x2, K(3 * 0.044715))), K(s));
        lt_ival *dt = OP2(MUL, OP2(SUB, K(1), OP2(MUL, t, t)), du);
        d = OP2(MUL, OP2(ADD, OP2(ADD, K(1), t), OP2(MUL, x, dt)), K(0.5));
    } else {
        /* Phi(x) + x phi(x) */
        lt_ival *cdf = OP2(MUL, OP2(ADD, K(1), OP1(ERF, OP2(MUL, x, K(M_SQRT1_2)))), K(0.5));
        lt_ival *pdf = OP2(MUL, OP1(EXP, OP2(MUL, OP2(MUL, x, x), K(-0.5))), K(0.5 * M_2_SQRTPI * M_SQRT1_2));
        d = OP2(ADD, cdf, OP2(MUL, x, pdf));
    }
    return ACC(0, OP2(MUL, G, d));
}

RULE(r_erf)
{
    lt_ival *x = in[0];
    return ACC(0, OP2(MUL, G, OP2(MUL, OP1(EXP, OP1(NEG, OP2(MUL, x, x))), K(M_2_SQRTPI))));
}

RULE(r_hard_sigmoid)
{
    float alpha = lt_attr_float(n, "alpha", 0.2f);
    /* the slope where the clip is not active, i.e. 0 < y < 1 */
    lt_ival *inside = OP2(AND, OP2(GREATER, out[0], K(0)), OP2(LESS, out[0], K(1)));
    return ACC(0, OP3(WHERE, inside, OP2(MUL, G, K(alpha)), K(0)));
}

RULE(r_hard_swish)
{
    /* y = x hardsigmoid(x) with alpha 1/6, beta 1/2: 0 below -3, 1 above 3 */
    lt_ival *x = in[0];
    lt_ival *mid = OP2(ADD, OP2(DIV, x, K(3)), K(0.5));
    lt_ival *d = OP3(WHERE, OP2(LESS, x, K(-3)), K(0), OP3(WHERE, OP2(GREATER, x, K(3)), K(1), mid));
    return ACC(0, OP2(MUL, G, d));
}

RULE(r_mish)
{
    /* y = x tanh(softplus(x)); softplus' = sigmoid */
    lt_ival *x = in[0], *t = OP1(TANH, OP1(SOFTPLUS, x));
    lt_ival *d = OP2(ADD, t, OP2(MUL, OP2(MUL, x, OP2(SUB, K(1), OP2(MUL, t, t))), OP1(SIGMOID, x)));
    return ACC(0, OP2(MUL, G, d));
}

RULE(r_prelu)
{
    lt_ival *x = in[0], *slope = in[1];
    const lt_type *xt = &x->type, *st = &slope->type;
    if (n->opset < 7 && st->rank == 1 && xt->rank >= 3) {
        /* before opset 7 a 1-D slope as long as the channel dim (not 1) is
         * per channel, as the kernel reads it: only known dims tell */
        if (st->dims[0].sym >= 0 || st->dims[0].v < 0 || xt->dims[1].sym >= 0 || xt->dims[1].v < 0)
            return lt_ad_fail(c, n, "PRelu before opset 7 needs known slope and channel sizes to be differentiated");
        if (st->dims[0].v == xt->dims[1].v && st->dims[0].v != 1) {
            int64_t shape[LT_MAX_RANK] = {-1, 1, 1, 1, 1, 1, 1, 1};
            slope = OP2(RESHAPE, slope, lt_ad_ints(c, xt->rank - 1, shape));
        }
    }
    lt_ival *negx = OP2(LESS, x, K(0));
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0)) /* slope broadcasts to x, so G * slope has x's shape */
        s = ACC(0, UB(OP3(WHERE, negx, OP2(MUL, G, slope), G), 0));
    if (s == LT_OK && lt_ad_wants(c, n, 1)) {
        lt_ival *g = lt_ad_unbroadcast(c, OP3(WHERE, negx, OP2(MUL, G, x), K(0)), slope);
        s = ACC(1, slope == in[1] ? g : OP2(RESHAPE, g, OP1(SHAPE, in[1])));
    }
    return s;
}

RULE(r_thresholded_relu)
{
    float alpha = lt_attr_float(n, "alpha", 1.0f);
    return ACC(0, OP3(WHERE, OP2(GREATER, in[0], K(alpha)), G, K(0)));
}

RULE(r_shrink)
{
    float l = lt_attr_float(n, "lambd", 0.5f);
    lt_ival *pass = OP2(OR, OP2(LESS, in[0], K(-l)), OP2(GREATER, in[0], K(l)));
    return ACC(0, OP3(WHERE, pass, G, K(0)));
}

/* ---- trigonometric and hyperbolic ---- */
RULE(r_tan) { return ACC(0, OP2(MUL, G, OP2(ADD, K(1), OP2(MUL, out[0], out[0])))); }

/* sqrt(a + b x^2) */
static lt_ival *sqrt_quad(lt_ad *c, lt_ival *const *in, double a, double b)
{
    lt_ival *x2 = OP2(MUL, in[0], in[0]);
    return OP1(SQRT, OP2(ADD, K(a), b == 1 ? x2 : OP2(MUL, x2, K(b))));
}

RULE(r_asin) { return ACC(0, OP2(DIV, G, sqrt_quad(c, in, 1, -1))); }
RULE(r_acos) { return ACC(0, OP1(NEG, OP2(DIV, G, sqrt_quad(c, in, 1, -1)))); }
RULE(r_atan) { return ACC(0, OP2(DIV, G, OP2(ADD, K(1), OP2(MUL, in[0], in[0])))); }
RULE(r_sinh) { return ACC(0, OP2(MUL, G, OP1(COSH, in[0]))); }
RULE(r_cosh) { return ACC(0, OP2(MUL, G, OP1(SINH, in[0]))); }
RULE(r_asinh) { return ACC(0, OP2(DIV, G, sqrt_quad(c, in, 1, 1))); }
RULE(r_acosh) { return ACC(0, OP2(DIV, G, sqrt_quad(c, in, -1, 1))); }
RULE(r_atanh) { return ACC(0, OP2(DIV, G, OP2(SUB, K(1), OP2(MUL, in[0], in[0])))); }

/* Mod with fmod = 1 (the float form): x - y trunc(x / y), so the remainder
 * follows x one for one and y by -trunc(x / y) = (out - x) / y */
RULE(r_mod)
{
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, UB(G, 0));
    if (s == LT_OK && lt_ad_wants(c, n, 1))
        s = ACC(1, UB(OP2(MUL, G, OP2(DIV, OP2(SUB, out[0], in[0]), in[1])), 1));
    return s;
}

/* CastLike: dy cast back to the input's type */
RULE(r_cast_like) { return ACC(0, lt_ad_cast(c, G, in[0]->type.dtype)); }

/* Piecewise-constant outputs (Round, Floor, Ceil, Sign, Hardmax): the
 * gradient is zero almost everywhere, so nothing is accumulated; the rule
 * exists so that the transform does not refuse them. */
RULE(r_zero) { return LT_OK; }

void lt_ad_register_unary(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_SELU] = r_selu;
    t[LT_OP_CELU] = r_celu;
    t[LT_OP_GELU] = r_gelu;
    t[LT_OP_ERF] = r_erf;
    t[LT_OP_HARD_SIGMOID] = r_hard_sigmoid;
    t[LT_OP_HARD_SWISH] = r_hard_swish;
    t[LT_OP_MISH] = r_mish;
    t[LT_OP_P_RELU] = r_prelu;
    t[LT_OP_THRESHOLDED_RELU] = r_thresholded_relu;
    t[LT_OP_SHRINK] = r_shrink;
    t[LT_OP_TAN] = r_tan;
    t[LT_OP_ASIN] = r_asin;
    t[LT_OP_ACOS] = r_acos;
    t[LT_OP_ATAN] = r_atan;
    t[LT_OP_SINH] = r_sinh;
    t[LT_OP_COSH] = r_cosh;
    t[LT_OP_ASINH] = r_asinh;
    t[LT_OP_ACOSH] = r_acosh;
    t[LT_OP_ATANH] = r_atanh;
    t[LT_OP_MOD] = r_mod;
    t[LT_OP_CAST_LIKE] = r_cast_like;
    nd[LT_OP_CAST_LIKE] = 1u << 1;
    static const lt_op zero[] = {LT_OP_ROUND, LT_OP_FLOOR, LT_OP_CEIL, LT_OP_SIGN, LT_OP_HARDMAX};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        t[zero[i]] = r_zero;
}
