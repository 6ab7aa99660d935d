/* CPU kernels: ai.onnx.ml's Binarizer, ArrayFeatureExtractor, LabelEncoder
 * (keys and values from the typed lists or from tensors) and TreeEnsemble
 * (opset 5). */
#include "norm_util.h"
#include <math.h>
#include <string.h>

static lt_status binarizer(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x || (!lt_dtype_is_float(x->dtype) && !lt_dtype_is_int(x->dtype)))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a numeric tensor");
    double th = lt_attr_float(k->node, "threshold", 0);
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    for (int64_t i = 0; st == LT_OK && i < x->numel; i++)
        lt_tensor_set_f64(y, i, lt_tensor_get_f64(x, i) > th ? 1 : 0);
    return st;
}

/* X[..., indices] with the indices flattened; a 1-D X gives (1, n) */
static lt_status array_feature_extractor(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *ix = lt_k_in(k, 1);
    if (!x || !ix || !lt_dtype_is_int(ix->dtype) || x->rank < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X of rank >= 1 and integer indices");
    int64_t last = x->dims[x->rank - 1], rows = last ? x->numel / last : 0, n = ix->numel;
    int64_t yd[LT_MAX_RANK];
    int r = x->rank == 1 ? 2 : x->rank;
    if (x->rank == 1)
        yd[0] = 1;
    else
        memcpy(yd, x->dims, sizeof(int64_t) * (size_t)(x->rank - 1));
    yd[r - 1] = n;
    for (int64_t j = 0; j < n; j++) {
        int64_t v = lt_tensor_get_i64(ix, j);
        if (v < 0 || v >= last)
            return lt_k_fail(k, LT_ERR_RUNTIME, "index %lld is outside the last dim's %lld", (long long)v,
                             (long long)last);
    }
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, r, yd, &y);
    size_t es = lt_dtype_size(x->dtype);
    for (int64_t i = 0; st == LT_OK && i < rows; i++)
        for (int64_t j = 0; j < n; j++)
            memcpy((char *)y->data + (size_t)(i * n + j) * es,
                   (const char *)x->data + (size_t)(i * last + lt_tensor_get_i64(ix, j)) * es, es);
    return st;
}

/* ---- LabelEncoder ---- */
/* one side of the map: n entries, strings or numbers */
typedef struct le_list {
    int64_t n;
    const char *const *s; /* strings (attribute list or string tensor) */
    const lt_attr *a;     /* ints / floats attribute */
    const lt_tensor *t;   /* numeric tensor */
    lt_dtype dt;          /* element type of the side */
} le_list;

static bool le_find(const lt_node *nd, const char *side, le_list *l)
{
    char nm[32];
    memset(l, 0, sizeof *l);
    snprintf(nm, sizeof nm, "%s_strings", side);
    const lt_attr *a = lt_attr_find(nd, nm);
    if (a && a->kind == LT_ATTR_STRINGS) {
        *l = (le_list){.n = a->n, .s = a->strings, .dt = LT_STRING};
        return true;
    }
    snprintf(nm, sizeof nm, "%s_int64s", side);
    if ((a = lt_attr_find(nd, nm)) && a->kind == LT_ATTR_INTS) {
        *l = (le_list){.n = a->n, .a = a, .dt = LT_I64};
        return true;
    }
    snprintf(nm, sizeof nm, "%s_floats", side);
    if ((a = lt_attr_find(nd, nm)) && a->kind == LT_ATTR_FLOATS) {
        *l = (le_list){.n = a->n, .a = a, .dt = LT_F32};
        return true;
    }
    snprintf(nm, sizeof nm, "%s_tensor", side);
    if ((a = lt_attr_find(nd, nm)) && a->kind == LT_ATTR_TENSOR && a->t) {
        const lt_tensor *t = a->t;
        *l = (le_list){.n = t->numel, .t = t, .dt = t->dtype,
                       .s = t->dtype == LT_STRING ? (const char *const *)t->data : NULL};
        return true;
    }
    return false;
}

static double le_num(const le_list *l, int64_t i)
{
    if (l->t)
        return lt_tensor_get_f64(l->t, i);
    return l->a->kind == LT_ATTR_INTS ? (double)l->a->ints[i] : (double)l->a->floats[i];
}

static lt_status label_encoder(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    le_list keys, vals;
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs X");
    if (!le_find(k->node, "keys", &keys) || !le_find(k->node, "values", &vals))
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs keys_* and values_* attributes");
    if (keys.n != vals.n)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%lld keys but %lld values", (long long)keys.n, (long long)vals.n);
    if ((x->dtype == LT_STRING) != (keys.dt == LT_STRING))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X of type %s against keys of type %s", lt_dtype_name(x->dtype),
                         lt_dtype_name(keys.dt));
    /* the default of the values' kind */
    const char *dstr = "_Unused";
    double dnum = vals.dt == LT_I64 && !vals.t ? -1 : vals.dt == LT_F32 && !vals.t ? -0.0 : 0;
    const lt_attr *da = NULL;
    if (vals.t)
        da = lt_attr_find(k->node, "default_tensor");
    else if (vals.dt == LT_STRING)
        da = lt_attr_find(k->node, "default_string");
    else
        da = lt_attr_find(k->node, vals.dt == LT_I64 ? "default_int64" : "default_float");
    if (da && da->kind == LT_ATTR_TENSOR && da->t && da->t->numel >= 1) {
        if (da->t->dtype == LT_STRING)
            dstr = ((const char *const *)da->t->data)[0];
        else
            dnum = lt_tensor_get_f64(da->t, 0);
    } else if (da && da->kind == LT_ATTR_STRING && da->s) {
        dstr = da->s;
    } else if (da && da->kind == LT_ATTR_INT) {
        dnum = (double)da->i;
    } else if (da && da->kind == LT_ATTR_FLOAT) {
        dnum = da->f;
    }
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, vals.dt, x->rank, x->dims, &y);
    const char *dint = st == LT_OK && vals.dt == LT_STRING ? lt_str_intern(dstr, strlen(dstr)) : NULL;
    for (int64_t i = 0; st == LT_OK && i < x->numel; i++) {
        int64_t hit = -1;
        if (x->dtype == LT_STRING) {
            const char *s = ((const char *const *)x->data)[i];
            for (int64_t j = 0; j < keys.n && hit < 0; j++)
                if (strcmp(s ? s : "", keys.s[j] ? keys.s[j] : "") == 0)
                    hit = j;
        } else {
            double v = lt_tensor_get_f64(x, i);
            for (int64_t j = 0; j < keys.n && hit < 0; j++)
                if (le_num(&keys, j) == v)
                    hit = j;
        }
        if (vals.dt == LT_STRING) {
            const char *s = hit >= 0 ? vals.s[hit] : dint;
            ((const char **)y->data)[i] = s ? lt_str_intern(s, strlen(s)) : dint;
        } else {
            lt_tensor_set_f64(y, i, hit >= 0 ? le_num(&vals, hit) : dnum);
        }
    }
    return st;
}

/* ---- TreeEnsemble ---- */
typedef struct te_tree {
    int64_t nn, nl;                  /* nodes, leaves */
    const int64_t *feat, *tid, *fid, *tleaf, *fleaf, *ltarget;
    const lt_tensor *splits, *modes, *weights, *members;
    const int64_t *missing;          /* nodes_missing_value_tracks_true or NULL */
    int64_t *mset;                   /* per node: start of its membership set, -1 */
} te_tree;

static const int64_t *te_ints(const lt_node *n, const char *name, int64_t want, int64_t *len)
{
    int l = 0;
    const int64_t *v = lt_attr_ints(n, name, &l);
    *len = l;
    return v && (want < 0 || l == want) ? v : NULL;
}

/* the membership sets, handed out in the order the reference builds the
 * trees (depth first, true branch first); false on a malformed forest */
static bool te_sets(te_tree *t, int64_t node, bool leaf, int64_t *next, int depth)
{
    if (leaf)
        return node >= 0 && node < t->nl;
    if (node < 0 || node >= t->nn || depth > t->nn)
        return false;
    if (lt_tensor_get_i64(t->modes, node) == 6) {
        if (!t->members)
            return false;
        t->mset[node] = *next;
        while (*next < t->members->numel && !isnan(lt_tensor_get_f64(t->members, *next)))
            (*next)++;
        (*next)++;
    }
    return te_sets(t, t->tid[node], t->tleaf[node] != 0, next, depth + 1) &&
           te_sets(t, t->fid[node], t->fleaf[node] != 0, next, depth + 1);
}

static bool te_true(const te_tree *t, int64_t node, double x)
{
    if (isnan(x) && t->missing && t->missing[node])
        return true;
    double v = lt_tensor_get_f64(t->splits, node);
    switch (lt_tensor_get_i64(t->modes, node)) {
    case 0: return x <= v;
    case 1: return x < v;
    case 2: return x >= v;
    case 3: return x > v;
    case 4: return x == v;
    case 5: return x != v;
    default:
        for (int64_t i = t->mset[node]; i < t->members->numel; i++) {
            double m = lt_tensor_get_f64(t->members, i);
            if (isnan(m))
                return false;
            if (m == x)
                return true;
        }
        return false;
    }
}

static lt_status tree_ensemble(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    const lt_node *n = k->node;
    if (!x || x->rank != 2 || !lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a float (batch, features) tensor");
    te_tree t = {0};
    int64_t len, nroots;
    t.feat = te_ints(n, "nodes_featureids", -1, &t.nn);
    t.tid = te_ints(n, "nodes_truenodeids", t.nn, &len);
    t.fid = te_ints(n, "nodes_falsenodeids", t.nn, &len);
    t.tleaf = te_ints(n, "nodes_trueleafs", t.nn, &len);
    t.fleaf = te_ints(n, "nodes_falseleafs", t.nn, &len);
    t.ltarget = te_ints(n, "leaf_targetids", -1, &t.nl);
    t.missing = te_ints(n, "nodes_missing_value_tracks_true", t.nn, &len);
    const int64_t *roots = te_ints(n, "tree_roots", -1, &nroots);
    t.splits = lt_attr_tensor(n, "nodes_splits");
    t.modes = lt_attr_tensor(n, "nodes_modes");
    t.weights = lt_attr_tensor(n, "leaf_weights");
    t.members = lt_attr_tensor(n, "membership_values");
    int64_t nt = lt_attr_int(n, "n_targets", 0), agg = lt_attr_int(n, "aggregate_function", 1);
    if (!t.feat || !t.tid || !t.fid || !t.tleaf || !t.fleaf || !t.ltarget || !roots || !t.splits || !t.modes ||
        !t.weights || t.splits->numel != t.nn || t.modes->numel != t.nn || t.weights->numel != t.nl || nt <= 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "the nodes_*, leaf_*, tree_roots and n_targets attributes do not agree");
    if (lt_attr_int(n, "post_transform", 0) != 0)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "post_transform %lld is not implemented (only NONE)",
                         (long long)lt_attr_int(n, "post_transform", 0));
    if (agg < 0 || agg > 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "aggregate_function %lld (expected 0 to 3)", (long long)agg);
    for (int64_t i = 0; i < t.nl; i++)
        if (t.ltarget[i] < 0 || t.ltarget[i] >= nt)
            return lt_k_fail(k, LT_ERR_RUNTIME, "leaf_targetids[%lld] is outside n_targets", (long long)i);
    for (int64_t i = 0; i < t.nn; i++)
        if (t.feat[i] < 0 || t.feat[i] >= x->dims[1])
            return lt_k_fail(k, LT_ERR_RUNTIME, "nodes_featureids[%lld] is outside X's %lld features", (long long)i,
                             (long long)x->dims[1]);
    t.mset = lt_k_scratch(k, sizeof(int64_t) * (size_t)(t.nn + 1));
    bool *rleaf = lt_k_scratch(k, sizeof(bool) * (size_t)(nroots + 1));
    if (!t.mset || !rleaf)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    int64_t next = 0;
    for (int64_t r = 0; r < nroots; r++) {
        int64_t o = roots[r];
        if (o < 0 || o >= t.nn)
            return lt_k_fail(k, LT_ERR_RUNTIME, "tree_roots[%lld] is not a node", (long long)r);
        /* a tree that is one leaf: both branches the same leaf, read at the root's index */
        rleaf[r] = t.tleaf[o] && t.fleaf[o] && t.tid[o] == t.fid[o];
        if (!te_sets(&t, o, rleaf[r], &next, 0))
            return lt_k_fail(k, LT_ERR_RUNTIME, "tree %lld has a branch outside the nodes or leaves, or a cycle",
                             (long long)r);
    }
    int64_t N = x->dims[0], F = x->dims[1];
    int64_t yd[2] = {N, nt};
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, x->dtype, 2, yd, &y);
    double init = agg == 2 ? INFINITY : agg == 3 ? -INFINITY : 0;
    for (int64_t b = 0; st == LT_OK && b < N; b++) {
        for (int64_t j = 0; j < nt; j++)
            lt_tensor_set_f64(y, b * nt + j, init);
        for (int64_t r = 0; r < nroots; r++) {
            int64_t node = roots[r];
            bool leaf = rleaf[r];
            for (int64_t steps = 0; !leaf; steps++) {
                bool go = te_true(&t, node, lt_tensor_get_f64(x, b * F + t.feat[node]));
                leaf = (go ? t.tleaf : t.fleaf)[node] != 0;
                node = (go ? t.tid : t.fid)[node];
                if (steps > t.nn)
                    return lt_k_fail(k, LT_ERR_RUNTIME, "tree %lld does not end in a leaf", (long long)r);
            }
            int64_t o = b * nt + t.ltarget[node];
            double w = lt_tensor_get_f64(t.weights, node), cur = lt_tensor_get_f64(y, o);
            double v = agg == 0 ? cur + w / (double)nroots : agg == 1 ? cur + w : agg == 2 ? (w < cur ? w : cur)
                                                                                            : (w > cur ? w : cur);
            lt_tensor_set_f64(y, o, v);
        }
    }
    return st;
}

void lt_cpu_register_ml_ops(lt_kernel_fn *tab)
{
    tab[LT_OP_BINARIZER] = binarizer;
    tab[LT_OP_ARRAY_FEATURE_EXTRACTOR] = array_feature_extractor;
    tab[LT_OP_LABEL_ENCODER] = label_encoder;
    tab[LT_OP_TREE_ENSEMBLE] = tree_ensemble;
}
