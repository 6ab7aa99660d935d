/* A weight tied between an embedding table and the output projection, as
 * torch's dynamo exporter writes it: the table, and the projection's
 * transpose of it folded into an initializer of its own
 * (tests/data/make_tied_model.py; ir/tie_transposed.c).
 * - three trainer steps of SGD with momentum train the two as one tensor:
 *   every parameter within 1e-5 of PyTorch's, the copy exactly the
 *   table's transpose after the steps, and in the export;
 * - a checkpoint after two steps resumes to the same bits as three steps
 *   (within 1e-6 on a device backend, LANTERN_BACKEND),
 *   and holds the copy as trained (what `lantern export CHECKPOINT` writes);
 * - with no_tie the copy trains on its own and the table ends far from
 *   PyTorch's (the reference can tell);
 * - lantern grad's tie_transposed: the table's gradient is the sum of the
 *   untied program's table and copy gradients (the copy's transposed), and
 *   agrees with central finite differences in float64 on the table, which
 *   move the copy's use as well;
 * - the pass itself: a copy of a constant-valued tensor, a frozen table
 *   and a copy that is off by one element are left alone. */
#include "testutil.h"
#include "ir/ir.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIR LT_SOURCE_DIR "/tests/data/tied/"
#define TABLE "out.weight"
#define COPY "val_2"

static bool transposes(const lt_tensor *a, const lt_tensor *b)
{
    if (a->rank != 2 || b->rank != 2 || a->dims[0] != b->dims[1] || a->dims[1] != b->dims[0])
        return false;
    const float *x = a->data, *y = b->data;
    for (int64_t i = 0; i < a->dims[0]; i++)
        for (int64_t j = 0; j < a->dims[1]; j++)
            if (memcmp(&x[i * a->dims[1] + j], &y[j * a->dims[0] + i], sizeof(float)) != 0)
                return false;
    return true;
}

static int notes;
static void on_note(const char *msg, void *user)
{
    (void)user;
    if (strstr(msg, COPY " = transpose of " TABLE))
        notes++;
}

/* the table's relative error against PyTorch after three steps */
static double train(int no_tie, const char *export_to)
{
    lt_err err;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.optim.momentum = 0.9;
    o.schedule.lr = 0.1;
    o.data = "unused";
    o.no_tie = no_tie;
    o.on_note = on_note;
    notes = 0;
    lt_trainer *t;
    if (lt_trainer_new(DIR "tied.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(notes, no_tie ? 0 : 1);
    const char *names[2] = {"ids", "labels"};
    for (int s = 0; s < 3; s++) {
        char pi[512], py[512];
        snprintf(pi, sizeof pi, DIR "sgd/ids%d.npy", s);
        snprintf(py, sizeof py, DIR "sgd/y%d.npy", s);
        lt_value *in[2] = {tu_load(pi), tu_load(py)};
        if (lt_trainer_step(t, 0.1, 2, names, in, NULL, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
    }
    lt_model *m = lt_trainer_model(t);
    double table = 0;
    static const char *const files[] = {TABLE, "val_0", "mix.bias"};
    for (int f = 0; f < 3; f++) {
        char path[512];
        snprintf(path, sizeof path, DIR "sgd/%s.npy", files[f]);
        lt_value *want = tu_load(path);
        double e = tu_max_rel_err(tu_param(m, files[f]), &want->t);
        printf("  %-10s %s rel err %.2e\n", files[f], no_tie ? "apart" : "tied ", e);
        if (f == 0)
            table = e;
        else if (!no_tie)
            assert_true(e < 1e-5);
        lt_value_free(want);
    }
    assert_int_equal(transposes(tu_param(m, TABLE), tu_param(m, COPY)), !no_tie);
    if (export_to) {
        if (lt_trainer_export(t, DIR "tied.onnx", export_to, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_model *back;
        assert_int_equal(lt_model_load(export_to, &back, &err), LT_OK);
        assert_true(transposes(tu_param(back, TABLE), tu_param(back, COPY)));
        assert_memory_equal(tu_param(back, TABLE)->data, tu_param(m, TABLE)->data, 50 * 16 * sizeof(float));
        lt_model_free(back);
    }
    lt_trainer_free(t);
    return table;
}

static void trains_as_one(void **state)
{
    (void)state;
    char out[] = "/tmp/lt_tied_XXXXXX.onnx";
    int fd = mkstemps(out, 5);
    assert_true(fd >= 0);
    close(fd);
    assert_true(train(0, out) < 1e-5);
    unlink(out);
    assert_true(train(1, NULL) > 1e-3); /* 100 times the tied error bound */
}

/* two steps, a checkpoint, a fresh trainer from it and the third step:
 * the same bits as three steps in one trainer */
static void resumes(void **state)
{
    (void)state;
    lt_err err;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_ADAM, &o.optim);
    o.data = "unused";
    const char *names[2] = {"ids", "labels"};
    lt_trainer *t[3];
    for (int k = 0; k < 3; k++)
        assert_int_equal(lt_trainer_new(DIR "tied.onnx", &o, &t[k], &err), LT_OK);
    char dir[] = "/tmp/lt_tied_ck_XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (int s = 0; s < 3; s++) {
        char pi[512], py[512];
        snprintf(pi, sizeof pi, DIR "sgd/ids%d.npy", s);
        snprintf(py, sizeof py, DIR "sgd/y%d.npy", s);
        lt_value *in[2] = {tu_load(pi), tu_load(py)};
        assert_int_equal(lt_trainer_step(t[0], 0.01, 2, names, in, NULL, &err), LT_OK);
        if (s == 2) {
            if (lt_trainer_load_checkpoint(t[2], dir, &err) != LT_OK)
                fail_msg("%s", err.msg);
            assert_int_equal(lt_trainer_step(t[2], 0.01, 2, names, in, NULL, &err), LT_OK);
        } else {
            assert_int_equal(lt_trainer_step(t[1], 0.01, 2, names, in, NULL, &err), LT_OK);
        }
        if (s == 1 && lt_trainer_save_checkpoint(t[1], dir, &err) != LT_OK)
            fail_msg("%s", err.msg);
        if (s == 1) {
            /* the checkpoint holds the copy as trained (lantern export
             * CHECKPOINT --model writes it from there): the table's
             * transpose, not the file's first values */
            lt_model *m;
            assert_int_equal(lt_model_load(DIR "tied.onnx", &m, &err), LT_OK);
            if (lt_model_load_checkpoint(m, dir, &err) != LT_OK)
                fail_msg("%s", err.msg);
            assert_true(transposes(tu_param(m, TABLE), tu_param(m, COPY)));
            assert_memory_equal(tu_param(m, TABLE)->data, tu_param(lt_trainer_model(t[1]), TABLE)->data,
                                (size_t)tu_param(m, TABLE)->numel * sizeof(float));
            lt_model_free(m);
        }
        lt_value_free(in[0]);
        lt_value_free(in[1]);
    }
    lt_model *a = lt_trainer_model(t[0]), *b = lt_trainer_model(t[2]);
    /* on the host, the same bits; a device backend's embedding gradient
     * adds its rows with atomics, in an order that changes from run to
     * run (ulps apart on cuda) */
    const char *be = getenv("LANTERN_BACKEND");
    bool host = !be || !*be || strcmp(be, "cpu") == 0;
    for (int p = 0; p < lt_model_num_params(a); p++) {
        const lt_tensor *pa = lt_model_param(a, p), *pb = lt_model_param(b, p);
        if (host)
            assert_memory_equal(pa->data, pb->data, (size_t)pa->numel * lt_dtype_size(pa->dtype));
        else if (tu_max_rel_err(pb, pa) > 1e-6)
            fail_msg("%s resumed %.3g from three steps", lt_model_param_name(a, p), tu_max_rel_err(pb, pa));
    }
    assert_true(transposes(tu_param(b, TABLE), tu_param(b, COPY)));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    for (int k = 0; k < 3; k++)
        lt_trainer_free(t[k]);
}

/* the pass on a loaded model with the copy's or the table's values edited */
static int ties(void (*edit)(lt_model *m))
{
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(DIR "tied.onnx", &m, &err), LT_OK);
    edit(m);
    int n = -1;
    assert_int_equal(lt_ir_tie_transposed_params(m, &n, NULL, 0, &err), LT_OK);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    lt_model_free(m);
    return n;
}

static lt_param *find(lt_model *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, name))
            return &m->params[p];
    fail_msg("no parameter %s", name);
    return NULL;
}

static void keep(lt_model *m) { (void)m; }
static void constant(lt_model *m)
{
    float *a = find(m, TABLE)->data.data, *b = find(m, COPY)->data.data;
    for (int i = 0; i < 800; i++)
        a[i] = b[i] = 0.5f;
}
static void frozen(lt_model *m) { find(m, TABLE)->trainable = false; }
static void off_by_one(lt_model *m) { ((float *)find(m, COPY)->data.data)[799] += 1.0f; }

static void leaves_alone(void **state)
{
    (void)state;
    assert_int_equal(ties(keep), 1);
    assert_int_equal(ties(constant), 0);
    assert_int_equal(ties(frozen), 0);
    assert_int_equal(ties(off_by_one), 0);
}

/* The gradient outputs of the combined program on the first batch, by name. */
static lt_value *grad_of(lt_model *m, lt_value **outs, const char *param)
{
    char want[128];
    snprintf(want, sizeof want, "%s_grad", param);
    for (int i = 0; i < lt_model_num_outputs(m); i++)
        if (!strcmp(lt_model_output_name(m, i), want))
            return outs[i];
    return NULL;
}

static lt_value **grads(int tie, lt_model **mo, lt_value **in)
{
    lt_err err;
    lt_model *m;
    lt_session *s;
    lt_grad_opts o = {.loss = LT_LOSS_SOFTMAX_CROSS_ENTROPY, .tie_transposed = tie};
    const char *names[2] = {"ids", "labels"};
    assert_int_equal(lt_model_load(DIR "tied.onnx", &m, &err), LT_OK);
    if (lt_model_grad(m, &o, &err) != LT_OK || lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value **outs = calloc((size_t)lt_model_num_outputs(m), sizeof *outs);
    assert_non_null(outs);
    if (lt_session_run(s, 2, names, in, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    *mo = m;
    return outs;
}

static void grad_sums_the_uses(void **state)
{
    (void)state;
    lt_value *in[2] = {tu_load(DIR "sgd/ids0.npy"), tu_load(DIR "sgd/y0.npy")};
    lt_model *mt, *mu;
    lt_value **gt = grads(1, &mt, in), **gu = grads(0, &mu, in);
    lt_value *table = grad_of(mt, gt, TABLE), *alone = grad_of(mu, gu, TABLE), *copy = grad_of(mu, gu, COPY);
    assert_non_null(table);
    assert_non_null(alone);
    assert_non_null(copy);
    assert_null(grad_of(mt, gt, COPY));
    /* the sum, built in float64 */
    const lt_tensor *a = &alone->t, *c = &copy->t;
    int64_t rows = a->dims[0], cols = a->dims[1];
    assert_int_equal(c->dims[0], cols);
    lt_value *sum = tu_load(DIR "sgd/out.weight.npy"); /* a float32 tensor of the table's shape */
    float *w = sum->t.data;
    double spread = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double u = ((const float *)a->data)[i * cols + j], v = ((const float *)c->data)[j * rows + i];
            w[i * cols + j] = (float)(u + v);
            spread = fmax(spread, fabs(v));
        }
    assert_true(spread > 1e-3); /* the copy's use matters */
    assert_true(tu_max_rel_err(&table->t, &sum->t) < 1e-5);
    for (int k = 0; k < lt_model_num_outputs(mt); k++)
        lt_value_free(gt[k]);
    for (int k = 0; k < lt_model_num_outputs(mu); k++)
        lt_value_free(gu[k]);
    free(gt);
    free(gu);
    lt_value_free(sum);
    lt_model_free(mt);
    lt_model_free(mu);
    /* finite differences on the table see both uses */
    lt_err err;
    lt_grad_opts o = {.loss = LT_LOSS_SOFTMAX_CROSS_ENTROPY, .tie_transposed = 1};
    const char *names[2] = {"ids", "labels"};
    lt_gradcheck_row *r = NULL;
    int nr = 0, seen = 0;
    if (lt_grad_check(DIR "tied.onnx", &o, 2, names, in, 64, &r, &nr, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int i = 0; i < nr; i++) {
        assert_string_not_equal(r[i].name, COPY);
        if (!strcmp(r[i].name, TABLE)) {
            seen = 1;
            if (!(r[i].err64 < 1e-4)) /* without the copy's use it is of order one */
                fail_msg("%s: %g against finite differences", TABLE, r[i].err64);
        }
    }
    assert_true(seen);
    free(r);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

/* A graph output that is the folded copy itself (tied/copy_out.onnx: y =
 * x W^T + b, and Wt = W^T as an output): it keeps its name, and a seed on
 * it reaches W's gradient: dW = dy^T x + dWt^T. */
static void copy_output_keeps_its_name(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(DIR "copy_out.onnx", &m, &err), LT_OK);
    const char *seeds[2] = {"y", "Wt"};
    lt_grad_opts o = {.loss = LT_LOSS_SEEDS, .nseeds = 2, .seed_outputs = seeds, .tie_transposed = 1};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *x = tu_rand(LT_F32, 2, (int64_t[]){5, 4}, -1, 1, 41);
    lt_value *dy = tu_rand(LT_F32, 2, (int64_t[]){5, 3}, -1, 1, 42);
    lt_value *dwt = tu_rand(LT_F32, 2, (int64_t[]){4, 3}, -1, 1, 43);
    const char *names[3] = {"x", "y_seed", "Wt_seed"};
    lt_value *in[3] = {x, dy, dwt};
    lt_session *s;
    int nout = lt_model_num_outputs(m);
    lt_value **outs = calloc((size_t)nout, sizeof *outs);
    assert_non_null(outs);
    if (lt_session_new(m, &s, &err) != LT_OK || lt_session_run(s, 3, names, in, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *gw = grad_of(m, outs, "W");
    assert_non_null(gw);
    assert_null(grad_of(m, outs, "Wt"));
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double want = tu_get(dwt, j * 3 + i);
            for (int n = 0; n < 5; n++)
                want += tu_get(dy, n * 3 + i) * tu_get(x, n * 4 + j);
            worst = fmax(worst, fabs(tu_get(gw, i * 4 + j) - want));
        }
    assert_true(worst < 1e-5);
    for (int k = 0; k < nout; k++)
        lt_value_free(outs[k]);
    free(outs);
    lt_session_free(s);
    lt_value_free(x);
    lt_value_free(dy);
    lt_value_free(dwt);
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trains_as_one),
        cmocka_unit_test(resumes),
        cmocka_unit_test(leaves_alone),
        cmocka_unit_test(grad_sums_the_uses),
        cmocka_unit_test(copy_output_keeps_its_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
