/* Embeddings' padding rows (lt_grad_opts.padding, lt_train_opts.padding)
 * against PyTorch's padding_idx (tests/data/make_padding_model.py): a token
 * classifier whose two embeddings have padding rows 0 and -1, the first
 * tied to the output projection (so its padding row still gets that use's
 * gradient), exported by the TorchScript exporter, batch 32 with many
 * padding tokens.
 * - the gradients of the batch-mean softmax cross-entropy, each
 *   parameter's within 1e-5 (max-norm relative) of PyTorch's; without the
 *   rows the two tables' gradients are far from PyTorch's;
 * - three trainer steps of SGD with momentum and weight decay (which does
 *   move a padding row in PyTorch) against PyTorch's parameters;
 * - a table looked up inside a Loop body: its padding row's gradient is
 *   zero, the other rows the same as without it;
 * - the errors: a name the model lacks, a row out of range, a parameter no
 *   Gather reads along axis 0. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define DIR LT_SOURCE_DIR "/tests/data/padding/"

static const lt_padding_row rows[2] = {{"tok.weight", 0}, {"aux.weight", -1}};

/* worst relative error of the tables' gradients against PyTorch's */
static double grads_vs_torch(int npadding)
{
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(DIR "tagger.onnx", &m, &err), LT_OK);
    lt_grad_opts o = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
    o.npadding = npadding;
    o.padding = rows;
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *ins[2] = {tu_load(DIR "ids.npy"), tu_load(DIR "y.npy")};
    const char *names[2] = {"ids", "labels"};
    int nout = lt_model_num_outputs(m);
    assert_int_equal(nout, 5);
    lt_value *outs[5] = {0};
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 2, names, ins, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *loss = tu_load(DIR "grads/loss.npy");
    assert_true(tu_max_rel_err(lt_value_tensor(outs[0]), &loss->t) < 1e-5);
    double worst_table = 0;
    for (int i = 1; i < nout; i++) {
        char pname[256], path[512];
        snprintf(pname, sizeof pname, "%s", lt_model_output_name(m, i));
        pname[strlen(pname) - 5] = 0; /* "_grad" */
        snprintf(path, sizeof path, DIR "grads/%s.npy", pname);
        lt_value *want = tu_load(path);
        double e = tu_max_rel_err(lt_value_tensor(outs[i]), &want->t);
        printf("  %-12s %s rel err %.2e\n", pname, npadding ? "rows" : "none", e);
        if (strstr(pname, "mix."))
            assert_true(e < 1e-5); /* untouched by the rows either way */
        else
            worst_table = fmax(worst_table, e);
        lt_value_free(want);
    }
    for (int i = 0; i < nout; i++)
        lt_value_free(outs[i]);
    lt_value_free(loss);
    lt_value_free(ins[0]);
    lt_value_free(ins[1]);
    lt_session_free(s);
    lt_model_free(m);
    return worst_table;
}

static void gradients(void **state)
{
    (void)state;
    assert_true(grads_vs_torch(2) < 1e-5);
    assert_true(grads_vs_torch(0) > 0.1); /* the reference can tell */
}

static void sgd_steps(void **state)
{
    (void)state;
    lt_err err;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.optim.momentum = 0.9;
    o.optim.weight_decay = 0.01;
    o.schedule.lr = 0.1;
    o.npadding = 2;
    o.padding = rows;
    o.data = "unused";
    lt_trainer *t;
    if (lt_trainer_new(DIR "tagger.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *names[2] = {"ids", "labels"};
    for (int s = 0; s < 3; s++) {
        char pi[512], py[512];
        snprintf(pi, sizeof pi, DIR "sgd/ids%d.npy", s);
        snprintf(py, sizeof py, DIR "sgd/y%d.npy", s);
        lt_value *in[2] = {tu_load(pi), tu_load(py)};
        double loss;
        if (lt_trainer_step(t, 0.1, 2, names, in, &loss, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
    }
    lt_model *m = lt_trainer_model(t);
    for (int p = 0; p < lt_model_num_params(m); p++) {
        char path[512];
        snprintf(path, sizeof path, DIR "sgd/%s.npy", lt_model_param_name(m, p));
        lt_value *want = tu_load(path);
        double e = tu_max_rel_err(lt_model_param(m, p), &want->t);
        printf("  %-12s after 3 steps rel err %.2e\n", lt_model_param_name(m, p), e);
        assert_true(e < 1e-5);
        lt_value_free(want);
    }
    lt_trainer_free(t);
}

/* E's gradient (output 1) of loop_embed.onnx, whose Gather of E sits in a
 * Loop body; the loss is the sum of the output */
static lt_value *loop_grad(int npadding)
{
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(DIR "loop_embed.onnx", &m, &err), LT_OK);
    lt_padding_row row = {"E", 0};
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    o.npadding = npadding;
    o.padding = &row;
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_string_equal(lt_model_output_name(m, 1), "E_grad");
    lt_value *ids = tu_load(DIR "loop_ids.npy");
    const char *names[1] = {"ids"};
    int nout = lt_model_num_outputs(m);
    lt_value *outs[8] = {0};
    assert_true(nout <= 8);
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 1, names, &ids, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int i = 0; i < nout; i++)
        if (i != 1)
            lt_value_free(outs[i]);
    lt_value_free(ids);
    lt_session_free(s);
    lt_model_free(m);
    return outs[1];
}

static void inside_loop(void **state)
{
    (void)state;
    lt_value *with = loop_grad(1), *without = loop_grad(0);
    const lt_tensor *a = lt_value_tensor(with), *b = lt_value_tensor(without);
    assert_int_equal(a->numel, 40 * 6);
    double row0 = 0;
    for (int64_t e = 0; e < a->numel; e++) {
        double x = lt_tensor_get_f64(a, e), y = lt_tensor_get_f64(b, e);
        if (e < 6) {
            assert_true(x == 0);
            row0 = fmax(row0, fabs(y));
        } else {
            assert_true(x == y);
        }
    }
    assert_true(row0 > 0.1); /* token 0 is every third one */
    lt_value_free(with);
    lt_value_free(without);
}

static void refuses(void **state)
{
    (void)state;
    static const struct {
        lt_padding_row row;
        const char *says;
    } bad[] = {
        {{"nosuch", 0}, "no parameter of that name"},
        {{"tok.weight", 40}, "out of range"},
        {{"tok.weight", -41}, "out of range"},
        {{"mix.weight", 1}, "no Gather reads rows"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lt_err err;
        lt_model *m;
        assert_int_equal(lt_model_load(DIR "tagger.onnx", &m, &err), LT_OK);
        lt_grad_opts o = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
        o.npadding = 1;
        o.padding = &bad[i].row;
        assert_int_equal(lt_model_grad(m, &o, &err), LT_ERR_INVALID);
        assert_non_null(strstr(err.msg, bad[i].says));
        assert_non_null(strstr(err.msg, bad[i].row.param));
        lt_model_free(m);
        /* and through the trainer */
        lt_train_opts to;
        lt_train_defaults(&to);
        to.data = "unused";
        to.npadding = 1;
        to.padding = &bad[i].row;
        lt_trainer *t = NULL;
        assert_int_equal(lt_trainer_new(DIR "tagger.onnx", &to, &t, &err), LT_ERR_INVALID);
        assert_null(t);
        assert_non_null(strstr(err.msg, bad[i].says));
    }
}

/* A dynamo export records padding_idx in the Gather's torch.fx call
 * (tests/data/folded/embedding.onnx, padding_idx 3): one SGD step on a
 * batch whose last two columns are the pad id leaves row 3 as it was, as
 * PyTorch does, and moves the rows looked up; given the same row by
 * --padding-idx, training gives the same weights. */
static void recorded_by_dynamo(void **state)
{
    (void)state;
    const char *folded = LT_SOURCE_DIR "/tests/data/folded/";
    char spec[512];
    snprintf(spec, sizeof spec, "npy=%sids.npy,%slabels.npy", folded, folded);
    lt_model *trained[2] = {NULL, NULL}, *before = NULL;
    lt_err err;
    char path[512];
    snprintf(path, sizeof path, "%sembedding.onnx", folded);
    assert_int_equal(lt_model_load(path, &before, &err), LT_OK);
    static const lt_padding_row row3 = {"emb.weight", 3};
    for (int given = 0; given < 2; given++) {
        lt_train_opts o;
        lt_train_defaults(&o);
        o.data = spec;
        o.batch = 8;
        o.no_shuffle = 1;
        o.schedule.lr = 0.5;
        if (given) {
            o.npadding = 1;
            o.padding = &row3;
        }
        if (lt_train(path, &o, &trained[given], &err) != LT_OK)
            fail_msg("%s", err.msg);
    }
    const lt_tensor *w0 = tu_param(before, "emb.weight"), *w = tu_param(trained[0], "emb.weight");
    double pad_moved = 0, moved = 0;
    for (int64_t i = 0; i < w->numel; i++) {
        double d = fabs(lt_tensor_get_f64(w, i) - lt_tensor_get_f64(w0, i));
        if (i / 4 == 3)
            pad_moved = fmax(pad_moved, d);
        else
            moved = fmax(moved, d);
    }
    assert_true(pad_moved == 0);
    assert_true(moved > 1e-3);
    assert_true(tu_max_rel_err(w, tu_param(trained[1], "emb.weight")) == 0);
    lt_model_free(trained[0]);
    lt_model_free(trained[1]);
    lt_model_free(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients),
        cmocka_unit_test(sgd_steps),
        cmocka_unit_test(inside_loop),
        cmocka_unit_test(refuses),
        cmocka_unit_test(recorded_by_dynamo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
