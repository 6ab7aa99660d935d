/* Loop-carried lists as scan outputs. TorchScript writes a list that a
 * scripted loop appends to (ys.append(h) ... torch.stack(ys)) as a Loop
 * carrying a sequence: SequenceEmpty before the loop, SequenceInsert(s, t)
 * at the end of the list in the body, ConcatFromSequence(new_axis=1) of the
 * final list after it. That list stacked is exactly a scan output of t, so
 * the carried sequence is replaced by one: the loop's values stay tensors
 * (and the AD differentiates them as for any Loop), each stack becomes an
 * Identity of the scan output, or a Transpose of it when the stack's axis is
 * not the first. A concatenation of the list (ConcatFromSequence without
 * new_axis: torch's dynamo exporter writes EmbeddingBag so) is the scan
 * output with its loop axis merged into the concatenated one: a Reshape of
 * it (after a Transpose bringing the loop axis beside that one), whose
 * shape is computed from the stacked values, so elements of different
 * sizes along the axis, which a scan output cannot hold, stop the run with
 * the scan's own error rather than change the result. A list used any
 * other way is left as it is. */
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
            if (n->op == LT_OP_CONCAT_FROM_SEQUENCE && j == 0 && n->nin == 1 && n->nout == 1 && *nstack < max)
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

/* A node of op made in front of `before` (its block, its position), its
 * nout outputs new values of type unknown dtype, rank rank. */
static lt_node *node_before(lt_module *m, lt_node *before, lt_op op, int nin, int nout, int opset, lt_dtype dt,
                            int rank, const char *what)
{
    lt_block *b = before->block;
    lt_node *k = lt_node_new(m, b, op, nin, nout);
    if (!k)
        return NULL;
    k->opset = opset;
    for (int o = 0; o < nout; o++) {
        char nm[512];
        snprintf(nm, sizeof nm, "%s_%s", before->out[0] && before->out[0]->name ? before->out[0]->name : "list",
                 what);
        if (!(k->out[o] = lt_ival_new(m, b, lt_ir_strdup(m, nm))))
            return NULL;
        k->out[o]->def = k;
        lt_type_unknown(&k->out[o]->type, dt, rank);
    }
    lt_block_place_at(b, k, before->index);
    return k;
}

static lt_status set_ints(lt_module *m, lt_node *k, int at, const char *name, int n, const int64_t *v)
{
    int64_t *c = lt_ir_alloc(m, sizeof *c * (size_t)(n ? n : 1));
    if (!c)
        return LT_ERR_NOMEM;
    memcpy(c, v, sizeof *c * (size_t)n);
    k->attrs[at] = (lt_attr){.name = name, .kind = LT_ATTR_INTS, .n = n, .ints = c};
    return LT_OK;
}

static void set_int(lt_node *k, int at, const char *name, int64_t v)
{
    k->attrs[at] = (lt_attr){.name = name, .kind = LT_ATTR_INT, .i = v};
}

/* Shape(v)[lo:hi] (hi 0: to the end) in front of st */
static lt_ival *shape_part(lt_module *m, lt_node *st, lt_ival *v, int64_t lo, int64_t hi)
{
    lt_node *k = node_before(m, st, LT_OP_SHAPE, 1, 1, 15, LT_I64, 1, "shape");
    if (!k || lt_node_set_attrs(m, k, hi ? 2 : 1) != LT_OK)
        return NULL;
    k->in[0] = v;
    v->uses++;
    set_int(k, 0, "start", lo);
    if (hi)
        set_int(k, 1, "end", hi);
    return k->out[0];
}

/* The concatenation st (axis a of elements of rank er, er < 0 when not
 * known, which a = 0 allows) of the list now stacked in y ([T, element]):
 * y (or y with T moved in front of axis a) reshaped to
 * shape[:a] ++ [-1] ++ shape[a + 2:], T merged into axis a. */
static lt_status concat_of_stack(lt_module *m, lt_node *st, lt_ival *y, int64_t a, int er)
{
    lt_ival *z = y;
    if (a > 0) {
        lt_node *t = node_before(m, st, LT_OP_TRANSPOSE, 1, 1, 13, y->type.dtype, er + 1, "moved");
        int64_t perm[LT_MAX_RANK];
        for (int d = 0; d <= er; d++)
            perm[d] = d < a ? d + 1 : d == a ? 0 : d;
        if (!t || lt_node_set_attrs(m, t, 1) != LT_OK || set_ints(m, t, 0, "perm", er + 1, perm) != LT_OK)
            return LT_ERR_NOMEM;
        t->in[0] = y;
        y->uses++;
        z = t->out[0];
    }
    lt_node *minus = node_before(m, st, LT_OP_CONSTANT, 0, 1, 13, LT_I64, 1, "merged");
    lt_tensor *mt = minus ? lt_ir_alloc(m, sizeof *mt) : NULL;
    int64_t *md = mt ? lt_ir_alloc(m, sizeof *md) : NULL;
    if (!md || lt_node_set_attrs(m, minus, 1) != LT_OK)
        return LT_ERR_NOMEM;
    *md = -1;
    *mt = (lt_tensor){.dtype = LT_I64, .rank = 1, .dims = {1}, .numel = 1, .data = md};
    minus->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = mt};
    lt_type_tensor(&minus->out[0]->type, LT_I64, 1, (int64_t[]){1});
    lt_ival *parts[3];
    int np = 0;
    if (a > 0 && !(parts[np++] = shape_part(m, st, z, 0, a)))
        return LT_ERR_NOMEM;
    parts[np++] = minus->out[0];
    if (!(parts[np++] = shape_part(m, st, z, a + 2, 0)))
        return LT_ERR_NOMEM;
    lt_node *cat = node_before(m, st, LT_OP_CONCAT, np, 1, 13, LT_I64, 1, "merged_shape");
    if (!cat || lt_node_set_attrs(m, cat, 1) != LT_OK)
        return LT_ERR_NOMEM;
    set_int(cat, 0, "axis", 0);
    for (int i = 0; i < np; i++) {
        cat->in[i] = parts[i];
        parts[i]->uses++;
    }
    lt_ival **in = lt_ir_alloc(m, 2 * sizeof *in);
    if (!in)
        return LT_ERR_NOMEM;
    in[0] = z;
    in[1] = cat->out[0];
    z->uses++;
    cat->out[0]->uses++;
    st->op = LT_OP_RESHAPE;
    st->opset = 14;
    st->nin = 2;
    st->in = in;
    st->nattr = 0;
    st->attrs = NULL;
    return LT_OK;
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
    /* each stack: Identity of it, or the scan axis moved to the stack's;
     * each concatenation: the scan axis merged into the concatenated one */
    for (int s = 0; s < nstack; s++) {
        lt_node *st = stacks[s];
        int64_t axis = lt_attr_int(st, "axis", 0);
        int rank = y->type.rank;
        if (lt_attr_int(st, "new_axis", 0) == 0) {
            if (axis < 0)
                axis += t->type.rank;
            lt_status cs = concat_of_stack(m, st, y, axis, t->type.rank);
            if (cs != LT_OK)
                return lt_errf(err, cs, "out of memory");
            continue;
        }
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
            /* a stack on a later axis needs the element's rank, and so does
             * a concatenation on any axis but the first (which needs a rank
             * of at least 1) */
            int elem_rank = n->regions[0]->results[1 + j]->def->in[1]->type.rank;
            bool ok = true;
            for (int s = 0; s < ns; s++) {
                int64_t a = lt_attr_int(stacks[s], "axis", 0);
                if (lt_attr_int(stacks[s], "new_axis", 0) == 1)
                    ok &= a == 0 || elem_rank >= 0;
                else
                    ok &= (a == 0 && elem_rank != 0) || (elem_rank > 0 && a >= -elem_rank && a < elem_rank);
            }
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
