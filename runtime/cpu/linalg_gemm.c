/* Matrix-product plumbing shared by the linalg and rnn kernels: BLAS calls
 * split over OpenMP threads, numpy matmul shapes, float conversions. */
#include "linalg_util.h"
#include "par_pool.h"
#include "par_spread.h"
#include "thread_buf.h"
#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* below this many multiply-adds (about 100 us of work) a product runs on
 * the calling thread: splitting it costs a wake-up and a join (par.h) and
 * packs the shared operand twice */
#define PAR_WORK (1 << 20)

bool lt_linalg_blas_ok(int64_t a, int64_t b, int64_t c)
{
    return a >= 0 && b >= 0 && c >= 0 && a <= INT_MAX && b <= INT_MAX && c <= INT_MAX;
}

/* C = alpha op(A) op(B) + beta C for float32 computed as its transpose
 * C^T = op(B)^T op(A)^T by the packed kernel (AVX-512, or AVX2 without it)
 * into a buffer, then added into C: false when the kernel or the buffer is
 * not there. */
static bool sgemm_by_transpose(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                               int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    float *t = malloc(sizeof(float) * (size_t)(M * N));
    bool ok = t && (lt_sgemm_avx512(!tb, !ta, N, M, K, alpha, B, ldb, A, lda, 0.0f, t, M) ||
                    (lt_sgemm_avx2_here() && lt_sgemm_avx2(!tb, !ta, N, M, K, alpha, B, ldb, A, lda, 0.0f, t, M)));
    if (ok)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                C[i * ldc + j] = (beta == 0 ? 0.0f : beta * C[i * ldc + j]) + t[j * M + i];
    free(t);
    return ok;
}

static void blas(lt_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) {
        /* an empty sum: C = beta * C (BLAS is picky about lda when K is 0) */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                if (dt == LT_F32) {
                    float *c = (float *)C + i * ldc + j;
                    *c = beta == 0 ? 0.0f : (float)beta * *c;
                } else {
                    double *c = (double *)C + i * ldc + j;
                    *c = beta == 0 ? 0.0 : beta * *c;
                }
            }
        return;
    }
    /* M = 1, N = 1 or K = 1 (gemv_avx512.c, gemv_avx2.c): the matrix streamed once, no packing */
    if (dt == LT_F32 && (M == 1 || N == 1 || K == 1) &&
        (lt_sgemv_avx512(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc) ||
         lt_sgemv_avx2(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc)))
        return;
    /* fewer columns than the AVX-512 tile is wide, or one tile's width
     * (the 32 features of a small transformer: no packing of op(A), and
     * more rows per block), the small-product kernel; a transposed A of
     * many rows streams op(B) once per block of rows there, so those
     * stay with the packed kernel */
    /* a narrow product over a transposed A too big for the cache (a
     * weight gradient [M, N < 32] summed over a long batch K): the small
     * kernel re-reads op(A) per block of rows, the packed one computes C^T
     * with its wide side M (2.3x at M 512, N 28, K 3584) */
    if (dt == LT_F32 && ta && N < 32 && M >= 128 && M * K >= ((int64_t)1 << 19) && M * N <= 65536 &&
        sgemm_by_transpose(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc))
        return;
    if (dt == LT_F32 && (N < 32 || (N == 32 && (!ta || M <= 64))) &&
        lt_sgemm_small(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc))
        return;
    if (dt == LT_F32 && lt_sgemm_avx512(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc))
        return;
    /* without AVX-512, the AVX2 kernel (sgemm_avx2.c): ahead of OpenBLAS
     * on a chunk's products (no separate pass over C for beta, op(A) read
     * in place) except the big and the narrow (lt_sgemm_avx2_pays) */
    if (dt == LT_F32 && lt_sgemm_avx2_here() && lt_sgemm_avx2_pays(M, N, K) &&
        lt_sgemm_avx2(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc))
        return;
    /* too few columns for the AVX-512 tile, or the AVX2 one (a weight
     * gradient against a narrow input): C^T = op(B)^T op(A)^T has more */
    if (dt == LT_F32 && N < M && M * N <= 65536 &&
        sgemm_by_transpose(ta, tb, M, N, K, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc))
        return;
    enum CBLAS_TRANSPOSE oa = ta ? CblasTrans : CblasNoTrans, ob = tb ? CblasTrans : CblasNoTrans;
    if (dt == LT_F32)
        cblas_sgemm(CblasRowMajor, oa, ob, (int)M, (int)N, (int)K, (float)alpha, A, (int)lda, B, (int)ldb,
                    (float)beta, C, (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, oa, ob, (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C,
                    (int)ldc);
}

/* chunks in whole AVX-512 tiles where there are enough: the tile's width
 * for columns, and for rows enough that a chunk's packing of the shared
 * operand stays small against its products */
#define NR_UNIT 32
/* A split product's chunks, whatever the thread count: up to GEMM_CHUNKS,
 * enough for four threads to even out their finish when one wakes late or
 * loses its core, each GEMM_MIN_CHUNK long at least where the side allows
 * two, so that the shared operand every chunk packs again (one thread
 * runs them all) stays small against the chunk's products. */
#define GEMM_CHUNKS 8
#define GEMM_MIN_CHUNK 128

/* The cuts of a side of len into equal chunks of whole units (the last
 * may be short): chunk c is [off[c], off[c + 1]); returns the count. The
 * cuts follow from the sizes alone, never from the thread count, so every
 * chunk, and with it the kernel that computes it and the order of its
 * sums, is the same on any number of threads: a product's bits do not
 * depend on them. */
static int gemm_chunks(int64_t len, int64_t unit, int64_t *off)
{
    int64_t units = (len + unit - 1) / unit, want = len / GEMM_MIN_CHUNK;
    want = want < 2 ? 2 : want > GEMM_CHUNKS ? GEMM_CHUNKS : want;
    int n = (int)(units < want ? units : want);
    for (int c = 0; c <= n; c++) {
        int64_t o = units * c / n * unit;
        off[c] = o < len ? o : len;
    }
    return n;
}


/* A split product as a pool job (par_pool.h): chunks taken in turn from
 * `next` by whichever thread is free */
typedef struct gemm_job {
    lt_dtype dt;
    bool ta, tb, rows;
    int64_t M, N, K, lda, ldb, ldc;
    double alpha, beta;
    const void *A, *B;
    void *C;
    const int64_t *off;
    const float *pre; /* op(A) packed for all the column chunks (lt_sgemm_avx2_pack_a), or NULL */
    int nchunks;
    int next;
} gemm_job;

static void gemm_chunks_run(void *ctx)
{
    gemm_job *j = ctx;
    size_t es = j->dt == LT_F32 ? sizeof(float) : sizeof(double);
    for (int c; (c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->nchunks;) {
        int64_t o = j->off[c], n = j->off[c + 1] - o;
        if (j->rows) {
            const char *a = (const char *)j->A + (size_t)(j->ta ? o : o * j->lda) * es;
            blas(j->dt, j->ta, j->tb, n, j->N, j->K, j->alpha, a, j->lda, j->B, j->ldb, j->beta,
                 (char *)j->C + (size_t)(o * j->ldc) * es, j->ldc);
        } else {
            const char *b = (const char *)j->B + (size_t)(j->tb ? o * j->ldb : o) * es;
            if (!j->pre || !lt_sgemm_avx2_prepacked(j->pre, j->M, n, j->K, j->tb, (const float *)b, j->ldb,
                                                    (float)j->beta, (float *)j->C + o, j->ldc))
                blas(j->dt, j->ta, j->tb, j->M, n, j->K, j->alpha, j->A, j->lda, b, j->ldb, j->beta,
                     (char *)j->C + (size_t)o * es, j->ldc);
        }
    }
}

/* op(A) packed once at most this big for a split product's chunks */
#define SHARED_A_BYTES ((int64_t)8 << 20)

/* For a float product split by columns (chunks off[0..n]): op(A) packed
 * once for all the chunks, where each would go to lt_sgemm_avx2 (blas's
 * routing: M, K and the chunk's width above 1, widths above 32 so neither
 * the small kernel nor the transposed product takes it, and
 * lt_sgemm_avx2_pays) and that kernel would pack op(A) in each; NULL
 * otherwise. The chunks' products then read the same packed values, so
 * their bits are unchanged. */
static const float *shared_a(bool ta, int64_t M, int64_t K, float alpha, const float *A, int64_t lda,
                             const int64_t *off, int n)
{
    if (!lt_sgemm_avx2_here() || M < 2 || K < 2 || !lt_sgemm_avx2_packs_a(ta, lda, alpha))
        return NULL;
    for (int c = 0; c < n; c++) {
        int64_t w = off[c + 1] - off[c];
        if (w <= 32 || !lt_sgemm_avx2_pays(M, w, K))
            return NULL;
    }
    int64_t len = lt_sgemm_avx2_packed_a_len(M, K);
    if (len * (int64_t)sizeof(float) > SHARED_A_BYTES)
        return NULL;
    float *pa = lt_thread_buf(LT_THREAD_BUF_SHARED_A, sizeof(float) * (size_t)len);
    return pa && lt_sgemm_avx2_pack_a(ta, M, K, alpha, A, lda, pa) ? pa : NULL;
}

void lt_linalg_gemm(lt_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    if ((double)M * (double)N * (double)K < PAR_WORK || (M < 16 && N < 16)) {
        blas(dt, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* Each chunk packs its part of the split operand and all of the
     * other: split the longer side, so the operand every chunk packs is
     * the smaller one (rows win ties: they keep B shared and hot). One
     * thread runs the same chunks in turn. */
    bool rows = M >= N;
    int64_t len = rows ? M : N, off[GEMM_CHUNKS + 1];
    int nchunks = gemm_chunks(len, dt == LT_F32 && len >= 4 * NR_UNIT ? NR_UNIT : 8, off);
    int nt = lt_pool_threads();
    nt = nt < nchunks ? nt : nchunks;
    gemm_job j = {.dt = dt, .ta = ta, .tb = tb, .rows = rows, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb,
                  .ldc = ldc, .alpha = alpha, .beta = beta, .A = A, .B = B, .C = C, .off = off, .nchunks = nchunks};
    /* chunks of columns share all of op(A): packed once here rather than
     * once a chunk */
    if (!rows && dt == LT_F32)
        j.pre = shared_a(ta, M, K, (float)alpha, A, lda, off, nchunks);
    if (lt_pool_enabled()) {
        lt_pool_run(nt, gemm_chunks_run, &j);
        return;
    }
    /* LANTERN_POOL=0: the same chunks over OpenMP's threads */
    int cpu0 = nt > 1 ? lt_par_cpu() : -1;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        if (omp_get_thread_num() > 0)
            lt_par_leave_cpu(cpu0);
        gemm_chunks_run(&j);
    }
}

void lt_linalg_gemm_batched(lt_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                            const void *A, int64_t lda, const int64_t *offa, const void *B, int64_t ldb,
                            const int64_t *offb, double beta, void *C, int64_t ldc, const int64_t *offc,
                            int64_t nb)
{
    size_t es = dt == LT_F32 ? sizeof(float) : sizeof(double);
    int nt = lt_pool_threads();
    double work = (double)M * (double)N * (double)K * (double)nb;
    /* many small products (attention's per head): the small-product kernel
     * over each thread's contiguous share of the batch, no per-product
     * dispatch */
    bool small = dt == LT_F32 && K > 0 && (double)M * (double)N * (double)K < PAR_WORK && N <= 32;
    if (nt > 1 && nb >= nt && work >= PAR_WORK) {
        /* 2 nt contiguous shares of the batch (fewer where the batch is
         * short) taken in turn, the second thread kept off the first
         * one's CPU (par_spread.h); each product's result is the same
         * whichever thread runs it */
        int64_t nch = nb < 2 * nt ? nb : 2 * nt;
        int cpu0 = lt_par_cpu();
        int64_t next = 0;
#pragma omp parallel num_threads(nt)
        {
            if (omp_get_thread_num() > 0)
                lt_par_leave_cpu(cpu0);
            for (int64_t c; (c = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)) < nch;) {
                int64_t i0 = nb * c / nch, n = nb * (c + 1) / nch - i0;
                if (small && lt_sgemm_small_batched(ta, tb, M, N, K, (float)alpha, A, lda, offa + i0, B, ldb,
                                                    offb + i0, (float)beta, C, ldc, offc + i0, n))
                    continue;
                /* each product as the one-thread path below computes it
                 * (in chunks when it is big): the same bits */
                for (int64_t i = i0; i < i0 + n; i++)
                    lt_linalg_gemm(dt, ta, tb, M, N, K, alpha, (const char *)A + (size_t)offa[i] * es, lda,
                                   (const char *)B + (size_t)offb[i] * es, ldb, beta,
                                   (char *)C + (size_t)offc[i] * es, ldc);
            }
        }
        return;
    }
    if (small && lt_sgemm_small_batched(ta, tb, M, N, K, (float)alpha, A, lda, offa, B, ldb, offb, (float)beta, C,
                                        ldc, offc, nb))
        return;
    for (int64_t i = 0; i < nb; i++)
        lt_linalg_gemm(dt, ta, tb, M, N, K, alpha, (const char *)A + (size_t)offa[i] * es, lda,
                       (const char *)B + (size_t)offb[i] * es, ldb, beta, (char *)C + (size_t)offc[i] * es, ldc);
}

static void dims_str(const lt_tensor *t, char *buf, size_t len)
{
    size_t o = 0;
    o += snprintf(buf + o, len - o, "[");
    for (int i = 0; i < t->rank && o < len; i++)
        o += snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

bool lt_mm_shape_of(const lt_tensor *a, const lt_tensor *b, lt_mm_shape *s, char *why, size_t why_len)
{
    char da_s[128], db_s[128];
    memset(s, 0, sizeof *s);
    int ra = a->rank, rb = b->rank;
    if (ra < 1 || rb < 1) {
        snprintf(why, why_len, "operands must have rank >= 1 (got ranks %d and %d)", ra, rb);
        return false;
    }
    s->M = ra >= 2 ? a->dims[ra - 2] : 1;
    s->K = a->dims[ra - 1];
    int64_t kb = rb >= 2 ? b->dims[rb - 2] : b->dims[0];
    s->N = rb >= 2 ? b->dims[rb - 1] : 1;
    if (s->K != kb) {
        dims_str(a, da_s, sizeof da_s);
        dims_str(b, db_s, sizeof db_s);
        snprintf(why, why_len, "inner dimensions differ: A is %s, B is %s", da_s, db_s);
        return false;
    }
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    s->nbr = ba > bb ? ba : bb;
    for (int i = 0; i < s->nbr; i++) {
        int ia = i - (s->nbr - ba), ib = i - (s->nbr - bb);
        int64_t x = ia >= 0 ? a->dims[ia] : 1, y = ib >= 0 ? b->dims[ib] : 1;
        if (x != y && x != 1 && y != 1) {
            dims_str(a, da_s, sizeof da_s);
            dims_str(b, db_s, sizeof db_s);
            snprintf(why, why_len, "batch dimensions do not broadcast: A is %s, B is %s", da_s, db_s);
            return false;
        }
        s->bdims[i] = x == 1 ? y : x;
    }
    /* strides in whole matrices; a dim of 1 is broadcast (stride 0) */
    int64_t st = 1;
    for (int i = s->nbr - 1; i >= s->nbr - ba; i--) {
        int64_t x = a->dims[i - (s->nbr - ba)];
        s->sa[i] = x == 1 ? 0 : st;
        st *= x;
    }
    st = 1;
    for (int i = s->nbr - 1; i >= s->nbr - bb; i--) {
        int64_t y = b->dims[i - (s->nbr - bb)];
        s->sb[i] = y == 1 ? 0 : st;
        st *= y;
    }
    s->nb = lt_shape_numel(s->nbr, s->bdims);
    int r = 0;
    for (int i = 0; i < s->nbr; i++)
        s->out_dims[r++] = s->bdims[i];
    if (ra >= 2)
        s->out_dims[r++] = s->M;
    if (rb >= 2)
        s->out_dims[r++] = s->N;
    s->out_rank = r;
    if (s->nb < 0 || lt_shape_numel(r, s->out_dims) < 0) {
        snprintf(why, why_len, "output shape overflows");
        return false;
    }
    return true;
}

void lt_mm_batch_index(const lt_mm_shape *s, int64_t i, int64_t *ia, int64_t *ib)
{
    int64_t a = 0, b = 0;
    for (int d = s->nbr - 1; d >= 0; d--) {
        int64_t x = i % s->bdims[d];
        i /= s->bdims[d];
        a += x * s->sa[d];
        b += x * s->sb[d];
    }
    *ia = a;
    *ib = b;
}

const float *lt_linalg_as_f32(lt_kctx *k, const lt_tensor *t)
{
    if (t->dtype == LT_F32)
        return t->data;
    float *o = lt_k_scratch(k, (size_t)t->numel * sizeof(float));
    if (!o)
        return NULL;
    if (t->dtype == LT_F16) {
        const uint16_t *h = t->data;
#pragma omp parallel for if (t->numel > 32768)
        for (int64_t i = 0; i < t->numel; i++)
            o[i] = lt_f16_to_f32(h[i]);
    } else {
#pragma omp parallel for if (t->numel > 32768)
        for (int64_t i = 0; i < t->numel; i++)
            o[i] = (float)lt_tensor_get_f64(t, i);
    }
    return o;
}

const double *lt_linalg_as_f64(lt_kctx *k, const lt_tensor *t)
{
    if (t->dtype == LT_F64)
        return t->data;
    double *o = lt_k_scratch(k, (size_t)t->numel * sizeof(double));
    if (!o)
        return NULL;
#pragma omp parallel for if (t->numel > 32768)
    for (int64_t i = 0; i < t->numel; i++)
        o[i] = lt_tensor_get_f64(t, i);
    return o;
}
