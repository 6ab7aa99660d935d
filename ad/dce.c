/* Dead-code elimination after the AD: adjoint cells nobody reads lose their
 * accumulations (frozen parameters, integer inputs, shapes), and then every
 * pure node whose outputs nobody uses goes (forward values the backward
 * never needs, contributions nobody accumulates). Before that, a cell that
 * receives one contribution and is read once in its own block is replaced
 * by the contribution itself (most cells of straight-line code), and a
 * product added into a cell is computed into it (AccGemm). */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

typedef struct dce {
    lt_module *m;
    int *uses;      /* per value: reads other than AccAdd's cell operand and Call arguments */
    bool *read;     /* per cell value: its contents are read somewhere */
} dce;

static bool pure(lt_op op)
{
    switch (op) {
    case LT_OP_ACC_ADD:
    case LT_OP_ACC_GEMM:
    case LT_OP_CALL:
    case LT_OP_IF:
    case LT_OP_LOOP:
    case LT_OP_SCAN:
    case LT_OP_SEQUENCE_MAP:
        return false;
    default:
        return true;
    }
}

static const lt_block *callee(const dce *d, const lt_node *n)
{
    int64_t fi = lt_attr_int(n, "callee", -1);
    return fi >= 0 && fi < d->m->nfuncs ? d->m->funcs[fi]->body : NULL;
}

static void count(dce *d, const lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            if (!n->in[j])
                continue;
            d->uses[n->in[j]->id]++;
            bool cell_use = ((n->op == LT_OP_ACC_ADD || n->op == LT_OP_ACC_GEMM) && j == 0) || n->op == LT_OP_CALL;
            if (!cell_use)
                d->read[n->in[j]->id] = true;
        }
        for (int r = 0; r < n->nregions; r++)
            count(d, n->regions[r]);
    }
    for (int j = 0; j < b->nresults; j++) {
        d->uses[b->results[j]->id]++;
        d->read[b->results[j]->id] = true;
    }
}

/* a cell passed to a Call and the callee's parameter are one object at run
 * time: if either is read, both are */
static bool propagate_calls(dce *d, const lt_block *b)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (n->op == LT_OP_CALL) {
            const lt_block *f = callee(d, n);
            for (int j = 0; f && j < n->nin && j < f->nparams; j++) {
                if (!n->in[j] || d->read[n->in[j]->id] == d->read[f->params[j]->id])
                    continue;
                d->read[n->in[j]->id] = d->read[f->params[j]->id] = true;
                changed = true;
            }
        }
        for (int r = 0; r < n->nregions; r++)
            changed |= propagate_calls(d, n->regions[r]);
    }
    return changed;
}

static bool sweep(dce *d, lt_block *b)
{
    bool changed = false;
    int w = 0;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        bool dead = false;
        if (n->op == LT_OP_ACC_ADD || n->op == LT_OP_ACC_GEMM) {
            dead = n->in[0] && !d->read[n->in[0]->id];
        } else if (pure(n->op)) {
            dead = true;
            for (int j = 0; j < n->nout; j++)
                if (n->out[j] && d->uses[n->out[j]->id])
                    dead = false;
        }
        if (dead) {
            changed = true;
            continue;
        }
        for (int r = 0; r < n->nregions; r++)
            changed |= sweep(d, n->regions[r]);
        n->index = w;
        b->nodes[w++] = n;
    }
    b->nnodes = w;
    return changed;
}

/* Tensor types that are certainly the same at run time: every dim a known
 * size or the same symbol. */
static bool same_shape_type(const lt_type *a, const lt_type *b)
{
    if (a->dtype != b->dtype || a->rank < 0 || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++) {
        lt_dim x = a->dims[i], y = b->dims[i];
        bool ok = x.sym >= 0 ? x.sym == y.sym : (y.sym < 0 && x.v >= 0 && x.v == y.v);
        if (!ok)
            return false;
    }
    return true;
}

/* Reads of r become reads of v in nested blocks (regions of b's nodes
 * from index `from` on), their results included. */
static void replace_in_regions(lt_block *b, int from, const lt_ival *r, lt_ival *v)
{
    for (int i = from; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == r)
                n->in[j] = v;
        for (int g = 0; g < n->nregions; g++) {
            lt_block *rb = n->regions[g];
            replace_in_regions(rb, 0, r, v);
            for (int j = 0; j < rb->nresults; j++)
                if (rb->results[j] == r)
                    rb->results[j] = v;
        }
    }
}

/* A cell (AccZerosLike) with exactly two uses, an AccAdd of v and then an
 * AccRead, both directly in its block, holds v when it is read: the read
 * becomes Identity(v) (a view; later nodes read v itself, so unless it is
 * a result of the block the Identity dies too), and the cell, its zeroing
 * and the addition are left to the sweep. v must have the cell's shape, as
 * the read's users expect (AccAdd itself only matches sizes). */
static bool forward_cells(dce *d, lt_block *b)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions; r++)
            changed |= forward_cells(d, n->regions[r]);
        lt_ival *cell = n->op == LT_OP_ACC_ZEROS_LIKE && n->nout == 1 ? n->out[0] : NULL;
        if (!cell || d->uses[cell->id] != 2)
            continue;
        lt_node *add = NULL, *read = NULL;
        for (int k = i + 1; k < b->nnodes && !read; k++) {
            lt_node *u = b->nodes[k];
            if (u->op == LT_OP_ACC_ADD && u->nin == 2 && u->in[0] == cell && !add)
                add = u;
            else if (u->op == LT_OP_ACC_READ && u->nin == 1 && u->in[0] == cell && add)
                read = u;
        }
        lt_ival *v = add ? add->in[1] : NULL;
        if (!read || !v || v->type.kind != LT_KIND_TENSOR || !same_shape_type(&v->type, &cell->type))
            continue;
        read->op = LT_OP_IDENTITY;
        read->in[0] = v;
        replace_in_regions(b, read->index + 1, read->out[0], v);
        changed = true;
    }
    return changed;
}

/* AccAdd(cell, Gemm(A, B)) where nothing else reads the product becomes
 * AccGemm(cell, A, B): the product is added into the cell by the GEMM
 * itself, with no temporary and no separate addition (loop bodies
 * accumulate their weight gradients this way, once per iteration). */
static bool fuse_acc_gemm(dce *d, lt_module *m, lt_block *b)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions; r++)
            changed |= fuse_acc_gemm(d, m, n->regions[r]);
        if (n->op != LT_OP_ACC_ADD || n->nin != 2 || !n->in[0] || !n->in[1])
            continue;
        lt_ival *cell = n->in[0], *v = n->in[1];
        lt_node *g = v->def;
        lt_dtype dt = v->type.dtype;
        if (!g || g->op != LT_OP_GEMM || g->block != b || (g->nin > 2 && g->in[2]) || !g->in[0] || !g->in[1] ||
            d->uses[v->id] != 1 || (dt != LT_F32 && dt != LT_F64) || v->type.rank != 2 ||
            !same_shape_type(&v->type, &cell->type))
            continue;
        lt_ival **in = lt_ir_alloc(m, sizeof *in * 3);
        if (!in)
            continue;
        in[0] = cell;
        in[1] = g->in[0];
        in[2] = g->in[1];
        n->op = LT_OP_ACC_GEMM;
        n->in = in;
        n->nin = 3;
        n->attrs = g->attrs;
        n->nattr = g->nattr;
        changed = true;
    }
    return changed;
}

lt_status lt_ad_dce(lt_module *m, lt_err *err)
{
    dce d = {m, NULL, NULL};
    for (int round = 0; round < 1000; round++) {
        free(d.uses);
        free(d.read);
        d.uses = calloc(m->nvalues + 1, sizeof *d.uses);
        d.read = calloc(m->nvalues + 1, sizeof *d.read);
        if (!d.uses || !d.read) {
            free(d.uses);
            free(d.read);
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        }
        count(&d, m->main);
        for (int f = 0; f < m->nfuncs; f++)
            count(&d, m->funcs[f]->body);
        bool forwarded = forward_cells(&d, m->main);
        for (int f = 0; f < m->nfuncs; f++)
            forwarded |= forward_cells(&d, m->funcs[f]->body);
        if (forwarded)
            continue; /* count again */
        bool fused = fuse_acc_gemm(&d, m, m->main);
        for (int f = 0; f < m->nfuncs; f++)
            fused |= fuse_acc_gemm(&d, m, m->funcs[f]->body);
        if (fused)
            continue;
        bool more = true;
        while (more) {
            more = propagate_calls(&d, m->main);
            for (int f = 0; f < m->nfuncs; f++)
                more |= propagate_calls(&d, m->funcs[f]->body);
        }
        bool changed = sweep(&d, m->main);
        for (int f = 0; f < m->nfuncs; f++)
            changed |= sweep(&d, m->funcs[f]->body);
        if (!changed)
            break;
    }
    free(d.uses);
    free(d.read);
    return LT_OK;
}
