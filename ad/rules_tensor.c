/* Gradient rules: shape manipulation, indexing, reductions and MatMul/Gemm.
 * Shapes that are only known at run time are read with Shape nodes. */
#include "ad_impl.h"
#include "rules_util.h"
#include <string.h>


/* g reshaped to x's shape */
static lt_status r_reshape_like(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                                lt_ival *const *dout)
{
    return ACC(0, OP2(RESHAPE, G, OP1(SHAPE, in[0])));
}

static lt_status r_transpose(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                             lt_ival *const *dout)
{
    int r = in[0]->type.rank, np;
    const int64_t *perm = lt_attr_ints(n, "perm", &np);
    /* perm fixes the rank where inference could not tell it */
    if (perm && r < 0)
        r = np;
    if (r < 0)
        return lt_ad_fail(c, n, "Transpose needs a known rank (or perm) to be differentiated");
    if (r > LT_MAX_RANK || (perm && np != r))
        return lt_ad_fail(c, n, "perm has %d entries for an input of rank %d", perm ? np : 0, r);
    int64_t inv[LT_MAX_RANK];
    bool seen[LT_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        int64_t a = perm ? (perm[i] < 0 ? perm[i] + r : perm[i]) : r - 1 - i;
        if (a < 0 || a >= r || seen[a])
            return lt_ad_fail(c, n, "perm is not a permutation of 0..%d", r - 1);
        seen[a] = true;
        inv[a] = i;
    }
    lt_node *t = lt_ad_node(c, LT_OP_TRANSPOSE, 1, 1);
    if (!t)
        return LT_ERR_NOMEM;
    t->in[0] = G;
    lt_ad_attr_ints(c, t, "perm", r, inv);
    lt_ad_infer(c, t);
    return ACC(0, t->out[0]);
}

/* the copy of g between start and end along axis, both 1-D int64 values */
static lt_ival *slice_axis(lt_ad *c, lt_ival *g, lt_ival *start, lt_ival *end, int64_t axis)
{
    lt_ival *axes = lt_ad_ints(c, 1, &axis);
    lt_node *s = lt_ad_node(c, LT_OP_SLICE, 4, 1);
    if (!s || !axes)
        return NULL;
    s->in[0] = g;
    s->in[1] = start;
    s->in[2] = end;
    s->in[3] = axes;
    lt_ad_infer(c, s);
    return s->out[0];
}

static lt_status r_concat(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    int64_t axis = lt_attr_int(n, "axis", 0); /* the importer writes Concat-1's default out */
    if (axis < 0)
        axis += out[0]->type.rank;
    lt_ival *ax = lt_ad_ints(c, 1, &axis), *off = lt_ad_ints(c, 1, (int64_t[]){0});
    for (int i = 0; i < n->nin; i++) {
        lt_ival *shape = OP1(SHAPE, in[i]);
        lt_node *g = lt_ad_node(c, LT_OP_GATHER, 2, 1);
        if (!g || !shape)
            return LT_ERR_NOMEM;
        g->in[0] = shape;
        g->in[1] = ax;
        lt_ad_infer(c, g);
        lt_ival *end = OP2(ADD, off, g->out[0]);
        if (lt_ad_wants(c, n, i)) {
            lt_status s = ACC(i, slice_axis(c, G, off, end, axis));
            if (s != LT_OK)
                return s;
        }
        off = end;
    }
    return LT_OK;
}

static lt_status r_split(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                         lt_ival *const *dout)
{
    lt_ival *parts[64];
    if (n->nout > 64)
        return lt_ad_fail(c, n, "too many outputs");
    for (int j = 0; j < n->nout; j++) /* an output nobody differentiated contributes zeros */
        if (!(parts[j] = dout[j] ? dout[j] : lt_ad_zeros_like(c, out[j])))
            return LT_ERR_NOMEM;
    lt_node *cat = lt_ad_node(c, LT_OP_CONCAT, n->nout, 1);
    if (!cat)
        return LT_ERR_NOMEM;
    for (int j = 0; j < n->nout; j++)
        cat->in[j] = parts[j];
    lt_ad_attr_int(c, cat, "axis", lt_attr_int(n, "axis", 0));
    lt_ad_infer(c, cat);
    return ACC(0, cat->out[0]);
}

/* grad ops taking (dy, forward inputs...) with the forward node's attributes */
static lt_ival *grad_op(lt_ad *c, const lt_node *n, lt_op op, int nin, lt_ival *const *ins, int nout, int which)
{
    lt_node *k = lt_ad_grad_node(c, n, op, nin, ins, 0, NULL, nout);
    return k ? k->out[which] : NULL;
}

static lt_status r_slice(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                         lt_ival *const *dout)
{
    lt_ival *ins[6] = {G, in[0], n->nin > 1 ? in[1] : NULL, n->nin > 2 ? in[2] : NULL, n->nin > 3 ? in[3] : NULL,
                       n->nin > 4 ? in[4] : NULL};
    return ACC(0, grad_op(c, n, LT_OP_SLICE_GRAD, 6, ins, 1, 0));
}

static lt_status r_gather(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    lt_op op = n->op == LT_OP_GATHER ? LT_OP_GATHER_GRAD
               : n->op == LT_OP_GATHER_ELEMENTS ? LT_OP_GATHER_ELEMENTS_GRAD
                                                : LT_OP_GATHER_ND_GRAD;
    lt_ival *ins[3] = {G, in[1], in[0]};
    return ACC(0, grad_op(c, n, op, 3, ins, 1, 0));
}

static lt_status r_pad(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out, lt_ival *const *dout)
{
    lt_ival *ins[5] = {G, in[0], n->nin > 1 ? in[1] : NULL, n->nin > 2 ? in[2] : NULL, n->nin > 3 ? in[3] : NULL};
    return ACC(0, grad_op(c, n, LT_OP_PAD_GRAD, 5, ins, 1, 0));
}

static lt_status r_expand(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    return ACC(0, OP2(REDUCE_SUM_LIKE, G, in[0]));
}

/* ---- reductions ---- */
/* g brought back to x's shape: the reduced axes are reinserted, then expanded */
static lt_ival *unreduce(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *g, lt_status *st)
{
    *st = LT_OK;
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    if (!keep) {
        int na = 0;
        const int64_t *axes = lt_attr_ints(n, "axes", &na);
        lt_ival *axv = NULL;
        bool axes_input = n->nin > 1 && n->in[1];
        if (axes_input) {
            axv = in[1];
        } else if (axes && na > 0) {
            axv = lt_ad_ints(c, na, axes);
        }
        if (axv) {
            g = OP2(UNSQUEEZE, g, axv);
        } else {
            /* every axis was reduced: g is a scalar and expands as it is */
        }
    }
    return OP2(EXPAND, g, OP1(SHAPE, in[0]));
}

/* v summed over the axes n reduces, with n's keepdims */
static lt_ival *sum_as_reduced(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *v)
{
    int na = 0;
    const int64_t *axes = lt_attr_ints(n, "axes", &na);
    lt_ival *ins[2] = {v, n->nin > 1 && n->in[1] ? in[1] : axes && na > 0 ? lt_ad_ints(c, na, axes) : NULL};
    lt_node *k = lt_ad_node_of(c, LT_OP_REDUCE_SUM, ins[1] ? 2 : 1, ins);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "keepdims", lt_attr_int(n, "keepdims", 1) != 0);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* ReduceProd: ye / x where the slice holds no zero; where it holds one,
 * that element's gradient is the product of the others and the rest get
 * none; two zeros or more give every element none (as torch.prod) */
static lt_ival *prod_grad(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *ge, lt_status *st)
{
    lt_ival *x = in[0];
    lt_dtype t = lt_ad_float_dtype(x);
    lt_ival *iszero = OP2(EQUAL, x, K(0)), *nz = lt_ad_cast(c, iszero, t);
    lt_ival *x1 = OP2(ADD, x, nz); /* the zeros made ones */
    lt_ival *ins[2] = {x1, n->nin > 1 && n->in[1] ? in[1] : NULL};
    lt_node *p = lt_ad_emit_grad(c, n, LT_OP_REDUCE_PROD, ins[1] ? 2 : 1, ins, 1, 1);
    lt_ival *zsum = sum_as_reduced(c, n, in, nz);
    if (!p || !zsum) {
        *st = LT_ERR_NOMEM;
        return NULL;
    }
    lt_ival *others = unreduce(c, n, in, p->out[0], st), *zeros = unreduce(c, n, in, zsum, st);
    lt_ival *at_zero = OP3(WHERE, OP2(EQUAL, zeros, K(1)), others, K(0));
    lt_ival *elsewhere = OP3(WHERE, OP2(EQUAL, zeros, K(0)), OP2(DIV, others, x1), K(0));
    return OP2(MUL, ge, OP3(WHERE, iszero, at_zero, elsewhere));
}

static lt_status r_reduce(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    if (n->nin > 1 && n->in[1] && n->in[1]->type.rank == 1 && n->in[1]->type.dims[0].v == 0 &&
        lt_attr_int(n, "noop_with_empty_axes", 0)) {
        /* nothing reduced: what remains is the op's elementwise part */
        lt_ival *x = in[0];
        switch (n->op) {
        case LT_OP_REDUCE_L1:
        case LT_OP_REDUCE_L2: return ACC(0, OP2(MUL, G, OP1(SIGN, x)));
        case LT_OP_REDUCE_SUM_SQUARE: return ACC(0, OP2(MUL, G, OP2(MUL, x, K(2))));
        case LT_OP_REDUCE_LOG_SUM: return ACC(0, OP2(DIV, G, x));
        default: return ACC(0, G);
        }
    }
    lt_status s;
    lt_ival *ge = unreduce(c, n, in, G, &s);
    lt_ival *ye = NULL;
    if (n->op != LT_OP_REDUCE_SUM && n->op != LT_OP_REDUCE_MEAN)
        ye = unreduce(c, n, in, out[0], &s);
    lt_ival *x = in[0], *d = NULL;
    lt_dtype t = lt_ad_float_dtype(x);
    switch (n->op) {
    case LT_OP_REDUCE_SUM: d = ge; break;
    case LT_OP_REDUCE_MEAN: d = lt_ad_div_count(c, ge, OP2(DIV, OP1(SIZE, x), OP1(SIZE, out[0]))); break;
    case LT_OP_REDUCE_SUM_SQUARE: d = OP2(MUL, ge, OP2(MUL, x, lt_ad_scalar(c, t, 2))); break;
    case LT_OP_REDUCE_L1: d = OP2(MUL, ge, OP1(SIGN, x)); break;
    case LT_OP_REDUCE_L2:
        /* a slice of zeros (F.normalize of a zero row) has no direction:
         * its gradient is zero, as torch's, not 0/0 */
        d = OP2(MUL, ge, OP2(DIV, x, OP2(ADD, ye, lt_ad_cast(c, OP2(EQUAL, ye, K(0)), t))));
        break;
    case LT_OP_REDUCE_LOG_SUM_EXP: d = OP2(MUL, ge, OP1(EXP, OP2(SUB, x, ye))); break;
    case LT_OP_REDUCE_LOG_SUM: d = OP2(MUL, ge, OP1(EXP, OP1(NEG, ye))); break;
    case LT_OP_REDUCE_PROD: d = prod_grad(c, n, in, ge, &s); break;
    case LT_OP_REDUCE_MAX:
    case LT_OP_REDUCE_MIN: {
        /* the values equal to the result share its gradient evenly, as
         * PyTorch's amax/amin: dy / (how many there are) */
        lt_ival *mask = lt_ad_cast(c, OP2(EQUAL, x, ye), t), *ties = sum_as_reduced(c, n, in, mask);
        if (!ties)
            return LT_ERR_NOMEM;
        d = OP2(DIV, OP2(MUL, mask, ge), unreduce(c, n, in, ties, &s));
        break;
    }
    default: return lt_ad_fail(c, n, "no gradient rule");
    }
    return ACC(0, d);
}

static lt_status r_softmax(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                           lt_ival *const *dout)
{
    lt_ival *ins[2] = {G, out[0]};
    return ACC(0, grad_op(c, n, n->op == LT_OP_SOFTMAX ? LT_OP_SOFTMAX_GRAD : LT_OP_LOG_SOFTMAX_GRAD, 2, ins, 1, 0));
}

/* ---- matrix products ---- */
static lt_ival *swap_last(lt_ad *c, lt_ival *v)
{
    int r = v->type.rank;
    int64_t perm[LT_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[r - 1] = r - 2;
    perm[r - 2] = r - 1;
    lt_node *t = lt_ad_node(c, LT_OP_TRANSPOSE, 1, 1);
    if (!t)
        return NULL;
    t->in[0] = v;
    lt_ad_attr_ints(c, t, "perm", r, perm);
    lt_ad_infer(c, t);
    return t->out[0];
}

static lt_ival *gemm(lt_ad *c, lt_ival *a, lt_ival *b, int ta, int tb, float alpha);

static lt_status r_matmul(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                          lt_ival *const *dout)
{
    lt_ival *a = in[0], *b = in[1];
    if (a->type.rank < 1 || b->type.rank < 1)
        return lt_ad_fail(c, n, "MatMul with an operand of unknown rank cannot be differentiated");
    lt_status s = LT_OK;
    if (a->type.rank == 1 || b->type.rank == 1) {
        /* a vector operand (x @ v, a Linear on one sample): the product of
         * the matrices [1, K] or [K, 1] it stands for, with the dim the
         * product dropped put back into G and taken out of the gradient */
        int64_t first = 0, last = -1, prev = -2;
        lt_ival *a2 = a->type.rank == 1 ? OP2(UNSQUEEZE, a, lt_ad_ints(c, 1, &first)) : a;
        lt_ival *b2 = b->type.rank == 1 ? OP2(UNSQUEEZE, b, lt_ad_ints(c, 1, &last)) : b;
        lt_ival *g2 = b->type.rank == 1 ? OP2(UNSQUEEZE, G, lt_ad_ints(c, 1, &last)) : G;
        if (a->type.rank == 1)
            g2 = OP2(UNSQUEEZE, g2, lt_ad_ints(c, 1, &prev));
        if (lt_ad_wants(c, n, 0)) {
            lt_ival *d = lt_ad_unbroadcast(c, OP2(MAT_MUL, g2, swap_last(c, b2)), a2);
            s = ACC(0, a->type.rank == 1 ? OP2(SQUEEZE, d, lt_ad_ints(c, 1, &first)) : d);
        }
        if (s == LT_OK && lt_ad_wants(c, n, 1)) {
            lt_ival *d = lt_ad_unbroadcast(c, OP2(MAT_MUL, swap_last(c, a2), g2), b2);
            s = ACC(1, b->type.rank == 1 ? OP2(SQUEEZE, d, lt_ad_ints(c, 1, &last)) : d);
        }
        return s;
    }
    lt_dtype dt = a->type.dtype;
    if (a->type.rank == 2 && b->type.rank == 2 && (dt == LT_F32 || dt == LT_F64) && b->type.dtype == dt) {
        /* plain matrices: the transposes become GEMM flags, not copies */
        if (lt_ad_wants(c, n, 0))
            s = ACC(0, gemm(c, G, b, 0, 1, 1.0f));
        if (s == LT_OK && lt_ad_wants(c, n, 1))
            s = ACC(1, gemm(c, a, G, 1, 0, 1.0f));
        return s;
    }
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, lt_ad_unbroadcast(c, OP2(MAT_MUL, G, swap_last(c, b)), a));
    int64_t K = a->type.dims[a->type.rank - 1].sym < 0 ? a->type.dims[a->type.rank - 1].v : -1;
    int64_t N = b->type.dims[1].sym < 0 ? b->type.dims[1].v : -1;
    if (s == LT_OK && lt_ad_wants(c, n, 1) && b->type.rank == 2 && (dt == LT_F32 || dt == LT_F64) &&
        b->type.dtype == dt && K > 0 && N > 0) {
        /* a batch of rows against one weight matrix (a Linear layer on
         * [..., K]): dB = A^T G over all rows at once, one GEMM on the
         * flattened operands, not a transposed copy of A, a product per
         * batch and a sum over the batch */
        lt_ival *a2 = OP2(RESHAPE, a, lt_ad_ints(c, 2, (int64_t[]){-1, K}));
        lt_ival *g2 = OP2(RESHAPE, G, lt_ad_ints(c, 2, (int64_t[]){-1, N}));
        s = ACC(1, gemm(c, a2, g2, 1, 0, 1.0f));
    } else if (s == LT_OK && lt_ad_wants(c, n, 1)) {
        s = ACC(1, lt_ad_unbroadcast(c, OP2(MAT_MUL, swap_last(c, a), G), b));
    }
    return s;
}

static lt_ival *gemm(lt_ad *c, lt_ival *a, lt_ival *b, int ta, int tb, float alpha)
{
    lt_node *k = lt_ad_node(c, LT_OP_GEMM, 2, 1);
    if (!k)
        return NULL;
    k->in[0] = a;
    k->in[1] = b;
    if (ta)
        lt_ad_attr_int(c, k, "transA", 1);
    if (tb)
        lt_ad_attr_int(c, k, "transB", 1);
    if (alpha != 1.0f)
        lt_ad_attr_float(c, k, "alpha", alpha);
    lt_ad_infer(c, k);
    return k->out[0];
}

static lt_status r_gemm(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                        lt_ival *const *dout)
{
    int ta = (int)lt_attr_int(n, "transA", 0), tb = (int)lt_attr_int(n, "transB", 0);
    float alpha = lt_attr_float(n, "alpha", 1.0f), beta = lt_attr_float(n, "beta", 1.0f);
    lt_ival *A = in[0], *B = in[1];
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, ta ? gemm(c, B, G, tb, 1, alpha) : gemm(c, G, B, 0, !tb, alpha));
    if (s == LT_OK && lt_ad_wants(c, n, 1))
        s = ACC(1, tb ? gemm(c, G, A, 1, ta, alpha) : gemm(c, A, G, !ta, 0, alpha));
    if (s == LT_OK && n->nin > 2 && lt_ad_wants(c, n, 2)) {
        lt_ival *g = beta == 1.0f ? G : OP2(MUL, G, lt_ad_scalar_like(c, G, beta));
        s = ACC(2, lt_ad_unbroadcast(c, g, in[2]));
    }
    return s;
}

void lt_ad_register_tensor(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_RESHAPE] = r_reshape_like;
    t[LT_OP_FLATTEN] = r_reshape_like;
    t[LT_OP_SQUEEZE] = r_reshape_like;
    t[LT_OP_UNSQUEEZE] = r_reshape_like;
    t[LT_OP_TRANSPOSE] = r_transpose;
    t[LT_OP_CONCAT] = r_concat;
    t[LT_OP_SPLIT] = r_split;
    t[LT_OP_SLICE] = r_slice;
    t[LT_OP_GATHER] = r_gather;
    t[LT_OP_GATHER_ELEMENTS] = r_gather;
    t[LT_OP_GATHER_ND] = r_gather;
    t[LT_OP_PAD] = r_pad;
    t[LT_OP_EXPAND] = r_expand;
    static const lt_op reds[] = {LT_OP_REDUCE_SUM, LT_OP_REDUCE_MEAN, LT_OP_REDUCE_SUM_SQUARE,
                                 LT_OP_REDUCE_L1, LT_OP_REDUCE_L2, LT_OP_REDUCE_LOG_SUM_EXP,
                                 LT_OP_REDUCE_LOG_SUM, LT_OP_REDUCE_PROD, LT_OP_REDUCE_MAX, LT_OP_REDUCE_MIN};
    for (size_t i = 0; i < sizeof reds / sizeof reds[0]; i++) {
        t[reds[i]] = r_reduce;
        nd[reds[i]] = 1u << 1;
    }
    t[LT_OP_SOFTMAX] = r_softmax;
    t[LT_OP_LOG_SOFTMAX] = r_softmax;
    t[LT_OP_MAT_MUL] = r_matmul;
    t[LT_OP_GEMM] = r_gemm;
    nd[LT_OP_RESHAPE] = 1u << 1;
    nd[LT_OP_SQUEEZE] = 1u << 1;
    nd[LT_OP_UNSQUEEZE] = 1u << 1;
    nd[LT_OP_SPLIT] = 1u << 1;
    nd[LT_OP_SLICE] = ~1u;
    nd[LT_OP_GATHER] = 1u << 1;
    nd[LT_OP_GATHER_ELEMENTS] = 1u << 1;
    nd[LT_OP_GATHER_ND] = 1u << 1;
    nd[LT_OP_PAD] = ~1u;
    nd[LT_OP_EXPAND] = 1u << 1;
}
