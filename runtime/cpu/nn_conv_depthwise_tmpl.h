/* The depthwise convolution's row-by-row plane tasks for one float type,
 * included by nn_conv_depthwise.c with T and SFX (name suffix) defined.
 * For each filter tap the grid columns whose image column lies inside the
 * image form one range [lo, hi) (dw_geom), so the inner loops carry no
 * bounds tests. */
#define DW_CAT2(a, b) a##_##b
#define DW_CAT(a, b) DW_CAT2(a, b)
#define DW_FN(name) DW_CAT(name, SFX)

/* y[oy, ox] = bias + sum over taps (ky, kx in order) of w * x at the tap */
static void DW_FN(plane_fwd)(const dw_geom *v, const T *x, const T *w, T bias, T *y)
{
    for (int64_t oy = 0; oy < v->oh; oy++) {
        T *yr = y + oy * v->ow;
        for (int64_t ox = 0; ox < v->ow; ox++)
            yr[ox] = bias;
        for (int64_t ky = 0; ky < v->kh; ky++) {
            int64_t iy = oy * v->sh - v->ph + ky * v->dh;
            if (iy < 0 || iy >= v->ih)
                continue;
            const T *xr = x + iy * v->iw;
            for (int64_t kx = 0; kx < v->kw; kx++) {
                int64_t lo = v->lo[kx], hi = v->hi[kx], off = kx * v->dw - v->pw;
                T wv = w[ky * v->kw + kx];
                if (v->sw == 1) {
                    const T *xs = xr + off;
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++)
                        yr[ox] += wv * xs[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++)
                        yr[ox] += wv * xr[ox * v->sw + off];
                }
            }
        }
    }
}

/* dx += the adjoint: each grid value times each tap's weight, back at the
 * tap */
static void DW_FN(plane_back)(const dw_geom *v, const T *dy, const T *w, T *dx)
{
    for (int64_t oy = 0; oy < v->oh; oy++) {
        const T *gr = dy + oy * v->ow;
        for (int64_t ky = 0; ky < v->kh; ky++) {
            int64_t iy = oy * v->sh - v->ph + ky * v->dh;
            if (iy < 0 || iy >= v->ih)
                continue;
            T *xr = dx + iy * v->iw;
            for (int64_t kx = 0; kx < v->kw; kx++) {
                int64_t lo = v->lo[kx], hi = v->hi[kx], off = kx * v->dw - v->pw;
                T wv = w[ky * v->kw + kx];
                if (v->sw == 1) {
                    T *xs = xr + off;
#pragma omp simd
                    for (int64_t ox = lo; ox < hi; ox++)
                        xs[ox] += wv * gr[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++)
                        xr[ox * v->sw + off] += wv * gr[ox];
                }
            }
        }
    }
}

/* sums[tap] += the plane's sum of dy times the tap's image values, one
 * grid row's dot product at a time */
static void DW_FN(plane_filter)(const dw_geom *v, const T *dy, const T *x, double *sums)
{
    for (int64_t oy = 0; oy < v->oh; oy++) {
        const T *gr = dy + oy * v->ow;
        for (int64_t ky = 0; ky < v->kh; ky++) {
            int64_t iy = oy * v->sh - v->ph + ky * v->dh;
            if (iy < 0 || iy >= v->ih)
                continue;
            const T *xr = x + iy * v->iw;
            for (int64_t kx = 0; kx < v->kw; kx++) {
                int64_t lo = v->lo[kx], hi = v->hi[kx], off = kx * v->dw - v->pw;
                T dot = 0;
                if (v->sw == 1) {
                    const T *xs = xr + off;
#pragma omp simd reduction(+ : dot)
                    for (int64_t ox = lo; ox < hi; ox++)
                        dot += gr[ox] * xs[ox];
                } else {
                    for (int64_t ox = lo; ox < hi; ox++)
                        dot += gr[ox] * xr[ox * v->sw + off];
                }
                sums[ky * v->kw + kx] += (double)dot;
            }
        }
    }
}

/* plane it = (image, output channel) of y */
static void DW_FN(fwd_task)(const dw_geom *v, const void *x, const void *w, const void *b, void *y, int64_t it,
                            int64_t c, int64_t m)
{
    int64_t img = it / m, o = it % m, ch = o / (m / c);
    const T *xs = (const T *)x + (img * c + ch) * v->ih * v->iw, *ws = (const T *)w + o * v->kh * v->kw;
    DW_FN(plane_fwd)(v, xs, ws, b ? ((const T *)b)[o] : (T)0, (T *)y + it * v->oh * v->ow);
}

/* plane it = (image, input channel) of dx: its output channels' shares in
 * order */
static void DW_FN(back_task)(const dw_geom *v, const void *dy, const void *w, void *dx, int64_t it, int64_t c,
                             int64_t m)
{
    int64_t img = it / c, ch = it % c, mult = m / c;
    T *xs = (T *)dx + it * v->ih * v->iw;
    memset(xs, 0, sizeof(T) * (size_t)(v->ih * v->iw));
    for (int64_t j = 0; j < mult; j++) {
        int64_t o = ch * mult + j;
        DW_FN(plane_back)(v, (const T *)dy + (img * m + o) * v->oh * v->ow, (const T *)w + o * v->kh * v->kw, xs);
    }
}

/* output channel o's taps of dW, summed over the n images in order */
static void DW_FN(filter_task)(const dw_geom *v, const void *dy, const void *x, void *dw, int64_t o, int64_t n,
                               int64_t c, int64_t m)
{
    int64_t ch = o / (m / c), taps = v->kh * v->kw;
    double sums[LT_NN_DW_MAX_TAPS];
    memset(sums, 0, sizeof(double) * (size_t)taps);
    for (int64_t img = 0; img < n; img++)
        DW_FN(plane_filter)(v, (const T *)dy + (img * m + o) * v->oh * v->ow,
                            (const T *)x + (img * c + ch) * v->ih * v->iw, sums);
    for (int64_t t = 0; t < taps; t++)
        ((T *)dw)[o * taps + t] = (T)sums[t];
}

#undef DW_FN
#undef DW_CAT
#undef DW_CAT2
