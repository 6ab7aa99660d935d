/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against a direct
 * double implementation of the spec: reductions, weights, ignore_index,
 * N-d inputs, the optional log_prob output, and bad targets. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NONE, SUM, MEAN };
static const char *const red_names[3] = {"none", "sum", "mean"};

typedef struct {
    int rank;
    int64_t dims[5]; /* N, C, d1.. */
    int red;         /* -1: attribute absent (mean) */
    bool weight;
    bool has_ii;
    int64_t ii;
} loss_case;

/* lp: log-probabilities (N, C, D); returns the loss values (N*D or 1). */
static int64_t ref_nll(const loss_case *lc, const double *lp, const lt_value *t, const lt_value *w, double *out)
{
    int64_t n = lc->dims[0], c = lc->dims[1], d = 1;
    for (int i = 2; i < lc->rank; i++)
        d *= lc->dims[i];
    double ls = 0, ws = 0;
    for (int64_t i = 0; i < n * d; i++) {
        int64_t cls = (int64_t)tu_get(t, i), nn = i / d, dd = i % d;
        double wt = 0, l = 0;
        if (!(lc->has_ii && cls == lc->ii)) {
            wt = w ? tu_get(w, cls) : 1;
            l = -lp[(nn * c + cls) * d + dd] * wt;
        }
        if (lc->red == NONE)
            out[i] = l;
        ls += l;
        ws += wt;
    }
    if (lc->red == NONE)
        return n * d;
    out[0] = lc->red == SUM ? ls : ls / ws;
    return 1;
}

static void run_case(const loss_case *lc, bool sce, bool want_lp, lt_dtype dt, uint64_t seed)
{
    int64_t n = lc->dims[0], c = lc->dims[1], d = 1, tdims[4];
    for (int i = 2; i < lc->rank; i++)
        d *= lc->dims[i];
    tdims[0] = n;
    for (int i = 2; i < lc->rank; i++)
        tdims[i - 1] = lc->dims[i];
    lt_value *x = tu_rand(dt, lc->rank, lc->dims, sce ? -3 : -5, sce ? 3 : -0.01, seed);
    lt_value *t = tu_rand(LT_I64, lc->rank - 1, tdims, 0, (double)c, seed + 1);
    if (lc->has_ii) /* make sure some targets are ignored */
        for (int64_t i = 0; i < n * d; i += 3)
            lt_tensor_set_i64(&t->t, i, lc->ii);
    int64_t cd = c;
    lt_value *w = lc->weight ? tu_rand(dt, 1, &cd, 0.2, 2, seed + 2) : NULL;
    /* reference log-probabilities */
    double *lp = malloc(sizeof(double) * (size_t)(n * c * d));
    for (int64_t nn = 0; nn < n; nn++)
        for (int64_t dd = 0; dd < d; dd++) {
            double m = -INFINITY, s = 0;
            for (int64_t cc = 0; cc < c; cc++)
                m = fmax(m, tu_get(x, (nn * c + cc) * d + dd));
            for (int64_t cc = 0; cc < c; cc++)
                s += exp(tu_get(x, (nn * c + cc) * d + dd) - m);
            for (int64_t cc = 0; cc < c; cc++) {
                int64_t at = (nn * c + cc) * d + dd;
                lp[at] = sce ? tu_get(x, at) - m - log(s) : tu_get(x, at);
            }
        }
    double *want = malloc(sizeof(double) * (size_t)(n * d));
    int64_t nw = ref_nll(lc, lp, t, w, want);
    int nout = sce && want_lp ? 2 : 1;
    tu_graph g = tu_single(sce ? LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS : LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 13,
                           w ? 3 : 2, nout);
    if (lc->red >= 0)
        tu_attr_str(&g, "reduction", red_names[lc->red]);
    if (lc->has_ii)
        tu_attr_int(&g, "ignore_index", lc->ii);
    lt_value *in[3] = {x, t, w}, *out[2] = {NULL, NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double tol = dt == LT_F16 ? 3e-3 : dt == LT_F64 ? 1e-12 : 1e-5;
    assert_int_equal(out[0]->t.dtype, dt);
    assert_int_equal(out[0]->t.rank, lc->red == NONE ? lc->rank - 1 : 0);
    tu_assert_close(out[0], want, nw, tol, tol, seed);
    if (nout == 2) {
        assert_int_equal(out[1]->t.rank, lc->rank);
        tu_assert_close(out[1], lp, n * c * d, tol, tol, seed);
        lt_value_free(out[1]);
    }
    lt_value_free(out[0]);
    tu_free(&g);
    free(want);
    free(lp);
    lt_value_free(x);
    lt_value_free(t);
    if (w)
        lt_value_free(w);
}

static const loss_case cases[] = {
    {2, {5, 4}, -1, false, false, 0},
    {2, {5, 4}, NONE, true, false, 0},
    {2, {6, 3}, SUM, false, true, 1},
    {3, {3, 5, 4}, MEAN, true, true, 2},
    {3, {3, 5, 4}, MEAN, false, true, -1}, /* negative ignore_index */
    {4, {2, 3, 4, 2}, NONE, false, true, 10},  /* ignore_index outside [0, C) */
    {5, {2, 3, 2, 3, 2}, SUM, true, false, 0},
    {4, {2, 4, 3, 3}, MEAN, true, false, 0},
};

static void nll_loss(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i], false, false, LT_F32, 100 + i * 7);
    run_case(&cases[3], false, false, LT_F64, 200);
    run_case(&cases[6], false, false, LT_F16, 201);
}

static void sce_loss(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i], true, false, LT_F32, 300 + i * 7);
        run_case(&cases[i], true, true, LT_F32, 400 + i * 7);
    }
    run_case(&cases[3], true, true, LT_F64, 500);
    run_case(&cases[5], true, true, LT_F16, 501);
}

static void bad_target(void **state)
{
    (void)state;
    int64_t d[2] = {2, 3}, td[1] = {2};
    double tv[2] = {1, 3};
    lt_value *x = tu_rand(LT_F32, 2, d, -1, 1, 1), *t = tu_from(LT_I64, 1, td, tv), *out[1];
    tu_graph g = tu_single(LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS, 13, 2, 1);
    lt_value *in[2] = {x, t};
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "outside"));
    tu_free(&g);
    /* target shape must match */
    int64_t td2[1] = {3};
    double tv2[3] = {0, 1, 2};
    lt_value *t2 = tu_from(LT_I64, 1, td2, tv2);
    g = tu_single(LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS, 13, 2, 1);
    in[1] = t2;
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(t2);
    lt_value_free(t);
    lt_value_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nll_loss),
        cmocka_unit_test(sce_loss),
        cmocka_unit_test(bad_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
