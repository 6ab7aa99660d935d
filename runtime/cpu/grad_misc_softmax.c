/* CPU kernels: SoftmaxGrad and LogSoftmaxGrad (from the forward output y,
 * with the forward op's opset-dependent axis rules), and the gradients of
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss with respect to
 * their scores / log-probabilities. Float32 and float64 run natively;
 * float16 and bfloat16 go through float32. */
#include "grad_misc_util.h"
#include "reduce_util.h"
#include "cpu_features.h"
#include <math.h>
#include <omp.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <string.h>

/* Inner positions handled together when the softmax axis is not last. */
#define SMG_BLOCK 256

#define T float
#define RS f32
#define SMG_EXP lt_red_expf
#include "grad_misc_smx_tmpl.h"
#undef T
#undef RS
#undef SMG_EXP

#define T double
#define RS f64
#define SMG_EXP exp
#include "grad_misc_smx_tmpl.h"
#undef T
#undef RS
#undef SMG_EXP

/* SoftmaxGrad on float32 rows along the last axis (attention's 28 keys),
 * dx = y * (dy - sum(dy * y)) with the sum in double as smg_softmax does:
 * the per-thread row loop in C for baseline x86-64 and with AVX-512
 * intrinsics (eight-lane double sums), the parallel region outside both. */
static inline __attribute__((always_inline)) void smx_rows_body(const float *dy, const float *y, float *dx,
                                                                int64_t r0, int64_t r1, int64_t c)
{
    for (int64_t o = r0; o < r1; o++) {
        const float *g = dy + o * c, *v = y + o * c;
        float *r = dx + o * c;
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < c; j++)
            s += (double)g[j] * (double)v[j];
        float ts = (float)s;
#pragma omp simd
        for (int64_t j = 0; j < c; j++)
            r[j] = v[j] * (g[j] - ts);
    }
}

static void smx_rows_base(const float *dy, const float *y, float *dx, int64_t r0, int64_t r1, int64_t c)
{
    smx_rows_body(dy, y, dx, r0, r1, c);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* 16 floats at a time (the last masked); the products, exact in double,
 * summed in two 8-lane double accumulators */
__attribute__((target("avx512f,avx2,fma"))) static void smx_rows_avx512(const float *dy, const float *y, float *dx,
                                                                        int64_t r0, int64_t r1, int64_t c)
{
    for (int64_t o = r0; o < r1; o++) {
        const float *g = dy + o * c, *v = y + o * c;
        float *r = dx + o * c;
        __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
        for (int64_t j = 0; j < c; j += 16) {
            __mmask16 m = c - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (c - j)) - 1);
            __m512 gv = _mm512_maskz_loadu_ps(m, g + j), vv = _mm512_maskz_loadu_ps(m, v + j);
            a0 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(gv)),
                                 _mm512_cvtps_pd(_mm512_castps512_ps256(vv)), a0);
            a1 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(gv), 1))),
                                 _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(vv), 1))),
                                 a1);
        }
        __m512 ts = _mm512_set1_ps((float)_mm512_reduce_add_pd(_mm512_add_pd(a0, a1)));
        for (int64_t j = 0; j < c; j += 16) {
            __mmask16 m = c - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (c - j)) - 1);
            __m512 gv = _mm512_maskz_loadu_ps(m, g + j), vv = _mm512_maskz_loadu_ps(m, v + j);
            _mm512_mask_storeu_ps(r + j, m, _mm512_mul_ps(vv, _mm512_sub_ps(gv, ts)));
        }
    }
}
#endif

static void smx_rows_f32(const float *dy, const float *y, float *dx, int64_t rows, int64_t c)
{
#pragma omp parallel if (rows * c > LT_GM_PAR_MIN && rows > 1)
    {
        int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
#if defined(__x86_64__) && defined(__GNUC__)
        if (lt_cpu_avx512())
            smx_rows_avx512(dy, y, dx, r0, r1, c);
        else
#endif
            smx_rows_base(dy, y, dx, r0, r1, c);
    }
}

static lt_status need_float(lt_kctx *k, const lt_tensor *t, const char *what)
{
    if (!lt_dtype_is_float(t->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "%s is %s; only float types are supported", what,
                         lt_dtype_name(t->dtype));
    return LT_OK;
}

/* ---- SoftmaxGrad, LogSoftmaxGrad: (dy, y) -> dx ---- */
static lt_status softmax_grad(lt_kctx *k, bool logsm)
{
    const lt_tensor *dy, *y;
    lt_status s = lt_gm_need(k, 0, "dy", &dy);
    if (s == LT_OK)
        s = lt_gm_need(k, 1, "y", &y);
    if (s == LT_OK)
        s = need_float(k, y, "y");
    if (s == LT_OK && dy->dtype != y->dtype)
        s = lt_k_fail(k, LT_ERR_RUNTIME, "dy is %s but y is %s", lt_dtype_name(dy->dtype), lt_dtype_name(y->dtype));
    if (s == LT_OK)
        s = lt_gm_shape(k, dy, "dy", y->rank, y->dims);
    if (s != LT_OK)
        return s;
    /* the forward's axis rules: before opset 13 the input is coerced to 2-D
     * around axis a (default 1, a == rank allowed); from 13 one axis (default -1) */
    bool legacy = k->node->opset < 13;
    int64_t axis = lt_attr_int(k->node, "axis", legacy ? 1 : -1);
    int rank = y->rank, a;
    if (legacy && axis == rank)
        a = rank;
    else if (!lt_red_axis(axis, rank, &a))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, rank);
    int64_t outer = lt_red_prod(y->dims, 0, a), c, inner;
    if (legacy) {
        c = lt_red_prod(y->dims, a, rank);
        inner = 1;
    } else {
        c = y->dims[a];
        inner = lt_red_prod(y->dims, a + 1, rank);
    }
    if (outer < 0 || c < 0 || inner < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "shape overflows");
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, y->dtype, rank, y->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    if (y->dtype == LT_F64) {
        smg_softmax_f64(dy->data, y->data, dx->data, outer, c, inner, logsm);
    } else if (y->dtype == LT_F32 && !logsm && inner == 1) {
        smx_rows_f32(dy->data, y->data, dx->data, outer, c);
    } else if (y->dtype == LT_F32) {
        smg_softmax_f32(dy->data, y->data, dx->data, outer, c, inner, logsm);
    } else {
        const float *gf = lt_red_load_f32(k, dy), *yf = lt_red_load_f32(k, y);
        float *xf = lt_k_scratch(k, sizeof(float) * (size_t)dx->numel);
        if (!gf || !yf || !xf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        smg_softmax_f32(gf, yf, xf, outer, c, inner, logsm);
        lt_red_store_f32(xf, dx);
    }
    return LT_OK;
}

static lt_status k_softmax_grad(lt_kctx *k) { return softmax_grad(k, false); }
static lt_status k_log_softmax_grad(lt_kctx *k) { return softmax_grad(k, true); }

/* ---- loss gradients: (dloss, x, target[, weight]) -> dx ---- */
typedef struct {
    const lt_tensor *x;
    int64_t n, c, d; /* x is (N, C, D...) with D the product of d1..dk */
    double *coef;    /* [N*D]: d loss / d (-x[n, target, d]) */
    int64_t *cls;    /* [N*D]: the target, -1 where ignored */
} loss_grad;

/* Checks the inputs as the forward losses do and works out, per target
 * position, the weight that dloss gives it: reduction none passes dloss
 * through elementwise, sum broadcasts the scalar, mean divides it by the
 * total weight of the counted targets. */
static lt_status loss_prep(lt_kctx *k, loss_grad *L)
{
    const lt_tensor *g, *x, *t, *w = lt_k_in(k, 3);
    lt_status s = lt_gm_need(k, 0, "dloss", &g);
    if (s == LT_OK)
        s = lt_gm_need(k, 1, "scores", &x);
    if (s == LT_OK)
        s = lt_gm_need(k, 2, "target", &t);
    if (s == LT_OK)
        s = need_float(k, x, "the input");
    if (s == LT_OK)
        s = need_float(k, g, "dloss");
    if (s != LT_OK)
        return s;
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_INVALID, "input must be (N, C, ...), got rank %d", x->rank);
    if (!lt_dtype_is_int(t->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "target must be an integer tensor, got %s", lt_dtype_name(t->dtype));
    int64_t tdims[LT_MAX_RANK];
    tdims[0] = x->dims[0];
    for (int i = 2; i < x->rank; i++)
        tdims[i - 1] = x->dims[i];
    if ((s = lt_gm_shape(k, t, "target", x->rank - 1, tdims)) != LT_OK)
        return s;
    L->x = x;
    L->n = x->dims[0];
    L->c = x->dims[1];
    L->d = lt_red_prod(x->dims, 2, x->rank);
    if (w && (!lt_dtype_is_float(w->dtype) || w->rank != 1 || w->dims[0] != L->c))
        return lt_k_fail(k, LT_ERR_INVALID, "weight must be a float tensor of shape (%lld)", (long long)L->c);
    const char *r = lt_attr_str(k->node, "reduction", "mean");
    bool none = !strcmp(r, "none"), mean = !strcmp(r, "mean");
    if (!none && !mean && strcmp(r, "sum"))
        return lt_k_fail(k, LT_ERR_INVALID, "reduction must be none, sum or mean, got '%s'", r);
    if (none && (s = lt_gm_shape(k, g, "dloss", t->rank, t->dims)) != LT_OK)
        return s;
    if (!none && g->numel != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dloss must hold one value for reduction %s, has %lld", r,
                         (long long)g->numel);
    bool has_ii = lt_attr_find(k->node, "ignore_index") != NULL;
    int64_t ii = lt_attr_int(k->node, "ignore_index", 0), nd = t->numel;
    L->coef = lt_k_scratch(k, sizeof(double) * (size_t)(nd ? nd : 1));
    L->cls = lt_k_scratch(k, sizeof(int64_t) * (size_t)(nd ? nd : 1));
    if (!L->coef || !L->cls)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    double wsum = 0;
    for (int64_t i = 0; i < nd; i++) {
        int64_t cls = lt_tensor_get_i64(t, i);
        double wt = 0;
        if (has_ii && cls == ii) {
            cls = -1;
        } else {
            if (cls < 0 || cls >= L->c)
                return lt_k_fail(k, LT_ERR_INVALID, "target %lld at position %lld is outside [0, %lld)",
                                 (long long)cls, (long long)i, (long long)L->c);
            wt = w ? lt_tensor_get_f64(w, cls) : 1.0;
        }
        L->cls[i] = cls;
        L->coef[i] = wt * lt_tensor_get_f64(g, none ? i : 0);
        wsum += wt;
    }
    /* with nothing counted the mean loss is 0/0; its gradient is taken as
     * zero so that such a batch leaves the parameters alone */
    if (mean)
        for (int64_t i = 0; i < nd; i++)
            L->coef[i] = wsum != 0 ? L->coef[i] / wsum : 0.0;
    return LT_OK;
}

static lt_status k_sce_loss_grad(lt_kctx *k)
{
    loss_grad L;
    lt_status s = loss_prep(k, &L);
    if (s != LT_OK)
        return s;
    const lt_tensor *x = L.x;
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    if (x->dtype == LT_F64) {
        lt_red_softmax_f64(x->data, dx->data, L.n, L.c, L.d, LT_RED_SOFTMAX);
        smg_sce_f64(dx->data, L.coef, L.cls, L.n, L.c, L.d);
    } else if (x->dtype == LT_F32) {
        lt_red_softmax_any_f32(x->data, dx->data, L.n, L.c, L.d, LT_RED_SOFTMAX);
        smg_sce_f32(dx->data, L.coef, L.cls, L.n, L.c, L.d);
    } else {
        const float *xf = lt_red_load_f32(k, x);
        float *pf = lt_k_scratch(k, sizeof(float) * (size_t)dx->numel);
        if (!xf || !pf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        lt_red_softmax_any_f32(xf, pf, L.n, L.c, L.d, LT_RED_SOFTMAX);
        smg_sce_f32(pf, L.coef, L.cls, L.n, L.c, L.d);
        lt_red_store_f32(pf, dx);
    }
    return LT_OK;
}

static lt_status k_nll_loss_grad(lt_kctx *k)
{
    loss_grad L;
    lt_status s = loss_prep(k, &L);
    if (s != LT_OK)
        return s;
    const lt_tensor *x = L.x;
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    if (x->dtype == LT_F64) {
        smg_nll_f64(dx->data, L.coef, L.cls, L.n, L.c, L.d);
    } else if (x->dtype == LT_F32) {
        smg_nll_f32(dx->data, L.coef, L.cls, L.n, L.c, L.d);
    } else {
        float *pf = lt_k_scratch(k, sizeof(float) * (size_t)dx->numel);
        if (!pf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        smg_nll_f32(pf, L.coef, L.cls, L.n, L.c, L.d);
        lt_red_store_f32(pf, dx);
    }
    return LT_OK;
}

void lt_cpu_register_grad_misc_softmax(lt_kernel_fn *tab)
{
    tab[LT_OP_SOFTMAX_GRAD] = k_softmax_grad;
    tab[LT_OP_LOG_SOFTMAX_GRAD] = k_log_softmax_grad;
    tab[LT_OP_SCE_LOSS_GRAD] = k_sce_loss_grad;
    tab[LT_OP_NLL_LOSS_GRAD] = k_nll_loss_grad;
}
