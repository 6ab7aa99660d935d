/* Softmax-family gradient loops for one float type, included by
 * grad_misc_softmax.c with T (element), RS (name suffix) and SMG_EXP (an exp
 * for T that vectorizes) defined. Sums run in double. */
#define SMG_CAT2(a, b) a##_##b
#define SMG_CAT(a, b) SMG_CAT2(a, b)
#define SMG_FN(name) SMG_CAT(smg_##name, RS)

/* Over outer x c x inner, the reduction running along c:
 *   softmax:     dx = y * (dy - sum_c(dy * y))
 *   log-softmax: dx = dy - exp(y) * sum_c(dy)   (y is the log-softmax output) */
static void SMG_FN(softmax)(const T *dy, const T *y, T *dx, int64_t outer, int64_t c, int64_t inner, bool logsm)
{
    bool par = outer * c * inner > LT_GM_PAR_MIN;
    if (inner == 1) {
#pragma omp parallel for schedule(static) if (par)
        for (int64_t o = 0; o < outer; o++) {
            const T *g = dy + o * c, *v = y + o * c;
            T *r = dx + o * c;
            double s = 0;
            if (logsm) {
#pragma omp simd reduction(+ : s)
                for (int64_t j = 0; j < c; j++)
                    s += (double)g[j];
                T ts = (T)s;
#pragma omp simd
                for (int64_t j = 0; j < c; j++)
                    r[j] = g[j] - SMG_EXP(v[j]) * ts;
            } else {
#pragma omp simd reduction(+ : s)
                for (int64_t j = 0; j < c; j++)
                    s += (double)g[j] * (double)v[j];
                T ts = (T)s;
#pragma omp simd
                for (int64_t j = 0; j < c; j++)
                    r[j] = v[j] * (g[j] - ts);
            }
        }
        return;
    }
    /* a block of inner positions at a time: rows along c stay contiguous */
    int64_t nb = (inner + SMG_BLOCK - 1) / SMG_BLOCK, tasks = outer * nb;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / nb, i0 = (t % nb) * SMG_BLOCK, n = inner - i0 < SMG_BLOCK ? inner - i0 : SMG_BLOCK;
        double s[SMG_BLOCK];
        for (int64_t i = 0; i < n; i++)
            s[i] = 0;
        for (int64_t cc = 0; cc < c; cc++) {
            const T *g = dy + (o * c + cc) * inner + i0, *v = y + (o * c + cc) * inner + i0;
            if (logsm) {
#pragma omp simd
                for (int64_t i = 0; i < n; i++)
                    s[i] += (double)g[i];
            } else {
#pragma omp simd
                for (int64_t i = 0; i < n; i++)
                    s[i] += (double)g[i] * (double)v[i];
            }
        }
        for (int64_t cc = 0; cc < c; cc++) {
            const T *g = dy + (o * c + cc) * inner + i0, *v = y + (o * c + cc) * inner + i0;
            T *r = dx + (o * c + cc) * inner + i0;
            if (logsm) {
#pragma omp simd
                for (int64_t i = 0; i < n; i++)
                    r[i] = g[i] - SMG_EXP(v[i]) * (T)s[i];
            } else {
#pragma omp simd
                for (int64_t i = 0; i < n; i++)
                    r[i] = v[i] * (g[i] - (T)s[i]);
            }
        }
    }
}

/* dscores from the softmax p (already in dx, (N, C, D) layout):
 * dx = coef * (p - onehot(cls)); cls < 0 marks an ignored target (coef 0). */
static void SMG_FN(sce)(T *dx, const double *coef, const int64_t *cls, int64_t n, int64_t c, int64_t d)
{
    if (d == 1) { /* (N, C): one contiguous row per sample */
#pragma omp parallel for schedule(static) if (n * c > LT_GM_PAR_MIN)
        for (int64_t i = 0; i < n; i++) {
            T *r = dx + i * c, cf = (T)coef[i];
#pragma omp simd
            for (int64_t cc = 0; cc < c; cc++)
                r[cc] *= cf;
            if (cls[i] >= 0)
                r[cls[i]] -= cf;
        }
        return;
    }
#pragma omp parallel for schedule(static) if (n * c * d > LT_GM_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const double *cf = coef + i * d;
        const int64_t *tl = cls + i * d;
        for (int64_t cc = 0; cc < c; cc++) {
            T *r = dx + (i * c + cc) * d;
#pragma omp simd
            for (int64_t j = 0; j < d; j++)
                r[j] = (T)(cf[j] * (double)r[j]);
        }
        for (int64_t j = 0; j < d; j++)
            if (tl[j] >= 0)
                dx[(i * c + tl[j]) * d + j] -= (T)cf[j];
    }
}

/* dinput of NLL: zero but -coef at each counted target. */
static void SMG_FN(nll)(T *dx, const double *coef, const int64_t *cls, int64_t n, int64_t c, int64_t d)
{
    lt_gm_zero(dx, sizeof(T) * (size_t)(n * c * d));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++) {
            int64_t t = cls[i * d + j];
            if (t >= 0)
                dx[(i * c + t) * d + j] = (T)-coef[i * d + j];
        }
}

#undef SMG_FN
#undef SMG_CAT
#undef SMG_CAT2
