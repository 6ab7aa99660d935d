/* Loop-carried lists as scan outputs. TorchScript writes a list that a
 * scripted loop appends to (ys.append(h) ... torch.stack(ys)) as a Loop
 * carrying a sequence: SequenceEmpty before the loop, SequenceInsert(s, t)
 * at the end of the list in the body, ConcatFromSequence(new_axis=1) of the
 * final list after it. That list stacked is exactly a scan output of t, so
 * the carried sequence is replaced by one: the loop's values stay tensors
 * (and the AD differentiates them as for any Loop), each stack becomes an
 * Identity of the scan output, or a Transpose of it when the stack's axis is
 * not the first. A list used any other way is left as it is. */
#include "ir.h"
#include <stdio.h>
#include <string.h>

/* uses of v in b and the blocks inside it: node inputs (*nstack of them
 * stacks of it, stored in stacks[]) and block results */
static void count_uses(const lt_block *b, const lt_ival *v, int *uses, lt_node **stacks, int *nstack, int max)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            if (n->in[j] != v)
                continue;
            (*uses)++;
            if (n->op == LT_OP_CONCAT_FROM_SEQUENCE && j == 0 && n->nin == 1 && n->nout == 1 &&
                lt_attr_int(n, "new_axis", 0) == 1 && *nstack < max)
                stacks[(*nstack)++] = n;
        }
        for (int r = 0; r < n->nregions; r++)
            count_uses(n->regions[r], v, uses, stacks, nstack, max);
    }
    for (int j = 0; j < b->nresults; j++)
        *uses += b->results[j] == v;
}

static const lt_block *top_block(const lt_block *b)
{
    while (b->parent)
        b = b->parent;
    return b;
}

#define MAX_STACKS 16

/* the stack nodes of the loop's carried value j, when it is such a list */
static int list_stacks(const lt_node *n, int j, lt_node **stacks)
{
    const lt_block *body = n->regions[0];
    const lt_ival *init = n->in[2 + j], *p = body->params[2 + j], *res = body->results[1 + j];
    const lt_ival *out = n->out[j];
    if (!init || !init->def || init->def->op != LT_OP_SEQUENCE_EMPTY || !res || !res->def || !out)
        return 0;
    const lt_node *ins = res->def;
    if (ins->op != LT_OP_SEQUENCE_INSERT || ins->block != body || ins->in[0] != p || !ins->in[1] ||
        (ins->nin > 2 && ins->in[2]) || ins->in[1]->type.kind != LT_KIND_TENSOR)
        return 0;
    int uses = 0, nstack = 0;
    count_uses(body, p, &uses, stacks, &nstack, MAX_STACKS);
    if (uses != 1)
        return 0;
    uses = 0;
    count_uses(body, res, &uses, stacks, &nstack, MAX_STACKS);
    if (uses != 1 || nstack)
        return 0;
    uses = 0;
    count_uses(top_block(n->block), out, &uses, stacks, &nstack, MAX_STACKS);
    return uses > 0 && uses == nstack ? nstack : 0;
}

static lt_status rewrite(lt_module *m, lt_node *n, int j, lt_node **stacks, int nstack, lt_err *err)
{
    lt_block *body = n->regions[0];
    lt_node *ins = body->results[1 + j]->def;
    lt_ival *t = ins->in[1];
    /* the body: the insert goes, its element becomes the last scan output */
    int w = 0;
    for (int i = 0; i < body->nnodes; i++)
        if (body->nodes[i] != ins) {
            body->nodes[i]->index = w;
            body->nodes[w++] = body->nodes[i];
        }
    body->nnodes = w;
    memmove(&body->params[2 + j], &body->params[3 + j], sizeof *body->params * (body->nparams - 3 - j));
    body->nparams--;
    memmove(&body->results[1 + j], &body->results[2 + j], sizeof *body->results * (body->nresults - 2 - j));
    body->results[body->nresults - 1] = t;
    /* the node: the empty list's input goes, the scan output comes last */
    n->in[2 + j]->uses--;
    memmove(&n->in[2 + j], &n->in[3 + j], sizeof *n->in * (n->nin - 3 - j));
    n->nin--;
    char nm[256];
    snprintf(nm, sizeof nm, "%s_stacked", n->out[j]->name ? n->out[j]->name : "list");
    lt_ival *y = lt_ival_new(m, n->block, lt_ir_strdup(m, nm));
    if (!y)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    y->def = n;
    lt_type_unknown(&y->type, t->type.dtype, t->type.rank >= 0 ? t->type.rank + 1 : -1);
    n->out[j]->def = NULL;
    n->out[j]->uses = 0;
    memmove(&n->out[j], &n->out[j + 1], sizeof *n->out * (n->nout - 1 - j));
    n->out[n->nout - 1] = y;
    /* each stack: Identity of it, or the scan axis moved to the stack's */
    for (int s = 0; s < nstack; s++) {
        lt_node *st = stacks[s];
        int64_t axis = lt_attr_int(st, "axis", 0);
        int rank = y->type.rank;
        if (axis < 0 && rank > 0)
            axis += rank;
        st->in[0] = y;
        y->uses++;
        if (axis == 0) {
            st->op = LT_OP_IDENTITY;
            st->nattr = 0;
            st->attrs = NULL;
            continue;
        }
        int64_t *perm = lt_ir_alloc(m, sizeof *perm * LT_MAX_RANK);
        lt_attr *a = lt_ir_alloc(m, sizeof *a);
        if (!perm || !a)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        for (int d = 0; d < rank; d++)
            perm[d] = d < axis ? d + 1 : d == axis ? 0 : d;
        a->name = "perm";
        a->kind = LT_ATTR_INTS;
        a->n = rank;
        a->ints = perm;
        st->op = LT_OP_TRANSPOSE;
        st->attrs = a;
        st->nattr = 1;
    }
    return LT_OK;
}

static lt_status walk(lt_module *m, lt_block *b, lt_err *err)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions; r++) {
            lt_status s = walk(m, n->regions[r], err);
            if (s != LT_OK)
                return s;
        }
        if (n->op != LT_OP_LOOP || n->nregions != 1 || n->nin < 3)
            continue;
        for (int j = n->nin - 3; j >= 0; j--) {
            lt_node *stacks[MAX_STACKS];
            if (n->regions[0]->nparams != n->nin || n->regions[0]->nresults != n->nout + 1)
                break;
            int ns = list_stacks(n, j, stacks);
            if (!ns)
                continue;
            /* a stack on a later axis needs the element's rank */
            int elem_rank = n->regions[0]->results[1 + j]->def->in[1]->type.rank;
            bool ok = true;
            for (int s = 0; s < ns; s++)
                ok &= lt_attr_int(stacks[s], "axis", 0) == 0 || elem_rank >= 0;
            if (!ok)
                continue;
            lt_status s = rewrite(m, n, j, stacks, ns, err);
            if (s != LT_OK)
                return s;
        }
    }
    return LT_OK;
}

lt_status lt_ir_loop_lists_to_scans(lt_module *m, lt_err *err)
{
    lt_status s = walk(m, m->main, err);
    for (int f = 0; f < m->nfuncs && s == LT_OK; f++)
        s = walk(m, m->funcs[f]->body, err);
    return s;
}
