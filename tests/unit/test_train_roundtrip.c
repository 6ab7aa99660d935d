/* Export round trip for every shipped model: a short training run, the
 * trained weights written into a copy of the original file, and that copy
 * imported again gives the trainer's outputs bit for bit. Every trained
 * parameter moved, including the Loop-RNN's U, which lives in the Loop
 * body; the exported file keeps the original's graph (same nodes, inputs,
 * outputs). */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODELS LT_SOURCE_DIR "/models/"

static char tmpdir[64];

/* One fixed batch of test images in the model's input shape. */
static lt_value *batch_for(const char *name, int rank, const int64_t *shape)
{
    lt_dataset *d = NULL;
    lt_err err;
    lt_value *x = NULL, *y = NULL;
    assert_int_equal(lt_dataset_open("fashion-mnist", 1, &d, &err), LT_OK);
    if (lt_dataset_batch(d, 100, 8, rank, shape, &x, &y, &err) != LT_OK)
        fail_msg("%s: %s", name, err.msg);
    lt_value_free(y);
    lt_dataset_free(d);
    return x;
}

static lt_value *run_first(lt_model *m, lt_value *x)
{
    lt_session *s = NULL;
    lt_err err;
    int nout = lt_model_num_outputs(m);
    lt_value **out = calloc((size_t)nout, sizeof *out);
    const char *xn = lt_model_input_name(m, 0);
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 1, &xn, &x, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *first = out[0];
    for (int i = 1; i < nout; i++)
        lt_value_free(out[i]);
    free(out);
    lt_session_free(s);
    return first;
}

static const lt_tensor *param_of(const lt_model *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, name))
            return &m->params[p].data;
    return NULL;
}

static void round_trip(const char *file, int64_t batch)
{
    char path[512], out[512];
    snprintf(path, sizeof path, "%s%s", MODELS, file);
    snprintf(out, sizeof out, "%s/trained_%s", tmpdir, file);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_ADAM, &o.optim);
    o.schedule.lr = 0.003;
    o.batch = batch;
    o.limit = 4 * batch;
    o.test_limit = 100;
    lt_model *trained = NULL, *orig = NULL, *back = NULL;
    lt_err err;
    if (lt_train(path, &o, &trained, &err) != LT_OK)
        fail_msg("%s: %s", file, err.msg);
    if (lt_model_export(trained, path, out, &err) != LT_OK)
        fail_msg("%s: %s", file, err.msg);
    assert_int_equal(lt_model_load(path, &orig, &err), LT_OK);
    if (lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s: %s", out, err.msg);
    /* the same graph around the new weights */
    assert_int_equal(back->nparams, orig->nparams);
    assert_int_equal(lt_model_num_inputs(back), lt_model_num_inputs(orig));
    assert_int_equal(lt_model_num_outputs(back), lt_model_num_outputs(orig));
    assert_int_equal(back->main->nnodes, orig->main->nnodes);
    for (int i = 0; i < orig->main->nnodes; i++)
        assert_int_equal(back->main->nodes[i]->op, orig->main->nodes[i]->op);
    /* every float parameter was trained and exported */
    int moved = 0, floats = 0;
    for (int p = 0; p < orig->nparams; p++) {
        const lt_tensor *a = &orig->params[p].data, *b = param_of(back, orig->params[p].name),
                        *t = param_of(trained, orig->params[p].name);
        assert_non_null(b);
        assert_non_null(t);
        if (a->dtype != LT_F32)
            continue;
        floats++;
        size_t bytes = (size_t)a->numel * sizeof(float);
        assert_memory_equal(b->data, t->data, bytes);
        moved += memcmp(a->data, b->data, bytes) != 0;
    }
    print_message("%s: %d of %d float parameters moved\n", file, moved, floats);
    assert_int_equal(moved, floats);
    /* the re-imported model computes exactly what the trainer's does */
    int rank;
    int64_t dims[8];
    lt_model_input_shape(orig, 0, &rank, dims);
    for (int i = 1; i < rank; i++)
        if (dims[i] < 0)
            fail_msg("%s: input dim %d unknown", file, i);
    lt_value *x = batch_for(file, rank, dims);
    lt_value *ya = run_first(trained, x), *yb = run_first(back, x), *y0 = run_first(orig, x);
    const lt_tensor *ta = lt_value_tensor(ya), *tb = lt_value_tensor(yb), *t0 = lt_value_tensor(y0);
    assert_int_equal(ta->numel, tb->numel);
    assert_memory_equal(ta->data, tb->data, (size_t)ta->numel * sizeof(float));
    assert_true(memcmp(ta->data, t0->data, (size_t)ta->numel * sizeof(float)) != 0);
    lt_value_free(x);
    lt_value_free(ya);
    lt_value_free(yb);
    lt_value_free(y0);
    lt_model_free(trained);
    lt_model_free(orig);
    lt_model_free(back);
}

static void mlp(void **state) { (void)state; round_trip("mlp.onnx", 32); }
static void cnn(void **state) { (void)state; round_trip("cnn.onnx", 16); }
static void rnn(void **state) { (void)state; round_trip("rnn.onnx", 16); }
static void lstm(void **state) { (void)state; round_trip("lstm.onnx", 16); }
static void squeezenet(void **state) { (void)state; round_trip("squeezenet.onnx", 16); }

/* U is an initializer of the Loop body, not of the main graph */
static void rnn_loop(void **state)
{
    (void)state;
    round_trip("rnn_loop.onnx", 16);
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(MODELS "rnn_loop.onnx", &m, &err), LT_OK);
    const lt_tensor *u = param_of(m, "U");
    assert_non_null(u);
    int in_body = 0;
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, "U"))
            in_body = m->params[p].value->block != m->main;
    assert_true(in_body);
    lt_model_free(m);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/lt_roundtrip_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp),  cmocka_unit_test(cnn),        cmocka_unit_test(rnn),
        cmocka_unit_test(lstm), cmocka_unit_test(rnn_loop), cmocka_unit_test(squeezenet),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
