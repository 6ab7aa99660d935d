/* The ai.onnx.preview.training optimizer ops (version 1): Adagrad, Momentum
 * (standard and Nesterov) and Adam. Inputs are R (learning rate), T (update
 * count), then the tensors X..., G..., and the optimizer state (H... for
 * Adagrad, V... for Momentum, V..., H... for Adam); outputs are the new X...
 * followed by the new state. Scalars are derived in double once; the
 * element loops run in the tensors' own float type (f16/bf16 via float). */
#include "misc_kernels.h"
#include <math.h>
#include <string.h>

enum { OPT_ADAGRAD, OPT_MOMENTUM, OPT_ADAM };

typedef struct optim {
    int kind;
    bool nesterov;
    double lr;    /* effective learning rate of this step */
    double decay; /* L2 coefficient added to the gradient */
    double alpha, beta, beta_g; /* momentum coefficients; beta_g scales g */
    double eps, post;           /* Adam: x *= 1 - post at the end */
} optim;

/* One tensor's update: x, g, state s1 (H or V), s2 (Adam's H) into xo, s1o,
 * s2o, all n elements of type T. */
#define OPTIM_STEP(T, SQRT)                                                                                           \
    static void step_##T(const optim *o, int64_t n, const T *x, const T *g, const T *s1, const T *s2, T *xo, T *s1o, \
                         T *s2o)                                                                                      \
    {                                                                                                                 \
        const T lr = (T)o->lr, dc = (T)o->decay, al = (T)o->alpha, be = (T)o->beta, bg = (T)o->beta_g;              \
        const T eps = (T)o->eps, keep = (T)(1.0 - o->post), one = 1;                                                 \
        int kind = o->kind;                                                                                           \
        bool nest = o->nesterov;                                                                                      \
        _Pragma("omp parallel for if (n > 32768) schedule(static)") for (int64_t i = 0; i < n; i++)                  \
        {                                                                                                             \
            T gr = dc * x[i] + g[i];                                                                                  \
            if (kind == OPT_ADAGRAD) {                                                                                \
                T h = s1[i] + gr * gr;                                                                                \
                s1o[i] = h;                                                                                           \
                xo[i] = x[i] - lr * gr / (SQRT(h) + eps);                                                             \
            } else if (kind == OPT_MOMENTUM) {                                                                        \
                T v = al * s1[i] + bg * gr;                                                                           \
                s1o[i] = v;                                                                                           \
                xo[i] = nest ? x[i] - lr * (gr + al * v) : x[i] - lr * v;                                             \
            } else {                                                                                                  \
                T v = al * s1[i] + (one - al) * gr;                                                                   \
                T h = be * s2[i] + (one - be) * gr * gr;                                                              \
                s1o[i] = v;                                                                                           \
                s2o[i] = h;                                                                                           \
                xo[i] = keep * (x[i] - lr * (v / (SQRT(h) + eps)));                                                   \
            }                                                                                                         \
        }                                                                                                             \
    }

OPTIM_STEP(float, sqrtf)
OPTIM_STEP(double, sqrt)

/* Input group sizes: X, G and one (Adagrad, Momentum) or two (Adam) states. */
static int nstates(int kind) { return kind == OPT_ADAM ? 2 : 1; }

/* Float copy of t in scratch (for f16 / bf16 tensors). */
static float *to_f32(lt_kctx *k, const lt_tensor *t)
{
    float *f = lt_k_scratch(k, sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (f)
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = (float)lt_tensor_get_f64(t, i);
    return f;
}

static bool same_shape(const lt_tensor *a, const lt_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

/* Updates tensor i of n: inputs 2+i (X), 2+n+i (G), 2+2n+i (and 2+3n+i);
 * outputs i (X_new), n+i (and 2n+i). Unwanted outputs go to scratch. */
static lt_status update_one(lt_kctx *k, const optim *o, int n, int i)
{
    int ns = nstates(o->kind);
    const lt_tensor *in[4];
    static const char *names[2][4] = {{"X", "G", "H", ""}, {"X", "G", "V", "H"}};
    const char *const *nm = names[o->kind == OPT_ADAGRAD ? 0 : 1];
    for (int q = 0; q < 2 + ns; q++) {
        in[q] = lt_k_in(k, 2 + q * n + i);
        if (!in[q])
            return lt_k_fail(k, LT_ERR_INVALID, "input %s%d is missing", nm[q], i + 1);
        if (!lt_dtype_is_float(in[q]->dtype) || in[q]->dtype != in[0]->dtype)
            return lt_k_fail(k, LT_ERR_RUNTIME, "%s%d must be a float tensor of X%d's type %s, got %s", nm[q], i + 1,
                             i + 1, lt_dtype_name(in[0]->dtype), lt_dtype_name(in[q]->dtype));
        if (!same_shape(in[q], in[0]))
            return lt_k_fail(k, LT_ERR_RUNTIME, "%s%d and X%d have different shapes", nm[q], i + 1, i + 1);
    }
    const lt_tensor *x = in[0];
    lt_tensor *out[3] = {0};
    for (int q = 0; q < 1 + ns; q++) {
        if (!lt_k_want(k, q * n + i))
            continue;
        lt_status s = lt_k_out(k, q * n + i, x->dtype, x->rank, x->dims, &out[q]);
        if (s != LT_OK)
            return s;
    }
    /* work buffers: the outputs' own storage, else scratch */
    size_t es = x->dtype == LT_F64 ? sizeof(double) : sizeof(float);
    bool f16 = x->dtype != LT_F32 && x->dtype != LT_F64;
    void *src[4] = {0}, *dst[3] = {0};
    for (int q = 0; q < 2 + ns; q++)
        src[q] = f16 ? (void *)to_f32(k, in[q]) : in[q]->data;
    for (int q = 0; q < 1 + ns; q++)
        dst[q] = out[q] && !f16 ? out[q]->data : lt_k_scratch(k, es * (size_t)(x->numel ? x->numel : 1));
    for (int q = 0; q < 2 + ns; q++)
        if (!src[q] || (q < 1 + ns && !dst[q]))
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for optimizer work buffers");
    if (x->dtype == LT_F64)
        step_double(o, x->numel, src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2]);
    else
        step_float(o, x->numel, src[0], src[1], src[2], src[3], dst[0], dst[1], dst[2]);
    if (f16)
        for (int q = 0; q < 1 + ns; q++)
            if (out[q])
                for (int64_t e = 0; e < x->numel; e++)
                    lt_tensor_set_f64(out[q], e, ((const float *)dst[q])[e]);
    return LT_OK;
}

/* Checks the operand counts, reads R and T, fills the step's scalars with
 * fill(), then updates every tensor. */
static lt_status run_optim(lt_kctx *k, optim *o)
{
    int groups = 2 + nstates(o->kind);
    int n = (k->nin - 2) / groups;
    if (k->nin < 2 + groups || (k->nin - 2) % groups != 0)
        return lt_k_fail(k, LT_ERR_INVALID, "expected R, T and %d groups of tensors, got %d inputs", groups, k->nin);
    if (k->nout != n * (groups - 1))
        return lt_k_fail(k, LT_ERR_INVALID, "expected %d outputs for %d tensors, got %d", n * (groups - 1), n,
                         k->nout);
    const lt_tensor *r = lt_k_in(k, 0), *t = lt_k_in(k, 1);
    if (!r || !t || r->numel != 1 || t->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "R and T must be scalars");
    if (!lt_dtype_is_float(r->dtype) || t->dtype != LT_I64)
        return lt_k_fail(k, LT_ERR_RUNTIME, "R must be float or double and T int64, got %s and %s",
                         lt_dtype_name(r->dtype), lt_dtype_name(t->dtype));
    double lr = lt_tensor_get_f64(r, 0);
    int64_t step = lt_tensor_get_i64(t, 0);
    const lt_node *nd = k->node;
    if (o->kind == OPT_ADAGRAD) {
        o->lr = lr / (1.0 + (double)step * lt_attr_float(nd, "decay_factor", 0.0f));
        o->decay = lt_attr_float(nd, "norm_coefficient", 0.0f);
        o->eps = lt_attr_float(nd, "epsilon", 1e-6f);
    } else if (o->kind == OPT_MOMENTUM) {
        const char *mode = lt_attr_str(nd, "mode", NULL);
        const char *need[] = {"alpha", "beta", "norm_coefficient"};
        for (int q = 0; q < 3; q++)
            if (!lt_attr_find(nd, need[q]))
                return lt_k_fail(k, LT_ERR_INVALID, "attribute '%s' is required", need[q]);
        if (!mode || (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0))
            return lt_k_fail(k, LT_ERR_INVALID, "mode must be \"standard\" or \"nesterov\"");
        o->nesterov = strcmp(mode, "nesterov") == 0;
        o->lr = lr;
        o->alpha = lt_attr_float(nd, "alpha", 0.0f);
        o->beta = lt_attr_float(nd, "beta", 0.0f);
        o->beta_g = step > 0 ? o->beta : 1.0; /* the first step takes the whole gradient */
        o->decay = lt_attr_float(nd, "norm_coefficient", 0.0f);
    } else {
        o->alpha = lt_attr_float(nd, "alpha", 0.9f);
        o->beta = lt_attr_float(nd, "beta", 0.999f);
        o->eps = lt_attr_float(nd, "epsilon", 1e-6f);
        o->decay = lt_attr_float(nd, "norm_coefficient", 0.0f);
        o->post = lt_attr_float(nd, "norm_coefficient_post", 0.0f);
        /* bias correction from the second step on (T counts finished steps) */
        o->lr = step > 0 ? lr * sqrt(1.0 - pow(o->beta, (double)step)) / (1.0 - pow(o->alpha, (double)step)) : lr;
    }
    for (int i = 0; i < n; i++) {
        lt_status s = update_one(k, o, n, i);
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

lt_status lt_misc_adagrad(lt_kctx *k)
{
    optim o = {.kind = OPT_ADAGRAD};
    return run_optim(k, &o);
}

lt_status lt_misc_momentum(lt_kctx *k)
{
    optim o = {.kind = OPT_MOMENTUM};
    return run_optim(k, &o);
}

lt_status lt_misc_adam(lt_kctx *k)
{
    optim o = {.kind = OPT_ADAM};
    return run_optim(k, &o);
}
