#include "ir.h"
#include <stdlib.h>

/* r->block on b with *r->dead a false flag per node of b, the nodes it
 * flags dropped when it returns LT_OK */
static lt_status block_dropping(lt_block *b, void *ctx)
{
    const lt_rewrite *r = ctx;
    bool *dead = calloc((size_t)b->nnodes + 1, sizeof *dead);
    if (!dead)
        return LT_ERR_NOMEM;
    *r->dead = dead;
    lt_status s = r->block(b, r->ctx);
    if (s == LT_OK)
        lt_block_drop_nodes(b, dead);
    free(dead);
    *r->dead = NULL;
    return s;
}

lt_status lt_module_rewrite(lt_module *m, const lt_rewrite *r, int *n, lt_err *err)
{
    size_t nv = (size_t)m->nvalues + 1;
    int *uses = r->uses ? calloc(nv, sizeof *uses) : NULL;
    int *marks = r->marks ? malloc(nv * sizeof *marks) : NULL;
    lt_status s = (!r->uses || uses) && (!r->marks || marks) ? LT_OK : LT_ERR_NOMEM;
    if (s == LT_OK) {
        for (size_t i = 0; marks && i < nv; i++)
            marks[i] = r->mark;
        if (uses) {
            lt_module_count_uses(m, uses);
            *r->uses = uses;
        }
        if (marks)
            *r->marks = marks;
        if (r->dead)
            s = lt_module_each_block(m, block_dropping, (void *)r);
        else
            s = lt_module_each_block(m, r->block, r->ctx);
    }
    if (s == LT_OK &&
        (r->recount == LT_RECOUNT_ALWAYS || (r->recount == LT_RECOUNT_IF_COUNTED && r->count && *r->count))) {
        if (!uses)
            uses = calloc(nv, sizeof *uses);
        if (uses)
            lt_module_recount_uses(m, uses);
        else
            s = LT_ERR_NOMEM;
    }
    free(uses);
    free(marks);
    if (r->uses)
        *r->uses = NULL;
    if (r->marks)
        *r->marks = NULL;
    if (n && r->count)
        *n = *r->count;
    if (s == LT_OK)
        return LT_OK;
    const char *path = m->path ? m->path : "model";
    if (!r->doing)
        return lt_errf(err, s, "%s: out of memory", path);
    return lt_errf(err, s, "%s: out of memory %s", path, r->doing);
}
