/* CPU kernels: random generators — RandomNormal, RandomUniform, their *Like
 * forms, Bernoulli and Multinomial. Element i draws from a counter-based
 * hash of (stream seed, i), so results do not depend on the thread count; a
 * `seed` attribute fixes the stream, otherwise it comes from the executor's
 * RNG (lt_k_rand_u64), which is itself seeded per session. */
#include "index_util.h"
#include <math.h>

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) from draw number i of the stream. */
static double unif(uint64_t seed, uint64_t i)
{
    return (double)(mix(seed + (i + 1) * 0x9e3779b97f4a7c15ull) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t stream_seed(lt_kctx *k)
{
    const lt_attr *a = lt_attr_find(k->node, "seed");
    if (!a)
        return lt_k_rand_u64(k);
    /* the spec's seed is a float: any value, fractional or not, names a stream */
    double d = a->kind == LT_ATTR_INT ? (double)a->i : (double)a->f;
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return mix(bits ^ 0x5eed5eed5eed5eedull);
}

/* Standard normal by Box-Muller from draws 2i and 2i+1. */
static double normal(uint64_t seed, uint64_t i)
{
    double u1 = 1.0 - unif(seed, 2 * i), u2 = unif(seed, 2 * i + 1); /* u1 in (0, 1] */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static bool float_out(lt_dtype t) { return lt_dtype_is_float(t); }

/* Output dtype: the dtype attribute, else dflt (LT_UNDEFINED: none). */
static lt_dtype out_dtype(lt_kctx *k, lt_dtype dflt)
{
    const lt_attr *a = lt_attr_find(k->node, "dtype");
    return a ? (lt_dtype)a->i : dflt;
}

/* Shape of the generator: the shape attribute, or the input's (Like forms). */
static lt_status gen_shape(lt_kctx *k, int *rank, int64_t *dims, lt_dtype *dt)
{
    bool like = k->node->op == LT_OP_RANDOM_NORMAL_LIKE || k->node->op == LT_OP_RANDOM_UNIFORM_LIKE;
    if (like) {
        const lt_tensor *x = lt_k_in(k, 0);
        if (!x)
            return lt_k_fail(k, LT_ERR_INVALID, "input is missing");
        *rank = x->rank;
        memcpy(dims, x->dims, sizeof *dims * x->rank);
        *dt = out_dtype(k, x->dtype);
    } else {
        int n;
        const int64_t *sh = lt_attr_ints(k->node, "shape", &n);
        if (!sh)
            return lt_k_fail(k, LT_ERR_INVALID, "the shape attribute is required");
        if (n > LT_MAX_RANK)
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d exceeds %d", n, LT_MAX_RANK);
        for (int i = 0; i < n; i++)
            if (sh[i] < 0)
                return lt_k_fail(k, LT_ERR_INVALID, "shape[%d] is negative (%lld)", i, (long long)sh[i]);
        *rank = n;
        memcpy(dims, sh, sizeof *dims * n);
        *dt = out_dtype(k, LT_F32);
    }
    if (!float_out(*dt))
        return lt_k_fail(k, LT_ERR_INVALID, "output type %s is not a float type", lt_dtype_name(*dt));
    return LT_OK;
}

/* RandomNormal, RandomUniform and their Like forms. */
static lt_status k_random(lt_kctx *k)
{
    int rank = 0;
    int64_t dims[LT_MAX_RANK];
    lt_dtype dt = LT_F32;
    lt_status s = gen_shape(k, &rank, dims, &dt);
    if (s != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, dt, rank, dims, &y)) != LT_OK)
        return s;
    bool is_normal = k->node->op == LT_OP_RANDOM_NORMAL || k->node->op == LT_OP_RANDOM_NORMAL_LIKE;
    double a, b; /* y = a + b * draw */
    if (is_normal) {
        a = lt_attr_float(k->node, "mean", 0.0f);
        b = lt_attr_float(k->node, "scale", 1.0f);
    } else {
        a = lt_attr_float(k->node, "low", 0.0f);
        b = (double)lt_attr_float(k->node, "high", 1.0f) - a;
    }
    uint64_t seed = stream_seed(k);
    int64_t n = y->numel;
    if (dt == LT_F32) {
        float *yd = y->data;
#pragma omp parallel for if (n > LT_IX_PAR_MIN / 8)
        for (int64_t i = 0; i < n; i++)
            yd[i] = (float)(a + b * (is_normal ? normal(seed, i) : unif(seed, i)));
    } else {
#pragma omp parallel for if (n > LT_IX_PAR_MIN / 8)
        for (int64_t i = 0; i < n; i++)
            lt_tensor_set_f64(y, i, a + b * (is_normal ? normal(seed, i) : unif(seed, i)));
    }
    return LT_OK;
}

/* Bernoulli: y = 1 with probability x (numpy: uniform(0, 1) < x). */
static lt_status k_bernoulli(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input is missing");
    if (!lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "probabilities must be a float type, got %s", lt_dtype_name(x->dtype));
    lt_dtype dt = out_dtype(k, x->dtype);
    if (!lt_dtype_is_float(dt) && !lt_dtype_is_int(dt) && dt != LT_BOOL)
        return lt_k_fail(k, LT_ERR_INVALID, "output type %s is not numeric", lt_dtype_name(dt));
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, dt, x->rank, x->dims, &y);
    if (s != LT_OK)
        return s;
    uint64_t seed = stream_seed(k);
#pragma omp parallel for if (x->numel > LT_IX_PAR_MIN / 8)
    for (int64_t i = 0; i < x->numel; i++)
        lt_tensor_set_f64(y, i, unif(seed, i) < lt_tensor_get_f64(x, i) ? 1.0 : 0.0);
    return LT_OK;
}

/* Multinomial: sample_size class indices per row of unnormalized log-probabilities. */
static lt_status k_multinomial(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input is missing");
    if (x->rank != 2 || !lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "input must be a float [batch, classes] tensor");
    lt_dtype dt = out_dtype(k, LT_I32);
    if (dt != LT_I32 && dt != LT_I64)
        return lt_k_fail(k, LT_ERR_INVALID, "dtype must be int32 or int64, got %s", lt_dtype_name(dt));
    int64_t ss = lt_attr_int(k->node, "sample_size", 1), nb = x->dims[0], nc = x->dims[1];
    if (ss < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "sample_size %lld is negative", (long long)ss);
    if (nc < 1 && nb > 0 && ss > 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "cannot sample from zero classes");
    int64_t od[2] = {nb, ss};
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, dt, 2, od, &y);
    if (s != LT_OK)
        return s;
    double *cdf = lt_ix_scratch(k, nb * nc, sizeof *cdf);
    if (!cdf && nb * nc > 0)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    uint64_t seed = stream_seed(k);
#pragma omp parallel for if (x->numel + y->numel > LT_IX_PAR_MIN / 8)
    for (int64_t b = 0; b < nb; b++) {
        double *c = cdf + b * nc, mx = -INFINITY, acc = 0;
        for (int64_t j = 0; j < nc; j++) {
            double v = lt_tensor_get_f64(x, b * nc + j);
            mx = v > mx ? v : mx;
        }
        for (int64_t j = 0; j < nc; j++) {
            double v = lt_tensor_get_f64(x, b * nc + j);
            acc += isinf(mx) && mx < 0 ? 1.0 : exp(v - mx); /* all -inf: uniform */
            c[j] = acc;
        }
        for (int64_t t = 0; t < ss; t++) {
            double u = unif(seed, (uint64_t)(b * ss + t)) * acc;
            int64_t lo = 0, hi = nc - 1; /* first class whose cdf exceeds u */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (c[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            lt_tensor_set_i64(y, b * ss + t, lo);
        }
    }
    return LT_OK;
}

void lt_cpu_register_index_random(lt_kernel_fn *tab)
{
    tab[LT_OP_RANDOM_NORMAL] = k_random;
    tab[LT_OP_RANDOM_UNIFORM] = k_random;
    tab[LT_OP_RANDOM_NORMAL_LIKE] = k_random;
    tab[LT_OP_RANDOM_UNIFORM_LIKE] = k_random;
    tab[LT_OP_BERNOULLI] = k_bernoulli;
    tab[LT_OP_MULTINOMIAL] = k_multinomial;
}
