/* TfIdfVectorizer (opset 9): counts the pool's n-grams (with skips) in each
 * row of a [C] or [N, C] int32/int64/string tensor and weights the counts
 * (TF, IDF, TFIDF). Tokens map to vocabulary ids (the pool position of their
 * first occurrence) through one hash table, and n-grams of ids to their pool
 * index through another, so ints and strings share one counting loop. */
#include "misc_kernels.h"
#include <stdlib.h>
#include <string.h>

enum { MODE_TF, MODE_IDF, MODE_TFIDF };

typedef struct tfidf {
    /* pool */
    int64_t npool;
    const int64_t *pool_i;
    const char *const *pool_s;
    int64_t *pool_id; /* vocabulary id of each pool token */
    /* vocabulary table: pool positions, -1 empty */
    int64_t *vocab;
    uint64_t vmask;
    /* n-grams: length, pool offset, output column, weight */
    int64_t ngrams;
    int *gram_n;
    int64_t *gram_at;
    const int64_t *gram_col;
    const float *weights;
    int64_t *gtab; /* n-gram indices, -1 empty */
    uint64_t gmask;
    /* extraction */
    int min_n, max_n, mode;
    int64_t max_skip, width;
} tfidf;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return mix64(h);
}

static uint64_t tok_hash(const tfidf *t, int64_t vi, const char *vs)
{
    return t->pool_s ? hash_str(vs) : mix64((uint64_t)vi);
}

static bool tok_equal(const tfidf *t, int64_t p, int64_t vi, const char *vs)
{
    return t->pool_s ? strcmp(t->pool_s[p] ? t->pool_s[p] : "", vs) == 0 : t->pool_i[p] == vi;
}

/* Vocabulary id of a token, -1 when the pool does not hold it. */
static int64_t vocab_find(const tfidf *t, int64_t vi, const char *vs)
{
    for (uint64_t h = tok_hash(t, vi, vs) & t->vmask;; h = (h + 1) & t->vmask) {
        int64_t p = t->vocab[h];
        if (p < 0)
            return -1;
        if (tok_equal(t, p, vi, vs))
            return p;
    }
}

/* Rolling hash of an id sequence; gram_hash finishes it with the length. */
static uint64_t roll(uint64_t h, int64_t id) { return (h ^ (uint64_t)id) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull; }
static uint64_t gram_hash(uint64_t h, int n) { return mix64(h + (uint64_t)n); }

/* Pool n-gram index of ids at[0], at[step], ... (n of them), or -1. */
static int64_t gram_find(const tfidf *t, uint64_t hash, int n, const int64_t *at, int64_t step)
{
    for (uint64_t h = hash & t->gmask;; h = (h + 1) & t->gmask) {
        int64_t j = t->gtab[h];
        if (j < 0)
            return -1;
        if (t->gram_n[j] != n)
            continue;
        const int64_t *g = t->pool_id + t->gram_at[j];
        int q = 0;
        while (q < n && g[q] == at[q * step])
            q++;
        if (q == n)
            return j;
    }
}

static uint64_t table_size(int64_t n)
{
    uint64_t c = 16;
    while (c < (uint64_t)n * 2)
        c <<= 1;
    return c;
}

/* Reads and checks the attributes, builds both tables. */
static lt_status setup(lt_kctx *k, tfidf *t, lt_dtype xt)
{
    const lt_node *nd = k->node;
    const char *mode = lt_attr_str(nd, "mode", "");
    if (strcmp(mode, "TF") == 0)
        t->mode = MODE_TF;
    else if (strcmp(mode, "IDF") == 0)
        t->mode = MODE_IDF;
    else if (strcmp(mode, "TFIDF") == 0)
        t->mode = MODE_TFIDF;
    else
        return lt_k_fail(k, LT_ERR_INVALID, "mode must be TF, IDF or TFIDF, got \"%s\"", mode);
    int64_t mn = lt_attr_int(nd, "min_gram_length", 0), mx = lt_attr_int(nd, "max_gram_length", 0);
    t->max_skip = lt_attr_int(nd, "max_skip_count", -1);
    if (mn < 1 || mx < mn || mx > 1 << 20)
        return lt_k_fail(k, LT_ERR_INVALID, "need 1 <= min_gram_length <= max_gram_length, got %lld and %lld",
                         (long long)mn, (long long)mx);
    if (t->max_skip < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "max_skip_count must be >= 0");
    t->min_n = (int)mn;
    t->max_n = (int)mx;

    const lt_attr *ps = lt_attr_find(nd, "pool_strings");
    int npi = 0, nlev = 0, nidx = 0, nw = 0;
    t->pool_i = lt_attr_ints(nd, "pool_int64s", &npi);
    if (ps && ps->kind == LT_ATTR_STRINGS && t->pool_i)
        return lt_k_fail(k, LT_ERR_INVALID, "only one of pool_strings and pool_int64s may be set");
    if (ps && ps->kind == LT_ATTR_STRINGS) {
        t->pool_s = ps->strings;
        t->npool = ps->n;
        if (xt != LT_STRING)
            return lt_k_fail(k, LT_ERR_RUNTIME, "pool_strings needs a string input, got %s", lt_dtype_name(xt));
    } else if (t->pool_i) {
        t->npool = npi;
        if (xt != LT_I32 && xt != LT_I64)
            return lt_k_fail(k, LT_ERR_RUNTIME, "pool_int64s needs an int32 or int64 input, got %s",
                             lt_dtype_name(xt));
    } else {
        return lt_k_fail(k, LT_ERR_INVALID, "one of pool_strings and pool_int64s must be set");
    }
    const int64_t *lev = lt_attr_ints(nd, "ngram_counts", &nlev);
    const int64_t *idx = lt_attr_ints(nd, "ngram_indexes", &nidx);
    t->weights = lt_attr_floats(nd, "weights", &nw);
    if (t->weights && nw != nidx)
        return lt_k_fail(k, LT_ERR_INVALID, "weights has %d entries, ngram_indexes %d", nw, nidx);

    /* n-grams level by level: level i holds (i+1)-grams from lev[i] on */
    int64_t ng = 0;
    for (int i = 0; i < nlev; i++) {
        int64_t end = i + 1 < nlev ? lev[i + 1] : t->npool;
        if (lev[i] < 0 || lev[i] > end || end > t->npool || (end - lev[i]) % (i + 1) != 0)
            return lt_k_fail(k, LT_ERR_INVALID, "ngram_counts[%d] = %lld does not split the pool of %lld into %d-grams",
                             i, (long long)lev[i], (long long)t->npool, i + 1);
        ng += (end - lev[i]) / (i + 1);
    }
    if (ng != nidx)
        return lt_k_fail(k, LT_ERR_INVALID, "the pool holds %lld n-grams but ngram_indexes has %d entries",
                         (long long)ng, nidx);
    t->ngrams = ng;
    t->width = 0;
    for (int j = 0; j < nidx; j++) {
        if (idx[j] < 0 || idx[j] >= INT32_MAX)
            return lt_k_fail(k, LT_ERR_INVALID, "ngram_indexes[%d] = %lld is out of range", j, (long long)idx[j]);
        t->width = idx[j] + 1 > t->width ? idx[j] + 1 : t->width;
    }

    t->vmask = table_size(t->npool) - 1;
    t->gmask = table_size(ng) - 1;
    t->pool_id = lt_k_scratch(k, sizeof(int64_t) * (size_t)(t->npool + 1));
    t->vocab = lt_k_scratch(k, sizeof(int64_t) * (t->vmask + 1));
    t->gtab = lt_k_scratch(k, sizeof(int64_t) * (t->gmask + 1));
    t->gram_n = lt_k_scratch(k, sizeof(int) * (size_t)(ng + 1));
    t->gram_at = lt_k_scratch(k, sizeof(int64_t) * (size_t)(ng + 1));
    if (!t->pool_id || !t->vocab || !t->gtab || !t->gram_n || !t->gram_at)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for the n-gram tables");
    t->gram_col = idx;
    memset(t->vocab, 0xff, sizeof(int64_t) * (t->vmask + 1));
    memset(t->gtab, 0xff, sizeof(int64_t) * (t->gmask + 1));

    for (int64_t p = 0; p < t->npool; p++) {
        int64_t vi = t->pool_i ? t->pool_i[p] : 0;
        const char *vs = t->pool_s ? (t->pool_s[p] ? t->pool_s[p] : "") : NULL;
        uint64_t h = tok_hash(t, vi, vs) & t->vmask;
        for (; t->vocab[h] >= 0; h = (h + 1) & t->vmask)
            if (tok_equal(t, t->vocab[h], vi, vs))
                break;
        if (t->vocab[h] < 0)
            t->vocab[h] = p;
        t->pool_id[p] = t->vocab[h];
    }
    int64_t j = 0;
    for (int i = 0; i < nlev; i++) {
        int64_t end = i + 1 < nlev ? lev[i + 1] : t->npool;
        for (int64_t at = lev[i]; at < end; at += i + 1, j++) {
            t->gram_n[j] = i + 1;
            t->gram_at[j] = at;
            uint64_t hs = 0;
            for (int q = 0; q <= i; q++)
                hs = roll(hs, t->pool_id[at + q]);
            /* a repeated n-gram keeps its first index, as a lookup would */
            if (gram_find(t, gram_hash(hs, i + 1), i + 1, t->pool_id + at, 1) >= 0)
                continue;
            uint64_t h = gram_hash(hs, i + 1) & t->gmask;
            while (t->gtab[h] >= 0)
                h = (h + 1) & t->gmask;
            t->gtab[h] = j;
        }
    }
    return LT_OK;
}

/* One row of c vocabulary ids into the output row y (width floats, zeroed);
 * cnt (ngrams entries, zeroed) and touched are per-thread work arrays. */
static void count_row(const tfidf *t, const int64_t *ids, int64_t c, float *y, int64_t *cnt, int64_t *touched)
{
    int64_t nt = 0;
    for (int64_t s = 0; s < c; s++) {
        if (ids[s] < 0)
            continue;
        for (int64_t skip = 0; skip <= t->max_skip; skip++) {
            int64_t step = skip + 1;
            uint64_t h = 0;
            for (int n = 1; n <= t->max_n; n++) {
                int64_t last = s + (int64_t)(n - 1) * step;
                if (last >= c || ids[last] < 0)
                    break; /* no longer gram can match either */
                h = roll(h, ids[last]);
                if (n < t->min_n || (n == 1 && skip > 0))
                    continue; /* unigrams count once, whatever the skip */
                int64_t j = gram_find(t, gram_hash(h, n), n, ids + s, step);
                if (j >= 0 && cnt[j]++ == 0)
                    touched[nt++] = j;
            }
            if (t->max_n == 1)
                break;
            if (s + step >= c)
                break; /* larger skips leave the row at once */
        }
    }
    for (int64_t q = 0; q < nt; q++) {
        int64_t j = touched[q];
        double w = t->weights ? t->weights[j] : 1.0;
        double v = t->mode == MODE_TF ? (double)cnt[j] : t->mode == MODE_IDF ? w : (double)cnt[j] * w;
        y[t->gram_col[j]] += (float)v;
        cnt[j] = 0;
    }
}

lt_status lt_misc_tf_idf_vectorizer(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    if (x->rank != 1 && x->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must have shape [C] or [N, C], got rank %d", x->rank);
    tfidf t = {0};
    lt_status st = setup(k, &t, x->dtype);
    if (st != LT_OK)
        return st;
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->dims[x->rank - 1];
    int64_t dims[2] = {rows, t.width};
    lt_tensor *y;
    st = x->rank == 1 ? lt_k_out(k, 0, LT_F32, 1, dims + 1, &y) : lt_k_out(k, 0, LT_F32, 2, dims, &y);
    if (st != LT_OK)
        return st;
    memset(y->data, 0, sizeof(float) * (size_t)y->numel);
    if (x->numel == 0 || t.width == 0)
        return LT_OK;

    int64_t *ids = lt_k_scratch(k, sizeof(int64_t) * (size_t)x->numel);
    if (!ids)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld token ids", (long long)x->numel);
    bool par = x->numel > 32768;
#pragma omp parallel for if (par) schedule(static)
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t vi = x->dtype == LT_I32 ? ((const int32_t *)x->data)[i]
                   : x->dtype == LT_I64 ? ((const int64_t *)x->data)[i] : 0;
        const char *vs = x->dtype == LT_STRING ? ((const char *const *)x->data)[i] : NULL;
        ids[i] = vocab_find(&t, vi, vs ? vs : "");
    }

    int oom = 0;
#pragma omp parallel if (par && rows > 1) reduction(| : oom)
    {
        int64_t *cnt = calloc((size_t)t.ngrams + 1, sizeof *cnt);
        int64_t *touched = malloc(sizeof *touched * ((size_t)t.ngrams + 1));
        if (!cnt || !touched)
            oom = 1;
#pragma omp for schedule(dynamic, 16)
        for (int64_t r = 0; r < rows; r++)
            if (cnt && touched)
                count_row(&t, ids + r * c, c, (float *)y->data + r * t.width, cnt, touched);
        free(cnt);
        free(touched);
    }
    if (oom)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for n-gram counts");
    return LT_OK;
}
