/* One optimizer step over one tensor on the host: SGD, momentum, Nesterov,
 * Adagrad, Adam and AdamW as PyTorch writes them (train/optim.c computes
 * the step's scalars). Written once for float and once for double; the
 * host backend and the device-path CPU backend both run it, so the device
 * path's optimizer is the host's to the bit. */
#include "../backend.h"
#include <math.h>

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

void lt_cpu_optim_update(const lt_optim_update *u)
{
    if (u->dtype == LT_F32)
        update_f32(u);
    else
        update_f64(u);
}
