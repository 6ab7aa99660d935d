/* Optimizers (SGD, momentum, Nesterov, Adagrad, Adam, AdamW with weight
 * decay), learning-rate schedules and the global gradient norm. Updates run
 * in place on the parameter tensors the sessions read; the state has the
 * parameter's element type. The formulas are PyTorch's. */
#include "optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* below this many elements a parallel region costs more than it saves */
#define LT_OPTIM_PAR_MIN 32768

void lt_optim_defaults(lt_optim_kind kind, lt_optim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->momentum = 0.9;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = kind == LT_OPTIM_ADAGRAD ? 1e-10 : 1e-8;
    o->weight_decay = kind == LT_OPTIM_ADAMW ? 0.01 : 0.0;
}

static int nstate(lt_optim_kind k)
{
    switch (k) {
    case LT_OPTIM_SGD: return 0;
    case LT_OPTIM_MOMENTUM:
    case LT_OPTIM_NESTEROV:
    case LT_OPTIM_ADAGRAD: return 1;
    default: return 2;
    }
}

void lt_optim_free(lt_optim *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->n; i++) {
        if (o->s1)
            free(o->s1[i]);
        if (o->s2)
            free(o->s2[i]);
    }
    free(o->s1);
    free(o->s2);
    free(o->dtype);
    free(o->numel);
    free(o);
}

lt_status lt_optim_new(const lt_optim_opts *opts, int n, const lt_tensor *const *params, lt_optim **out,
                       lt_err *err)
{
    *out = NULL;
    if (opts->kind < LT_OPTIM_SGD || opts->kind > LT_OPTIM_ADAMW)
        return lt_errf(err, LT_ERR_INVALID, "unknown optimizer %d", (int)opts->kind);
    if (!(opts->momentum >= 0 && opts->momentum < 1) || !(opts->beta1 >= 0 && opts->beta1 < 1) ||
        !(opts->beta2 >= 0 && opts->beta2 < 1))
        return lt_errf(err, LT_ERR_INVALID, "momentum and betas must lie in [0, 1)");
    if (!(opts->eps > 0) || !(opts->weight_decay >= 0) || !isfinite(opts->weight_decay))
        return lt_errf(err, LT_ERR_INVALID, "eps must be > 0 and weight decay >= 0");
    if (n < 0)
        return lt_errf(err, LT_ERR_INVALID, "negative parameter count");
    lt_optim *o = calloc(1, sizeof *o);
    if (!o)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    o->o = *opts;
    o->n = n;
    o->dtype = calloc(n + 1, sizeof *o->dtype);
    o->numel = calloc(n + 1, sizeof *o->numel);
    o->s1 = calloc(n + 1, sizeof *o->s1);
    o->s2 = calloc(n + 1, sizeof *o->s2);
    lt_status s = o->dtype && o->numel && o->s1 && o->s2 ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    int k = nstate(opts->kind);
    for (int i = 0; i < n && s == LT_OK; i++) {
        const lt_tensor *p = params[i];
        if (p->dtype != LT_F32 && p->dtype != LT_F64) {
            s = lt_errf(err, LT_ERR_UNSUPPORTED, "parameter %d is %s; the optimizers update float32 and float64", i,
                        lt_dtype_name(p->dtype));
            break;
        }
        o->dtype[i] = p->dtype;
        o->numel[i] = p->numel;
        size_t bytes = (size_t)p->numel * lt_dtype_size(p->dtype);
        if (k >= 1 && !(o->s1[i] = calloc(bytes ? bytes : 1, 1)))
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes of optimizer state)", bytes);
        if (s == LT_OK && k >= 2 && !(o->s2[i] = calloc(bytes ? bytes : 1, 1)))
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes of optimizer state)", bytes);
    }
    if (s != LT_OK) {
        lt_optim_free(o);
        return s;
    }
    *out = o;
    return LT_OK;
}

/* The scalars one step needs, computed once per step. */
typedef struct step_consts {
    double lr, scale, wd, mu, b1, b2, eps;
    double adam_step; /* lr / (1 - b1^t) */
    double inv_sqrt_bc2; /* 1 / sqrt(1 - b2^t) */
    double decay;     /* adamw: 1 - lr * wd */
} step_consts;

/* One tensor's update, written once for float and once for double. The
 * gradient used is g * scale, plus wd * p where weight decay is L2. */
#define LT_DEFINE_UPDATE(T, SQRT, NAME)                                                                        \
    static void NAME(lt_optim_kind kind, const step_consts *c, int64_t n, T *restrict p, const T *restrict gr,   \
                     T *restrict s1, T *restrict s2)                                                             \
    {                                                                                                           \
        const T lr = (T)c->lr, scale = (T)c->scale, mu = (T)c->mu, b1 = (T)c->b1, b2 = (T)c->b2,                \
                eps = (T)c->eps, step = (T)c->adam_step, ibc2 = (T)c->inv_sqrt_bc2, decay = (T)c->decay;       \
        const T wd = kind == LT_OPTIM_ADAMW ? (T)0 : (T)c->wd;                                                  \
        switch (kind) {                                                                                         \
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

lt_status lt_optim_step(lt_optim *o, double lr, double grad_scale, lt_tensor *const *params,
                        const lt_tensor *const *grads, lt_err *err)
{
    if (!(lr >= 0) || !isfinite(lr) || !isfinite(grad_scale))
        return lt_errf(err, LT_ERR_INVALID, "learning rate %g / gradient scale %g is not a finite, >= 0 number", lr,
                       grad_scale);
    for (int i = 0; i < o->n; i++)
        if (params[i]->dtype != o->dtype[i] || params[i]->numel != o->numel[i] || grads[i]->dtype != o->dtype[i] ||
            grads[i]->numel != o->numel[i])
            return lt_errf(err, LT_ERR_INVALID,
                           "optimizer step: parameter %d or its gradient is not the %s[%lld] the optimizer was made for",
                           i, lt_dtype_name(o->dtype[i]), (long long)o->numel[i]);
    o->t++;
    step_consts c = {lr, grad_scale, o->o.weight_decay, o->o.momentum, o->o.beta1, o->o.beta2, o->o.eps, 0, 0, 1};
    c.adam_step = lr / (1 - pow(o->o.beta1, (double)o->t));
    c.inv_sqrt_bc2 = 1 / sqrt(1 - pow(o->o.beta2, (double)o->t));
    if (o->o.kind == LT_OPTIM_ADAMW)
        c.decay = 1 - lr * o->o.weight_decay;
    for (int i = 0; i < o->n; i++) {
        if (o->dtype[i] == LT_F32)
            update_f32(o->o.kind, &c, o->numel[i], params[i]->data, grads[i]->data, o->s1[i], o->s2[i]);
        else
            update_f64(o->o.kind, &c, o->numel[i], params[i]->data, grads[i]->data, o->s1[i], o->s2[i]);
    }
    return LT_OK;
}

double lt_grad_global_norm(int n, const lt_tensor *const *grads)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        const lt_tensor *g = grads[i];
        double s = 0;
        if (g->dtype == LT_F32) {
            const float *d = g->data;
#pragma omp parallel for reduction(+ : s) if (g->numel > LT_OPTIM_PAR_MIN)
            for (int64_t k = 0; k < g->numel; k++)
                s += (double)d[k] * d[k];
        } else {
            for (int64_t k = 0; k < g->numel; k++) {
                double v = lt_tensor_get_f64(g, k);
                s += v * v;
            }
        }
        total += s;
    }
    return sqrt(total);
}

double lt_schedule_lr(const lt_schedule *s, int64_t step)
{
    if (s->warmup > 0 && step < s->warmup)
        return s->lr * (double)(step + 1) / (double)s->warmup;
    int64_t after = step - (s->warmup > 0 ? s->warmup : 0);
    int64_t span = s->total - (s->warmup > 0 ? s->warmup : 0);
    switch (s->kind) {
    case LT_SCHEDULE_STEP: {
        int64_t size = s->step_size > 0 ? s->step_size : (span + 2) / 3;
        if (size < 1)
            size = 1;
        return s->lr * pow(s->gamma, (double)(after / size));
    }
    case LT_SCHEDULE_COSINE:
        if (span <= 0)
            return s->lr;
        if (after > span)
            after = span;
        return s->lr * 0.5 * (1 + cos(M_PI * (double)after / (double)span));
    default: return s->lr;
    }
}
