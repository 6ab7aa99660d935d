/* Shared helpers of the grad_nn suites: run a one-node graph, and check a
 * gradient kernel's output by central finite differences of
 * L(x) = sum(dy * f(x)) through the forward kernel in float64. */
#ifndef LT_TEST_GRAD_NN_H
#define LT_TEST_GRAD_NN_H

#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs g on in[] and returns output `want`; the other outputs are freed. */
static inline lt_value *gn_run(tu_graph *g, lt_value **in, int nout, int want)
{
    lt_value *outs[8] = {NULL};
    lt_err err;
    lt_status s = tu_run(g, in, outs, &err);
    if (s != LT_OK)
        fail_msg("%s: %s", lt_op_names[g->node->op], err.msg);
    for (int i = 0; i < nout; i++)
        if (i != want && outs[i])
            lt_value_free(outs[i]);
    return outs[want];
}

static inline double gn_dot(const lt_value *a, const lt_value *b)
{
    assert_int_equal(a->t.numel, b->t.numel);
    double s = 0;
    for (int64_t i = 0; i < a->t.numel; i++)
        s += tu_get(a, i) * tu_get(b, i);
    return s;
}

/* a copy of v with another dtype */
static inline lt_value *gn_cast(const lt_value *v, lt_dtype dt)
{
    double *vals = malloc(sizeof(double) * (size_t)(v->t.numel ? v->t.numel : 1));
    for (int64_t i = 0; i < v->t.numel; i++)
        vals[i] = tu_get(v, i);
    lt_value *r = tu_from(dt, v->t.rank, v->t.dims, vals);
    free(vals);
    return r;
}

/* Compares grad (the gradient of L with respect to in[idx]) with central
 * differences at every element, or at 30 seeded ones of a big tensor.
 * Prints and returns the worst relative error; fails above tol. */
static inline double gn_fd(const char *what, tu_graph *fwd, lt_value **in, int idx, int nout, int out,
                           const lt_value *dy, const lt_value *grad, uint64_t seed, double tol)
{
    lt_tensor *t = &in[idx]->t;
    if (grad->t.numel != t->numel)
        fail_msg("%s: gradient has %lld elements, input %lld", what, (long long)grad->t.numel,
                 (long long)t->numel);
    int64_t n = t->numel, cnt = n <= 48 ? n : 40, nz = 0;
    /* a big tensor: 20 of the non-zero gradient elements (sparse gradients
     * such as MaxPool's would rarely be hit at random) and 20 at random */
    int64_t *pick = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
    uint64_t st = seed * 2654435761u + 17;
    if (cnt < n) {
        for (int64_t i = 0; i < n; i++)
            nz += tu_get(grad, i) != 0;
        int64_t want = nz < 20 ? nz : 20, seen = 0, got = 0;
        for (int64_t i = 0; i < n && got < want; i++)
            if (tu_get(grad, i) != 0 && seen++ * want / nz == got)
                pick[got++] = i;
        for (int64_t q = got; q < cnt; q++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            pick[q] = (int64_t)((st >> 17) % (uint64_t)n);
        }
    } else {
        for (int64_t q = 0; q < cnt; q++)
            pick[q] = q;
    }
    double worst = 0;
    int64_t worst_at = -1;
    for (int64_t q = 0; q < cnt; q++) {
        int64_t i = pick[q];
        double v = lt_tensor_get_f64(t, i), h = 1e-6 * (fabs(v) > 1 ? fabs(v) : 1);
        lt_tensor_set_f64(t, i, v + h);
        lt_value *yp = gn_run(fwd, in, nout, out);
        lt_tensor_set_f64(t, i, v - h);
        lt_value *ym = gn_run(fwd, in, nout, out);
        lt_tensor_set_f64(t, i, v);
        /* sum dy * (y+ - y-) rather than L+ - L-: no cancellation of the
         * large sums of a big output */
        double diff = 0;
        for (int64_t e = 0; e < yp->t.numel; e++)
            diff += tu_get(dy, e) * (tu_get(yp, e) - tu_get(ym, e));
        lt_value_free(yp);
        lt_value_free(ym);
        double fd = diff / (2 * h), an = tu_get(grad, i);
        double den = fmax(fmax(fabs(fd), fabs(an)), 1e-3), err = fabs(fd - an) / den;
        if (err > worst) {
            worst = err;
            worst_at = i;
        }
    }
    free(pick);
    print_message("  %-44s worst rel err %.2e\n", what, worst);
    if (worst > tol)
        fail_msg("seed %llu: %s: element %lld: finite difference and gradient differ (rel err %.3g)",
                 (unsigned long long)seed, what, (long long)worst_at, worst);
    return worst;
}

/* The float32 run of a gradient kernel against its float64 run. */
static inline void gn_f32_matches(const char *what, tu_graph *g, lt_value **in64, int nin, int nout, int out,
                                  const lt_value *want, double tol)
{
    lt_value *in32[8] = {NULL};
    for (int i = 0; i < nin; i++)
        in32[i] = in64[i] ? gn_cast(in64[i], lt_dtype_is_float(in64[i]->t.dtype) ? LT_F32 : in64[i]->t.dtype)
                          : NULL;
    lt_value *got = gn_run(g, in32, nout, out);
    assert_int_equal(got->t.dtype, LT_F32);
    double scale = 0;
    for (int64_t i = 0; i < want->t.numel; i++)
        scale = fmax(scale, fabs(tu_get(want, i)));
    double *w = malloc(sizeof(double) * (size_t)(want->t.numel ? want->t.numel : 1));
    for (int64_t i = 0; i < want->t.numel; i++)
        w[i] = tu_get(want, i);
    /* relative to the gradient's largest element: sums of many terms */
    tu_assert_close(got, w, want->t.numel, tol, tol * (scale > 1 ? scale : 1), 0);
    print_message("  %-44s float32 agrees\n", what);
    free(w);
    lt_value_free(got);
    for (int i = 0; i < nin; i++)
        if (in32[i])
            lt_value_free(in32[i]);
}

#endif
