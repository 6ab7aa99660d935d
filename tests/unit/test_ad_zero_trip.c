/* Loops and Scans that run zero times, in the gradient and in training
 * (tests/data/make_ad_zero_trip_models.py): a Loop stopped by its trip
 * count M = 0, by a condition false at the start, by both, or without a
 * trip count; a Scan over a sequence of length 0; a zero-trip Loop inside a
 * Loop that runs. The gradient of such a loop is well defined: the carried
 * values pass through (their adjoint is the incoming one), the scan outputs
 * are empty, and the body's weights get nothing. Each model is also checked
 * where its loop runs (2 or 3 iterations), against float64 central finite
 * differences, and at zero iterations against the closed form. A trainer
 * step on a batch whose loop runs no iteration moves only the weight after
 * the loop, by SGD on the loss of x @ O. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

static const int64_t d24[2] = {2, 4};

#define NEAR(a, b, tol)                                                                                      \
    do {                                                                                                       \
        double a_ = (a), b_ = (b);                                                                             \
        if (!(fabs(a_ - b_) <= (tol)))                                                                         \
            fail_msg("%s = %.9g, want %.9g (line %d)", #a, a_, b_, __LINE__);                                  \
    } while (0)

/* finite differences of every parameter of file at the inputs (x uniform
 * in [-1, 1) from seed, then the named extra inputs); zero names the
 * parameters whose gradient must be exactly zero (NULL-terminated), the
 * others must get one */
static void fd_check(const char *file, lt_value *x, int nextra, const char *const *names, lt_value *const *extra,
                     const char *const *zero, const char *what)
{
    const char *nm[4] = {"x"};
    lt_value *in[4] = {x};
    for (int i = 0; i < nextra; i++) {
        nm[1 + i] = names[i];
        in[1 + i] = extra[i];
    }
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check(file, &o, 1 + nextra, nm, in, 64, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s, %s: %s", file, what, err.msg);
    assert_true(nrows > 0);
    for (int r = 0; r < nrows; r++) {
        if (rows[r].err64 > 1e-5 || rows[r].err32 > 1e-3)
            fail_msg("%s, %s: parameter %s: relative error %.3g (f64), %.3g (f32)", file, what, rows[r].name,
                     rows[r].err64, rows[r].err32);
        assert_true(rows[r].checked > 0);
        bool must_zero = false;
        for (int z = 0; zero && zero[z]; z++)
            must_zero |= !strcmp(zero[z], rows[r].name);
        if (must_zero ? rows[r].max_grad != 0 : !(rows[r].max_grad > 0))
            fail_msg("%s, %s: parameter %s: max |gradient| %g", file, what, rows[r].name, rows[r].max_grad);
    }
    free(rows);
}

static lt_value *scalar(lt_dtype dt, double v) { return tu_from(dt, 0, NULL, &v); }

/* the output named name of the gradient program m (outs from its run) */
static const lt_tensor *out_named(lt_model *m, lt_value *const *outs, const char *name)
{
    for (int i = 0; i < lt_model_num_outputs(m); i++)
        if (!strcmp(lt_model_output_name(m, i), name))
            return lt_value_tensor(outs[i]);
    fail_msg("no output %s", name);
    return NULL;
}

/* At zero iterations y = sum(c0 * c0) + (sums over empty scan outputs), c0
 * the carried start: the loss is sum(c0^2), c0's gradient 2 c0, x's and
 * every other parameter's zero (exactly: nothing flows). */
static void closed_form(const char *file, lt_value *x, int nextra, const char *const *names, lt_value *const *extra,
                        const char *c0)
{
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(file, &m, &err), LT_OK);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 1};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    tu_verify(m);
    const char *nm[4] = {"x"};
    lt_value *in[4] = {x};
    for (int i = 0; i < nextra; i++) {
        nm[1 + i] = names[i];
        in[1 + i] = extra[i];
    }
    lt_session *s;
    lt_value *outs[TU_MAX_OUTPUTS] = {0};
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 1 + nextra, nm, in, outs, &err) != LT_OK)
        fail_msg("%s: %s", file, err.msg);
    const lt_tensor *start = tu_param(m, c0);
    char gname[64];
    snprintf(gname, sizeof gname, "%s_grad", c0);
    const lt_tensor *g = out_named(m, outs, gname), *loss = out_named(m, outs, "loss");
    assert_int_equal(g->numel, start->numel);
    double want = 0;
    for (int64_t e = 0; e < start->numel; e++) {
        double v = lt_tensor_get_f64(start, e);
        want += v * v;
        NEAR(lt_tensor_get_f64(g, e), 2 * v, 1e-6 * fabs(v) + 1e-7);
    }
    NEAR(lt_tensor_get_f64(loss, 0), want, 1e-5 * want);
    int zeros = 0;
    for (int i = 0; i < lt_model_num_outputs(m); i++) {
        const char *on = lt_model_output_name(m, i);
        size_t len = strlen(on);
        if (len < 5 || strcmp(on + len - 5, "_grad") || !strcmp(on, gname))
            continue;
        const lt_tensor *t = lt_value_tensor(outs[i]);
        for (int64_t e = 0; e < t->numel; e++)
            if (lt_tensor_get_f64(t, e) != 0)
                fail_msg("%s: %s[%lld] = %g at zero iterations", file, on, (long long)e, lt_tensor_get_f64(t, e));
        zeros++;
    }
    assert_true(zeros >= 2); /* x's and a body weight's at least */
    for (int i = 0; i < lt_model_num_outputs(m); i++)
        lt_value_free(outs[i]);
    lt_session_free(s);
    lt_model_free(m);
}

/* Loop(M, c): M = 0, c false, both, then 2 and 3 iterations (the body stops
 * after iteration 2) */
static void loop_trip_count_and_condition(void **state)
{
    (void)state;
    static const double cases[][2] = {{0, 1}, {5, 0}, {0, 0}, {2, 1}, {5, 1}};
    static const char *const zero[] = {"W", "V", NULL};
    static const char *const names[2] = {"M", "c"};
    for (int k = 0; k < 5; k++) {
        lt_value *x = tu_rand(LT_F32, 2, d24, -1, 1, 40 + k);
        lt_value *extra[2] = {scalar(LT_I64, cases[k][0]), scalar(LT_BOOL, cases[k][1])};
        bool none = cases[k][0] == 0 || cases[k][1] == 0;
        char what[64];
        snprintf(what, sizeof what, "M = %g, c = %g", cases[k][0], cases[k][1]);
        fd_check(DATA "ad_zt_loop.onnx", x, 2, names, extra, none ? zero : NULL, what);
        if (none)
            closed_form(DATA "ad_zt_loop.onnx", x, 2, names, extra, "h0");
        lt_value_free(extra[0]);
        lt_value_free(extra[1]);
        lt_value_free(x);
    }
}

/* Loop("", c): no trip count; c false runs none, true three */
static void loop_condition_only(void **state)
{
    (void)state;
    static const char *const zero[] = {"W", "V", NULL};
    static const char *const names[1] = {"c"};
    for (int c = 0; c < 2; c++) {
        lt_value *x = tu_rand(LT_F32, 2, d24, -1, 1, 50 + c);
        lt_value *extra[1] = {scalar(LT_BOOL, c)};
        fd_check(DATA "ad_zt_while.onnx", x, 1, names, extra, c ? NULL : zero, c ? "c true" : "c false");
        if (!c)
            closed_form(DATA "ad_zt_while.onnx", x, 1, names, extra, "h0");
        lt_value_free(extra[0]);
        lt_value_free(x);
    }
}

/* Scan over x [T, 2, 4], T = 0 and T = 3, with a forward scan output on
 * axis 0 and a reversed one on axis 1 */
static void scan_length_zero(void **state)
{
    (void)state;
    static const char *const zero[] = {"W", "V", "P", NULL};
    for (int T = 0; T <= 3; T += 3) {
        int64_t d[3] = {T, 2, 4};
        lt_value *x = tu_rand(LT_F32, 3, d, -1, 1, 60 + T);
        fd_check(DATA "ad_zt_scan.onnx", x, 0, NULL, NULL, T ? NULL : zero, T ? "T = 3" : "T = 0");
        if (!T)
            closed_form(DATA "ad_zt_scan.onnx", x, 0, NULL, NULL, "s0");
        lt_value_free(x);
    }
}

/* an inner Loop of M iterations in each of three outer ones: M = 0 leaves
 * the inner weight U and the captured V without gradient, W and h0 with
 * one; M = 2 gives all four one */
static void zero_trip_loop_in_loop(void **state)
{
    (void)state;
    static const char *const zero[] = {"U", "V", NULL};
    static const char *const names[1] = {"M"};
    for (int M = 0; M <= 2; M += 2) {
        lt_value *x = tu_rand(LT_F32, 2, d24, -1, 1, 70 + M);
        lt_value *extra[1] = {scalar(LT_I64, M)};
        fd_check(DATA "ad_zt_nested.onnx", x, 1, names, extra, M ? NULL : zero, M ? "M = 2" : "M = 0");
        lt_value_free(extra[0]);
        lt_value_free(x);
    }
}

/* lt_trainer_step (lantern train's step) on a batch whose mean |x| is over
 * 1, so the loop runs no iteration: hT = x, y = x @ O, mse against t. The
 * loss is mean((x O - t)^2), W and b stay as they were, O moves by
 * -lr * 2/(N*3) x^T (x O - t). A batch of small x then runs the loop and
 * moves W. */
static void trainer_step_zero_trips(void **state)
{
    (void)state;
    enum { N = 6, D = 4, C = 3 };
    lt_err err;
    lt_train_opts o;
    lt_train_defaults(&o);
    o.loss = LT_LOSS_MSE;
    o.output = "y";
    lt_optim_defaults(LT_OPTIM_SGD, &o.optim);
    lt_trainer *t;
    if (lt_trainer_new(DATA "ad_zt_train.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model *m = lt_trainer_model(t);
    float W0[D * D], b0[D], O0[D * C];
    memcpy(W0, tu_param(m, "W")->data, sizeof W0);
    memcpy(b0, tu_param(m, "b")->data, sizeof b0);
    memcpy(O0, tu_param(m, "O")->data, sizeof O0);
    int64_t xd[2] = {N, D}, td[2] = {N, C};
    lt_value *x = tu_rand(LT_F32, 2, xd, 1.5, 3, 80); /* |x| >= 1.5: no iteration */
    lt_value *tg = tu_rand(LT_F32, 2, td, -1, 1, 81);
    const char *names[2] = {"x", "targets"};
    lt_value *in[2] = {x, tg};
    const double lr = 0.05;
    double loss = NAN;
    if (lt_trainer_step(t, lr, 2, names, in, &loss, &err) != LT_OK)
        fail_msg("step on a zero-iteration batch: %s", err.msg);
    const float *xv = lt_value_tensor(x)->data, *tv = lt_value_tensor(tg)->data;
    double r[N][C], want_loss = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < C; j++) {
            double s = 0;
            for (int k = 0; k < D; k++)
                s += (double)xv[i * D + k] * O0[k * C + j];
            r[i][j] = s - tv[i * C + j];
            want_loss += r[i][j] * r[i][j] / (N * C);
        }
    NEAR(loss, want_loss, 1e-5 * want_loss);
    m = lt_trainer_model(t);
    assert_memory_equal(tu_param(m, "W")->data, W0, sizeof W0);
    assert_memory_equal(tu_param(m, "b")->data, b0, sizeof b0);
    const float *O1 = tu_param(m, "O")->data;
    double moved = 0;
    for (int k = 0; k < D; k++)
        for (int j = 0; j < C; j++) {
            double g = 0;
            for (int i = 0; i < N; i++)
                g += 2.0 / (N * C) * xv[i * D + k] * r[i][j];
            double want = O0[k * C + j] - lr * g;
            NEAR(O1[k * C + j], want, 1e-5 * (1 + fabs(want)));
            moved = fmax(moved, fabs(O1[k * C + j] - O0[k * C + j]));
        }
    assert_true(moved > 1e-3);
    /* a batch that runs the loop: W moves */
    lt_value *xs = tu_rand(LT_F32, 2, xd, -0.3, 0.3, 82);
    in[0] = xs;
    if (lt_trainer_step(t, lr, 2, names, in, &loss, &err) != LT_OK)
        fail_msg("step on a batch that runs the loop: %s", err.msg);
    assert_true(isfinite(loss));
    m = lt_trainer_model(t);
    assert_true(memcmp(tu_param(m, "W")->data, W0, sizeof W0) != 0);
    assert_int_equal(lt_trainer_num_steps(t), 2);
    lt_value_free(xs);
    lt_value_free(x);
    lt_value_free(tg);
    lt_trainer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loop_trip_count_and_condition), cmocka_unit_test(loop_condition_only),
        cmocka_unit_test(scan_length_zero),              cmocka_unit_test(zero_trip_loop_in_loop),
        cmocka_unit_test(trainer_step_zero_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
