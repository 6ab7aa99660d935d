/* Tensor-family helpers: the strided copy engine behind every data-moving
 * shape op, plus small input readers. */
#include "tensor_util.h"
#include <omp.h>
#ifdef __SSE2__
#include <xmmintrin.h>
#endif
#include <string.h>

void lt_tk_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

bool lt_tk_axis(int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

lt_status lt_tk_need(lt_kctx *k, int i, const lt_tensor **t)
{
    *t = lt_k_in(k, i);
    if (!*t)
        return lt_k_fail(k, LT_ERR_INVALID, "input %d is missing or not a tensor", i);
    return LT_OK;
}

lt_status lt_tk_ints(lt_kctx *k, const lt_tensor *t, int64_t *out, int max, int *n, const char *what)
{
    if (!lt_dtype_is_int(t->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "%s must be an integer tensor, got %s", what, lt_dtype_name(t->dtype));
    if (t->rank > 1)
        return lt_k_fail(k, LT_ERR_INVALID, "%s must be 1-D, got rank %d", what, t->rank);
    if (t->numel > max)
        return lt_k_fail(k, LT_ERR_INVALID, "%s has %lld values, at most %d are allowed", what,
                         (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = lt_tensor_get_i64(t, i);
    *n = (int)t->numel;
    return LT_OK;
}

void lt_tk_fill(void *dst, int64_t n, const void *elem, size_t es)
{
    unsigned char *d = dst;
    switch (es) {
    case 1: memset(d, *(const unsigned char *)elem, (size_t)n); return;
    case 2: { uint16_t v; memcpy(&v, elem, 2); for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = v; return; }
    case 4: { uint32_t v; memcpy(&v, elem, 4); for (int64_t i = 0; i < n; i++) ((uint32_t *)d)[i] = v; return; }
    case 8: { uint64_t v; memcpy(&v, elem, 8); for (int64_t i = 0; i < n; i++) ((uint64_t *)d)[i] = v; return; }
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(d + (size_t)i * es, elem, es);
    }
}

/* ---- the strided copy ---- */
typedef struct {
    int r;
    int64_t d[LT_TK_MAX_RANK], ds[LT_TK_MAX_RANK], ss[LT_TK_MAX_RANK];
} plan;

/* The innermost loop: n elements at the given element steps. */
static void run(unsigned char *dst, int64_t dstep, const unsigned char *src, int64_t sstep, int64_t n, size_t es)
{
    if (dstep == 1 && sstep == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
#define RUN(T)                                                                                                  \
    for (int64_t i = 0; i < n; i++)                                                                             \
        ((T *)dst)[i * dstep] = ((const T *)src)[i * sstep];                                                    \
    return;
    switch (es) {
    case 1: RUN(uint8_t)
    case 2: RUN(uint16_t)
    case 4: RUN(uint32_t)
    case 8: RUN(uint64_t)
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + (size_t)(i * dstep) * es, src + (size_t)(i * sstep) * es, es);
    }
#undef RUN
}

/* Rows [lo, hi) of the plan, a row being one pass over the innermost dim.
 * An odometer walks the outer dims so each row costs O(1) on average. */
static void copy_rows(const plan *p, unsigned char *dst, const unsigned char *src, size_t es, int64_t lo, int64_t hi)
{
    int outer = p->r - 1;
    int64_t idx[LT_TK_MAX_RANK], doff = 0, soff = 0, rem = lo;
    for (int a = outer - 1; a >= 0; a--) {
        idx[a] = rem % p->d[a];
        rem /= p->d[a];
        doff += idx[a] * p->ds[a];
        soff += idx[a] * p->ss[a];
    }
    int64_t n = p->d[outer], dstep = p->ds[outer], sstep = p->ss[outer];
#define ROWS(COPY)                                                                                              \
    do {                                                                                                        \
    for (int64_t row = lo; row < hi; row++) {                                                                   \
        COPY;                                                                                                   \
        for (int a = outer - 1; a >= 0; a--) {                                                                  \
            doff += p->ds[a];                                                                                   \
            soff += p->ss[a];                                                                                   \
            if (++idx[a] < p->d[a])                                                                             \
                break;                                                                                          \
            doff -= p->ds[a] * p->d[a];                                                                         \
            soff -= p->ss[a] * p->d[a];                                                                         \
            idx[a] = 0;                                                                                         \
        }                                                                                                       \
    }                                                                                                           \
    return;                                                                                                     \
    } while (0)
    /* short contiguous rows (attention's head split and merge move runs of
     * one head's 8 or 16 floats): copies of a constant size, inlined as a
     * few vector moves instead of a call per row */
    size_t bytes = (size_t)n * es;
    if (dstep == 1 && sstep == 1 && (bytes == 16 || bytes == 32 || bytes == 64)) {
        if (bytes == 16)
            ROWS(memcpy(dst + doff * (int64_t)es, src + soff * (int64_t)es, 16));
        if (bytes == 32)
            ROWS(memcpy(dst + doff * (int64_t)es, src + soff * (int64_t)es, 32));
        ROWS(memcpy(dst + doff * (int64_t)es, src + soff * (int64_t)es, 64));
    }
    ROWS(run(dst + doff * (int64_t)es, dstep, src + soff * (int64_t)es, sstep, n, es));
#undef ROWS
}

#define TILE 16

/* The two innermost dims form a transpose: dst walks the last dim with
 * stride 1 while src walks the one before it with stride 1. Going through
 * TILE x TILE blocks keeps both sides in cache (small tiles: power-of-two
 * strides map a tall tile's lines onto few cache sets). Task t covers one block of
 * one outer slice. */
static void copy_tile(const plan *p, unsigned char *dst, const unsigned char *src, size_t es, int64_t t)
{
    int r = p->r;
    int64_t M = p->d[r - 2], N = p->d[r - 1];
    int64_t tm = (M + TILE - 1) / TILE, tn = (N + TILE - 1) / TILE;
    int64_t bj = t % tn, bi = (t / tn) % tm, o = t / (tn * tm);
    int64_t doff = 0, soff = 0;
    for (int a = r - 3; a >= 0; a--) {
        int64_t ia = o % p->d[a];
        o /= p->d[a];
        doff += ia * p->ds[a];
        soff += ia * p->ss[a];
    }
    int64_t i0 = bi * TILE, i1 = i0 + TILE < M ? i0 + TILE : M;
    int64_t j0 = bj * TILE, j1 = j0 + TILE < N ? j0 + TILE : N;
    int64_t dsi = p->ds[r - 2], ssj = p->ss[r - 1];
#ifdef __SSE2__
    if (es == 4) {
        /* 4x4 register transposes cover the block but for a ragged edge */
        float *d = (float *)dst + doff;
        const float *s = (const float *)src + soff;
        int64_t i4 = i0 + ((i1 - i0) & ~(int64_t)3), j4 = j0 + ((j1 - j0) & ~(int64_t)3);
        for (int64_t j = j0; j < j4; j += 4)
            for (int64_t i = i0; i < i4; i += 4) {
                __m128 r0 = _mm_loadu_ps(s + i + j * ssj), r1 = _mm_loadu_ps(s + i + (j + 1) * ssj);
                __m128 r2 = _mm_loadu_ps(s + i + (j + 2) * ssj), r3 = _mm_loadu_ps(s + i + (j + 3) * ssj);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                _mm_storeu_ps(d + i * dsi + j, r0);
                _mm_storeu_ps(d + (i + 1) * dsi + j, r1);
                _mm_storeu_ps(d + (i + 2) * dsi + j, r2);
                _mm_storeu_ps(d + (i + 3) * dsi + j, r3);
            }
        const uint32_t *su = (const uint32_t *)s;
        uint32_t *du = (uint32_t *)d;
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = i < i4 ? j4 : j0; j < j1; j++)
                du[i * dsi + j] = su[i + j * ssj];
        return;
    }
#endif
#define TBLOCK(T)                                                                                               \
    {                                                                                                           \
        T *d = (T *)dst + doff;                                                                                 \
        const T *s = (const T *)src + soff;                                                                     \
        for (int64_t i = i0; i < i1; i++)                                                                       \
            for (int64_t j = j0; j < j1; j++)                                                                   \
                d[i * dsi + j] = s[i + j * ssj];                                                                \
        return;                                                                                                 \
    }
    switch (es) {
    case 1: TBLOCK(uint8_t)
    case 2: TBLOCK(uint16_t)
    case 4: TBLOCK(uint32_t)
    case 8: TBLOCK(uint64_t)
    default:
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = j0; j < j1; j++)
                memcpy(dst + (size_t)(doff + i * dsi + j) * es, src + (size_t)(soff + i + j * ssj) * es, es);
    }
#undef TBLOCK
}

void lt_tk_copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides, int rank,
                const int64_t *dims, size_t es)
{
    plan p = {0};
    int64_t total = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0)
            return;
        total *= dims[i];
        if (dims[i] == 1)
            continue;
        /* merge into the previous dim when the two walk memory as one */
        if (p.r > 0 && p.ds[p.r - 1] == dst_strides[i] * dims[i] && p.ss[p.r - 1] == src_strides[i] * dims[i]) {
            p.d[p.r - 1] *= dims[i];
            p.ds[p.r - 1] = dst_strides[i];
            p.ss[p.r - 1] = src_strides[i];
            continue;
        }
        p.d[p.r] = dims[i];
        p.ds[p.r] = dst_strides[i];
        p.ss[p.r] = src_strides[i];
        p.r++;
    }
    if (p.r == 0) {
        memcpy(dst, src, es);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    int r = p.r;
    bool par = total >= LT_TK_PAR_MIN;
    if (r >= 2 && p.ds[r - 1] == 1 && p.ss[r - 2] == 1 && p.ss[r - 1] != 1 && p.d[r - 1] >= 4 && p.d[r - 2] >= 4) {
        int64_t tasks = total / (p.d[r - 1] * p.d[r - 2]) * ((p.d[r - 2] + TILE - 1) / TILE) *
                        ((p.d[r - 1] + TILE - 1) / TILE);
#pragma omp parallel for schedule(static) if (par)
        for (int64_t t = 0; t < tasks; t++)
            copy_tile(&p, d, s, es, t);
        return;
    }
    int64_t rows = total / p.d[r - 1];
    if (!par || rows < 2) {
        copy_rows(&p, d, s, es, 0, rows);
        return;
    }
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t lo = rows * id / nt, hi = rows * (id + 1) / nt;
        if (lo < hi)
            copy_rows(&p, d, s, es, lo, hi);
    }
}
