/* Gradient rules: the scale of DequantizeLinear; QuantizeLinear carries no
 * gradient (see the registrar). */
#include "rules_util.h"
#include <string.h>

/* ---- DequantizeLinear ---- */

/* y = (x - zero_point) * scale, per tensor or per slice along axis: the
 * scale's gradient is sum(dy x) - zero_point sum(dy) over what it scales
 * (x and the zero point are integers) */
RULE(r_dequantize_linear)
{
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
     * piecewise constant in x and the scale anyway. A straight-through
     * estimator for Quantize-Dequantize pairs would need the integer link
     * between them to carry an adjoint, which the transform does not do. */
    nd[LT_OP_QUANTIZE_LINEAR] = ~0u;
}
