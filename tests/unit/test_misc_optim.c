/* The preview-training optimizer ops (Adagrad, Momentum, Adam) against the
 * update formulas of the ONNX spec evaluated in double. */
#include "test_misc.h"
#include <math.h>
#include <stdlib.h>

enum { ADAGRAD, MOMENTUM, ADAM };

typedef struct params {
    double decay_factor, eps, nc, alpha, beta, post;
    bool nesterov;
} params;

/* One element's update, straight from the spec. */
static void ref_step(int kind, const params *p, double r, int64_t t, double x, double g, double s1, double s2,
                     double *xo, double *s1o, double *s2o)
{
    double gr = p->nc * x + g;
    if (kind == ADAGRAD) {
        double lr = r / (1 + (double)t * p->decay_factor);
        *s1o = s1 + gr * gr;
        *xo = x - lr * gr / (sqrt(*s1o) + p->eps);
    } else if (kind == MOMENTUM) {
        double bg = t > 0 ? p->beta : 1;
        *s1o = p->alpha * s1 + bg * gr;
        *xo = p->nesterov ? x - r * (gr + p->alpha * *s1o) : x - r * *s1o;
    } else {
        *s1o = p->alpha * s1 + (1 - p->alpha) * gr;
        *s2o = p->beta * s2 + (1 - p->beta) * gr * gr;
        double lr = t > 0 ? r * sqrt(1 - pow(p->beta, (double)t)) / (1 - pow(p->alpha, (double)t)) : r;
        *xo = (1 - p->post) * (x - lr * *s1o / (sqrt(*s2o) + p->eps));
    }
}

static const lt_op ops[3] = {LT_OP_ADAGRAD, LT_OP_MOMENTUM, LT_OP_ADAM};

/* Runs op `kind` on ntens random tensors (shapes from dims) and checks all
 * outputs. attrs: whether to set the attributes (else spec defaults). */
static void run_case(int kind, lt_dtype dt, int ntens, const int64_t (*shapes)[2], int64_t t, const params *p,
                     bool attrs, uint64_t seed)
{
    int nstate = kind == ADAM ? 2 : 1, nin = 2 + (2 + nstate) * ntens, nout = (1 + nstate) * ntens;
    tu_graph g = tu_single(ops[kind], 1, nin, nout);
    if (attrs) {
        tu_attr_float(&g, "norm_coefficient", (float)p->nc);
        if (kind == ADAGRAD) {
            tu_attr_float(&g, "decay_factor", (float)p->decay_factor);
            tu_attr_float(&g, "epsilon", (float)p->eps);
        } else {
            tu_attr_float(&g, "alpha", (float)p->alpha);
            tu_attr_float(&g, "beta", (float)p->beta);
        }
        if (kind == MOMENTUM)
            tu_attr_str(&g, "mode", p->nesterov ? "nesterov" : "standard");
        if (kind == ADAM) {
            tu_attr_float(&g, "epsilon", (float)p->eps);
            tu_attr_float(&g, "norm_coefficient_post", (float)p->post);
        }
    }
    /* the kernel reads float attributes: the reference uses the same values */
    params q = *p;
    q.nc = (float)p->nc;
    q.decay_factor = (float)p->decay_factor;
    q.eps = (float)p->eps;
    q.alpha = (float)p->alpha;
    q.beta = (float)p->beta;
    q.post = (float)p->post;

    lt_value **in = calloc((size_t)nin, sizeof *in), **out = calloc((size_t)nout, sizeof *out);
    double r = 0.05;
    in[0] = tu_from(dt, 0, NULL, &r);
    double td = (double)t;
    in[1] = tu_from(LT_I64, 0, NULL, &td);
    for (int grp = 0; grp < 2 + nstate; grp++)
        for (int i = 0; i < ntens; i++) {
            bool sq = (kind == ADAGRAD && grp == 2) || (kind == ADAM && grp == 3); /* squared sums */
            double lo = grp == 0 ? -2 : sq ? 0.1 : -1, hi = grp == 0 ? 2 : 1;
            in[2 + grp * ntens + i] = tu_rand(dt, 2, shapes[i], lo, hi, seed + (uint64_t)(grp * 16 + i));
        }
    lt_err err;
    assert_int_equal(tu_run(&g, in, out, &err), LT_OK);
    double tol = dt == LT_F64 ? 1e-12 : 2e-6;
    for (int i = 0; i < ntens; i++) {
        int64_t n = shapes[i][0] * shapes[i][1];
        double *w = malloc(sizeof(double) * 3 * (size_t)n);
        for (int64_t e = 0; e < n; e++) {
            double s2 = nstate == 2 ? tu_get(in[2 + 3 * ntens + i], e) : 0;
            ref_step(kind, &q, tu_get(in[0], 0), t, tu_get(in[2 + i], e), tu_get(in[2 + ntens + i], e),
                     tu_get(in[2 + 2 * ntens + i], e), s2, &w[e], &w[n + e], &w[2 * n + e]);
        }
        for (int s = 0; s <= nstate; s++) {
            lt_value *o = out[s * ntens + i];
            tm_assert_shape(o, dt, 2, shapes[i]);
            tu_assert_close(o, w + s * n, n, tol, tol, seed);
        }
        free(w);
    }
    for (int i = 0; i < nin; i++)
        lt_value_free(in[i]);
    for (int i = 0; i < nout; i++)
        lt_value_free(out[i]);
    free(in);
    free(out);
    tu_free(&g);
}

static const int64_t two_shapes[2][2] = {{3, 4}, {5, 1}};

static void adagrad(void **state)
{
    (void)state;
    params p = {.decay_factor = 0.1, .eps = 1e-5, .nc = 0.01};
    run_case(ADAGRAD, LT_F32, 2, two_shapes, 3, &p, true, 1);
    run_case(ADAGRAD, LT_F64, 1, two_shapes, 0, &p, true, 2);
    params d = {.eps = 1e-6}; /* spec defaults */
    run_case(ADAGRAD, LT_F32, 1, two_shapes + 1, 7, &d, false, 3);
}

static void momentum(void **state)
{
    (void)state;
    params p = {.alpha = 0.9, .beta = 0.3, .nc = 0.02};
    run_case(MOMENTUM, LT_F32, 2, two_shapes, 0, &p, true, 4);  /* first step: the whole gradient */
    run_case(MOMENTUM, LT_F32, 2, two_shapes, 2, &p, true, 5);
    p.nesterov = true;
    run_case(MOMENTUM, LT_F64, 2, two_shapes, 3, &p, true, 6);
    run_case(MOMENTUM, LT_F32, 1, two_shapes, 0, &p, true, 7);
}

static void adam(void **state)
{
    (void)state;
    params p = {.alpha = 0.85, .beta = 0.7, .eps = 1e-3, .nc = 0.01, .post = 0.02};
    run_case(ADAM, LT_F32, 2, two_shapes, 0, &p, true, 8); /* no bias correction */
    run_case(ADAM, LT_F32, 2, two_shapes, 4, &p, true, 9);
    run_case(ADAM, LT_F64, 1, two_shapes, 1, &p, true, 10);
    params d = {.alpha = 0.9, .beta = 0.999, .eps = 1e-6}; /* spec defaults */
    run_case(ADAM, LT_F32, 1, two_shapes, 2, &d, false, 11);
    /* large enough for the parallel loop */
    const int64_t big[1][2] = {{250, 160}};
    run_case(ADAM, LT_F32, 1, big, 3, &p, true, 12);
}

static void errors(void **state)
{
    (void)state;
    int64_t a[1] = {4}, b[1] = {5};
    double r = 0.1, t = 1;
    lt_err err;
    lt_value *out[2] = {0};
    /* G with another shape than X */
    tu_graph g = tu_single(LT_OP_ADAGRAD, 1, 5, 2);
    lt_value *in[5] = {tu_from(LT_F32, 0, NULL, &r), tu_from(LT_I64, 0, NULL, &t), tu_rand(LT_F32, 1, a, -1, 1, 1),
                       tu_rand(LT_F32, 1, b, -1, 1, 2), tu_rand(LT_F32, 1, a, 0, 1, 3)};
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "different shapes"));
    tu_free(&g);
    /* Momentum needs its attributes */
    g = tu_single(LT_OP_MOMENTUM, 1, 5, 2);
    lt_value_free(in[3]);
    in[3] = tu_rand(LT_F32, 1, a, -1, 1, 2);
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    tu_attr_float(&g, "alpha", 0.9f);
    tu_attr_float(&g, "beta", 0.9f);
    tu_attr_float(&g, "norm_coefficient", 0.0f);
    tu_attr_str(&g, "mode", "heavy");
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    tu_free(&g);
    for (int i = 0; i < 5; i++)
        lt_value_free(in[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adagrad),
        cmocka_unit_test(momentum),
        cmocka_unit_test(adam),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
