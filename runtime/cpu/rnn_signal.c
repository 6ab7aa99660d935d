/* Signal ops: DFT, STFT and MelWeightMatrix. Transforms run in double: a
 * table-driven direct sum for short lengths, radix-2 FFT for powers of
 * two, and Bluestein's chirp-z (through a power-of-two FFT) otherwise. */
#include "rnn_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

#define DIRECT_MAX 64

typedef struct fft_plan {
    int64_t n;
    int kind;       /* 0 direct, 1 radix-2, 2 Bluestein */
    int64_t m;      /* radix-2 length (n itself, or Bluestein's padded length) */
    double *cs, *sn; /* direct: cos/sin(2 pi j / n), j < n; radix-2: j < m/2 for m */
    double *chr, *chi; /* Bluestein: chirp exp(-i pi j^2 / n), j < n */
    double *bre, *bim; /* Bluestein: FFT of the conjugate chirp, length m */
    size_t work;    /* doubles of scratch per transform */
} fft_plan;

static bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* in-place forward radix-2 FFT of length p->m */
static void fft2(const fft_plan *p, double *re, double *im)
{
    int64_t m = p->m;
    for (int64_t i = 1, j = 0; i < m; i++) {
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double t = re[i];
            re[i] = re[j];
            re[j] = t;
            t = im[i];
            im[i] = im[j];
            im[j] = t;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        int64_t half = len >> 1, step = m / len;
        for (int64_t i = 0; i < m; i += len)
            for (int64_t j = 0; j < half; j++) {
                double wr = p->cs[j * step], wi = -p->sn[j * step];
                int64_t a = i + j, b = a + half;
                double xr = re[b] * wr - im[b] * wi, xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr;
                im[b] = im[a] - xi;
                re[a] += xr;
                im[a] += xi;
            }
    }
}

static lt_status plan_make(lt_kctx *k, int64_t n, fft_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    if (n <= DIRECT_MAX && !is_pow2(n)) {
        p->kind = 0;
        p->cs = lt_k_scratch(k, sizeof(double) * (size_t)n);
        p->sn = lt_k_scratch(k, sizeof(double) * (size_t)n);
        if (!p->cs || !p->sn)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        for (int64_t j = 0; j < n; j++) {
            p->cs[j] = cos(2 * M_PI * (double)j / (double)n);
            p->sn[j] = sin(2 * M_PI * (double)j / (double)n);
        }
        p->work = 2 * (size_t)n;
        return LT_OK;
    }
    p->kind = is_pow2(n) ? 1 : 2;
    p->m = n;
    if (p->kind == 2) {
        p->m = 1;
        while (p->m < 2 * n - 1)
            p->m <<= 1;
    }
    int64_t m = p->m;
    p->cs = lt_k_scratch(k, sizeof(double) * (size_t)(m / 2 + 1));
    p->sn = lt_k_scratch(k, sizeof(double) * (size_t)(m / 2 + 1));
    if (!p->cs || !p->sn)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j <= m / 2; j++) {
        p->cs[j] = cos(2 * M_PI * (double)j / (double)m);
        p->sn[j] = sin(2 * M_PI * (double)j / (double)m);
    }
    p->work = 2 * (size_t)m;
    if (p->kind == 1)
        return LT_OK;
    p->chr = lt_k_scratch(k, sizeof(double) * (size_t)n);
    p->chi = lt_k_scratch(k, sizeof(double) * (size_t)n);
    p->bre = lt_k_scratch(k, sizeof(double) * (size_t)m);
    p->bim = lt_k_scratch(k, sizeof(double) * (size_t)m);
    if (!p->chr || !p->chi || !p->bre || !p->bim)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j < n; j++) {
        /* j^2 mod 2n keeps the angle exact for long signals */
        double a = M_PI * (double)((j * j) % (2 * n)) / (double)n;
        p->chr[j] = cos(a);
        p->chi[j] = -sin(a);
    }
    memset(p->bre, 0, sizeof(double) * (size_t)m);
    memset(p->bim, 0, sizeof(double) * (size_t)m);
    for (int64_t j = 0; j < n; j++) {
        p->bre[j] = p->chr[j];
        p->bim[j] = -p->chi[j];
        if (j) {
            p->bre[m - j] = p->chr[j];
            p->bim[m - j] = -p->chi[j];
        }
    }
    fft2(p, p->bre, p->bim);
    return LT_OK;
}

/* Forward DFT of re/im (length n) in place; work holds p->work doubles. */
static void dft(const fft_plan *p, double *re, double *im, double *work)
{
    int64_t n = p->n;
    if (p->kind == 0) {
        double *wr = work, *wi = work + n;
        for (int64_t kk = 0; kk < n; kk++) {
            double sr = 0, si = 0;
            int64_t idx = 0;
            for (int64_t j = 0; j < n; j++) {
                double c = p->cs[idx], s = p->sn[idx];
                sr += re[j] * c + im[j] * s;
                si += im[j] * c - re[j] * s;
                idx += kk;
                if (idx >= n)
                    idx -= n;
            }
            wr[kk] = sr;
            wi[kk] = si;
        }
        memcpy(re, wr, sizeof *re * (size_t)n);
        memcpy(im, wi, sizeof *im * (size_t)n);
        return;
    }
    if (p->kind == 1) {
        fft2(p, re, im);
        return;
    }
    int64_t m = p->m;
    double *ar = work, *ai = work + m;
    for (int64_t j = 0; j < n; j++) {
        ar[j] = re[j] * p->chr[j] - im[j] * p->chi[j];
        ai[j] = re[j] * p->chi[j] + im[j] * p->chr[j];
    }
    memset(ar + n, 0, sizeof *ar * (size_t)(m - n));
    memset(ai + n, 0, sizeof *ai * (size_t)(m - n));
    fft2(p, ar, ai);
    /* multiply by the chirp's spectrum, then inverse FFT via conjugation */
    for (int64_t j = 0; j < m; j++) {
        double xr = ar[j] * p->bre[j] - ai[j] * p->bim[j], xi = ar[j] * p->bim[j] + ai[j] * p->bre[j];
        ar[j] = xr;
        ai[j] = -xi;
    }
    fft2(p, ar, ai);
    for (int64_t j = 0; j < n; j++) {
        double cr = ar[j] / (double)m, ci = -ai[j] / (double)m;
        re[j] = cr * p->chr[j] - ci * p->chi[j];
        im[j] = cr * p->chi[j] + ci * p->chr[j];
    }
}

static double get(const lt_tensor *t, int64_t i)
{
    return t->dtype == LT_F32 ? ((const float *)t->data)[i] : lt_tensor_get_f64(t, i);
}

static void put(lt_tensor *t, int64_t i, double v)
{
    if (t->dtype == LT_F32)
        ((float *)t->data)[i] = (float)v;
    else
        lt_tensor_set_f64(t, i, v);
}

static lt_status scalar_int(lt_kctx *k, const lt_tensor *t, const char *what, int64_t *v)
{
    if (t->numel != 1 || !lt_dtype_is_int(t->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must be an integer scalar", what);
    *v = lt_tensor_get_i64(t, 0);
    return LT_OK;
}

static lt_status dft_op(lt_kctx *k)
{
    const lt_tensor *X = lt_k_in(k, 0), *L = lt_k_in(k, 1);
    if (!X || !lt_dtype_is_float(X->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "DFT needs a float input");
    int r = X->rank;
    if (r < 2 || (X->dims[r - 1] != 1 && X->dims[r - 1] != 2))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be [..., 1] (real) or [..., 2] (complex)");
    /* opset 20 moved axis into input 2 (default -2) */
    int64_t axis = lt_attr_int(k->node, "axis", 1);
    const lt_tensor *A = k->node->opset >= 20 ? lt_k_in(k, 2) : NULL;
    if (k->node->opset >= 20)
        axis = -2;
    if (A) {
        lt_status s = scalar_int(k, A, "axis", &axis);
        if (s != LT_OK)
            return s;
    }
    int64_t axis_given = axis;
    bool inverse = lt_attr_int(k->node, "inverse", 0) != 0, onesided = lt_attr_int(k->node, "onesided", 0) != 0;
    /* inverse and onesided: X holds the first n/2 + 1 bins of a Hermitian
     * spectrum and Y is the real signal of length n (numpy's irfft) */
    bool irfft = inverse && onesided;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis > r - 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axis_given, r);
    int64_t nin = X->dims[axis], n = irfft ? 2 * (nin - 1) : nin;
    if (L) {
        lt_status s = scalar_int(k, L, "dft_length", &n);
        if (s != LT_OK)
            return s;
    }
    if (n < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "dft_length %lld must be positive", (long long)n);
    int64_t nout = onesided && !inverse ? n / 2 + 1 : n, c = X->dims[r - 1], oc = irfft ? 1 : 2;
    int64_t od[LT_MAX_RANK];
    memcpy(od, X->dims, sizeof od[0] * (size_t)r);
    od[axis] = nout;
    od[r - 1] = oc;
    lt_tensor *Y;
    lt_status s = lt_k_out(k, 0, X->dtype, r, od, &Y);
    if (s != LT_OK || Y->numel == 0)
        return s;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= X->dims[i];
    for (int i = (int)axis + 1; i < r - 1; i++)
        inner *= X->dims[i];
    fft_plan p;
    if ((s = plan_make(k, n, &p)) != LT_OK)
        return s;
    int nt = omp_get_max_threads();
    size_t per = p.work + 2 * (size_t)n;
    double *buf = lt_k_scratch(k, sizeof(double) * per * (size_t)nt);
    if (!buf)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    /* bins read from X: an irfft reads the half spectrum only and mirrors it */
    int64_t nsig = outer * inner, half = irfft ? n / 2 + 1 : n, take = nin < half ? nin : half;
#pragma omp parallel for num_threads(nt) if (nsig * n > 4096)
    for (int64_t sidx = 0; sidx < nsig; sidx++) {
        double *re = buf + per * (size_t)omp_get_thread_num(), *im = re + n, *work = im + n;
        int64_t o = sidx / inner, i = sidx % inner;
        for (int64_t j = 0; j < n; j++) {
            re[j] = im[j] = 0;
            if (j < take) {
                int64_t e = ((o * nin + j) * inner + i) * c;
                re[j] = get(X, e);
                im[j] = c == 2 ? get(X, e + 1) : 0.0;
            }
        }
        for (int64_t j = half; j < n; j++) {
            /* Z[j] = conj(Z[n - j]); n - j < half */
            re[j] = re[n - j];
            im[j] = -im[n - j];
        }
        /* the inverse transform as conj(DFT(conj(Z))) / n */
        for (int64_t j = 0; inverse && j < n; j++)
            im[j] = -im[j];
        dft(&p, re, im, work);
        for (int64_t kk = 0; kk < nout; kk++) {
            int64_t e = ((o * nout + kk) * inner + i) * oc;
            put(Y, e, inverse ? re[kk] / (double)n : re[kk]);
            /* an irfft keeps the real part alone: the imaginary parts of
             * bin 0 and bin n/2 drop out there, as in numpy */
            if (!irfft)
                put(Y, e + 1, inverse ? -im[kk] / (double)n : im[kk]);
        }
    }
    return LT_OK;
}

static lt_status stft_op(lt_kctx *k)
{
    const lt_tensor *X = lt_k_in(k, 0), *step_t = lt_k_in(k, 1), *win = lt_k_in(k, 2), *len_t = lt_k_in(k, 3);
    if (!X || !step_t || !lt_dtype_is_float(X->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "STFT needs a float signal and frame_step");
    if (!(X->rank == 3 && (X->dims[2] == 1 || X->dims[2] == 2)) && X->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "signal must be [batch, length, 1 or 2]");
    bool onesided = lt_attr_int(k->node, "onesided", 1) != 0;
    int64_t step, fl = -1, B = X->dims[0], L = X->dims[1], c = X->rank == 3 ? X->dims[2] : 1;
    lt_status s = scalar_int(k, step_t, "frame_step", &step);
    if (s == LT_OK && len_t)
        s = scalar_int(k, len_t, "frame_length", &fl);
    if (s != LT_OK)
        return s;
    if (win) {
        if (win->rank != 1 || (fl >= 0 && win->dims[0] != fl))
            return lt_k_fail(k, LT_ERR_RUNTIME, "window must be 1-D with frame_length elements");
        fl = win->dims[0];
    }
    if (fl < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "frame_length (or a window) is required and must be positive");
    if (step < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "frame_step %lld must be positive", (long long)step);
    if (L < fl)
        return lt_k_fail(k, LT_ERR_RUNTIME, "signal length %lld is shorter than a frame (%lld)", (long long)L,
                         (long long)fl);
    int64_t frames = (L - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl;
    int64_t od[4] = {B, frames, bins, 2};
    lt_tensor *Y;
    if ((s = lt_k_out(k, 0, X->dtype, 4, od, &Y)) != LT_OK || Y->numel == 0)
        return s;
    fft_plan p;
    if ((s = plan_make(k, fl, &p)) != LT_OK)
        return s;
    int nt = omp_get_max_threads();
    size_t per = p.work + 2 * (size_t)fl;
    double *buf = lt_k_scratch(k, sizeof(double) * per * (size_t)nt);
    if (!buf)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
#pragma omp parallel for num_threads(nt) if (B * frames * fl > 4096)
    for (int64_t sidx = 0; sidx < B * frames; sidx++) {
        double *re = buf + per * (size_t)omp_get_thread_num(), *im = re + fl, *work = im + fl;
        int64_t b = sidx / frames, f = sidx % frames;
        for (int64_t j = 0; j < fl; j++) {
            int64_t e = (b * L + f * step + j) * c;
            double w = win ? get(win, j) : 1.0;
            re[j] = get(X, e) * w;
            im[j] = c == 2 ? get(X, e + 1) * w : 0.0;
        }
        dft(&p, re, im, work);
        for (int64_t kk = 0; kk < bins; kk++) {
            put(Y, (sidx * bins + kk) * 2, re[kk]);
            put(Y, (sidx * bins + kk) * 2 + 1, im[kk]);
        }
    }
    return LT_OK;
}

static lt_status mel_weight_matrix(lt_kctx *k)
{
    const lt_tensor *in[5];
    for (int i = 0; i < 5; i++)
        if (!(in[i] = lt_k_in(k, i)) || in[i]->numel != 1)
            return lt_k_fail(k, LT_ERR_RUNTIME, "input %d must be a scalar", i);
    int64_t nmel = 0, n = 0, rate = 0;
    lt_status s = scalar_int(k, in[0], "num_mel_bins", &nmel);
    if (s == LT_OK)
        s = scalar_int(k, in[1], "dft_length", &n);
    if (s == LT_OK)
        s = scalar_int(k, in[2], "sample_rate", &rate);
    if (s != LT_OK)
        return s;
    if (nmel < 1 || n < 1 || rate < 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "num_mel_bins, dft_length and sample_rate must be positive");
    int64_t odt = lt_attr_int(k->node, "output_datatype", LT_F32);
    if (odt <= 0 || odt >= LT_DTYPE_COUNT || lt_dtype_size((lt_dtype)odt) == 0 || odt == LT_STRING)
        return lt_k_fail(k, LT_ERR_INVALID, "output_datatype %lld is not a numeric type", (long long)odt);
    int64_t nbins = n / 2 + 1, od[2] = {nbins, nmel};
    lt_tensor *Y;
    if ((s = lt_k_out(k, 0, (lt_dtype)odt, 2, od, &Y)) != LT_OK)
        return s;
    int64_t *fb = lt_k_scratch(k, sizeof *fb * (size_t)(nmel + 2));
    double *w = lt_k_scratch(k, sizeof *w * (size_t)(Y->numel ? Y->numel : 1));
    if (!fb || !w)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    /* mel edges in float as the reference computes them, then bins in double */
    float lo = (float)lt_tensor_get_f64(in[3], 0), hi = (float)lt_tensor_get_f64(in[4], 0);
    float lo_mel = 2595.0f * log10f(1.0f + lo / 700.0f), hi_mel = 2595.0f * log10f(1.0f + hi / 700.0f);
    float mel_step = (hi_mel - lo_mel) / (float)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double mel = (double)i * (double)mel_step + (double)lo_mel;
        double hz = 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
        fb[i] = (int64_t)floor((double)(n + 1) * hz / (double)rate);
    }
    memset(w, 0, sizeof *w * (size_t)Y->numel);
    for (int64_t i = 0; i < nmel; i++) {
        int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
        if (c == l) {
            if (c >= 0 && c < nbins)
                w[c * nmel + i] = 1.0;
        } else {
            for (int64_t j = l; j <= c; j++)
                if (j >= 0 && j < nbins)
                    w[j * nmel + i] = (double)(j - l) / (double)(c - l);
        }
        if (h > c)
            for (int64_t j = c; j < h; j++)
                if (j >= 0 && j < nbins)
                    w[j * nmel + i] = (double)(h - j) / (double)(h - c);
    }
    for (int64_t j = 0; j < Y->numel; j++)
        lt_tensor_set_f64(Y, j, w[j]);
    return LT_OK;
}

void lt_rnn_register_signal(lt_kernel_fn *tab)
{
    tab[LT_OP_DFT] = dft_op;
    tab[LT_OP_STFT] = stft_op;
    tab[LT_OP_MEL_WEIGHT_MATRIX] = mel_weight_matrix;
}
