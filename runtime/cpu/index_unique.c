/* CPU kernel: Unique. Elements (or, with axis, slices along the axis) are
 * sorted by a stable merge sort on their positions, equal runs are grouped;
 * outputs follow numpy.unique: Y, first-occurrence indices, inverse indices
 * and counts, in sorted order or (sorted=0) in order of first occurrence. */
#include "index_util.h"

typedef int (*elem_cmp)(const void *base, int64_t a, int64_t b);

#define CMP_NUM(name, T)                                                                                \
    static int name(const void *base, int64_t a, int64_t b)                                           \
    {                                                                                                   \
        T x = ((const T *)base)[a], y = ((const T *)base)[b];                                          \
        return x < y ? -1 : x > y;                                                                      \
    }
CMP_NUM(cmp_i8, int8_t)
CMP_NUM(cmp_u8, uint8_t)
CMP_NUM(cmp_i16, int16_t)
CMP_NUM(cmp_u16, uint16_t)
CMP_NUM(cmp_i32, int32_t)
CMP_NUM(cmp_u32, uint32_t)
CMP_NUM(cmp_i64, int64_t)
CMP_NUM(cmp_u64, uint64_t)
#undef CMP_NUM

/* floats: a total order with NaN after everything (equal to other NaNs) */
static int cmp_dbl(double x, double y)
{
    if (x < y)
        return -1;
    if (x > y)
        return 1;
    return (x != x) - (y != y);
}
static int cmp_f32(const void *base, int64_t a, int64_t b)
{
    return cmp_dbl(((const float *)base)[a], ((const float *)base)[b]);
}
static int cmp_f64(const void *base, int64_t a, int64_t b)
{
    return cmp_dbl(((const double *)base)[a], ((const double *)base)[b]);
}
static int cmp_f16(const void *base, int64_t a, int64_t b)
{
    return cmp_dbl(lt_f16_to_f32(((const uint16_t *)base)[a]), lt_f16_to_f32(((const uint16_t *)base)[b]));
}
static int cmp_bf16(const void *base, int64_t a, int64_t b)
{
    return cmp_dbl(lt_bf16_to_f32(((const uint16_t *)base)[a]), lt_bf16_to_f32(((const uint16_t *)base)[b]));
}
static int cmp_str(const void *base, int64_t a, int64_t b)
{
    const char *x = ((char *const *)base)[a], *y = ((char *const *)base)[b];
    int c = strcmp(x ? x : "", y ? y : "");
    return c < 0 ? -1 : c > 0;
}

static elem_cmp pick_cmp(lt_dtype t)
{
    switch (t) {
    case LT_F32: return cmp_f32;
    case LT_F64: return cmp_f64;
    case LT_F16: return cmp_f16;
    case LT_BF16: return cmp_bf16;
    case LT_I8: return cmp_i8;
    case LT_U8: case LT_BOOL: return cmp_u8;
    case LT_I16: return cmp_i16;
    case LT_U16: return cmp_u16;
    case LT_I32: return cmp_i32;
    case LT_U32: return cmp_u32;
    case LT_I64: return cmp_i64;
    case LT_U64: return cmp_u64;
    case LT_STRING: return cmp_str;
    default: return NULL;
    }
}

/* Slice j is the elements x[o, j, i] for every (o, i), compared in that
 * (row-major) order: numpy moves the axis first and compares rows. */
typedef struct {
    elem_cmp cmp;
    const void *base;
    int64_t n, outer, inner;
} slices;

static int slice_cmp(const slices *s, int64_t a, int64_t b)
{
    if (s->outer == 1 && s->inner == 1) /* flattened: single elements */
        return s->cmp(s->base, a, b);
    for (int64_t o = 0; o < s->outer; o++)
        for (int64_t i = 0; i < s->inner; i++) {
            int64_t off = o * s->n * s->inner + i;
            int c = s->cmp(s->base, off + a * s->inner, off + b * s->inner);
            if (c)
                return c;
        }
    return 0;
}

/* Stable bottom-up merge sort of v[0..n) by slice content. */
static void sort_slices(const slices *s, int64_t *v, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, t = lo;
            while (i < mid && j < hi)
                tmp[t++] = slice_cmp(s, v[j], v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid)
                tmp[t++] = v[i++];
            while (j < hi)
                tmp[t++] = v[j++];
        }
        memcpy(v, tmp, sizeof *v * n);
    }
}

static lt_status k_unique(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input is missing");
    slices s = {pick_cmp(x->dtype), x->data, x->numel, 1, 1};
    if (!s.cmp)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "Unique on %s", lt_dtype_name(x->dtype));
    const lt_attr *aa = lt_attr_find(k->node, "axis");
    int axis = -1;
    if (aa) {
        if (!lt_ix_axis(aa->i, x->rank, &axis))
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)aa->i, x->rank);
        s.n = x->dims[axis];
        s.outer = lt_ix_prod(x->dims, 0, axis);
        s.inner = lt_ix_prod(x->dims, axis + 1, x->rank);
    }
    bool sorted = lt_attr_int(k->node, "sorted", 1) != 0;
    int64_t n = s.n;
    int64_t *ord = lt_ix_scratch(k, n, sizeof(int64_t)), *tmp = lt_ix_scratch(k, n, sizeof(int64_t));
    int64_t *grp = lt_ix_scratch(k, n, sizeof(int64_t)); /* group of each sorted position */
    int64_t *first = lt_ix_scratch(k, n, sizeof(int64_t)), *cnt = lt_ix_scratch(k, n, sizeof(int64_t));
    int64_t *rank = lt_ix_scratch(k, n, sizeof(int64_t)); /* output position of each group */
    if (!ord || !tmp || !grp || !first || !cnt || !rank)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld slices", (long long)n);
    for (int64_t j = 0; j < n; j++)
        ord[j] = j;
    sort_slices(&s, ord, tmp, n);
    /* runs of equal slices; stability makes each run's head its first occurrence */
    int64_t u = 0;
    for (int64_t p = 0; p < n; p++) {
        if (p == 0 || slice_cmp(&s, ord[p - 1], ord[p]) != 0) {
            first[u] = ord[p];
            cnt[u++] = 0;
        }
        grp[p] = u - 1;
        cnt[u - 1]++;
    }
    /* output order: groups as sorted, or by first occurrence */
    for (int64_t g = 0; g < u; g++)
        tmp[g] = g;
    if (!sorted) {
        /* order group ids by first occurrence: first[] values are distinct
         * positions, so a counting pass over positions does it */
        for (int64_t j = 0; j < n; j++)
            rank[j] = -1;
        for (int64_t g = 0; g < u; g++)
            rank[first[g]] = g;
        int64_t o = 0;
        for (int64_t j = 0; j < n; j++)
            if (rank[j] >= 0)
                tmp[o++] = rank[j];
    }
    for (int64_t o = 0; o < u; o++)
        rank[tmp[o]] = o; /* tmp[o]: group at output position o */

    int64_t od[LT_MAX_RANK];
    int r = 1;
    if (aa) {
        r = x->rank;
        for (int d = 0; d < r; d++)
            od[d] = d == axis ? u : x->dims[d];
    } else {
        od[0] = u;
    }
    lt_tensor *y, *t1, *t2, *t3;
    lt_status st = lt_k_out(k, 0, x->dtype, r, od, &y);
    if (st != LT_OK)
        return st;
    size_t es = lt_dtype_size(x->dtype), row = (size_t)s.inner * es;
    const char *xd = x->data;
    char *yd = y->data;
    for (int64_t o = 0; o < s.outer; o++)
        for (int64_t q = 0; q < u; q++)
            memcpy(yd + (size_t)(o * u + q) * row, xd + (size_t)(o * n + first[tmp[q]]) * row, row);
    if (lt_k_want(k, 1)) {
        if ((st = lt_k_out(k, 1, LT_I64, 1, &u, &t1)) != LT_OK)
            return st;
        for (int64_t q = 0; q < u; q++)
            ((int64_t *)t1->data)[q] = first[tmp[q]];
    }
    if (lt_k_want(k, 2)) {
        if ((st = lt_k_out(k, 2, LT_I64, 1, &n, &t2)) != LT_OK)
            return st;
        for (int64_t p = 0; p < n; p++)
            ((int64_t *)t2->data)[ord[p]] = rank[grp[p]];
    }
    if (lt_k_want(k, 3)) {
        if ((st = lt_k_out(k, 3, LT_I64, 1, &u, &t3)) != LT_OK)
            return st;
        for (int64_t q = 0; q < u; q++)
            ((int64_t *)t3->data)[q] = cnt[tmp[q]];
    }
    return LT_OK;
}

void lt_cpu_register_index_unique(lt_kernel_fn *tab)
{
    tab[LT_OP_UNIQUE] = k_unique;
}
