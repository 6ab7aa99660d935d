/* Gradients of float16 and bfloat16 models: every rule whose derivative
 * needs a constant (1 - y^2, x / 3 + 1/2, a count to divide by, ...) must
 * make it in the model's own type, or the backward's binary ops mix types.
 * Each one-node model (rule_fd.h, its float inputs in the half type) is
 * differentiated in its own type and, widened by lt_model_to_f64, in
 * float64; the half-precision gradients must agree with the float64 ones
 * within what the type carries, relative to the largest gradient. */
#include "rule_fd_inputs.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXIN 8

typedef struct hcase {
    const char *name;
    lt_op op;
    int opset;
    int nin, nout;
    tu_fd_in in[MAXIN];
    void (*attrs)(tu_graph *g);
} hcase;

static void a_leaky(tu_graph *g) { tu_attr_float(g, "alpha", 0.2f); }
static void a_elu(tu_graph *g) { tu_attr_float(g, "alpha", 0.7f); }
static void a_gelu_tanh(tu_graph *g) { tu_attr_str(g, "approximate", "tanh"); }
static void a_keep0(tu_graph *g) { tu_attr_int(g, "keepdims", 0); }
static void a_axis1(tu_graph *g) { tu_attr_int(g, "axis", 1); }
static void a_last(tu_graph *g) { tu_attr_int(g, "axis", -1); }
static void a_clip6(tu_graph *g)
{
    tu_attr_float(g, "min", -0.5f);
    tu_attr_float(g, "max", 0.55f);
}
static void a_gemm(tu_graph *g)
{
    tu_attr_int(g, "transB", 1);
    tu_attr_float(g, "alpha", 0.7f);
    tu_attr_float(g, "beta", 1.3f);
}
static void a_mvn(tu_graph *g) { tu_attr_ints(g, "axes", 2, (int64_t[]){0, 2}); }
static void a_lp3(tu_graph *g) { tu_attr_int(g, "p", 3); }
static void a_thr(tu_graph *g) { tu_attr_float(g, "alpha", 0.3f); }
static void a_shrink(tu_graph *g) { tu_attr_float(g, "lambd", 0.3f); }

/* float inputs (dt left unset) take the half type the case runs in */
#define SMALL(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = -0.8, .hi = 0.8}
#define WIDE(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = 0.5, .hi = 4, .signed_mag = true}
#define FIXED(v) {.rank = 0, .frozen = true, .nvals = 1, .vals = {v}}

static const hcase cases[] = {
    /* the ops the probe found failing */
    {"Sigmoid", LT_OP_SIGMOID, 13, 1, 1, {F(2, 3, 4)}},
    {"Tanh", LT_OP_TANH, 13, 1, 1, {F(2, 3, 4)}},
    {"Sqrt", LT_OP_SQRT, 13, 1, 1, {POS(2, 3, 4)}},
    {"Reciprocal", LT_OP_RECIPROCAL, 13, 1, 1, {POS(2, 3, 4)}},
    {"Erf", LT_OP_ERF, 13, 1, 1, {F(2, 3, 4)}},
    {"Gelu", LT_OP_GELU, 20, 1, 1, {F(2, 3, 4)}},
    {"Gelu.tanh", LT_OP_GELU, 20, 1, 1, {F(2, 3, 4)}, a_gelu_tanh},
    {"Pow", LT_OP_POW, 15, 2, 1, {POS(2, 3, 4), F(1, 4)}},
    {"Pow.int-exponent", LT_OP_POW, 15, 2, 1, {F(2, 3, 4), {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {3}}}},
    {"ReduceMean", LT_OP_REDUCE_MEAN, 13, 1, 1, {F(3, 2, 3, 4)}},
    {"ReduceMean.keep0", LT_OP_REDUCE_MEAN, 18, 2, 1, {F(3, 2, 3, 4), I64(1, 1, -1)}, a_keep0},
    /* 70000 elements: a count float16 cannot hold (its largest is 65504) */
    {"ReduceMean.large", LT_OP_REDUCE_MEAN, 13, 1, 1, {F(2, 280, 250)}},
    {"LeakyRelu", LT_OP_LEAKY_RELU, 16, 1, 1, {KINK(2, 3, 4)}, a_leaky},
    {"Elu", LT_OP_ELU, 6, 1, 1, {KINK(2, 3, 4)}, a_elu},
    {"HardSwish", LT_OP_HARD_SWISH, 14, 1, 1, {WIDE(2, 3, 4)}},
    /* the other rules with constants */
    {"Selu", LT_OP_SELU, 6, 1, 1, {KINK(2, 3, 4)}},
    {"Celu", LT_OP_CELU, 12, 1, 1, {KINK(2, 3, 4)}},
    {"HardSigmoid", LT_OP_HARD_SIGMOID, 6, 1, 1, {WIDE(2, 3, 4)}},
    {"Mish", LT_OP_MISH, 18, 1, 1, {F(2, 3, 4)}},
    {"Softplus", LT_OP_SOFTPLUS, 1, 1, 1, {F(2, 3, 4)}},
    {"Softsign", LT_OP_SOFTSIGN, 1, 1, 1, {F(2, 3, 4)}},
    {"ThresholdedRelu", LT_OP_THRESHOLDED_RELU, 10, 1, 1, {KINK(2, 3, 4)}, a_thr},
    {"Shrink", LT_OP_SHRINK, 9, 1, 1, {KINK(2, 3, 4)}, a_shrink},
    {"PRelu", LT_OP_P_RELU, 16, 2, 1, {KINK(2, 3, 4), F(1, 4)}},
    {"Tan", LT_OP_TAN, 7, 1, 1, {SMALL(2, 3, 4)}},
    {"Asin", LT_OP_ASIN, 7, 1, 1, {SMALL(2, 3, 4)}},
    {"Acos", LT_OP_ACOS, 7, 1, 1, {SMALL(2, 3, 4)}},
    {"Atan", LT_OP_ATAN, 7, 1, 1, {F(2, 3, 4)}},
    {"Asinh", LT_OP_ASINH, 9, 1, 1, {F(2, 3, 4)}},
    {"Acosh", LT_OP_ACOSH, 9, 1, 1, {{.rank = 2, .dims = {3, 4}, .lo = 1.3, .hi = 3}}},
    {"Atanh", LT_OP_ATANH, 9, 1, 1, {SMALL(2, 3, 4)}},
    {"Where", LT_OP_WHERE, 16, 3, 1, {{.rank = 2, .dims = {3, 4}, .dt = LT_BOOL, .frozen = true, .nvals = 3, .vals = {1, 0, 1}}, F(2, 3, 4), F(1, 4)}},
    {"Clip-13", LT_OP_CLIP, 13, 3, 1, {KINK(2, 3, 4), FIXED(-0.5), FIXED(0.55)}},
    {"Clip-6", LT_OP_CLIP, 6, 1, 1, {KINK(2, 3, 4)}, a_clip6},
    {"Max", LT_OP_MAX, 13, 2, 1, {F(2, 3, 4), F(2, 3, 4)}},
    {"Mean", LT_OP_MEAN, 13, 2, 1, {F(2, 3, 4), F(1, 4)}},
    {"ReduceSumSquare", LT_OP_REDUCE_SUM_SQUARE, 13, 1, 1, {F(2, 3, 4)}},
    {"ReduceL2", LT_OP_REDUCE_L2, 13, 1, 1, {F(2, 3, 4)}},
    {"ReduceMax", LT_OP_REDUCE_MAX, 13, 1, 1, {F(3, 2, 3, 4)}, a_keep0},
    {"ReduceLogSumExp", LT_OP_REDUCE_LOG_SUM_EXP, 13, 1, 1, {F(2, 3, 4)}},
    {"GlobalAveragePool", LT_OP_GLOBAL_AVERAGE_POOL, 1, 1, 1, {F(4, 2, 3, 4, 5)}},
    {"GlobalMaxPool", LT_OP_GLOBAL_MAX_POOL, 1, 1, 1, {F(4, 2, 3, 4, 5)}},
    {"GlobalLpPool.p3", LT_OP_GLOBAL_LP_POOL, 2, 1, 1, {KINK(4, 2, 3, 2, 2)}, a_lp3},
    {"LpNormalization", LT_OP_LP_NORMALIZATION, 1, 1, 1, {F(2, 3, 4)}, a_last},
    {"MeanVarianceNormalization", LT_OP_MEAN_VARIANCE_NORMALIZATION, 13, 1, 1, {F(3, 3, 2, 4)}, a_mvn},
    {"RMSNormalization", LT_OP_RMS_NORMALIZATION, 23, 2, 1, {F(3, 2, 3, 4), F(1, 4)}},
    {"Gemm.beta", LT_OP_GEMM, 13, 3, 1, {F(2, 3, 4), F(2, 5, 4), F(1, 5)}, a_gemm},
    {"MatMul", LT_OP_MAT_MUL, 13, 2, 1, {F(3, 2, 3, 4), F(2, 4, 5)}},
    {"Softmax", LT_OP_SOFTMAX, 13, 1, 1, {F(2, 3, 4)}, a_axis1},
    {"LayerNormalization", LT_OP_LAYER_NORMALIZATION, 17, 3, 1, {F(3, 2, 3, 5), F(1, 5), F(1, 5)}, a_last},
};

/* the model of a case with its float inputs in dt */
static tu_fd_model model_of(const hcase *hc, lt_dtype dt, tu_fd_in *in)
{
    for (int i = 0; i < hc->nin; i++) {
        in[i] = hc->in[i];
        if (!in[i].dt)
            in[i].dt = dt;
    }
    return (tu_fd_model){.name = hc->name,
                         .op = hc->op,
                         .opset = hc->opset,
                         .nin = hc->nin,
                         .nout = hc->nout,
                         .in = in,
                         .attrs = hc->attrs,
                         .seed = 5000 + (uint64_t)hc->op * 7919 + (uint64_t)hc->opset};
}

/* the model's gradient program (in float64 when f64) run: its outputs, the
 * loss then the parameters' gradients, in outs; the number of outputs, or
 * -1 with the message printed */
static int gradients(const tu_fd_model *fm, bool f64, lt_value **outs, int cap)
{
    lt_model *m = NULL;
    lt_session *s = NULL;
    lt_err err;
    lt_grad_opts o = {.loss = LT_LOSS_SUM};
    lt_status st = tu_fd_build(fm, &m, &err);
    if (st == LT_OK && f64)
        st = lt_model_to_f64(m, &err);
    if (st == LT_OK)
        st = lt_model_grad(m, &o, &err);
    int n = st == LT_OK ? lt_model_num_outputs(m) : 0;
    if (st == LT_OK && n > cap)
        st = lt_errf(&err, LT_ERR_INTERNAL, "%d outputs", n);
    if (st == LT_OK)
        st = lt_session_new(m, &s, &err);
    if (st == LT_OK)
        st = lt_session_run(s, 0, NULL, NULL, outs, &err);
    lt_session_free(s);
    lt_model_free(m);
    if (st != LT_OK) {
        printf("FAIL %s (%s): %s\n", fm->name, f64 ? "float64" : "half", err.msg);
        return -1;
    }
    return n;
}

/* Every case in dt: returns the number of failures; *worst gets the largest
 * relative error */
static int check_all(lt_dtype dt, double tol, double *worst)
{
    int failures = 0, pairs = 0;
    *worst = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tu_fd_in in[MAXIN];
        tu_fd_model fm = model_of(&cases[k], dt, in);
        lt_value *h[16] = {0}, *w[16] = {0};
        int nh = gradients(&fm, false, h, 16), nw = gradients(&fm, true, w, 16);
        if (nh < 0 || nw < 0 || nh != nw || nh < 2) {
            if (nh >= 0 && nw >= 0)
                printf("FAIL %s: %d gradient outputs in %s, %d in float64\n", fm.name, nh - 1, lt_dtype_name(dt),
                       nw - 1);
            failures++;
        }
        for (int r = 1; r < nh && r < nw && nh == nw; r++) {
            const lt_tensor *a = lt_value_tensor(h[r]), *b = lt_value_tensor(w[r]);
            double e = tu_max_rel_err(a, b), big = 0;
            for (int64_t i = 0; i < b->numel; i++)
                big = fmax(big, fabs(lt_tensor_get_f64(b, i)));
            pairs++;
            *worst = fmax(*worst, e);
            /* the gradient stays in the model's type, and is not trivially zero */
            if (a->dtype != dt || b->dtype != LT_F64 || e > tol || big == 0) {
                printf("FAIL %s, gradient %d: %s against float64, rel.err %.3g, max |grad| %.3g\n", fm.name, r,
                       lt_dtype_name(a->dtype), e, big);
                failures++;
            }
        }
        for (int r = 0; r < 16; r++) {
            lt_value_free(h[r]);
            lt_value_free(w[r]);
        }
    }
    printf("%s: %d gradients against float64, worst relative error %.3g\n", lt_dtype_name(dt), pairs, *worst);
    return failures;
}

static void float16_gradients(void **state)
{
    (void)state;
    double worst;
    assert_int_equal(check_all(LT_F16, 1e-2, &worst), 0);
}

static void bfloat16_gradients(void **state)
{
    (void)state;
    double worst;
    assert_int_equal(check_all(LT_BF16, 5e-2, &worst), 0);
}

/* what --f64 and --output-dir do with half-precision values: inputs widen
 * to float64 exactly; bfloat16, which .npy has no code for, is written as
 * its float32 values (float16 keeps its own <f2) */
static void half_values(void **state)
{
    (void)state;
    static const double vals[4] = {1.5, -0.099609375, 3.0e4, 0.0};
    static const lt_dtype types[2] = {LT_F16, LT_BF16};
    for (int k = 0; k < 2; k++) {
        lt_value *v = tu_from(types[k], 1, (int64_t[]){4}, vals);
        lt_value *w = lt_value_to_f64(v);
        assert_int_equal(lt_value_tensor(w)->dtype, LT_F64);
        char path[] = "/tmp/lt_half_npyXXXXXX.npy";
        int fd = mkstemps(path, 4);
        assert_true(fd >= 0);
        close(fd);
        lt_err err;
        assert_int_equal(lt_value_save_npy(v, path, &err), LT_OK);
        lt_value *back = tu_load(path);
        unlink(path);
        assert_int_equal(lt_value_tensor(back)->dtype, types[k] == LT_F16 ? LT_F16 : LT_F32);
        for (int i = 0; i < 4; i++) {
            double want = tu_get(v, i); /* the value as the type rounded it */
            assert_true(tu_get(w, i) == want);
            assert_true(tu_get(back, i) == want);
        }
        lt_value_free(back);
        lt_value_free(w);
        lt_value_free(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(float16_gradients), cmocka_unit_test(bfloat16_gradients),
                                       cmocka_unit_test(half_values)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
