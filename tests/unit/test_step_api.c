/* The step-level training API against lt_train: the same in-memory data in
 * the same order (no shuffling), the same optimizer and learning rate give
 * the same parameters bit for bit; a checkpoint saved by one trainer and
 * loaded by another continues identically. Class labels equal to the
 * ignore index (-100, PyTorch's) in x/y arrays count for nothing: the test
 * loss and accuracy are those of the other samples; any other negative
 * label, or one under a loss without an ignore index, is refused. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 96
#define B 32

static void make_data(float *x, int64_t *y)
{
    uint64_t s = 7;
    for (int i = 0; i < N * 784; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xffff) / 65536.0f;
    }
    for (int i = 0; i < N; i++)
        y[i] = (int64_t)((i * 7 + 3) % 10);
}

static void opts(lt_train_opts *o)
{
    lt_train_defaults(o);
    o->epochs = 2;
    o->batch = B;
    o->no_shuffle = 1;
    lt_optim_defaults(LT_OPTIM_ADAM, &o->optim);
    o->schedule.lr = 0.001;
}

static void step_api_matches_lt_train(void **state)
{
    (void)state;
    static float x[N * 784];
    static int64_t y[N];
    make_data(x, y);
    lt_err err;
    int64_t xd[2] = {N, 784}, yd[1] = {N};
    lt_tensor xt = {.dtype = LT_F32, .rank = 2, .dims = {N, 784}, .numel = N * 784, .data = x};
    lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {N}, .numel = N, .data = y};
    (void)xd;
    (void)yd;
    lt_dataset *d;
    assert_int_equal(lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err), LT_OK);
    lt_train_opts o;
    opts(&o);
    o.train_set = d;
    lt_model *trained;
    if (lt_train(LT_SOURCE_DIR "/models/mlp.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_trainer *t;
    if (lt_trainer_new(LT_SOURCE_DIR "/models/mlp.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *names[2] = {"x", "labels"};
    if (strcmp(lt_model_input_name(trained, 0), "x") != 0)
        names[0] = lt_model_input_name(trained, 0);
    for (int e = 0; e < 2; e++)
        for (int s = 0; s < N / B; s++) {
            lt_tensor bx = {.dtype = LT_F32, .rank = 2, .dims = {B, 784}, .numel = B * 784, .data = x + s * B * 784};
            lt_tensor by = {.dtype = LT_I64, .rank = 1, .dims = {B}, .numel = B, .data = y + s * B};
            lt_value *in[2];
            assert_int_equal(lt_value_from_tensor(&bx, &in[0], &err), LT_OK);
            assert_int_equal(lt_value_from_tensor(&by, &in[1], &err), LT_OK);
            double loss;
            if (lt_trainer_step(t, 0.001, 2, names, in, &loss, &err) != LT_OK)
                fail_msg("%s", err.msg);
            assert_true(loss > 0 && loss < 10);
            lt_value_free(in[0]);
            lt_value_free(in[1]);
        }
    assert_int_equal(lt_trainer_num_steps(t), 2 * N / B);
    lt_model *m = lt_trainer_model(t);
    assert_int_equal(lt_model_num_params(m), lt_model_num_params(trained));
    int moved = 0;
    for (int p = 0; p < lt_model_num_params(m); p++) {
        const lt_tensor *a = lt_model_param(m, p), *b = lt_model_param(trained, p);
        assert_int_equal(a->numel, b->numel);
        assert_memory_equal(a->data, b->data, (size_t)a->numel * lt_dtype_size(a->dtype));
        const lt_tensor *orig = NULL;
        (void)orig;
        moved++;
    }
    assert_true(moved > 0);
    /* a checkpoint round trip into a fresh trainer */
    char dir[] = "/tmp/lt_step_XXXXXX";
    assert_non_null(mkdtemp(dir));
    if (lt_trainer_save_checkpoint(t, dir, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_trainer *t2;
    assert_int_equal(lt_trainer_new(LT_SOURCE_DIR "/models/mlp.onnx", &o, &t2, &err), LT_OK);
    if (lt_trainer_load_checkpoint(t2, dir, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_trainer_num_steps(t2), 2 * N / B);
    lt_model *m2 = lt_trainer_model(t2);
    for (int p = 0; p < lt_model_num_params(m2); p++) {
        const lt_tensor *a = lt_model_param(m2, p), *b = lt_model_param(trained, p);
        assert_memory_equal(a->data, b->data, (size_t)a->numel * lt_dtype_size(a->dtype));
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    lt_trainer_free(t2);
    lt_trainer_free(t);
    lt_model_free(trained);
    lt_dataset_free(d);
}

static lt_eval_result last_test;
static void keep_test(const lt_epoch_result *r, void *user)
{
    (void)user;
    last_test = r->test;
}

/* lt_train on x/y arrays whose labels y hold ignore indices; the status,
 * and the last epoch's test figures (the test split is the training data,
 * the learning rate too small to move a weight, so the figures are the
 * model's own) */
static lt_status train_ignoring(const float *x, const int64_t *y, lt_loss_kind loss, lt_err *err)
{
    lt_tensor xt = {.dtype = LT_F32, .rank = 2, .dims = {N, 784}, .numel = N * 784, .data = (void *)x};
    lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {N}, .numel = N, .data = (void *)y};
    lt_dataset *d;
    assert_int_equal(lt_dataset_from_arrays(&xt, &yt, NULL, &d, err), LT_OK);
    lt_train_opts o;
    opts(&o);
    o.epochs = 1;
    o.schedule.lr = 1e-30; /* far below every weight's last bit: the model stays as loaded */
    o.loss = loss;
    o.train_set = d;
    o.test_set = d;
    o.on_epoch = keep_test;
    lt_model *trained = NULL;
    memset(&last_test, 0, sizeof last_test);
    lt_status st = lt_train(LT_SOURCE_DIR "/models/mlp.onnx", &o, &trained, err);
    lt_model_free(trained);
    lt_dataset_free(d);
    return st;
}

static void ignored_labels(void **state)
{
    (void)state;
    static float x[N * 784];
    static int64_t y[N];
    make_data(x, y);
    for (int i = 0; i < N; i += 3)
        y[i] = -100;
    lt_err err;
    if (train_ignoring(x, y, LT_LOSS_SOFTMAX_CROSS_ENTROPY, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* the reference: the model's logits, cross-entropy and accuracy over
     * the labels that count */
    lt_model *m;
    lt_session *s;
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/models/mlp.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    lt_tensor xt = {.dtype = LT_F32, .rank = 2, .dims = {N, 784}, .numel = N * 784, .data = x};
    lt_value *in, *out = NULL;
    assert_int_equal(lt_value_from_tensor(&xt, &in, &err), LT_OK);
    const char *name = lt_model_input_name(m, 0);
    if (lt_session_run(s, 1, &name, &in, &out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_tensor *z = lt_value_tensor(out);
    double loss = 0;
    int counted = 0, correct = 0;
    for (int i = 0; i < N; i++) {
        if (y[i] < 0)
            continue;
        double mx = -INFINITY, se = 0;
        int best = 0;
        for (int c = 0; c < 10; c++) {
            double v = lt_tensor_get_f64(z, i * 10 + c);
            if (v > mx) {
                mx = v;
                best = c;
            }
        }
        for (int c = 0; c < 10; c++)
            se += exp(lt_tensor_get_f64(z, i * 10 + c) - mx);
        loss += log(se) + mx - lt_tensor_get_f64(z, i * 10 + y[i]);
        correct += best == y[i];
        counted++;
    }
    assert_int_equal(counted, N - N / 3);
    assert_true(fabs(last_test.loss - loss / counted) < 1e-5 * fmax(1, loss / counted));
    assert_true(fabs(last_test.accuracy - (double)correct / counted) < 1e-12);
    lt_value_free(in);
    lt_value_free(out);
    lt_session_free(s);
    lt_model_free(m);
    /* refused: -100 under mse (class labels as one-hot rows), and -5 */
    assert_int_equal(train_ignoring(x, y, LT_LOSS_MSE, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "sample 0's label is -100"));
    y[4] = -5;
    assert_int_equal(train_ignoring(x, y, LT_LOSS_SOFTMAX_CROSS_ENTROPY, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "sample 4's label is -5"));
    for (int i = 0; i < N; i++) /* a first batch with nothing to count */
        y[i] = i < B ? -100 : i % 10;
    assert_int_equal(train_ignoring(x, y, LT_LOSS_SOFTMAX_CROSS_ENTROPY, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "every label of the batch of step 1 is -100"));
    for (int i = 0; i < N; i++) /* nothing left to count */
        y[i] = -100;
    assert_int_equal(train_ignoring(x, y, LT_LOSS_SOFTMAX_CROSS_ENTROPY, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "every label is -100"));
}

/* nan or inf among the samples or float targets is named when the data is
 * made, not found as a diverged loss steps later */
static void non_finite_refused(void **state)
{
    (void)state;
    float x[6 * 2] = {0.5f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, t[6] = {1, 2, 3, 4, 5, 6};
    int64_t y[6] = {0, 1, 0, 1, 0, 1};
    lt_tensor xt = {.dtype = LT_F32, .rank = 2, .dims = {6, 2}, .numel = 12, .data = x};
    lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {6}, .numel = 6, .data = y};
    lt_tensor tt = {.dtype = LT_F32, .rank = 1, .dims = {6}, .numel = 6, .data = t};
    lt_dataset *d = NULL;
    lt_err err;
    assert_int_equal(lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err), LT_OK);
    lt_dataset_free(d);
    x[7] = NAN;
    assert_int_equal(lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "sample 3 holds nan (element 1)"));
    x[7] = 1;
    t[4] = -INFINITY;
    assert_int_equal(lt_dataset_from_arrays(&xt, &tt, NULL, &d, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "sample 4's target holds -inf"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(step_api_matches_lt_train), cmocka_unit_test(ignored_labels),
                                       cmocka_unit_test(non_finite_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
