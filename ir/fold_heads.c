/* Head split and merge folded into the per-head products (fold_heads.h). */
#include "fold_heads.h"
#include <stdlib.h>
#include <string.h>

typedef struct fold {
    lt_module *m;
    int *uses;      /* per value id: node inputs (regions included) and block results reading it */
    int *unhooked;  /* per value id: a value this pass took a reader from */
    bool *dead;     /* per node index of the block being rewritten */
    int nfolded;
} fold;

static bool known(lt_dim d) { return d.sym < 0 && d.v >= 0; }

static bool dim_eq(lt_dim a, lt_dim b)
{
    if (a.sym >= 0 || b.sym >= 0)
        return a.sym == b.sym;
    return a.v >= 0 && a.v == b.v;
}

static bool float_rank(const lt_ival *v, int rank)
{
    return v && v->type.kind == LT_KIND_TENSOR && (v->type.dtype == LT_F32 || v->type.dtype == LT_F64) &&
           v->type.rank == rank;
}

/* t: a Transpose of this block, still there, of a rank-r tensor with
 * exactly this perm */
static bool transpose_of(const lt_node *t, const lt_block *b, const bool *dead, int r, const int64_t *perm)
{
    if (!t || t->op != LT_OP_TRANSPOSE || t->block != b || dead[t->index] || t->nin != 1 || t->nout != 1 ||
        !t->out[0] || t->nregions || !float_rank(t->in[0], r))
        return false;
    int len = 0;
    const int64_t *p = lt_attr_ints(t, "perm", &len);
    if (!p || len != r)
        return false;
    for (int i = 0; i < r; i++)
        if (p[i] != perm[i])
            return false;
    return true;
}

/* a float product of two rank-4 operands of one type with the same
 * leading two dims, no views yet */
static bool is_product(const lt_node *n)
{
    if ((n->op != LT_OP_MAT_MUL && n->op != LT_OP_MAT_MUL_TRANS) || n->nin != 2 || n->nout != 1 || !n->out[0] ||
        n->nregions || !float_rank(n->in[0], 4) || !float_rank(n->in[1], 4) ||
        n->in[0]->type.dtype != n->in[1]->type.dtype)
        return false;
    if (lt_attr_find(n, "viewA") || lt_attr_find(n, "viewB") || lt_attr_find(n, "viewY"))
        return false;
    const lt_type *a = &n->in[0]->type, *c = &n->in[1]->type;
    return dim_eq(a->dims[0], c->dims[0]) && dim_eq(a->dims[1], c->dims[1]);
}

/* n's attributes with a (by name) replaced or added; a MatMul becomes
 * MatMulTrans {transA = 0, transB = 0} first */
static lt_status put_attr(lt_module *m, lt_node *n, lt_attr a)
{
    if (n->op == LT_OP_MAT_MUL) {
        lt_attr *at = lt_ir_alloc(m, sizeof *at * 2);
        if (!at)
            return LT_ERR_NOMEM;
        at[0] = (lt_attr){.name = "transA", .kind = LT_ATTR_INT, .i = 0};
        at[1] = (lt_attr){.name = "transB", .kind = LT_ATTR_INT, .i = 0};
        n->op = LT_OP_MAT_MUL_TRANS;
        n->domain_name = "";
        n->attrs = at;
        n->nattr = 2;
    }
    lt_attr *at = lt_ir_alloc(m, sizeof *at * (size_t)(n->nattr + 1));
    if (!at)
        return LT_ERR_NOMEM;
    int k = 0;
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->attrs[i].name, a.name))
            at[k++] = n->attrs[i];
    at[k++] = a;
    n->attrs = at;
    n->nattr = k;
    return LT_OK;
}

static lt_status put_view(lt_module *m, lt_node *n, const char *name, const int64_t *v)
{
    int64_t *ints = lt_ir_alloc(m, sizeof *ints * 6);
    if (!ints)
        return LT_ERR_NOMEM;
    memcpy(ints, v, sizeof *ints * 6);
    return put_attr(m, n, (lt_attr){.name = name, .kind = LT_ATTR_INTS, .n = 6, .ints = ints});
}

/* operand v as a view: *x receives the storage and view its 6 ints */
static bool operand_view(const lt_block *b, const bool *dead, lt_ival *v, lt_ival **x, int64_t *view)
{
    static const int64_t p4[4] = {0, 2, 1, 3}, p5[5] = {2, 0, 3, 1, 4};
    lt_node *t = v->def;
    /* Transpose(X) {0, 2, 1, 3}, X [B, T, H, D] */
    if (transpose_of(t, b, dead, 4, p4)) {
        const lt_type *xt = &t->in[0]->type;
        if (!known(xt->dims[1]) || !known(xt->dims[2]) || !known(xt->dims[3]))
            return false;
        int64_t T = xt->dims[1].v, H = xt->dims[2].v, D = xt->dims[3].v;
        int64_t w[6] = {H, T, D, 0, D, H * D};
        memcpy(view, w, sizeof w);
        *x = t->in[0];
        return true;
    }
    /* Squeeze(Split(Transpose(X) {2, 0, 3, 1, 4}, axis 0)[g]), X [B, T, G, H, D] */
    lt_node *q = t;
    if (!q || q->op != LT_OP_SQUEEZE || q->block != b || dead[q->index] || q->nout != 1 || q->nin < 1 ||
        q->nregions || !float_rank(q->in[0], 5))
        return false;
    lt_ival *s = q->in[0];
    lt_node *sp = s->def;
    if (!sp || sp->op != LT_OP_SPLIT || sp->block != b || dead[sp->index] || sp->nregions || sp->nin < 1 ||
        (lt_attr_int(sp, "axis", 0) != 0 && lt_attr_int(sp, "axis", 0) != -5) ||
        !transpose_of(sp->in[0]->def, b, dead, 5, p5))
        return false;
    const lt_ival *tv = sp->in[0];
    const lt_type *xt = &tv->def->in[0]->type;
    for (int d = 1; d < 5; d++)
        if (!known(xt->dims[d]))
            return false;
    int64_t T = xt->dims[1].v, G = xt->dims[2].v, H = xt->dims[3].v, D = xt->dims[4].v;
    if (sp->nout != G)
        return false;
    int g = -1;
    for (int i = 0; i < sp->nout; i++) {
        const lt_ival *o = sp->out[i];
        if (!float_rank(o, 5) || !known(o->type.dims[0]) || o->type.dims[0].v != 1)
            return false;
        if (o == s)
            g = i;
    }
    /* the squeeze keeps the piece's last four dims in order: the same elements */
    for (int d = 0; d < 4; d++)
        if (!dim_eq(v->type.dims[d], s->type.dims[d + 1]) || !dim_eq(s->type.dims[d + 1], tv->type.dims[d + 1]))
            return false;
    if (g < 0)
        return false;
    int64_t w[6] = {H, T, D, g * H * D, D, G * H * D};
    memcpy(view, w, sizeof w);
    *x = tv->def->in[0];
    return true;
}

/* u: Unsqueeze(P) {axes [0]} (attribute form, read once) of a product P
 * read by u alone that can write the merged layout (*p receives it):
 * rank-4 output, no viewY yet, each operand a view or of rank 4 with the
 * output's leading two dims */
static bool merged_piece(const fold *f, const lt_block *b, const bool *dead, const lt_node *u, lt_node **p)
{
    if (!u || u->op != LT_OP_UNSQUEEZE || u->block != b || dead[u->index] || u->opset >= 13 || u->nin != 1 ||
        u->nout != 1 || !u->out[0] || u->nregions || f->uses[u->out[0]->id] != 1 || !float_rank(u->out[0], 5))
        return false;
    int len = 0;
    const int64_t *ax = lt_attr_ints(u, "axes", &len);
    if (!ax || len != 1 || ax[0] != 0)
        return false;
    lt_node *n = u->in[0]->def;
    if (!n || (n->op != LT_OP_MAT_MUL && n->op != LT_OP_MAT_MUL_TRANS) || n->block != b || dead[n->index] ||
        n->nin != 2 || n->nout != 1 || n->out[0] != u->in[0] || n->nregions || !float_rank(n->out[0], 4) ||
        f->uses[n->out[0]->id] != 1 || lt_attr_int(n, "viewY", 0))
        return false;
    static const char *const vname[2] = {"viewA", "viewB"};
    const lt_type *y = &n->out[0]->type;
    for (int j = 0; j < 2; j++) {
        if (!n->in[j] || n->in[j]->type.dtype != y->dtype)
            return false;
        if (lt_attr_find(n, vname[j]))
            continue;
        const lt_type *x = &n->in[j]->type;
        if (!float_rank(n->in[j], 4) || !dim_eq(x->dims[0], y->dims[0]) || !dim_eq(x->dims[1], y->dims[1]))
            return false;
    }
    *p = n;
    return true;
}

/* an Unsqueeze's "axes" attribute holding the one axis, in m's arena; NULL when out of memory */
static lt_attr *axes_attr(lt_module *m, int64_t axis)
{
    int64_t *axes = lt_ir_alloc(m, sizeof *axes);
    lt_attr *at = lt_ir_alloc(m, sizeof *at);
    if (!axes || !at)
        return NULL;
    axes[0] = axis;
    *at = (lt_attr){.name = "axes", .kind = LT_ATTR_INTS, .n = 1, .ints = axes};
    return at;
}

static lt_status fold_block(lt_block *b, void *ctx)
{
    fold *f = ctx;
    lt_status s = LT_OK;
    bool *dead = f->dead;
    static const int64_t p4[4] = {0, 2, 1, 3};
    /* Transpose(P) {0, 2, 1, 3} of a product read by nothing else: the
     * product, writing the merged layout, in the Transpose's place */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *t = b->nodes[i];
        if (!transpose_of(t, b, dead, 4, p4))
            continue;
        lt_node *p = t->in[0]->def;
        if (!p || p->block != b || dead[p->index] || !is_product(p) || f->uses[p->out[0]->id] != 1)
            continue;
        lt_ival **in = lt_ir_alloc(f->m, sizeof *in * 2);
        if (!in) {
            s = LT_ERR_NOMEM;
            break;
        }
        in[0] = p->in[0];
        in[1] = p->in[1];
        t->op = p->op;
        t->opset = p->opset;
        t->domain_name = p->domain_name;
        t->in = in;
        t->nin = 2;
        t->attrs = p->attrs;
        t->nattr = p->nattr;
        s = put_attr(f->m, t, (lt_attr){.name = "viewY", .kind = LT_ATTR_INT, .i = 1});
        dead[p->index] = true;
        f->uses[p->out[0]->id] = 0;
        f->unhooked[p->out[0]->id] = true;
        f->nfolded++;
    }
    /* operands that are head splits: read from the storage */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *n = b->nodes[i];
        bool vy = n->op == LT_OP_MAT_MUL_TRANS && lt_attr_int(n, "viewY", 0);
        if (dead[i] || !(vy || is_product(n)))
            continue;
        if (vy && (!float_rank(n->in[0], 4) || !float_rank(n->in[1], 4) || lt_attr_find(n, "viewA") ||
                   lt_attr_find(n, "viewB")))
            continue;
        static const char *const name[2] = {"viewA", "viewB"};
        lt_ival *op[2] = {n->in[0], n->in[1]};
        for (int j = 0; j < 2 && s == LT_OK; j++) {
            lt_ival *x;
            int64_t view[6];
            if (!operand_view(b, dead, op[j], &x, view))
                continue;
            s = put_view(f->m, n, name[j], view);
            f->uses[op[j]->id]--;
            f->unhooked[op[j]->id] = true;
            f->uses[x->id]++;
            n->in[j] = x;
            f->nfolded++;
        }
    }
    /* Reshape(G, Shape(V)) with V G's shape behind a leading 1 (the AD's
     * gradient of the Squeeze after the Split): Unsqueeze(G) {axes [0]},
     * which needs no V; the Split and its Transpose can then go */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *r = b->nodes[i];
        if (dead[i] || r->op != LT_OP_RESHAPE || r->nin != 2 || r->nout != 1 || !r->out[0] || r->nregions ||
            !r->in[0] || !r->in[1])
            continue;
        lt_node *sh = r->in[1]->def;
        if (!sh || sh->op != LT_OP_SHAPE || sh->nin != 1 || !sh->in[0] || sh->nattr || sh->nregions)
            continue;
        const lt_type *g = &r->in[0]->type, *v = &sh->in[0]->type;
        bool lead = g->kind == LT_KIND_TENSOR && v->kind == LT_KIND_TENSOR && g->rank >= 0 && v->rank == g->rank + 1 &&
                    known(v->dims[0]) && v->dims[0].v == 1;
        for (int d = 0; lead && d < g->rank; d++)
            lead = dim_eq(v->dims[d + 1], g->dims[d]);
        if (!lead)
            continue;
        lt_attr *at = axes_attr(f->m, 0);
        if (!at) {
            s = LT_ERR_NOMEM;
            break;
        }
        f->uses[r->in[1]->id]--;
        f->unhooked[r->in[1]->id] = true;
        r->op = LT_OP_UNSQUEEZE;
        r->opset = 11; /* axes as an attribute */
        r->domain_name = "";
        r->nin = 1;
        r->attrs = at;
        r->nattr = 1;
    }
    /* Transpose(Concat(Unsqueeze(P_g) {axes [0]}, axis 0)) {1, 3, 0, 2, 4}
     * (the gradient of the packed split: dq, dk, dv back into the
     * projection's rows): each product writes the merged layout, its
     * Unsqueeze puts the piece's axis third and one Concat along it does
     * the rest, in the Transpose's place */
    static const int64_t p5[5] = {1, 3, 0, 2, 4};
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *t = b->nodes[i];
        if (!transpose_of(t, b, dead, 5, p5))
            continue;
        lt_node *c = t->in[0]->def;
        if (!c || c->op != LT_OP_CONCAT || c->block != b || dead[c->index] || c->nregions || c->nin < 1 ||
            c->nout != 1 || (lt_attr_int(c, "axis", 1) != 0 && lt_attr_int(c, "axis", 1) != -5) ||
            f->uses[c->out[0]->id] != 1 || c->nin > 16)
            continue;
        lt_node *u[16], *pr[16];
        bool ok = true;
        for (int j = 0; j < c->nin && ok; j++) {
            u[j] = c->in[j] ? c->in[j]->def : NULL;
            ok = merged_piece(f, b, dead, u[j], &pr[j]);
        }
        if (!ok)
            continue;
        lt_attr *at = axes_attr(f->m, 2);
        if (!at) {
            s = LT_ERR_NOMEM;
            break;
        }
        for (int j = 0; j < c->nin && s == LT_OK; j++) {
            s = put_attr(f->m, pr[j], (lt_attr){.name = "viewY", .kind = LT_ATTR_INT, .i = 1});
            lt_type *pt = &pr[j]->out[0]->type, *ut = &u[j]->out[0]->type;
            lt_dim h = pt->dims[1];
            pt->dims[1] = pt->dims[2];
            pt->dims[2] = h;
            /* [B, T, 1, H, D] */
            ut->dims[0] = pt->dims[0];
            ut->dims[1] = pt->dims[1];
            ut->dims[2] = (lt_dim){.sym = -1, .v = 1};
            ut->dims[3] = pt->dims[2];
            ut->dims[4] = pt->dims[3];
            u[j]->attrs = at;
            u[j]->nattr = 1;
            f->nfolded++;
        }
        lt_attr *ca = lt_ir_alloc(f->m, sizeof *ca);
        if (!ca) {
            s = LT_ERR_NOMEM;
            break;
        }
        *ca = (lt_attr){.name = "axis", .kind = LT_ATTR_INT, .i = 2};
        t->op = LT_OP_CONCAT;
        t->opset = c->opset;
        t->domain_name = c->domain_name;
        t->in = c->in;
        t->nin = c->nin;
        t->attrs = ca;
        t->nattr = 1;
        dead[c->index] = true;
        f->uses[c->out[0]->id] = 0;
        f->unhooked[c->out[0]->id] = true;
    }
    /* the head-moving nodes nothing reads any more, back to front so that
     * a removed one's own producer goes too */
    for (int i = b->nnodes - 1; i >= 0 && s == LT_OK; i--) {
        lt_node *t = b->nodes[i];
        if (dead[i] || t->nregions ||
            (t->op != LT_OP_TRANSPOSE && t->op != LT_OP_SPLIT && t->op != LT_OP_SQUEEZE && t->op != LT_OP_RESHAPE &&
             t->op != LT_OP_SHAPE))
            continue;
        bool unread = true, touched = false;
        for (int o = 0; o < t->nout; o++)
            if (t->out[o]) {
                unread &= f->uses[t->out[o]->id] == 0;
                touched |= f->unhooked[t->out[o]->id];
            }
        if (!unread || !touched)
            continue;
        dead[i] = true;
        for (int j = 0; j < t->nin; j++)
            if (t->in[j]) {
                f->uses[t->in[j]->id]--;
                f->unhooked[t->in[j]->id] = true;
            }
    }
    return s;
}

lt_status lt_ir_fold_heads(lt_module *m, int *nfolded, lt_err *err)
{
    fold f = {.m = m};
    lt_rewrite r = {.block = fold_block, .ctx = &f, .count = &f.nfolded, .uses = &f.uses, .dead = &f.dead,
                    .marks = &f.unhooked, .recount = LT_RECOUNT_ALWAYS,
                    .doing = "folding attention heads into matrix products"};
    return lt_module_rewrite(m, &r, nfolded, err);
}
