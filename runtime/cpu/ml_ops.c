/* CPU kernels: ai.onnx.ml's Binarizer, ArrayFeatureExtractor and
 * LabelEncoder (keys and values from the typed lists or from tensors). */
#include "norm_util.h"
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

void lt_cpu_register_ml_ops(lt_kernel_fn *tab)
{
    tab[LT_OP_BINARIZER] = binarizer;
    tab[LT_OP_ARRAY_FEATURE_EXTRACTOR] = array_feature_extractor;
    tab[LT_OP_LABEL_ENCODER] = label_encoder;
}
