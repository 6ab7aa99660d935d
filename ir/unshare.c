/* torch's dynamo exporter's optimizer, after merging equal initializers,
 * merges nodes that compute the same thing from them (common
 * subexpressions): in a fresh nn.TransformerDecoder every cross-attention
 * splits its zero in_proj_bias into the query's and the key-value's part,
 * and one Split, with no module path of its own, then serves the
 * cross-attention of every layer. Splitting the merged bias again
 * (split_merged.c) needs a reader per module.
 *
 * So a main-graph node that reads initializers only (and constants), has
 * no module path, and whose results are read by nodes of more than one
 * module gets a copy per further module, which those modules' nodes read;
 * each copy, and the node, takes the module path of its readers (a node
 * whose readers are all of one module just takes that path). The copies
 * are recorded (lt_model.clones) for the exporter, which writes them into
 * the graph after the node they copy (importer/export.c). */
#include "ir.h"
#include <stdio.h>
#include <string.h>

/* A node whose inputs are all initializers or omitted, outside any
 * control flow, and without a module path. */
static bool candidate(const lt_node *n)
{
    if (n->scope || n->nregions || n->nout < 1 || !n->name || !*n->name)
        return false;
    bool any = false;
    for (int k = 0; k < n->nin; k++) {
        if (n->in[k] && n->in[k]->param < 0)
            return false;
        any |= n->in[k] != NULL;
    }
    return any;
}

bool lt_ir_read_elsewhere(const lt_block *b, const lt_ival *v)
{
    for (int r = 0; r < b->nresults; r++)
        if (b->results[r] == v)
            return true;
    for (int i = 0; i < b->nnodes; i++)
        for (int g = 0; g < b->nodes[i]->nregions; g++) {
            const lt_block *rb = b->nodes[i]->regions[g];
            for (int j = 0; j < rb->nnodes; j++)
                for (int k = 0; k < rb->nodes[j]->nin; k++)
                    if (rb->nodes[j]->in[k] == v)
                        return true;
            if (lt_ir_read_elsewhere(rb, v))
                return true;
        }
    return false;
}

/* The readers of n's results in block b: their count, and the distinct
 * module paths (up to cap) in *scopes; -1 when a reader has no path or a
 * result is read elsewhere. */
static int reader_scopes(const lt_block *b, const lt_node *n, const char **scopes, int cap)
{
    int ns = 0;
    for (int o = 0; o < n->nout; o++)
        if (n->out[o] && lt_ir_read_elsewhere(b, n->out[o]))
            return -1;
    for (int i = n->index + 1; i < b->nnodes; i++) {
        const lt_node *c = b->nodes[i];
        for (int k = 0; k < c->nin; k++) {
            bool reads = false;
            for (int o = 0; o < n->nout && !reads; o++)
                reads = c->in[k] && c->in[k] == n->out[o];
            if (!reads)
                continue;
            if (!c->scope)
                return -1;
            int s = 0;
            while (s < ns && strcmp(scopes[s], c->scope))
                s++;
            if (s == ns) {
                if (ns == cap)
                    return -1;
                scopes[ns++] = c->scope;
            }
        }
    }
    return ns;
}

lt_status lt_ir_record_clone(lt_module *m, const lt_node *n, const lt_node *c, const char *scope, int nread,
                             const char **read_node, int *read_slot, int *read_out)
{
    lt_clone *grown = lt_ir_alloc(m, sizeof *grown * (size_t)(m->nclones + 1));
    if (!grown)
        return LT_ERR_NOMEM;
    if (m->nclones)
        memcpy(grown, m->clones, sizeof *grown * (size_t)m->nclones);
    lt_clone *k = &grown[m->nclones];
    k->from = n->name;
    k->name = c->name;
    k->nout = n->nout;
    k->out = lt_ir_alloc(m, sizeof *k->out * (size_t)n->nout);
    if (!k->out)
        return LT_ERR_NOMEM;
    for (int o = 0; o < n->nout; o++)
        k->out[o] = c->out[o] ? c->out[o]->name : NULL;
    k->scope = scope;
    k->nread = nread;
    k->read_node = read_node;
    k->read_slot = read_slot;
    k->read_out = read_out;
    k->whole = false;
    m->clones = grown;
    m->nclones++;
    return LT_OK;
}

lt_node *lt_ir_copy_node(lt_module *m, lt_block *b, const lt_node *n, const char *scope)
{
    char nm[1024];
    lt_node *c = lt_node_new(m, b, n->op, n->nin, n->nout);
    if (!c || lt_node_set_attrs(m, c, n->nattr) != LT_OK)
        return NULL;
    snprintf(nm, sizeof nm, "%s@%s", n->name, scope);
    c->name = lt_ir_strdup(m, nm);
    c->opset = n->opset;
    c->domain_name = n->domain_name;
    c->scope = scope;
    c->rule = n->rule;
    if (n->nattr)
        memcpy(c->attrs, n->attrs, sizeof *c->attrs * (size_t)n->nattr);
    for (int k = 0; k < n->nin; k++)
        if ((c->in[k] = n->in[k]))
            c->in[k]->uses++;
    for (int o = 0; o < n->nout; o++) {
        if (!n->out[o])
            continue;
        snprintf(nm, sizeof nm, "%s@%s", n->out[o]->name ? n->out[o]->name : "", scope);
        if (!(c->out[o] = lt_ival_new(m, b, nm)))
            return NULL;
        c->out[o]->def = c;
        c->out[o]->type = n->out[o]->type;
    }
    if (!c->name)
        return NULL;
    lt_block_place_at(b, c, n->index + 1);
    return c;
}

/* A copy of n named for scope, placed after n, read by scope's readers of
 * n's results instead of n. */
static lt_status clone_for(lt_module *m, lt_block *b, lt_node *n, const char *scope)
{
    lt_node *c = lt_ir_copy_node(m, b, n, scope);
    if (!c)
        return LT_ERR_NOMEM;
    int nread = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char **rn = pass ? lt_ir_alloc(m, sizeof *rn * (size_t)(nread + 1)) : NULL;
        int *rs = pass ? lt_ir_alloc(m, sizeof *rs * (size_t)(nread + 1)) : NULL;
        int *ro = pass ? lt_ir_alloc(m, sizeof *ro * (size_t)(nread + 1)) : NULL;
        if (pass && (!rn || !rs || !ro))
            return LT_ERR_NOMEM;
        int at = 0;
        for (int i = c->index + 1; i < b->nnodes; i++) {
            lt_node *r = b->nodes[i];
            if (!r->scope || strcmp(r->scope, scope))
                continue;
            for (int k = 0; k < r->nin; k++)
                for (int o = 0; o < n->nout; o++) {
                    if (!r->in[k] || r->in[k] != n->out[o])
                        continue;
                    if (!pass) {
                        nread++;
                        continue;
                    }
                    r->in[k]->uses--;
                    r->in[k] = c->out[o];
                    c->out[o]->uses++;
                    rn[at] = r->name;
                    rs[at] = k;
                    ro[at++] = o;
                }
        }
        if (pass)
            return lt_ir_record_clone(m, n, c, scope, nread, rn, rs, ro);
    }
    return LT_OK;
}

lt_status lt_ir_unshare_nodes(lt_module *m, int *ncloned, lt_err *err)
{
    *ncloned = 0;
    if (!m->ntorch)
        return LT_OK;
    lt_block *b = m->main;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        const char *scopes[16];
        int ns = candidate(n) ? reader_scopes(b, n, scopes, 16) : -1;
        if (ns < 1)
            continue;
        n->scope = scopes[0];
        for (int s = 1; s < ns; s++) {
            if (clone_for(m, b, n, scopes[s]) != LT_OK)
                return lt_errf(err, LT_ERR_NOMEM, "out of memory copying node '%s'", n->name);
            ++*ncloned;
        }
        i += ns - 1; /* past the copies */
    }
    return LT_OK;
}
