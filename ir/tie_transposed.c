/* A weight tied between an embedding and the output projection (GPT-2,
 * T5, LLaMA with tied word embeddings) is one tensor in PyTorch. torch's
 * dynamo exporter folds the projection's Transpose of it into an
 * initializer of its own, so the file holds the table and, separately, its
 * exact transpose; trained as found, the two would get separate updates and
 * drift apart, where PyTorch trains one tensor on the sum of both uses'
 * gradients. So a trainable 2-D parameter of the main graph that holds
 * exactly, bit for bit, the transpose of another is read through a
 * Transpose of that other one instead (which the CPU folds into the
 * products that read it) and is no longer trained; lt_ir_refresh_tied
 * writes its values from the source again for export. A copy may also hold
 * dims of 1 around the transpose (W.t().unsqueeze(0) folded: TorchScript's
 * onnx::Mul_N, dynamo's val_N): it is read through a Reshape of the
 * Transpose. Tensors whose values are all one number (a fresh bias, a scale
 * of ones) are never taken for copies: their equality says nothing. */
#include "ir.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* t as a matrix [*r, *c]: its dims, or where it has more, the two that are
 * not 1 */
static bool as_matrix(const lt_tensor *t, int64_t *r, int64_t *c)
{
    if (t->rank == 2) {
        *r = t->dims[0];
        *c = t->dims[1];
        return true;
    }
    int k = 0;
    int64_t d[2] = {0, 0};
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] != 1) {
            if (k == 2)
                return false;
            d[k++] = t->dims[i];
        }
    *r = d[0];
    *c = d[1];
    return k == 2 && t->rank > 2;
}

/* a trainable float parameter of the main graph that is a matrix; a source
 * (rank 2) when exact, else a possible copy (dims of 1 around it too) */
static bool tie_candidate_of(const lt_module *m, const lt_param *p, bool exact)
{
    const lt_tensor *t = &p->data;
    int64_t r, c;
    return p->trainable && !p->is_input_default && !p->untied_from && !p->transpose_of && p->value &&
           p->value->block == m->main && (exact ? t->rank == 2 : as_matrix(t, &r, &c)) && t->numel >= 2 &&
           lt_dtype_is_float(t->dtype) && t->data;
}

static bool tie_candidate(const lt_module *m, const lt_param *p) { return tie_candidate_of(m, p, true); }

/* b holds a's transpose, bit for bit (b's dims of 1 aside) */
static bool is_transpose(const lt_tensor *a, const lt_tensor *b)
{
    int64_t br, bc;
    if (a->dtype != b->dtype || !as_matrix(b, &br, &bc) || a->dims[0] != bc || a->dims[1] != br)
        return false;
    size_t es = lt_dtype_size(a->dtype);
    int64_t r = a->dims[0], c = a->dims[1];
    const char *ad = a->data, *bd = b->data;
    for (int64_t j = 0; j < c; j++)
        for (int64_t i = 0; i < r; i++)
            if (memcmp(bd + (size_t)(j * r + i) * es, ad + (size_t)(i * c + j) * es, es) != 0)
                return false;
    return true;
}

/* the opset of the first node reading v (Transpose reads the same in every version) */
static int reader_opset(const lt_module *m, const lt_ival *v)
{
    for (int i = 0; i < m->main->nnodes; i++)
        for (int k = 0; k < m->main->nodes[i]->nin; k++)
            if (m->main->nodes[i]->in[k] == v)
                return m->main->nodes[i]->opset;
    return 13;
}

/* Transpose(src) at the head of the main block, named after the copy */
static lt_ival *transpose_at_head(lt_module *m, lt_param *src, const lt_param *copy)
{
    lt_block *b = m->main;
    lt_node *n = lt_node_new(m, b, LT_OP_TRANSPOSE, 1, 1);
    int64_t *perm = n ? lt_ir_alloc(m, 2 * sizeof *perm) : NULL;
    if (!perm || lt_node_set_attrs(m, n, 1) != LT_OK)
        return NULL;
    perm[0] = 1;
    perm[1] = 0;
    n->attrs[0] = (lt_attr){.name = "perm", .kind = LT_ATTR_INTS, .n = 2, .ints = perm};
    n->opset = reader_opset(m, copy->value);
    n->in[0] = src->value;
    char nm[512];
    snprintf(nm, sizeof nm, "%s_tied", copy->name);
    lt_ival *v = lt_ival_new(m, b, nm);
    if (!v)
        return NULL;
    v->def = n;
    v->param = -1;
    v->type = copy->value->type;
    n->out[0] = v;
    lt_block_place_at(b, n, 0);
    if (copy->data.rank == 2)
        return v;
    /* [c, r] into the copy's shape with its dims of 1 */
    v->type.rank = 2;
    v->type.dims[0] = (lt_dim){src->data.dims[1], -1};
    v->type.dims[1] = (lt_dim){src->data.dims[0], -1};
    snprintf(nm, sizeof nm, "%s_tied_matrix", copy->name);
    v->name = lt_ir_strdup(m, nm);
    lt_node *k = lt_node_new(m, b, LT_OP_CONSTANT, 0, 1);
    lt_tensor *shape = k ? lt_ir_alloc(m, sizeof *shape) : NULL;
    int64_t *dims = shape ? lt_ir_alloc(m, sizeof *dims * (size_t)copy->data.rank) : NULL;
    lt_node *r = dims && lt_node_set_attrs(m, k, 1) == LT_OK ? lt_node_new(m, b, LT_OP_RESHAPE, 2, 1) : NULL;
    if (!r)
        return NULL;
    memcpy(dims, copy->data.dims, sizeof *dims * (size_t)copy->data.rank);
    *shape = (lt_tensor){.dtype = LT_I64, .rank = 1, .dims = {copy->data.rank}, .numel = copy->data.rank,
                         .data = dims};
    k->opset = n->opset;
    k->attrs[0] = (lt_attr){.name = "value", .kind = LT_ATTR_TENSOR, .t = shape};
    snprintf(nm, sizeof nm, "%s_tied_shape", copy->name);
    k->out[0] = lt_ival_new(m, b, nm);
    snprintf(nm, sizeof nm, "%s_tied", copy->name);
    r->out[0] = lt_ival_new(m, b, nm);
    if (!k->out[0] || !r->out[0])
        return NULL;
    k->out[0]->def = k;
    lt_type_tensor(&k->out[0]->type, LT_I64, 1, (int64_t[]){copy->data.rank});
    r->opset = n->opset < 14 ? 14 : n->opset;
    r->in[0] = v;
    r->in[1] = k->out[0];
    r->out[0]->def = r;
    r->out[0]->param = -1;
    r->out[0]->type = copy->value->type;
    lt_block_place_at(b, k, 1);
    lt_block_place_at(b, r, 2);
    return r->out[0];
}

/* whether a Gather in the main block reads v (as its data: a table) */
static bool gathered(const lt_module *m, const lt_ival *v)
{
    for (int i = 0; i < m->main->nnodes; i++)
        if (m->main->nodes[i]->op == LT_OP_GATHER && m->main->nodes[i]->nin > 0 && m->main->nodes[i]->in[0] == v)
            return true;
    return false;
}

bool lt_ir_transposed_copy(const lt_module *m, const lt_param *p)
{
    if (!tie_candidate_of(m, p, false) || lt_ir_one_value(&p->data))
        return false;
    for (int a = 0; a < m->nparams; a++)
        if (&m->params[a] != p && tie_candidate(m, &m->params[a]) && is_transpose(&m->params[a].data, &p->data))
            return true;
    return false;
}

lt_status lt_ir_tie_transposed_params(lt_module *m, int *ntied, char *list, size_t len, lt_err *err)
{
    *ntied = 0;
    size_t at = 0;
    if (list && len)
        list[0] = 0;
    for (int c = 0; c < m->nparams; c++) {
        if (!tie_candidate_of(m, &m->params[c], false) || m->params[c].value->uses < 1)
            continue;
        /* the pair's earlier initializer is the one kept, unless only the
         * later one is an embedding's table (what the user knows by name) */
        int src = -1;
        /* a copy with dims of 1 is never the one kept: look on both sides */
        int upto = m->params[c].data.rank == 2 ? c : m->nparams;
        for (int a = 0; a < upto && src < 0; a++)
            if (a != c && tie_candidate(m, &m->params[a]) && m->params[a].value->uses > 0 &&
                is_transpose(&m->params[a].data, &m->params[c].data) && !lt_ir_one_value(&m->params[a].data))
                src = a;
        if (src < 0)
            continue;
        int copy = c;
        if (m->params[c].data.rank == 2 && gathered(m, m->params[c].value) && !gathered(m, m->params[src].value))
            copy = src, src = c;
        lt_param *sp = &m->params[src], *cp = &m->params[copy];
        lt_ival *t = transpose_at_head(m, sp, cp);
        if (!t)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        /* a graph output that was the copy stays an output of that name
         * (a seed or a caller names it), now the transpose of the source */
        for (int r = 0; r < m->main->nresults; r++)
            if (m->main->results[r] == cp->value)
                t->name = cp->value->name;
        lt_module_replace_reads(m, cp->value, t);
        cp->trainable = false;
        cp->transpose_of = sp->name;
        if (list && at < len) {
            int w = *ntied < LT_TIE_LISTED ? snprintf(list + at, len - at, "%s%s = transpose of %s", *ntied ? ", " : "",
                                                      cp->name, sp->name)
                    : *ntied == LT_TIE_LISTED ? snprintf(list + at, len - at, ", ...")
                                              : 0;
            at += w > 0 ? (size_t)w : 0;
        }
        (*ntied)++;
    }
    if (*ntied) {
        int *uses = calloc((size_t)m->nvalues + 1, sizeof *uses);
        if (!uses)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        lt_module_recount_uses(m, uses);
        free(uses);
    }
    return LT_OK;
}

/* cp = gathered_from[gather_index], entry by entry */
static void refresh_gathered(const lt_module *m, lt_param *cp)
{
    const lt_tensor *table = NULL, *index = NULL;
    for (int a = 0; cp->gathered_from && a < m->nparams; a++) {
        if (!strcmp(m->params[a].name, cp->gathered_from))
            table = &m->params[a].data;
        if (!strcmp(m->params[a].name, cp->gather_index))
            index = &m->params[a].data;
    }
    if (!table || !index || table->dtype != cp->data.dtype || index->numel != cp->data.numel)
        return;
    size_t es = lt_dtype_size(table->dtype);
    const int64_t *at = index->data;
    for (int64_t i = 0; i < index->numel; i++)
        if (at[i] >= 0 && at[i] < table->numel)
            memcpy((char *)cp->data.data + (size_t)i * es, (const char *)table->data + (size_t)at[i] * es, es);
}

void lt_ir_refresh_tied(lt_module *m)
{
    for (int c = 0; c < m->nparams; c++) {
        lt_param *cp = &m->params[c];
        for (int a = 0; cp->copy_of && a < m->nparams; a++) {
            const lt_tensor *s = &m->params[a].data;
            if (a != c && !strcmp(m->params[a].name, cp->copy_of) && s->numel == cp->data.numel &&
                s->dtype == cp->data.dtype) {
                memcpy(cp->data.data, s->data, (size_t)s->numel * lt_dtype_size(s->dtype));
                break;
            }
        }
        refresh_gathered(m, cp);
        lt_ir_refresh_computed(m, cp);
        if (!cp->transpose_of)
            continue;
        for (int a = 0; a < m->nparams; a++) {
            const lt_tensor *s = &m->params[a].data;
            lt_tensor *d = &cp->data;
            int64_t dr, dc;
            if (a == c || strcmp(m->params[a].name, cp->transpose_of) != 0 || s->rank != 2 || s->dtype != d->dtype ||
                !as_matrix(d, &dr, &dc) || s->dims[0] != dc || s->dims[1] != dr)
                continue;
            size_t es = lt_dtype_size(s->dtype);
            int64_t r = s->dims[0], cols = s->dims[1];
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = 0; j < cols; j++)
                    memcpy((char *)d->data + (size_t)(j * r + i) * es, (const char *)s->data + (size_t)(i * cols + j) * es,
                           es);
            break;
        }
    }
}
