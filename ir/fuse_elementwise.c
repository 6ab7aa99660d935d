/* Elementwise fusion (fuse_elementwise.h). One walk per block in program
 * order keeps groups of fusable nodes "open" while no other node has read
 * their values: a fusable node joins the open groups it reads from (merging
 * them), and any other read of a group's value closes the group. A group
 * is then computed where its last member stood, which is legal because its
 * inputs all exist by then and nothing outside it has read its values
 * before that point. A member's value becomes an output of the fused node
 * when anything outside the group reads it (later nodes, block results,
 * regions); values only the group reads stay in registers. */
#include "fuse_elementwise.h"
#include <stdlib.h>
#include <string.h>

enum { K_NONE, K_FULL, K_SCALAR, K_ROW };

typedef struct group {
    int n;
    lt_node *mem[LT_FE_MAX_STEPS];
    bool open, gone; /* gone: merged into another group */
    lt_type type;    /* every member's output type */
} group;

typedef struct fuse {
    lt_module *m;
    int *uses; /* per value id: node inputs and block results reading it */
    int *grp;  /* per value id: the group of its producer, or -1 */
    group *g;
    int ng, capg;
} fuse;

static bool dim_eq(lt_dim a, lt_dim b)
{
    if (a.sym >= 0 || b.sym >= 0)
        return a.sym == b.sym;
    return a.v >= 0 && a.v == b.v;
}

static bool same_shape(const lt_type *a, const lt_type *b)
{
    if (a->rank < 0 || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (!dim_eq(a->dims[i], b->dims[i]))
            return false;
    return true;
}

static bool is_one(lt_dim d) { return d.sym < 0 && d.v == 1; }

/* how operand x broadcasts against out (both float32 tensors) */
static int kind_of(const lt_type *x, const lt_type *out)
{
    if (x->kind != LT_KIND_TENSOR || x->dtype != LT_F32 || x->rank < 0 || x->rank > out->rank)
        return K_NONE;
    if (same_shape(x, out))
        return K_FULL;
    bool ones = true;
    for (int i = 0; i < x->rank; i++)
        ones &= is_one(x->dims[i]);
    if (ones)
        return K_SCALAR;
    if (x->rank < 1)
        return K_NONE;
    lt_dim xl = x->dims[x->rank - 1], ol = out->dims[out->rank - 1];
    if (xl.sym >= 0 || ol.sym >= 0 || xl.v < 2 || xl.v != ol.v)
        return K_NONE;
    for (int i = 0; i + 1 < x->rank; i++)
        if (!is_one(x->dims[i]))
            return K_NONE;
    return K_ROW;
}

/* the step code of a node that can join a group, or -1 */
static int fusable(const lt_node *n)
{
    int code, arity;
    switch (n->op) {
    case LT_OP_ADD: code = LT_FE_ADD, arity = 2; break;
    case LT_OP_SUB: code = LT_FE_SUB, arity = 2; break;
    case LT_OP_MUL: code = LT_FE_MUL, arity = 2; break;
    case LT_OP_DIV: code = LT_FE_DIV, arity = 2; break;
    case LT_OP_NEG: code = LT_FE_NEG, arity = 1; break;
    case LT_OP_EXP: code = LT_FE_EXP, arity = 1; break;
    case LT_OP_ERF: code = LT_FE_ERF, arity = 1; break;
    case LT_OP_TANH: code = LT_FE_TANH, arity = 1; break;
    case LT_OP_SIGMOID: code = LT_FE_SIGMOID, arity = 1; break;
    case LT_OP_SQRT: code = LT_FE_SQRT, arity = 1; break;
    case LT_OP_RECIPROCAL: code = LT_FE_RECIPROCAL, arity = 1; break;
    case LT_OP_SOFTPLUS: code = LT_FE_SOFTPLUS, arity = 1; break;
    default: return -1;
    }
    if (n->nin != arity || n->nout != 1 || !n->out[0] || n->nregions)
        return -1;
    const lt_type *out = &n->out[0]->type;
    if (out->kind != LT_KIND_TENSOR || out->dtype != LT_F32 || out->rank < 0)
        return -1;
    for (int i = 0; i < out->rank; i++)
        if (out->dims[i].sym < 0 && out->dims[i].v < 0)
            return -1;
    bool full = false;
    for (int j = 0; j < arity; j++) {
        if (!n->in[j])
            return -1;
        int k = kind_of(&n->in[j]->type, out);
        if (k == K_NONE)
            return -1;
        full |= k == K_FULL;
    }
    return full ? code : -1;
}

static void close_value(fuse *f, const lt_ival *v)
{
    if (v && f->grp[v->id] >= 0)
        f->g[f->grp[v->id]].open = false;
}

static int new_group(fuse *f, const lt_type *t)
{
    if (f->ng == f->capg) {
        int nc = f->capg ? 2 * f->capg : 32;
        group *g = realloc(f->g, sizeof *g * (size_t)nc);
        if (!g)
            return -1;
        f->g = g;
        f->capg = nc;
    }
    group *g = &f->g[f->ng];
    memset(g, 0, sizeof *g);
    g->open = true;
    g->type = *t;
    return f->ng++;
}

static int cmp_index(const void *a, const void *b)
{
    const lt_node *x = *(lt_node *const *)a, *y = *(lt_node *const *)b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Rewrites the group's last member into the FusedElementwise node; the
 * other members are marked in dead (by block index). */
static lt_status emit(fuse *f, group *g, bool *dead)
{
    lt_module *m = f->m;
    qsort(g->mem, (size_t)g->n, sizeof g->mem[0], cmp_index);
    lt_ival *ins[2 * LT_FE_MAX_STEPS];
    int nin = 0, full = -1;
    int reads[LT_FE_MAX_STEPS] = {0}; /* per member: reads by later members */
    for (int s = 0; s < g->n; s++) {
        lt_node *n = g->mem[s];
        for (int j = 0; j < n->nin; j++) {
            lt_ival *v = n->in[j];
            int p = -1;
            for (int t = 0; t < s; t++)
                if (g->mem[t]->out[0] == v)
                    p = t;
            if (p >= 0) {
                reads[p]++;
                continue;
            }
            int e = 0;
            while (e < nin && ins[e] != v)
                e++;
            if (e == nin) {
                ins[nin++] = v;
                if (full < 0 && kind_of(&v->type, &g->type) == K_FULL)
                    full = e;
            }
        }
    }
    if (full < 0)
        return LT_OK; /* cannot happen: the first member reads a full operand */
    lt_ival *t0 = ins[0];
    ins[0] = ins[full];
    ins[full] = t0;
    int nout = 0, outreg[LT_FE_MAX_STEPS];
    lt_ival *outs[LT_FE_MAX_STEPS];
    for (int s = 0; s < g->n; s++) {
        lt_ival *v = g->mem[s]->out[0];
        if (f->uses[v->id] > reads[s]) {
            outreg[nout] = nin + s;
            outs[nout++] = v;
        }
    }
    if (nout == 0)
        return LT_OK;
    int64_t *prog = lt_ir_alloc(m, sizeof *prog * (size_t)(3 * g->n));
    int64_t *oregs = lt_ir_alloc(m, sizeof *oregs * (size_t)nout);
    lt_ival **nin_v = lt_ir_alloc(m, sizeof *nin_v * (size_t)nin);
    lt_ival **nout_v = lt_ir_alloc(m, sizeof *nout_v * (size_t)nout);
    lt_attr *attrs = lt_ir_alloc(m, sizeof *attrs * 2);
    if (!prog || !oregs || !nin_v || !nout_v || !attrs)
        return LT_ERR_NOMEM;
    for (int s = 0; s < g->n; s++) {
        lt_node *n = g->mem[s];
        prog[3 * s] = fusable(n);
        prog[3 * s + 2] = -1;
        for (int j = 0; j < n->nin; j++) {
            lt_ival *v = n->in[j];
            int r = -1;
            for (int t = 0; t < s && r < 0; t++)
                if (g->mem[t]->out[0] == v)
                    r = nin + t;
            for (int e = 0; e < nin && r < 0; e++)
                if (ins[e] == v)
                    r = e;
            prog[3 * s + 1 + j] = r;
            v->uses--;
        }
    }
    for (int e = 0; e < nin; e++) {
        nin_v[e] = ins[e];
        ins[e]->uses++;
    }
    for (int o = 0; o < nout; o++)
        oregs[o] = outreg[o];
    attrs[0] = (lt_attr){.name = "program", .kind = LT_ATTR_INTS, .n = 3 * g->n, .ints = prog};
    attrs[1] = (lt_attr){.name = "outputs", .kind = LT_ATTR_INTS, .n = nout, .ints = oregs};
    lt_node *last = g->mem[g->n - 1];
    for (int s = 0; s + 1 < g->n; s++)
        dead[g->mem[s]->index] = true;
    last->op = LT_OP_FUSED_ELEMENTWISE;
    last->nin = nin;
    last->in = nin_v;
    last->nout = nout;
    last->out = nout_v;
    for (int o = 0; o < nout; o++) {
        nout_v[o] = outs[o];
        outs[o]->def = last;
    }
    last->nattr = 2;
    last->attrs = attrs;
    return LT_OK;
}

/* a fusable node n (step code `code`) joins the open groups it reads from */
static void join(fuse *f, lt_node *n)
{
    const lt_type *t = &n->out[0]->type;
    int cand[2], nc = 0, total = 1;
    for (int j = 0; j < n->nin; j++) {
        int gi = f->grp[n->in[j]->id];
        if (gi < 0 || !f->g[gi].open)
            continue;
        if (!same_shape(&f->g[gi].type, t)) {
            f->g[gi].open = false; /* read from outside: it ends here */
            continue;
        }
        if (nc == 1 && cand[0] == gi)
            continue;
        cand[nc++] = gi;
        total += f->g[gi].n;
    }
    if (total > LT_FE_MAX_STEPS) {
        for (int c = 0; c < nc; c++)
            f->g[cand[c]].open = false;
        nc = 0;
    }
    int gi = nc ? cand[0] : new_group(f, t);
    if (gi < 0)
        return; /* out of memory: the node stays as it is */
    group *g = &f->g[gi];
    if (nc == 2) {
        group *o = &f->g[cand[1]];
        for (int s = 0; s < o->n; s++) {
            g->mem[g->n++] = o->mem[s];
            f->grp[o->mem[s]->out[0]->id] = gi;
        }
        o->n = 0;
        o->gone = true;
        o->open = false;
    }
    g->mem[g->n++] = n;
    f->grp[n->out[0]->id] = gi;
}

static lt_status fuse_block(lt_block *b, void *ctx)
{
    fuse *f = ctx;
    f->ng = 0;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        n->index = i;
        if (fusable(n) >= 0) {
            join(f, n);
            continue;
        }
        if (n->nregions) /* its regions may read any open group's values */
            for (int gi = 0; gi < f->ng; gi++)
                f->g[gi].open = false;
        for (int j = 0; j < n->nin; j++)
            close_value(f, n->in[j]);
    }
    bool *dead = calloc((size_t)b->nnodes + 1, sizeof *dead);
    if (!dead)
        return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    for (int gi = 0; gi < f->ng && s == LT_OK; gi++)
        if (!f->g[gi].gone && f->g[gi].n >= 2)
            s = emit(f, &f->g[gi], dead);
    /* the group marks die with the block */
    for (int i = 0; i < b->nnodes; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++)
            if (b->nodes[i]->out[j])
                f->grp[b->nodes[i]->out[j]->id] = -1;
    lt_block_drop_nodes(b, dead);
    free(dead);
    return s;
}

lt_status lt_ir_fuse_elementwise(lt_module *m, lt_err *err)
{
    fuse f = {.m = m};
    lt_rewrite r = {.block = fuse_block, .ctx = &f, .uses = &f.uses, .marks = &f.grp, .mark = -1,
                    .doing = "fusing elementwise nodes"};
    lt_status s = lt_module_rewrite(m, &r, NULL, err);
    free(f.g);
    return s;
}
