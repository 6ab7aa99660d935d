/* CPU kernels: variadic Max, Min, Sum, Mean (numpy broadcasting across all
 * inputs, folded pairwise into the output) and Clip. */
#include "elementwise_bcast.h"
#include <omp.h>

#define BROW LT_EW_BINARY_ROW
#define L LT_EW_PAR_LIGHT

/* float Max/Min propagate NaN from either side, as numpy does */
LT_EW_FLOATS(BROW, max, LT_EW_SAME, (x != x || x > y) ? x : y)
LT_EW_INTS(BROW, max, LT_EW_SAME, x > y ? x : y)
LT_EW_FLOATS(BROW, min, LT_EW_SAME, (x != x || x < y) ? x : y)
LT_EW_INTS(BROW, min, LT_EW_SAME, x < y ? x : y)
LT_EW_FLOATS(BROW, sum, LT_EW_SAME, x + y)
LT_EW_INTS(BROW, sum, LT_EW_SAME, (ut_t)x + (ut_t)y)
static const lt_ew_row max_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(max)};
static const lt_ew_row min_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(min)};
static const lt_ew_row sum_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(sum)};
static const lt_ew_row mean_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_FLOATS(sum)};

static void scale(void *acc, lt_dtype cd, int64_t n, double f)
{
    if (cd == LT_F32) {
        float *a = acc, g = (float)f;
#pragma omp parallel for simd if (n >= L) schedule(static)
        for (int64_t i = 0; i < n; i++)
            a[i] *= g;
    } else {
        double *a = acc;
#pragma omp parallel for simd if (n >= L) schedule(static)
        for (int64_t i = 0; i < n; i++)
            a[i] *= f;
    }
}

static lt_status variadic(lt_kctx *k, const lt_ew_row *rows, bool mean)
{
    int n = k->nin;
    if (n < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "needs at least one input");
    const lt_tensor *x0 = lt_k_in(k, 0);
    for (int j = 0; j < n; j++) {
        const lt_tensor *t = lt_k_in(k, j);
        if (!t)
            return lt_k_fail(k, LT_ERR_INVALID, "input %d is missing", j);
        if (t->dtype != x0->dtype)
            return lt_k_fail(k, LT_ERR_INVALID, "input %d is %s but input 0 is %s", j, lt_dtype_name(t->dtype),
                             lt_dtype_name(x0->dtype));
    }
    lt_dtype dt = x0->dtype, cd = lt_ew_compute_dtype(rows, dt, false);
    if (cd == LT_UNDEFINED)
        return lt_ew_fail_dtype(k, dt);
    if (n == 1)
        return lt_k_out_view(k, 0, x0, x0->rank, x0->dims);

    /* the output shape: broadcast folded over all inputs */
    lt_ew_bcast bc;
    lt_tensor shape = *x0;
    lt_status s;
    for (int j = 1; j < n; j++) {
        const lt_tensor *pair[2] = {&shape, lt_k_in(k, j)};
        if ((s = lt_ew_bcast_init(k, &bc, 2, pair, -1, NULL)) != LT_OK)
            return s;
        shape.rank = bc.out_rank;
        memcpy(shape.dims, bc.out_dims, sizeof shape.dims);
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, dt, shape.rank, shape.dims, &y)) != LT_OK)
        return s;
    /* acc = in0 op in1, then acc = acc op in_j in place: the accumulator has
     * the output's shape, so each element only reads its own position */
    lt_tensor acc = *y;
    acc.dtype = cd;
    acc.buf = NULL;
    if (cd != dt) {
        acc.data = lt_k_scratch(k, (size_t)y->numel * lt_dtype_size(cd));
        if (!acc.data)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory allocating scratch");
    }
    for (int j = 1; j < n; j++) {
        lt_tensor ca, cb;
        const lt_tensor *a = j == 1 ? x0 : &acc, *b = lt_k_in(k, j);
        if (a->dtype != cd) {
            if ((s = lt_ew_promote(k, a, cd, &ca)) != LT_OK)
                return s;
            a = &ca;
        }
        if (b->dtype != cd) {
            if ((s = lt_ew_promote(k, b, cd, &cb)) != LT_OK)
                return s;
            b = &cb;
        }
        const lt_tensor *pair[2] = {a, b};
        if ((s = lt_ew_bcast_init(k, &bc, 2, pair, acc.rank, acc.dims)) != LT_OK)
            return s;
        const void *ptr[2] = {a->data, b->data};
        lt_ew_bcast_run(&bc, acc.data, lt_dtype_size(cd), ptr, rows[cd], NULL, L);
    }
    if (mean)
        scale(acc.data, cd, acc.numel, 1.0 / n);
    if (acc.data != y->data)
        lt_ew_cast(y->data, dt, acc.data, cd, y->numel);
    return LT_OK;
}

static lt_status k_max(lt_kctx *k) { return variadic(k, max_rows, false); }
static lt_status k_min(lt_kctx *k) { return variadic(k, min_rows, false); }
static lt_status k_sum(lt_kctx *k) { return variadic(k, sum_rows, false); }
static lt_status k_mean(lt_kctx *k) { return variadic(k, mean_rows, true); }

/* ---- Clip: y = min(max(x, lo), hi), so lo > hi gives hi everywhere ---- */
#define CLIP_ROW(name, T)                                                                             \
    static void name(const void *par, int64_t n, void *out, const void *const *in, const int64_t *st) \
    {                                                                                                 \
        const lt_ew_par *p = par;                                                                     \
        T lo, hi;                                                                                     \
        memcpy(&lo, p->lo, sizeof lo);                                                                \
        memcpy(&hi, p->hi, sizeof hi);                                                                \
        const T *x = in[0];                                                                           \
        T *o = out;                                                                                   \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                           \
        {                                                                                             \
            T v = x[i] < lo ? lo : x[i];                                                              \
            o[i] = v > hi ? hi : v;                                                                   \
        }                                                                                             \
    }
CLIP_ROW(clip_f32, float)
CLIP_ROW(clip_f64, double)
CLIP_ROW(clip_i8, int8_t)
CLIP_ROW(clip_i16, int16_t)
CLIP_ROW(clip_i32, int32_t)
CLIP_ROW(clip_i64, int64_t)
CLIP_ROW(clip_u8, uint8_t)
CLIP_ROW(clip_u16, uint16_t)
CLIP_ROW(clip_u32, uint32_t)
CLIP_ROW(clip_u64, uint64_t)
static const lt_ew_row clip_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(clip)};

/* Bound i (1 = min, 2 = max) in dtype cd: from the attribute before opset
 * 11, from the optional scalar input after; absent = the type's extreme. */
static lt_status clip_bound(lt_kctx *k, int i, lt_dtype cd, unsigned char *dst)
{
    double dflt = i == 1 ? -INFINITY : INFINITY;
    if (k->node->opset < 11) {
        float v = lt_attr_float(k->node, i == 1 ? "min" : "max", (float)dflt);
        lt_ew_cast(dst, cd, &v, LT_F32, 1);
        return LT_OK;
    }
    const lt_tensor *t = lt_k_in(k, i);
    if (!t) {
        lt_ew_cast(dst, cd, &dflt, LT_F64, 1);
        return LT_OK;
    }
    if (t->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must be a scalar, got %lld elements", i == 1 ? "min" : "max",
                         (long long)t->numel);
    if (!lt_ew_cast_supported(t->dtype))
        return lt_ew_fail_dtype(k, t->dtype);
    lt_ew_cast(dst, cd, t->data, t->dtype, 1);
    return LT_OK;
}

static lt_status k_clip(lt_kctx *k)
{
    static const lt_ew_op o = {clip_rows, LT_EW_OUT_SAME, false, L};
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    lt_dtype cd = lt_ew_compute_dtype(clip_rows, x->dtype, false);
    if (cd == LT_UNDEFINED)
        return lt_ew_fail_dtype(k, x->dtype);
    lt_ew_par p = {0};
    lt_status s;
    if ((s = clip_bound(k, 1, cd, p.lo)) != LT_OK || (s = clip_bound(k, 2, cd, p.hi)) != LT_OK)
        return s;
    return lt_ew_run(k, &o, &p, 1, &x, cd, x->dtype, x->rank, x->dims);
}

void lt_cpu_register_elementwise_variadic(lt_kernel_fn *tab)
{
    tab[LT_OP_MAX] = k_max;
    tab[LT_OP_MIN] = k_min;
    tab[LT_OP_SUM] = k_sum;
    tab[LT_OP_MEAN] = k_mean;
    tab[LT_OP_CLIP] = k_clip;
}
