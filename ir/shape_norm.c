/* Shape inference rules: norm family (BatchNormalization, Instance/Layer/
 * Group normalization, LRN, Dropout). */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

static lt_type *out_type(lt_node *n, int i)
{
    return i < n->nout && n->out[i] ? &n->out[i]->type : NULL;
}

/* Y like X; running/saved statistics like mean (odd outputs) or var (even),
 * else a vector of X's channel count. */
static lt_status infer_batch_norm(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (x && x->rank >= 0 && x->rank < 2)
        return lt_infer_fail(c, n, "input must have rank >= 2 (N, C, ...), got rank %d", x->rank);
    lt_infer_same(n, 0, 0);
    for (int i = 1; i < 5; i++) {
        lt_type *o = out_type(n, i);
        if (!o)
            continue;
        const lt_type *src = in_type(n, i % 2 ? 3 : 4);
        if (src && src->rank >= 0) {
            *o = *src;
        } else {
            lt_type_unknown(o, src ? src->dtype : (x ? x->dtype : LT_UNDEFINED), 1);
            if (x && x->rank >= 2 && n->opset >= 9)
                o->dims[0] = x->dims[1];
        }
    }
    return LT_OK;
}

static lt_status infer_same(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

/* RMSNormalization (opset 23): Y like X; axis in [-rank, rank) */
static lt_status infer_rms_norm(lt_infer_ctx *c, lt_node *n)
{
    lt_infer_same(n, 0, 0);
    const lt_type *x = in_type(n, 0);
    int64_t axis = lt_attr_int(n, "axis", -1);
    if (x && x->rank >= 0 && (axis < -x->rank || axis >= x->rank))
        return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    return LT_OK;
}

static lt_status infer_layer_norm(lt_infer_ctx *c, lt_node *n)
{
    lt_infer_same(n, 0, 0);
    const lt_type *x = in_type(n, 0);
    if (!x)
        return LT_OK;
    int64_t axis = lt_attr_int(n, "axis", -1);
    if (x->rank >= 0) {
        if (axis < -x->rank || axis >= x->rank)
            return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
        if (axis < 0)
            axis += x->rank;
    }
    lt_dtype st = (lt_dtype)lt_attr_int(n, "stash_type", LT_F32);
    if (st != LT_F32 && st != LT_F64 && st != LT_F16 && st != LT_BF16)
        st = x->dtype;
    for (int i = 1; i < 3; i++) {
        lt_type *o = out_type(n, i);
        if (!o)
            continue;
        lt_type_unknown(o, st, x->rank);
        for (int d = 0; d < x->rank; d++)
            o->dims[d] = d < axis ? x->dims[d] : (lt_dim){1, -1};
    }
    return LT_OK;
}

static lt_status infer_group_norm(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    int64_t g = lt_attr_int(n, "num_groups", -1);
    if (g <= 0)
        return lt_infer_fail(c, n, "num_groups must be a positive integer");
    if (x && x->rank >= 2 && x->dims[1].sym < 0 && x->dims[1].v >= 0 && x->dims[1].v % g != 0)
        return lt_infer_fail(c, n, "num_groups %lld does not divide the %lld channels", (long long)g,
                             (long long)x->dims[1].v);
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

/* The mask is bool from opset 10 on, X's type before. */
static lt_status infer_dropout(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    lt_infer_same(n, 0, 0);
    lt_type *m = out_type(n, 1);
    const lt_type *x = in_type(n, 0);
    if (m && x) {
        *m = *x;
        if (n->opset >= 10)
            m->dtype = LT_BOOL;
    }
    return LT_OK;
}

void lt_infer_register_norm(lt_infer_fn *tab)
{
    tab[LT_OP_BATCH_NORMALIZATION] = infer_batch_norm;
    tab[LT_OP_INSTANCE_NORMALIZATION] = infer_same;
    tab[LT_OP_LAYER_NORMALIZATION] = infer_layer_norm;
    tab[LT_OP_RMS_NORMALIZATION] = infer_rms_norm;
    tab[LT_OP_GROUP_NORMALIZATION] = infer_group_norm;
    tab[LT_OP_LRN] = infer_same;
    tab[LT_OP_DROPOUT] = infer_dropout;
}
