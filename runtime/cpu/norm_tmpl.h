/* Numeric cores of the norm family, written once over the working type T and
 * instantiated by norm_core.c for float (suffix S = f32) and double (f64).
 * Statistics are accumulated in double whatever T is. No include guard: this
 * file is meant to be included once per type. */
#if !defined(T) || !defined(S)
#error "define T and S before including norm_tmpl.h"
#endif

#define NU_CAT2(a, b) a##_##b
#define NU_CAT(a, b) NU_CAT2(a, b)
#define FN(name) NU_CAT(name, S)

void FN(lt_nu_row_stats)(const T *x, int64_t rows, int64_t d, double *mean, double *var)
{
#pragma omp parallel for if (rows * d > LT_NU_PAR && rows > 1) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const T *p = x + r * d;
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < d; j++)
            s += p[j];
        double m = d ? s / (double)d : 0;
        /* second pass over the deviations: no cancellation for large means */
        double q = 0;
#pragma omp simd reduction(+ : q)
        for (int64_t j = 0; j < d; j++) {
            double t = p[j] - m;
            q += t * t;
        }
        mean[r] = m;
        var[r] = d ? q / (double)d : 0;
    }
}

void FN(lt_nu_chan_stats)(const T *x, int64_t n, int64_t c, int64_t s, double *mean, double *var)
{
    double cnt = (double)n * (double)s;
#pragma omp parallel for if (n * c * s > LT_NU_PAR && c > 1) schedule(static)
    for (int64_t j = 0; j < c; j++) {
        double sum = 0;
        for (int64_t i = 0; i < n; i++) {
            const T *p = x + (i * c + j) * s;
#pragma omp simd reduction(+ : sum)
            for (int64_t e = 0; e < s; e++)
                sum += p[e];
        }
        double m = cnt > 0 ? sum / cnt : 0, q = 0;
        for (int64_t i = 0; i < n; i++) {
            const T *p = x + (i * c + j) * s;
#pragma omp simd reduction(+ : q)
            for (int64_t e = 0; e < s; e++) {
                double t = p[e] - m;
                q += t * t;
            }
        }
        mean[j] = m;
        var[j] = cnt > 0 ? q / cnt : 0;
    }
}

void FN(lt_nu_chan_affine)(const T *x, T *y, int64_t n, int64_t c, int64_t s, const double *a, const double *b,
                           int per_n)
{
#pragma omp parallel for if (n * c * s > LT_NU_PAR && n * c > 1) schedule(static)
    for (int64_t ij = 0; ij < n * c; ij++) {
        int64_t q = per_n ? ij : ij % c;
        const T av = (T)a[q], bv = (T)b[q];
        const T *xp = x + ij * s;
        T *yp = y + ij * s;
#pragma omp simd
        for (int64_t e = 0; e < s; e++)
            yp[e] = xp[e] * av + bv;
    }
}

void FN(lt_nu_row_norm)(const T *x, T *y, int64_t rows, int64_t d, const double *mean, const double *inv,
                        const T *scale, int64_t srows, const T *bias, int64_t brows)
{
#pragma omp parallel for if (rows * d > LT_NU_PAR && rows > 1) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const T m = (T)mean[r], iv = (T)inv[r];
        const T *xp = x + r * d, *sp = scale + (r % srows) * d;
        T *yp = y + r * d;
        if (bias) {
            const T *bp = bias + (r % brows) * d;
#pragma omp simd
            for (int64_t j = 0; j < d; j++)
                yp[j] = (xp[j] - m) * iv * sp[j] + bp[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < d; j++)
                yp[j] = (xp[j] - m) * iv * sp[j];
        }
    }
}

#undef FN
#undef NU_CAT
#undef NU_CAT2
