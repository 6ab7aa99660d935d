/* Copying forward nodes and blocks into the transformed program, their
 * inputs mapped to the copies' values. */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

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
