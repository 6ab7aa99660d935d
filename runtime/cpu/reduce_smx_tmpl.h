/* Softmax, LogSoftmax and Hardmax over the middle axis of an outer x c x
 * inner view, for one element type. reduce_softmax.c includes this once per
 * type with RT, RS and RT_EXP/RT_LOG defined. */
#define SMX_CAT2(a, b) a##_##b
#define SMX_CAT(a, b) SMX_CAT2(a, b)
#define SMX_FN(name) SMX_CAT(name, RS)

#define SMX_IB 256 /* inner elements one task handles */

static void SMX_FN(smx_row)(const RT *x, RT *y, int64_t c, int mode)
{
    if (mode == LT_RED_HARDMAX) {
        int64_t am = 0;
        for (int64_t j = 1; j < c; j++)
            if (x[j] > x[am])
                am = j;
        for (int64_t j = 0; j < c; j++)
            y[j] = 0;
        y[am] = 1;
        return;
    }
    /* max in 8 independent lanes: an omp simd max reduction keeps its
     * accumulator in memory with GCC */
    RT lane[8], m = x[0];
    for (int l = 0; l < 8; l++)
        lane[l] = x[0];
    int64_t j0 = 0;
    for (; j0 + 8 <= c; j0 += 8)
        for (int l = 0; l < 8; l++)
            lane[l] = x[j0 + l] > lane[l] ? x[j0 + l] : lane[l];
    for (int l = 0; l < 8; l++)
        m = lane[l] > m ? lane[l] : m;
    for (; j0 < c; j0++)
        m = x[j0] > m ? x[j0] : m;
    double s = 0;
    if (mode == LT_RED_SOFTMAX) {
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < c; j++) {
            RT e = RT_EXP(x[j] - m);
            y[j] = e;
            s += e;
        }
        RT inv = (RT)(1.0 / s);
#pragma omp simd
        for (int64_t j = 0; j < c; j++)
            y[j] *= inv;
    } else {
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < c; j++)
            s += RT_EXP(x[j] - m);
        /* (x - m) is exact for x near m; adding m back into log(s) first
         * would round away the low digits when m is large */
        RT ls = (RT)log(s);
#pragma omp simd
        for (int64_t j = 0; j < c; j++)
            y[j] = (x[j] - m) - ls;
    }
}

/* n <= SMX_IB lanes of stride-inner columns. */
static void SMX_FN(smx_cols)(const RT *x, RT *y, int64_t c, int64_t inner, int64_t n, int mode)
{
    RT m[SMX_IB];
    double s[SMX_IB];
    for (int64_t i = 0; i < n; i++) {
        m[i] = x[i];
        s[i] = 0;
    }
    if (mode == LT_RED_HARDMAX) {
        int64_t am[SMX_IB];
        for (int64_t i = 0; i < n; i++)
            am[i] = 0;
        for (int64_t j = 1; j < c; j++) {
            const RT *xj = x + j * inner;
            for (int64_t i = 0; i < n; i++)
                if (xj[i] > m[i]) {
                    m[i] = xj[i];
                    am[i] = j;
                }
        }
        for (int64_t j = 0; j < c; j++)
            for (int64_t i = 0; i < n; i++)
                y[j * inner + i] = 0;
        for (int64_t i = 0; i < n; i++)
            y[am[i] * inner + i] = 1;
        return;
    }
    for (int64_t j = 1; j < c; j++) {
        const RT *xj = x + j * inner;
#pragma omp simd
        for (int64_t i = 0; i < n; i++)
            m[i] = xj[i] > m[i] ? xj[i] : m[i];
    }
    if (mode == LT_RED_SOFTMAX) {
        for (int64_t j = 0; j < c; j++) {
            const RT *xj = x + j * inner;
            RT *yj = y + j * inner;
#pragma omp simd
            for (int64_t i = 0; i < n; i++) {
                RT e = RT_EXP(xj[i] - m[i]);
                yj[i] = e;
                s[i] += e;
            }
        }
        RT inv[SMX_IB];
        for (int64_t i = 0; i < n; i++)
            inv[i] = (RT)(1.0 / s[i]);
        for (int64_t j = 0; j < c; j++) {
            RT *yj = y + j * inner;
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                yj[i] *= inv[i];
        }
    } else {
        for (int64_t j = 0; j < c; j++) {
            const RT *xj = x + j * inner;
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                s[i] += RT_EXP(xj[i] - m[i]);
        }
        RT ls[SMX_IB];
        for (int64_t i = 0; i < n; i++)
            ls[i] = (RT)log(s[i]);
        for (int64_t j = 0; j < c; j++) {
            const RT *xj = x + j * inner;
            RT *yj = y + j * inner;
#pragma omp simd
            for (int64_t i = 0; i < n; i++)
                yj[i] = (xj[i] - m[i]) - ls[i];
        }
    }
}

void SMX_FN(lt_red_softmax)(const RT *x, RT *y, int64_t outer, int64_t c, int64_t inner, int mode)
{
    if (outer == 0 || c == 0 || inner == 0)
        return;
    double work = (double)outer * (double)c * (double)inner;
    if (inner == 1) {
#pragma omp parallel for schedule(static) if (work > LT_RED_PAR_MIN && outer > 1)
        for (int64_t o = 0; o < outer; o++)
            SMX_FN(smx_row)(x + o * c, y + o * c, c, mode);
        return;
    }
    int64_t nib = (inner + SMX_IB - 1) / SMX_IB;
#pragma omp parallel for schedule(static) if (work > LT_RED_PAR_MIN && outer * nib > 1)
    for (int64_t t = 0; t < outer * nib; t++) {
        int64_t o = t / nib, i0 = (t % nib) * SMX_IB;
        int64_t n = inner - i0 < SMX_IB ? inner - i0 : SMX_IB;
        size_t off = (size_t)(o * c * inner + i0);
        SMX_FN(smx_cols)(x + off, y + off, c, inner, n, mode);
    }
}

#undef SMX_IB
#undef SMX_FN
#undef SMX_CAT
#undef SMX_CAT2
