/* Gradient rules: the scale of DequantizeLinear, and the straight-through
 * gradient of a QuantizeLinear -> DequantizeLinear pair (fake quantization,
 * as torch's quantization-aware training exports it); QuantizeLinear alone
 * carries no gradient (see the registrar). */
#include "rules_util.h"
#include <string.h>

/* ---- fake quantization ---- */

/* The range of a quantized integer type; false for the others (float8). */
static bool int_range(lt_dtype t, double *lo, double *hi)
{
    switch (t) {
    case LT_I8: *lo = -128, *hi = 127; return true;
    case LT_U8: *lo = 0, *hi = 255; return true;
    case LT_I16: *lo = -32768, *hi = 32767; return true;
    case LT_U16: *lo = 0, *hi = 65535; return true;
    case LT_I4: *lo = -8, *hi = 7; return true;
    case LT_U4: *lo = 0, *hi = 15; return true;
    case LT_I2: *lo = -2, *hi = 1; return true;
    case LT_U2: *lo = 0, *hi = 3; return true;
    default: return false;
    }
}

const lt_node *lt_ad_fake_quant(const lt_node *n)
{
    if (n->op != LT_OP_DEQUANTIZE_LINEAR || n->nin < 2 || !n->in[0] || !n->in[0]->def)
        return NULL;
    const lt_node *q = n->in[0]->def;
    double lo, hi;
    if (q->op != LT_OP_QUANTIZE_LINEAR || q->nin < 2 || !q->in[0] || !q->in[1] || q->nout < 1 || !q->out[0] ||
        !int_range(q->out[0]->type.dtype, &lo, &hi) || lt_attr_int(q, "block_size", 0) > 0)
        return NULL;
    return q;
}

/* The pair's straight-through gradient, as torch's fake_quantize gives it:
 * dy passes to Q's x where round(x / scale) + zero_point lies in the type's
 * range and is cut where the quantization clips. Q's scale and zero point
 * are an observer's statistics, not trained (train/trainer.c keeps them
 * fixed), so they get none. */
static lt_status fake_quant_grad(lt_ad *c, const lt_node *n, const lt_node *q, lt_ival *g)
{
    const lt_ival *xs = q->in[0];
    if (!g || xs->id >= c->nsrc || !c->cell[xs->id])
        return LT_OK;
    lt_ival *x = lt_ad_mapped(c, xs), *sc = lt_ad_mapped(c, q->in[1]), *zp = q->nin > 2 ? lt_ad_mapped(c, q->in[2]) : NULL;
    double lo, hi;
    int_range(q->out[0]->type.dtype, &lo, &hi);
    int r = x->type.rank;
    const lt_type *st = &q->in[1]->type;
    if (st->rank < 0 || st->rank > 1)
        return lt_ad_fail(c, n, "the straight-through gradient needs QuantizeLinear's y_scale known to be a scalar or "
                          "1-D");
    bool per_axis = st->rank == 1 && !(st->dims[0].sym < 0 && st->dims[0].v == 1);
    lt_dtype ft = x->type.dtype;
    lt_ival *s = lt_ad_cast(c, sc, ft), *z = zp ? lt_ad_cast(c, zp, ft) : NULL;
    if (per_axis) {
        /* the 1-D scale and zero point along Q's axis, broadcast against x */
        int64_t axis = lt_attr_int(q, "axis", 1), axes[LT_MAX_RANK];
        if (r < 1)
            return lt_ad_fail(c, n, "the straight-through gradient of a per-axis QuantizeLinear needs x's rank");
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r)
            return lt_ad_fail(c, n, "QuantizeLinear's axis %lld is out of range for rank %d",
                              (long long)lt_attr_int(q, "axis", 1), r);
        int na = 0;
        for (int i = 0; i < r; i++)
            if (i != axis)
                axes[na++] = i;
        s = lt_ad_unsqueeze(c, s, na, axes);
        if (z)
            z = lt_ad_unsqueeze(c, z, na, axes);
    }
    lt_ival *xq = OP1(ROUND, OP2(DIV, x, s));
    if (z)
        xq = OP2(ADD, xq, z);
    lt_ival *inside = OP2(AND, OP2(GREATER_OR_EQUAL, xq, lt_ad_scalar(c, ft, lo)),
                          OP2(LESS_OR_EQUAL, xq, lt_ad_scalar(c, ft, hi)));
    lt_ival *dx = OP2(MUL, lt_ad_cast(c, g, ft), lt_ad_cast(c, inside, ft));
    if (!dx)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    lt_node *a = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
    if (!a)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    a->in[0] = c->cell[xs->id];
    a->in[1] = dx;
    return LT_OK;
}

/* ---- DequantizeLinear ---- */

/* y = (x - zero_point) * scale, per tensor or per slice along axis: the
 * scale's gradient is sum(dy x) - zero_point sum(dy) over what it scales
 * (x and the zero point are integers) */
RULE(r_dequantize_linear)
{
    (void)out;
    const lt_node *fq = lt_ad_fake_quant(n);
    if (fq)
        return fake_quant_grad(c, n, fq, G);
    lt_ival *x = in[0], *sc = in[1], *zp = lt_ad_arg(n, in, 2);
    const lt_type *st = &sc->type;
    if (lt_attr_int(n, "block_size", 0) > 0)
        return lt_ad_fail(c, n, "a block-quantized x_scale (block_size) is not differentiated");
    if (st->rank < 0 || st->rank > 1)
        return lt_ad_fail(c, n, "x_scale must be known to be a scalar or 1-D to be differentiated");
    /* a 1-D scale of one element scales the whole tensor, as the kernel reads it */
    bool per_axis = st->rank == 1 && !(st->dims[0].sym < 0 && st->dims[0].v == 1);
    int64_t axes[LT_MAX_RANK];
    int na = 0, r = x->type.rank;
    if (per_axis) {
        int64_t axis = lt_attr_int(n, "axis", 1);
        if (r < 0)
            return lt_ad_fail(c, n, "a per-axis x_scale needs x's rank to be differentiated");
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r)
            return lt_ad_fail(c, n, "axis %lld is out of range for rank %d", (long long)lt_attr_int(n, "axis", 1),
                              r);
        for (int i = 0; i < r; i++)
            if (i != axis)
                axes[na++] = i;
    }
    lt_dtype ft = G->type.dtype != LT_UNDEFINED ? G->type.dtype : lt_ad_float_dtype(sc);
    lt_ival *v = lt_ad_sum_over(c, OP2(MUL, G, lt_ad_cast(c, x, ft)), !per_axis, na, axes);
    if (zp)
        v = OP2(SUB, v, OP2(MUL, lt_ad_cast(c, zp, ft), lt_ad_sum_over(c, G, !per_axis, na, axes)));
    return ACC(1, per_axis ? lt_ad_unbroadcast(c, v, sc) : OP2(RESHAPE, v, OP1(SHAPE, sc)));
}

void lt_ad_register_quant(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_DEQUANTIZE_LINEAR] = r_dequantize_linear;
    nd[LT_OP_DEQUANTIZE_LINEAR] = (1u << 0) | (1u << 2);
    /* QuantizeLinear's output is an integer tensor, which carries no adjoint
     * (only float values are differentiated), and rounding makes it
     * piecewise constant in x and the scale anyway. A QuantizeLinear read
     * by a DequantizeLinear is fake quantization: the pair's straight-
     * through gradient goes from the DequantizeLinear's dy to the
     * QuantizeLinear's x, past the integer link (lt_ad_fake_quant). */
    nd[LT_OP_QUANTIZE_LINEAR] = ~0u;
}
