/* Shape inference rules: misc family (NonMaxSuppression, TfIdfVectorizer,
 * StringNormalizer, and the preview-training Adagrad, Momentum, Adam). */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

static lt_type *out_type(lt_node *n, int i)
{
    return i < n->nout && n->out[i] ? &n->out[i]->type : NULL;
}

/* int64 [num_selected, 3]; the count depends on the data. */
static lt_status infer_nms(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    lt_type *o = out_type(n, 0);
    if (o) {
        lt_type_unknown(o, LT_I64, 2);
        o->dims[1].v = 3;
    }
    return LT_OK;
}

/* float [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1]. */
static lt_status infer_tfidf(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *o = out_type(n, 0);
    if (!o)
        return LT_OK;
    if (x && x->rank >= 0 && x->rank != 1 && x->rank != 2)
        return lt_infer_fail(c, n, "input must have shape [C] or [N, C], got rank %d", x->rank);
    int rank = x ? x->rank : -1;
    lt_type_unknown(o, LT_F32, rank);
    if (rank < 0)
        return LT_OK;
    int cnt = 0;
    const int64_t *idx = lt_attr_ints(n, "ngram_indexes", &cnt);
    if (idx) {
        int64_t w = 0;
        for (int i = 0; i < cnt; i++) {
            if (idx[i] < 0 || idx[i] >= ((int64_t)1 << 40))
                return lt_infer_fail(c, n, "ngram_indexes holds %lld, not an output position", (long long)idx[i]);
            w = idx[i] + 1 > w ? idx[i] + 1 : w;
        }
        o->dims[rank - 1].v = w;
    }
    if (rank == 2)
        o->dims[0] = x->dims[0];
    return LT_OK;
}

/* string [C'] or [1, C'], C' known only at run time. */
static lt_status infer_strnorm(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *o = out_type(n, 0);
    if (!o)
        return LT_OK;
    if (x && x->dtype != LT_UNDEFINED && x->dtype != LT_STRING)
        return lt_infer_fail(c, n, "input must be a string tensor, got %s", lt_dtype_name(x->dtype));
    if (x && x->rank >= 0 && x->rank != 1 && x->rank != 2)
        return lt_infer_fail(c, n, "input must have shape [C] or [1, C], got rank %d", x->rank);
    if (x && x->rank == 2 && x->dims[0].sym < 0 && x->dims[0].v >= 0 && x->dims[0].v != 1)
        return lt_infer_fail(c, n, "input must have shape [C] or [1, C], got %lld rows", (long long)x->dims[0].v);
    lt_type_unknown(o, LT_STRING, x ? x->rank : -1);
    if (o->rank == 2)
        o->dims[0].v = 1;
    return LT_OK;
}

/* Output group q of n tensors takes the type of input group 0 (X) for
 * q = 0 and of input group q + 1 (the matching state) after that. */
static lt_status infer_optim(lt_infer_ctx *c, lt_node *n, int states)
{
    int groups = 2 + states;
    if (n->nin < 2 + groups || (n->nin - 2) % groups != 0)
        return lt_infer_fail(c, n, "expected R, T and %d groups of tensors, got %d inputs", groups, n->nin);
    int cnt = (n->nin - 2) / groups;
    if (n->nout != cnt * (1 + states))
        return lt_infer_fail(c, n, "expected %d outputs for %d tensors, got %d", cnt * (1 + states), cnt, n->nout);
    for (int q = 0; q <= states; q++)
        for (int i = 0; i < cnt; i++)
            lt_infer_same(n, q * cnt + i, 2 + (q ? q + 1 : 0) * cnt + i);
    return LT_OK;
}

static lt_status infer_adagrad(lt_infer_ctx *c, lt_node *n) { return infer_optim(c, n, 1); }
static lt_status infer_momentum(lt_infer_ctx *c, lt_node *n) { return infer_optim(c, n, 1); }
static lt_status infer_adam(lt_infer_ctx *c, lt_node *n) { return infer_optim(c, n, 2); }

void lt_infer_register_misc(lt_infer_fn *tab)
{
    tab[LT_OP_NON_MAX_SUPPRESSION] = infer_nms;
    tab[LT_OP_TF_IDF_VECTORIZER] = infer_tfidf;
    tab[LT_OP_STRING_NORMALIZER] = infer_strnorm;
    tab[LT_OP_ADAGRAD] = infer_adagrad;
    tab[LT_OP_MOMENTUM] = infer_momentum;
    tab[LT_OP_ADAM] = infer_adam;
}
