/* ReduceSumLike loops for one element type, included by grad_misc_sum.c
 * with T (element), ACC (accumulator), RS (name suffix) and RSL_SAME (1 when
 * T and ACC are the same type) defined. */
#define RSL_CAT2(a, b) a##_##b
#define RSL_CAT(a, b) RSL_CAT2(a, b)
#define RSL_FN(name) RSL_CAT(rsl_##name, RS)

/* acc[j % L] += src[j - q] for j in [q, q + len): a stretch of a short kept
 * run repeated along a reduced axis. Whole blocks of rows go through a
 * local accumulator so that the inner loop stays long. */
static void RSL_FN(fold_cols)(ACC *acc, const T *src, int64_t q, int64_t len, int64_t L)
{
    int64_t i = 0, c = q % L;
    for (; i < len && c != 0; i++, c = c + 1 == L ? 0 : c + 1)
        acc[c] += (ACC)src[i];
    int64_t B = (RSL_BLOCK / L) * L, nb = (len - i) / B;
    if (nb > 0) {
        ACC loc[RSL_BLOCK];
        for (int64_t j = 0; j < B; j++)
            loc[j] = 0;
        for (int64_t b = 0; b < nb; b++) {
            const T *s = src + i + b * B;
#pragma omp simd
            for (int64_t j = 0; j < B; j++)
                loc[j] += (ACC)s[j];
        }
        for (int64_t j = 0; j < B; j++)
            acc[j % L] += loc[j];
        i += nb * B;
    }
    for (c = 0; i < len; i++, c = c + 1 == L ? 0 : c + 1)
        acc[c] += (ACC)src[i];
}

/* acc[j / L] += src[j - q] for j in [q, q + len): short reduced runs, one
 * per element of a kept axis. */
static void RSL_FN(fold_rows)(ACC *acc, const T *src, int64_t q, int64_t len, int64_t L)
{
    int64_t i = 0, row = q / L;
    if (q % L) {
        ACC s = 0;
        for (int64_t c = q % L; i < len && c < L; i++, c++)
            s += (ACC)src[i];
        acc[row++] += s;
    }
    for (; i + L <= len; i += L, row++) {
        ACC s = 0;
        for (int64_t c = 0; c < L; c++)
            s += (ACC)src[i + c];
        acc[row] += s;
    }
    if (i < len) {
        ACC s = 0;
        for (; i < len; i++)
            s += (ACC)src[i];
        acc[row] += s;
    }
}

/* acc[out(p)] += g[p] for p in [lo, hi), in memory order: runs of the
 * innermost axis (of the two innermost when the last is short), either
 * added into a kept output row or summed into output elements; an
 * odometer over the outer axes keeps the output offset. */
static void RSL_FN(by_input)(const T *g, const rsl_plan *p, int64_t lo, int64_t hi, ACC *acc)
{
    if (lo >= hi)
        return;
    int last = p->m - 1;
    int64_t L = p->d[last];
    bool red_inner = p->red[last], two = p->m >= 2 && L < RSL_SHORT;
    int top = two ? last - 1 : last;
    int64_t S = two ? L * p->d[last - 1] : L, run = lo / S, q = lo % S, idx[LT_MAX_RANK], ooff = 0;
    for (int a = top - 1; a >= 0; a--) {
        idx[a] = run % p->d[a];
        run /= p->d[a];
        ooff += idx[a] * p->os[a];
    }
    for (int64_t pos = lo; pos < hi;) {
        int64_t len = S - q < hi - pos ? S - q : hi - pos;
        const T *src = g + pos;
        if (two && red_inner) {
            RSL_FN(fold_rows)(acc + ooff, src, q, len, L);
        } else if (two) {
            RSL_FN(fold_cols)(acc + ooff, src, q, len, L);
        } else if (red_inner) {
            ACC s = 0;
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < len; i++)
                s += (ACC)src[i];
            acc[ooff] += s;
        } else if (q == 0 && len == L && top > 0 && idx[top - 1] + 4 <= p->d[top - 1] && hi - pos >= 4 * L) {
            /* four whole rows along the reduced axis before: one pass over acc */
            ACC *dst = acc + ooff;
#pragma omp simd
            for (int64_t i = 0; i < L; i++)
                dst[i] += ((ACC)src[i] + (ACC)src[i + L]) + ((ACC)src[i + 2 * L] + (ACC)src[i + 3 * L]);
            len = 4 * L;
            idx[top - 1] += 3; /* os is 0 there: ooff stays; the step below adds the fourth */
        } else {
            ACC *dst = acc + ooff + q;
#pragma omp simd
            for (int64_t i = 0; i < len; i++)
                dst[i] += (ACC)src[i];
        }
        pos += len;
        q = 0;
        for (int a = top - 1; a >= 0; a--) {
            ooff += p->os[a];
            if (++idx[a] < p->d[a])
                break;
            ooff -= p->os[a] * p->d[a];
            idx[a] = 0;
        }
    }
}

/* out[q] for q in [a0, a1), each summed over the reduced offsets p->roff:
 * by segments (a row of the last axis when it is kept, else one element),
 * with an odometer over the kept axes giving each segment's place in g. */
static void RSL_FN(by_output)(const T *g, const rsl_plan *p, int64_t a0, int64_t a1, T *out)
{
    if (a0 >= a1)
        return;
    int last = p->m - 1;
    bool red_inner = p->red[last];
    int64_t L = p->d[last], W = red_inner ? 1 : L, seg = a0 / W, j = a0 % W, idx[LT_MAX_RANK], goff = 0;
    int top = red_inner ? p->m : last;
    for (int a = top - 1; a >= 0; a--)
        if (!p->red[a]) {
            idx[a] = seg % p->d[a];
            seg /= p->d[a];
            goff += idx[a] * p->gs[a];
        }
    ACC acc[RSL_BLOCK];
    for (int64_t q = a0; q < a1;) {
        int64_t len = W - j < a1 - q ? W - j : a1 - q;
        const T *base = g + goff + j;
        if (red_inner) {
            ACC s = 0;
            for (int64_t r = 0; r < p->nr; r++) {
                const T *src = base + p->roff[r];
#pragma omp simd reduction(+ : s)
                for (int64_t i = 0; i < L; i++)
                    s += (ACC)src[i];
            }
            out[q] = (T)s;
        } else {
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
        }
        q += len;
        j = 0;
        for (int a = top - 1; a >= 0; a--) {
            if (p->red[a])
                continue;
            goff += p->gs[a];
            if (++idx[a] < p->d[a])
                break;
            goff -= p->gs[a] * p->d[a];
            idx[a] = 0;
        }
    }
}

/* The whole reduction. Strong reductions walk g once in memory order
 * (by_input; partial sums over pieces of g when large); mild ones compute
 * each output from its few sources (by_output) with no accumulator array.
 * The choice and the pieces follow from the sizes (par.h), never from the
 * thread count: the sums' order, so their bits, stay the same on any. */
static lt_status RSL_FN(run)(lt_kctx *k, const T *g, T *out, rsl_plan *p)
{
    int64_t gn = p->gn, on = p->on;
    bool worth = gn >= LT_GM_PAR_MIN;
    int np = worth ? LT_PAR_PLAN : 1;
    if (on > gn / (8 * (int64_t)np)) {
        lt_status st = rsl_offsets(k, p);
        if (st != LT_OK)
            return st;
        int nt = lt_par_threads(on, worth);
        if (nt < 2) {
            RSL_FN(by_output)(g, p, 0, on, out);
            return LT_OK;
        }
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), n = omp_get_num_threads();
            RSL_FN(by_output)(g, p, rsl_chunk(on, t, n), rsl_chunk(on, t + 1, n), out);
        }
        return LT_OK;
    }
    if (np < 2) {
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
    /* on <= gn / (8 np): np partial outputs cost little next to reading g */
    ACC *part = lt_k_scratch(k, sizeof(ACC) * (size_t)on * (size_t)np);
    if (!part)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    int nt = lt_par_threads(np, true);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#pragma omp for schedule(dynamic, 1)
        for (int u = 0; u < np; u++) {
            ACC *mine = part + (size_t)u * (size_t)on;
            memset(mine, 0, sizeof(ACC) * (size_t)on);
            RSL_FN(by_input)(g, p, rsl_chunk(gn, u, np), rsl_chunk(gn, u + 1, np), mine);
        }
        /* partials are added in piece order: the result does not depend
         * on which thread finished first, nor on the thread count */
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        for (int64_t q = rsl_chunk(on, t, n), e = rsl_chunk(on, t + 1, n); q < e; q++) {
            ACC s = 0;
            for (int u = 0; u < np; u++)
                s += part[(size_t)u * (size_t)on + (size_t)q];
            out[q] = (T)s;
        }
    }
    return LT_OK;
}

#undef RSL_FN
#undef RSL_CAT
#undef RSL_CAT2
