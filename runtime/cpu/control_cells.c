/* Accumulation cells (the paper's `ref` + `+=`): AccZerosLike makes a fresh
 * zeroed cell shaped like its input, AccAdd adds into it in place (cells are
 * never shared: only AccZerosLike creates one), AccGemm adds a matrix
 * product into it, AccRead returns a copy of its contents (the cell's own
 * storage when the memory plan has it die there).
 *
 * Deferred products. A loop body's weight gradient arrives once per
 * iteration as a product of small rank (AccGemm with K the batch, 1 for a
 * TreeLSTM's node: a rank-1 update that reads and writes the whole
 * weight-sized cell, from memory once the cell outgrows the cache). A
 * large float matrix cell made on the host keeps such products pending:
 * op(A)'s columns (times alpha) and op(B)'s rows go to two buffers, and
 * their product joins the cell as one GEMM when the buffers are full or
 * the cell is read (AccRead). AccAdd and products of larger rank go into
 * the cell itself: the sum is the same but for rounding. Products are
 * deferred only into a cell that nothing but cell ops read (AccAdd,
 * AccGemm, AccRead, and Calls handing it to those): the module is checked
 * once per cell, at its first small product. */
#include "../backend.h"
#include "../runtime.h"
#include "control_cells.h"
#include "cpu_features.h"
#include "linalg_util.h"
#include "par.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CELL_X86 1
#endif

/* cells of at least this many elements defer products of rank at most
 * CELL_DEFER_K (cell_kcap says how many ranks wait) */
#define CELL_DEFER_MIN 65536
#define CELL_DEFER_K 8
#define CELL_PEND_BYTES ((int64_t)1 << 20)
#define CELL_PEND_MAXK 128
/* where the module walk gives up (a cell reaching this many values through
 * Calls is not deferred into) */
#define CELL_WALK_MAX 32

typedef struct acc_cell {
    lt_buf b;              /* the cell tensor's buffer; data is inner's */
    lt_buf *inner;         /* the storage AccZerosLike was given */
    const lt_module *m;    /* the module whose AccZerosLike made it */
    const lt_ival *origin; /* that node's output */
    int readers_ok;        /* -1 not checked yet, 0 read by other ops, 1 only by cell ops */
    lt_dtype dt;
    int64_t M, N;
    int64_t kp, kcap; /* pending ranks, room */
    lt_buf *fa, *fb;  /* [kcap, M] alpha op(A) columns, [kcap, N] op(B) rows */
} acc_cell;

static uint64_t deferred_count;

uint64_t lt_cells_deferred(void) { return __atomic_load_n(&deferred_count, __ATOMIC_RELAXED); }

static void acc_cell_release(lt_buf *b)
{
    acc_cell *c = (acc_cell *)b;
    lt_buf_release(c->inner);
    lt_buf_release(c->fa);
    lt_buf_release(c->fb);
    free(c);
}

static acc_cell *cell_of(const lt_tensor *t)
{
    return t->buf && t->buf->release == acc_cell_release ? (acc_cell *)t->buf : NULL;
}

/* cell += fa^T fb; nothing pending after */
static void cell_flush(acc_cell *c, void *data)
{
    if (c->kp == 0)
        return;
    lt_linalg_gemm(c->dt, true, false, c->M, c->N, c->kp, 1.0, c->fa->data, c->M, c->fb->data, c->N, 1.0, data,
                   c->N);
    c->kp = 0;
}

/* ---- which ops read a cell ---- */

typedef struct walk {
    const lt_module *m;
    const lt_ival *v[CELL_WALK_MAX];
    int n;
    bool bad;
} walk;

static void walk_add(walk *w, const lt_ival *v)
{
    for (int i = 0; i < w->n; i++)
        if (w->v[i] == v)
            return;
    if (w->n == CELL_WALK_MAX)
        w->bad = true;
    else
        w->v[w->n++] = v;
}

/* every read of t in b (and the blocks nested in it) */
static void walk_block(walk *w, const lt_block *b, const lt_ival *t)
{
    for (int j = 0; j < b->nresults && !w->bad; j++)
        if (b->results[j] == t)
            w->bad = true;
    for (int i = 0; i < b->nnodes && !w->bad; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin && !w->bad; j++) {
            if (n->in[j] != t)
                continue;
            switch (n->op) {
            case LT_OP_ACC_ADD:
            case LT_OP_ACC_GEMM:
                w->bad = j != 0;
                break;
            case LT_OP_ACC_READ:
                break;
            case LT_OP_CALL: {
                int64_t fi = lt_attr_int(n, "callee", -1);
                const lt_block *f = fi >= 0 && fi < w->m->nfuncs ? w->m->funcs[fi]->body : NULL;
                if (f && j < f->nparams)
                    walk_add(w, f->params[j]);
                else
                    w->bad = true;
                break;
            }
            default:
                w->bad = true;
            }
        }
        for (int r = 0; r < n->nregions && !w->bad; r++)
            walk_block(w, n->regions[r], t);
    }
}

/* whether only cell ops read the cell made as `origin`, through Calls too */
static bool readers_ok(const lt_module *m, const lt_ival *origin)
{
    walk w = {.m = m};
    walk_add(&w, origin);
    for (int i = 0; i < w.n && !w.bad; i++) {
        walk_block(&w, m->main, w.v[i]);
        for (int f = 0; f < m->nfuncs && !w.bad; f++)
            walk_block(&w, m->funcs[f]->body, w.v[i]);
    }
    return !w.bad;
}

/* ---- kernels ---- */

static lt_status op_acc_zeros_like(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a tensor");
    lt_tensor *o;
    lt_status s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &o);
    if (s != LT_OK)
        return s;
    memset(o->data, 0, lt_tensor_nbytes(o));
    /* a host matrix cell large enough for deferred products; without the
     * wrapper (out of memory) products simply go in at once */
    const lt_module *m = lt_k_module(k);
    if ((!k->be || k->be->host) && o->buf && !o->buf->be && o->data == o->buf->data && o->rank == 2 &&
        (o->dtype == LT_F32 || o->dtype == LT_F64) && o->numel >= CELL_DEFER_MIN && m && k->node->out[0]) {
        acc_cell *c = calloc(1, sizeof *c);
        if (c) {
            c->b = *o->buf;
            c->b.refs = 1;
            c->b.release = acc_cell_release;
            c->inner = o->buf;
            c->m = m;
            c->origin = k->node->out[0];
            c->readers_ok = -1;
            c->dt = o->dtype;
            c->M = o->dims[0];
            c->N = o->dims[1];
            o->buf = &c->b;
        }
    }
    return LT_OK;
}

#ifdef CELL_X86
/* d += a, 64 floats at a time; blocks of a that are all zeros leave d as
 * it is (d + 0 == d for every d a cell holds: it starts at +0, and sums
 * that start at +0 never reach -0) */
__attribute__((target("avx512f"))) static void add_f32_avx512(float *d, const float *a, int64_t n)
{
    const __m512 z = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 a0 = _mm512_loadu_ps(a + i), a1 = _mm512_loadu_ps(a + i + 16), a2 = _mm512_loadu_ps(a + i + 32),
               a3 = _mm512_loadu_ps(a + i + 48);
        __mmask16 nz = _mm512_cmp_ps_mask(a0, z, _CMP_NEQ_UQ) | _mm512_cmp_ps_mask(a1, z, _CMP_NEQ_UQ) |
                       _mm512_cmp_ps_mask(a2, z, _CMP_NEQ_UQ) | _mm512_cmp_ps_mask(a3, z, _CMP_NEQ_UQ);
        if (!nz)
            continue;
        _mm512_storeu_ps(d + i, _mm512_add_ps(_mm512_loadu_ps(d + i), a0));
        _mm512_storeu_ps(d + i + 16, _mm512_add_ps(_mm512_loadu_ps(d + i + 16), a1));
        _mm512_storeu_ps(d + i + 32, _mm512_add_ps(_mm512_loadu_ps(d + i + 32), a2));
        _mm512_storeu_ps(d + i + 48, _mm512_add_ps(_mm512_loadu_ps(d + i + 48), a3));
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 av = _mm512_maskz_loadu_ps(m, a + i);
        _mm512_mask_storeu_ps(d + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + i), av));
    }
}

/* the same with AVX2, 32 floats at a time, the last ones one by one
 * (blocks of zeros skipped alike: the sums are the same bits) */
__attribute__((target("avx2"))) static void add_f32_avx2(float *d, const float *a, int64_t n)
{
    const __m256 z = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 a0 = _mm256_loadu_ps(a + i), a1 = _mm256_loadu_ps(a + i + 8), a2 = _mm256_loadu_ps(a + i + 16),
               a3 = _mm256_loadu_ps(a + i + 24);
        __m256 nz = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(a0, z, _CMP_NEQ_UQ), _mm256_cmp_ps(a1, z, _CMP_NEQ_UQ)),
                                 _mm256_or_ps(_mm256_cmp_ps(a2, z, _CMP_NEQ_UQ), _mm256_cmp_ps(a3, z, _CMP_NEQ_UQ)));
        if (_mm256_testz_ps(nz, nz))
            continue;
        _mm256_storeu_ps(d + i, _mm256_add_ps(_mm256_loadu_ps(d + i), a0));
        _mm256_storeu_ps(d + i + 8, _mm256_add_ps(_mm256_loadu_ps(d + i + 8), a1));
        _mm256_storeu_ps(d + i + 16, _mm256_add_ps(_mm256_loadu_ps(d + i + 16), a2));
        _mm256_storeu_ps(d + i + 24, _mm256_add_ps(_mm256_loadu_ps(d + i + 24), a3));
    }
    for (; i < n; i++)
        d[i] += a[i];
}
#endif

static void add_f32(float *d, const float *a, int64_t n)
{
#ifdef CELL_X86
    if (lt_cpu_avx512()) {
        add_f32_avx512(d, a, n);
        return;
    }
    if (lt_cpu_avx2()) {
        add_f32_avx2(d, a, n);
        return;
    }
#endif
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        d[i] += a[i];
}

static lt_status op_acc_add(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0), *v = lt_k_in(k, 1);
    if (!c || !v || c->dtype != v->dtype || c->numel != v->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cell and contribution differ in type or size");
    lt_tensor *cell = (lt_tensor *)c; /* cells are updated in place by design */
    int64_t n = c->numel;
    switch (c->dtype) {
    case LT_F32: {
        float *d = cell->data;
        const float *a = v->data;
        if (n <= LT_PAR_ELEMS) {
            add_f32(d, a, n);
            break;
        }
        /* 64-element pieces: each thread's part starts on a block */
#pragma omp parallel
        {
            int nt = omp_get_num_threads(), id = omp_get_thread_num();
            int64_t nb = (n + 63) / 64, b0 = nb * id / nt, b1 = nb * (id + 1) / nt;
            int64_t i0 = b0 * 64, i1 = b1 * 64 < n ? b1 * 64 : n;
            if (i1 > i0)
                add_f32(d + i0, a + i0, i1 - i0);
        }
        break;
    }
    case LT_F64: {
        double *d = cell->data;
        const double *a = v->data;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            d[i] += a[i];
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            lt_tensor_set_f64(cell, i, lt_tensor_get_f64(c, i) + lt_tensor_get_f64(v, i));
    }
    return LT_OK;
}

/* Pending ranks a [M, N] cell keeps: CELL_PEND_BYTES of buffers, at most
 * CELL_PEND_MAXK ranks and at most half the cell's own size (a product of
 * a thin cell, [1, N], is as large as the cell: nothing to save); below
 * CELL_DEFER_K products go in at once. */
static int64_t cell_kcap(int64_t M, int64_t N, size_t es)
{
    int64_t cap = CELL_PEND_BYTES / ((M + N) * (int64_t)es), half = M * N / (2 * (M + N));
    if (cap > CELL_PEND_MAXK)
        cap = CELL_PEND_MAXK;
    if (cap > half)
        cap = half;
    return cap;
}

/* Appends alpha op(A) (columns) and op(B) (rows) of rank K to the cell's
 * pending product; false when it cannot (buffers out of memory). */
static bool cell_defer(acc_cell *c, void *data, bool ta, bool tb, int64_t K, double alpha, const lt_tensor *a,
                       const lt_tensor *b)
{
    size_t es = c->dt == LT_F64 ? sizeof(double) : sizeof(float);
    if (!c->fa) {
        c->kcap = cell_kcap(c->M, c->N, es);
        c->fa = lt_buf_alloc(es * (size_t)(c->kcap * c->M));
        c->fb = lt_buf_alloc(es * (size_t)(c->kcap * c->N));
        if (!c->fa || !c->fb) {
            lt_buf_release(c->fa);
            lt_buf_release(c->fb);
            c->fa = c->fb = NULL;
            return false;
        }
    }
    if (c->kp + K > c->kcap)
        cell_flush(c, data);
    int64_t M = c->M, N = c->N, lda = a->dims[1], ldb = b->dims[1];
    for (int64_t kk = 0; kk < K; kk++) {
        int64_t r = c->kp + kk;
        if (c->dt == LT_F64) {
            const double *A = a->data, *B = b->data;
            double *fa = (double *)c->fa->data + r * M, *fb = (double *)c->fb->data + r * N;
            for (int64_t i = 0; i < M; i++)
                fa[i] = alpha * (ta ? A[kk * lda + i] : A[i * lda + kk]);
            for (int64_t j = 0; j < N; j++)
                fb[j] = tb ? B[j * ldb + kk] : B[kk * ldb + j];
        } else {
            const float *A = a->data, *B = b->data;
            float *fa = (float *)c->fa->data + r * M, *fb = (float *)c->fb->data + r * N;
            float al = (float)alpha;
            for (int64_t i = 0; i < M; i++)
                fa[i] = al * (ta ? A[kk * lda + i] : A[i * lda + kk]);
            for (int64_t j = 0; j < N; j++)
                fb[j] = tb ? B[j * ldb + kk] : B[kk * ldb + j];
        }
    }
    c->kp += K;
    __atomic_add_fetch(&deferred_count, 1, __ATOMIC_RELAXED);
    return true;
}

lt_status lt_acc_gemm_args(lt_kctx *k, lt_acc_gemm *g)
{
    const lt_tensor *c = lt_k_in(k, 0), *a = lt_k_in(k, 1), *b = lt_k_in(k, 2);
    if (!c || !a || !b || a->rank != 2 || b->rank != 2 || c->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a matrix cell and two matrices");
    if ((c->dtype != LT_F32 && c->dtype != LT_F64) || a->dtype != c->dtype || b->dtype != c->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cell and operands must all be float32 or all float64");
    bool ta = lt_attr_int(k->node, "transA", 0) != 0, tb = lt_attr_int(k->node, "transB", 0) != 0;
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], N = tb ? b->dims[0] : b->dims[1];
    if (K != kb || M != c->dims[0] || N != c->dims[1])
        return lt_k_fail(k, LT_ERR_RUNTIME, "op(A) [%lld,%lld] times op(B) [%lld,%lld] does not fit the cell [%lld,%lld]",
                         (long long)M, (long long)K, (long long)kb, (long long)N, (long long)c->dims[0],
                         (long long)c->dims[1]);
    *g = (lt_acc_gemm){.c = c, .a = a, .b = b, .ta = ta, .tb = tb, .alpha = lt_attr_float(k->node, "alpha", 1.0f),
                       .M = M, .N = N, .K = K};
    return LT_OK;
}

/* cell [M, N] += alpha op(A) op(B), with Gemm's transA / transB */
static lt_status op_acc_gemm(lt_kctx *k)
{
    lt_acc_gemm g;
    lt_status gs = lt_acc_gemm_args(k, &g);
    if (gs != LT_OK)
        return gs;
    const lt_tensor *c = g.c, *a = g.a, *b = g.b;
    bool ta = g.ta, tb = g.tb;
    double alpha = g.alpha;
    int64_t M = g.M, N = g.N, K = g.K;
    if (!lt_linalg_blas_ok(M, N, K))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    acc_cell *ac = cell_of(c);
    if (ac && K >= 1 && K <= CELL_DEFER_K && ac->M == M && ac->N == N && ac->dt == c->dtype &&
        cell_kcap(M, N, c->dtype == LT_F64 ? sizeof(double) : sizeof(float)) >= CELL_DEFER_K) {
        if (ac->readers_ok < 0)
            ac->readers_ok = readers_ok(ac->m, ac->origin);
        if (ac->readers_ok && cell_defer(ac, c->data, ta, tb, K, alpha, a, b))
            return LT_OK;
    }
    /* cells are updated in place by design */
    lt_linalg_gemm(c->dtype, ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], 1.0, c->data, N);
    return LT_OK;
}

static lt_status op_acc_read(lt_kctx *k)
{
    const lt_tensor *c = lt_k_in(k, 0);
    if (!c)
        return lt_k_fail(k, LT_ERR_RUNTIME, "expects a cell");
    acc_cell *ac = cell_of(c);
    if (ac)
        cell_flush(ac, c->data);
    /* a planned cell whose last read this is hands its storage over (the
     * plan checks that nothing else holds it): no copy */
    lt_tensor *o;
    lt_status s = ac ? lt_k_out(k, 0, c->dtype, c->rank, c->dims, &o)
                     : lt_k_out_over(k, 0, 0, c->dtype, c->rank, c->dims, &o);
    if (s == LT_OK && o->data != c->data)
        memcpy(o->data, c->data, lt_tensor_nbytes(c));
    return s;
}

void lt_cpu_register_control_cells(lt_kernel_fn *tab)
{
    tab[LT_OP_ACC_ZEROS_LIKE] = op_acc_zeros_like;
    tab[LT_OP_ACC_ADD] = op_acc_add;
    tab[LT_OP_ACC_READ] = op_acc_read;
    tab[LT_OP_ACC_GEMM] = op_acc_gemm;
}
