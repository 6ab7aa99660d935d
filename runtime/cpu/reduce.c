/* CPU kernels: the Reduce* ops (Sum, Mean, Max, Min, Prod, L1, L2, LogSum,
 * LogSumExp, SumSquare) for every opset: axes as an attribute or (ReduceSum
 * from 13, all from 18) as an input, keepdims, noop_with_empty_axes, empty
 * reductions per the spec. Float types reduce in double through the shared
 * core; integer types reduce exactly in 64-bit integers. Also the family's
 * registrar. */
#include "reduce_util.h"
#include "cpu_features.h"
#include <math.h>
#include <omp.h>
#include <string.h>

typedef enum { RK_SUM, RK_MEAN, RK_MAX, RK_MIN, RK_PROD, RK_L1, RK_L2, RK_LOGSUM, RK_LSE, RK_SUMSQ } rkind;

static const struct {
    int pre, comb;
} rk_core[] = {
    [RK_SUM] = {LT_RED_PRE_ID, LT_RED_ADD},   [RK_MEAN] = {LT_RED_PRE_ID, LT_RED_ADD},
    [RK_MAX] = {LT_RED_PRE_ID, LT_RED_MAX},   [RK_MIN] = {LT_RED_PRE_ID, LT_RED_MIN},
    [RK_PROD] = {LT_RED_PRE_ID, LT_RED_MUL},  [RK_L1] = {LT_RED_PRE_ABS, LT_RED_ADD},
    [RK_L2] = {LT_RED_PRE_SQ, LT_RED_ADD},    [RK_LOGSUM] = {LT_RED_PRE_ID, LT_RED_ADD},
    [RK_LSE] = {LT_RED_PRE_EXP, LT_RED_ADD},  [RK_SUMSQ] = {LT_RED_PRE_SQ, LT_RED_ADD},
};

/* Which axes to reduce: the axes input when given, else the attribute; no
 * axes means all of them, or none with noop_with_empty_axes. */
static lt_status reduce_axes(lt_kctx *k, int rank, bool *mask)
{
    const lt_tensor *at = lt_k_in(k, 1);
    int64_t n = 0;
    const int64_t *attr = NULL;
    if (at) {
        if (!lt_dtype_is_int(at->dtype) || at->rank > 1)
            return lt_k_fail(k, LT_ERR_INVALID, "axes must be a 1-D integer tensor");
        n = at->numel;
    } else {
        int na = 0;
        attr = lt_attr_ints(k->node, "axes", &na);
        n = attr ? na : 0;
    }
    bool all = n == 0 && !lt_attr_int(k->node, "noop_with_empty_axes", 0);
    for (int d = 0; d < rank; d++)
        mask[d] = all;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = at ? lt_tensor_get_i64(at, i) : attr[i];
        int a;
        if (!lt_red_axis(v, rank, &a))
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)v, rank);
        if (mask[a])
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld appears twice", (long long)v);
        mask[a] = true;
    }
    return LT_OK;
}

/* Stores a double into an integer tensor the way a cast would, without the
 * undefined behaviour of converting NaN or out-of-range values. */
static void set_int_from_f64(lt_tensor *y, int64_t j, double v)
{
    int64_t q;
    if (v != v)
        q = 0;
    else if (v >= 9.2233720368547758e18)
        q = INT64_MAX;
    else if (v <= -9.2233720368547758e18)
        q = INT64_MIN;
    else
        q = (int64_t)v;
    lt_tensor_set_i64(y, j, q);
}

/* The smallest and largest value of an integer dtype as the int64 keys of
 * lt_red_load_i64 (uint64 with its top bit flipped). */
static void int_limits(lt_dtype t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case LT_I8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case LT_U8: *lo = 0; *hi = UINT8_MAX; break;
    case LT_I16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case LT_U16: *lo = 0; *hi = UINT16_MAX; break;
    case LT_I32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case LT_U32: *lo = 0; *hi = UINT32_MAX; break;
    case LT_BOOL: *lo = 0; *hi = 1; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

/* Exact integer reductions (wrapping like the fixed-width types do). */
static void reduce_int(const int64_t *x, lt_tensor *y, const lt_red_plan *p, rkind kind, lt_dtype dt)
{
    int64_t nout = p->outer * p->inner, r = p->r, inner = p->inner, lo, hi;
    int_limits(dt, &lo, &hi);
    bool u64 = dt == LT_U64;
    uint64_t flip = u64 ? (uint64_t)1 << 63 : 0;
#pragma omp parallel for schedule(static) if (nout * r > LT_RED_PAR_MIN)
    for (int64_t j = 0; j < nout; j++) {
        const int64_t *px = x + (j / inner) * r * inner + j % inner;
        uint64_t a = 0;
        int64_t m = kind == RK_MAX ? lo : hi;
        switch (kind) {
        case RK_MAX:
            for (int64_t q = 0; q < r; q++)
                m = px[q * inner] > m ? px[q * inner] : m;
            a = (uint64_t)m ^ flip;
            break;
        case RK_MIN:
            for (int64_t q = 0; q < r; q++)
                m = px[q * inner] < m ? px[q * inner] : m;
            a = (uint64_t)m ^ flip;
            break;
        case RK_PROD:
            a = 1;
            for (int64_t q = 0; q < r; q++)
                a *= (uint64_t)px[q * inner];
            break;
        case RK_L1:
            for (int64_t q = 0; q < r; q++) {
                int64_t v = px[q * inner];
                a += (v < 0 && !u64) ? 0 - (uint64_t)v : (uint64_t)v;
            }
            break;
        case RK_SUMSQ:
            for (int64_t q = 0; q < r; q++)
                a += (uint64_t)px[q * inner] * (uint64_t)px[q * inner];
            break;
        default: /* sum, mean */
            for (int64_t q = 0; q < r; q++)
                a += (uint64_t)px[q * inner];
            if (kind == RK_MEAN) /* the mean of nothing is undefined: 0 */
                a = r == 0 ? 0 : u64 ? a / (uint64_t)r : (uint64_t)((int64_t)a / r);
            break;
        }
        lt_tensor_set_i64(y, j, (int64_t)a);
    }
}

static double finish(rkind kind, double a, double shift, int64_t r)
{
    switch (kind) {
    case RK_MEAN: return a / (double)r;
    case RK_L2: return sqrt(a);
    case RK_LOGSUM: return log(a);
    case RK_LSE:
        /* an infinite or NaN max decides alone (exp(inf - inf) would be NaN) */
        return isfinite(shift) ? shift + log(a) : shift;
    default: return a;
    }
}

/* acc[t] = the sum over o < outer of x[o * ld + t], t < len, in double:
 * the columns of a block run side by side in vector lanes. */
#define AROUND_COLS(SUF, ATTR)                                                                               \
    ATTR static void around_cols_##SUF(const float *x, int64_t outer, int64_t ld, int64_t len, double *acc) \
    {                                                                                                        \
        for (int64_t t = 0; t < len; t++)                                                                    \
            acc[t] = 0;                                                                                      \
        for (int64_t o = 0; o < outer; o++) {                                                                \
            const float *r = x + o * ld;                                                                     \
            _Pragma("omp simd") for (int64_t t = 0; t < len; t++) acc[t] += r[t];                            \
        }                                                                                                    \
    }
AROUND_COLS(generic, )
#if defined(__x86_64__) && defined(__GNUC__)
AROUND_COLS(avx512, __attribute__((target("avx512f,prefer-vector-width=512"))))
static bool have_avx512(void) { return lt_cpu_avx512(); }
#else
#define around_cols_avx512 around_cols_generic
static bool have_avx512(void) { return false; }
#endif

/* Columns a block of sum_around_f32 at most (its double sums on the stack). */
#define AROUND_BLOCK 2048

/* Sum or mean of float32 over every axis but one run of kept axes, with
 * reduced axes on both sides (a bias's gradient: [N, C, H, W] summed over
 * N, H, W): the kept index's rows of the inner axes are contiguous, so no
 * permuted copy is needed. Double sums, as the general path. Blocks of
 * whole kept indices are summed down the [outer, kept * inner] columns
 * first, then each index's columns in order, so small inner sizes (a 3x3
 * or 7x7 feature map) vectorise and the sums do not depend on the blocks
 * (nor the thread count); an index of more than AROUND_BLOCK columns sums
 * row by row. False when the shape is not of that form. */
static bool sum_around_f32(const lt_tensor *x, const bool *mask, rkind kind, lt_tensor *y)
{
    int first = -1, last = -1;
    for (int d = 0; d < x->rank; d++)
        if (!mask[d] && x->dims[d] != 1) {
            if (first < 0)
                first = d;
            else if (last != d - 1)
                return false; /* kept axes not in one run */
            last = d;
        }
    if (first < 0)
        return false;
    int64_t outer = 1, kept = 1, inner = 1;
    for (int d = 0; d < x->rank; d++)
        *(d < first ? &outer : d <= last ? &kept : &inner) *= x->dims[d];
    if (outer < 2 || inner < 2)
        return false; /* the general path needs no permute either */
    const float *xf = x->data;
    float *yf = y->data;
    double n = (double)outer * (double)inner;
    bool par = x->numel >= LT_RED_PAR_MIN;
    if (inner <= AROUND_BLOCK) {
        int nth = par ? omp_get_max_threads() : 1;
        int64_t kb = AROUND_BLOCK / inner, share = (kept + nth - 1) / nth;
        kb = kb < share ? kb : share;
        int64_t nblk = (kept + kb - 1) / kb;
        bool wide = have_avx512();
#pragma omp parallel for schedule(static) if (par && nblk > 1)
        for (int64_t q = 0; q < nblk; q++) {
            double acc[AROUND_BLOCK];
            int64_t c0 = q * kb, m = kept - c0 < kb ? kept - c0 : kb;
            if (wide)
                around_cols_avx512(xf + c0 * inner, outer, kept * inner, m * inner, acc);
            else
                around_cols_generic(xf + c0 * inner, outer, kept * inner, m * inner, acc);
            for (int64_t c = 0; c < m; c++) {
                double a = 0;
                for (int64_t e = 0; e < inner; e++)
                    a += acc[c * inner + e];
                yf[c0 + c] = (float)(kind == RK_MEAN ? a / n : a);
            }
        }
        return true;
    }
#pragma omp parallel for schedule(static) if (par && kept > 1)
    for (int64_t c = 0; c < kept; c++) {
        double a = 0;
        for (int64_t o = 0; o < outer; o++) {
            const float *row = xf + (o * kept + c) * inner;
            double s = 0;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < inner; i++)
                s += row[i];
            a += s;
        }
        yf[c] = (float)(kind == RK_MEAN ? a / n : a);
    }
    return true;
}

static lt_status reduce_kernel(lt_kctx *k, rkind kind)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    lt_dtype dt = x->dtype;
    if (!lt_dtype_is_float(dt) && !lt_dtype_is_int(dt) && dt != LT_BOOL)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(dt));
    bool mask[LT_MAX_RANK];
    lt_status s = reduce_axes(k, x->rank, mask);
    if (s != LT_OK)
        return s;
    bool keep = lt_attr_int(k->node, "keepdims", 1) != 0;
    int orank = 0;
    int64_t odims[LT_MAX_RANK];
    for (int d = 0; d < x->rank; d++)
        if (!mask[d])
            odims[orank++] = x->dims[d];
        else if (keep)
            odims[orank++] = 1;
    lt_red_plan p;
    if (!lt_red_plan_make(x->rank, x->dims, mask, &p))
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    /* reducing single elements leaves these ops' values as they are */
    if (p.r == 1 && (kind == RK_SUM || kind == RK_MEAN || kind == RK_MAX || kind == RK_MIN || kind == RK_PROD))
        return lt_k_out_view(k, 0, x, orank, odims);
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, dt, orank, odims, &y)) != LT_OK)
        return s;
    if (y->numel == 0)
        return LT_OK;
    if (dt == LT_F32 && (kind == RK_SUM || kind == RK_MEAN) && sum_around_f32(x, mask, kind, y))
        return LT_OK;
    bool is_int = !lt_dtype_is_float(dt);
    if (is_int && kind != RK_L2 && kind != RK_LOGSUM && kind != RK_LSE) {
        const int64_t *src = lt_red_load_i64(k, x, true);
        if (src && p.permute) {
            int64_t *t = lt_k_scratch(k, sizeof(int64_t) * (size_t)x->numel);
            if (t)
                lt_red_permute(src, t, sizeof(int64_t), p.prank, p.pdims, p.perm);
            src = t;
        }
        if (!src)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        reduce_int(src, y, &p, kind, dt);
        return LT_OK;
    }
    bool f64 = !(dt == LT_F32 || dt == LT_F16 || dt == LT_BF16);
    size_t es = f64 ? sizeof(double) : sizeof(float);
    const void *src = f64 ? (const void *)lt_red_load_f64(k, x) : (const void *)lt_red_load_f32(k, x);
    if (src && p.permute) {
        void *t = lt_k_scratch(k, es * (size_t)x->numel);
        if (t)
            lt_red_permute(src, t, es, p.prank, p.pdims, p.perm);
        src = t;
    }
    int64_t nout = y->numel;
    size_t np = lt_red_part_size(p.outer, p.r, p.inner);
    double *acc = lt_k_scratch(k, sizeof(double) * (size_t)nout);
    double *part = np ? lt_k_scratch(k, sizeof(double) * np) : NULL;
    double *sh = kind == RK_LSE ? lt_k_scratch(k, sizeof(double) * (size_t)nout) : NULL;
    if (!src || !acc || (np && !part) || (kind == RK_LSE && !sh))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    if (kind == RK_LSE) /* shift by the max so that exp cannot overflow */
        lt_red_run(src, f64, p.outer, p.r, p.inner, LT_RED_PRE_ID, LT_RED_MAX, NULL, sh, part);
    lt_red_run(src, f64, p.outer, p.r, p.inner, rk_core[kind].pre, rk_core[kind].comb, sh, acc, part);
    int64_t r = p.r;
    if (dt == LT_F32) {
        float *yf = y->data;
#pragma omp parallel for schedule(static) if (nout > LT_RED_PAR_MIN)
        for (int64_t j = 0; j < nout; j++)
            yf[j] = (float)finish(kind, acc[j], sh ? sh[j] : 0, r);
    } else if (dt == LT_F64) {
        double *yd = y->data;
        for (int64_t j = 0; j < nout; j++)
            yd[j] = finish(kind, acc[j], sh ? sh[j] : 0, r);
    } else {
        for (int64_t j = 0; j < nout; j++) {
            double v = finish(kind, acc[j], sh ? sh[j] : 0, r);
            if (is_int)
                set_int_from_f64(y, j, v);
            else
                lt_tensor_set_f64(y, j, v);
        }
    }
    return LT_OK;
}

static lt_status k_reduce_sum(lt_kctx *k) { return reduce_kernel(k, RK_SUM); }
static lt_status k_reduce_mean(lt_kctx *k) { return reduce_kernel(k, RK_MEAN); }
static lt_status k_reduce_max(lt_kctx *k) { return reduce_kernel(k, RK_MAX); }
static lt_status k_reduce_min(lt_kctx *k) { return reduce_kernel(k, RK_MIN); }
static lt_status k_reduce_prod(lt_kctx *k) { return reduce_kernel(k, RK_PROD); }
static lt_status k_reduce_l1(lt_kctx *k) { return reduce_kernel(k, RK_L1); }
static lt_status k_reduce_l2(lt_kctx *k) { return reduce_kernel(k, RK_L2); }
static lt_status k_reduce_log_sum(lt_kctx *k) { return reduce_kernel(k, RK_LOGSUM); }
static lt_status k_reduce_log_sum_exp(lt_kctx *k) { return reduce_kernel(k, RK_LSE); }
static lt_status k_reduce_sum_square(lt_kctx *k) { return reduce_kernel(k, RK_SUMSQ); }

void lt_cpu_register_reduce(lt_kernel_fn *tab)
{
    tab[LT_OP_REDUCE_SUM] = k_reduce_sum;
    tab[LT_OP_REDUCE_MEAN] = k_reduce_mean;
    tab[LT_OP_REDUCE_MAX] = k_reduce_max;
    tab[LT_OP_REDUCE_MIN] = k_reduce_min;
    tab[LT_OP_REDUCE_PROD] = k_reduce_prod;
    tab[LT_OP_REDUCE_L1] = k_reduce_l1;
    tab[LT_OP_REDUCE_L2] = k_reduce_l2;
    tab[LT_OP_REDUCE_LOG_SUM] = k_reduce_log_sum;
    tab[LT_OP_REDUCE_LOG_SUM_EXP] = k_reduce_log_sum_exp;
    tab[LT_OP_REDUCE_SUM_SQUARE] = k_reduce_sum_square;
    lt_cpu_register_reduce_arg(tab);
    lt_cpu_register_reduce_softmax(tab);
    lt_cpu_register_reduce_loss(tab);
}
