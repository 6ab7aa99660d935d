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

/* both known and equal dims, symbols by name */
static bool same_shape(const lt_type *a, const lt_type *b)
{
    if (a->rank < 0 || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++) {
        lt_dim x = a->dims[i], y = b->dims[i];
        if (x.sym >= 0 || y.sym >= 0) {
            if (x.sym != y.sym)
                return false;
        } else if (x.v < 0 || x.v != y.v) {
            return false;
        }
    }
    return true;
}

static bool is_tensor_like(const lt_type *t, const lt_type *ref)
{
    return t->kind == LT_KIND_TENSOR && t->dtype == ref->dtype && same_shape(t, ref);
}

/* The cell made at b->nodes[z]: its adds (block indices, in order) and
 * its read, when every use of it qualifies; false otherwise. */
static bool collect(const fold *f, const lt_block *b, int z, int **adds, int *nadds, int *read)
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
            return false;
        if (n->op == LT_OP_ACC_ADD && n->nin == 2 && n->nout == 0 && n->in[1] && *read < 0) {
            (*adds)[na++] = i;
        } else if (n->op == LT_OP_ACC_READ && n->nin == 1 && n->nout == 1 && n->out[0] && *read < 0) {
            *read = i;
        } else {
            return false; /* a second read, an add after the read, AccGemm, a call, a region's owner */
        }
    }
    *nadds = na;
    if (found != f->uses[c->id] || *read < 0 || na < 1)
        return false;
    /* the read's value is a tensor shaped like the cell, and so is every contribution */
    const lt_type *rt = &b->nodes[*read]->out[0]->type;
    if (rt->kind != LT_KIND_TENSOR || c->type.dtype != rt->dtype || !same_shape(&c->type, rt))
        return false;
    for (int a = 0; a < na; a++)
        if (!is_tensor_like(&b->nodes[(*adds)[a]]->in[1]->type, rt))
            return false;
    return true;
}

static lt_status rewrite(fold *f, lt_block *b, int z, const int *adds, int na, int read, bool *dead)
{
    lt_module *m = f->m;
    lt_node *rn = b->nodes[read];
    lt_ival *sum = b->nodes[adds[0]]->in[1], *res = rn->out[0];
    dead[z] = true;
    dead[adds[0]] = true;
    if (na == 1) {
        rn->op = LT_OP_IDENTITY;
        rn->in[0] = sum;
        rn->opset = b->nodes[adds[0]]->opset;
        rn->nattr = 0;
        rn->attrs = NULL;
    } else {
        dead[read] = true;
    }
    for (int a = 1; a < na; a++) {
        lt_node *n = b->nodes[adds[a]];
        lt_ival **out = lt_ir_alloc(m, sizeof *out);
        if (!out)
            return LT_ERR_NOMEM;
        lt_ival *v = res;
        if (a + 1 < na) {
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
    b->nodes[z]->out[0]->uses = 0;
    f->nfolded++;
    return LT_OK;
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
        int na, read;
        if (collect(f, b, i, &adds, &na, &read))
            s = rewrite(f, b, i, adds, na, read, dead);
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
