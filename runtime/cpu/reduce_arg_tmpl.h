/* ArgMax/ArgMin and CumSum loops over an outer x r x inner view for one
 * element type. reduce_arg.c includes this once per type with RT (the type),
 * RACC (the accumulator of CumSum) and RS (a name suffix) defined. */
#define ARG_CAT2(a, b) a##_##b
#define ARG_CAT(a, b) ARG_CAT2(a, b)
#define ARG_FN(name) ARG_CAT(name, RS)

/* Whether v should replace the current best b. A NaN beats any number and
 * then stays (numpy returns the first NaN); ties go to the first index
 * unless last is set. */
static inline bool ARG_FN(arg_better)(RT v, RT b, bool mx, bool last)
{
    bool vn = isnan((double)v), bn = isnan((double)b);
    if (vn || bn)
        return vn && !bn;
    if (mx)
        return last ? v >= b : v > b;
    return last ? v <= b : v < b;
}

/* yi[o*inner + i] = arg over r; best: scratch of outer*inner RT. */
static void ARG_FN(arg_run)(const RT *x, RT *best, int64_t *yi, int64_t outer, int64_t r, int64_t inner, bool mx,
                            bool last)
{
#pragma omp parallel for schedule(static) if (outer * r * inner > LT_RED_PAR_MIN && outer > 1)
    for (int64_t o = 0; o < outer; o++) {
        const RT *xo = x + o * r * inner;
        RT *b = best + o * inner;
        int64_t *id = yi + o * inner;
        for (int64_t i = 0; i < inner; i++) {
            b[i] = xo[i];
            id[i] = 0;
        }
        for (int64_t q = 1; q < r; q++) {
            const RT *xq = xo + q * inner;
            for (int64_t i = 0; i < inner; i++)
                if (ARG_FN(arg_better)(xq[i], b[i], mx, last)) {
                    b[i] = xq[i];
                    id[i] = q;
                }
        }
    }
}

/* Inclusive or exclusive running sums along r, forwards or backwards. */
static void ARG_FN(cumsum_run)(const RT *x, RT *y, int64_t outer, int64_t r, int64_t inner, bool excl, bool rev)
{
    int64_t nib = (inner + 255) / 256;
#pragma omp parallel for schedule(static) if (outer * r * inner > LT_RED_PAR_MIN && outer * nib > 1)
    for (int64_t t = 0; t < outer * nib; t++) {
        int64_t o = t / nib, i0 = (t % nib) * 256, n = inner - i0 < 256 ? inner - i0 : 256;
        RACC a[256];
        for (int64_t i = 0; i < n; i++)
            a[i] = 0;
        for (int64_t s = 0; s < r; s++) {
            int64_t q = rev ? r - 1 - s : s;
            size_t off = (size_t)((o * r + q) * inner + i0);
            const RT *xq = x + off;
            RT *yq = y + off;
            if (excl) {
#pragma omp simd
                for (int64_t i = 0; i < n; i++) {
                    yq[i] = (RT)a[i];
                    a[i] += (RACC)xq[i];
                }
            } else {
#pragma omp simd
                for (int64_t i = 0; i < n; i++) {
                    a[i] += (RACC)xq[i];
                    yq[i] = (RT)a[i];
                }
            }
        }
    }
}

#undef ARG_FN
#undef ARG_CAT
#undef ARG_CAT2
