/* CPU kernel of FusedElementwise (ir/fuse_elementwise.h): the program runs
 * over tiles of TILE elements, every step reading and writing tile-sized
 * registers that stay in L1; a step whose value is an output writes
 * straight into it. Each step computes exactly what its unfused kernel
 * does (the same float32 operations and the same array exp, erf, tanh,
 * sigmoid and softplus), so fused and unfused programs agree bit for bit. The
 * interpreter is compiled three times, for baseline x86-64, AVX2 and
 * AVX-512 (one operation per step, so every width rounds the same), picked
 * from cpuid. */
#include "../runtime.h"
#include "cpu_features.h"
#include "../../ir/fuse_elementwise.h"
#include "fused_args.h"
#include "par.h"
#include "vact.h"
#include <math.h>
#include <omp.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define FE_X86 1
#define AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define FE_X86 0
#endif

#define TILE 256
#define MAX_IN LT_FE_MAX_IN

enum { K_FULL, K_SCALAR, K_ROW };

typedef struct fe_run {
    int nin, nsteps;
    const int64_t *prog;
    int kind[MAX_IN];
    const float *in[MAX_IN];
    int64_t rowlen[MAX_IN];
    float *out_of[LT_FE_MAX_STEPS]; /* per step: its output's data, or NULL */
} fe_run;

static inline __attribute__((always_inline)) void step(int code, const float *a, const float *b, float *y, int64_t n)
{
    switch (code) {
    case LT_FE_ADD:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] + b[i];
        break;
    case LT_FE_SUB:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] - b[i];
        break;
    case LT_FE_MUL:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] * b[i];
        break;
    case LT_FE_DIV:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] / b[i];
        break;
    case LT_FE_NEG:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = -a[i];
        break;
    case LT_FE_EXP: lt_vexpf(a, y, n); break;
    case LT_FE_ERF: lt_verff(a, y, n); break;
    case LT_FE_TANH: lt_vtanhf(a, y, n); break;
    case LT_FE_SIGMOID: lt_vsigmoidf(a, y, n); break;
    case LT_FE_SQRT:
        for (int64_t i = 0; i < n; i++)
            y[i] = sqrtf(a[i]);
        break;
    case LT_FE_SOFTPLUS: lt_vsoftplusf(a, y, n); break;
    default: /* LT_FE_RECIPROCAL */
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            y[i] = 1 / a[i];
        break;
    }
}

/* tiles [t0, t1) of n elements on the calling thread */
static inline __attribute__((always_inline)) void run_tiles_body(const fe_run *r, int64_t t0, int64_t t1, int64_t n)
{
    float regs[LT_FE_MAX_STEPS][TILE], bc[MAX_IN][TILE];
    const float *p[MAX_IN + LT_FE_MAX_STEPS];
    /* single elements fill their tile once */
    for (int e = 0; e < r->nin; e++)
        if (r->kind[e] == K_SCALAR) {
            float v = r->in[e][0];
            for (int64_t i = 0; i < TILE; i++)
                bc[e][i] = v;
            p[e] = bc[e];
        }
    for (int64_t t = t0; t < t1; t++) {
        int64_t base = t * TILE, len = n - base < TILE ? n - base : TILE;
        for (int e = 0; e < r->nin; e++) {
            if (r->kind[e] == K_FULL) {
                p[e] = r->in[e] + base;
            } else if (r->kind[e] == K_ROW) {
                const float *row = r->in[e];
                float *d = bc[e];
                int64_t c = r->rowlen[e], j = base % c;
                for (int64_t i = 0; i < len;) {
                    int64_t m = c - j < len - i ? c - j : len - i;
                    memcpy(d + i, row + j, sizeof *d * (size_t)m);
                    i += m;
                    j = 0;
                }
                p[e] = d;
            }
        }
        for (int s = 0; s < r->nsteps; s++) {
            const int64_t *ins = r->prog + 3 * s;
            float *y = r->out_of[s] ? r->out_of[s] + base : regs[s];
            step((int)ins[0], p[ins[1]], ins[2] >= 0 ? p[ins[2]] : NULL, y, len);
            p[r->nin + s] = y;
        }
    }
}

static void run_tiles_base(const fe_run *r, int64_t t0, int64_t t1, int64_t n) { run_tiles_body(r, t0, t1, n); }

#if FE_X86
__attribute__((target("avx2,fma"))) static void run_tiles_avx2(const fe_run *r, int64_t t0, int64_t t1, int64_t n)
{
    run_tiles_body(r, t0, t1, n);
}

AVX512 static void run_tiles_avx512(const fe_run *r, int64_t t0, int64_t t1, int64_t n)
{
    run_tiles_body(r, t0, t1, n);
}
#endif

static void run_tiles(const fe_run *r, int64_t t0, int64_t t1, int64_t n)
{
#if FE_X86
    if (lt_cpu_avx512()) {
        run_tiles_avx512(r, t0, t1, n);
        return;
    }
    if (lt_cpu_avx2()) {
        run_tiles_avx2(r, t0, t1, n);
        return;
    }
#endif
    run_tiles_base(r, t0, t1, n);
}

lt_status lt_fe_args_read(lt_kctx *k, lt_fe_args *a)
{
    int plen = 0, olen = 0;
    const int64_t *prog = lt_attr_ints(k->node, "program", &plen);
    const int64_t *oreg = lt_attr_ints(k->node, "outputs", &olen);
    memset(a, 0, sizeof *a);
    a->nin = k->nin;
    a->nsteps = plen / 3;
    a->prog = prog;
    if (!prog || plen % 3 || a->nsteps < 1 || a->nsteps > LT_FE_MAX_STEPS || !oreg || olen != k->nout ||
        k->nin < 1 || k->nin > LT_FE_MAX_IN)
        return lt_k_fail(k, LT_ERR_INVALID, "malformed program (%d ints, %d outputs, %d inputs)", plen, olen, k->nin);
    for (int s = 0; s < a->nsteps; s++) {
        const int64_t *ins = prog + 3 * s;
        int64_t lim = a->nin + s;
        bool bin = lt_fe_binary((int)ins[0]);
        if (ins[0] < 0 || ins[0] >= LT_FE_COUNT || ins[1] < 0 || ins[1] >= lim ||
            (bin ? ins[2] < 0 || ins[2] >= lim : ins[2] != -1))
            return lt_k_fail(k, LT_ERR_INVALID, "malformed program step %d", s);
    }
    const lt_tensor *x0 = lt_k_in(k, 0);
    if (!x0 || x0->dtype != LT_F32)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 must be a float32 tensor");
    a->n = x0->numel;
    a->last = x0->rank ? x0->dims[x0->rank - 1] : 1;
    for (int e = 0; e < a->nin; e++) {
        const lt_tensor *x = lt_k_in(k, e);
        if (!x || x->dtype != LT_F32)
            return lt_k_fail(k, LT_ERR_INVALID, "input %d must be a float32 tensor", e);
        bool same = x->rank == x0->rank && x->numel == x0->numel;
        for (int d = 0; same && d < x->rank; d++)
            same = x->dims[d] == x0->dims[d];
        bool ones = x->rank <= x0->rank, row = x->rank >= 1 && x->rank <= x0->rank && x->dims[x->rank - 1] == a->last;
        for (int d = 0; d < x->rank; d++) {
            ones &= x->dims[d] == 1;
            row &= d == x->rank - 1 || x->dims[d] == 1;
        }
        if (same)
            a->kind[e] = LT_FE_FULL;
        else if (ones)
            a->kind[e] = LT_FE_SCALAR;
        else if (row && a->last > 0)
            a->kind[e] = LT_FE_ROW;
        else
            return lt_k_fail(k, LT_ERR_RUNTIME, "input %d does not broadcast against input 0 as one element or a row",
                             e);
        a->in[e] = x->data;
    }
    for (int o = 0; o < k->nout; o++) {
        int64_t s = oreg[o] - a->nin;
        if (s < 0 || s >= a->nsteps || a->out_of[s])
            return lt_k_fail(k, LT_ERR_INVALID, "output %d names register %lld", o, (long long)oreg[o]);
        lt_tensor *y;
        lt_status st = lt_k_out(k, o, LT_F32, x0->rank, x0->dims, &y);
        if (st != LT_OK)
            return st;
        a->out_of[s] = y->data;
    }
    return LT_OK;
}

static lt_status k_fused(lt_kctx *k)
{
    lt_fe_args a;
    lt_status st = lt_fe_args_read(k, &a);
    if (st != LT_OK)
        return st;
    fe_run r = {.nin = a.nin, .nsteps = a.nsteps, .prog = a.prog};
    for (int e = 0; e < a.nin; e++) {
        r.kind[e] = a.kind[e] == LT_FE_FULL ? K_FULL : a.kind[e] == LT_FE_SCALAR ? K_SCALAR : K_ROW;
        r.in[e] = a.in[e];
        r.rowlen[e] = a.last;
    }
    memcpy(r.out_of, a.out_of, sizeof r.out_of);
    int64_t n = a.n, ntiles = (n + TILE - 1) / TILE;
#pragma omp parallel if (n * r.nsteps > LT_PAR_ELEMS)
    {
        int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        run_tiles(&r, ntiles * id / nt, ntiles * (id + 1) / nt, n);
    }
    return LT_OK;
}

void lt_cpu_register_fused_elementwise(lt_kernel_fn *tab) { tab[LT_OP_FUSED_ELEMENTWISE] = k_fused; }
