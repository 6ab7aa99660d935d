/* Ops of onnx 1.19-1.23 (opsets 23-28): Swish, SwiGLU and RMSNormalization,
 * forward against the spec's formulas evaluated here in double, gradients
 * against central finite differences in float64 (rule_fd). */
#include "rule_fd.h"
#include <math.h>
#include <string.h>

static double sigm(double z) { return 1 / (1 + exp(-z)); }

static lt_value *run_node(tu_graph *g, int nin, lt_value **in)
{
    lt_value *out[1] = {NULL};
    lt_err err;
    if (tu_run(g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int i = 0; i < nin; i++)
        lt_value_free(in[i]);
    return out[0];
}

static void swish_and_swiglu(void **state)
{
    (void)state;
    int64_t d[2] = {3, 5};
    const uint64_t seed = 11;
    const float alphas[2] = {1.0f, 1.7f};
    for (int k = 0; k < 2; k++) {
        lt_value *a = tu_rand(LT_F32, 2, d, -4, 4, seed + (uint64_t)k), *b = tu_rand(LT_F32, 2, d, -2, 2, seed + 7);
        double wa[15], wg[15];
        for (int i = 0; i < 15; i++) {
            double x = tu_get(a, i);
            wa[i] = x * sigm(alphas[k] * x);
            wg[i] = wa[i] * tu_get(b, i);
        }
        tu_graph g = tu_single(LT_OP_SWISH, 24, 1, 1);
        if (k)
            tu_attr_float(&g, "alpha", alphas[k]);
        lt_value *in1[1] = {tu_rand(LT_F32, 2, d, -4, 4, seed + (uint64_t)k)}; /* a's values again */
        lt_value *y = run_node(&g, 1, in1);
        tu_assert_close(y, wa, 15, 1e-6, 1e-7, seed);
        lt_value_free(y);
        tu_free(&g);
        g = tu_single(LT_OP_SWI_GLU, 28, 2, 1);
        if (k)
            tu_attr_float(&g, "alpha", alphas[k]);
        lt_value *in2[2] = {a, b};
        y = run_node(&g, 2, in2);
        tu_assert_close(y, wg, 15, 1e-6, 1e-7, seed);
        lt_value_free(y);
        tu_free(&g);
    }
    /* SwiGLU does not broadcast */
    tu_graph g = tu_single(LT_OP_SWI_GLU, 28, 2, 1);
    int64_t d1[2] = {1, 5};
    lt_value *in[2] = {tu_rand(LT_F32, 2, d, -1, 1, 3), tu_rand(LT_F32, 2, d1, -1, 1, 4)};
    lt_value *out[1] = {NULL};
    lt_err err;
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);
}

/* y = x / sqrt(mean(x^2 over dims axis..) + eps) * scale, scale broadcast
 * to X from the right */
static void rms_normalization(void **state)
{
    (void)state;
    int64_t xd[3] = {2, 3, 4};
    struct {
        int axis;
        int srank;
        int64_t sd[2];
        float eps;
        lt_dtype dt;
    } cases[] = {
        {-1, 1, {4}, 1e-5f, LT_F32}, {1, 2, {3, 4}, 1e-5f, LT_F32}, {0, 1, {4}, 0.3f, LT_F32},
        {1, 2, {1, 4}, 1e-5f, LT_F64}, {-2, 2, {3, 1}, 1e-2f, LT_F32},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint64_t seed = 40 + c;
        lt_value *x = tu_rand(cases[c].dt, 3, xd, -2, 2, seed), *s = tu_rand(cases[c].dt, cases[c].srank, cases[c].sd,
                                                                             0.5, 1.5, seed + 100);
        int ax = cases[c].axis < 0 ? cases[c].axis + 3 : cases[c].axis;
        int64_t inner = 1;
        for (int i = ax; i < 3; i++)
            inner *= xd[i];
        double w[24];
        for (int64_t r = 0; r < 24 / inner; r++) {
            double ss = 0;
            for (int64_t j = 0; j < inner; j++)
                ss += tu_get(x, r * inner + j) * tu_get(x, r * inner + j);
            double rr = 1 / sqrt(ss / (double)inner + cases[c].eps);
            for (int64_t j = 0; j < inner; j++) {
                int64_t i = r * inner + j, i2 = i % 4, i1 = (i / 4) % 3; /* x's (., i1, i2) */
                int64_t si = cases[c].srank == 1   ? i2
                             : cases[c].sd[0] == 1 ? i2
                             : cases[c].sd[1] == 1 ? i1
                                                   : i1 * 4 + i2;
                w[i] = tu_get(x, i) * rr * tu_get(s, si);
            }
        }
        tu_graph g = tu_single(LT_OP_RMS_NORMALIZATION, 23, 2, 1);
        tu_attr_int(&g, "axis", cases[c].axis);
        tu_attr_float(&g, "epsilon", cases[c].eps);
        lt_value *in[2] = {x, s};
        lt_value *y = run_node(&g, 2, in);
        tu_assert_close(y, w, 24, cases[c].dt == LT_F64 ? 1e-12 : 1e-5, 1e-6, seed);
        lt_value_free(y);
        tu_free(&g);
    }
}

/* ---- gradients by finite differences ---- */
#define F(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = -1, .hi = 1}
#define RNG(lo_, hi_, r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = lo_, .hi = hi_}

static void a_alpha(tu_graph *g) { tu_attr_float(g, "alpha", 1.7f); }
static void a_axis1(tu_graph *g) { tu_attr_int(g, "axis", 1); }
static void a_axis0_eps(tu_graph *g)
{
    tu_attr_int(g, "axis", 0);
    tu_attr_float(g, "epsilon", 0.1f);
}

static const struct gcase {
    const char *name;
    lt_op op;
    int opset, nin;
    tu_fd_in in[2];
    void (*attrs)(tu_graph *g);
} gcases[] = {
    {"Swish", LT_OP_SWISH, 24, 1, {RNG(-4, 4, 2, 3, 5)}},
    {"Swish.alpha", LT_OP_SWISH, 24, 1, {RNG(-4, 4, 3, 2, 3, 4)}, a_alpha},
    {"SwiGLU", LT_OP_SWI_GLU, 28, 2, {RNG(-4, 4, 2, 3, 5), F(2, 3, 5)}},
    {"SwiGLU.alpha", LT_OP_SWI_GLU, 28, 2, {RNG(-4, 4, 2, 4, 3), F(2, 4, 3)}, a_alpha},
    {"RMSNormalization", LT_OP_RMS_NORMALIZATION, 23, 2, {F(3, 2, 3, 4), RNG(0.5, 1.5, 1, 4)}},
    {"RMSNormalization.axis1", LT_OP_RMS_NORMALIZATION, 23, 2, {F(3, 2, 3, 4), RNG(0.5, 1.5, 2, 3, 4)}, a_axis1},
    {"RMSNormalization.axis1_bcast", LT_OP_RMS_NORMALIZATION, 23, 2, {F(3, 2, 3, 4), RNG(0.5, 1.5, 2, 3, 1)},
     a_axis1},
    {"RMSNormalization.axis0_eps", LT_OP_RMS_NORMALIZATION, 23, 2, {F(3, 2, 3, 4), RNG(0.5, 1.5, 1, 4)},
     a_axis0_eps},
};

static void gradients(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof gcases / sizeof *gcases; k++) {
        const struct gcase *gc = &gcases[k];
        tu_fd_model fm = {.name = gc->name,
                          .op = gc->op,
                          .opset = gc->opset,
                          .nin = gc->nin,
                          .nout = 1,
                          .in = gc->in,
                          .attrs = gc->attrs,
                          .seed = 7000 + k * 13};
        tu_fd_check(&fm, &(tu_fd_expect){0}, &t);
    }
    printf("onnx 1.23 op gradients: %d (op, input) pairs checked by finite differences, worst relative error %.3g "
           "(%s)\n",
           t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.pairs, 14);
    assert_int_equal(t.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(swish_and_swiglu),
        cmocka_unit_test(rms_normalization),
        cmocka_unit_test(gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
