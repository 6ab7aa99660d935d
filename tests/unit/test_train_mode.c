/* lt_ir_set_training and the running-statistics helpers: a tiny
 * Gemm + BatchNormalization model (tests/data/make_bn_model.py) trained for
 * a few SGD steps keeps its running mean and variance on the momentum
 * formula over the batch statistics (the variance unbiased, as PyTorch's
 * running_var; the normalization itself the population variance), evaluates in inference mode and
 * exports them; Dropout in training drops about `ratio` of the units and its
 * gradient follows the same mask. */
#include "test_dataset.h"
#include "ir/train_mode.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA LT_SOURCE_DIR "/tests/data/"
#define NB 8 /* batch */
#define MOM 0.8
#define EPS 1e-5

static lt_model *load(const char *name)
{
    char path[512];
    lt_err err;
    lt_model *m = NULL;
    snprintf(path, sizeof path, DATA "%s.onnx", name);
    if (lt_model_load(path, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return m;
}

static lt_tensor *param(lt_model *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, name))
            return &m->params[p].data;
    fail_msg("no parameter %s", name);
    return NULL;
}

static double pget(lt_model *m, const char *name, int64_t i) { return lt_tensor_get_f64(param(m, name), i); }

/* h = x W^T + b of the current parameters, [NB, 3] */
static void hidden(lt_model *m, const lt_value *x, double h[NB][3])
{
    for (int i = 0; i < NB; i++)
        for (int c = 0; c < 3; c++) {
            double s = pget(m, "b", c);
            for (int j = 0; j < 4; j++)
                s += tu_get(x, i * 4 + j) * pget(m, "W", c * 4 + j);
            h[i][c] = s;
        }
}

/* The training-mode loss in double from parameter copies P (W, b, scale,
 * bias: 12 + 3 + 3 + 3 values), for finite differences. */
static double ref_loss(const double *P, const lt_value *x, const double *lab)
{
    const double *W = P, *b = P + 12, *g = P + 15, *B = P + 18;
    double h[NB][3], bm[3] = {0}, bv[3] = {0}, loss = 0;
    for (int i = 0; i < NB; i++)
        for (int c = 0; c < 3; c++) {
            h[i][c] = b[c];
            for (int j = 0; j < 4; j++)
                h[i][c] += tu_get(x, i * 4 + j) * W[c * 4 + j];
        }
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < NB; i++)
            bm[c] += h[i][c] / NB;
        for (int i = 0; i < NB; i++)
            bv[c] += (h[i][c] - bm[c]) * (h[i][c] - bm[c]) / NB;
    }
    for (int i = 0; i < NB; i++) {
        double z[3], mx = -INFINITY, se = 0;
        for (int c = 0; c < 3; c++) {
            z[c] = g[c] * (h[i][c] - bm[c]) / sqrt(bv[c] + EPS) + B[c];
            mx = fmax(mx, z[c]);
        }
        for (int c = 0; c < 3; c++)
            se += exp(z[c] - mx);
        loss += (log(se) + mx - z[(int)lab[i]]) / NB;
    }
    return loss;
}

/* Every parameter's gradient (outputs "<p>_grad") against central
 * differences of ref_loss: in training mode b's gradient vanishes, as the
 * batch mean takes it away. */
static void check_grads(lt_model *tm, int nout, lt_value *const *out, const lt_value *x, const double *lab)
{
    static const char *const pn[4] = {"W", "b", "bn_scale", "bn_bias"};
    static const int off[4] = {0, 12, 15, 18}, cnt[4] = {12, 3, 3, 3};
    double P[21];
    for (int q = 0; q < 4; q++)
        for (int i = 0; i < cnt[q]; i++)
            P[off[q] + i] = pget(tm, pn[q], i);
    for (int q = 0; q < 4; q++) {
        char gn[64];
        snprintf(gn, sizeof gn, "%s_grad", pn[q]);
        int r = 1;
        while (r < nout && strcmp(lt_model_output_name(tm, r), gn) != 0)
            r++;
        assert_true(r < nout);
        for (int i = 0; i < cnt[q]; i++) {
            double keep = P[off[q] + i], hd = 1e-5;
            P[off[q] + i] = keep + hd;
            double up = ref_loss(P, x, lab);
            P[off[q] + i] = keep - hd;
            double down = ref_loss(P, x, lab);
            P[off[q] + i] = keep;
            double fd = (up - down) / (2 * hd), got = tu_get(out[r], i);
            if (fabs(got - fd) > 2e-4 + 2e-3 * fabs(fd))
                fail_msg("%s[%d]: gradient %g, finite differences %g", pn[q], i, got, fd);
        }
    }
}

static void train_bn(const char *name)
{
    lt_err err;
    lt_model *tm = load(name), *em = load(name);
    if (lt_ir_set_training(tm, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
    if (lt_model_grad(tm, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int nstats = 0;
    if (lt_ir_expose_running_stats(tm, &nstats, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nstats, 2);
    if (lt_ir_verify(tm, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int nout = lt_model_num_outputs(tm);
    assert_true(nout <= 16);
    lt_session *ts = NULL, *es = NULL;
    assert_int_equal(lt_session_new(tm, &ts, &err), LT_OK);
    double mean[3], var[3];
    for (int c = 0; c < 3; c++) {
        mean[c] = pget(tm, "bn_mean", c);
        var[c] = pget(tm, "bn_var", c);
    }
    for (int step = 0; step < 3; step++) {
        int64_t xd[2] = {NB, 4}, n = NB;
        lt_value *x = tu_rand(LT_F32, 2, xd, -2, 2, 100 + step);
        double lab[NB];
        for (int i = 0; i < NB; i++)
            lab[i] = (i * 7 + step) % 3;
        lt_value *y = tu_from(LT_I64, 1, &n, lab);
        /* the reference: batch statistics of h, the loss they give, the
         * momentum update of the running ones */
        double h[NB][3], bm[3] = {0}, bv[3] = {0}, want_loss = 0;
        hidden(tm, x, h);
        for (int c = 0; c < 3; c++) {
            for (int i = 0; i < NB; i++)
                bm[c] += h[i][c] / NB;
            for (int i = 0; i < NB; i++)
                bv[c] += (h[i][c] - bm[c]) * (h[i][c] - bm[c]) / NB;
        }
        for (int i = 0; i < NB; i++) {
            double z[3], mx = -INFINITY, se = 0;
            for (int c = 0; c < 3; c++) {
                z[c] = pget(tm, "bn_scale", c) * (h[i][c] - bm[c]) / sqrt(bv[c] + EPS) + pget(tm, "bn_bias", c);
                mx = fmax(mx, z[c]);
            }
            for (int c = 0; c < 3; c++)
                se += exp(z[c] - mx);
            want_loss += (log(se) + mx - z[(int)lab[i]]) / NB;
        }
        lt_value *out[16] = {0}, *in[2] = {x, y};
        const char *names[2] = {"x", "labels"};
        if (lt_session_run(ts, 2, names, in, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        assert_true(fabs(tu_get(out[0], 0) - want_loss) < 1e-4 * fmax(1, fabs(want_loss)));
        if (step == 0)
            check_grads(tm, nout, out, x, lab);
        if (lt_ir_store_running_stats(tm, nout, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        for (int c = 0; c < 3; c++) {
            mean[c] = mean[c] * MOM + bm[c] * (1 - MOM);
            /* PyTorch's running variance: the batch's unbiased one */
            var[c] = var[c] * MOM + bv[c] * NB / (NB - 1) * (1 - MOM);
            assert_true(fabs(pget(tm, "bn_mean", c) - mean[c]) < 1e-5);
            assert_true(fabs(pget(tm, "bn_var", c) - var[c]) < 1e-5 * fmax(1, var[c]));
        }
        /* an SGD step on the gradients, as the trainer would */
        for (int r = 1; r < nout; r++) {
            const char *on = lt_model_output_name(tm, r);
            size_t l = strlen(on);
            if (l < 5 || strcmp(on + l - 5, "_grad") != 0)
                continue;
            char pn[256];
            snprintf(pn, sizeof pn, "%.*s", (int)(l - 5), on);
            lt_tensor *p = param(tm, pn);
            for (int64_t i = 0; i < p->numel; i++)
                lt_tensor_set_f64(p, i, lt_tensor_get_f64(p, i) - 0.1 * tu_get(out[r], i));
        }
        for (int r = 0; r < nout; r++)
            lt_value_free(out[r]);
        lt_value_free(x);
        lt_value_free(y);
    }
    for (int c = 0; c < 3; c++) /* they moved */
        assert_true(fabs(mean[c] - pget(em, "bn_mean", c)) > 1e-3);

    /* the evaluation copy gets the parameters and stays in inference mode */
    for (int p = 0; p < tm->nparams; p++) {
        lt_tensor *src = &tm->params[p].data, *dst = param(em, tm->params[p].name);
        memcpy(dst->data, src->data, (size_t)src->numel * lt_dtype_size(src->dtype));
    }
    int64_t xd[2] = {NB, 4};
    lt_value *x = tu_rand(LT_F32, 2, xd, -2, 2, 999), *out[1] = {0};
    const char *xn = "x";
    assert_int_equal(lt_session_new(em, &es, &err), LT_OK);
    if (lt_session_run(es, 1, &xn, &x, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double h[NB][3], want[NB * 3];
    hidden(em, x, h);
    for (int i = 0; i < NB; i++)
        for (int c = 0; c < 3; c++)
            want[i * 3 + c] =
                pget(em, "bn_scale", c) * (h[i][c] - mean[c]) / sqrt(var[c] + EPS) + pget(em, "bn_bias", c);
    tu_assert_close(out[0], want, NB * 3, 1e-4, 1e-5, 999);
    lt_value_free(out[0]);
    lt_value_free(x);

    /* the export carries the updated running statistics */
    char src[512], dst[512];
    snprintf(src, sizeof src, DATA "%s.onnx", name);
    snprintf(dst, sizeof dst, "/tmp/lt_train_mode_%d_%s.onnx", (int)getpid(), name);
    if (lt_model_export(em, src, dst, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model *back = NULL;
    if (lt_model_load(dst, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int c = 0; c < 3; c++) {
        assert_true(fabs(pget(back, "bn_mean", c) - mean[c]) < 1e-5);
        assert_true(fabs(pget(back, "bn_var", c) - var[c]) < 1e-5 * fmax(1, var[c]));
    }
    unlink(dst);
    lt_model_free(back);
    lt_session_free(ts);
    lt_session_free(es);
    lt_model_free(tm);
    lt_model_free(em);
}

static void test_bn_opset15(void **state)
{
    (void)state;
    train_bn("bn_model");
}

static void test_bn_opset9(void **state)
{
    (void)state;
    train_bn("bn_model_9");
}

/* loss = sum(seed * Dropout(x)) differentiated with respect to x: the
 * gradient is seed * mask / (1 - ratio), and the loss must be sum(x * grad) */
static void train_dropout(const char *name)
{
    lt_err err;
    lt_model *m = load(name);
    if (lt_ir_set_training(m, &err) != LT_OK || lt_ir_verify(m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *seeds[1] = {"y"};
    lt_grad_opts o = {LT_LOSS_SEEDS, 1, seeds, 1};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_model_num_outputs(m), 2);
    lt_session *s = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    int64_t d[2] = {4, 1000};
    lt_value *x = tu_rand(LT_F32, 2, d, 0.5, 2, 5), *seed = tu_rand(LT_F32, 2, d, 0.5, 2, 6);
    lt_value *in[2] = {x, seed}, *out[2] = {0};
    const char *names[2] = {"x", "y_seed"};
    if (lt_session_run(s, 2, names, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int64_t dropped = 0;
    double loss = 0;
    for (int64_t i = 0; i < 4000; i++) {
        double g = tu_get(out[1], i), kept = tu_get(seed, i) / 0.7;
        if (g == 0)
            dropped++;
        else
            assert_true(fabs(g - kept) < 1e-5 * kept);
        loss += tu_get(x, i) * g;
    }
    double frac = (double)dropped / 4000;
    if (fabs(frac - 0.3) > 0.04)
        fail_msg("%s: dropped %.3f of the units, ratio 0.3", name, frac);
    assert_true(fabs(tu_get(out[0], 0) - loss) < 1e-4 * loss);
    lt_value_free(out[0]);
    lt_value_free(out[1]);
    lt_value_free(x);
    lt_value_free(seed);
    lt_session_free(s);
    lt_model_free(m);
}

static void test_dropout_opset13(void **state)
{
    (void)state;
    train_dropout("dropout_13");
}

static void test_dropout_opset10(void **state)
{
    (void)state;
    train_dropout("dropout_10");
}

/* without the pass Dropout stays the identity */
static void test_dropout_inference_untouched(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = load("dropout_13");
    lt_session *s = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    int64_t d[2] = {2, 1000};
    lt_value *x = tu_rand(LT_F32, 2, d, 0.5, 2, 8), *out[1] = {0};
    const char *xn = "x";
    assert_int_equal(lt_session_run(s, 1, &xn, &x, out, &err), LT_OK);
    for (int64_t i = 0; i < 2000; i++)
        assert_true(tu_get(out[0], i) == tu_get(x, i));
    lt_value_free(out[0]);
    lt_value_free(x);
    lt_session_free(s);
    lt_model_free(m);
}

static void count_note(const char *msg, void *user)
{
    char *seen = user;
    snprintf(seen, 512, "%s", msg);
}

/* A batch norm inside an If branch (its condition true) updates its running
 * statistics exactly as the same batch norm in the main graph does: the two
 * runs end with the same bits in every parameter, statistics included. */
static void test_bn_in_subgraph(void **state)
{
    (void)state;
    static char note[512];
    lt_model *m[2] = {NULL, NULL};
    const char *files[2] = {DATA "bn_in_if.onnx", DATA "bn_main.onnx"};
    for (int k = 0; k < 2; k++) {
        note[0] = 0;
        lt_train_opts o;
        lt_train_defaults(&o);
        o.limit = 256;
        o.test_limit = 64;
        o.on_note = count_note;
        o.user = note;
        lt_err err;
        if (lt_train(files[k], &o, &m[k], &err) != LT_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(note[0], 0);
    }
    static const char *const names[] = {"W1", "b1", "gamma", "beta", "mean", "var", "W2", "b2"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const lt_tensor *t[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++)
            for (int p = 0; p < m[k]->nparams; p++)
                if (!strcmp(m[k]->params[p].name, names[i]))
                    t[k] = &m[k]->params[p].data;
        assert_non_null(t[0]);
        assert_non_null(t[1]);
        assert_memory_equal(t[0]->data, t[1]->data, lt_tensor_nbytes(t[0]));
    }
    int moved = 0;
    for (int p = 0; p < m[0]->nparams; p++)
        if (!strcmp(m[0]->params[p].name, "mean"))
            for (int64_t i = 0; i < m[0]->params[p].data.numel; i++)
                moved += ((const float *)m[0]->params[p].data.data)[i] != 0.0f;
    assert_true(moved > 0);
    lt_model_free(m[0]);
    lt_model_free(m[1]);
}

/* A batch norm applied in both iterations of a Loop updates its statistics
 * in turn, as the unrolled main graph with the batch norm's parameters
 * shared does; the trained weights agree bit for bit. */
static void test_bn_in_loop(void **state)
{
    (void)state;
    lt_model *m[2] = {NULL, NULL};
    const char *files[2] = {DATA "bn_in_loop.onnx", DATA "bn_unrolled.onnx"};
    for (int k = 0; k < 2; k++) {
        lt_train_opts o;
        lt_train_defaults(&o);
        o.limit = 256;
        o.test_limit = 64;
        lt_err err;
        if (lt_train(files[k], &o, &m[k], &err) != LT_OK)
            fail_msg("%s", err.msg);
    }
    static const char *const names[] = {"W1", "b1", "gamma", "beta", "mean", "var", "W2", "b2"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const lt_tensor *t[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++)
            for (int p = 0; p < m[k]->nparams; p++)
                if (!strcmp(m[k]->params[p].name, names[i]))
                    t[k] = &m[k]->params[p].data;
        assert_non_null(t[0]);
        assert_non_null(t[1]);
        const float *a = t[0]->data, *b = t[1]->data;
        bool stat = i == 4 || i == 5;
        for (int64_t e = 0; e < t[0]->numel; e++) {
            /* the statistics' sums may round differently by an ulp */
            if (stat ? fabs(a[e] - b[e]) > 1e-6 * (1 + fabs(b[e])) : a[e] != b[e])
                fail_msg("%s[%lld]: %.9g vs %.9g", names[i], (long long)e, a[e], b[e]);
            if (stat && e == 0)
                assert_true(a[e] != (i == 5 ? 1.0f : 0.0f)); /* it moved */
        }
    }
    lt_model_free(m[0]);
    lt_model_free(m[1]);
}

/* A batch norm in every iteration of a three-step Loop (bn_loop3.onnx,
 * momentum 0.7, statistics away from 0 and 1): one training step updates
 * its running statistics three times in turn, as PyTorch's BatchNorm
 * buffers are updated each time the module runs (a scripted loop's):
 * checked against that sequence computed here in double (they were the
 * mean of the three updates: 0.18 off in the mean, 0.36 in the variance) */
static void test_bn_loop_in_turn(void **state)
{
    (void)state;
    enum { N = 16 };
    float x[N * 4];
    int64_t y[N];
    uint64_t seed = 36;
    for (int i = 0; i < N * 4; i++)
        x[i] = (float)td_uniform(&seed, -1.7, 2.3);
    for (int i = 0; i < N; i++)
        y[i] = (int64_t)(td_next(&seed) % 3);
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/b.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    int64_t dx[2] = {N, 4}, dy[1] = {N};
    td_array arrays[2] = {{"x.npy", "<f4", 2, dx, x, sizeof x}, {"y.npy", "<i8", 1, dy, y, sizeof y}};
    td_write_npz(path, arrays, 2);

    lt_model *m0 = load("bn_loop3");
    double g[4], b[4], rm[4], rv[4], h[N * 4];
    for (int c = 0; c < 4; c++) {
        g[c] = ((const float *)param(m0, "g3")->data)[c];
        b[c] = ((const float *)param(m0, "b3")->data)[c];
        rm[c] = ((const float *)param(m0, "m3")->data)[c];
        rv[c] = ((const float *)param(m0, "v3")->data)[c];
    }
    lt_model_free(m0);
    for (int i = 0; i < N * 4; i++)
        h[i] = x[i];
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 4; c++) {
            double mu = 0, var = 0;
            for (int i = 0; i < N; i++)
                mu += h[i * 4 + c] / N;
            for (int i = 0; i < N; i++)
                var += (h[i * 4 + c] - mu) * (h[i * 4 + c] - mu) / N;
            rm[c] = 0.7 * rm[c] + 0.3 * mu;
            rv[c] = 0.7 * rv[c] + 0.3 * var * N / (N - 1);
            for (int i = 0; i < N; i++)
                h[i * 4 + c] = fmax(0, g[c] * (h[i * 4 + c] - mu) / sqrt(var + EPS) + b[c]);
        }
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = spec;
    o.batch = N;
    o.no_shuffle = 1;
    o.schedule.lr = 1e-12;
    lt_err err;
    lt_model *m = NULL;
    if (lt_train(DATA "bn_loop3.onnx", &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const float *gm = param(m, "m3")->data, *gv = param(m, "v3")->data;
    for (int c = 0; c < 4; c++) {
        if (!(fabs(gm[c] - rm[c]) <= 1e-5 * (1 + fabs(rm[c]))))
            fail_msg("running mean[%d] %.9g, want %.9g", c, gm[c], rm[c]);
        if (!(fabs(gv[c] - rv[c]) <= 1e-5 * (1 + fabs(rv[c]))))
            fail_msg("running var[%d] %.9g, want %.9g", c, gv[c], rv[c]);
    }
    lt_model_free(m);
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bn_opset15),
        cmocka_unit_test(test_bn_in_subgraph),
        cmocka_unit_test(test_bn_in_loop),
        cmocka_unit_test(test_bn_loop_in_turn),
        cmocka_unit_test(test_bn_opset9),
        cmocka_unit_test(test_dropout_opset13),
        cmocka_unit_test(test_dropout_opset10),
        cmocka_unit_test(test_dropout_inference_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
