/* Graphs in the forms of old exporters (Caffe2, CNTK, early converters)
 * that ONNX model-zoo files still carry (tests/data/legacy/make_legacy.py):
 * opset < 7 broadcasting (broadcast = 1, B lined up with A at axis, with
 * opset 1's consumed_inputs), Concat below opset 4 without an axis (1),
 * Cast-1's `to` as a type name, and the experimental ops ImageScaler,
 * Crop, Scale, ScaledTanh, Affine and ParametricSoftplus. Each model's
 * outputs against numpy's, every parameter's gradient against float64
 * central differences, and one SGD step of a Caffe2-style classifier
 * (Conv, Add with axis 1, Gemm) against torch's; its export writes back
 * the initializers and leaves every node of the file as it was. */
#include "testutil.h"
#include "onnx.pb-c.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEG LT_SOURCE_DIR "/tests/data/legacy/"

static lt_value *npy(const char *model, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, LEG "%s_%s.npy", model, what);
    return tu_load(path);
}

/* the outputs of model (run on <model>_x.npy) named outs[i] against
 * <model>_<outs[i]>.npy: same type and shape, within rtol of the largest
 * reference entry */
static void outputs_as_numpy(const char *model, const char *const *outs, int nouts, double rtol)
{
    char path[512];
    snprintf(path, sizeof path, LEG "%s.onnx", model);
    lt_model *m = tu_model(path);
    lt_value *x = npy(model, "x"), *got[32] = {0};
    int n = tu_run_x(m, x, got);
    assert_true(n <= 32);
    for (int k = 0; k < nouts; k++) {
        int i = 0;
        while (i < n && strcmp(lt_model_output_name(m, i), outs[k]) != 0)
            i++;
        if (i == n)
            fail_msg("%s: no output %s", model, outs[k]);
        lt_value *want = npy(model, outs[k]);
        const lt_tensor *g = lt_value_tensor(got[i]), *w = &want->t;
        if (g->dtype != w->dtype || g->rank != w->rank || g->numel != w->numel)
            fail_msg("%s: %s is %s of rank %d (%lld), numpy's %s of rank %d (%lld)", model, outs[k],
                     lt_dtype_name(g->dtype), g->rank, (long long)g->numel, lt_dtype_name(w->dtype), w->rank,
                     (long long)w->numel);
        for (int d = 0; d < g->rank; d++)
            assert_int_equal(g->dims[d], w->dims[d]);
        double big = 0, worst = 0;
        for (int64_t e = 0; e < w->numel; e++)
            big = fmax(big, fabs(lt_tensor_get_f64(w, e)));
        for (int64_t e = 0; e < w->numel; e++)
            worst = fmax(worst, fabs(lt_tensor_get_f64(g, e) - lt_tensor_get_f64(w, e)));
        if (worst > rtol * fmax(big, 1e-12))
            fail_msg("%s: %s differs from numpy's by %g (largest entry %g)", model, outs[k], worst, big);
        lt_value_free(want);
    }
    for (int i = 0; i < n; i++)
        lt_value_free(got[i]);
    lt_value_free(x);
    lt_model_free(m);
}

/* Every parameter's gradient of model (loss: the sum of its first output;
 * x uniform in [lo, hi) of shape dims) against float64 central differences
 * (lt_grad_check): relative error at most 1e-5 in float64, 1e-3 in
 * float32 (tu_grad_check_model's bounds), nparams rows, each with a
 * nonzero gradient but for parameter no_grad (NULL: none), which only a
 * comparison reads. */
static void grads_as_differences(const char *model, int rank, const int64_t *dims, double lo, double hi,
                                 int nparams, const char *no_grad)
{
    char path[512];
    snprintf(path, sizeof path, LEG "%s.onnx", model);
    lt_value *x = tu_rand(LT_F32, rank, dims, lo, hi, 11);
    const char *name = "x";
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check(path, &o, 1, &name, &x, 64, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nrows, nparams);
    for (int r = 0; r < nrows; r++) {
        if (!(rows[r].err64 <= 1e-5) || !(rows[r].err32 <= 1e-3))
            fail_msg("%s: parameter %s: relative error %.3g (f64), %.3g (f32)", model, rows[r].name, rows[r].err64,
                     rows[r].err32);
        bool none_wanted = no_grad && !strcmp(rows[r].name, no_grad);
        if (rows[r].checked < 1 || (rows[r].max_grad > 0) == none_wanted)
            fail_msg("%s: parameter %s got %s gradient", model, rows[r].name, none_wanted ? "a" : "no");
    }
    free(rows);
    lt_value_free(x);
}

/* Add (axis 1), Mul ([4,3] at axis 1; [2,4] at axis 0; a scalar; one value
 * at axis 0), Sub (the last dims), Div (axis -3), Pow (axis 1), Greater */
static void legacy_broadcast_opset6(void **state)
{
    (void)state;
    static const char *const outs[] = {"y", "a", "m", "sb", "dv", "mk0", "mk1", "m0", "p", "gt"};
    outputs_as_numpy("bcast6", outs, 10, 1e-6);
    grads_as_differences("bcast6", 4, (int64_t[]){2, 4, 3, 5}, -1, 1, 10, "t");
}

/* opset 1: Add with broadcast, axis and consumed_inputs, Pow with
 * broadcast, Concat of three parts without an axis */
static void opset1_broadcast_pow_concat(void **state)
{
    (void)state;
    /* Concat-1 without an axis reads 1: the import writes it out, so a
     * kernel that takes the later opsets' required axis (cuda's) agrees */
    lt_model *m = tu_model(LEG "op1.onnx");
    int concats = 0;
    for (int i = 0; i < m->main->nnodes; i++)
        if (m->main->nodes[i]->op == LT_OP_CONCAT) {
            const lt_attr *a = lt_attr_find(m->main->nodes[i], "axis");
            assert_non_null(a);
            assert_int_equal(a->i, 1);
            concats++;
        }
    assert_int_equal(concats, 1);
    lt_model_free(m);
    static const char *const outs[] = {"y", "c"};
    outputs_as_numpy("op1", outs, 2, 1e-6);
    grads_as_differences("op1", 4, (int64_t[]){2, 4, 3, 5}, -1, 1, 3, NULL);
}

/* Cast-1 to "DOUBLE", "FLOAT" and "INT64" */
static void cast1_type_names(void **state)
{
    (void)state;
    static const char *const outs[] = {"y", "i", "md"};
    outputs_as_numpy("cast1", outs, 3, 1e-6);
    grads_as_differences("cast1", 2, (int64_t[]){4, 5}, -2, 2, 1, NULL);
}

static void experimental_ops(void **state)
{
    (void)state;
    static const char *const outs[] = {"y", "isc", "isn", "cr", "crs", "sc", "st", "af", "ps"};
    outputs_as_numpy("exp7", outs, 9, 1e-6);
    /* P_k and R_k of each of the eight ops */
    grads_as_differences("exp7", 4, (int64_t[]){2, 3, 6, 7}, -1.5, 1.5, 16, NULL);
}

/* ScaledTanh's alpha and beta have no default (onnxruntime's neither) */
static void experimental_needs_attributes(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    assert_int_not_equal(lt_model_load(LEG "exp_bad.onnx", &m, &err), LT_OK);
    if (!strstr(err.msg, "(ScaledTanh): needs the float attribute 'alpha'"))
        fail_msg("message: %s", err.msg);
}

static const char *const c2_params[4] = {"Wcv", "bcv", "Wf", "bf"};

/* Caffe2's way (Conv without bias, Add(bias, broadcast 1, axis 1), Relu,
 * Flatten, Gemm with broadcast 1): one SGD step at lr 0.1 on the batch
 * c2_x / c2_y gives torch's loss and parameters; the export writes them
 * back, each node of the file unchanged and each initializer its shape. */
static void caffe2_style_training_step(void **state)
{
    (void)state;
    lt_train_opts o;
    lt_train_defaults(&o);
    assert_int_equal(o.optim.kind, LT_OPTIM_SGD);
    lt_trainer *t = NULL;
    lt_err err;
    if (lt_trainer_new(LEG "c2.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *in[2] = {npy("c2", "x"), npy("c2", "y")}, *want_loss = npy("c2", "loss");
    const char *names[2] = {"x", "labels"};
    double loss = 0;
    if (lt_trainer_step(t, 0.1, 2, names, in, &loss, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double wl = lt_tensor_get_f64(&want_loss->t, 0);
    if (fabs(loss - wl) > 1e-5 * fmax(1, fabs(wl)))
        fail_msg("loss %.8g, torch %.8g", loss, wl);
    lt_model *m = lt_trainer_model(t);
    for (int k = 0; k < 4; k++) {
        lt_value *want = npy("c2", c2_params[k]);
        const lt_tensor *got = tu_param(m, c2_params[k]);
        double e = tu_max_rel_err(got, &want->t);
        if (e > 1e-5)
            fail_msg("%s after the step: relative error %g against torch", c2_params[k], e);
        lt_value_free(want);
    }
    char dir[] = "/tmp/lt_legacy_XXXXXX", out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/c2_trained.onnx", dir);
    if (lt_trainer_export(t, LEG "c2.onnx", out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* the trained values come back from the exported file, as the shapes they had */
    lt_model *back = tu_model(out);
    for (int k = 0; k < 4; k++) {
        lt_value *want = npy("c2", c2_params[k]);
        const lt_tensor *got = tu_param(back, c2_params[k]);
        assert_int_equal(got->rank, want->t.rank);
        for (int d = 0; d < got->rank; d++)
            assert_int_equal(got->dims[d], want->t.dims[d]);
        assert_true(tu_max_rel_err(got, &want->t) <= 1e-5);
        lt_value_free(want);
    }
    lt_model_free(back);
    /* every node byte for byte as in the file (Add keeps broadcast and axis) */
    Onnx__ModelProto *mp[2];
    const char *paths[2] = {LEG "c2.onnx", out};
    for (int f = 0; f < 2; f++) {
        FILE *fp = fopen(paths[f], "rb");
        assert_non_null(fp);
        static uint8_t buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
        assert_true(len > 0 && len < sizeof buf);
        mp[f] = onnx__model_proto__unpack(NULL, len, buf);
        assert_non_null(mp[f]);
    }
    assert_int_equal(mp[0]->graph->n_node, mp[1]->graph->n_node);
    assert_int_equal(mp[0]->graph->n_initializer, mp[1]->graph->n_initializer);
    for (size_t i = 0; i < mp[0]->graph->n_node; i++) {
        static uint8_t a[4096], b[4096];
        size_t la = onnx__node_proto__get_packed_size(mp[0]->graph->node[i]);
        size_t lb = onnx__node_proto__get_packed_size(mp[1]->graph->node[i]);
        assert_true(la < sizeof a && lb < sizeof b);
        onnx__node_proto__pack(mp[0]->graph->node[i], a);
        onnx__node_proto__pack(mp[1]->graph->node[i], b);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
    }
    for (size_t i = 0; i < mp[0]->graph->n_initializer; i++) {
        const Onnx__TensorProto *p = mp[0]->graph->initializer[i], *q = mp[1]->graph->initializer[i];
        assert_string_equal(p->name, q->name);
        assert_int_equal(p->n_dims, q->n_dims);
        for (size_t d = 0; d < p->n_dims; d++)
            assert_int_equal(p->dims[d], q->dims[d]);
    }
    onnx__model_proto__free_unpacked(mp[0], NULL);
    onnx__model_proto__free_unpacked(mp[1], NULL);
    unlink(out);
    rmdir(dir);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(want_loss);
    lt_trainer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(legacy_broadcast_opset6),    cmocka_unit_test(opset1_broadcast_pow_concat),
        cmocka_unit_test(cast1_type_names),           cmocka_unit_test(experimental_ops),
        cmocka_unit_test(experimental_needs_attributes), cmocka_unit_test(caffe2_style_training_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
