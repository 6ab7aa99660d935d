/* ReduceSumLike loops for one element type, included by grad_misc_sum.c
 * with T (element), ACC (accumulator), RS (name suffix) and RSL_SAME (1 when
 * T and ACC are the same type) defined. */
#define RSL_CAT2(a, b) a##_##b
#define RSL_CAT(a, b) RSL_CAT2(a, b)
#define RSL_FN(name) RSL_CAT(rsl_##name, RS)

/* acc[out(p)] += g[p] for p in [lo, hi): whole runs of the innermost axis,
 * either added into a kept output row or summed into one output element;
 * an odometer over the outer axes keeps the output offset. */
static void RSL_FN(by_input)(const T *g, const rsl_plan *p, int64_t lo, int64_t hi, ACC *acc)
{
    if (lo >= hi)
        return;
    int last = p->m - 1;
    int64_t L = p->d[last], run = lo / L, j = lo % L, idx[LT_MAX_RANK], ooff = 0;
    for (int a = last - 1; a >= 0; a--) {
        idx[a] = run % p->d[a];
        run /= p->d[a];
        ooff += idx[a] * p->os[a];
    }
    bool red_inner = p->red[last];
    for (int64_t pos = lo; pos < hi;) {
        int64_t len = L - j < hi - pos ? L - j : hi - pos;
        const T *src = g + pos;
        if (red_inner) {
            ACC s = 0;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < len; i++)
                s += (ACC)src[i];
            acc[ooff] += s;
        } else {
            ACC *dst = acc + ooff + j;
#pragma omp simd
            for (int64_t i = 0; i < len; i++)
                dst[i] += (ACC)src[i];
        }
        pos += len;
        j = 0;
        for (int a = last - 1; a >= 0; a--) {
            ooff += p->os[a];
            if (++idx[a] < p->d[a])
                break;
            ooff -= p->os[a] * p->d[a];
            idx[a] = 0;
        }
    }
}

/* out[q] for q in [a0, a1), each summed over the reduced offsets p->roff. */
static void RSL_FN(by_output)(const T *g, const rsl_plan *p, int64_t a0, int64_t a1, T *out)
{
    int last = p->m - 1;
    int64_t L = p->d[last];
    if (p->red[last]) {
        for (int64_t q = a0; q < a1; q++) {
            const T *base = g + rsl_goff(p, q);
            ACC s = 0;
            for (int64_t r = 0; r < p->nr; r++) {
                const T *src = base + p->roff[r];
#pragma omp simd reduction(+ : s)
                for (int64_t i = 0; i < L; i++)
                    s += (ACC)src[i];
            }
            out[q] = (T)s;
        }
        return;
    }
    ACC acc[RSL_BLOCK];
    for (int64_t q = a0; q < a1;) {
        int64_t j = q % L, len = L - j < a1 - q ? L - j : a1 - q;
        const T *base = g + rsl_goff(p, q);
        for (int64_t c0 = 0; c0 < len; c0 += RSL_BLOCK) {
            int64_t n = len - c0 < RSL_BLOCK ? len - c0 : RSL_BLOCK;
            for (int64_t i = 0; i < n; i++)
                acc[i] = 0;
            for (int64_t r = 0; r < p->nr; r++) {
                const T *src = base + p->roff[r] + c0;
#pragma omp simd
                for (int64_t i = 0; i < n; i++)
                    acc[i] += (ACC)src[i];
            }
            for (int64_t i = 0; i < n; i++)
                out[q + c0 + i] = (T)acc[i];
        }
        q += len;
    }
}

/* The whole reduction: one pass in memory order when small; per-thread
 * partial sums over input chunks when the output is much smaller than the
 * input; else each thread computes its own range of outputs. */
static lt_status RSL_FN(run)(lt_kctx *k, const T *g, T *out, rsl_plan *p)
{
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    int64_t gn = p->gn, on = p->on;
    if (gn < LT_GM_PAR_MIN || nt < 2) {
        ACC *acc = RSL_SAME ? (ACC *)(void *)out : lt_k_scratch(k, sizeof(ACC) * (size_t)on);
        if (!acc)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        memset(acc, 0, sizeof(ACC) * (size_t)on);
        RSL_FN(by_input)(g, p, 0, gn, acc);
        if (!RSL_SAME)
            for (int64_t q = 0; q < on; q++)
                out[q] = (T)acc[q];
        return LT_OK;
    }
    if (on <= gn / (8 * (int64_t)nt)) {
        ACC *part = lt_k_scratch(k, sizeof(ACC) * (size_t)on * (size_t)nt);
        if (!part)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            ACC *mine = part + (size_t)t * (size_t)on;
            memset(mine, 0, sizeof(ACC) * (size_t)on);
            RSL_FN(by_input)(g, p, rsl_chunk(gn, t, n), rsl_chunk(gn, t + 1, n), mine);
#pragma omp barrier
            /* partials are added in thread order: the result does not depend
             * on which thread finished first */
            for (int64_t q = rsl_chunk(on, t, n), e = rsl_chunk(on, t + 1, n); q < e; q++) {
                ACC s = 0;
                for (int u = 0; u < n; u++)
                    s += part[(size_t)u * (size_t)on + (size_t)q];
                out[q] = (T)s;
            }
        }
        return LT_OK;
    }
    lt_status st = rsl_offsets(k, p);
    if (st != LT_OK)
        return st;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        RSL_FN(by_output)(g, p, rsl_chunk(on, t, n), rsl_chunk(on, t + 1, n), out);
    }
    return LT_OK;
}

#undef RSL_FN
#undef RSL_CAT
#undef RSL_CAT2
