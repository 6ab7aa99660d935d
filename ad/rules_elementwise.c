/* Gradient rules: elementwise math and activations. Each reads like the
 * derivative; broadcast operands get their contribution summed back to
 * their own shape. */
#include "ad_impl.h"
#include "rules_util.h"

#define UB(v, i) lt_ad_unbroadcast(c, (v), in[i])

/* v in like's float type (an operand ONNX lets differ in type, such as
 * Pow's exponent or Dropout's ratio), unchanged when it already is */
static lt_ival *as_float_of(lt_ad *c, lt_ival *v, const lt_ival *like)
{
    lt_dtype to = like->type.dtype, from = v ? v->type.dtype : LT_UNDEFINED;
    return !lt_dtype_is_float(to) || from == LT_UNDEFINED || from == to ? v : lt_ad_cast(c, v, to);
}

static lt_status r_add(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_status s = ACC(0, UB(G, 0));
    return s ? s : ACC(1, UB(G, 1));
}

static lt_status r_sub(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_status s = ACC(0, UB(G, 0));
    if (s == LT_OK && lt_ad_wants(c, n, 1))
        s = ACC(1, UB(OP1(NEG, G), 1));
    return s;
}

static lt_status r_mul(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, UB(OP2(MUL, G, in[1]), 0));
    if (s == LT_OK && lt_ad_wants(c, n, 1))
        s = ACC(1, UB(OP2(MUL, G, in[0]), 1));
    return s;
}

static lt_status r_div(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_status s = LT_OK;
    lt_ival *gb = OP2(DIV, G, in[1]);
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, UB(gb, 0));
    if (s == LT_OK && lt_ad_wants(c, n, 1)) /* d(a/b)/db = -(a/b)/b */
        s = ACC(1, UB(OP1(NEG, OP2(MUL, gb, out[0])), 1));
    return s;
}

static lt_status r_neg(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP1(NEG, G));
}

static lt_status r_identity(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                            lt_ival *const *dout)
{
    return ACC(0, G);
}

static lt_status r_exp(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, out[0]));
}

static lt_status r_log(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(DIV, G, in[0]));
}

static lt_status r_sqrt(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(DIV, G, OP2(MUL, out[0], K(2))));
}

static lt_status r_reciprocal(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                              lt_ival *const *dout)
{
    return ACC(0, OP1(NEG, OP2(MUL, G, OP2(MUL, out[0], out[0]))));
}

static lt_status r_tanh(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, OP2(SUB, K(1), OP2(MUL, out[0], out[0]))));
}

static lt_status r_sigmoid(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                           lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, OP2(MUL, out[0], OP2(SUB, K(1), out[0]))));
}

static lt_status r_relu(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    /* one pass over dy and Relu's output (which is > 0 exactly where x is),
     * so x itself need not outlive the forward */
    return ACC(0, OP2(RELU_GRAD, G, out[0]));
}

static lt_status r_leaky_relu(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                              lt_ival *const *dout)
{
    float alpha = lt_attr_float(n, "alpha", 0.01f);
    return ACC(0, OP3(WHERE, OP2(GREATER, in[0], K(0)), G, OP2(MUL, G, K(alpha))));
}

static lt_status r_elu(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    float alpha = lt_attr_float(n, "alpha", 1.0f);
    return ACC(0, OP3(WHERE, OP2(GREATER, in[0], K(0)), G, OP2(MUL, G, OP2(ADD, out[0], K(alpha)))));
}

static lt_status r_softplus(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                            lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, OP1(SIGMOID, in[0])));
}

/* Swish: with s = sigmoid(alpha x), d/dx x s = s (1 + alpha x (1 - s)) */
static lt_ival *swish_slope(lt_ad *c, lt_ival *const *in, lt_ival *x, float alpha)
{
    lt_ival *ax = OP2(MUL, x, K(alpha));
    lt_ival *s = OP1(SIGMOID, ax);
    return OP2(MUL, s, OP2(ADD, K(1), OP2(MUL, ax, OP2(SUB, K(1), s))));
}

static lt_status r_swish(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, swish_slope(c, in, in[0], lt_attr_float(n, "alpha", 1.0f))));
}

/* SwiGLU: y = swish(a) b, so da = g b swish'(a) and db = g swish(a) */
static lt_status r_swiglu(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    float alpha = lt_attr_float(n, "alpha", 1.0f);
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, OP2(MUL, OP2(MUL, G, in[1]), swish_slope(c, in, in[0], alpha)));
    if (s == LT_OK && lt_ad_wants(c, n, 1))
        s = ACC(1, OP2(MUL, G, OP2(MUL, in[0], OP1(SIGMOID, OP2(MUL, in[0], K(alpha))))));
    return s;
}

static lt_status r_softsign(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                            lt_ival *const *dout)
{
    lt_ival *d = OP2(ADD, K(1), OP1(ABS, in[0]));
    return ACC(0, OP2(DIV, G, OP2(MUL, d, d)));
}

static lt_status r_abs(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, OP1(SIGN, in[0])));
}

static lt_status r_sin(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP2(MUL, G, OP1(COS, in[0])));
}

static lt_status r_cos(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    return ACC(0, OP1(NEG, OP2(MUL, G, OP1(SIN, in[0]))));
}

static lt_status r_pow(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0)) { /* b a^(b-1), with b in a's type (ONNX lets an exponent's type differ) */
        lt_ival *b = as_float_of(c, in[1], in[0]);
        s = ACC(0, UB(OP2(MUL, G, OP2(MUL, b, OP2(POW, in[0], OP2(SUB, b, K(1))))), 0));
    }
    if (s == LT_OK && lt_ad_wants(c, n, 1)) /* a^b log a, back in b's type */
        s = ACC(1, UB(as_float_of(c, OP2(MUL, G, OP2(MUL, out[0], OP1(LOG, in[0]))), in[1]), 1));
    return s;
}

static lt_status r_where(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                         lt_ival *const *dout)
{
    lt_status s = LT_OK;
    lt_ival *zero = lt_ad_scalar_like(c, in[1], 0);
    if (lt_ad_wants(c, n, 1))
        s = ACC(1, UB(OP3(WHERE, in[0], G, zero), 1));
    if (s == LT_OK && lt_ad_wants(c, n, 2))
        s = ACC(2, UB(OP3(WHERE, in[0], zero, G), 2));
    return s;
}

static lt_status r_clip(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    /* the gradient passes where the value was not clipped */
    lt_ival *keep = NULL;
    if (n->opset < 11) {
        lt_ival *lo = K(lt_attr_float(n, "min", -3.4028234e38f)), *hi = K(lt_attr_float(n, "max", 3.4028234e38f));
        keep = OP2(AND, OP2(GREATER_OR_EQUAL, in[0], lo), OP2(LESS_OR_EQUAL, in[0], hi));
    } else {
        if (n->nin > 1 && in[1])
            keep = OP2(GREATER_OR_EQUAL, in[0], in[1]);
        if (n->nin > 2 && in[2]) {
            lt_ival *k2 = OP2(LESS_OR_EQUAL, in[0], in[2]);
            keep = keep ? OP2(AND, keep, k2) : k2;
        }
    }
    lt_status s = lt_ad_wants(c, n, 0) ? ACC(0, keep ? OP3(WHERE, keep, G, K(0)) : G) : LT_OK;
    /* a trainable bound (a learned clipping threshold) gets the gradient of
     * the values it set, as torch.clamp's tensor bounds do: min where x is
     * below it (and it is not above max, which then wins), max where
     * max(x, min) is above it */
    lt_ival *lo = n->opset >= 11 && n->nin > 1 ? in[1] : NULL, *hi = n->opset >= 11 && n->nin > 2 ? in[2] : NULL;
    if (s == LT_OK && lo && lt_ad_wants(c, n, 1)) {
        lt_ival *below = OP2(LESS, in[0], lo);
        if (hi)
            below = OP2(AND, below, OP2(LESS_OR_EQUAL, lo, hi));
        s = ACC(1, UB(OP3(WHERE, below, G, K(0)), 1));
    }
    if (s == LT_OK && hi && lt_ad_wants(c, n, 2))
        s = ACC(2, UB(OP3(WHERE, OP2(GREATER, lo ? OP2(MAX, in[0], lo) : in[0], hi), G, K(0)), 2));
    return s;
}

/* Max, Min: the gradient goes to the inputs equal to the result */
static lt_status r_minmax(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    for (int i = 0; i < n->nin; i++) {
        if (!lt_ad_wants(c, n, i))
            continue;
        lt_status s = ACC(i, UB(OP3(WHERE, OP2(EQUAL, in[i], out[0]), G, K(0)), i));
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

static lt_status r_sum(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_ival *g = n->op == LT_OP_MEAN ? OP2(DIV, G, K(n->nin)) : G;
    for (int i = 0; i < n->nin; i++) {
        lt_status s = lt_ad_wants(c, n, i) ? ACC(i, UB(g, i)) : LT_OK;
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

static lt_status r_cast(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    lt_node *k = lt_ad_node(c, LT_OP_CAST, 1, 1);
    if (!k)
        return LT_ERR_NOMEM;
    k->in[0] = G;
    lt_ad_attr_int(c, k, "to", in[0]->type.dtype);
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

static lt_status r_dropout(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                           lt_ival *const *dout)
{
    /* inference mode is the identity; training mode scales by mask/(1-ratio) */
    bool training = n->nin > 2 && in[2];
    if (!training)
        return ACC(0, G);
    if (n->nout < 2 || !out[1])
        return lt_ad_fail(c, n, "training-mode Dropout needs its mask output to be differentiated");
    lt_ival *ratio = n->nin > 1 && in[1] ? as_float_of(c, in[1], in[0]) : K(0.5);
    lt_node *cast = lt_ad_node(c, LT_OP_CAST, 1, 1);
    if (!cast)
        return LT_ERR_NOMEM;
    cast->in[0] = out[1];
    lt_ad_attr_int(c, cast, "to", lt_ad_float_dtype(in[0]));
    lt_ad_infer(c, cast);
    lt_ival *mask = cast->out[0];
    return ACC(0, OP2(DIV, OP2(MUL, G, mask), OP2(SUB, K(1), ratio)));
}

void lt_ad_register_elementwise(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_ADD] = r_add;
    t[LT_OP_SUB] = r_sub;
    t[LT_OP_MUL] = r_mul;
    t[LT_OP_DIV] = r_div;
    t[LT_OP_NEG] = r_neg;
    t[LT_OP_IDENTITY] = r_identity;
    t[LT_OP_EXP] = r_exp;
    t[LT_OP_LOG] = r_log;
    t[LT_OP_SQRT] = r_sqrt;
    t[LT_OP_RECIPROCAL] = r_reciprocal;
    t[LT_OP_TANH] = r_tanh;
    t[LT_OP_SIGMOID] = r_sigmoid;
    t[LT_OP_RELU] = r_relu;
    t[LT_OP_LEAKY_RELU] = r_leaky_relu;
    t[LT_OP_ELU] = r_elu;
    t[LT_OP_SOFTPLUS] = r_softplus;
    t[LT_OP_SOFTSIGN] = r_softsign;
    t[LT_OP_SWISH] = r_swish;
    t[LT_OP_SWI_GLU] = r_swiglu;
    t[LT_OP_ABS] = r_abs;
    t[LT_OP_SIN] = r_sin;
    t[LT_OP_COS] = r_cos;
    t[LT_OP_POW] = r_pow;
    t[LT_OP_WHERE] = r_where;
    t[LT_OP_CLIP] = r_clip;
    t[LT_OP_MAX] = r_minmax;
    t[LT_OP_MIN] = r_minmax;
    t[LT_OP_SUM] = r_sum;
    t[LT_OP_MEAN] = r_sum;
    t[LT_OP_CAST] = r_cast;
    t[LT_OP_DROPOUT] = r_dropout;
    nd[LT_OP_WHERE] = 1u << 0;
    nd[LT_OP_DROPOUT] = (1u << 1) | (1u << 2);
}
