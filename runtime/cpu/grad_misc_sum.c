/* CPU kernel: ReduceSumLike(g, like), the gradient of numpy broadcasting:
 * g summed over its leading extra axes and over the axes where like has
 * size 1, reshaped to like's shape. It follows every broadcasting Add/Mul
 * in training, so float32 has a dedicated path (double accumulators, one
 * pass over g in memory order, OpenMP over input chunks or output ranges);
 * double and the integer types (int64 accumulators, wrapping as Add does)
 * share the loops; float16/bfloat16 go through float32. */
#include "grad_misc_util.h"
#include "reduce_util.h"
#include <omp.h>
#include <string.h>

/* Output columns summed at once by the by-output loop (stack accumulator). */
#define RSL_BLOCK 256
/* An innermost axis shorter than this is walked together with the next. */
#define RSL_SHORT 32

/* g seen as merged axes, each wholly reduced or wholly kept; adjacent axes
 * with the same role are merged and size-1 axes dropped. */
typedef struct {
    int m;
    int64_t d[LT_MAX_RANK];
    bool red[LT_MAX_RANK];
    int64_t gs[LT_MAX_RANK]; /* element strides of g */
    int64_t os[LT_MAX_RANK]; /* output strides, 0 on reduced axes */
    int64_t gn, on;          /* element counts of g and of the output */
    int64_t *roff, nr;       /* by-output loop: offsets of the reduced positions */
} rsl_plan;

/* Start of part t of n equal parts of [0, len), without overflow. */
static int64_t rsl_chunk(int64_t len, int t, int n)
{
    int64_t q = len / n, r = len % n;
    return q * t + (t < r ? t : r);
}

/* Fills p->roff with the offsets of every combination of the reduced axes,
 * leaving out the innermost one (the loops walk that one contiguously). */
static lt_status rsl_offsets(lt_kctx *k, rsl_plan *p)
{
    int ax[LT_MAX_RANK], na = 0, top = p->red[p->m - 1] ? p->m - 1 : p->m;
    int64_t nr = 1;
    for (int a = 0; a < top; a++)
        if (p->red[a]) {
            ax[na++] = a;
            nr *= p->d[a]; /* at most gn, which fits */
        }
    p->nr = nr;
    p->roff = lt_k_scratch(k, sizeof(int64_t) * (size_t)nr);
    if (!p->roff)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory for %lld offsets", (long long)nr);
    int64_t idx[LT_MAX_RANK] = {0}, off = 0;
    for (int64_t r = 0; r < nr; r++) {
        p->roff[r] = off;
        for (int i = na - 1; i >= 0; i--) {
            int a = ax[i];
            off += p->gs[a];
            if (++idx[i] < p->d[a])
                break;
            off -= p->gs[a] * p->d[a];
            idx[i] = 0;
        }
    }
    return LT_OK;
}

#define T float
#define ACC double
#define RS f32
#define RSL_SAME 0
#include "grad_misc_sum_tmpl.h"
#undef T
#undef ACC
#undef RS
#undef RSL_SAME

#define T double
#define ACC double
#define RS f64
#define RSL_SAME 1
#include "grad_misc_sum_tmpl.h"
#undef T
#undef ACC
#undef RS
#undef RSL_SAME

/* integers add in uint64: wrapping is defined there, and truncating the
 * wrapped sum gives the narrower type's wrapped sum */
#define T uint64_t
#define ACC uint64_t
#define RS u64
#define RSL_SAME 1
#include "grad_misc_sum_tmpl.h"
#undef T
#undef ACC
#undef RS
#undef RSL_SAME

/* Lines g up with like from the right. *reduce is false when no axis is
 * summed (the result is g reshaped). */
static lt_status rsl_plan_make(lt_kctx *k, const lt_tensor *g, const lt_tensor *like, rsl_plan *p, bool *reduce)
{
    int rg = g->rank, rl = like->rank;
    /* like may have more axes than g only when the extra ones are 1 */
    for (int i = 0; i < rl - rg; i++)
        if (like->dims[i] != 1)
            return lt_k_fail(k, LT_ERR_RUNTIME, "like (rank %d) cannot be reached from g (rank %d): its dim %d is %lld",
                             rl, rg, i, (long long)like->dims[i]);
    memset(p, 0, sizeof *p);
    *reduce = false;
    int m = 0;
    for (int i = 0; i < rg; i++) {
        int il = i - (rg - rl);
        int64_t G = g->dims[i], L = il >= 0 ? like->dims[il] : 1;
        if (L != G && L != 1)
            return lt_k_fail(k, LT_ERR_RUNTIME, "g dim %d (%lld) does not broadcast from like's %lld", i,
                             (long long)G, (long long)L);
        bool red = L == 1 && G != 1;
        *reduce |= red;
        /* an empty g needs no plan (and its other dims may not multiply) */
        if (G == 1 || g->numel == 0)
            continue;
        if (m > 0 && p->red[m - 1] == red) {
            p->d[m - 1] *= G; /* g is a valid tensor: its numel fits */
        } else {
            p->d[m] = G;
            p->red[m++] = red;
        }
    }
    p->m = m;
    p->gn = g->numel;
    p->on = like->numel;
    int64_t gsz = 1, osz = 1;
    for (int a = m - 1; a >= 0; a--) {
        p->gs[a] = gsz;
        gsz *= p->d[a];
        p->os[a] = p->red[a] ? 0 : osz;
        if (!p->red[a])
            osz *= p->d[a];
    }
    return LT_OK;
}

static lt_status k_reduce_sum_like(lt_kctx *k)
{
    const lt_tensor *g, *like;
    lt_status st = lt_gm_need(k, 0, "g", &g);
    if (st == LT_OK)
        st = lt_gm_need(k, 1, "like", &like);
    if (st != LT_OK)
        return st;
    lt_dtype dt = g->dtype;
    if (!(lt_dtype_is_float(dt) || lt_dtype_is_int(dt)))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported (numeric types only)",
                         lt_dtype_name(dt));
    rsl_plan p;
    bool reduce = false;
    if ((st = rsl_plan_make(k, g, like, &p, &reduce)) != LT_OK)
        return st;
    if (!reduce)
        return lt_k_out_view(k, 0, g, like->rank, like->dims);
    lt_tensor *y;
    if ((st = lt_k_out(k, 0, dt, like->rank, like->dims, &y)) != LT_OK)
        return st;
    if (y->numel == 0)
        return LT_OK;
    if (g->numel == 0) { /* a sum over nothing; zero bits are zero in every numeric type */
        memset(y->data, 0, lt_tensor_nbytes(y));
        return LT_OK;
    }
    switch (dt) {
    case LT_F32:
        return rsl_run_f32(k, g->data, y->data, &p);
    case LT_F64:
        return rsl_run_f64(k, g->data, y->data, &p);
    case LT_F16:
    case LT_BF16: {
        const float *gf = lt_red_load_f32(k, g);
        float *yf = lt_k_scratch(k, sizeof(float) * (size_t)y->numel);
        if (!gf || !yf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        if ((st = rsl_run_f32(k, gf, yf, &p)) == LT_OK)
            lt_red_store_f32(yf, y);
        return st;
    }
    default: {
        const uint64_t *gi = (const uint64_t *)lt_red_load_i64(k, g, false);
        bool direct = dt == LT_I64 || dt == LT_U64;
        uint64_t *yi = direct ? y->data : lt_k_scratch(k, sizeof(uint64_t) * (size_t)y->numel);
        if (!gi || !yi)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        if ((st = rsl_run_u64(k, gi, yi, &p)) == LT_OK && !direct)
            for (int64_t i = 0; i < y->numel; i++)
                lt_tensor_set_i64(y, i, (int64_t)yi[i]);
        return st;
    }
    }
}

void lt_cpu_register_grad_misc_sum(lt_kernel_fn *tab)
{
    tab[LT_OP_REDUCE_SUM_LIKE] = k_reduce_sum_like;
}
