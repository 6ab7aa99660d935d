/* Optimizers (SGD, momentum, Nesterov, Adagrad, Adam, AdamW with weight
 * decay), learning-rate schedules and the global gradient norm. Updates run
 * in place on the parameter tensors the sessions read; the state has the
 * parameter's element type. The formulas are PyTorch's (the per-tensor
 * loop: runtime/cpu/optim_update.c). When the trainer runs on a device
 * backend, the state lives in its memory too and each step is the
 * backend's fused update (lt_optim_to_backend); the host copy of the state
 * is brought up to date only for checkpoints (lt_optim_pull). */
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
    lt_optim_drop_backend(o);
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

/* The step's scalars, the same for every tensor. */
static lt_status step_consts(lt_optim *o, double lr, double grad_scale, lt_tensor *const *params,
                             const lt_tensor *const *grads, lt_optim_update *c, lt_err *err)
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
    memset(c, 0, sizeof *c);
    c->kind = o->o.kind;
    c->lr = lr;
    c->scale = grad_scale;
    c->wd = o->o.weight_decay;
    c->mu = o->o.momentum;
    c->b1 = o->o.beta1;
    c->b2 = o->o.beta2;
    c->one_b1 = 1 - o->o.beta1;
    c->one_b2 = 1 - o->o.beta2;
    c->eps = o->o.eps;
    c->adam_step = lr / (1 - pow(o->o.beta1, (double)o->t));
    c->inv_sqrt_bc2 = 1 / sqrt(1 - pow(o->o.beta2, (double)o->t));
    c->decay = o->o.kind == LT_OPTIM_ADAMW ? 1 - lr * o->o.weight_decay : 1;
    return LT_OK;
}

/* a tensor in the memory of backend be */
static bool held_by(const lt_tensor *t, const lt_backend *be) { return t->buf && t->buf->be == be; }

lt_status lt_optim_step(lt_optim *o, double lr, double grad_scale, lt_tensor *const *params,
                        const lt_tensor *const *grads, lt_err *err)
{
    lt_optim_update c;
    if (o->be)
        for (int i = 0; i < o->n; i++)
            if (!held_by(params[i], o->be) || !held_by(grads[i], o->be))
                return lt_errf(err, LT_ERR_INTERNAL, "optimizer step: parameter %d or its gradient is not in %s memory",
                               i, o->be->name);
    lt_status st = step_consts(o, lr, grad_scale, params, grads, &c, err);
    for (int i = 0; i < o->n && st == LT_OK; i++) {
        c.dtype = o->dtype[i];
        c.n = o->numel[i];
        c.p = params[i]->data;
        c.g = grads[i]->data;
        if (o->be) {
            c.s1 = o->d1[i] ? o->d1[i]->data : NULL;
            c.s2 = o->d2[i] ? o->d2[i]->data : NULL;
            st = o->be->optim_update(o->be, &c, err);
        } else {
            c.s1 = o->s1[i];
            c.s2 = o->s2[i];
            lt_cpu_optim_update(&c);
        }
    }
    return st;
}

/* ---- the state in a backend's memory ---- */

lt_status lt_optim_to_backend(lt_optim *o, const lt_backend *be, lt_err *err)
{
    if (o->be || !be || be->host)
        return LT_OK;
    if (!be->optim_update)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "the %s backend has no optimizer step", be->name);
    o->d1 = calloc((size_t)o->n + 1, sizeof *o->d1);
    o->d2 = calloc((size_t)o->n + 1, sizeof *o->d2);
    if (!o->d1 || !o->d2) {
        free(o->d1);
        free(o->d2);
        o->d1 = o->d2 = NULL;
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    o->be = be;
    int k = nstate(o->o.kind);
    for (int i = 0; i < o->n; i++) {
        size_t bytes = (size_t)o->numel[i] * lt_dtype_size(o->dtype[i]);
        for (int j = 0; j < k; j++) {
            lt_buf **slot = j ? &o->d2[i] : &o->d1[i];
            if (!(*slot = be->alloc(be, bytes ? bytes : 1))) {
                lt_optim_drop_backend(o);
                return lt_errf(err, LT_ERR_NOMEM, "out of %s memory for %zu bytes of optimizer state", be->name,
                               bytes);
            }
        }
    }
    lt_status st = lt_optim_push(o, err);
    if (st != LT_OK)
        lt_optim_drop_backend(o);
    return st;
}

void lt_optim_drop_backend(lt_optim *o)
{
    for (int i = 0; o->d1 && i < o->n; i++) {
        if (o->d1[i])
            lt_buf_release(o->d1[i]);
        if (o->d2[i])
            lt_buf_release(o->d2[i]);
    }
    free(o->d1);
    free(o->d2);
    o->d1 = o->d2 = NULL;
    o->be = NULL;
}

/* copies the state one way: to the backend (up) or back to the host */
static lt_status state_copy(lt_optim *o, bool up, lt_err *err)
{
    if (!o->be)
        return LT_OK;
    int k = nstate(o->o.kind);
    for (int i = 0; i < o->n; i++) {
        size_t bytes = (size_t)o->numel[i] * lt_dtype_size(o->dtype[i]);
        for (int j = 0; j < k && bytes; j++) {
            lt_buf *d = j ? o->d2[i] : o->d1[i];
            void *h = j ? o->s2[i] : o->s1[i];
            lt_status st = up ? o->be->upload(o->be, d, h, bytes, err) : o->be->download(o->be, h, d, bytes, err);
            if (st != LT_OK)
                return st;
        }
    }
    return LT_OK;
}

lt_status lt_optim_pull(lt_optim *o, lt_err *err) { return state_copy(o, false, err); }
lt_status lt_optim_push(lt_optim *o, lt_err *err) { return state_copy(o, true, err); }

lt_status lt_grad_global_norm_on(const lt_backend *be, int n, const lt_tensor *const *grads, double *norm,
                                 lt_err *err)
{
    if (!be || be->host) {
        *norm = lt_grad_global_norm(n, grads);
        return LT_OK;
    }
    double total = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        lt_status st = be->sum_squares(be, grads[i], &s, err);
        if (st != LT_OK)
            return st;
        total += s;
    }
    *norm = sqrt(total);
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
