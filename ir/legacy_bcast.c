/* Legacy broadcasting made numpy broadcasting. Before opset 7, Add, Sub,
 * Mul, Div, Pow and the logical and comparison ops broadcast B onto A only
 * when asked (broadcast = 1), and then B's dims line up with A's starting
 * at `axis` (default: the last dims, as numpy's), not at the end: a bias of
 * shape [C] added to [N, C, H, W] with axis = 1, as Caffe2 wrote it. The
 * kernels and shape inference read that form, but every later stage that
 * builds ops of its own (the gradient's sums back to B's shape, above all)
 * speaks numpy's. So each such node whose ranks are known reads B through
 * an Unsqueeze that appends the dims of 1 numpy needs (B's dims followed by
 * rank(A) - axis - rank(B) ones), and loses its broadcast and axis
 * attributes: the same values, in the form every op after opset 7 has.
 * The file is not touched: export writes back initializers only, and B
 * keeps its own shape. A node whose ranks inference could not tell keeps
 * the legacy form (the kernels still run it). */
#include "ir.h"
#include <stdio.h>
#include <string.h>

static bool legacy_op(lt_op op)
{
    switch (op) {
    case LT_OP_ADD: case LT_OP_SUB: case LT_OP_MUL: case LT_OP_DIV: case LT_OP_POW:
    case LT_OP_AND: case LT_OP_OR: case LT_OP_XOR: case LT_OP_EQUAL: case LT_OP_GREATER: case LT_OP_LESS:
        return true;
    default:
        return false;
    }
}

static void drop_attr(lt_node *n, const char *name)
{
    int w = 0;
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->attrs[i].name, name) != 0)
            n->attrs[w++] = n->attrs[i];
    n->nattr = w;
}

typedef struct pass {
    lt_module *m;
    int count;
} pass;

/* B of n read as Unsqueeze(B, axes [rb, rb + k)), placed before n */
static lt_status unsqueeze_b(lt_module *m, lt_node *n, int rb, int k)
{
    lt_block *b = n->block;
    lt_node *u = lt_node_new(m, b, LT_OP_UNSQUEEZE, 1, 1);
    int64_t *axes = u ? lt_ir_alloc(m, sizeof *axes * (size_t)k) : NULL;
    if (!axes || lt_node_set_attrs(m, u, 1) != LT_OK)
        return LT_ERR_NOMEM;
    for (int i = 0; i < k; i++)
        axes[i] = rb + i;
    u->attrs[0] = (lt_attr){.name = "axes", .kind = LT_ATTR_INTS, .n = k, .ints = axes};
    u->opset = 11; /* axes an attribute */
    u->name = n->name;
    char nm[512];
    snprintf(nm, sizeof nm, "%s_legacy_broadcast", n->in[1]->name ? n->in[1]->name : "B");
    lt_ival *v = lt_ival_new(m, b, nm);
    if (!v)
        return LT_ERR_NOMEM;
    v->def = u;
    u->in[0] = n->in[1];
    u->out[0] = v;
    n->in[1] = v;
    v->uses = 1;
    lt_block_place_at(b, u, n->index);
    return LT_OK;
}

static lt_status block_fn(lt_block *b, void *ctx)
{
    pass *p = ctx;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        if (!legacy_op(n->op) || n->opset >= 7 || n->nin != 2 || !n->in[0] || !n->in[1] ||
            !lt_attr_int(n, "broadcast", 0))
            continue;
        int ra = n->in[0]->type.rank, rb = n->in[1]->type.rank;
        if (ra < 0 || rb < 0 || rb > ra)
            continue; /* the kernel's own checks and messages apply */
        int64_t axis = lt_attr_int(n, "axis", ra - rb);
        if (axis < 0)
            axis += ra;
        if (axis < 0 || axis > ra - rb)
            continue;
        int k = ra - (int)axis - rb;
        if (k > 0) {
            lt_status s = unsqueeze_b(p->m, n, rb, k);
            if (s != LT_OK)
                return s;
            i++; /* n moved one on */
        }
        drop_attr(n, "broadcast");
        drop_attr(n, "axis");
        p->count++;
    }
    return LT_OK;
}

lt_status lt_ir_legacy_broadcast(lt_module *m, int *n, lt_err *err)
{
    pass p = {m, 0};
    lt_status s = lt_module_each_block(m, block_fn, &p);
    if (n)
        *n = p.count;
    if (s != LT_OK)
        return lt_errf(err, s, "%s: out of memory rewriting legacy broadcasts", m->path ? m->path : "model");
    return LT_OK;
}
