/* The reduce family's shared machinery: the outer x reduced x inner plan of a
 * reduction, axis permutation for reductions over scattered axes, loading
 * data into a compute type, and the parallel reduction core. */
#include "reduce_util.h"
#include <math.h>
#include <string.h>

#define RT float
#define RS f32
#define RT_EXP lt_red_expf
#include "reduce_tmpl.h"
#undef RT
#undef RS
#undef RT_EXP

#define RT double
#define RS f64
#define RT_EXP exp
#include "reduce_tmpl.h"
#undef RT
#undef RS
#undef RT_EXP

/* ---- plan ---- */
bool lt_red_plan_make(int rank, const int64_t *dims, const bool *mask, lt_red_plan *p)
{
    memset(p, 0, sizeof *p);
    /* merge runs of kept / reduced axes; size-1 axes belong to either */
    int64_t sd[LT_MAX_RANK];
    bool sr[LT_MAX_RANK];
    int ns = 0, nr = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (ns > 0 && sr[ns - 1] == mask[d]) {
            if (__builtin_mul_overflow(sd[ns - 1], dims[d], &sd[ns - 1]))
                return false;
        } else {
            sd[ns] = dims[d];
            sr[ns++] = mask[d];
            nr += mask[d];
        }
    }
    p->outer = p->r = p->inner = 1;
    if (nr <= 1) {
        int d = 0;
        for (; d < ns && !sr[d]; d++)
            if (__builtin_mul_overflow(p->outer, sd[d], &p->outer))
                return false;
        if (d < ns)
            p->r = sd[d++];
        for (; d < ns; d++)
            if (__builtin_mul_overflow(p->inner, sd[d], &p->inner))
                return false;
        return true;
    }
    p->permute = true;
    p->prank = ns;
    int j = 0;
    for (int d = 0; d < ns; d++) {
        p->pdims[d] = sd[d];
        if (!sr[d]) {
            p->perm[j++] = d;
            if (__builtin_mul_overflow(p->outer, sd[d], &p->outer))
                return false;
        }
    }
    for (int d = 0; d < ns; d++)
        if (sr[d]) {
            p->perm[j++] = d;
            if (__builtin_mul_overflow(p->r, sd[d], &p->r))
                return false;
        }
    return true;
}

/* ---- permutation ---- */
/* Walks the permuted index space row by row (rows = all axes but the last);
 * gather copies orig -> permuted, scatter copies permuted -> orig. */
static void permute_copy(const void *src, void *dst, size_t es, int rank, const int64_t *dims, const int *perm,
                         bool gather)
{
    if (rank <= 0 || rank > LT_MAX_RANK) {
        if (rank == 0)
            memcpy(dst, src, es);
        return;
    }
    int64_t st[LT_MAX_RANK], pd[LT_MAX_RANK], ps[LT_MAX_RANK], numel = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = numel;
        numel *= dims[d];
    }
    for (int j = 0; j < rank; j++) {
        pd[j] = dims[perm[j]];
        ps[j] = st[perm[j]];
    }
    int64_t last = pd[rank - 1], lstride = ps[rank - 1];
    if (numel == 0)
        return;
    int64_t rows = numel / last;
    const char *s = src;
    char *t = dst;
#pragma omp parallel for schedule(static) if (numel > LT_RED_PAR_MIN)
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, off = 0;
        for (int j = rank - 2; j >= 0; j--) {
            off += (rem % pd[j]) * ps[j];
            rem /= pd[j];
        }
        int64_t base = row * last;
        if (es == 4) {
            const uint32_t *a = (const uint32_t *)s;
            uint32_t *b = (uint32_t *)t;
            if (gather)
                for (int64_t e = 0; e < last; e++)
                    b[base + e] = a[off + e * lstride];
            else
                for (int64_t e = 0; e < last; e++)
                    b[off + e * lstride] = a[base + e];
        } else if (es == 8) {
            const uint64_t *a = (const uint64_t *)s;
            uint64_t *b = (uint64_t *)t;
            if (gather)
                for (int64_t e = 0; e < last; e++)
                    b[base + e] = a[off + e * lstride];
            else
                for (int64_t e = 0; e < last; e++)
                    b[off + e * lstride] = a[base + e];
        } else {
            for (int64_t e = 0; e < last; e++) {
                int64_t p = base + e, o = off + e * lstride;
                if (gather)
                    memcpy(t + p * es, s + o * es, es);
                else
                    memcpy(t + o * es, s + p * es, es);
            }
        }
    }
}

void lt_red_permute(const void *src, void *dst, size_t es, int rank, const int64_t *dims, const int *perm)
{
    permute_copy(src, dst, es, rank, dims, perm, true);
}

void lt_red_unpermute(const void *src, void *dst, size_t es, int rank, const int64_t *dims, const int *perm)
{
    permute_copy(src, dst, es, rank, dims, perm, false);
}

/* ---- loading into a compute type ---- */
const float *lt_red_load_f32(lt_kctx *k, const lt_tensor *t)
{
    if (t->dtype == LT_F32)
        return t->data;
    float *p = lt_k_scratch(k, sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (!p)
        return NULL;
    const uint16_t *h = t->data;
    int64_t n = t->numel;
    if (t->dtype == LT_F16) {
#pragma omp parallel for if (n > LT_RED_PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            p[i] = lt_f16_to_f32(h[i]);
    } else if (t->dtype == LT_BF16) {
#pragma omp parallel for if (n > LT_RED_PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            p[i] = lt_bf16_to_f32(h[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            p[i] = (float)lt_tensor_get_f64(t, i);
    }
    return p;
}

const double *lt_red_load_f64(lt_kctx *k, const lt_tensor *t)
{
    if (t->dtype == LT_F64)
        return t->data;
    double *p = lt_k_scratch(k, sizeof(double) * (size_t)(t->numel ? t->numel : 1));
    if (!p)
        return NULL;
    int64_t n = t->numel;
    if (t->dtype == LT_F32) {
        const float *f = t->data;
        for (int64_t i = 0; i < n; i++)
            p[i] = f[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            p[i] = lt_tensor_get_f64(t, i);
    }
    return p;
}

const int64_t *lt_red_load_i64(lt_kctx *k, const lt_tensor *t, bool flip_u64)
{
    if (t->dtype == LT_I64)
        return t->data;
    int64_t *p = lt_k_scratch(k, sizeof(int64_t) * (size_t)(t->numel ? t->numel : 1));
    if (!p)
        return NULL;
    int64_t n = t->numel;
    if (t->dtype == LT_I32) {
        const int32_t *s = t->data;
        for (int64_t i = 0; i < n; i++)
            p[i] = s[i];
    } else {
        uint64_t flip = (t->dtype == LT_U64 && flip_u64) ? (uint64_t)1 << 63 : 0;
        for (int64_t i = 0; i < n; i++)
            p[i] = (int64_t)((uint64_t)lt_tensor_get_i64(t, i) ^ flip);
    }
    return p;
}

void lt_red_store_f32(const float *src, lt_tensor *dst)
{
    int64_t n = dst->numel;
    switch (dst->dtype) {
    case LT_F32:
        if (dst->data != src)
            memcpy(dst->data, src, sizeof(float) * (size_t)n);
        break;
    case LT_F16: {
        uint16_t *h = dst->data;
#pragma omp parallel for if (n > LT_RED_PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            h[i] = lt_f32_to_f16(src[i]);
        break;
    }
    case LT_BF16: {
        uint16_t *h = dst->data;
#pragma omp parallel for if (n > LT_RED_PAR_MIN)
        for (int64_t i = 0; i < n; i++)
            h[i] = lt_f32_to_bf16(src[i]);
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            lt_tensor_set_f64(dst, i, src[i]);
        break;
    }
}

/* ---- the reduction core ---- */
#define RED_IB 4096     /* inner elements one task handles: whole rows stream */
#define RED_CHUNK 16384 /* fewest elements of a task when r is split */
#define RED_MAXC 64     /* most chunks r is split into */

typedef struct {
    int64_t ib, nib, rc, nrc;
} red_split;

/* The task grid depends on the shape only, never on the thread count, so a
 * result is the same bits however many threads run it. */
static red_split split_of(int64_t outer, int64_t r, int64_t inner)
{
    red_split s;
    s.ib = inner < RED_IB ? inner : RED_IB;
    s.nib = s.ib ? (inner + s.ib - 1) / s.ib : 0;
    s.rc = r;
    s.nrc = 1;
    /* few outputs and long reductions: split r so that threads share it */
    if (s.ib && outer * s.nib < RED_MAXC && (double)r * (double)s.ib > 2.0 * RED_CHUNK) {
        int64_t rc = (RED_CHUNK + s.ib - 1) / s.ib, cap = (r + RED_MAXC - 1) / RED_MAXC;
        s.rc = rc > cap ? rc : cap;
        s.nrc = (r + s.rc - 1) / s.rc;
    }
    return s;
}

size_t lt_red_part_size(int64_t outer, int64_t r, int64_t inner)
{
    red_split s = split_of(outer, r, inner);
    return s.nrc > 1 ? (size_t)(outer * s.nrc * inner) : 0;
}

static double identity_of(int comb)
{
    switch (comb) {
    case LT_RED_MUL: return 1;
    case LT_RED_MAX: return -INFINITY;
    case LT_RED_MIN: return INFINITY;
    default: return 0;
    }
}

static double combine(int comb, double a, double v)
{
    switch (comb) {
    case LT_RED_MUL: return a * v;
    case LT_RED_MAX: return (v > a || v != v) ? v : a;
    case LT_RED_MIN: return (v < a || v != v) ? v : a;
    default: return a + v;
    }
}

void lt_red_run(const void *x, bool is_f64, int64_t outer, int64_t r, int64_t inner, int pre, int comb,
                const double *sh, double *acc, double *part)
{
    if (outer == 0 || inner == 0)
        return;
    double (*row)(const void *, int64_t, int, int, double) = is_f64 ? row_f64 : row_f32;
    void (*vec)(const void *, int64_t, int, int, const double *, double *) = is_f64 ? vec_f64 : vec_f32;
    size_t es = is_f64 ? sizeof(double) : sizeof(float);
    const char *xb = x;
    red_split s = split_of(outer, r, inner);
    int64_t ntask = outer * s.nib * s.nrc;
    double work = (double)outer * (double)r * (double)inner;
    double id = identity_of(comb);
#pragma omp parallel for schedule(static) if (work > LT_RED_PAR_MIN && ntask > 1)
    for (int64_t t = 0; t < ntask; t++) {
        int64_t c = t % s.nrc, b = (t / s.nrc) % s.nib, o = t / (s.nrc * s.nib);
        int64_t r0 = c * s.rc, r1 = r0 + s.rc < r ? r0 + s.rc : r;
        int64_t i0 = b * s.ib, len = inner - i0 < s.ib ? inner - i0 : s.ib;
        double *dst = s.nrc == 1 ? acc + o * inner + i0 : part + (o * s.nrc + c) * inner + i0;
        const double *shp = sh ? sh + o * inner + i0 : NULL;
        if (inner == 1) {
            dst[0] = row(xb + (size_t)(o * r + r0) * es, r1 - r0, pre, comb, shp ? shp[0] : 0);
        } else {
            for (int64_t i = 0; i < len; i++)
                dst[i] = id;
            for (int64_t rr = r0; rr < r1; rr++)
                vec(xb + (size_t)((o * r + rr) * inner + i0) * es, len, pre, comb, shp, dst);
        }
    }
    if (s.nrc > 1) {
        int64_t nout = outer * inner;
#pragma omp parallel for schedule(static) if (nout * s.nrc > LT_RED_PAR_MIN)
        for (int64_t j = 0; j < nout; j++) {
            int64_t o = j / inner, i = j % inner;
            double a = id;
            for (int64_t c = 0; c < s.nrc; c++)
                a = combine(comb, a, part[(o * s.nrc + c) * inner + i]);
            acc[j] = a;
        }
    }
}
