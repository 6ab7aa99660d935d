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
        const T wd = c->kind == LT_OPTIM_ADAMW ? (T)0 : (T)c->wd;                                               \
        switch (c->kind) {                                                                                      \
        case LT_OPTIM_SGD:                                                                                      \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
                p[i] -= lr * (gr[i] * scale + wd * p[i]);                                                       \
            break;                                                                                              \
        case LT_OPTIM_MOMENTUM:                                                                                 \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                T g = gr[i] * scale + wd * p[i];                                                                \
                s1[i] = mu * s1[i] + g;                                                                         \
                p[i] -= lr * s1[i];                                                                             \
            }                                                                                                   \
            break;                                                                                              \
        case LT_OPTIM_NESTEROV:                                                                                 \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                T g = gr[i] * scale + wd * p[i];                                                                \
                s1[i] = mu * s1[i] + g;                                                                         \
                p[i] -= lr * (g + mu * s1[i]);                                                                  \
            }                                                                                                   \
            break;                                                                                              \
        case LT_OPTIM_ADAGRAD:                                                                                  \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                T g = gr[i] * scale + wd * p[i];                                                                \
                s1[i] += g * g;                                                                                 \
                p[i] -= lr * g / (SQRT(s1[i]) + eps);                                                           \
            }                                                                                                   \
            break;                                                                                              \
        case LT_OPTIM_ADAM:                                                                                     \
        case LT_OPTIM_ADAMW:                                                                                    \
            _Pragma("omp parallel for if (n > LT_OPTIM_PAR_MIN)") for (int64_t i = 0; i < n; i++)               \
            {                                                                                                   \
                p[i] *= decay;                                                                                  \
                T g = gr[i] * scale + wd * p[i];                                                                \
                s1[i] = b1 * s1[i] + (1 - b1) * g;                                                              \
                s2[i] = b2 * s2[i] + (1 - b2) * g * g;                                                          \
                p[i] -= step * s1[i] / (SQRT(s2[i]) * ibc2 + eps);                                              \
            }                                                                                                   \
            break;                                                                                              \
        }                                                                                                       \
    }

LT_DEFINE_UPDATE(float, sqrtf, update_f32)
LT_DEFINE_UPDATE(double, sqrt, update_f64)

#if defined(__x86_64__) && defined(__GNUC__)
#include "cpu_features.h"
#include "par_spread.h"
#include <immintrin.h>
#include <omp.h>

/* float32 with AVX-512: sixteen elements a step, the last step masked; the
 * same operations in the same order as the loops above (no fused
 * multiply-adds, correctly rounded sqrt and division), so the same bits. */
#define V(x) _mm512_set1_ps(x)
#define LD(a) _mm512_maskz_loadu_ps(m, (a) + i)
#define ST(a, v) _mm512_mask_storeu_ps((a) + i, m, (v))
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define DIV _mm512_div_ps

__attribute__((target("avx512f"))) static void update_f32_avx512(const lt_optim_update *c)
{
    const int64_t n = c->n, nb = (n + 15) / 16;
    float *restrict p = c->p;
    const float *restrict gr = c->g;
    float *restrict s1 = c->s1, *restrict s2 = c->s2;
    const float lr = (float)c->lr, scale = (float)c->scale, mu = (float)c->mu, b1 = (float)c->b1,
                b2 = (float)c->b2, eps = (float)c->eps, step = (float)c->adam_step, ibc2 = (float)c->inv_sqrt_bc2,
                decay = (float)c->decay;
    const float wd = c->kind == LT_OPTIM_ADAMW ? 0.0f : (float)c->wd;
    const int kind = (int)c->kind;
    /* blocks of 2048 vectors taken in turn (a thread given a busy core
     * takes fewer), the second thread kept off the first one's CPU */
    const int cpu0 = lt_par_cpu();
#pragma omp parallel if (n > LT_OPTIM_PAR_MIN)
    {
        if (omp_get_thread_num() > 0)
            lt_par_leave_cpu(cpu0);
#pragma omp for schedule(dynamic, 2048)
        for (int64_t b = 0; b < nb; b++) {
            const int64_t i = b * 16;
            const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
            __m512 P = LD(p);
            if (kind == LT_OPTIM_ADAM || kind == LT_OPTIM_ADAMW)
                P = MUL(P, V(decay));
            const __m512 G = ADD(MUL(LD(gr), V(scale)), MUL(V(wd), P));
            switch (kind) {
            case LT_OPTIM_SGD:
                P = SUB(P, MUL(V(lr), G));
                break;
            case LT_OPTIM_MOMENTUM: {
                const __m512 S = ADD(MUL(V(mu), LD(s1)), G);
                ST(s1, S);
                P = SUB(P, MUL(V(lr), S));
                break;
            }
            case LT_OPTIM_NESTEROV: {
                const __m512 S = ADD(MUL(V(mu), LD(s1)), G);
                ST(s1, S);
                P = SUB(P, MUL(V(lr), ADD(G, MUL(V(mu), S))));
                break;
            }
            case LT_OPTIM_ADAGRAD: {
                const __m512 S = ADD(LD(s1), MUL(G, G));
                ST(s1, S);
                P = SUB(P, DIV(MUL(V(lr), G), ADD(_mm512_sqrt_ps(S), V(eps))));
                break;
            }
            default: { /* Adam, AdamW */
                const __m512 M = ADD(MUL(V(b1), LD(s1)), MUL(V(1 - b1), G));
                const __m512 S = ADD(MUL(V(b2), LD(s2)), MUL(MUL(V(1 - b2), G), G));
                ST(s1, M);
                ST(s2, S);
                P = SUB(P, DIV(MUL(V(step), M), ADD(MUL(_mm512_sqrt_ps(S), V(ibc2)), V(eps))));
                break;
            }
            }
            ST(p, P);
        }
    }
}
#undef V
#undef LD
#undef ST
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#endif

void lt_cpu_optim_update(const lt_optim_update *u)
{
    if (u->dtype == LT_F32) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (lt_cpu_avx512()) {
            update_f32_avx512(u);
            return;
        }
#endif
        update_f32(u);
    } else {
        update_f64(u);
    }
}
