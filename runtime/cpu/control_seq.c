/* Sequence and Optional values: SequenceEmpty/Construct/Insert/At/Erase/
 * Length, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
 * OptionalHasElement, OptionalGetElement. */
#include "../runtime.h"
#include <stdlib.h>
#include <string.h>

static const lt_value *in_seq(lt_kctx *k, int i)
{
    return i < k->nin && k->in[i] && k->in[i]->kind == LT_VAL_SEQUENCE ? k->in[i] : NULL;
}

static lt_status out_seq(lt_kctx *k, lt_value *v)
{
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_k_out_value(k, 0, v);
    return LT_OK;
}

/* Position input: scalar int32/int64, negative counts from the end; `extra`
 * allows position == n (insertion at the end). */
static lt_status position(lt_kctx *k, int i, int n, int dflt, bool extra, int *pos)
{
    const lt_tensor *p = lt_k_in(k, i);
    int64_t v = p ? lt_tensor_get_i64(p, 0) : dflt;
    if (p && p->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "position must be a scalar");
    if (v < 0)
        v += n;
    if (v < 0 || v > n || (v == n && !extra))
        return lt_k_fail(k, LT_ERR_RUNTIME, "position %lld is out of range for a sequence of %d",
                         (long long)(p ? lt_tensor_get_i64(p, 0) : dflt), n);
    *pos = (int)v;
    return LT_OK;
}

static lt_status op_sequence_empty(lt_kctx *k)
{
    return out_seq(k, lt_value_new_seq((lt_dtype)lt_attr_int(k->node, "dtype", LT_F32)));
}

static lt_status op_sequence_construct(lt_kctx *k)
{
    const lt_tensor *t0 = lt_k_in(k, 0);
    lt_value *v = lt_value_new_seq(t0 ? t0->dtype : LT_F32);
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < k->nin; i++) {
        const lt_tensor *t = lt_k_in(k, i);
        lt_status s = !t ? lt_k_fail(k, LT_ERR_RUNTIME, "input %d is not a tensor", i)
                      : t->dtype != t0->dtype ? lt_k_fail(k, LT_ERR_RUNTIME, "sequence elements differ in type")
                                              : lt_seq_append(v, t, k->err);
        if (s != LT_OK) {
            lt_value_free(v);
            return s;
        }
    }
    return out_seq(k, v);
}

static lt_status op_sequence_insert(lt_kctx *k)
{
    const lt_value *s0 = in_seq(k, 0);
    const lt_tensor *t = lt_k_in(k, 1);
    if (!s0 || !t)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a sequence and a tensor");
    int pos = 0;
    lt_status s = position(k, 2, s0->nseq, s0->nseq, true, &pos);
    if (s != LT_OK)
        return s;
    lt_value *v = lt_value_new_seq(s0->seq_dtype);
    for (int i = 0; v && i <= s0->nseq && s == LT_OK; i++) {
        if (i == pos)
            s = lt_seq_append(v, t, k->err);
        if (i < s0->nseq && s == LT_OK)
            s = lt_seq_append(v, &s0->seq[i], k->err);
    }
    if (s != LT_OK) {
        lt_value_free(v);
        return s;
    }
    return out_seq(k, v);
}

static lt_status op_sequence_erase(lt_kctx *k)
{
    const lt_value *s0 = in_seq(k, 0);
    if (!s0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a sequence");
    int pos = 0;
    lt_status s = position(k, 1, s0->nseq, s0->nseq - 1, false, &pos);
    if (s != LT_OK)
        return s;
    lt_value *v = lt_value_new_seq(s0->seq_dtype);
    for (int i = 0; v && i < s0->nseq && s == LT_OK; i++)
        if (i != pos)
            s = lt_seq_append(v, &s0->seq[i], k->err);
    if (s != LT_OK) {
        lt_value_free(v);
        return s;
    }
    return out_seq(k, v);
}

static lt_status op_sequence_at(lt_kctx *k)
{
    const lt_value *s0 = in_seq(k, 0);
    if (!s0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a sequence");
    int pos = 0;
    lt_status s = position(k, 1, s0->nseq, 0, false, &pos);
    if (s != LT_OK)
        return s;
    const lt_tensor *t = &s0->seq[pos];
    return lt_k_out_view(k, 0, t, t->rank, t->dims);
}

static lt_status op_sequence_length(lt_kctx *k)
{
    const lt_value *s0 = in_seq(k, 0);
    if (!s0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a sequence");
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, LT_I64, 0, NULL, &o);
    if (s == LT_OK)
        *(int64_t *)o->data = s0->nseq;
    return s;
}

/* Copies [start, start+len) along axis of t into a new tensor. */
static lt_status take(lt_kctx *k, const lt_tensor *t, int axis, int64_t start, int64_t len, bool keep,
                      lt_tensor *out)
{
    int64_t dims[LT_MAX_RANK], outer = 1, inner = 1;
    int r = 0;
    for (int d = 0; d < t->rank; d++) {
        if (d < axis)
            outer *= t->dims[d];
        if (d > axis)
            inner *= t->dims[d];
        if (d == axis && !keep)
            continue;
        dims[r++] = d == axis ? len : t->dims[d];
    }
    lt_status s = lt_tensor_alloc(out, t->dtype, r, dims, k->err);
    if (s != LT_OK)
        return s;
    size_t es = lt_dtype_size(t->dtype), row = (size_t)len * inner * es;
    for (int64_t a = 0; a < outer; a++)
        memcpy((char *)out->data + a * row,
               (const char *)t->data + ((size_t)a * t->dims[axis] + start) * inner * es, row);
    return LT_OK;
}

static lt_status op_split_to_sequence(lt_kctx *k)
{
    const lt_tensor *t = lt_k_in(k, 0), *sp = lt_k_in(k, 1);
    if (!t)
        return lt_k_fail(k, LT_ERR_RUNTIME, "missing input");
    int64_t axis = lt_attr_int(k->node, "axis", 0);
    if (axis < 0)
        axis += t->rank;
    if (axis < 0 || axis >= t->rank)
        return lt_k_fail(k, LT_ERR_INVALID, "axis out of range");
    int64_t n = t->dims[axis];
    bool keep = lt_attr_int(k->node, "keepdims", 1) != 0;
    lt_value *v = lt_value_new_seq(t->dtype);
    if (!v)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    lt_status s = LT_OK;
    int64_t start = 0;
    if (!sp) {
        for (int64_t i = 0; i < n && s == LT_OK; i++) {
            lt_tensor piece;
            s = take(k, t, (int)axis, i, 1, keep, &piece);
            if (s == LT_OK) {
                s = lt_seq_append(v, &piece, k->err);
                lt_tensor_release(&piece);
            }
        }
    } else {
        int64_t nparts = sp->rank == 0 ? -1 : sp->numel;
        int64_t chunk = sp->rank == 0 ? lt_tensor_get_i64(sp, 0) : 0;
        if (sp->rank == 0 && chunk <= 0)
            s = lt_k_fail(k, LT_ERR_RUNTIME, "split size must be positive");
        for (int64_t i = 0; s == LT_OK && (nparts < 0 ? start < n : i < nparts); i++) {
            int64_t len = nparts < 0 ? (n - start < chunk ? n - start : chunk) : lt_tensor_get_i64(sp, i);
            if (len < 0 || start + len > n) {
                s = lt_k_fail(k, LT_ERR_RUNTIME, "split sizes exceed the axis length %lld", (long long)n);
                break;
            }
            lt_tensor piece;
            /* keepdims applies without split by the spec; onnxruntime also
             * drops the axis for a scalar split of 1, which torch's exporter
             * writes for unbind (for x in t.unbind(0)) and relies on */
            s = take(k, t, (int)axis, start, len, keep || sp->rank != 0 || chunk != 1, &piece);
            if (s == LT_OK) {
                s = lt_seq_append(v, &piece, k->err);
                lt_tensor_release(&piece);
            }
            start += len;
        }
        if (s == LT_OK && nparts >= 0 && start != n)
            s = lt_k_fail(k, LT_ERR_RUNTIME, "split sizes sum to %lld, the axis has %lld", (long long)start,
                          (long long)n);
    }
    if (s != LT_OK) {
        lt_value_free(v);
        return s;
    }
    return out_seq(k, v);
}

static lt_status op_concat_from_sequence(lt_kctx *k)
{
    const lt_value *sq = in_seq(k, 0);
    if (!sq || sq->nseq == 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a non-empty sequence");
    bool new_axis = lt_attr_int(k->node, "new_axis", 0) != 0;
    const lt_tensor *t0 = &sq->seq[0];
    int r = t0->rank + (new_axis ? 1 : 0);
    int64_t axis = lt_attr_int(k->node, "axis", 0);
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r || r > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_INVALID, "axis out of range");
    int64_t dims[LT_MAX_RANK], total = 0;
    for (int i = 0; i < sq->nseq; i++) {
        const lt_tensor *t = &sq->seq[i];
        if (t->rank != t0->rank || t->dtype != t0->dtype)
            return lt_k_fail(k, LT_ERR_RUNTIME, "sequence elements differ in rank or type");
        for (int d = 0; d < t->rank; d++)
            if ((new_axis || d != axis) && t->dims[d] != t0->dims[d])
                return lt_k_fail(k, LT_ERR_RUNTIME, "sequence elements differ in shape");
        total += new_axis ? 1 : t->dims[axis];
    }
    for (int d = 0; d < r; d++)
        dims[d] = d == axis ? total : t0->dims[new_axis && d > axis ? d - 1 : d];
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, t0->dtype, r, dims, &o);
    if (s != LT_OK)
        return s;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= dims[d];
    for (int d = axis + 1; d < r; d++)
        inner *= dims[d];
    size_t es = lt_dtype_size(t0->dtype);
    int64_t off = 0;
    for (int i = 0; i < sq->nseq; i++) {
        int64_t len = new_axis ? 1 : sq->seq[i].dims[axis];
        for (int64_t a = 0; a < outer; a++)
            memcpy((char *)o->data + ((size_t)a * total + off) * inner * es,
                   (const char *)sq->seq[i].data + (size_t)a * len * inner * es, (size_t)len * inner * es);
        off += len;
    }
    return LT_OK;
}

static lt_status op_sequence_map(lt_kctx *k)
{
    const lt_attr *a = lt_attr_find(k->node, "body");
    if (!a || a->kind != LT_ATTR_GRAPH)
        return lt_k_fail(k, LT_ERR_INVALID, "missing body graph");
    const lt_block *b = k->node->regions[a->region];
    const lt_value *s0 = in_seq(k, 0);
    if (!s0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input 0 must be a sequence");
    if (b->nparams != k->nin || b->nresults != k->nout)
        return lt_k_fail(k, LT_ERR_INVALID, "body signature does not match the node");
    int n = s0->nseq;
    for (int i = 1; i < k->nin; i++)
        if (k->in[i] && k->in[i]->kind == LT_VAL_SEQUENCE && k->in[i]->nseq != n)
            return lt_k_fail(k, LT_ERR_RUNTIME, "sequence inputs differ in length");
    lt_status s = LT_OK;
    lt_value **outs = calloc(k->nout + 1, sizeof *outs), **args = calloc(k->nin + 1, sizeof *args),
             **res = calloc(k->nout + 1, sizeof *res);
    if (!outs || !args || !res)
        s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int j = 0; j < k->nout && s == LT_OK; j++) {
        lt_dtype dt = k->node->out[j] ? k->node->out[j]->type.dtype : LT_UNDEFINED;
        if (!(outs[j] = lt_value_new_seq(dt)))
            s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    for (int e = 0; e < n && s == LT_OK; e++) {
        for (int i = 0; i < k->nin && s == LT_OK; i++) {
            const lt_value *in = k->in[i];
            if (in && in->kind == LT_VAL_SEQUENCE) {
                args[i] = lt_value_new_tensor();
                if (args[i])
                    lt_tensor_view(&args[i]->t, &in->seq[e], in->seq[e].rank, in->seq[e].dims);
            } else {
                args[i] = in ? lt_value_ref(in) : NULL;
            }
        }
        if (s == LT_OK)
            s = lt_k_run_block(k, b, args, res);
        for (int i = 0; i < k->nin; i++) {
            lt_value_free(args[i]);
            args[i] = NULL;
        }
        for (int j = 0; j < k->nout && s == LT_OK; j++) {
            if (res[j]->kind != LT_VAL_TENSOR)
                s = lt_k_fail(k, LT_ERR_RUNTIME, "body output %d is not a tensor", j);
            else
                s = lt_seq_append(outs[j], &res[j]->t, k->err);
        }
        for (int j = 0; j < k->nout; j++) {
            lt_value_free(res[j]);
            res[j] = NULL;
        }
    }
    for (int j = 0; j < k->nout; j++) {
        if (s == LT_OK) {
            lt_k_out_value(k, j, outs[j]);
            outs[j] = NULL;
        }
        if (outs)
            lt_value_free(outs[j]);
    }
    free(outs);
    free(args);
    free(res);
    return s;
}

static lt_status op_optional(lt_kctx *k)
{
    lt_value *v = k->nin > 0 && k->in[0] ? lt_value_ref(k->in[0]) : lt_value_new_none();
    return out_seq(k, v);
}

static lt_status op_optional_has_element(lt_kctx *k)
{
    bool has = k->nin > 0 && k->in[0] && k->in[0]->kind != LT_VAL_NONE;
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, LT_BOOL, 0, NULL, &o);
    if (s == LT_OK)
        *(uint8_t *)o->data = has;
    return s;
}

static lt_status op_optional_get_element(lt_kctx *k)
{
    if (k->nin < 1 || !k->in[0] || k->in[0]->kind == LT_VAL_NONE)
        return lt_k_fail(k, LT_ERR_RUNTIME, "the optional is empty");
    return out_seq(k, lt_value_ref(k->in[0]));
}

void lt_cpu_register_control_seq(lt_kernel_fn *tab)
{
    tab[LT_OP_SEQUENCE_EMPTY] = op_sequence_empty;
    tab[LT_OP_SEQUENCE_CONSTRUCT] = op_sequence_construct;
    tab[LT_OP_SEQUENCE_INSERT] = op_sequence_insert;
    tab[LT_OP_SEQUENCE_ERASE] = op_sequence_erase;
    tab[LT_OP_SEQUENCE_AT] = op_sequence_at;
    tab[LT_OP_SEQUENCE_LENGTH] = op_sequence_length;
    tab[LT_OP_SPLIT_TO_SEQUENCE] = op_split_to_sequence;
    tab[LT_OP_CONCAT_FROM_SEQUENCE] = op_concat_from_sequence;
    tab[LT_OP_SEQUENCE_MAP] = op_sequence_map;
    tab[LT_OP_OPTIONAL] = op_optional;
    tab[LT_OP_OPTIONAL_HAS_ELEMENT] = op_optional_has_element;
    tab[LT_OP_OPTIONAL_GET_ELEMENT] = op_optional_get_element;
}
