/* NonMaxSuppression, TfIdfVectorizer and StringNormalizer against
 * hand-derived cases and straightforward reference loops; the misc shape
 * rules. */
#include "test_misc.h"
#include "ir/infer.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rng_int(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }

/* ---- NonMaxSuppression ---- */

static lt_value *scalar_i64(int64_t v)
{
    double d = (double)v;
    return tu_from(LT_I64, 0, NULL, &d);
}

static lt_value *scalar_f32(double v) { return tu_from(LT_F32, 0, NULL, &v); }

static void nms_hand(void **state)
{
    (void)state;
    /* B overlaps A with IoU 0.9/1.1 > 0.5 and goes; C is apart. Box A is
     * given with flipped corners. */
    int64_t bd[3] = {1, 3, 4}, sd[3] = {1, 1, 3};
    const double boxes[] = {1, 1, 0, 0, 0, 0.1, 1, 1.1, 0, 2, 1, 3};
    const double scores[] = {0.9, 0.8, 0.7};
    tu_graph g = tu_single(LT_OP_NON_MAX_SUPPRESSION, 11, 5, 1);
    lt_value *in[5] = {tu_from(LT_F32, 3, bd, boxes), tu_from(LT_F32, 3, sd, scores), scalar_i64(5),
                       scalar_f32(0.5), scalar_f32(0.0)};
    lt_value *out[1];
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    int64_t od[2] = {2, 3};
    tm_assert_shape(out[0], LT_I64, 2, od);
    const double want[] = {0, 0, 0, 0, 0, 2};
    tu_assert_close(out[0], want, 6, 0, 0, 0);
    lt_value_free(out[0]);

    /* a threshold of 0.9 keeps B too; a score threshold of 0.75 drops C */
    lt_value_free(in[3]);
    lt_value_free(in[4]);
    in[3] = scalar_f32(0.9);
    in[4] = scalar_f32(0.75);
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    const double want2[] = {0, 0, 0, 0, 0, 1};
    tu_assert_close(out[0], want2, 6, 0, 0, 0);
    lt_value_free(out[0]);
    for (int i = 0; i < 5; i++)
        lt_value_free(in[i]);
    tu_free(&g);
}

static void nms_omitted_and_errors(void **state)
{
    (void)state;
    int64_t bd[3] = {1, 2, 4}, sd[3] = {1, 1, 2};
    tu_graph g = tu_single(LT_OP_NON_MAX_SUPPRESSION, 10, 2, 1);
    lt_value *in[2] = {tu_rand(LT_F32, 3, bd, 0, 1, 3), tu_rand(LT_F32, 3, sd, 0, 1, 4)};
    lt_value *out[1];
    lt_err err;
    /* no max_output_boxes_per_class: nothing is selected */
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    int64_t od[2] = {0, 3};
    tm_assert_shape(out[0], LT_I64, 2, od);
    lt_value_free(out[0]);
    lt_value_free(in[1]);
    int64_t bad[3] = {1, 1, 3};
    in[1] = tu_rand(LT_F32, 3, bad, 0, 1, 5);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "disagree"));
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);
}

typedef struct ref_box {
    double y0, x0, y1, x1;
} ref_box;

/* Corners of box i of batch b in the reference, center or corner format. */
static ref_box ref_corners(const lt_value *bx, int64_t s, int64_t b, int64_t i, int center)
{
    double v[4];
    for (int q = 0; q < 4; q++)
        v[q] = tu_get(bx, (b * s + i) * 4 + q);
    double ya = v[0], xa = v[1], yb = v[2], xb = v[3];
    if (center) {
        xa = v[0] - v[2] / 2;
        xb = v[0] + v[2] / 2;
        ya = v[1] - v[3] / 2;
        yb = v[1] + v[3] / 2;
    }
    return (ref_box){fmin(ya, yb), fmin(xa, xb), fmax(ya, yb), fmax(xa, xb)};
}

static double ref_iou(ref_box a, ref_box b)
{
    double h = fmin(a.y1, b.y1) - fmax(a.y0, b.y0), w = fmin(a.x1, b.x1) - fmax(a.x0, b.x0);
    double aa = (a.y1 - a.y0) * (a.x1 - a.x0), ab = (b.y1 - b.y0) * (b.x1 - b.x0);
    if (h <= 0 || w <= 0 || aa <= 0 || ab <= 0)
        return 0;
    return h * w / (aa + ab - h * w);
}

/* Random batches and classes against a greedy reference in double. */
static void nms_random(void **state)
{
    (void)state;
    for (int center = 0; center < 2; center++) {
        uint64_t seed = 21 + (uint64_t)center;
        const int64_t nb = 2, nc = 3, ns = 60, maxo = 12;
        const double iou = 0.3, thr = 0.25;
        int64_t bd[3] = {nb, ns, 4}, sd[3] = {nb, nc, ns};
        lt_value *bx = tu_rand(LT_F32, 3, bd, -1, 1, seed);
        lt_value *sc = tu_rand(LT_F32, 3, sd, 0, 1, seed + 100);
        /* class c scores lie in [0, (c+1)/3): class 0 has few candidates */
        for (int64_t i = 0; i < sc->t.numel; i++)
            lt_tensor_set_f64(&sc->t, i, tu_get(sc, i) * (double)((i / ns) % nc + 1) / 3.0);
        if (center) /* sizes positive and not too large */
            for (int64_t i = 0; i < nb * ns; i++)
                for (int q = 2; q < 4; q++)
                    lt_tensor_set_f64(&bx->t, i * 4 + q, 0.2 + 0.4 * fabs(tu_get(bx, i * 4 + q)));
        tu_graph g = tu_single(LT_OP_NON_MAX_SUPPRESSION, 11, 5, 1);
        tu_attr_int(&g, "center_point_box", center);
        lt_value *in[5] = {bx, sc, scalar_i64(maxo), scalar_f32(iou), scalar_f32(thr)};
        lt_value *out[1];
        lt_err err;
        assert_int_equal(tu_run(&g, in, out, &err), LT_OK);

        double want[2 * 3 * 12 * 3];
        int64_t nw = 0, suppressed = 0, capped = 0;
        for (int64_t b = 0; b < nb; b++)
            for (int64_t c = 0; c < nc; c++) {
                int64_t order[60], no = 0, sel[12], ns_sel = 0;
                for (int64_t i = 0; i < ns; i++)
                    if (tu_get(sc, (b * nc + c) * ns + i) > (float)thr)
                        order[no++] = i;
                for (int64_t i = 1; i < no; i++) /* insertion sort: score desc, index asc */
                    for (int64_t j = i; j > 0; j--) {
                        double sa = tu_get(sc, (b * nc + c) * ns + order[j - 1]);
                        double sb = tu_get(sc, (b * nc + c) * ns + order[j]);
                        if (sb > sa) {
                            int64_t t = order[j];
                            order[j] = order[j - 1];
                            order[j - 1] = t;
                        }
                    }
                for (int64_t i = 0; i < no && ns_sel < maxo; i++) {
                    bool keep = true;
                    for (int64_t j = 0; j < ns_sel; j++)
                        if (ref_iou(ref_corners(bx, ns, b, sel[j], center), ref_corners(bx, ns, b, order[i], center)) >
                            (float)iou)
                            keep = false;
                    suppressed += !keep;
                    if (keep) {
                        sel[ns_sel++] = order[i];
                        capped += ns_sel == maxo;
                        want[nw++] = (double)b;
                        want[nw++] = (double)c;
                        want[nw++] = (double)order[i];
                    }
                }
            }
        /* the case exercises suppression, the per-class cap and the score cut */
        assert_true(suppressed > 0 && capped > 0 && nw < 3 * nb * nc * maxo);
        tu_assert_close(out[0], want, nw, 0, 0, seed);
        lt_value_free(out[0]);
        for (int i = 0; i < 5; i++)
            lt_value_free(in[i]);
        tu_free(&g);
    }
}

/* ---- TfIdfVectorizer ---- */

static void tfidf_spec_example(void **state)
{
    (void)state;
    /* the spec's sequence: with 2 skips the bigrams [94,12] and [17,28]
     * appear; [94,17] needs skip 0, which max_skip_count 2 includes */
    const double x[] = {94, 17, 36, 12, 28};
    int64_t n = 5;
    const int64_t pool[] = {94, 12, 17, 28, 94, 17}, counts[] = {0, 0}, idx[] = {0, 1, 2};
    for (int skip = 0; skip <= 2; skip += 2) {
        tu_graph g = tu_single(LT_OP_TF_IDF_VECTORIZER, 9, 1, 1);
        tu_attr_str(&g, "mode", "TF");
        tu_attr_int(&g, "min_gram_length", 2);
        tu_attr_int(&g, "max_gram_length", 2);
        tu_attr_int(&g, "max_skip_count", skip);
        tu_attr_ints(&g, "ngram_counts", 2, counts);
        tu_attr_ints(&g, "ngram_indexes", 3, idx);
        tu_attr_ints(&g, "pool_int64s", 6, pool);
        lt_value *in[1] = {tu_from(LT_I64, 1, &n, x)}, *out[1];
        lt_err err;
        assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
        const double want0[] = {0, 0, 1}, want2[] = {1, 1, 1};
        int64_t od = 3;
        tm_assert_shape(out[0], LT_F32, 1, &od);
        tu_assert_close(out[0], skip ? want2 : want0, 3, 0, 0, 0);
        lt_value_free(out[0]);
        lt_value_free(in[0]);
        tu_free(&g);
    }
}

/* A unigram counts once per position, however many skips are allowed. */
static void tfidf_unigram_once(void **state)
{
    (void)state;
    const double x[] = {5, 5, 5, 6};
    int64_t n = 4;
    const int64_t pool[] = {5, 5, 5}, counts[] = {0, 1}, idx[] = {1, 0};
    tu_graph g = tu_single(LT_OP_TF_IDF_VECTORIZER, 9, 1, 1);
    tu_attr_str(&g, "mode", "TF");
    tu_attr_int(&g, "min_gram_length", 1);
    tu_attr_int(&g, "max_gram_length", 2);
    tu_attr_int(&g, "max_skip_count", 3);
    tu_attr_ints(&g, "ngram_counts", 2, counts);
    tu_attr_ints(&g, "ngram_indexes", 2, idx);
    tu_attr_ints(&g, "pool_int64s", 3, pool);
    lt_value *in[1] = {tu_from(LT_I32, 1, &n, x)}, *out[1];
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    /* [5,5] at (0,1), (1,2) with skip 0 and (0,2) with skip 1 */
    const double want[] = {3, 3};
    tu_assert_close(out[0], want, 2, 0, 0, 0);
    lt_value_free(out[0]);
    lt_value_free(in[0]);
    tu_free(&g);
}

/* Random pools and inputs (ints and strings) against direct counting. */
static void tfidf_random(void **state)
{
    (void)state;
    const char *modes[3] = {"TF", "IDF", "TFIDF"};
    const int cfg[3][3] = {{1, 3, 2}, {2, 3, 1}, {1, 2, 0}}; /* min, max, skips */
    for (int v = 0; v < 6; v++) {
        uint64_t seed = 100 + (uint64_t)v;
        int mode = v % 3, mn = cfg[v % 3][0], mx = cfg[v % 3][1], skips = cfg[v % 3][2];
        bool strs = v >= 3;
        /* pool: distinct unigrams, bigrams and trigrams over tokens 0..4 */
        int64_t pool[64], counts[3];
        int gn[32], np = 0, ng = 0;
        int64_t gat[32];
        const int per_level[3] = {3, 6, 5};
        for (int lev = 0; lev < 3; lev++) {
            counts[lev] = np;
            for (int made = 0; made < per_level[lev];) {
                int64_t cand[3];
                for (int q = 0; q <= lev; q++)
                    cand[q] = rng_int(&seed, 5);
                bool dup = false;
                for (int j = 0; j < ng && !dup; j++)
                    if (gn[j] == lev + 1 && memcmp(pool + gat[j], cand, sizeof(int64_t) * (size_t)(lev + 1)) == 0)
                        dup = true;
                if (dup)
                    continue;
                gn[ng] = lev + 1;
                gat[ng++] = np;
                for (int q = 0; q <= lev; q++)
                    pool[np++] = cand[q];
                made++;
            }
        }
        int64_t idx[32];
        float w[32];
        for (int j = 0; j < ng; j++) { /* a shuffled column per n-gram, column 4 unused */
            idx[j] = j;
            w[j] = (float)(0.5 + rng_int(&seed, 100) / 50.0);
        }
        for (int j = ng - 1; j > 0; j--) {
            int r = rng_int(&seed, j + 1);
            int64_t t = idx[j];
            idx[j] = idx[r];
            idx[r] = t;
        }
        for (int j = 0; j < ng; j++)
            idx[j] += idx[j] >= 4;
        const int64_t rows = 3, cols = 25;
        double x[75];
        for (int i = 0; i < rows * cols; i++)
            x[i] = rng_int(&seed, 6); /* token 5 is in no n-gram */

        tu_graph g = tu_single(LT_OP_TF_IDF_VECTORIZER, 9, 1, 1);
        tu_attr_str(&g, "mode", modes[mode]);
        tu_attr_int(&g, "min_gram_length", mn);
        tu_attr_int(&g, "max_gram_length", mx);
        tu_attr_int(&g, "max_skip_count", skips);
        tu_attr_ints(&g, "ngram_counts", 3, counts);
        tu_attr_ints(&g, "ngram_indexes", ng, idx);
        tu_attr_floats(&g, "weights", ng, w);
        int64_t xd[2] = {rows, cols};
        lt_value *in[1], *out[1];
        char names[6][8];
        const char *np_s[64], *x_s[75], *tok[6];
        for (int t = 0; t < 6; t++) {
            snprintf(names[t], sizeof names[t], "w%d", t);
            tok[t] = names[t];
        }
        if (strs) {
            for (int i = 0; i < np; i++)
                np_s[i] = tok[pool[i]];
            for (int i = 0; i < rows * cols; i++)
                x_s[i] = tok[(int)x[i]];
            tu_attr_strings(&g, "pool_strings", np, np_s);
            in[0] = tm_strings(2, xd, x_s);
        } else {
            tu_attr_ints(&g, "pool_int64s", np, pool);
            in[0] = tu_from(v == 1 ? LT_I64 : LT_I32, 2, xd, x);
        }
        lt_err err;
        assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
        int64_t width = ng + 1, od[2] = {rows, width};
        tm_assert_shape(out[0], LT_F32, 2, od);

        double want[3 * 33] = {0};
        for (int64_t r = 0; r < rows; r++)
            for (int j = 0; j < ng; j++) {
                int n = gn[j];
                if (n < mn || n > mx)
                    continue;
                int cnt = 0;
                for (int s = 0; s <= (n == 1 ? 0 : skips); s++)
                    for (int64_t st = 0; st + (n - 1) * (s + 1) < cols; st++) {
                        bool match = true;
                        for (int q = 0; q < n; q++)
                            match = match && x[r * cols + st + q * (s + 1)] == (double)pool[gat[j] + q];
                        cnt += match;
                    }
                double val = mode == 0 ? cnt : mode == 1 ? (cnt > 0) * (double)w[j] : cnt * (double)w[j];
                want[r * width + idx[j]] += val;
            }
        double total = 0;
        for (int i = 0; i < rows * width; i++)
            total += want[i];
        assert_true(total > 0);
        tu_assert_close(out[0], want, rows * width, 1e-6, 1e-6, seed);
        lt_value_free(out[0]);
        lt_value_free(in[0]);
        tu_free(&g);
    }
}

static void tfidf_errors(void **state)
{
    (void)state;
    const double x[] = {1, 2, 3};
    int64_t n = 3;
    const int64_t pool[] = {1, 2, 3}, counts[] = {0, 1}, idx[] = {0, 1};
    tu_graph g = tu_single(LT_OP_TF_IDF_VECTORIZER, 9, 1, 1);
    tu_attr_str(&g, "mode", "TF");
    tu_attr_int(&g, "min_gram_length", 1);
    tu_attr_int(&g, "max_gram_length", 2);
    tu_attr_int(&g, "max_skip_count", 0);
    tu_attr_ints(&g, "ngram_counts", 2, counts); /* 2 entries for 2-grams: one bigram */
    tu_attr_ints(&g, "ngram_indexes", 2, idx);
    tu_attr_ints(&g, "pool_int64s", 3, pool);
    lt_value *in[1] = {tu_from(LT_F32, 1, &n, x)}, *out[1];
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID); /* float input */
    lt_value_free(in[0]);
    in[0] = tu_from(LT_I64, 1, &n, x);
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    const double want[] = {1, 1}; /* [1] and [2,3] */
    tu_assert_close(out[0], want, 2, 0, 0, 0);
    lt_value_free(out[0]);
    lt_value_free(in[0]);
    tu_free(&g);

    /* a pool that does not split into the declared n-grams */
    const int64_t counts_bad[] = {0, 2};
    g = tu_single(LT_OP_TF_IDF_VECTORIZER, 9, 1, 1);
    tu_attr_str(&g, "mode", "TF");
    tu_attr_int(&g, "min_gram_length", 1);
    tu_attr_int(&g, "max_gram_length", 2);
    tu_attr_int(&g, "max_skip_count", 0);
    tu_attr_ints(&g, "ngram_counts", 2, counts_bad);
    tu_attr_ints(&g, "ngram_indexes", 2, idx);
    tu_attr_ints(&g, "pool_int64s", 3, pool);
    in[0] = tu_from(LT_I64, 1, &n, x);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    lt_value_free(in[0]);
    tu_free(&g);
}

/* ---- StringNormalizer ---- */

static lt_status strnorm(int rank, const int64_t *dims, const char *const *x, const char *action, int sensitive,
                         int nstop, const char *const *stop, lt_value **out, lt_err *err)
{
    tu_graph g = tu_single(LT_OP_STRING_NORMALIZER, 10, 1, 1);
    if (action)
        tu_attr_str(&g, "case_change_action", action);
    tu_attr_int(&g, "is_case_sensitive", sensitive);
    if (nstop)
        tu_attr_strings(&g, "stopwords", nstop, stop);
    lt_value *in[1] = {tm_strings(rank, dims, x)};
    lt_status s = tu_run(&g, in, out, err);
    lt_value_free(in[0]);
    tu_free(&g);
    return s;
}

static void strnorm_cases(void **state)
{
    (void)state;
    const char *x[] = {"Monday", "tuesday", "MONDAY", "Wed-3"};
    const char *stop[] = {"monday", "friday"};
    int64_t n = 4;
    lt_value *o;
    lt_err err;
    assert_int_equal(strnorm(1, &n, x, "LOWER", 0, 2, stop, &o, &err), LT_OK);
    int64_t d2 = 2;
    tm_assert_shape(o, LT_STRING, 1, &d2);
    assert_string_equal(tm_str(o, 0), "tuesday");
    assert_string_equal(tm_str(o, 1), "wed-3");
    lt_value_free(o);

    /* case-sensitive: "Monday" and "MONDAY" are not the stop word */
    assert_int_equal(strnorm(1, &n, x, "UPPER", 1, 2, stop, &o, &err), LT_OK);
    tm_assert_shape(o, LT_STRING, 1, &n);
    const char *up[] = {"MONDAY", "TUESDAY", "MONDAY", "WED-3"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(tm_str(o, i), up[i]);
    lt_value_free(o);

    /* default NONE keeps the case */
    int64_t d12[2] = {1, 4};
    assert_int_equal(strnorm(2, d12, x, NULL, 0, 1, stop + 1, &o, &err), LT_OK);
    tm_assert_shape(o, LT_STRING, 2, d12);
    assert_string_equal(tm_str(o, 0), "Monday");
    lt_value_free(o);
}

static void strnorm_empty_and_errors(void **state)
{
    (void)state;
    const char *x[] = {"Monday", "MONDAY"};
    const char *stop[] = {"monday"};
    int64_t d12[2] = {1, 2}, d11[2] = {1, 1}, d22[2] = {2, 1}, one = 1;
    lt_value *o;
    lt_err err;
    assert_int_equal(strnorm(2, d12, x, "LOWER", 0, 1, stop, &o, &err), LT_OK);
    tm_assert_shape(o, LT_STRING, 2, d11);
    assert_string_equal(tm_str(o, 0), "");
    lt_value_free(o);
    assert_int_equal(strnorm(1, d12 + 1, x, "LOWER", 0, 1, stop, &o, &err), LT_OK);
    tm_assert_shape(o, LT_STRING, 1, &one);
    lt_value_free(o);
    assert_int_equal(strnorm(2, d22, x, "LOWER", 0, 1, stop, &o, &err), LT_ERR_INVALID);
    assert_int_equal(strnorm(1, d12 + 1, x, "TITLE", 0, 1, stop, &o, &err), LT_ERR_INVALID);
}

/* ---- shape rules ---- */

static void infer_rules(void **state)
{
    (void)state;
    lt_err err;
    tu_graph g = tu_single(LT_OP_TF_IDF_VECTORIZER, 9, 1, 1);
    const int64_t idx[] = {0, 6, 2}, xd[2] = {5, 12};
    tu_attr_ints(&g, "ngram_indexes", 3, idx);
    lt_type_tensor(&g.m->main->params[0]->type, LT_I32, 2, xd);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    const lt_type *t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_F32);
    assert_int_equal(t->rank, 2);
    assert_int_equal(t->dims[0].v, 5);
    assert_int_equal(t->dims[1].v, 7);
    tu_free(&g);

    g = tu_single(LT_OP_NON_MAX_SUPPRESSION, 11, 2, 1);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    t = &g.node->out[0]->type;
    assert_int_equal(t->dtype, LT_I64);
    assert_int_equal(t->rank, 2);
    assert_int_equal(t->dims[1].v, 3);
    tu_free(&g);

    g = tu_single(LT_OP_STRING_NORMALIZER, 10, 1, 1);
    const int64_t sd[3] = {1, 2, 3};
    lt_type_tensor(&g.m->main->params[0]->type, LT_STRING, 3, sd);
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nms_hand),           cmocka_unit_test(nms_omitted_and_errors),
        cmocka_unit_test(nms_random),         cmocka_unit_test(tfidf_spec_example),
        cmocka_unit_test(tfidf_unigram_once), cmocka_unit_test(tfidf_random),
        cmocka_unit_test(tfidf_errors),       cmocka_unit_test(strnorm_cases),
        cmocka_unit_test(strnorm_empty_and_errors), cmocka_unit_test(infer_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
