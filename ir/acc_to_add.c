/* Accumulation cells as chains of Add nodes (acc_to_add.h). */
#include "acc_to_add.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct fold {
    lt_module *m;
    int *uses;  /* per value id: node inputs (regions included) and block results reading it */
    bool *dead; /* per node index of the block being rewritten */
    int nfolded;
} fold;

/* How far two shapes are known to agree: NO where they cannot (another
 * rank, an unknown rank, two different known sizes at one axis), SAME where
 * every axis is the same known size or symbol, MAYBE where some axis could
 * differ (an unknown size, two symbols, a symbol and a number). */
enum { NO, MAYBE, SAME };

static int shape_match(const lt_type *a, const lt_type *b)
{
    if (a->rank < 0 || a->rank != b->rank)
        return NO;
    int r = SAME;
    for (int i = 0; i < a->rank; i++) {
        lt_dim x = a->dims[i], y = b->dims[i];
        if (x.sym >= 0 && y.sym >= 0 && x.sym == y.sym)
            continue;
        if (x.sym < 0 && y.sym < 0 && x.v >= 0 && y.v >= 0) {
            if (x.v != y.v)
                return NO;
            continue;
        }
        r = MAYBE;
    }
    return r;
}

static int tensor_match(const lt_type *t, const lt_type *ref)
{
    return t->kind == LT_KIND_TENSOR && t->dtype == ref->dtype ? shape_match(t, ref) : NO;
}

/* The cell made at b->nodes[z]: its adds (block indices, in order) and
 * its read, when every use of it qualifies: SAME when the read and every
 * contribution are known to have the cell's shape, MAYBE when they could
 * (unknown sizes: a head split's N*heads), NO otherwise. */
static int collect(const fold *f, const lt_block *b, int z, int **adds, int *nadds, int *read)
{
    const lt_node *zn = b->nodes[z];
    const lt_ival *c = zn->out[0];
    int found = 0, na = 0;
    *read = -1;
    for (int i = z + 1; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        int hits = 0;
        for (int j = 0; j < n->nin; j++)
            hits += n->in[j] == c;
        if (!hits)
            continue;
        found += hits;
        if (hits != 1 || n->in[0] != c)
            return NO;
        if (n->op == LT_OP_ACC_ADD && n->nin == 2 && n->nout == 0 && n->in[1] && *read < 0) {
            (*adds)[na++] = i;
        } else if (n->op == LT_OP_ACC_READ && n->nin == 1 && n->nout == 1 && n->out[0] && *read < 0) {
            *read = i;
        } else {
            return NO; /* a second read, an add after the read, AccGemm, a call, a region's owner */
        }
    }
    *nadds = na;
    if (found != f->uses[c->id] || *read < 0 || na < 1 || zn->nin < 1 || !zn->in[0])
        return NO;
    /* the read's value is a tensor shaped like the cell, and so is every contribution */
    const lt_type *rt = &b->nodes[*read]->out[0]->type;
    int m = rt->kind == LT_KIND_TENSOR && c->type.dtype == rt->dtype ? shape_match(&c->type, rt) : NO;
    for (int a = 0; a < na && m != NO; a++) {
        int t = tensor_match(&b->nodes[(*adds)[a]]->in[1]->type, rt);
        m = t < m ? t : m;
    }
    return m;
}

/* The cell's node becomes Shape(x) of the value the cell was made like,
 * and the read Reshape(sum, that shape): the cell's own shape, which a sum
 * of tensors of that size has only when they all had it (an Add of two
 * tensors of one size broadcasts to that size only when their shapes agree
 * up to leading ones, and the Reshape refuses any other size), so a shape
 * the types could not settle is checked when the program runs. */
static lt_status guard_shape(lt_module *m, lt_block *b, lt_node *zn, lt_node *rn, lt_ival *sum)
{
    lt_ival *x = zn->in[0];
    lt_ival *shp = lt_ival_new(m, b, "acc_shape");
    lt_ival **in = lt_ir_alloc(m, 2 * sizeof *in);
    if (!shp || !in)
        return LT_ERR_NOMEM;
    shp->type = (lt_type){.kind = LT_KIND_TENSOR, .dtype = LT_I64, .rank = 1};
    shp->type.dims[0] = (lt_dim){.v = x->type.rank, .sym = -1};
    zn->op = LT_OP_SHAPE;
    zn->domain_name = "";
    zn->nin = 1;
    zn->nattr = 0;
    zn->attrs = NULL;
    zn->out[0] = shp;
    shp->def = zn;
    shp->uses = 1;
    in[0] = sum;
    in[1] = shp;
    rn->op = LT_OP_RESHAPE;
    rn->domain_name = "";
    rn->opset = zn->opset;
    rn->nin = 2;
    rn->in = in;
    rn->nattr = 0;
    rn->attrs = NULL;
    return LT_OK;
}

static lt_status rewrite(fold *f, lt_block *b, int z, const int *adds, int na, int read, bool guard, bool *dead)
{
    lt_module *m = f->m;
    lt_node *rn = b->nodes[read], *zn = b->nodes[z];
    lt_ival *sum = b->nodes[adds[0]]->in[1], *res = rn->out[0], *cell = zn->out[0];
    dead[z] = !guard;
    dead[adds[0]] = true;
    if (na == 1 && !guard) {
        rn->op = LT_OP_IDENTITY;
        rn->in[0] = sum;
        rn->opset = b->nodes[adds[0]]->opset;
        rn->nattr = 0;
        rn->attrs = NULL;
    } else if (!guard) {
        dead[read] = true;
    }
    for (int a = 1; a < na; a++) {
        lt_node *n = b->nodes[adds[a]];
        lt_ival **out = lt_ir_alloc(m, sizeof *out);
        if (!out)
            return LT_ERR_NOMEM;
        lt_ival *v = res;
        if (a + 1 < na || guard) {
            char nm[256];
            snprintf(nm, sizeof nm, "%s_sum%d", res->name ? res->name : "acc", a);
            v = lt_ival_new(m, b, nm);
            if (!v)
                return LT_ERR_NOMEM;
            v->type = res->type;
        }
        n->op = LT_OP_ADD;
        n->in[0] = sum;
        n->nout = 1;
        n->out = out;
        n->nattr = 0;
        n->attrs = NULL;
        out[0] = v;
        v->def = n;
        v->uses = 1;
        sum = v;
    }
    cell->uses = 0;
    f->nfolded++;
    return guard ? guard_shape(m, b, zn, rn, sum) : LT_OK;
}

static lt_status fold_block(lt_block *b, void *ctx)
{
    fold *f = ctx;
    bool *dead = f->dead;
    int *adds = malloc(sizeof *adds * ((size_t)b->nnodes + 1));
    lt_status s = adds ? LT_OK : LT_ERR_NOMEM;
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        const lt_node *n = b->nodes[i];
        if (n->op != LT_OP_ACC_ZEROS_LIKE || n->nout != 1 || !n->out[0] || n->out[0]->type.kind != LT_KIND_CELL)
            continue;
        int na, read, match = collect(f, b, i, &adds, &na, &read);
        if (match != NO)
            s = rewrite(f, b, i, adds, na, read, match == MAYBE, dead);
    }
    free(adds);
    return s;
}

lt_status lt_ir_acc_to_add(lt_module *m, int *nfolded, lt_err *err)
{
    fold f = {.m = m};
    lt_rewrite r = {.block = fold_block, .ctx = &f, .count = &f.nfolded, .uses = &f.uses, .dead = &f.dead,
                    .doing = "turning accumulation cells into sums"};
    return lt_module_rewrite(m, &r, nfolded, err);
}
