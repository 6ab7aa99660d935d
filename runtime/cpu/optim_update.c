/* One optimizer step over one tensor on the host: SGD, momentum, Nesterov,
 * Adagrad, Adam and AdamW as PyTorch writes them (train/optim.c computes
 * the step's scalars). Written once for float and once for double; the
 * host backend and the device-path CPU backend both run it, so the device
 * path's optimizer is the host's to the bit. */
#include "../backend.h"
#include <math.h>

/* No fused multiply-adds: the vector loop and the scalar one give the same
 * bits, on every machine. */
#pragma GCC optimize("fp-contract=off")

/* A decay of 0 adds nothing, as PyTorch skips it: 0 * p would turn an
 * infinite entry (a mask's -inf) into nan. */
#define LT_WD(wd, x, T) ((wd) != 0 ? (wd) * (x) : (T)0)

/* below this many elements a parallel region costs more than it saves */
#define LT_OPTIM_PAR_MIN 32768

#define LT_DEFINE_UPDATE(T, SQRT, NAME)                                                                        \
    static void NAME(const lt_optim_update *c)                                                                  \
    {                                                                                                           \
        const int64_t n = c->n;                                                                                 \
        T *restrict p = c->p;                                                                                   \
        const T *restrict gr = c->g;                                                                            \
        T *restrict s1 = c->s1, *restrict s2 = c->s2;                                                           \
        const T lr = (T)c->lr, scale = (T)c->scale, mu = (T)c->mu, b1 = (T)c->b1, b2 = (T)c->b2,                \
                eps = (T)c->eps, step = (T)c->adam_step, ibc2 = (T)c->inv_sqrt_bc2, decay = (T)c->decay;       \
        const T ob1 = (T)c->one_b1, ob2 = (T)c->one_b2;                                                         \
        const T wd = c->kind == LT_OPTIM_ADAMW ? (T)0 : (T)c->wd;                                               \
        switch (c->kind) {                                                                                      \
        case LT_OPTIM_SGD:                                                                                      \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
                p[i] -= lr * (gr[i] * scale + LT_WD(wd, p[i], T));                                              \
            break;                                                                                              \
        case LT_OPTIM_MOMENTUM:                                                                                 \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                T g = gr[i] * scale + LT_WD(wd, p[i], T);                                                       \
                s1[i] = mu * s1[i] + g;                                                                         \
                p[i] -= lr * s1[i];                                                                             \
            }                                                                                                   \
            break;                                                                                              \
        case LT_OPTIM_NESTEROV:                                                                                 \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                T g = gr[i] * scale + LT_WD(wd, p[i], T);                                                       \
                s1[i] = mu * s1[i] + g;                                                                         \
                p[i] -= lr * (g + mu * s1[i]);                                                                  \
            }                                                                                                   \
            break;                                                                                              \
        case LT_OPTIM_ADAGRAD:                                                                                  \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                T g = gr[i] * scale + LT_WD(wd, p[i], T);                                                       \
                s1[i] += g * g;                                                                                 \
                p[i] -= lr * g / (SQRT(s1[i]) + eps);                                                           \
            }                                                                                                   \
            break;                                                                                              \
        case LT_OPTIM_ADAM:                                                                                     \
        case LT_OPTIM_ADAMW:                                                                                    \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                p[i] *= decay;                                                                                  \
                T g = gr[i] * scale + LT_WD(wd, p[i], T);                                                       \
                s1[i] = b1 * s1[i] + ob1 * g;                                                                   \
                s2[i] = b2 * s2[i] + ob2 * g * g;                                                               \
                p[i] -= step * s1[i] / (SQRT(s2[i]) * ibc2 + eps);                                              \
            }                                                                                                   \
            break;                                                                                              \
        }                                                                                                       \
    }

LT_DEFINE_UPDATE(float, sqrtf, update_f32)
LT_DEFINE_UPDATE(double, sqrt, update_f64)

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu_features.h"
#include "par_pool.h"
#include <immintrin.h>
#include <omp.h>

/* A step shared out as a product-pool job (par_pool.h) */
typedef struct update_job {
    const lt_optim_update *c;
    int64_t nb, nblk, next;
} update_job;

/* One float32 element of the step, as the loops above compute it: the
 * tail past the last whole vector of the AVX2 path. */
static void update_one_f32(const lt_optim_update *c, int64_t i)
{
    lt_optim_update one = *c;
    one.n = 1;
    one.p = (float *)c->p + i;
    one.g = (const float *)c->g + i;
    one.s1 = c->s1 ? (float *)c->s1 + i : NULL;
    one.s2 = c->s2 ? (float *)c->s2 + i : NULL;
    update_f32(&one);
}

/* float32 with AVX-512: sixteen elements a step, the last step masked */
#define NAME update_f32_avx512
#define RANGE update_f32_avx512_range
#define JOB update_f32_avx512_job
#define TARGET __attribute__((target("avx512f")))
#define W 16
#define VT __m512
#define TAIL 1
#define MASK_OF(r) const __mmask16 m = (r) >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (r)) - 1u)
#define V(x) _mm512_set1_ps(x)
#define LD(a) _mm512_maskz_loadu_ps(m, (a) + i)
#define ST(a, v) _mm512_mask_storeu_ps((a) + i, m, (v))
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define DIV _mm512_div_ps
#define SQRTV _mm512_sqrt_ps
#include "optim_update_vec.h"

/* float32 with AVX2: eight elements a step, the rest one by one (AMD's
 * masked stores are microcoded) */
#define NAME update_f32_avx2
#define RANGE update_f32_avx2_range
#define JOB update_f32_avx2_job
#define TARGET __attribute__((target("avx2")))
#define W 8
#define VT __m256
#define TAIL 0
#define MASK_OF(r) (void)0
#define V(x) _mm256_set1_ps(x)
#define LD(a) _mm256_loadu_ps((a) + i)
#define ST(a, v) _mm256_storeu_ps((a) + i, (v))
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define DIV _mm256_div_ps
#define SQRTV _mm256_sqrt_ps
#include "optim_update_vec.h"
#endif

void lt_cpu_optim_update(const lt_optim_update *u)
{
    if (u->dtype == LT_F32) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (lt_cpu_avx512()) {
            update_f32_avx512(u);
            return;
        }
        if (lt_cpu_avx2()) {
            update_f32_avx2(u);
            return;
        }
#endif
        update_f32(u);
    } else {
        update_f64(u);
    }
}
