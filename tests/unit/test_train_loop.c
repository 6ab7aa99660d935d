/* The training loop on real data: a few hundred steps of the MLP from random
 * weights bring the loss down; runs are reproducible from the seed; frozen
 * parameters stay as they were; warmup and schedules reach the optimizer;
 * images take the model's input shape ([N,784], [N,1,28,28], [N,28,28]);
 * bad settings, data and models are refused with a clear message. */
#include "testutil.h"
#include <math.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"
#define MAX_STEPS 1024

typedef struct record {
    int nsteps, nepochs;
    double loss[MAX_STEPS], lr[MAX_STEPS];
    lt_epoch_result epoch[8];
} record;

static void on_step(const lt_train_progress *p, void *user)
{
    record *r = user;
    assert_int_equal(p->global_step, r->nsteps + 1);
    assert_true(p->step >= 1 && p->step <= p->steps);
    if (r->nsteps < MAX_STEPS) {
        r->loss[r->nsteps] = p->batch_loss;
        r->lr[r->nsteps] = p->lr;
    }
    r->nsteps++;
}

static void on_epoch(const lt_epoch_result *e, void *user)
{
    record *r = user;
    if (r->nepochs < 8)
        r->epoch[r->nepochs] = *e;
    r->nepochs++;
}

static void opts_for(lt_train_opts *o, record *r, lt_optim_kind kind, double lr)
{
    lt_train_defaults(o);
    lt_optim_defaults(kind, &o->optim);
    o->schedule.lr = lr;
    o->on_step = on_step;
    o->on_epoch = on_epoch;
    o->user = r;
    memset(r, 0, sizeof *r);
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

static void mlp_loss_goes_down(void **state)
{
    (void)state;
    static record r;
    lt_train_opts o;
    opts_for(&o, &r, LT_OPTIM_MOMENTUM, 0.05);
    o.init_random = 1;
    o.seed = 7;
    o.limit = 4096;
    o.test_limit = 1000;
    o.batch = 32;
    o.epochs = 2;
    lt_model *m = NULL;
    lt_err err;
    if (lt_train(MODELS "mlp.onnx", &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(r.nsteps, 256);
    assert_int_equal(r.nepochs, 2);
    double first = mean(r.loss, 8), last = mean(r.loss + 206, 50);
    print_message("loss: first 8 steps %.3f, last 50 %.3f; epochs %.3f %.3f; test accuracy %.4f\n", first, last,
                  r.epoch[0].train_loss, r.epoch[1].train_loss, r.epoch[1].test.accuracy);
    /* random weights start near ln 10 = 2.3; a few hundred steps reach well under 1 */
    assert_true(first > 1.5);
    assert_true(last < 0.8 && last < first / 2);
    assert_true(r.epoch[1].train_loss < r.epoch[0].train_loss);
    assert_int_equal(r.epoch[1].test.count, 1000);
    assert_true(r.epoch[1].test.accuracy > 0.7);
    /* the returned model scores what the last epoch reported */
    lt_eval_result e;
    assert_int_equal(lt_model_evaluate(m, &(lt_eval_opts){.data = "fashion-mnist", .limit = 1000}, &e, &err), LT_OK);
    assert_true(e.accuracy == r.epoch[1].test.accuracy);
    assert_true(fabs(e.loss - r.epoch[1].test.loss) < 1e-12);
    lt_model_free(m);
}

static void same_seed_same_run(void **state)
{
    (void)state;
    static record a, b, c;
    record *rs[3] = {&a, &b, &c};
    for (int k = 0; k < 3; k++) {
        lt_train_opts o;
        opts_for(&o, rs[k], LT_OPTIM_NESTEROV, 0.02);
        o.seed = k == 2 ? 99 : 5;
        o.limit = 640;
        o.test_limit = 200;
        o.epochs = 1;
        lt_model *m;
        lt_err err;
        if (lt_train(MODELS "mlp.onnx", &o, &m, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_model_free(m);
    }
    assert_int_equal(a.nsteps, 10);
    assert_memory_equal(a.loss, b.loss, sizeof(double) * 10);
    assert_true(a.epoch[0].test.loss == b.epoch[0].test.loss);
    /* another seed shuffles differently */
    assert_true(memcmp(a.loss, c.loss, sizeof(double) * 10) != 0);
}

/* Two threads, every shipped model: the same run twice gives the same bits
 * (parallel kernels sum their partial results in a fixed order), which
 * bit-exact resuming relies on. */
static void runs_are_bit_identical(void **state)
{
    (void)state;
    static const char *const files[] = {MODELS "cnn.onnx", MODELS "lstm.onnx", MODELS "rnn_loop.onnx",
                                        MODELS "squeezenet.onnx"};
    lt_set_num_threads(2);
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        lt_model *m[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            static record r;
            lt_train_opts o;
            opts_for(&o, &r, LT_OPTIM_MOMENTUM, 0.02);
            o.limit = 384;
            o.test_limit = 64;
            lt_err err;
            if (lt_train(files[f], &o, &m[k], &err) != LT_OK)
                fail_msg("%s", err.msg);
        }
        for (int p = 0; p < m[0]->nparams; p++) {
            const lt_tensor *a = &m[0]->params[p].data, *b = &m[1]->params[p].data;
            if (a->dtype != LT_STRING && memcmp(a->data, b->data, lt_tensor_nbytes(a)) != 0)
                fail_msg("%s: parameter %s differs between two identical runs", files[f], m[0]->params[p].name);
        }
        lt_model_free(m[0]);
        lt_model_free(m[1]);
    }
}

static const lt_tensor *param(const lt_model *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, name))
            return &m->params[p].data;
    fail_msg("no parameter %s", name);
    return NULL;
}

static void freeze_schedule_clip(void **state)
{
    (void)state;
    static record r;
    lt_train_opts o;
    opts_for(&o, &r, LT_OPTIM_ADAM, 1e-3);
    const char *freeze[] = {"fc1.*", "fc3.bias"};
    o.nfreeze = 2;
    o.freeze = freeze;
    o.schedule.kind = LT_SCHEDULE_COSINE;
    o.schedule.warmup = 5;
    o.clip_norm = 0.5;
    o.limit = 1280;
    o.test_limit = 200;
    o.batch = 64;
    lt_model *m, *orig;
    lt_err err;
    if (lt_train(MODELS "mlp.onnx", &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &orig, &err), LT_OK);
    const char *frozen[] = {"fc1.weight", "fc1.bias", "fc3.bias"}, *trained[] = {"fc2.weight", "fc2.bias", "fc3.weight"};
    for (int i = 0; i < 3; i++) {
        const lt_tensor *a = param(m, frozen[i]), *b = param(orig, frozen[i]);
        assert_memory_equal(a->data, b->data, (size_t)a->numel * 4);
        a = param(m, trained[i]);
        b = param(orig, trained[i]);
        assert_true(memcmp(a->data, b->data, (size_t)a->numel * 4) != 0);
    }
    /* warmup 2e-4, 4e-4, ... 1e-3, then cosine from 1e-3 down over the other 15 of 20 steps */
    assert_int_equal(r.nsteps, 20);
    assert_true(fabs(r.lr[0] - 2e-4) < 1e-15);
    assert_true(fabs(r.lr[4] - 1e-3) < 1e-15);
    assert_true(fabs(r.lr[5] - 1e-3) < 1e-15);
    assert_true(r.lr[19] < 2e-5);
    for (int i = 0; i < 20; i++)
        assert_true(isfinite(r.loss[i]));
    lt_model_free(m);
    lt_model_free(orig);
}

/* [N,1,28,28] (CNN) and [N,28,28] (RNN) inputs */
static void image_shapes(void **state)
{
    (void)state;
    const char *models[] = {MODELS "cnn.onnx", MODELS "rnn.onnx"};
    for (int i = 0; i < 2; i++) {
        static record r;
        lt_train_opts o;
        opts_for(&o, &r, LT_OPTIM_SGD, 0.01);
        o.limit = 96;
        o.batch = 32;
        o.test_limit = 100;
        lt_model *m;
        lt_err err;
        if (lt_train(models[i], &o, &m, &err) != LT_OK)
            fail_msg("%s: %s", models[i], err.msg);
        assert_int_equal(r.nsteps, 3);
        assert_int_equal(r.epoch[0].test.count, 100);
        lt_model_free(m);
    }
}

static void refused(void **state)
{
    (void)state;
    record r;
    lt_train_opts o;
    lt_model *m = (lt_model *)&r;
    lt_err err;
    opts_for(&o, &r, LT_OPTIM_SGD, 0.01);
    o.limit = 64;
    /* a model whose input is no image */
    assert_int_equal(lt_train(LT_SOURCE_DIR "/tests/data/ad_if.onnx", &o, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "28x28"));
    assert_null(m);
    lt_eval_result e;
    lt_model *bad;
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/ad_if.onnx", &bad, &err), LT_OK);
    assert_int_equal(lt_model_evaluate(bad, &(lt_eval_opts){.data = "fashion-mnist", .limit = 10}, &e, &err), LT_ERR_INVALID);
    lt_model_free(bad);
    /* data that is not there */
    o.data = "cifar-10";
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID);
    o.data = "fashion-mnist=/nonexistent";
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_IO);
    o.data = "fashion-mnist";
    /* a parameter that does not exist, or nothing left to train */
    const char *nope[] = {"fc9.weight"}, *all[] = {"*"};
    o.nfreeze = 1;
    o.freeze = nope;
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "fc9.weight"));
    o.freeze = all;
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID);
    o.nfreeze = 0;
    /* settings */
    o.epochs = 0;
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID);
    o.epochs = 1;
    o.schedule.lr = 0;
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID);
    o.schedule.lr = 0.01;
    o.loss = LT_LOSS_SUM;
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID);
    o.loss = LT_LOSS_SOFTMAX_CROSS_ENTROPY;
    /* a learning rate that makes the loss blow up is reported, not carried on */
    o.schedule.lr = 1e6;
    o.limit = 640;
    assert_int_equal(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_RUNTIME);
    assert_non_null(strstr(err.msg, "diverged"));
    assert_null(m);
}

/* Evaluation against a plain loop over the same images. */
static void evaluate_matches_plain_loop(void **state)
{
    (void)state;
    lt_model *m;
    lt_dataset *d;
    lt_session *s;
    lt_err err;
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &m, &err), LT_OK);
    lt_eval_result e;
    assert_int_equal(lt_model_evaluate(m, &(lt_eval_opts){.data = "fashion-mnist", .limit = 300}, &e, &err), LT_OK);
    assert_int_equal(e.count, 300);
    assert_int_equal(lt_dataset_open("fashion-mnist", 1, &d, &err), LT_OK);
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    int64_t shape[2] = {300, 784};
    lt_value *x, *y, *out;
    const char *name = "x";
    assert_int_equal(lt_dataset_batch(d, 0, 300, 2, shape, &x, &y, &err), LT_OK);
    assert_int_equal(lt_session_run(s, 1, &name, &x, &out, &err), LT_OK);
    const float *lg = lt_value_tensor(out)->data;
    const int64_t *lab = lt_value_tensor(y)->data;
    double loss = 0;
    int correct = 0;
    for (int i = 0; i < 300; i++) {
        int best = 0;
        double z = 0;
        for (int c = 0; c < 10; c++) {
            best = lg[i * 10 + c] > lg[i * 10 + best] ? c : best;
            z += exp(lg[i * 10 + c]);
        }
        loss += log(z) - lg[i * 10 + lab[i]];
        correct += best == lab[i];
    }
    assert_true(fabs(e.accuracy - correct / 300.0) < 1e-12);
    assert_true(fabs(e.loss - loss / 300) < 1e-5);
    lt_value_free(x);
    lt_value_free(y);
    lt_value_free(out);
    lt_session_free(s);
    lt_dataset_free(d);
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_loss_goes_down),
        cmocka_unit_test(same_seed_same_run),
        cmocka_unit_test(runs_are_bit_identical),
        cmocka_unit_test(freeze_schedule_clip),
        cmocka_unit_test(image_shapes),
        cmocka_unit_test(refused),
        cmocka_unit_test(evaluate_matches_plain_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
