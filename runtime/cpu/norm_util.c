/* Helpers shared by the norm and image kernels: working-precision views of
 * tensors, saturating stores, parameter broadcasting, numpy's MT19937. */
#include "norm_util.h"
#include <math.h>
#include <string.h>

void *lt_nu_scratch(lt_kctx *k, int64_t n, size_t es)
{
    if (n < 0 || (n > 0 && (uint64_t)n > SIZE_MAX / es)) {
        lt_k_fail(k, LT_ERR_RUNTIME, "buffer of %lld elements is too large", (long long)n);
        return NULL;
    }
    void *p = lt_k_scratch(k, (size_t)n * es);
    if (!p)
        lt_k_fail(k, LT_ERR_NOMEM, "out of memory (%zu bytes of scratch)", (size_t)n * es);
    return p;
}

static bool numeric(lt_dtype t)
{
    return lt_dtype_is_float(t) || lt_dtype_is_int(t) || t == LT_BOOL;
}

/* Stands in for the data of empty tensors, which may have none. */
static const double empty_data[1];

const float *lt_nu_as_f32(lt_kctx *k, const lt_tensor *t)
{
    if (t->numel == 0)
        return (const float *)empty_data;
    if (t->dtype == LT_F32)
        return t->data;
    if (!numeric(t->dtype)) {
        lt_k_fail(k, LT_ERR_RUNTIME, "expected a numeric tensor, got %s", lt_dtype_name(t->dtype));
        return NULL;
    }
    float *p = lt_nu_scratch(k, t->numel, sizeof *p);
    if (!p)
        return NULL;
    if (t->dtype == LT_F16) {
        const uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            p[i] = lt_f16_to_f32(h[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            p[i] = (float)lt_tensor_get_f64(t, i);
    }
    return p;
}

const double *lt_nu_as_f64(lt_kctx *k, const lt_tensor *t)
{
    if (t->numel == 0)
        return empty_data;
    if (t->dtype == LT_F64)
        return t->data;
    if (!numeric(t->dtype)) {
        lt_k_fail(k, LT_ERR_RUNTIME, "expected a numeric tensor, got %s", lt_dtype_name(t->dtype));
        return NULL;
    }
    double *p = lt_nu_scratch(k, t->numel, sizeof *p);
    if (!p)
        return NULL;
    if (lt_dtype_is_int(t->dtype) && t->dtype != LT_U64)
        for (int64_t i = 0; i < t->numel; i++)
            p[i] = (double)lt_tensor_get_i64(t, i);
    else
        for (int64_t i = 0; i < t->numel; i++)
            p[i] = lt_tensor_get_f64(t, i);
    return p;
}

/* Rounds v to the nearest integer and clamps it into [lo, hi]; NaN gives 0. */
static double sat(double v, double lo, double hi)
{
    if (v != v)
        return 0;
    v = round(v);
    return v < lo ? lo : v > hi ? hi : v;
}

static void store_one(lt_tensor *t, int64_t i, double v)
{
    void *p = t->data;
    switch (t->dtype) {
    case LT_I8: ((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX); break;
    case LT_U8: ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX); break;
    case LT_I16: ((int16_t *)p)[i] = (int16_t)sat(v, INT16_MIN, INT16_MAX); break;
    case LT_U16: ((uint16_t *)p)[i] = (uint16_t)sat(v, 0, UINT16_MAX); break;
    case LT_I32: ((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX); break;
    case LT_U32: ((uint32_t *)p)[i] = (uint32_t)sat(v, 0, UINT32_MAX); break;
    /* the bounds are the largest doubles that still convert exactly */
    case LT_I64: ((int64_t *)p)[i] = (int64_t)sat(v, -9223372036854775808.0, 9223372036854774784.0); break;
    case LT_U64: ((uint64_t *)p)[i] = (uint64_t)sat(v, 0, 18446744073709549568.0); break;
    default: lt_tensor_set_f64(t, i, v); break;
    }
}

void lt_nu_store_f32(lt_tensor *t, const float *src)
{
    if (t->dtype == LT_F32) {
        if (t->data != src)
            memcpy(t->data, src, (size_t)t->numel * sizeof *src);
    } else if (t->dtype == LT_F16) {
        uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            h[i] = lt_f32_to_f16(src[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            store_one(t, i, src[i]);
    }
}

void lt_nu_store_f64(lt_tensor *t, const double *src)
{
    if (t->dtype == LT_F64) {
        if (t->data != src)
            memcpy(t->data, src, (size_t)t->numel * sizeof *src);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            store_one(t, i, src[i]);
    }
}

const void *lt_nu_work_in(lt_kctx *k, const lt_tensor *t, bool f32)
{
    return f32 ? (const void *)lt_nu_as_f32(k, t) : (const void *)lt_nu_as_f64(k, t);
}

void *lt_nu_work_out(lt_kctx *k, lt_tensor *o, bool f32)
{
    if (o->dtype == (f32 ? LT_F32 : LT_F64))
        return o->data;
    return lt_nu_scratch(k, o->numel, f32 ? sizeof(float) : sizeof(double));
}

void lt_nu_work_store(lt_tensor *o, const void *w, bool f32)
{
    if (w == o->data)
        return;
    if (f32)
        lt_nu_store_f32(o, w);
    else
        lt_nu_store_f64(o, w);
}

lt_status lt_nu_out_like(lt_kctx *k, int i, const lt_tensor *tmpl, const double *vals)
{
    lt_tensor *t;
    lt_status s = lt_k_out(k, i, tmpl->dtype, tmpl->rank, tmpl->dims, &t);
    if (s == LT_OK)
        lt_nu_store_f64(t, vals);
    return s;
}

/* Whether p broadcasts unidirectionally to dims[0..rank). */
static bool bcast_ok(const lt_tensor *p, int rank, const int64_t *dims)
{
    /* extra leading dims are harmless when they are 1 */
    for (int i = 0; i < p->rank - rank; i++)
        if (p->dims[i] != 1)
            return false;
    for (int i = 0; i < rank && i < p->rank; i++) {
        int64_t pd = p->dims[p->rank - 1 - i], td = dims[rank - 1 - i];
        if (pd != 1 && pd != td)
            return false;
    }
    return true;
}

/* For each element of the target shape, the offset of its source in p
 * (stride 0 along p's broadcast dims). NULL when p does not broadcast or
 * when no copy is needed (*same set: p already has the target layout). */
static int64_t *bcast_offsets(lt_kctx *k, const lt_tensor *p, int rank, const int64_t *dims, const char *what,
                              int64_t *n_out, bool *same)
{
    *same = false;
    if (!bcast_ok(p, rank, dims)) {
        lt_k_fail(k, LT_ERR_RUNTIME, "%s (%d-d, %lld elements) does not broadcast to the normalized shape", what,
                  p->rank, (long long)p->numel);
        return NULL;
    }
    int64_t n = lt_shape_numel(rank, dims);
    if (n < 0) {
        lt_k_fail(k, LT_ERR_RUNTIME, "%s: target shape too large", what);
        return NULL;
    }
    *n_out = n;
    if (n == p->numel) {
        *same = true; /* broadcastable with equal counts: identical layout */
        return NULL;
    }
    int64_t *off = lt_nu_scratch(k, n, sizeof *off);
    if (!off)
        return NULL;
    int64_t strides[LT_MAX_RANK], st = 1;
    for (int i = rank - 1; i >= 0; i--) {
        int pi = p->rank - (rank - i);
        int64_t pd = pi >= 0 ? p->dims[pi] : 1;
        strides[i] = pd == 1 ? 0 : st;
        st *= pd;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t rem = e, o = 0;
        for (int i = rank - 1; i >= 0; i--) {
            o += (rem % dims[i]) * strides[i];
            rem /= dims[i];
        }
        off[e] = o;
    }
    return off;
}

const float *lt_nu_expand_f32(lt_kctx *k, const lt_tensor *p, int rank, const int64_t *dims, const char *what)
{
    int64_t n = 0;
    bool same;
    int64_t *off = bcast_offsets(k, p, rank, dims, what, &n, &same);
    const float *src = (off || same) ? lt_nu_as_f32(k, p) : NULL;
    if (!src || same)
        return src;
    float *dst = lt_nu_scratch(k, n, sizeof *dst);
    if (dst)
        for (int64_t e = 0; e < n; e++)
            dst[e] = src[off[e]];
    return dst;
}

const double *lt_nu_expand_f64(lt_kctx *k, const lt_tensor *p, int rank, const int64_t *dims, const char *what)
{
    int64_t n = 0;
    bool same;
    int64_t *off = bcast_offsets(k, p, rank, dims, what, &n, &same);
    const double *src = (off || same) ? lt_nu_as_f64(k, p) : NULL;
    if (!src || same)
        return src;
    double *dst = lt_nu_scratch(k, n, sizeof *dst);
    if (dst)
        for (int64_t e = 0; e < n; e++)
            dst[e] = src[off[e]];
    return dst;
}

const double *lt_nu_vec(lt_kctx *k, const lt_tensor *p, int64_t n, const char *what)
{
    if (p->numel != n) {
        lt_k_fail(k, LT_ERR_RUNTIME, "%s has %lld elements, expected %lld", what, (long long)p->numel, (long long)n);
        return NULL;
    }
    return lt_nu_as_f64(k, p);
}

lt_status lt_nu_scalar(lt_kctx *k, const lt_tensor *p, double dflt, const char *what, double *out)
{
    if (!p) {
        *out = dflt;
        return LT_OK;
    }
    if (p->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must be a scalar, got %lld elements", what, (long long)p->numel);
    if (!numeric(p->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must be numeric, got %s", what, lt_dtype_name(p->dtype));
    *out = lt_tensor_get_f64(p, 0);
    return LT_OK;
}

/* ---- MT19937 (Matsumoto & Nishimura), seeded as numpy's legacy seed() ---- */
void lt_mt19937_seed(lt_mt19937 *g, uint32_t seed)
{
    g->mt[0] = seed;
    for (int i = 1; i < 624; i++)
        g->mt[i] = 1812433253u * (g->mt[i - 1] ^ (g->mt[i - 1] >> 30)) + (uint32_t)i;
    g->idx = 624;
}

static uint32_t mt_next(lt_mt19937 *g)
{
    if (g->idx >= 624) {
        for (int i = 0; i < 624; i++) {
            uint32_t y = (g->mt[i] & 0x80000000u) | (g->mt[(i + 1) % 624] & 0x7fffffffu);
            g->mt[i] = g->mt[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        g->idx = 0;
    }
    uint32_t y = g->mt[g->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double lt_mt19937_double(lt_mt19937 *g)
{
    uint32_t a = mt_next(g) >> 5, b = mt_next(g) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}
