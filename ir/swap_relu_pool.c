/* Relu before MaxPool moved after it, before the AD (swap_relu_pool.h). */
#include "swap_relu_pool.h"
#include <stdlib.h>

typedef struct swap {
    int *uses; /* per value id: node inputs (regions included) and block results reading it */
    int nswapped;
} swap;

static bool float_tensor(const lt_ival *v)
{
    return v && v->type.kind == LT_KIND_TENSOR && lt_dtype_is_float(v->type.dtype);
}

/* the Relu whose output MaxPool p reads, when the pair may swap */
static lt_node *relu_before(const swap *w, const lt_node *p)
{
    if (p->op != LT_OP_MAX_POOL || p->nin != 1 || p->nout < 1 || !p->out[0] || p->nregions || !p->in[0])
        return NULL;
    if (p->nout > 1 && p->out[1] && w->uses[p->out[1]->id] != 0)
        return NULL; /* the Indices are read: they index x, not Relu(x) */
    lt_ival *r = p->in[0];
    lt_node *q = r->def;
    if (!q || q->op != LT_OP_RELU || q->block != p->block || q->nin != 1 || q->nout != 1 || q->out[0] != r ||
        q->nregions || !q->in[0] || !float_tensor(r) || !float_tensor(q->in[0]) || w->uses[r->id] != 1)
        return NULL;
    return q;
}

/* Relu q (x -> r) at i, MaxPool p (r -> y) at j > i become MaxPool p
 * (x -> r) at i and Relu q (r -> y) at j; r now holds the pooled x. The
 * nodes between read neither r nor y, so the order stays valid; every
 * value keeps its count of readers. */
static void swap_pair(lt_block *b, lt_node *q, lt_node *p)
{
    lt_ival *x = q->in[0], *r = q->out[0], *y = p->out[0];
    int i = q->index, j = p->index;
    p->in[0] = x;
    p->out[0] = r;
    r->def = p;
    r->type = y->type;
    q->in[0] = r;
    q->out[0] = y;
    y->def = q;
    b->nodes[i] = p;
    p->index = i;
    b->nodes[j] = q;
    q->index = j;
}

static lt_status swap_block(lt_block *b, void *ctx)
{
    swap *w = ctx;
    /* a Relu moved forward is met again at its new place: a chain of
     * MaxPools after one Relu moves it past each */
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *p = b->nodes[i], *q = relu_before(w, p);
        if (!q)
            continue;
        swap_pair(b, q, p);
        w->nswapped++;
    }
    return LT_OK;
}

lt_status lt_ir_swap_relu_pool(lt_module *m, int *nswapped, lt_err *err)
{
    swap w = {0};
    lt_rewrite r = {.block = swap_block, .ctx = &w, .count = &w.nswapped, .uses = &w.uses,
                    .doing = "moving Relus after MaxPools"};
    return lt_module_rewrite(m, &r, nswapped, err);
}
