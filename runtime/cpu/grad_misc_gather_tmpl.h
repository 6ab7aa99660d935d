/* Scatter-add loops of the gather gradients for one float type, included by
 * grad_misc_gather.c with T and RS (name suffix) defined. Every loop adds
 * the contributions to one destination in source order whatever the thread
 * count, so results are reproducible. */
#define GG_CAT2(a, b) a##_##b
#define GG_CAT(a, b) GG_CAT2(a, b)
#define GG_FN(name) GG_CAT(gg_##name, RS)

/* dst[row[r]*inner + i] += src[r*inner + i] for r < rows (dst zeroed by the
 * caller). Threads split the columns when rows are wide, else the
 * destination rows (row % nt): either way no two threads touch one element. */
static void GG_FN(rows)(T *dst, const T *src, const int64_t *row, int64_t rows, int64_t inner)
{
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (rows * inner < LT_GM_PAR_MIN || nt < 2) {
        for (int64_t r = 0; r < rows; r++) {
            T *d = dst + row[r] * inner;
            const T *s = src + r * inner;
#pragma omp simd
            for (int64_t i = 0; i < inner; i++)
                d[i] += s[i];
        }
        return;
    }
    if (inner >= 64 * (int64_t)nt) {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            int64_t c0 = inner / n * t + (t < inner % n ? t : inner % n);
            int64_t c1 = inner / n * (t + 1) + (t + 1 < inner % n ? t + 1 : inner % n);
            for (int64_t r = 0; r < rows; r++) {
                T *d = dst + row[r] * inner;
                const T *s = src + r * inner;
#pragma omp simd
                for (int64_t i = c0; i < c1; i++)
                    d[i] += s[i];
            }
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        for (int64_t r = 0; r < rows; r++) {
            if (row[r] % n != t)
                continue;
            T *d = dst + row[r] * inner;
            const T *s = src + r * inner;
#pragma omp simd
            for (int64_t i = 0; i < inner; i++)
                d[i] += s[i];
        }
    }
}

/* GatherElements' scatter: dst[base(o) + w*sa + inoff(i)] += dy[(o*na + a)*inner + i]
 * with w the wrapped index at that position. Tasks are (o, block of i):
 * distinct tasks write distinct destinations. */
static void GG_FN(elements)(T *dst, const T *dy, const int64_t *w, const gg_el *e)
{
    int64_t nb = (e->inner + GG_BLOCK - 1) / GG_BLOCK, tasks = e->outer * nb;
#pragma omp parallel for schedule(static) if (e->outer * e->na * e->inner > LT_GM_PAR_MIN)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / nb, i0 = (t % nb) * GG_BLOCK;
        int64_t i1 = i0 + GG_BLOCK < e->inner ? i0 + GG_BLOCK : e->inner;
        int64_t base = gg_el_base(e, o);
        for (int64_t a = 0; a < e->na; a++) {
            int64_t p = (o * e->na + a) * e->inner;
            for (int64_t i = i0; i < i1; i++)
                dst[base + w[p + i] * e->sa + (e->inoff ? e->inoff[i] : i)] += dy[p + i];
        }
    }
}

#undef GG_FN
#undef GG_CAT
#undef GG_CAT2
