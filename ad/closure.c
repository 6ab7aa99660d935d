/* Closure conversion of the reified continuations: the free values a
 * block reads from outside it become extra parameters of its IR function,
 * and every call to it (transitively) passes them. */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

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
