/* Shape inference rules: grad_misc family. Each gradient has the type of
 * the forward value it belongs to: ReduceSumLike g's element type in like's
 * shape, the softmax grads dy's type, the loss grads the scores' type, and
 * the gather / Slice / Pad grads dy's element type in the data's shape;
 * FusedElementwise's outputs input 0's type. */
#include "infer.h"

/* Output 0: element type of input `dt_from`, shape of input `shape_from`
 * (each as far as known). */
static void type_like(lt_node *n, int dt_from, int shape_from)
{
    if (n->nout < 1 || !n->out[0])
        return;
    lt_type t;
    lt_dtype dt = LT_UNDEFINED;
    if (dt_from < n->nin && n->in[dt_from])
        dt = n->in[dt_from]->type.dtype;
    if (shape_from < n->nin && n->in[shape_from]) {
        t = n->in[shape_from]->type;
        t.kind = LT_KIND_TENSOR;
        if (dt != LT_UNDEFINED)
            t.dtype = dt;
    } else {
        lt_type_unknown(&t, dt, -1);
    }
    n->out[0]->type = t;
}

static bool needs(lt_infer_ctx *c, lt_node *n, int nin, lt_status *s)
{
    for (int i = 0; i < nin; i++)
        if (i >= n->nin || !n->in[i]) {
            *s = lt_infer_fail(c, n, "input %d is required", i);
            return false;
        }
    return true;
}

static lt_status infer_reduce_sum_like(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = LT_OK;
    if (!needs(c, n, 2, &s))
        return s;
    const lt_type *g = &n->in[0]->type, *like = &n->in[1]->type;
    /* a definite mismatch: known g and like dims that differ while like's is not 1 */
    if (g->rank >= 0 && like->rank >= 0 && g->rank >= like->rank)
        for (int i = 0; i < like->rank; i++) {
            lt_dim dg = g->dims[i + g->rank - like->rank], dl = like->dims[i];
            if (dg.sym < 0 && dl.sym < 0 && dg.v >= 0 && dl.v >= 0 && dg.v != dl.v && dl.v != 1)
                return lt_infer_fail(c, n, "g dim %d (%lld) cannot be summed to like's %lld",
                                     i + g->rank - like->rank, (long long)dg.v, (long long)dl.v);
        }
    type_like(n, 0, 1);
    return LT_OK;
}

/* dy's type: SoftmaxGrad, LogSoftmaxGrad */
static lt_status infer_same_as_dy(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = LT_OK;
    if (!needs(c, n, 2, &s))
        return s;
    type_like(n, 0, n->in[0]->type.rank >= 0 ? 0 : 1);
    return LT_OK;
}

/* the scores' / input's type: the loss grads */
static lt_status infer_loss_grad(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = LT_OK;
    if (!needs(c, n, 3, &s))
        return s;
    const lt_type *x = &n->in[1]->type;
    if (x->rank >= 0 && x->rank < 2)
        return lt_infer_fail(c, n, "input must be (N, C, ...), got rank %d", x->rank);
    type_like(n, 1, 1);
    return LT_OK;
}

/* dy's element type in the shape of the forward input: gathers (data is
 * input 2), Slice and Pad (x is input 1) */
static lt_status infer_gather_grad(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = LT_OK;
    if (!needs(c, n, 3, &s))
        return s;
    type_like(n, 0, 2);
    return LT_OK;
}

static lt_status infer_slice_pad_grad(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = LT_OK;
    if (!needs(c, n, 2, &s))
        return s;
    type_like(n, 0, 1);
    return LT_OK;
}

/* FusedElementwise: every output has input 0's type (a full operand) */
static lt_status infer_fused_elementwise(lt_infer_ctx *c, lt_node *n)
{
    lt_status s = LT_OK;
    if (!needs(c, n, 1, &s))
        return s;
    for (int j = 0; j < n->nout; j++)
        if (n->out[j]) {
            n->out[j]->type = n->in[0]->type;
            n->out[j]->type.kind = LT_KIND_TENSOR;
        }
    return LT_OK;
}

void lt_infer_register_grad_misc(lt_infer_fn *tab)
{
    tab[LT_OP_FUSED_ELEMENTWISE] = infer_fused_elementwise;
    tab[LT_OP_REDUCE_SUM_LIKE] = infer_reduce_sum_like;
    tab[LT_OP_SOFTMAX_GRAD] = infer_same_as_dy;
    tab[LT_OP_LOG_SOFTMAX_GRAD] = infer_same_as_dy;
    tab[LT_OP_SCE_LOSS_GRAD] = infer_loss_grad;
    tab[LT_OP_NLL_LOSS_GRAD] = infer_loss_grad;
    tab[LT_OP_GATHER_GRAD] = infer_gather_grad;
    tab[LT_OP_GATHER_ELEMENTS_GRAD] = infer_gather_grad;
    tab[LT_OP_GATHER_ND_GRAD] = infer_gather_grad;
    tab[LT_OP_SLICE_GRAD] = infer_slice_pad_grad;
    tab[LT_OP_PAD_GRAD] = infer_slice_pad_grad;
}
