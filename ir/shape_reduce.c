/* Shape inference rules: reduce family (Reduce*, ArgMax/ArgMin, Softmax
 * and friends, TopK, CumSum, the NLL and softmax cross-entropy losses,
 * LpNormalization, MeanVarianceNormalization). */
#include "infer.h"
#include <string.h>

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] && n->in[i]->type.kind == LT_KIND_TENSOR ? &n->in[i]->type : NULL;
}

static lt_type *out_type(lt_node *n, int i) { return i < n->nout && n->out[i] ? &n->out[i]->type : NULL; }

/* Element i of a constant integer tensor (shape inference must not depend
 * on the runtime's accessors). */
static bool const_int(const lt_tensor *t, int64_t i, int64_t *v)
{
    if (!t || !t->data || i < 0 || i >= t->numel)
        return false;
    switch (t->dtype) {
    case LT_I64: *v = ((const int64_t *)t->data)[i]; return true;
    case LT_I32: *v = ((const int32_t *)t->data)[i]; return true;
    default: return false;
    }
}

static bool norm_axis(int64_t a, int rank, int *out)
{
    if (a < -rank || a >= rank)
        return false;
    *out = (int)(a < 0 ? a + rank : a);
    return true;
}

/* ---- Reduce* ---- */
static lt_status infer_reduce(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *y = out_type(n, 0);
    if (!y)
        return LT_OK;
    lt_dtype dt = x ? x->dtype : LT_UNDEFINED;
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    int rank = x ? x->rank : -1;
    /* axes: the input when present (known only if constant), else the attribute */
    bool known = true;
    int64_t na = 0, axes[LT_MAX_RANK];
    if (n->nin > 1 && n->in[1]) {
        const lt_tensor *t = lt_infer_const(c, n->in[1]);
        if (!t || (t->numel > 0 && t->dtype != LT_I64 && t->dtype != LT_I32))
            known = false;
        else if (t->numel > LT_MAX_RANK)
            return lt_infer_fail(c, n, "%lld axes for a tensor of rank at most %d", (long long)t->numel,
                                 LT_MAX_RANK);
        else
            for (na = 0; na < t->numel; na++)
                const_int(t, na, &axes[na]);
    } else {
        int len = 0;
        const int64_t *a = lt_attr_ints(n, "axes", &len);
        if (a && len > LT_MAX_RANK)
            return lt_infer_fail(c, n, "%d axes for a tensor of rank at most %d", len, LT_MAX_RANK);
        na = a ? len : 0;
        for (int i = 0; i < na; i++)
            axes[i] = a[i];
    }
    if (rank < 0 || !known) {
        lt_type_unknown(y, dt, keep ? rank : -1);
        return LT_OK;
    }
    bool mask[LT_MAX_RANK] = {false};
    bool all = na == 0 && !lt_attr_int(n, "noop_with_empty_axes", 0);
    for (int d = 0; d < rank; d++)
        mask[d] = all;
    for (int i = 0; i < na; i++) {
        int a;
        if (!norm_axis(axes[i], rank, &a))
            return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axes[i], rank);
        if (mask[a])
            return lt_infer_fail(c, n, "axis %lld appears twice", (long long)axes[i]);
        mask[a] = true;
    }
    lt_type_unknown(y, dt, 0);
    int r = 0;
    for (int d = 0; d < rank; d++)
        if (!mask[d])
            y->dims[r++] = x->dims[d];
        else if (keep)
            y->dims[r++] = (lt_dim){1, -1};
    y->rank = r;
    return LT_OK;
}

/* ---- ArgMax, ArgMin ---- */
static lt_status infer_arg(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *y = out_type(n, 0);
    if (!y)
        return LT_OK;
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    int rank = x ? x->rank : -1;
    if (rank < 0) {
        lt_type_unknown(y, LT_I64, -1);
        return LT_OK;
    }
    int64_t axis = lt_attr_int(n, "axis", 0);
    int a;
    if (!norm_axis(axis, rank, &a))
        return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axis, rank);
    lt_type_unknown(y, LT_I64, 0);
    int r = 0;
    for (int d = 0; d < rank; d++)
        if (d != a)
            y->dims[r++] = x->dims[d];
        else if (keep)
            y->dims[r++] = (lt_dim){1, -1};
    y->rank = r;
    return LT_OK;
}

/* ---- same type as the input, with an axis check where one is known ---- */
static lt_status check_axis(lt_infer_ctx *c, lt_node *n, int64_t axis, bool allow_rank)
{
    const lt_type *x = in_type(n, 0);
    if (!x || x->rank < 0)
        return LT_OK;
    int a;
    if (!(allow_rank && axis == x->rank) && !norm_axis(axis, x->rank, &a))
        return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    return LT_OK;
}

static lt_status infer_softmax(lt_infer_ctx *c, lt_node *n)
{
    bool legacy = n->opset < 13;
    lt_status s = check_axis(c, n, lt_attr_int(n, "axis", legacy ? 1 : -1), legacy);
    if (s == LT_OK)
        lt_infer_same(n, 0, 0);
    return s;
}

static lt_status infer_lp_norm(lt_infer_ctx *c, lt_node *n)
{
    int64_t p = lt_attr_int(n, "p", 2);
    if (p != 1 && p != 2)
        return lt_infer_fail(c, n, "p must be 1 or 2, got %lld", (long long)p);
    lt_status s = check_axis(c, n, lt_attr_int(n, "axis", -1), false);
    if (s == LT_OK)
        lt_infer_same(n, 0, 0);
    return s;
}

static lt_status infer_same(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

/* ---- TopK ---- */
static lt_status infer_top_k(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_type *v = out_type(n, 0), *ix = out_type(n, 1);
    lt_dtype dt = x ? x->dtype : LT_UNDEFINED;
    int rank = x ? x->rank : -1;
    int64_t k = -1;
    if (n->nin > 1 && n->in[1]) {
        if (!const_int(lt_infer_const(c, n->in[1]), 0, &k))
            k = -1;
    } else if (lt_attr_find(n, "k")) {
        k = lt_attr_int(n, "k", -1);
    }
    lt_type t;
    lt_type_unknown(&t, dt, rank);
    if (rank >= 0) {
        int64_t axis = lt_attr_int(n, "axis", -1);
        int a;
        if (!norm_axis(axis, rank, &a))
            return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axis, rank);
        for (int d = 0; d < rank; d++)
            t.dims[d] = x->dims[d];
        if (k >= 0 && x->dims[a].sym < 0 && x->dims[a].v >= 0 && k > x->dims[a].v)
            return lt_infer_fail(c, n, "K = %lld exceeds the axis size %lld", (long long)k,
                                 (long long)x->dims[a].v);
        t.dims[a] = (lt_dim){k >= 0 ? k : -1, -1};
    }
    if (v)
        *v = t;
    if (ix) {
        *ix = t;
        ix->dtype = LT_I64;
    }
    return LT_OK;
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---- */
static lt_status infer_loss(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *t = in_type(n, 1);
    lt_type *y = out_type(n, 0);
    lt_dtype dt = x ? x->dtype : LT_UNDEFINED;
    const char *r = lt_attr_str(n, "reduction", "mean");
    if (strcmp(r, "none") && strcmp(r, "sum") && strcmp(r, "mean"))
        return lt_infer_fail(c, n, "reduction must be none, sum or mean, got '%s'", r);
    if (x && x->rank >= 0 && x->rank < 2)
        return lt_infer_fail(c, n, "input must be (N, C, ...), got rank %d", x->rank);
    if (y) {
        if (strcmp(r, "none")) {
            lt_type_unknown(y, dt, 0);
        } else if (x && x->rank >= 2) {
            lt_type_unknown(y, dt, x->rank - 1);
            y->dims[0] = x->dims[0];
            for (int d = 2; d < x->rank; d++)
                y->dims[d - 1] = x->dims[d];
        } else if (t && t->rank >= 0) {
            *y = *t;
            y->dtype = dt;
        } else {
            lt_type_unknown(y, dt, -1);
        }
    }
    if (n->op == LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS)
        lt_infer_same(n, 1, 0);
    return LT_OK;
}

void lt_infer_register_reduce(lt_infer_fn *tab)
{
    static const lt_op reduces[] = {LT_OP_REDUCE_SUM,     LT_OP_REDUCE_MEAN,    LT_OP_REDUCE_MAX,
                                    LT_OP_REDUCE_MIN,     LT_OP_REDUCE_PROD,    LT_OP_REDUCE_L1,
                                    LT_OP_REDUCE_L2,      LT_OP_REDUCE_LOG_SUM, LT_OP_REDUCE_LOG_SUM_EXP,
                                    LT_OP_REDUCE_SUM_SQUARE};
    for (size_t i = 0; i < sizeof reduces / sizeof reduces[0]; i++)
        tab[reduces[i]] = infer_reduce;
    tab[LT_OP_ARG_MAX] = infer_arg;
    tab[LT_OP_ARG_MIN] = infer_arg;
    tab[LT_OP_SOFTMAX] = infer_softmax;
    tab[LT_OP_LOG_SOFTMAX] = infer_softmax;
    tab[LT_OP_HARDMAX] = infer_softmax;
    tab[LT_OP_LP_NORMALIZATION] = infer_lp_norm;
    tab[LT_OP_MEAN_VARIANCE_NORMALIZATION] = infer_same;
    tab[LT_OP_CUM_SUM] = infer_same;
    tab[LT_OP_CUM_PROD] = infer_same;
    tab[LT_OP_CUM_PROD_GRAD] = infer_same; /* dx like dy */
    tab[LT_OP_TOP_K] = infer_top_k;
    tab[LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = infer_loss;
    tab[LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = infer_loss;
}
