/* Whole networks in training mode (BatchNormalization with batch
 * statistics) against PyTorch autograd in float64: a ResNet with a
 * downsampling block, a DenseNet with concatenating layers, a ShuffleNet
 * with a channel split and shuffle, exported by the TorchScript exporter
 * with merged equal initializers, at batch sizes 2 to 32
 * (tests/data/nets/make_nets.py). Every parameter's gradient of the
 * batch-mean softmax cross-entropy is compared by name, max-norm relative,
 * with a floor of 1% of the network's largest gradient for parameters whose
 * true gradient is zero (a BatchNormalization bias before a 1x1 convolution
 * and another BatchNormalization): within 1e-3 when lantern runs in
 * float32, within 1e-5 (the references are stored in float32) when it runs
 * the same program in float64. One trainer step moves the running
 * statistics as PyTorch's train() forward does. CTest runs this suite a second time with
 * LANTERN_CHECKED_MEMORY=1. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NETS LT_SOURCE_DIR "/tests/data/nets/"

static void sanitize(const char *name, char *fn, size_t cap)
{
    size_t k = 0;
    for (; name[k] && k + 1 < cap; k++) {
        char c = name[k];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == '-';
        fn[k] = ok ? c : '_';
    }
    fn[k] = 0;
}

static double max_abs(const lt_tensor *t)
{
    double m = 0;
    for (int64_t e = 0; e < t->numel; e++)
        m = fmax(m, fabs(lt_tensor_get_f64(t, e)));
    return m;
}

static void check_net(const char *net, int batch, bool f64)
{
    char dir[512], path[1024];
    lt_err err;
    lt_model *m;
    snprintf(path, sizeof path, NETS "%s.onnx", net);
    snprintf(dir, sizeof dir, NETS "%s/b%d", net, batch);
    if (lt_model_load(path, &m, &err) != LT_OK || (f64 && lt_model_to_f64(m, &err) != LT_OK))
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    lt_value *x = tu_load(path);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    lt_value *ins[2] = {f64 ? lt_value_to_f64(x) : lt_value_ref(x), tu_load(path)};
    lt_value_free(x);
    const char *names[2] = {"x", "labels"};
    int nout = lt_model_num_outputs(m);
    lt_value *outs[256] = {0};
    assert_true(nout <= 256);
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 2, names, ins, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/loss.npy", dir);
    lt_value *loss = tu_load(path);
    double lw = lt_tensor_get_f64(&loss->t, 0), lg = lt_tensor_get_f64(&outs[0]->t, 0);
    if (fabs(lw - lg) > (f64 ? 1e-9 : 1e-5) * fmax(1, fabs(lw)))
        fail_msg("%s b%d: loss %.9g, PyTorch %.9g", net, batch, lg, lw);
    /* references first: the floor is relative to the largest gradient */
    lt_value *want[256] = {0};
    double scale = 0;
    int nstats = 0;
    for (int i = 1; i < nout; i++) {
        char pname[256], fn[256];
        snprintf(pname, sizeof pname, "%s", lt_model_output_name(m, i));
        pname[strlen(pname) - 5] = 0; /* "_grad" */
        size_t l = strlen(pname);
        if ((l > 13 && !strcmp(pname + l - 13, ".running_mean")) || (l > 12 && !strcmp(pname + l - 12, ".running_var"))) {
            /* a running statistic (a buffer in PyTorch): no gradient in training mode */
            assert_true(max_abs(lt_value_tensor(outs[i])) == 0);
            nstats++;
            continue;
        }
        sanitize(pname, fn, sizeof fn);
        snprintf(path, sizeof path, "%s/%s.npy", dir, fn);
        want[i] = tu_load(path);
        scale = fmax(scale, max_abs(&want[i]->t));
    }
    double tol = f64 ? 1e-5 : 1e-3, worst = 0;
    const char *worst_name = "";
    for (int i = 1; i < nout; i++) {
        if (!want[i])
            continue;
        const lt_tensor *g = lt_value_tensor(outs[i]), *w = &want[i]->t;
        assert_int_equal(g->numel, w->numel);
        double maxd = 0;
        for (int64_t e = 0; e < g->numel; e++)
            maxd = fmax(maxd, fabs(lt_tensor_get_f64(g, e) - lt_tensor_get_f64(w, e)));
        double rel = maxd / fmax(max_abs(w), 1e-2 * scale);
        if (rel > tol)
            fail_msg("%s b%d (%s): gradient of %s differs from PyTorch float64 by %.3g (relative)", net, batch,
                     f64 ? "float64" : "float32", lt_model_output_name(m, i), rel);
        if (rel >= worst) {
            worst = rel;
            worst_name = lt_model_output_name(m, i);
        }
    }
    /* every parameter of the PyTorch module has its gradient: merged equal
     * initializers were untied */
    int nref = 0;
    FILE *f;
    snprintf(path, sizeof path, "ls %s | grep -c -v -e '^x.npy$' -e '^y.npy$' -e '^loss.npy$'", dir);
    if ((f = popen(path, "r"))) {
        if (fscanf(f, "%d", &nref) != 1)
            nref = -1;
        pclose(f);
    }
    assert_int_equal(nref, nout - 1 - nstats);
    printf("%-10s b%-2d %s: %d gradients match PyTorch float64, worst %.3g (%s)\n", net, batch,
           f64 ? "float64" : "float32", nref, worst, worst_name);
    for (int i = 0; i < nout; i++) {
        lt_value_free(outs[i]);
        lt_value_free(want[i]);
    }
    lt_value_free(ins[0]);
    lt_value_free(ins[1]);
    lt_value_free(loss);
    lt_session_free(s);
    lt_model_free(m);
}

static int param_index(const lt_model *m, const char *name)
{
    for (int i = 0; i < lt_model_num_params(m); i++)
        if (!strcmp(lt_model_param_name(m, i), name))
            return i;
    fail_msg("no parameter %s", name);
    return -1;
}

/* The exporter merged bn1's scale with the running variances of bn1 and
 * layer1.bn1 (all ones): each is a parameter of its own, and export writes
 * them back as initializers without the Identity nodes, so changing one
 * leaves the others as they were. */
static void untied_parameters_export_separately(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m, *back;
    assert_int_equal(lt_model_load(NETS "resnet.onnx", &m, &err), LT_OK);
    for (int i = 0; i < m->main->nnodes; i++)
        assert_false(m->main->nodes[i]->op == LT_OP_IDENTITY && m->main->nodes[i]->in[0]->param >= 0);
    int w = param_index(m, "layer1.bn1.weight");
    lt_tensor t = m->params[w].data;
    float vals[8] = {0.5f, 1.5f, 2, 3, 4, 5, 6, 7};
    t.data = vals;
    t.buf = NULL;
    assert_int_equal(lt_model_set_param(m, w, &t, &err), LT_OK);
    char out[] = "/tmp/lt_untie_XXXXXX";
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    if (lt_model_export(m, NETS "resnet.onnx", out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    unlink(out);
    assert_int_equal(lt_model_num_params(back), lt_model_num_params(m));
    for (int i = 0; i < back->main->nnodes; i++)
        assert_false(back->main->nodes[i]->op == LT_OP_IDENTITY);
    for (int i = 0; i < lt_model_num_params(back); i++)
        assert_null(back->params[i].untied_from); /* real initializers now */
    const lt_tensor *got = &back->params[param_index(back, "layer1.bn1.weight")].data;
    for (int e = 0; e < 8; e++)
        assert_true(((const float *)got->data)[e] == vals[e]);
    const char *others[] = {"bn1.weight", "bn1.running_var", "layer1.bn1.running_var", "layer1.bn2.weight"};
    for (size_t k = 0; k < sizeof others / sizeof *others; k++) {
        const lt_tensor *o = &back->params[param_index(back, others[k])].data;
        for (int e = 0; e < 8; e++)
            assert_true(((const float *)o->data)[e] == 1.0f);
    }
    lt_model_free(back);
    lt_model_free(m);
}

static const int batches[] = {2, 4, 8, 16, 32};

/* One trainer step (learning rate 0) on the batch moves every running
 * statistic as one train() forward moves PyTorch's: mean towards the batch
 * mean, variance towards the batch's unbiased variance, by momentum 0.1
 * (<net>/running_b<N>, float64 in PyTorch); at batch 2 the unbiased and
 * the population variance differ by a factor 2N*H*W / (2N*H*W - 1), 3% on
 * the 4x4 planes, far above the tolerance. */
static void check_running(const char *net, int batch)
{
    char path[1024];
    lt_err err;
    snprintf(path, sizeof path, NETS "%s.onnx", net);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_trainer *t;
    if (lt_trainer_new(path, &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    snprintf(path, sizeof path, NETS "%s/b%d/x.npy", net, batch);
    lt_value *ins[2] = {tu_load(path), NULL};
    snprintf(path, sizeof path, NETS "%s/b%d/y.npy", net, batch);
    ins[1] = tu_load(path);
    const char *names[2] = {"x", "labels"};
    if (lt_trainer_step(t, 0.0, 2, names, ins, NULL, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_model *m = lt_trainer_model(t);
    int nstats = 0;
    double worst = 0;
    for (int i = 0; i < lt_model_num_params(m); i++) {
        const char *pn = lt_model_param_name(m, i);
        size_t l = strlen(pn);
        if (!((l > 13 && !strcmp(pn + l - 13, ".running_mean")) || (l > 12 && !strcmp(pn + l - 12, ".running_var"))))
            continue;
        char fn[256];
        sanitize(pn, fn, sizeof fn);
        snprintf(path, sizeof path, NETS "%s/running_b%d/%s.npy", net, batch, fn);
        lt_value *w = tu_load(path);
        const lt_tensor *g = lt_model_param(m, i);
        assert_int_equal(g->numel, w->t.numel);
        for (int64_t e = 0; e < g->numel; e++) {
            double gv = lt_tensor_get_f64(g, e), wv = lt_tensor_get_f64(&w->t, e);
            double rel = fabs(gv - wv) / fmax(fabs(wv), 1e-3);
            if (rel > 1e-5)
                fail_msg("%s b%d: %s[%ld] is %.9g, PyTorch's %.9g", net, batch, pn, (long)e, gv, wv);
            worst = fmax(worst, rel);
        }
        lt_value_free(w);
        nstats++;
    }
    assert_true(nstats >= 8);
    printf("%-10s b%-2d: %d running statistics match PyTorch's, worst %.3g\n", net, batch, nstats, worst);
    lt_value_free(ins[0]);
    lt_value_free(ins[1]);
    lt_trainer_free(t);
}

static void check_all(const char *net)
{
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
        check_net(net, batches[b], false);
        check_net(net, batches[b], true);
        check_running(net, batches[b]);
    }
}

static void resnet(void **state) { (void)state; check_all("resnet"); }
static void densenet(void **state) { (void)state; check_all("densenet"); }
static void shufflenet(void **state) { (void)state; check_all("shufflenet"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resnet),
        cmocka_unit_test(densenet),
        cmocka_unit_test(shufflenet),
        cmocka_unit_test(untied_parameters_export_separately),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
