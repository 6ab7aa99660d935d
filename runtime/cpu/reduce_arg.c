/* CPU kernels: ArgMax, ArgMin (keepdims, select_last_index), TopK (k as an
 * attribute before opset 10 and an input from 10; largest; ties go to the
 * lower index) and CumSum (exclusive, reverse). */
#include "reduce_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

#define RT float
#define RACC double
#define RS f32
#include "reduce_arg_tmpl.h"
#undef RT
#undef RACC
#undef RS

#define RT double
#define RACC double
#define RS f64
#include "reduce_arg_tmpl.h"
#undef RT
#undef RACC
#undef RS

#define RT int64_t
#define RACC uint64_t
#define RS i64
#include "reduce_arg_tmpl.h"
#undef RT
#undef RACC
#undef RS

static bool numeric(lt_dtype t) { return lt_dtype_is_float(t) || lt_dtype_is_int(t) || t == LT_BOOL; }

/* outer x dims[a] x inner around axis a. */
static bool axis_view(const lt_tensor *x, int a, int64_t *outer, int64_t *r, int64_t *inner)
{
    *outer = lt_red_prod(x->dims, 0, a);
    *r = x->dims[a];
    *inner = lt_red_prod(x->dims, a + 1, x->rank);
    return *outer >= 0 && *inner >= 0;
}

/* ---- ArgMax, ArgMin ---- */
static lt_status arg_kernel(lt_kctx *k, bool mx)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    if (!numeric(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(x->dtype));
    int64_t axis = lt_attr_int(k->node, "axis", 0);
    bool keep = lt_attr_int(k->node, "keepdims", 1) != 0;
    bool last = lt_attr_int(k->node, "select_last_index", 0) != 0;
    int a;
    if (!lt_red_axis(axis, x->rank, &a))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int64_t outer, r, inner, odims[LT_MAX_RANK];
    if (!axis_view(x, a, &outer, &r, &inner))
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    int orank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != a)
            odims[orank++] = x->dims[d];
        else if (keep)
            odims[orank++] = 1;
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, LT_I64, orank, odims, &y);
    if (s != LT_OK || y->numel == 0)
        return s;
    if (r == 0)
        return lt_k_fail(k, LT_ERR_INVALID, "cannot take the %s over an empty axis", mx ? "argmax" : "argmin");
    size_t nout = (size_t)y->numel;
    if (x->dtype == LT_F64) {
        double *b = lt_k_scratch(k, sizeof(double) * nout);
        if (!b)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        arg_run_f64(x->data, b, y->data, outer, r, inner, mx, last);
    } else if (lt_dtype_is_float(x->dtype)) {
        const float *xf = lt_red_load_f32(k, x);
        float *b = lt_k_scratch(k, sizeof(float) * nout);
        if (!xf || !b)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        arg_run_f32(xf, b, y->data, outer, r, inner, mx, last);
    } else {
        const int64_t *xi = lt_red_load_i64(k, x, true);
        int64_t *b = lt_k_scratch(k, sizeof(int64_t) * nout);
        if (!xi || !b)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        arg_run_i64(xi, b, y->data, outer, r, inner, mx, last);
    }
    return LT_OK;
}

static lt_status k_arg_max(lt_kctx *k) { return arg_kernel(k, true); }
static lt_status k_arg_min(lt_kctx *k) { return arg_kernel(k, false); }

/* ---- TopK ---- */
/* Keys whose unsigned order is the values' order: every NaN above +inf, -0
 * tied with +0. */
static inline uint64_t key_of_f64(double d)
{
    if (d != d)
        return UINT64_MAX;
    if (d == 0)
        d = 0.0;
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return (b >> 63) ? ~b : b | ((uint64_t)1 << 63);
}

static void make_keys(const lt_tensor *x, uint64_t *key, bool largest)
{
    int64_t n = x->numel;
    uint64_t inv = largest ? 0 : UINT64_MAX; /* smallest first = largest of the inverted keys */
    if (x->dtype == LT_F32) {
        const float *f = x->data;
#pragma omp parallel for if (n > LT_RED_PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            key[i] = key_of_f64(f[i]) ^ inv;
    } else if (lt_dtype_is_float(x->dtype)) {
        for (int64_t i = 0; i < n; i++)
            key[i] = key_of_f64(lt_tensor_get_f64(x, i)) ^ inv;
    } else {
        uint64_t flip = x->dtype == LT_U64 ? 0 : (uint64_t)1 << 63;
        for (int64_t i = 0; i < n; i++)
            key[i] = ((uint64_t)lt_tensor_get_i64(x, i) ^ flip) ^ inv;
    }
}

typedef struct {
    uint64_t key;
    int64_t idx;
} topk_ent;

/* a ranks before b: larger key, then lower index */
static inline bool ent_before(topk_ent a, topk_ent b)
{
    return a.key > b.key || (a.key == b.key && a.idx < b.idx);
}

/* Heap with the worst entry at the root. */
static void sift_down(topk_ent *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, w = i;
        if (l < n && ent_before(h[w], h[l]))
            w = l;
        if (l + 1 < n && ent_before(h[w], h[l + 1]))
            w = l + 1;
        if (w == i)
            return;
        topk_ent t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void sift_up(topk_ent *h, int64_t i)
{
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!ent_before(h[p], h[i]))
            return;
        topk_ent t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

/* The k best of n strided keys, best first, into h. */
static void select_k(const uint64_t *key, int64_t n, int64_t stride, int64_t k, topk_ent *h)
{
    int64_t m = 0;
    for (int64_t q = 0; q < n; q++) {
        topk_ent e = {key[q * stride], q};
        if (m < k) {
            h[m] = e;
            sift_up(h, m++);
        } else if (ent_before(e, h[0])) {
            h[0] = e;
            sift_down(h, k, 0);
        }
    }
    /* heap sort: the worst goes to the back */
    for (int64_t end = m - 1; end > 0; end--) {
        topk_ent t = h[0];
        h[0] = h[end];
        h[end] = t;
        sift_down(h, end, 0);
    }
}

static lt_status k_top_k(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *kt = lt_k_in(k, 1);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    if (!numeric(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(x->dtype));
    int64_t kk;
    if (kt) {
        if (!lt_dtype_is_int(kt->dtype) || kt->numel != 1 || kt->rank > 1)
            return lt_k_fail(k, LT_ERR_INVALID, "K must be an integer tensor with one element");
        kk = lt_tensor_get_i64(kt, 0);
    } else if (lt_attr_find(k->node, "k")) {
        kk = lt_attr_int(k->node, "k", 0);
    } else {
        return lt_k_fail(k, LT_ERR_INVALID, "K is missing");
    }
    int64_t axis = lt_attr_int(k->node, "axis", -1);
    bool largest = lt_attr_int(k->node, "largest", 1) != 0;
    int a;
    if (!lt_red_axis(axis, x->rank, &a))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int64_t outer, r, inner;
    if (!axis_view(x, a, &outer, &r, &inner))
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    if (kk < 0 || kk > r)
        return lt_k_fail(k, LT_ERR_INVALID, "K = %lld is outside [0, %lld] (the size of axis %d)", (long long)kk,
                         (long long)r, a);
    int64_t odims[LT_MAX_RANK];
    memcpy(odims, x->dims, sizeof(int64_t) * x->rank);
    odims[a] = kk;
    lt_tensor *vals, *idx;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, odims, &vals);
    if (s == LT_OK)
        s = lt_k_out(k, 1, LT_I64, x->rank, odims, &idx);
    if (s != LT_OK || vals->numel == 0)
        return s;
    int nth = omp_get_max_threads();
    uint64_t *key = lt_k_scratch(k, sizeof(uint64_t) * (size_t)x->numel);
    topk_ent *heaps = lt_k_scratch(k, sizeof(topk_ent) * (size_t)kk * (size_t)nth);
    if (!key || !heaps)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    make_keys(x, key, largest);
    size_t es = lt_dtype_size(x->dtype);
    const char *xs = x->data;
    char *vs = vals->data;
    int64_t *is = idx->data, lines = outer * inner;
#pragma omp parallel for schedule(dynamic, 16) if (x->numel > LT_RED_PAR_MIN && lines > 1)
    for (int64_t ln = 0; ln < lines; ln++) {
        int64_t o = ln / inner, i = ln % inner;
        topk_ent *h = heaps + (size_t)kk * (size_t)omp_get_thread_num();
        select_k(key + o * r * inner + i, r, inner, kk, h);
        for (int64_t j = 0; j < kk; j++) {
            int64_t dst = (o * kk + j) * inner + i;
            is[dst] = h[j].idx;
            memcpy(vs + (size_t)dst * es, xs + (size_t)((o * r + h[j].idx) * inner + i) * es, es);
        }
    }
    return LT_OK;
}

/* ---- CumSum ---- */
static lt_status k_cum_sum(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *at = lt_k_in(k, 1);
    if (!x || !at)
        return lt_k_fail(k, LT_ERR_INVALID, "CumSum needs x and axis");
    if (!lt_dtype_is_float(x->dtype) && !lt_dtype_is_int(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(x->dtype));
    if (!lt_dtype_is_int(at->dtype) || at->numel != 1 || at->rank > 1)
        return lt_k_fail(k, LT_ERR_INVALID, "axis must be an integer scalar");
    int64_t axis = lt_tensor_get_i64(at, 0);
    int a;
    if (!lt_red_axis(axis, x->rank, &a))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    bool excl = lt_attr_int(k->node, "exclusive", 0) != 0, rev = lt_attr_int(k->node, "reverse", 0) != 0;
    int64_t outer, r, inner;
    if (!axis_view(x, a, &outer, &r, &inner))
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (s != LT_OK || y->numel == 0)
        return s;
    size_t n = (size_t)x->numel;
    if (x->dtype == LT_F64) {
        cumsum_run_f64(x->data, y->data, outer, r, inner, excl, rev);
    } else if (x->dtype == LT_F32) {
        cumsum_run_f32(x->data, y->data, outer, r, inner, excl, rev);
    } else if (lt_dtype_is_float(x->dtype)) {
        const float *xf = lt_red_load_f32(k, x);
        float *yf = lt_k_scratch(k, sizeof(float) * n);
        if (!xf || !yf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        cumsum_run_f32(xf, yf, outer, r, inner, excl, rev);
        lt_red_store_f32(yf, y);
    } else {
        const int64_t *xi = lt_red_load_i64(k, x, false);
        int64_t *yi = x->dtype == LT_I64 ? y->data : lt_k_scratch(k, sizeof(int64_t) * n);
        if (!xi || !yi)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        cumsum_run_i64(xi, yi, outer, r, inner, excl, rev);
        if (x->dtype != LT_I64)
            for (size_t i = 0; i < n; i++)
                lt_tensor_set_i64(y, (int64_t)i, yi[i]);
    }
    return LT_OK;
}

void lt_cpu_register_reduce_arg(lt_kernel_fn *tab)
{
    tab[LT_OP_ARG_MAX] = k_arg_max;
    tab[LT_OP_ARG_MIN] = k_arg_min;
    tab[LT_OP_TOP_K] = k_top_k;
    tab[LT_OP_CUM_SUM] = k_cum_sum;
}
