/* The per-block work of BatchNormalization's float32 training kernels
 * (norm_batch.c), written once and instantiated per instruction set: ISA
 * is the suffix, ISA_ATTR the function attribute. A block is k whole
 * channels of x viewed as [n, c, s]: its L = k * s columns of the
 * [n, c * s] matrix. Every pass runs down the columns (sums per column in
 * double, each image's segment contiguous), so channels of any spatial size,
 * 1 included, vectorise alike, and all passes over a block run while it is
 * in cache. A channel's sums add its columns in order, so they do not
 * depend on how channels fall into blocks (nor on the thread count). No
 * include guard: included once per instruction set. */
#if !defined(ISA) || !defined(ISA_ATTR)
#error "define ISA and ISA_ATTR before including norm_batch_tmpl.h"
#endif

#define NB_CAT2(a, b) a##_##b
#define NB_CAT(a, b) NB_CAT2(a, b)
#define NB(name) NB_CAT(name, ISA)

/* acc[t] = sum over images of x[i, col0 + t] */
ISA_ATTR static void NB(col_sum)(const float *x, int64_t n, int64_t plane, int64_t len, double *acc)
{
    for (int64_t t = 0; t < len; t++)
        acc[t] = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * plane;
#pragma omp simd
        for (int64_t t = 0; t < len; t++)
            acc[t] += r[t];
    }
}

/* per channel of the block: the sum of its s columns, in column order */
static void NB(fold)(const double *acc, int64_t k, int64_t s, double *out)
{
    for (int64_t c = 0; c < k; c++) {
        double v = 0;
        for (int64_t e = 0; e < s; e++)
            v += acc[c * s + e];
        out[c] = v;
    }
}

/* each channel's mean from acc; mt[t] = its channel's mean */
static void NB(means)(const double *acc, int64_t k, int64_t s, double cnt, double *mean, double *mt)
{
    NB(fold)(acc, k, s, mean);
    for (int64_t c = 0; c < k; c++) {
        mean[c] = cnt > 0 ? mean[c] / cnt : 0;
        for (int64_t e = 0; e < s; e++)
            mt[c * s + e] = mean[c];
    }
}

/* Forward on one block: batch mean and variance of each channel (the
 * variance as the mean squared deviation from the mean, a second pass),
 * then y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
 * w: 2 * len doubles and 2 * len floats. */
ISA_ATTR static void NB(bn_fwd_block)(const float *x, float *y, int64_t n, int64_t plane, int64_t k, int64_t s,
                                      const double *g, const double *b, double eps, double *bm, double *bv,
                                      double *w)
{
    int64_t len = k * s;
    double cnt = (double)n * (double)s, *acc = w, *mt = w + len;
    float *at = (float *)(w + 2 * len), *bt = at + len;
    NB(col_sum)(x, n, plane, len, acc);
    NB(means)(acc, k, s, cnt, bm, mt);
    for (int64_t t = 0; t < len; t++)
        acc[t] = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * plane;
#pragma omp simd
        for (int64_t t = 0; t < len; t++) {
            double d = r[t] - mt[t];
            acc[t] += d * d;
        }
    }
    NB(fold)(acc, k, s, bv);
    for (int64_t c = 0; c < k; c++) {
        bv[c] = cnt > 0 ? bv[c] / cnt : 0;
        double a = g[c] / sqrt(bv[c] + eps), off = b[c] - bm[c] * a;
        for (int64_t e = 0; e < s; e++) {
            at[c * s + e] = (float)a;
            bt[c * s + e] = (float)off;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * plane;
        float *o = y + i * plane;
#pragma omp simd
        for (int64_t t = 0; t < len; t++)
            o[t] = r[t] * at[t] + bt[t];
    }
}

/* Gradient on one block (training mode, batch statistics): the mean, then
 * in one pass the variance, sum dy and sum dy * (x - mean) per channel;
 * dscale and dbias, and dx = A * dy + B * (x - mean) + C (when dx is not
 * NULL). w: 4 * len doubles and 4 * len floats. */
ISA_ATTR static void NB(bn_grad_block)(const float *x, const float *dy, float *dx, int64_t n, int64_t plane,
                                       int64_t k, int64_t s, const double *g, double eps, double *ds, double *db,
                                       double *w)
{
    int64_t len = k * s;
    double cnt = (double)n * (double)s, *acc = w, *mt = w + len, *ag = w + 2 * len, *agx = w + 3 * len;
    float *at = (float *)(w + 4 * len), *bt = at + len, *ct = bt + len, *mf = ct + len;
    double mean[64], var[64]; /* k <= 64 channels a block */
    NB(col_sum)(x, n, plane, len, acc);
    NB(means)(acc, k, s, cnt, mean, mt);
    for (int64_t t = 0; t < len; t++)
        acc[t] = ag[t] = agx[t] = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * plane, *gr = dy + i * plane;
#pragma omp simd
        for (int64_t t = 0; t < len; t++) {
            double d = r[t] - mt[t], gv = gr[t];
            acc[t] += d * d;
            ag[t] += gv;
            agx[t] += gv * d;
        }
    }
    NB(fold)(acc, k, s, var);
    NB(fold)(ag, k, s, db);
    NB(fold)(agx, k, s, ds);
    for (int64_t c = 0; c < k; c++) {
        double v = cnt > 0 ? var[c] / cnt : 0, istd = 1 / sqrt(v + eps), sdyx = ds[c], sdy = db[c];
        ds[c] = sdyx * istd;
        float A = (float)(g[c] * istd), B = (float)(-g[c] * istd * istd * istd * sdyx / cnt);
        float C = (float)(-g[c] * istd * sdy / cnt), M = (float)mean[c];
        for (int64_t e = 0; e < s; e++) {
            at[c * s + e] = A;
            bt[c * s + e] = B;
            ct[c * s + e] = C;
            mf[c * s + e] = M;
        }
    }
    if (!dx)
        return;
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + i * plane, *gr = dy + i * plane;
        float *o = dx + i * plane;
#pragma omp simd
        for (int64_t t = 0; t < len; t++)
            o[t] = at[t] * gr[t] + bt[t] * (r[t] - mf[t]) + ct[t];
    }
}

#undef NB
#undef NB_CAT
#undef NB_CAT2
