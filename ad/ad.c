/* The CPS transform. ad_block(c, src, i, kont) writes node i's forward, then
 * (through the recursion) everything after it and finally the
 * meta-continuation kont, then node i's backward: for a block that is the
 * forward in order followed by the backward in reverse order (the paper's
 * Figure 9, with shift/reset moved into the translator). Adjoints are
 * accumulation cells: AccZerosLike when a value is defined, AccAdd from each
 * use's backward, AccRead when the defining node's backward runs.
 *
 * If: the continuation is reified once as an IR function whose parameters are
 * the If's results and their cells (plus what it captures); each branch runs
 * its forward, calls it, then runs its backward.
 * Loop and Scan: a recursive IR function per loop (ad_loop.c). */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

static bool is_float(lt_dtype t)
{
    return t == LT_F32 || t == LT_F64 || t == LT_F16 || t == LT_BF16;
}

/* ---- activity: which values depend on what is differentiated ---- */
static bool mark(lt_ad *c, const lt_ival *v)
{
    if (!v || c->active[v->id] || v->id >= c->nsrc)
        return false;
    if (v->type.kind != LT_KIND_TENSOR || (v->type.dtype != LT_UNDEFINED && !is_float(v->type.dtype)))
        return false;
    c->active[v->id] = true;
    return true;
}

static bool any_active_in_block(lt_ad *c, const lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && c->active[n->in[j]->id])
                return true;
        for (int r = 0; r < n->nregions; r++)
            if (any_active_in_block(c, n->regions[r]))
                return true;
    }
    for (int j = 0; j < b->nresults; j++)
        if (c->active[b->results[j]->id])
            return true;
    return false;
}

static bool activity_pass(lt_ad *c, const lt_block *b)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (n->op == LT_OP_LOOP && n->nregions == 1) {
            const lt_block *body = n->regions[0];
            int N = n->nin - 2;
            for (int j = 0; j < N; j++) {
                const lt_ival *vs[4] = {n->in[2 + j], body->params[2 + j], 1 + j < body->nresults ? body->results[1 + j] : NULL,
                                        j < n->nout ? n->out[j] : NULL};
                bool any = false;
                for (int q = 0; q < 4; q++)
                    any |= vs[q] && c->active[vs[q]->id];
                if (any)
                    for (int q = 0; q < 4; q++)
                        changed |= mark(c, vs[q]);
            }
        } else if (n->op == LT_OP_SCAN && n->nregions == 1 && n->opset >= 9) {
            const lt_block *body = n->regions[0];
            int S = (int)lt_attr_int(n, "num_scan_inputs", 0), N = n->nin - S;
            for (int j = 0; j < N; j++) {
                const lt_ival *vs[4] = {n->in[j], body->params[j], j < body->nresults ? body->results[j] : NULL,
                                        j < n->nout ? n->out[j] : NULL};
                bool any = false;
                for (int q = 0; q < 4; q++)
                    any |= vs[q] && c->active[vs[q]->id];
                if (any)
                    for (int q = 0; q < 4; q++)
                        changed |= mark(c, vs[q]);
            }
            for (int s = 0; s < S; s++)
                if (n->in[N + s] && c->active[n->in[N + s]->id])
                    changed |= mark(c, body->params[N + s]);
        }
        for (int r = 0; r < n->nregions; r++)
            changed |= activity_pass(c, n->regions[r]);
        bool in_active = false;
        for (int j = 0; j < n->nin; j++)
            in_active |= n->in[j] && c->active[n->in[j]->id];
        for (int r = 0; r < n->nregions && !in_active; r++)
            in_active = any_active_in_block(c, n->regions[r]);
        if (n->op == LT_OP_LOOP || n->op == LT_OP_SCAN) {
            /* scan outputs follow the body's per-iteration values */
            const lt_block *body = n->nregions ? n->regions[0] : NULL;
            int N = n->op == LT_OP_LOOP ? n->nin - 2 : n->nin - (int)lt_attr_int(n, "num_scan_inputs", 0);
            int first = n->op == LT_OP_LOOP ? 1 + N : N;
            for (int k = N; body && k < n->nout; k++)
                if (first + k - N < body->nresults && c->active[body->results[first + k - N]->id])
                    changed |= mark(c, n->out[k]);
            continue;
        }
        if (n->op == LT_OP_IF && n->nregions == 2) {
            for (int j = 0; j < n->nout; j++)
                for (int r = 0; r < 2; r++)
                    if (j < n->regions[r]->nresults && c->active[n->regions[r]->results[j]->id])
                        changed |= mark(c, n->out[j]);
            continue;
        }
        if (in_active)
            for (int j = 0; j < n->nout; j++)
                changed |= mark(c, n->out[j]);
    }
    return changed;
}

/* ---- emission helpers ---- */
lt_ival *lt_ad_mapped(lt_ad *c, const lt_ival *v)
{
    if (!v)
        return NULL;
    if (v->param >= 0 || v->id >= c->nsrc)
        return (lt_ival *)v;
    return c->map[v->id];
}

lt_ival *lt_ad_new_cell(lt_ad *c, lt_ival *v)
{
    lt_ival *cell = lt_ad_op1(c, LT_OP_ACC_ZEROS_LIKE, v);
    if (cell) {
        cell->type = v->type;
        cell->type.kind = LT_KIND_CELL;
    }
    return cell;
}

/* A cell for every active source value just emitted. */
lt_status lt_ad_make_cells(lt_ad *c, lt_ival *const *src, int n)
{
    for (int j = 0; j < n; j++) {
        if (!src[j] || !c->active[src[j]->id] || c->cell[src[j]->id])
            continue;
        c->cell[src[j]->id] = lt_ad_new_cell(c, lt_ad_mapped(c, src[j]));
        if (!c->cell[src[j]->id])
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    }
    return LT_OK;
}

lt_status lt_ad_clone_block(lt_ad *c, const lt_block *src, lt_block *dst);

/* Emits a copy of a forward node (regions copied too). */
lt_status lt_ad_clone_node(lt_ad *c, const lt_node *n)
{
    lt_node *k = lt_node_new(c->m, c->out, n->op, n->nin, n->nout);
    if (!k)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    k->opset = n->opset;
    k->name = n->name;
    k->domain_name = n->domain_name;
    k->attrs = n->attrs;
    k->nattr = n->nattr;
    for (int j = 0; j < n->nin; j++) {
        k->in[j] = lt_ad_mapped(c, n->in[j]);
        if (n->in[j] && !k->in[j])
            return lt_errf(c->err, LT_ERR_INTERNAL, "%s: AD: '%s' used before it was emitted", c->m->path,
                           n->in[j]->name);
    }
    if (n->nregions) {
        lt_status s = lt_node_set_regions(c->m, k, n->nregions);
        for (int r = 0; r < n->nregions && s == LT_OK; r++) {
            k->regions[r] = lt_block_new(c->m, c->out, n->regions[r]->name);
            if (!k->regions[r])
                return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
            k->regions[r]->owner = k;
            lt_block *saved = c->out;
            c->out = k->regions[r];
            s = lt_ad_clone_block(c, n->regions[r], k->regions[r]);
            c->out = saved;
        }
        if (s != LT_OK)
            return s;
    }
    for (int j = 0; j < n->nout; j++) {
        if (!n->out[j])
            continue;
        lt_ival *v = lt_ival_new(c->m, c->out, n->out[j]->name);
        if (!v)
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
        v->def = k;
        v->type = n->out[j]->type;
        k->out[j] = v;
        c->map[n->out[j]->id] = v;
    }
    return LT_OK;
}

lt_status lt_ad_clone_block(lt_ad *c, const lt_block *src, lt_block *dst)
{
    lt_status s = lt_block_set_params(c->m, dst, src->nparams);
    for (int p = 0; p < src->nparams && s == LT_OK; p++) {
        dst->params[p] = lt_ival_new(c->m, dst, src->params[p]->name);
        if (!dst->params[p])
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
        dst->params[p]->type = src->params[p]->type;
        c->map[src->params[p]->id] = dst->params[p];
    }
    for (int i = 0; i < src->nnodes && s == LT_OK; i++)
        s = lt_ad_clone_node(c, src->nodes[i]);
    if (s == LT_OK)
        s = lt_block_set_results(c->m, dst, src->nresults);
    for (int j = 0; j < src->nresults && s == LT_OK; j++)
        dst->results[j] = lt_ad_mapped(c, src->results[j]);
    return s;
}

bool lt_ad_wants(lt_ad *c, const lt_node *n, int i)
{
    const lt_ival *v = i < n->nin ? n->in[i] : NULL;
    if (!v || v->id >= c->nsrc || !c->active[v->id] || !c->cell[v->id])
        return false;
    return i >= 32 || !(lt_ad_nondiff[n->op] >> i & 1);
}

lt_status lt_ad_accum(lt_ad *c, const lt_node *n, int i, lt_ival *v)
{
    if (!lt_ad_wants(c, n, i))
        return LT_OK;
    if (!v)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    lt_node *a = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
    if (!a)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    a->in[0] = c->cell[n->in[i]->id];
    a->in[1] = v;
    return LT_OK;
}

lt_status lt_ad_accum_wanted(lt_ad *c, const lt_node *n, lt_node *k, const bool *want, int m)
{
    lt_status s = LT_OK;
    for (int i = 0; i < m; i++) {
        if (!want[i])
            k->out[i] = NULL;
        else if (s == LT_OK)
            s = lt_ad_accum(c, n, i, k->out[i]);
    }
    return s;
}

/* The backward of a straight-line node. */
static lt_status backward(lt_ad *c, const lt_node *n)
{
    bool any = false;
    for (int j = 0; j < n->nin; j++)
        any |= lt_ad_wants(c, n, j);
    if (!any)
        return LT_OK;
    lt_ival *dout[64] = {0}, *in[64] = {0}, *out[64] = {0};
    if (n->nin > 64 || n->nout > 64)
        return lt_ad_fail(c, n, "too many inputs or outputs to differentiate");
    bool have_adjoint = false;
    for (int j = 0; j < n->nout; j++) {
        out[j] = lt_ad_mapped(c, n->out[j]);
        if (n->out[j] && c->cell[n->out[j]->id]) {
            dout[j] = lt_ad_op1(c, LT_OP_ACC_READ, c->cell[n->out[j]->id]);
            if (!dout[j])
                return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
            dout[j]->type = n->out[j]->type;
            have_adjoint = true;
        }
    }
    if (!have_adjoint)
        return LT_OK;
    for (int j = 0; j < n->nin; j++)
        in[j] = lt_ad_mapped(c, n->in[j]);
    if (!lt_ad_rules[n->op])
        return lt_ad_fail(c, n, "no gradient rule for op %s", lt_op_names[n->op]);
    return lt_ad_rules[n->op](c, n, in, out, dout);
}

/* ---- closure conversion of a lifted function ---- */
static bool inside(const lt_block *b, const lt_block *root)
{
    for (; b; b = b->parent)
        if (b == root)
            return true;
    return false;
}

typedef lt_ad_captures captures;

static void find_free(const lt_block *b, const lt_block *root, captures *cp)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            lt_ival *v = n->in[j];
            if (!v || v->param >= 0 || inside(v->block, root))
                continue;
            bool seen = false;
            for (int k = 0; k < cp->n && !seen; k++)
                seen = cp->v[k] == v;
            if (!seen) {
                if (cp->n == cp->cap) {
                    cp->cap = cp->cap ? cp->cap * 2 : 16;
                    cp->v = realloc(cp->v, sizeof *cp->v * cp->cap);
                }
                cp->v[cp->n++] = v;
            }
        }
        for (int r = 0; r < n->nregions; r++)
            find_free(n->regions[r], root, cp);
    }
}

static void substitute(lt_block *b, lt_ival *from, lt_ival *to)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] == from)
                n->in[j] = to;
        for (int r = 0; r < n->nregions; r++)
            substitute(n->regions[r], from, to);
    }
    for (int j = 0; j < b->nresults; j++)
        if (b->results[j] == from)
            b->results[j] = to;
}

static bool has(const captures *cp, const lt_ival *v)
{
    for (int k = 0; k < cp->n; k++)
        if (cp->v[k] == v)
            return true;
    return false;
}

static bool push(captures *cp, lt_ival *v)
{
    if (cp->n == cp->cap) {
        int nc = cp->cap ? cp->cap * 2 : 16;
        lt_ival **q = realloc(cp->v, sizeof *q * nc);
        if (!q)
            return false;
        cp->v = q;
        cp->cap = nc;
    }
    cp->v[cp->n++] = v;
    return true;
}

static int func_index(const lt_module *m, const lt_node *call)
{
    int64_t fi = lt_attr_int(call, "callee", -1);
    return fi >= 0 && fi < m->nfuncs ? (int)fi : -1;
}

/* what a call inside f needs passed that f itself must receive */
static bool grow_from_calls(const lt_module *m, const lt_block *b, const lt_block *root, captures *mine,
                            const captures *all, bool *oom)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        int g = n->op == LT_OP_CALL ? func_index(m, n) : -1;
        for (int k = 0; g >= 0 && k < all[g].n; k++) {
            lt_ival *v = all[g].v[k];
            if (!inside(v->block, root) && !has(mine, v)) {
                if (!push(mine, v))
                    *oom = true;
                changed = true;
            }
        }
        for (int r = 0; r < n->nregions; r++)
            changed |= grow_from_calls(m, n->regions[r], root, mine, all, oom);
    }
    return changed;
}

static lt_status extend_calls(lt_ad *c, lt_block *b, const captures *all)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        int g = n->op == LT_OP_CALL ? func_index(c->m, n) : -1;
        if (g >= 0 && all[g].n) {
            lt_status s = lt_ad_extend_call(c, n, all[g].n, all[g].v);
            if (s != LT_OK)
                return s;
        }
        for (int r = 0; r < n->nregions; r++) {
            lt_status s = extend_calls(c, n->regions[r], all);
            if (s != LT_OK)
                return s;
        }
    }
    return LT_OK;
}

/* Closure conversion of every lifted function at once: a function's free
 * values, and those of the functions it calls that it does not define
 * itself, become trailing parameters; every call passes them. */
lt_status lt_ad_close_all(lt_ad *c, lt_block *top, int first)
{
    lt_module *m = c->m;
    int nf = m->nfuncs;
    captures *all = calloc(nf + 1, sizeof *all);
    bool oom = !all;
    for (int f = first; f < nf && !oom; f++)
        find_free(m->funcs[f]->body, m->funcs[f]->body, &all[f]);
    for (bool changed = true; changed && !oom;) {
        changed = false;
        for (int f = first; f < nf; f++)
            changed |= grow_from_calls(m, m->funcs[f]->body, m->funcs[f]->body, &all[f], all, &oom);
    }
    lt_status s = oom ? lt_errf(c->err, LT_ERR_NOMEM, "out of memory") : LT_OK;
    /* parameters first (so the calls' new arguments get substituted too) */
    lt_ival ***params = calloc(nf + 1, sizeof *params);
    for (int f = first; f < nf && s == LT_OK; f++) {
        lt_block *b = m->funcs[f]->body;
        params[f] = calloc(all[f].n + 1, sizeof **params);
        lt_ival **np = lt_ir_alloc(m, sizeof *np * (b->nparams + all[f].n + 1));
        if (!params[f] || !np) {
            s = lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
            break;
        }
        if (b->nparams)
            memcpy(np, b->params, sizeof *np * b->nparams);
        for (int k = 0; k < all[f].n; k++) {
            lt_ival *p = lt_ival_new(m, b, all[f].v[k]->name);
            if (!p) {
                s = lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
                break;
            }
            p->type = all[f].v[k]->type;
            np[b->nparams + k] = params[f][k] = p;
        }
        b->params = np;
        b->nparams += all[f].n;
    }
    if (s == LT_OK)
        s = extend_calls(c, top, all);
    for (int f = first; f < nf && s == LT_OK; f++)
        s = extend_calls(c, m->funcs[f]->body, all);
    for (int f = first; f < nf && s == LT_OK; f++)
        for (int k = 0; k < all[f].n; k++)
            substitute(m->funcs[f]->body, all[f].v[k], params[f][k]);
    for (int f = 0; f <= nf; f++) {
        if (all)
            free(all[f].v);
        if (params)
            free(params[f]);
    }
    free(all);
    free(params);
    return s;
}

/* Appends extra arguments to a Call node. */
lt_status lt_ad_extend_call(lt_ad *c, lt_node *call, int n, lt_ival *const *extra)
{
    if (n == 0)
        return LT_OK;
    lt_ival **in = lt_ir_alloc(c->m, sizeof *in * (call->nin + n));
    if (!in)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    memcpy(in, call->in, sizeof *in * call->nin);
    memcpy(in + call->nin, extra, sizeof *in * n);
    call->in = in;
    call->nin += n;
    return LT_OK;
}

lt_node *lt_ad_call(lt_ad *c, lt_func *f, int nin, lt_ival *const *args, int nout)
{
    lt_node *n = lt_ad_node(c, LT_OP_CALL, nin, nout);
    if (!n)
        return NULL;
    for (int i = 0; i < nin; i++)
        n->in[i] = args[i];
    int fi = 0;
    while (fi < c->m->nfuncs && c->m->funcs[fi] != f)
        fi++;
    lt_ad_attr_int(c, n, "callee", fi);
    return n;
}

/* ---- the transform ---- */

static bool node_active(lt_ad *c, const lt_node *n)
{
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] && c->active[n->out[j]->id])
            return true;
    return false;
}

typedef struct if_branch_env {
    lt_func *k1;
    const lt_node *n;
    int r;
} if_branch_env;

/* Inside a branch, once its forward is written: call the continuation with
 * the branch's results and their cells. */
static lt_status if_branch_kont(lt_ad *c, void *envp)
{
    if_branch_env *e = envp;
    const lt_block *rb = e->n->regions[e->r];
    lt_ival **args = calloc(2 * e->n->nout + 1, sizeof *args);
    if (!args)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    int na = 0;
    for (int j = 0; j < e->n->nout; j++)
        if (e->n->out[j])
            args[na++] = lt_ad_mapped(c, rb->results[j]);
    lt_status s = LT_OK;
    for (int j = 0; j < e->n->nout && s == LT_OK; j++) {
        if (!e->n->out[j] || !c->active[e->n->out[j]->id])
            continue;
        const lt_ival *src = rb->results[j];
        lt_ival *cell = src->id < c->nsrc ? c->cell[src->id] : NULL;
        if (!cell)
            cell = lt_ad_new_cell(c, lt_ad_mapped(c, src));
        args[na++] = cell;
        if (!cell)
            s = lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    }
    if (s == LT_OK && !lt_ad_call(c, e->k1, na, args, 0))
        s = lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    free(args);
    return s;
}

static lt_status ad_if(lt_ad *c, const lt_block *b, int i, lt_ad_kont k)
{
    const lt_node *n = b->nodes[i];
    lt_status s;
    /* continuation k1(results..., result cells..., captures...) */
    char nm[300];
    snprintf(nm, sizeof nm, "k_after_%s", *n->name ? n->name : "if");
    lt_func *f = lt_module_add_func(c->m, nm);
    if (!f)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    int np = 0;
    for (int j = 0; j < n->nout; j++)
        if (n->out[j])
            np += 1 + (c->active[n->out[j]->id] ? 1 : 0);
    if ((s = lt_block_set_params(c->m, f->body, np)) != LT_OK)
        return s;
    int p = 0;
    for (int j = 0; j < n->nout; j++)
        if (n->out[j]) {
            lt_ival *v = lt_ival_new(c->m, f->body, n->out[j]->name);
            v->type = n->out[j]->type;
            f->body->params[p++] = v;
            c->map[n->out[j]->id] = v;
        }
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] && c->active[n->out[j]->id]) {
            lt_ival *v = lt_ival_new(c->m, f->body, "cell");
            v->type = n->out[j]->type;
            v->type.kind = LT_KIND_CELL;
            f->body->params[p++] = v;
            c->cell[n->out[j]->id] = v;
        }
    lt_block *saved = c->out;
    c->out = f->body;
    s = lt_ad_block(c, b, i + 1, k);
    c->out = saved;
    if (s == LT_OK)
        s = lt_block_set_results(c->m, f->body, 0);
    if (s != LT_OK)
        return s;
    /* if (c) { then-forward; k1(...); then-backward } else { ... } */
    lt_node *iff = lt_node_new(c->m, c->out, LT_OP_IF, 1, 0);
    if (!iff || lt_node_set_regions(c->m, iff, 2) != LT_OK)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    iff->opset = n->opset;
    iff->name = n->name;
    iff->in[0] = lt_ad_mapped(c, n->in[0]);
    iff->attrs = n->attrs;
    iff->nattr = n->nattr;
    for (int r = 0; r < 2 && s == LT_OK; r++) {
        lt_block *rb = lt_block_new(c->m, c->out, n->regions[r]->name);
        rb->owner = iff;
        iff->regions[r] = rb;
        lt_block_set_results(c->m, rb, 0);
        if_branch_env e = {f, n, r};
        lt_block *outer = c->out;
        c->out = rb;
        s = lt_ad_block(c, n->regions[r], 0, (lt_ad_kont){if_branch_kont, &e});
        c->out = outer;
    }
    return s;
}

lt_status lt_ad_block(lt_ad *c, const lt_block *b, int i, lt_ad_kont k)
{
    if (i == b->nnodes)
        return k.fn(c, k.env);
    const lt_node *n = b->nodes[i];
    bool act = node_active(c, n);
    if (act && n->op == LT_OP_IF)
        return ad_if(c, b, i, k);
    if (act && (n->op == LT_OP_LOOP || n->op == LT_OP_SCAN))
        return lt_ad_loop(c, b, i, k);
    if (act && n->nregions)
        return lt_ad_fail(c, n, "differentiating through %s is not supported", lt_op_names[n->op]);
    lt_status s = lt_ad_clone_node(c, n);
    if (s == LT_OK && act)
        s = lt_ad_make_cells(c, n->out, n->nout);
    if (s == LT_OK)
        s = lt_ad_block(c, b, i + 1, k);
    if (s == LT_OK && act)
        s = backward(c, n);
    return s;
}

/* What the whole program's continuation does once the loss is computed:
 * seed its adjoint with 1 and record its value. */
static lt_status top_kont(lt_ad *c, void *env)
{
    (void)env;
    lt_ival *L = lt_ad_mapped(c, c->loss_src);
    lt_node *a = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
    if (!a)
        return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
    a->in[0] = c->loss_cell;
    a->in[1] = L;
    if (c->cell[c->loss_src->id]) {
        lt_ival *one = lt_ad_scalar(c, c->loss_src->type.dtype == LT_F64 ? LT_F64 : LT_F32, 1.0);
        lt_node *s = lt_ad_node(c, LT_OP_ACC_ADD, 2, 0);
        if (!one || !s)
            return lt_errf(c->err, LT_ERR_NOMEM, "out of memory");
        s->in[0] = c->cell[c->loss_src->id];
        s->in[1] = one;
    }
    return LT_OK;
}

/* A node appended to the source program's main block; its one output is
 * returned (NULL when out of memory). */
static lt_ival *loss_node(lt_module *m, lt_op op, const char *name, int nin, lt_ival *a, lt_ival *b)
{
    if (!a || (nin == 2 && !b))
        return NULL; /* an earlier node could not be made */
    lt_node *n = lt_node_new(m, m->main, op, nin, 1);
    if (!n)
        return NULL;
    n->opset = LT_AD_OPSET;
    n->name = name;
    n->in[0] = a;
    if (nin == 2)
        n->in[1] = b;
    if (op == LT_OP_REDUCE_SUM || op == LT_OP_REDUCE_MEAN) {
        lt_node_set_attrs(m, n, 1);
        n->attrs[0] = (lt_attr){.name = "keepdims", .kind = LT_ATTR_INT, .i = 0};
    }
    n->out[0] = lt_ival_new(m, m->main, name);
    if (!n->out[0])
        return NULL;
    n->out[0]->def = n;
    return n->out[0];
}

/* y reshaped to a scalar: the run fails with a clear message unless y has
 * exactly one element. */
static lt_ival *as_scalar(lt_module *m, lt_ival *y)
{
    lt_node *c = lt_node_new(m, m->main, LT_OP_CONSTANT, 0, 1);
    lt_tensor *t = c ? lt_ir_alloc(m, sizeof *t) : NULL;
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->dtype = LT_I64;
    t->rank = 1;
    t->data = lt_ir_alloc(m, 1);
    c->opset = LT_AD_OPSET;
    lt_node_set_attrs(m, c, 1);
    c->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = t};
    c->out[0] = lt_ival_new(m, m->main, "loss_shape");
    if (!c->out[0] || !t->data)
        return NULL;
    c->out[0]->def = c;
    return loss_node(m, LT_OP_RESHAPE, "loss_scalar", 2, y, c->out[0]);
}

/* A new program input typed like y (targets) or int64 class indices of y
 * without its class dim (labels). */
static lt_ival *loss_input(lt_module *m, const char *name, const lt_ival *y, bool classes)
{
    lt_ival *v = lt_ival_new(m, m->main, name);
    if (!v)
        return NULL;
    if (!classes) {
        v->type = y->type;
        return v;
    }
    lt_type_unknown(&v->type, LT_I64, y->type.rank >= 1 ? y->type.rank - 1 : -1);
    for (int d = 0; d + 1 < y->type.rank; d++)
        v->type.dims[d] = y->type.dims[d];
    return v;
}

/* Class scores [d0, ..., C] (classes last, as per-token outputs have them)
 * as the loss ops read them, [d0, C, d1, ...]; rank 2 stays as it is. */
static lt_ival *classes_to_axis1(lt_module *m, lt_ival *y)
{
    int r = y->type.rank;
    if (r <= 2)
        return y;
    lt_ival *t = loss_node(m, LT_OP_TRANSPOSE, "loss_classes_axis1", 1, y, NULL);
    if (!t || lt_node_set_attrs(m, t->def, 1) != LT_OK)
        return NULL;
    int64_t *perm = lt_ir_alloc(m, sizeof *perm * (size_t)r);
    if (!perm)
        return NULL;
    perm[0] = 0;
    perm[1] = r - 1;
    for (int d = 2; d < r; d++)
        perm[d] = d - 1;
    t->def->attrs[0] = (lt_attr){.name = "perm", .kind = LT_ATTR_INTS, .n = r, .ints = perm};
    return t;
}

/* The sum of output * seed over the seeded outputs. */
static lt_status seeded_loss(lt_module *m, const lt_ad_spec *spec, lt_ival **loss, int *nextra, lt_ival **extra,
                             lt_err *err)
{
    lt_block *b = m->main;
    lt_ival *acc = NULL;
    for (int s = 0; s < spec->nseeds; s++) {
        lt_ival *out = NULL;
        for (int r = 0; r < b->nresults; r++)
            if (strcmp(b->results[r]->name, spec->seed_outputs[s]) == 0)
                out = b->results[r];
        if (!out)
            return lt_errf(err, LT_ERR_INVALID, "%s: --seed names '%s', which is not an output", m->path,
                           spec->seed_outputs[s]);
        char nm[300];
        snprintf(nm, sizeof nm, "%s_seed", out->name);
        lt_ival *seed = loss_input(m, nm, out, false);
        lt_ival *sum = loss_node(m, LT_OP_REDUCE_SUM, "seeded_sum", 1, loss_node(m, LT_OP_MUL, "seeded", 2, out, seed), NULL);
        if (acc)
            sum = loss_node(m, LT_OP_ADD, "seeded_total", 2, acc, sum);
        if (!sum)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        extra[(*nextra)++] = seed;
        acc = sum;
    }
    if (!acc)
        return lt_errf(err, LT_ERR_INVALID, "%s: no --seed given", m->path);
    *loss = acc;
    return LT_OK;
}

/* Appends the loss to the source program: the transform then differentiates
 * it like any other node. */
static lt_status append_loss(lt_module *m, const lt_ad_spec *spec, lt_ival **loss, int *nextra, lt_ival **extra,
                             lt_err *err)
{
    lt_block *b = m->main;
    *nextra = 0;
    if (b->nresults < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output to differentiate", m->path);
    if (spec->loss == LT_AD_LOSS_SEEDS)
        return seeded_loss(m, spec, loss, nextra, extra, err);
    lt_ival *y = b->results[0];
    if (spec->output) {
        y = NULL;
        for (int r = 0; r < b->nresults && !y; r++)
            if (strcmp(b->results[r]->name, spec->output) == 0)
                y = b->results[r];
        if (!y)
            return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output named '%s'", m->path, spec->output);
    }
    if (y->type.kind != LT_KIND_TENSOR || (y->type.dtype != LT_UNDEFINED && y->type.dtype != LT_F32 && y->type.dtype != LT_F64 &&
                                            y->type.dtype != LT_F16 && y->type.dtype != LT_BF16))
        return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' is not a float tensor; a loss needs one", m->path, y->name);
    lt_ival *L = NULL, *in = NULL;
    switch (spec->loss) {
    case LT_AD_LOSS_SUM:
    case LT_AD_LOSS_MODEL:
        if (spec->loss == LT_AD_LOSS_MODEL) {
            bool known = y->type.rank >= 0;
            int64_t numel = 1;
            for (int d = 0; d < y->type.rank; d++) {
                known = known && y->type.dims[d].sym < 0 && y->type.dims[d].v >= 0;
                numel *= known ? y->type.dims[d].v : 1;
            }
            if (known && numel != 1)
                return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' has %lld elements; --loss model needs the output "
                               "to be the scalar loss", m->path, y->name, (long long)numel);
        }
        L = loss_node(m, LT_OP_REDUCE_SUM, "loss", 1, spec->loss == LT_AD_LOSS_MODEL ? as_scalar(m, y) : y, NULL);
        break;
    case LT_AD_LOSS_MEAN:
        L = loss_node(m, LT_OP_REDUCE_MEAN, "loss", 1, y, NULL);
        break;
    case LT_AD_LOSS_SCE:
    case LT_AD_LOSS_NLL:
        /* scores with extra axes ([N, T, C]: per token, per node) against
         * labels of those axes ([N, T]); the mean runs over the labels that
         * are not ignore_index, as PyTorch's */
        in = loss_input(m, "labels", y, true);
        L = loss_node(m, spec->loss == LT_AD_LOSS_SCE ? LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS : LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS,
                      "loss", 2, classes_to_axis1(m, y), in);
        if (L && lt_node_set_attrs(m, L->def, 1) == LT_OK)
            L->def->attrs[0] = (lt_attr){.name = "ignore_index", .kind = LT_ATTR_INT, .i = spec->ignore_index};
        else
            L = NULL;
        break;
    case LT_AD_LOSS_MSE: {
        in = loss_input(m, "targets", y, false);
        lt_ival *d = loss_node(m, LT_OP_SUB, "mse_diff", 2, y, in);
        L = loss_node(m, LT_OP_REDUCE_MEAN, "loss", 1, loss_node(m, LT_OP_MUL, "mse_sq", 2, d, d), NULL);
        break;
    }
    case LT_AD_LOSS_BCE_LOGITS: {
        /* max(z, 0) - z t + log(1 + exp(-|z|)): no overflow for any z */
        in = loss_input(m, "targets", y, false);
        lt_ival *z_abs = loss_node(m, LT_OP_ABS, "bce_abs", 1, y, NULL);
        lt_ival *sp = loss_node(m, LT_OP_SOFTPLUS, "bce_softplus", 1, loss_node(m, LT_OP_NEG, "bce_neg", 1, z_abs, NULL), NULL);
        lt_ival *lin = loss_node(m, LT_OP_SUB, "bce_lin", 2, loss_node(m, LT_OP_RELU, "bce_relu", 1, y, NULL),
                                 loss_node(m, LT_OP_MUL, "bce_zt", 2, y, in));
        L = loss_node(m, LT_OP_REDUCE_MEAN, "loss", 1, loss_node(m, LT_OP_ADD, "bce_terms", 2, lin, sp), NULL);
        break;
    }
    case LT_AD_LOSS_SEEDS:
        break;
    }
    if (!L)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (in)
        extra[(*nextra)++] = in;
    *loss = L;
    return LT_OK;
}

lt_status lt_ad_transform(lt_module *m, const lt_ad_spec *spec, lt_err *err)
{
    lt_ad_rules_init();
    lt_ival *extra[64];
    int nextra = 0;
    lt_ival *loss = NULL;
    if (spec->loss == LT_AD_LOSS_SEEDS && spec->nseeds > 64)
        return lt_errf(err, LT_ERR_INVALID, "too many seeds");
    lt_status s = append_loss(m, spec, &loss, &nextra, extra, err);
    if (s == LT_OK)
        s = lt_infer_module(m, err);
    if (s != LT_OK)
        return s;
    lt_ad c = {.m = m, .err = err, .spec = spec, .nsrc = m->nvalues, .loss_src = loss};
    c.map = calloc(c.nsrc + 1, sizeof *c.map);
    c.cell = calloc(c.nsrc + 1, sizeof *c.cell);
    c.active = calloc(c.nsrc + 1, sizeof *c.active);
    if (!c.map || !c.cell || !c.active) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    lt_block *src = m->main;
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].trainable && !m->params[p].is_input_default)
            mark(&c, m->params[p].value);
    if (spec->wrt_inputs)
        for (int p = 0; p < src->nparams; p++)
            mark(&c, src->params[p]);
    /* defaults that an input may override are parameters too */
    for (int p = 0; p < src->nparams; p++)
        if (m->input_default && m->input_default[p] >= 0 && m->params[m->input_default[p]].trainable)
            mark(&c, src->params[p]);
    while (activity_pass(&c, src))
        ;

    lt_block *nb = lt_block_new(m, NULL, "main");
    if (!nb || (s = lt_block_set_params(m, nb, src->nparams + nextra)) != LT_OK) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int p = 0; p < src->nparams + nextra; p++) {
        const lt_ival *sv = p < src->nparams ? src->params[p] : extra[p - src->nparams];
        nb->params[p] = lt_ival_new(m, nb, sv->name);
        nb->params[p]->type = sv->type;
        c.map[sv->id] = nb->params[p];
    }
    c.out = nb;
    /* cells for what is differentiated, and for the loss value */
    for (int p = 0; p < m->nparams && s == LT_OK; p++)
        if (c.active[m->params[p].value->id]) {
            lt_ival *pv = m->params[p].value;
            c.cell[pv->id] = lt_ad_new_cell(&c, pv);
        }
    for (int p = 0; p < src->nparams; p++)
        if (c.active[src->params[p]->id])
            c.cell[src->params[p]->id] = lt_ad_new_cell(&c, nb->params[p]);
    lt_ival *zero = lt_ad_scalar(&c, loss->type.dtype == LT_F64 ? LT_F64 : LT_F32, 0.0);
    c.loss_cell = lt_ad_new_cell(&c, zero);
    if (!c.loss_cell) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    int first_func = m->nfuncs;
    s = lt_ad_block(&c, src, 0, (lt_ad_kont){top_kont, NULL});
    if (s == LT_OK)
        s = lt_ad_close_all(&c, nb, first_func);
    if (s != LT_OK)
        goto done;

    /* results: loss, then gradients, then the final contents of the cells
     * the source program made in its main block (program state, such as
     * batch norms' running statistics: ir/train_mode.c) */
    int nres = 1, nstate = 0;
    for (int i = 0; i < src->nnodes; i++)
        nstate += src->nodes[i]->op == LT_OP_ACC_ZEROS_LIKE && src->nodes[i]->nout == 1;
    nres += nstate;
    for (int p = 0; p < m->nparams; p++)
        nres += c.active[m->params[p].value->id];
    for (int p = 0; spec->wrt_inputs && p < src->nparams; p++)
        nres += c.active[src->params[p]->id] && src->params[p]->type.kind == LT_KIND_TENSOR;
    s = lt_block_set_results(m, nb, nres);
    int r = 0;
    lt_ival *lv = lt_ad_op1(&c, LT_OP_ACC_READ, c.loss_cell);
    lv->name = "loss";
    lv->type = loss->type;
    nb->results[r++] = lv;
    for (int p = 0; p < m->nparams; p++) {
        lt_ival *pv = m->params[p].value;
        if (!c.active[pv->id])
            continue;
        lt_ival *g = lt_ad_op1(&c, LT_OP_ACC_READ, c.cell[pv->id]);
        char nm[512];
        snprintf(nm, sizeof nm, "%s_grad", m->params[p].name);
        g->name = lt_ir_strdup(m, nm);
        g->type = pv->type;
        nb->results[r++] = g;
    }
    for (int p = 0; spec->wrt_inputs && p < src->nparams; p++) {
        if (!c.active[src->params[p]->id] || src->params[p]->type.kind != LT_KIND_TENSOR)
            continue;
        lt_ival *g = lt_ad_op1(&c, LT_OP_ACC_READ, c.cell[src->params[p]->id]);
        char nm[512];
        snprintf(nm, sizeof nm, "%s_grad", src->params[p]->name);
        g->name = lt_ir_strdup(m, nm);
        g->type = src->params[p]->type;
        nb->results[r++] = g;
    }
    for (int i = 0; i < src->nnodes && nstate; i++) {
        const lt_node *sn = src->nodes[i];
        if (sn->op != LT_OP_ACC_ZEROS_LIKE || sn->nout != 1)
            continue;
        lt_ival *cell = lt_ad_mapped(&c, sn->out[0]);
        lt_ival *v = cell ? lt_ad_op1(&c, LT_OP_ACC_READ, cell) : NULL;
        if (!v) {
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
            goto done;
        }
        v->name = sn->out[0]->name;
        v->type = sn->out[0]->type;
        v->type.kind = LT_KIND_TENSOR;
        nb->results[r++] = v;
    }
    /* the new program replaces the old one; inputs keep their defaults */
    if (nextra && m->input_default) {
        int *d = lt_ir_alloc(m, sizeof *d * (src->nparams + nextra));
        memcpy(d, m->input_default, sizeof *d * src->nparams);
        for (int e = 0; e < nextra; e++)
            d[src->nparams + e] = -1;
        m->input_default = d;
    }
    m->main = nb;
    s = lt_ad_dce(m, err);
    if (s == LT_OK)
        s = lt_infer_module(m, err);
    if (s == LT_OK)
        s = lt_ir_verify(m, err);
done:
    free(c.map);
    free(c.cell);
    free(c.active);
    return s;
}

lt_status lt_model_grad(lt_model *m, const lt_grad_opts *o, lt_err *err)
{
    lt_ad_spec spec = {.loss = (lt_ad_loss)o->loss, .nseeds = o->nseeds, .seed_outputs = o->seed_outputs,
                       .wrt_inputs = o->wrt_inputs != 0, .output = o->output,
                       .ignore_index = o->set_ignore_index ? o->ignore_index : -100};
    if (m->nunsupported)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: the model has ops lantern does not know (see lantern import)",
                       m->path);
    return lt_ad_transform(m, &spec, err);
}
