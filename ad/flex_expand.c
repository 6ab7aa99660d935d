/* FlexAttention written out before the transform, so that its gradient
 * flows through its score_mod and prob_mod graphs like through any other
 * ops: each FlexAttention node becomes
 *
 *   Q', K', V'  = Cast(Q, K, V) to the softmax precision
 *   scores      = Reshape(Reshape(Q', [0, Hkv, -1, 0]) x K'^T, [B, Hq, L, S]) * scale
 *   probs       = Softmax(score_mod(scores), axis -1)
 *   Y           = Cast(Reshape(Reshape(prob_mod(probs), [0, Hkv, -1, S]) x V', [B, Hq, L, Ev]))
 *
 * with the nodes of each graph moved into the enclosing block, its input
 * replaced by the tensor it is given. Grouping the query heads by key head
 * (Hq = Hkv * G, head h reads key head h / G) makes the repeat of K and V's
 * heads a reshape of Q and of the probabilities instead of a copy. The
 * shapes come from Shape nodes, so symbolic dims stay symbolic. */
#include "ad_impl.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct fx {
    lt_module *m;
    lt_block *b;
    int at;            /* where the next node goes in b */
    const lt_node *fa; /* the FlexAttention node written out */
    int count;         /* values named so far */
} fx;

static void place(fx *x, lt_node *k)
{
    lt_block_place_at(x->b, k, x->at++);
}

/* a node of op over nin inputs with one fresh output, placed at x->at */
static lt_node *node(fx *x, lt_op op, int nin, lt_ival *const *in)
{
    for (int i = 0; i < nin; i++)
        if (!in[i])
            return NULL;
    lt_node *k = lt_node_new(x->m, x->b, op, nin, 1);
    if (!k)
        return NULL;
    k->opset = 15;
    k->name = x->fa->name;
    for (int i = 0; i < nin; i++) {
        k->in[i] = in[i];
        in[i]->uses++;
    }
    char nm[256];
    snprintf(nm, sizeof nm, "%s_flex%d", x->fa->out[0] && x->fa->out[0]->name ? x->fa->out[0]->name : "y",
             x->count++);
    k->out[0] = lt_ival_new(x->m, x->b, nm);
    if (!k->out[0])
        return NULL;
    k->out[0]->def = k;
    place(x, k);
    return k;
}

static bool attr_int(fx *x, lt_node *k, int i, const char *name, int64_t v)
{
    k->attrs[i] = (lt_attr){.name = lt_ir_strdup(x->m, name), .kind = LT_ATTR_INT, .i = v};
    return k->attrs[i].name != NULL;
}

static lt_ival *op1(fx *x, lt_op op, lt_ival *a)
{
    lt_node *k = node(x, op, 1, &a);
    return k ? k->out[0] : NULL;
}

static lt_ival *op2(fx *x, lt_op op, lt_ival *a, lt_ival *b)
{
    lt_ival *in[2] = {a, b};
    lt_node *k = node(x, op, 2, in);
    return k ? k->out[0] : NULL;
}

static lt_ival *cast(fx *x, lt_ival *v, lt_dtype to)
{
    lt_node *k = node(x, LT_OP_CAST, 1, &v);
    if (!k || lt_node_set_attrs(x->m, k, 1) != LT_OK || !attr_int(x, k, 0, "to", to))
        return NULL;
    return k->out[0];
}

/* Shape(v)[start:end] */
static lt_ival *shape_part(fx *x, lt_ival *v, int64_t start, int64_t end)
{
    lt_node *k = node(x, LT_OP_SHAPE, 1, &v);
    if (!k || lt_node_set_attrs(x->m, k, 2) != LT_OK || !attr_int(x, k, 0, "start", start) ||
        !attr_int(x, k, 1, "end", end))
        return NULL;
    return k->out[0];
}

/* a Constant of the given dtype and values (rank 1 of n, or a scalar when n < 0) */
static lt_ival *constant(fx *x, lt_dtype dt, int n, const double *vals)
{
    lt_node *k = node(x, LT_OP_CONSTANT, 0, NULL);
    lt_tensor *t = k ? lt_ir_alloc(x->m, sizeof *t) : NULL;
    int64_t cnt = n < 0 ? 1 : n;
    void *d = t ? lt_ir_alloc(x->m, (size_t)cnt * 8) : NULL;
    if (!d || lt_node_set_attrs(x->m, k, 1) != LT_OK)
        return NULL;
    *t = (lt_tensor){.dtype = dt, .rank = n < 0 ? 0 : 1, .numel = cnt, .data = d};
    t->dims[0] = cnt;
    for (int64_t i = 0; i < cnt; i++)
        if (dt == LT_I64)
            lt_tensor_set_i64(t, i, (int64_t)vals[i]);
        else
            lt_tensor_set_f64(t, i, vals[i]);
    k->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
    return k->out[0];
}

static lt_ival *concat(fx *x, int n, lt_ival *const *parts)
{
    lt_node *k = node(x, LT_OP_CONCAT, n, parts);
    if (!k || lt_node_set_attrs(x->m, k, 1) != LT_OK || !attr_int(x, k, 0, "axis", 0))
        return NULL;
    return k->out[0];
}

/* every read of from inside block b (and the blocks nested in it) reads to */
static void substitute(lt_block *b, const lt_ival *from, lt_ival *to)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == from) {
                n->in[j] = to;
                to->uses++;
            }
        for (int r = 0; r < n->nregions; r++)
            substitute(n->regions[r], from, to);
    }
    for (int j = 0; j < b->nresults; j++)
        if (b->results[j] == from) {
            b->results[j] = to;
            to->uses++;
        }
}

/* The graph attribute `name` of the FlexAttention node applied to v: its
 * nodes move into the enclosing block, reading v for its input. */
static lt_status apply_mod(fx *x, const char *name, lt_ival *v, lt_ival **res, lt_err *err)
{
    *res = v;
    const lt_attr *a = lt_attr_find(x->fa, name);
    if (!a || a->kind != LT_ATTR_GRAPH)
        return LT_OK;
    if (a->region < 0 || a->region >= x->fa->nregions)
        return lt_errf(err, LT_ERR_INTERNAL, "FlexAttention: graph attribute '%s' has no region", name);
    lt_block *g = x->fa->regions[a->region];
    if (g->nparams != 1 || g->nresults != 1) {
        char lb[256];
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: %s must take one input and give one output", x->m->path,
                       lt_node_label(x->fa, lb, sizeof lb), name);
    }
    substitute(g, g->params[0], v);
    for (int i = 0; i < g->nnodes; i++) {
        lt_node *n = g->nodes[i];
        n->block = x->b;
        for (int o = 0; o < n->nout; o++)
            if (n->out[o])
                n->out[o]->block = x->b;
        for (int r = 0; r < n->nregions; r++)
            n->regions[r]->parent = x->b;
        /* lt_node_new's bookkeeping without a new node: grow b by one */
        lt_node *slot = lt_node_new(x->m, x->b, LT_OP_IDENTITY, 0, 0);
        if (!slot)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        x->b->nodes[x->b->nnodes - 1] = n;
        n->index = x->b->nnodes - 1;
        place(x, n);
    }
    g->nnodes = 0;
    *res = g->results[0];
    return LT_OK;
}

static lt_status expand_one(lt_module *m, lt_block *b, lt_node *n, lt_err *err)
{
    fx x = {.m = m, .b = b, .at = n->index, .fa = n};
    lt_ival *q = n->nin > 0 ? n->in[0] : NULL, *k = n->nin > 1 ? n->in[1] : NULL, *v = n->nin > 2 ? n->in[2] : NULL;
    if (!q || !k || !v || !n->out[0]) {
        char lb[256];
        return lt_errf(err, LT_ERR_INVALID, "%s: %s: needs Q, K and V", m->path, lt_node_label(n, lb, sizeof lb));
    }
    int64_t sp = lt_attr_int(n, "softmax_precision", 0);
    lt_dtype cdt = sp ? (lt_dtype)sp : q->type.dtype == LT_F64 ? LT_F64 : LT_F32;
    if (cdt == LT_F16 || cdt == LT_BF16)
        cdt = LT_F32; /* the kernel hands 16-bit precisions the scores in float32 too */
    double scale = 0;
    if (lt_attr_find(n, "scale"))
        scale = lt_attr_float(n, "scale", 1);
    else if (q->type.rank == 4 && q->type.dims[3].sym < 0 && q->type.dims[3].v > 0)
        scale = 1 / sqrt((double)q->type.dims[3].v);
    lt_ival *qc = cast(&x, q, cdt), *kc = cast(&x, k, cdt), *vc = cast(&x, v, cdt);
    lt_ival *hk = shape_part(&x, k, 1, 2), *sk = shape_part(&x, k, 2, 3), *bhl = shape_part(&x, q, 0, 3);
    lt_ival *sv = shape_part(&x, v, 3, 4);
    double zero = 0, minus1 = -1;
    lt_ival *c0 = constant(&x, LT_I64, 1, &zero), *cm1 = constant(&x, LT_I64, 1, &minus1);
    lt_ival *qs_parts[4] = {c0, hk, cm1, c0}, *qg = op2(&x, LT_OP_RESHAPE, qc, concat(&x, 4, qs_parts));
    lt_node *tr = node(&x, LT_OP_TRANSPOSE, 1, &kc);
    const int64_t perm[4] = {0, 1, 3, 2};
    if (!tr || lt_node_set_attrs(m, tr, 1) != LT_OK)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    int64_t *pv = lt_ir_alloc(m, sizeof perm);
    if (!pv)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    memcpy(pv, perm, sizeof perm);
    tr->attrs[0] = (lt_attr){.name = "perm", .kind = LT_ATTR_INTS, .ints = pv, .n = 4};
    lt_ival *ss_parts[2] = {bhl, sk};
    lt_ival *scores = op2(&x, LT_OP_RESHAPE, op2(&x, LT_OP_MAT_MUL, qg, tr->out[0]), concat(&x, 2, ss_parts));
    if (scale == 0) {
        /* the head size is only known at run time: 1 / sqrt(E) from Q's shape */
        lt_ival *e = cast(&x, shape_part(&x, q, 3, 4), cdt);
        scores = op2(&x, LT_OP_DIV, scores, op1(&x, LT_OP_SQRT, e));
    } else {
        scores = op2(&x, LT_OP_MUL, scores, constant(&x, cdt, -1, &scale));
    }
    if (!scores)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status s = apply_mod(&x, "score_mod", scores, &scores, err);
    if (s != LT_OK)
        return s;
    lt_node *sm = node(&x, LT_OP_SOFTMAX, 1, &scores);
    if (!sm || lt_node_set_attrs(m, sm, 1) != LT_OK || !attr_int(&x, sm, 0, "axis", -1))
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_ival *probs = sm->out[0];
    if ((s = apply_mod(&x, "prob_mod", probs, &probs, err)) != LT_OK)
        return s;
    lt_ival *ps_parts[4] = {c0, hk, cm1, sk}, *ys_parts[2] = {bhl, sv};
    lt_ival *pg = op2(&x, LT_OP_RESHAPE, probs, concat(&x, 4, ps_parts));
    lt_ival *y = op2(&x, LT_OP_RESHAPE, op2(&x, LT_OP_MAT_MUL, pg, vc), concat(&x, 2, ys_parts));
    /* the last Cast defines the node's own output value */
    lt_node *out = node(&x, LT_OP_CAST, 1, &y);
    if (!out || lt_node_set_attrs(m, out, 1) != LT_OK ||
        !attr_int(&x, out, 0, "to", v->type.dtype != LT_UNDEFINED ? v->type.dtype : q->type.dtype))
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    out->out[0] = n->out[0];
    n->out[0]->def = out;
    /* the FlexAttention node itself goes */
    for (int i = 0; i < n->nin; i++)
        if (n->in[i])
            n->in[i]->uses--;
    for (int i = n->index; i < b->nnodes - 1; i++) {
        b->nodes[i] = b->nodes[i + 1];
        b->nodes[i]->index = i;
    }
    b->nnodes--;
    return LT_OK;
}

static lt_status expand_block(lt_module *m, lt_block *b, lt_err *err)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        if (n->op == LT_OP_FLEX_ATTENTION) {
            lt_status s = expand_one(m, b, n, err);
            if (s != LT_OK)
                return s;
            i = -1; /* the block changed: start over (each pass removes one node) */
            continue;
        }
        for (int r = 0; r < n->nregions; r++) {
            lt_status s = expand_block(m, n->regions[r], err);
            if (s != LT_OK)
                return s;
        }
    }
    return LT_OK;
}

lt_status lt_ad_expand_flex_attention(lt_module *m, lt_err *err) { return expand_block(m, m->main, err); }
