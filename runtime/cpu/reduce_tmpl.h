/* Inner loops of the reduction core for one element type. reduce_core.c
 * includes this once per type with RT (the element type), RS (a name suffix)
 * and RT_EXP (the exp function of that type) defined. Accumulation is in
 * double whatever RT is: sums of many floats keep their accuracy. */
#define RED_CAT2(a, b) a##_##b
#define RED_CAT(a, b) RED_CAT2(a, b)
#define RED_FN(name) RED_CAT(name, RS)

/* pre(x[0..n)) combined into one double. */
static double RED_FN(row)(const void *xv, int64_t n, int pre, int comb, double sh)
{
    const RT *x = xv;
    double a = 0;
    if (comb == LT_RED_ADD) {
        switch (pre) {
        case LT_RED_PRE_ID:
#pragma omp simd reduction(+ : a)
            for (int64_t i = 0; i < n; i++)
                a += (double)x[i];
            break;
        case LT_RED_PRE_ABS:
#pragma omp simd reduction(+ : a)
            for (int64_t i = 0; i < n; i++)
                a += fabs((double)x[i]);
            break;
        case LT_RED_PRE_SQ:
#pragma omp simd reduction(+ : a)
            for (int64_t i = 0; i < n; i++) {
                double v = x[i];
                a += v * v;
            }
            break;
        case LT_RED_PRE_EXP: {
            /* the shift is a max of RT values, so exact in RT */
            RT s = (RT)sh;
#pragma omp simd reduction(+ : a)
            for (int64_t i = 0; i < n; i++)
                a += (double)RT_EXP(x[i] - s);
            break;
        }
        case LT_RED_PRE_SQDEV:
#pragma omp simd reduction(+ : a)
            for (int64_t i = 0; i < n; i++) {
                double v = (double)x[i] - sh;
                a += v * v;
            }
            break;
        }
    } else if (comb == LT_RED_MUL) {
        a = 1;
        for (int64_t i = 0; i < n; i++)
            a *= (double)x[i];
    } else {
        /* max / min in 8 independent lanes (an omp simd max reduction keeps
         * its accumulator in memory with GCC); NaN sticks in its lane, as
         * numpy propagates it */
        bool mx = comb == LT_RED_MAX;
        RT lane[8];
        for (int l = 0; l < 8; l++)
            lane[l] = mx ? (RT)-INFINITY : (RT)INFINITY;
        int64_t i = 0;
        if (mx)
            for (; i + 8 <= n; i += 8)
                for (int l = 0; l < 8; l++) {
                    RT v = x[i + l];
                    lane[l] = (v > lane[l] || v != v) ? v : lane[l];
                }
        else
            for (; i + 8 <= n; i += 8)
                for (int l = 0; l < 8; l++) {
                    RT v = x[i + l];
                    lane[l] = (v < lane[l] || v != v) ? v : lane[l];
                }
        a = mx ? -INFINITY : INFINITY;
        int nan = 0;
        for (int l = 0; l < 8; l++) {
            double v = lane[l];
            a = mx ? (v > a ? v : a) : (v < a ? v : a);
            nan |= v != v;
        }
        for (; i < n; i++) {
            double v = x[i];
            a = mx ? (v > a ? v : a) : (v < a ? v : a);
            nan |= v != v;
        }
        if (nan)
            a = NAN;
    }
    return a;
}

/* acc[i] = combine(acc[i], pre(x[i])) for i < n; sh[i] is the shift of
 * PRE_EXP and PRE_SQDEV. */
static void RED_FN(vec)(const void *xv, int64_t n, int pre, int comb, const double *sh, double *acc)
{
    const RT *x = xv;
    switch (comb) {
    case LT_RED_ADD:
        switch (pre) {
        case LT_RED_PRE_ID:
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                acc[i] += (double)x[i];
            break;
        case LT_RED_PRE_ABS:
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                acc[i] += fabs((double)x[i]);
            break;
        case LT_RED_PRE_SQ:
#pragma omp simd
            for (int64_t i = 0; i < n; i++) {
                double v = x[i];
                acc[i] += v * v;
            }
            break;
        case LT_RED_PRE_EXP:
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                acc[i] += (double)RT_EXP(x[i] - (RT)sh[i]);
            break;
        case LT_RED_PRE_SQDEV:
#pragma omp simd
            for (int64_t i = 0; i < n; i++) {
                double v = (double)x[i] - sh[i];
                acc[i] += v * v;
            }
            break;
        }
        break;
    case LT_RED_MUL:
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            acc[i] *= (double)x[i];
        break;
    case LT_RED_MAX:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            double v = x[i];
            acc[i] = (v > acc[i] || v != v) ? v : acc[i];
        }
        break;
    case LT_RED_MIN:
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            double v = x[i];
            acc[i] = (v < acc[i] || v != v) ? v : acc[i];
        }
        break;
    }
}

#undef RED_FN
#undef RED_CAT
#undef RED_CAT2
