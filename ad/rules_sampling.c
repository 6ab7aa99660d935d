/* Gradient rules: GridSample, RoiAlign, MaxRoiPool, Col2Im and DeformConv
 * through their gradient ops; MaxUnpool as a gather of dy at the indices. */
#include "rules_util.h"
#include <string.h>

/* ---- through gradient kernels ---- */
RULE(r_grid_sample)
{
    /* nearest sampling is piecewise constant in the grid */
    bool nearest = !strcmp(lt_attr_str(n, "mode", ""), "nearest");
    bool wx = lt_ad_wants(c, n, 0), wg = lt_ad_wants(c, n, 1) && !nearest;
    if (!wx && !wg)
        return LT_OK;
    lt_ival *ins[3] = {G, in[0], in[1]};
    lt_node *k = lt_ad_emit_grad(c, n, LT_OP_GRID_SAMPLE_GRAD, 3, ins, 3, 2);
    if (!k)
        return LT_ERR_NOMEM;
    if (!wx)
        k->out[0] = NULL;
    if (!wg)
        k->out[1] = NULL;
    lt_status s = wx ? ACC(0, k->out[0]) : LT_OK;
    if (s == LT_OK && wg)
        s = ACC(1, k->out[1]);
    return s;
}

RULE(r_roi_align)
{
    lt_ival *ins[4] = {G, in[0], in[1], in[2]};
    lt_node *k = lt_ad_emit_grad(c, n, LT_OP_ROI_ALIGN_GRAD, 4, ins, 4, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

RULE(r_max_roi_pool)
{
    lt_ival *ins[3] = {G, in[0], in[1]};
    lt_node *k = lt_ad_emit_grad(c, n, LT_OP_MAX_ROI_POOL_GRAD, 3, ins, 3, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

/* Col2Im sums blocks into the image: its adjoint is the im2col of dy */
RULE(r_col2im)
{
    lt_ival *ins[4] = {G, in[0], in[1], in[2]};
    lt_node *k = lt_ad_emit_grad(c, n, LT_OP_COL2_IM_GRAD, 4, ins, 4, 1);
    return k ? ACC(0, k->out[0]) : LT_ERR_NOMEM;
}

/* ---- MaxUnpool ---- */

/* dy cut or zero-padded at the end of each spatial axis from output_shape's
 * sizes to the default unpooled ones, (in - 1) * stride + kernel - pads,
 * which the indices address (NULL where the attributes disagree) */
static lt_ival *to_default_shape(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *g, lt_ival *os)
{
    int nk, ns = 0, np = 0;
    const int64_t *ker = lt_attr_ints(n, "kernel_shape", &nk), *st = lt_attr_ints(n, "strides", &ns);
    const int64_t *pads = lt_attr_ints(n, "pads", &np);
    if (!ker || nk < 1 || nk > LT_MAX_RANK - 2 || (st && ns != nk) || (pads && np != 2 * nk))
        return NULL;
    int64_t sv[LT_MAX_RANK], rest[LT_MAX_RANK], axes[LT_MAX_RANK], zeros[LT_MAX_RANK] = {0};
    for (int i = 0; i < nk; i++) {
        sv[i] = st ? st[i] : 1;
        rest[i] = ker[i] - (pads ? pads[i] + pads[nk + i] : 0) - sv[i];
        axes[i] = 2 + i;
    }
    lt_ival *spatial = lt_ad_slice(c, OP1(SHAPE, in[0]), INTS(2), INTS(INT64_MAX), INTS(0));
    lt_ival *dflt = OP2(ADD, OP2(MUL, spatial, lt_ad_ints(c, nk, sv)), lt_ad_ints(c, nk, rest));
    lt_ival *given = lt_ad_slice(c, lt_ad_as_i64(c, os), INTS(2), INTS(INT64_MAX), INTS(0));
    lt_ival *grow = OP2(MAX, OP2(SUB, dflt, given), lt_ad_scalar(c, LT_I64, 0));
    lt_ival *padded = lt_ad_pad_end(c, g, grow, nk, axes, K(0));
    return lt_ad_slice(c, padded, lt_ad_ints(c, nk, zeros), dflt, lt_ad_ints(c, nk, axes));
}

/* dx = dy at the indices. Where indices repeat the forward's last write
 * wins, so only that element gets the gradient: the largest element number
 * scattered to each place tells which. */
RULE(r_max_unpool)
{
    lt_ival *x = in[0], *g = G, *os = lt_ad_arg(n, in, 2);
    if (os && !(g = to_default_shape(c, n, in, G, os)))
        return lt_ad_fail(c, n, "kernel_shape, strides and pads must agree to be differentiated");
    lt_ival *idx = OP2(RESHAPE, in[1], INTS(-1)), *gf = OP2(RESHAPE, g, INTS(-1));
    lt_ival *num = OP3(RANGE, lt_ad_scalar(c, LT_I64, 0), OP1(SIZE, x), lt_ad_scalar(c, LT_I64, 1));
    lt_ival *ins[3] = {lt_ad_cast(c, lt_ad_zeros_like(c, gf), LT_I64), idx, num};
    lt_node *k = lt_ad_emit(c, LT_OP_SCATTER_ELEMENTS, 3, ins, 3, 1);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, k, "axis", 0);
    lt_ad_attr_str(c, k, "reduction", "max");
    lt_ad_infer(c, k);
    lt_ival *last = OP2(EQUAL, OP2(GATHER, k->out[0], idx), num);
    lt_ival *v = OP3(WHERE, last, OP2(GATHER, gf, idx), K(0));
    return ACC(0, OP2(RESHAPE, v, OP1(SHAPE, x)));
}

/* DeformConv through DeformConvGrad, to every input it has: X, W, the
 * offsets (through the bilinear weights' slopes), B and the mask */
RULE(r_deform_conv)
{
    (void)out;
    bool want[5], any = false;
    for (int i = 0; i < 5; i++) {
        want[i] = i < n->nin && in[i] && lt_ad_wants(c, n, i);
        any |= want[i];
    }
    if (!G || !any)
        return LT_OK;
    lt_node *k = lt_ad_grad_node(c, n, LT_OP_DEFORM_CONV_GRAD, 1, dout, 5, in, 5);
    return k ? lt_ad_accum_wanted(c, n, k, want, 5) : LT_ERR_NOMEM;
}

void lt_ad_register_sampling(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_GRID_SAMPLE] = r_grid_sample;
    t[LT_OP_ROI_ALIGN] = r_roi_align;
    t[LT_OP_MAX_ROI_POOL] = r_max_roi_pool;
    t[LT_OP_MAX_UNPOOL] = r_max_unpool;
    t[LT_OP_COL2_IM] = r_col2im;
    t[LT_OP_DEFORM_CONV] = r_deform_conv;
    /* The boxes are constants, as detection training treats its proposals
     * (torchvision and Detectron2 give them no gradient); MaxRoiPool rounds
     * them to pixels, so its gradient there is zero anyway. */
    nd[LT_OP_ROI_ALIGN] = (1u << 1) | (1u << 2);
    nd[LT_OP_MAX_ROI_POOL] = 1u << 1;
    nd[LT_OP_MAX_UNPOOL] = (1u << 1) | (1u << 2);
    nd[LT_OP_COL2_IM] = (1u << 1) | (1u << 2);
}
