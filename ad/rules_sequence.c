/* Gradients through sequences made by SplitToSequence and read by
 * SequenceAt (how torch's dynamo exporter writes torch.split, chunk and
 * unbind): the sequence carries no adjoint of its own; each SequenceAt's
 * adjoint is padded with zeros to the split tensor's shape at its chunk's
 * offset along the split axis and added to that tensor's adjoint. The chunk
 * index, the split sizes and the tensor's shape are read at run time. */
#include "ad_impl.h"
#include "rules_util.h"

const lt_node *lt_ad_seq_split(const lt_node *n)
{
    if (n->op != LT_OP_SEQUENCE_AT || n->nin < 2 || !n->in[0] || !n->in[0]->def)
        return NULL;
    const lt_node *sp = n->in[0]->def;
    return sp->op == LT_OP_SPLIT_TO_SEQUENCE && sp->nin >= 1 && sp->in[0] ? sp : NULL;
}

static lt_ival *to_i64(lt_ad *c, lt_ival *v)
{
    if (!v || v->type.dtype == LT_I64)
        return v;
    lt_node *k = lt_ad_node(c, LT_OP_CAST, 1, 1);
    if (!k)
        return NULL;
    k->in[0] = v;
    lt_ad_attr_int(c, k, "to", LT_I64);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* v[axis:axis+1] of a 1-D shape tensor */
static lt_ival *dim_of(lt_ad *c, lt_ival *shape, int64_t axis)
{
    int64_t a[1] = {axis}, b[1] = {axis + 1};
    return OP3(SLICE, shape, lt_ad_ints(c, 1, a), lt_ad_ints(c, 1, b));
}

/* Concat of parts[0..np) along axis 0; NULL when one is missing */
static lt_ival *concat0(lt_ad *c, lt_ival *const *parts, int np)
{
    for (int i = 0; i < np; i++)
        if (!parts[i])
            return NULL;
    lt_node *cat = lt_ad_node(c, LT_OP_CONCAT, np, 1);
    if (!cat)
        return NULL;
    for (int i = 0; i < np; i++)
        cat->in[i] = parts[i];
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    return cat->out[0];
}

/* pads for Pad: zeros except begin[axis] = before, end[axis] = after */
static lt_ival *axis_pads(lt_ad *c, int rank, int64_t axis, lt_ival *before, lt_ival *after)
{
    static const int64_t zeros[LT_MAX_RANK] = {0};
    lt_ival *parts[6];
    int np = 0;
    int64_t lo = axis, hi = rank - 1 - axis;
    for (int side = 0; side < 2; side++) {
        if (lo)
            parts[np++] = lt_ad_ints(c, (int)lo, zeros);
        parts[np++] = side ? after : before;
        if (hi)
            parts[np++] = lt_ad_ints(c, (int)hi, zeros);
    }
    return concat0(c, parts, np);
}

/* x's shape with -1 at axis: a chunk of x along axis, whatever its length */
static lt_ival *chunk_shape(lt_ad *c, lt_ival *x, int rank, int64_t axis)
{
    int64_t zero = 0, at = axis, next = axis + 1, end = rank, minus = -1;
    lt_ival *sx = OP1(SHAPE, x);
    lt_ival *parts[3];
    int np = 0;
    if (axis > 0)
        parts[np++] = OP3(SLICE, sx, lt_ad_ints(c, 1, &zero), lt_ad_ints(c, 1, &at));
    parts[np++] = lt_ad_ints(c, 1, &minus);
    if (axis + 1 < rank)
        parts[np++] = OP3(SLICE, sx, lt_ad_ints(c, 1, &next), lt_ad_ints(c, 1, &end));
    return concat0(c, parts, np);
}

static lt_status r_sequence_at(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                               lt_ival *const *dout)
{
    (void)out;
    const lt_node *sp = lt_ad_seq_split(n);
    if (!sp)
        return lt_ad_fail(c, n, "no gradient through a sequence that SplitToSequence did not make");
    const lt_ival *xs = sp->in[0];
    if (!dout[0] || xs->id >= c->nsrc || !c->cell[xs->id])
        return LT_OK;
    int rank = xs->type.rank;
    if (rank < 1)
        return lt_ad_fail(c, n, "gradient through SplitToSequence of a tensor of unknown rank");
    int64_t axis = lt_attr_int(sp, "axis", 0);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return lt_ad_fail(c, n, "SplitToSequence axis out of range");
    lt_ival *x = lt_ad_mapped(c, xs);
    lt_ival *split = sp->nin > 1 && sp->in[1] ? to_i64(c, lt_ad_mapped(c, sp->in[1])) : NULL;
    lt_ival *g = dout[0];
    int64_t one[1] = {1};
    lt_ival *dim = dim_of(c, OP1(SHAPE, x), axis);
    lt_ival *idx = OP2(RESHAPE, to_i64(c, in[1]), lt_ad_ints(c, 1, one));
    lt_ival *start;
    if (!split) {
        /* chunks of one; without keepdims the axis was dropped */
        if (!lt_attr_int(sp, "keepdims", 1))
            g = OP2(UNSQUEEZE, g, lt_ad_ints(c, 1, &axis));
        start = OP2(MOD, idx, dim);
    } else if (split->type.rank == 0) {
        /* equal chunks of s (the last may be shorter): ceil(dim / s) of them;
         * without keepdims a split of 1 dropped the axis (runtime/cpu/
         * control_seq.c): the chunk's shape put back either way */
        if (!lt_attr_int(sp, "keepdims", 1))
            g = OP2(RESHAPE, g, chunk_shape(c, x, rank, axis));
        lt_ival *s = OP2(RESHAPE, split, lt_ad_ints(c, 1, one));
        lt_ival *count = OP2(DIV, OP2(SUB, OP2(ADD, dim, s), lt_ad_ints(c, 1, one)), s);
        start = OP2(MUL, OP2(MOD, idx, count), s);
    } else {
        /* chunk i starts at the sum of the sizes before it */
        lt_ival *axis0 = lt_ad_scalar(c, LT_I64, 0);
        lt_node *cs = axis0 ? lt_ad_node(c, LT_OP_CUM_SUM, 2, 1) : NULL;
        if (!cs)
            return LT_ERR_NOMEM;
        cs->in[0] = split;
        cs->in[1] = axis0;
        lt_ad_attr_int(c, cs, "exclusive", 1);
        lt_ad_infer(c, cs);
        start = OP2(GATHER, cs->out[0], OP2(MOD, idx, OP1(SHAPE, split)));
    }
    lt_ival *len = dim_of(c, OP1(SHAPE, g), axis);
    lt_ival *after = OP2(SUB, OP2(SUB, dim, start), len);
    lt_ival *dx = OP2(PAD, g, axis_pads(c, rank, axis, start, after));
    if (!dx)
        return LT_ERR_NOMEM;
    lt_node *a = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
    if (!a)
        return LT_ERR_NOMEM;
    a->in[0] = c->cell[xs->id];
    a->in[1] = dx;
    return LT_OK;
}

void lt_ad_register_sequence(lt_ad_rule *tab, uint32_t *nondiff)
{
    tab[LT_OP_SEQUENCE_AT] = r_sequence_at;
    nondiff[LT_OP_SEQUENCE_AT] = ~1u; /* the position */
}
