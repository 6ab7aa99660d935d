/* Gradient rules: the scale of DequantizeLinear, and the straight-through
 * gradient of a QuantizeLinear -> DequantizeLinear pair (fake quantization,
 * as torch's quantization-aware training exports it); QuantizeLinear alone
 * carries no gradient (see the registrar). */
#include "rules_util.h"
#include <string.h>

/* ---- where each element finds its scale ---- */

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

/* How n ((De)QuantizeLinear) lays its scale src over x of rank r: 0 per
 * tensor, 1 per axis, 2 in blocks of *bs along *axis (opset 21); -1 after
 * failing with a message. */
static int qlayout(lt_ad *c, const lt_node *n, const lt_ival *src, int r, int64_t *axis, int64_t *bs)
{
    const lt_type *st = &src->type;
    *bs = lt_attr_int(n, "block_size", 0);
    *axis = lt_attr_int(n, "axis", 1);
    if (*bs < 0) {
        lt_ad_fail(c, n, "block_size %lld is negative", (long long)*bs);
        return -1;
    }
    if (*bs == 0 && (st->rank < 0 || st->rank > 1)) {
        lt_ad_fail(c, n, "the scale must be known to be a scalar or 1-D to be differentiated (or blocked, with "
                   "block_size)");
        return -1;
    }
    if (*bs == 0 && (st->rank == 0 || (st->dims[0].sym < 0 && st->dims[0].v == 1)))
        return 0; /* a 1-D scale of one element scales the whole tensor, as the kernel reads it */
    if (r < 1) {
        lt_ad_fail(c, n, "a %s scale needs x's rank to be differentiated", *bs ? "blocked" : "per-axis");
        return -1;
    }
    int64_t a = *axis < 0 ? *axis + r : *axis;
    if (a < 0 || a >= r) {
        lt_ad_fail(c, n, "axis %lld is out of range for rank %d", (long long)*axis, r);
        return -1;
    }
    *axis = a;
    if (*bs > 0 && st->rank != r) {
        lt_ad_fail(c, n, "a blocked scale (block_size %lld) must be known to have x's rank %d to be differentiated",
                   (long long)*bs, r);
        return -1;
    }
    return *bs > 0 ? 2 : 1;
}

/* For each index along axis of x, the block holding it: i / bs for i in
 * [0, D), D being x's length there (not always a multiple of bs). */
static lt_ival *block_of(lt_ad *c, lt_ival *x, int64_t axis, int64_t bs)
{
    const lt_dim *d = &x->type.dims[axis];
    lt_ival *len = d->sym < 0 && d->v >= 0 ? lt_ad_scalar(c, LT_I64, (double)d->v)
                                           : OP2(GATHER, OP1(SHAPE, x), lt_ad_scalar(c, LT_I64, (double)axis));
    lt_ival *i = OP3(RANGE, lt_ad_scalar(c, LT_I64, 0), len, lt_ad_scalar(c, LT_I64, 1));
    return OP2(DIV, i, lt_ad_scalar(c, LT_I64, (double)bs));
}

/* v (a scale or zero point, as laid out by qlayout) made to broadcast
 * against x: as it is per tensor, with unit axes around axis per axis,
 * and each block's entry repeated over the block's indices when blocked */
static lt_ival *spread(lt_ad *c, lt_ival *v, lt_ival *x, int mode, int64_t axis, int64_t bs)
{
    if (mode == 0 || !v)
        return v;
    if (mode == 2) {
        lt_ival *ins[2] = {v, block_of(c, x, axis, bs)};
        lt_node *k = lt_ad_node_of(c, LT_OP_GATHER, 2, ins);
        if (!k)
            return NULL;
        lt_ad_attr_int(c, k, "axis", axis);
        lt_ad_infer(c, k);
        return k->out[0];
    }
    int64_t axes[LT_MAX_RANK];
    int na = 0;
    for (int i = 0; i < x->type.rank; i++)
        if (i != axis)
            axes[na++] = i;
    return lt_ad_unsqueeze(c, v, na, axes);
}

/* g (x's shape) summed over each block along axis: the scale's shape,
 * like that of scale_like */
static lt_ival *block_sum(lt_ad *c, lt_ival *g, lt_ival *x, lt_ival *scale_like, int64_t axis, int64_t bs)
{
    lt_ival *ins[3] = {g, block_of(c, x, axis, bs), scale_like};
    lt_node *k = lt_ad_emit(c, LT_OP_GATHER_GRAD, 3, ins, 3, 1);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "axis", axis);
    lt_ad_infer(c, k);
    return k->out[0];
}

static lt_ival *cast_to(lt_ad *c, lt_ival *v, lt_dtype t)
{
    return v && v->type.dtype == t ? v : lt_ad_cast(c, v, t);
}

/* ---- fake quantization ---- */

/* Every QuantizeLinear read by a DequantizeLinear, directly or through
 * operations that only move or reshape its integers (Transpose, Reshape,
 * ...): its gradient is the pair's (fake_quant_grad), which fails where it
 * has none to give rather than leave what was quantized without one. */
const lt_node *lt_ad_fake_quant(const lt_node *n)
{
    if (n->op != LT_OP_DEQUANTIZE_LINEAR || n->nin < 2 || !n->in[0] || !n->in[0]->def)
        return NULL;
    const lt_node *q = n->in[0]->def;
    for (int hops = 0; hops < 16 && q->nin >= 1 && q->in[0] && q->in[0]->def &&
                       (q->op == LT_OP_TRANSPOSE || q->op == LT_OP_RESHAPE || q->op == LT_OP_SQUEEZE ||
                        q->op == LT_OP_UNSQUEEZE || q->op == LT_OP_FLATTEN || q->op == LT_OP_IDENTITY);
         hops++)
        q = q->in[0]->def;
    if (q->op != LT_OP_QUANTIZE_LINEAR || q->nin < 2 || !q->in[0] || !q->in[1] || q->nout < 1 || !q->out[0])
        return NULL;
    return q;
}

/* The pair's straight-through gradient, as torch's fake_quantize gives it:
 * dy passes to Q's x where round(x / scale) + zero_point lies in the type's
 * range and is cut where the quantization clips, per tensor, per axis or
 * per block. The division is Q's own: in its precision (opset 25), else in
 * its scale's type. Q's scale and zero point are an observer's
 * statistics, not trained (train/trainer.c keeps them fixed), so they get
 * none; a DequantizeLinear scale of its own gets its exact gradient, and
 * Q's x that one's ratio to Q's scale. */
static lt_status dq_scale_grad(lt_ad *c, const lt_node *n, lt_ival *x, lt_ival *sc, lt_ival *zp, lt_ival *g);

static lt_status fake_quant_grad(lt_ad *c, const lt_node *n, const lt_node *q, lt_ival *const *in, lt_ival *g)
{
    if (n->in[0]->def != q)
        return lt_ad_fail(c, n, "the straight-through gradient of the QuantizeLinear making '%s' is taken only where "
                          "a DequantizeLinear reads its output directly; here a %s making '%s' lies between them",
                          q->out[0]->name ? q->out[0]->name : "?", lt_op_names[n->in[0]->def->op],
                          n->in[0]->name ? n->in[0]->name : "?");
    lt_status st = LT_OK;
    bool own_scale = n->in[1] != q->in[1];
    if (own_scale && lt_ad_wants(c, n, 1) && (st = dq_scale_grad(c, n, in[0], in[1], lt_ad_arg(n, in, 2), g)) != LT_OK)
        return st;
    const lt_ival *xs = q->in[0];
    if (!g || xs->id >= c->nsrc || !c->cell[xs->id])
        return LT_OK;
    double lo, hi;
    lt_dtype qt = q->out[0]->type.dtype;
    if (!int_range(qt, &lo, &hi))
        return lt_ad_fail(c, n, "QuantizeLinear -> DequantizeLinear (fake quantization) through %s has no "
                          "straight-through gradient here: only the integer types are differentiated",
                          qt == LT_UNDEFINED ? "a type not known" : lt_dtype_name(qt));
    lt_ival *x = lt_ad_mapped(c, xs), *sc = lt_ad_mapped(c, q->in[1]);
    lt_ival *zp = q->nin > 2 && q->in[2] ? lt_ad_mapped(c, q->in[2]) : NULL;
    int r = x->type.rank;
    int64_t axis, bs;
    int mode = qlayout(c, q, q->in[1], r, &axis, &bs);
    if (mode < 0)
        return LT_ERR_UNSUPPORTED;
    /* the division as Q does it (runtime/cpu/linalg_quant.c): in the
     * precision attribute's type, else the scale's; float64 for others */
    int64_t prec = lt_attr_int(q, "precision", 0);
    lt_dtype ft = x->type.dtype, pt = prec > 0 ? (lt_dtype)prec : sc->type.dtype;
    if (pt != LT_F32 && pt != LT_F16 && pt != LT_BF16)
        pt = LT_F64;
    lt_dtype ct = pt == LT_F64 ? LT_F64 : LT_F32; /* round(x / scale) + zero_point, exactly */
    lt_ival *s = spread(c, cast_to(c, sc, pt), x, mode, axis, bs);
    lt_ival *xq = cast_to(c, OP1(ROUND, OP2(DIV, cast_to(c, x, pt), s)), ct);
    if (zp)
        xq = OP2(ADD, xq, spread(c, cast_to(c, zp, ct), x, mode, axis, bs));
    lt_ival *inside = OP2(AND, OP2(GREATER_OR_EQUAL, xq, lt_ad_scalar(c, ct, lo)),
                          OP2(LESS_OR_EQUAL, xq, lt_ad_scalar(c, ct, hi)));
    lt_ival *dx = OP2(MUL, cast_to(c, g, ft), lt_ad_cast(c, inside, ft));
    int64_t daxis, dbs;
    int dmode = qlayout(c, n, n->in[1], r, &daxis, &dbs);
    if (dmode < 0)
        return LT_ERR_UNSUPPORTED;
    if (own_scale || dmode != mode || (mode && daxis != axis) || dbs != bs) {
        /* y = (q - z) s_dq where q ~ x / s_q: dy s_dq / s_q */
        lt_ival *sd = spread(c, cast_to(c, in[1], ft), x, dmode, daxis, dbs);
        dx = OP2(MUL, dx, OP2(DIV, sd, spread(c, cast_to(c, sc, ft), x, mode, axis, bs)));
    }
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

/* y = (x - zero_point) * scale, per tensor, per slice along axis or per
 * block: the scale's gradient is sum(dy x) - zero_point sum(dy) over what
 * it scales (x and the zero point are integers) */
static lt_status dq_scale_grad(lt_ad *c, const lt_node *n, lt_ival *x, lt_ival *sc, lt_ival *zp, lt_ival *g)
{
    int64_t axis, bs;
    int r = x->type.rank, mode = qlayout(c, n, n->in[1], r, &axis, &bs);
    if (mode < 0)
        return LT_ERR_UNSUPPORTED;
    lt_dtype ft = g->type.dtype != LT_UNDEFINED ? g->type.dtype : lt_ad_float_dtype(sc);
    if (mode == 2) {
        lt_ival *d = lt_ad_cast(c, x, ft);
        if (zp)
            d = OP2(SUB, d, spread(c, lt_ad_cast(c, zp, ft), x, mode, axis, bs));
        return ACC(1, block_sum(c, OP2(MUL, g, d), x, cast_to(c, sc, ft), axis, bs));
    }
    int64_t axes[LT_MAX_RANK];
    int na = 0;
    for (int i = 0; mode == 1 && i < r; i++)
        if (i != axis)
            axes[na++] = i;
    lt_ival *v = lt_ad_sum_over(c, OP2(MUL, g, lt_ad_cast(c, x, ft)), mode == 0, na, axes);
    if (zp)
        v = OP2(SUB, v, OP2(MUL, lt_ad_cast(c, zp, ft), lt_ad_sum_over(c, g, mode == 0, na, axes)));
    return ACC(1, mode == 1 ? lt_ad_unbroadcast(c, v, sc) : OP2(RESHAPE, v, OP1(SHAPE, sc)));
}

RULE(r_dequantize_linear)
{
    (void)out;
    const lt_node *fq = lt_ad_fake_quant(n);
    if (fq)
        return fake_quant_grad(c, n, fq, in, G);
    return dq_scale_grad(c, n, in[0], in[1], lt_ad_arg(n, in, 2), G);
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
