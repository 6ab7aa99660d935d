/* Initializers torch's dynamo exporter folded from a parameter the file
 * no longer holds (ir/gathered_table.c), on models laid out as that
 * exporter writes them (tests/data/make_folded_models.py): out = (x W^T +
 * b) * G, G the folded initializer, with the graph signature and the
 * optimizer's record of what it folded G from.
 *
 * Repeated values alone are no table: -exp(A_log) of Mamba's A_log
 * (log(1..4) twice) is not trained as 4 tied values. A fold through
 * operations lantern can invert (exp, then neg) trains as the parameter
 * (ir/unfold_computed.c); no other fold through an operation that computes
 * new values (a sigmoid and product after a gather) trains in the
 * parameter's place: training refuses it, naming the initializer and the
 * parameter and saying how to export, and --freeze of it trains the rest;
 * so does a product of two parameters folded whole (a linear of learned
 * queries), while a join of two by copying trains as found. A file without the record shows no
 * table. A table gathered or expanded into copies trains as the table
 * (one SGD step: each value moved by the sum of its copies' gradients, as
 * PyTorch moves it), and a fold that copies each entry once (a view, or
 * a table's rows read at positions the record computed) trains each entry
 * apart, as PyTorch trains the parameter. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FOLDED LT_SOURCE_DIR "/tests/data/folded/"
#define DATA "npy=" FOLDED "x.npy," FOLDED "y.npy"

static int tables(const lt_model *m)
{
    int n = 0;
    for (int p = 0; p < m->nparams; p++)
        n += m->params[p].gathered_from != NULL;
    return n;
}

static void sgd_opts(lt_train_opts *o)
{
    lt_train_defaults(o);
    o->data = DATA;
    o->loss = LT_LOSS_MSE;
    o->schedule.lr = 0.1;
    o->batch = 8;
    o->limit = 8;
    o->no_shuffle = 1;
}

/* Training file must refuse, naming g and param and the way out. */
static void assert_refused(const char *file, const char *g, const char *param)
{
    lt_train_opts o;
    sgd_opts(&o);
    lt_trainer *t = NULL;
    lt_err err;
    assert_int_equal(lt_trainer_new(file, &o, &t, &err), LT_ERR_UNSUPPORTED);
    assert_null(t);
    print_message("%s\n", err.msg);
    char want[96];
    snprintf(want, sizeof want, "initializer '%s' is parameter '%s'", g, param);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "optimize=False"));
    assert_non_null(strstr(err.msg, "dynamo=False"));
    snprintf(want, sizeof want, "--freeze %s", g);
    assert_non_null(strstr(err.msg, want));
    assert_null(strchr(err.msg, '\n'));
}

/* Mamba's -exp(A_log), A_log = log(1..4) twice: four values repeated, not
 * a table; A_log comes back as log(-neg), read through Exp and Neg, and
 * frozen on request (--freeze neg) neg stays as it is while the Linear
 * trains. */
static void repeated_values_are_no_table(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "rep.onnx");
    assert_int_equal(tables(m), 0);
    const lt_param *neg = tu_ir_param(m, "neg"), *a_log = tu_ir_param(m, "A_log");
    assert_null(neg->fold_op);
    assert_false(neg->trainable);
    assert_string_equal(neg->computed_from, "A_log");
    assert_string_equal(neg->compute_ops, "Exp,Neg");
    assert_true(a_log->trainable);
    for (int i = 0; i < 8; i++)
        assert_float_equal(lt_tensor_get_f64(&a_log->data, i), log(1 + i % 4), 1e-6);
    lt_model_free(m);

    lt_train_opts o;
    sgd_opts(&o);
    static const char *const freeze[] = {"neg"};
    o.nfreeze = 1;
    o.freeze = freeze;
    o.on_note = tu_keep_note;
    tu_notes[0] = 0;
    lt_model *trained = NULL, *before = tu_model(FOLDED "rep.onnx");
    lt_err err;
    if (lt_train(FOLDED "rep.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_null(strstr(tu_notes, "relative position bias): they train"));
    assert_true(tu_max_rel_err(tu_param(trained, "neg"), tu_param(before, "neg")) == 0);
    assert_true(tu_max_rel_err(tu_param(trained, "lin.weight"), tu_param(before, "lin.weight")) > 1e-4);
    lt_model_free(trained);
    lt_model_free(before);
}

/* dL/dG[j] of the mean squared error of out = (x lin.weight^T + lin.bias)
 * * g over the 8 samples of x.npy against y.npy (the models' layout) */
static void mse_grad_of_g(lt_model *m, const double *g, double *dG)
{
    lt_value *x = tu_load(FOLDED "x.npy"), *y = tu_load(FOLDED "y.npy");
    const lt_tensor *W = tu_param(m, "lin.weight"), *b = tu_param(m, "lin.bias");
    for (int j = 0; j < 8; j++)
        dG[j] = 0;
    for (int n = 0; n < 8; n++)
        for (int j = 0; j < 8; j++) {
            double lin = lt_tensor_get_f64(b, j);
            for (int k = 0; k < 8; k++)
                lin += tu_get(x, n * 8 + k) * lt_tensor_get_f64(W, j * 8 + k);
            dG[j] += 2 * (lin * g[j] - tu_get(y, n * 8 + j)) * lin / 64;
        }
    lt_value_free(x);
    lt_value_free(y);
}

/* The same fold without repeats trains as A_log, as PyTorch trains it:
 * after one SGD step of the mean squared error of out = lin(x) * G, G =
 * -exp(A_log), A_log has moved by -lr dL/dG G and the written neg is
 * -exp of that. */
static void computed_fold_trains_as_parameter(void **state)
{
    (void)state;
    lt_model *before = tu_model(FOLDED "exp.onnx");
    const lt_tensor *G = tu_param(before, "neg");
    double g[8], dG[8], want[8];
    for (int j = 0; j < 8; j++)
        g[j] = lt_tensor_get_f64(G, j);
    mse_grad_of_g(before, g, dG);
    for (int j = 0; j < 8; j++)
        want[j] = -exp(log(-g[j]) - 0.1 * dG[j] * g[j]);
    lt_err err;
    lt_train_opts o;
    sgd_opts(&o);
    lt_model *trained = NULL;
    if (lt_train(FOLDED "exp.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int j = 0; j < 8; j++) {
        assert_float_equal(lt_tensor_get_f64(tu_param(trained, "neg"), j), want[j], 1e-5 * fabs(want[j]));
        assert_float_equal(lt_tensor_get_f64(tu_param(trained, "A_log"), j), log(-want[j]), 1e-5);
    }
    lt_model_free(trained);
    lt_model_free(before);
}

/* One number folded from a parameter (CLIP's logit_scale.exp() as `exp`)
 * is that parameter's, not a constant the exporter made: it trains as
 * logit_scale, as PyTorch trains it (it was kept fixed). */
static void folded_scalar_trains_as_parameter(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "scale.onnx");
    const lt_param *e = tu_ir_param(m, "exp"), *ls = tu_ir_param(m, "logit_scale");
    assert_string_equal(e->computed_from, "logit_scale");
    assert_true(ls->trainable);
    assert_float_equal(lt_tensor_get_f64(&ls->data, 0), 0.75, 1e-6);
    lt_model_free(m);
    lt_model *before = tu_model(FOLDED "scale.onnx");
    double g = exp(0.75), gs[8], dG[8], dg = 0;
    for (int j = 0; j < 8; j++)
        gs[j] = g;
    mse_grad_of_g(before, gs, dG);
    for (int j = 0; j < 8; j++)
        dg += dG[j]; /* the one number scales every column */
    double want = exp(0.75 - 0.1 * dg * g);
    lt_err err;
    lt_train_opts o;
    sgd_opts(&o);
    lt_model *trained = NULL;
    if (lt_train(FOLDED "scale.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_float_equal(lt_tensor_get_f64(tu_param(trained, "exp"), 0), want, 1e-5 * want);
    assert_true(fabs(want - g) > 1e-3); /* it moved */
    lt_model_free(trained);
    lt_model_free(before);
}

/* Gathered, then passed through a sigmoid and a product (Swin V2's
 * 16 * sigmoid(table[index])): not copies of the table. */
static void computed_after_gather_is_refused(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "gathermul.onnx");
    assert_int_equal(tables(m), 0);
    lt_model_free(m);
    assert_refused(FOLDED "gathermul.onnx", "mul_1", "table");
}

/* A linear of a learned query table and a weight, both constant to the
 * exporter, folded whole into val_12 (DETR's first self-attention on its
 * queries): the record holds only copying nodes besides the two
 * parameters, but the values are products, and the weight cannot be had
 * back from them. Refused, naming val_12 and the weight (its copies
 * trained apart, and the weight not at all); --freeze val_12 trains the
 * rest. */
static void folded_product_is_refused(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "product.onnx");
    assert_int_equal(tables(m), 0);
    const lt_param *g = tu_ir_param(m, "val_12");
    assert_non_null(g->fold_param);
    assert_non_null(g->fold_op);
    assert_string_equal(g->fold_param, "attn.in_proj_weight");
    assert_string_equal(g->fold_op, "linear");
    lt_model_free(m);
    assert_refused(FOLDED "product.onnx", "val_12", "attn.in_proj_weight");
    lt_train_opts o;
    sgd_opts(&o);
    static const char *const freeze[] = {"val_12"};
    o.nfreeze = 1;
    o.freeze = freeze;
    lt_model *trained = NULL, *before = tu_model(FOLDED "product.onnx");
    lt_err err;
    if (lt_train(FOLDED "product.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(tu_max_rel_err(tu_param(trained, "val_12"), tu_param(before, "val_12")) == 0);
    assert_true(tu_max_rel_err(tu_param(trained, "lin.weight"), tu_param(before, "lin.weight")) > 1e-4);
    lt_model_free(trained);
    lt_model_free(before);
}

/* Two parameters joined by copying (an LSTM's biases), read by an
 * operation that multiplies nothing: each entry once, trained as found. */
static void joined_copies_train(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "cat.onnx");
    assert_null(tu_ir_param(m, "val_5")->fold_op);
    assert_true(tu_ir_param(m, "val_5")->trainable);
    lt_model_free(m);
    lt_train_opts o;
    sgd_opts(&o);
    lt_model *trained = NULL, *before = tu_model(FOLDED "cat.onnx");
    lt_err err;
    if (lt_train(FOLDED "cat.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(tu_max_rel_err(tu_param(trained, "val_5"), tu_param(before, "val_5")) > 1e-4);
    lt_model_free(trained);
    lt_model_free(before);
}

/* Without the optimizer's record nothing shows a gather. */
static void no_record_no_table(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "norecord.onnx");
    assert_int_equal(tables(m), 0);
    assert_null(tu_ir_param(m, "neg")->fold_op);
    lt_model_free(m);
    lt_trainer *t = tu_trainer_noting(FOLDED "norecord.onnx");
    assert_non_null(strstr(tu_notes, "train as weights (neg)"));
    lt_trainer_free(t);
}

/* A constant whose record names no parameter (BLOOM's ALiBi slopes from
 * arange and pow) stays fixed though a parameter is unaccounted for (a
 * tied embedding's second name): it trained as a weight (the smallest
 * slope 65% up after 3 AdamW steps) */
static void constant_record_stays_fixed(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(FOLDED "slopes.onnx");
    assert_non_null(strstr(tu_notes, "stay fixed as PyTorch keeps them (unsqueeze_1)"));
    assert_null(strstr(tu_notes, "train as weights (unsqueeze_1)"));
    lt_trainer_free(t);
}

/* One SGD step (lr 0.1, MSE, the 8 samples at once) of file, read back
 * from the written model: G must be G - lr * dL/dG, where entries of
 * equal value share the sum of their gradients if tied (a table), and
 * each has its own otherwise. */
static void check_step(const char *file, const char *g, bool tied)
{
    lt_model *m = tu_model(file);
    lt_value *xv = tu_load(FOLDED "x.npy"), *yv = tu_load(FOLDED "y.npy");
    const lt_tensor *w = tu_param(m, "lin.weight"), *b = tu_param(m, "lin.bias"), *gt = tu_param(m, g);
    const float *x = lt_value_tensor(xv)->data, *y = lt_value_tensor(yv)->data;
    const float *wd = w->data, *bd = b->data, *gd = gt->data;
    assert_int_equal(gt->numel, 8);
    double grad[8] = {0}, want[8];
    for (int s = 0; s < 8; s++)
        for (int j = 0; j < 8; j++) {
            double lin = bd[j];
            for (int k = 0; k < 8; k++)
                lin += (double)x[s * 8 + k] * wd[j * 8 + k];
            grad[j] += 2.0 * (lin * gd[j] - y[s * 8 + j]) / 64.0 * lin;
        }
    for (int j = 0; j < 8; j++) {
        double sum = 0;
        for (int i = 0; i < 8; i++)
            if (i == j || (tied && !memcmp(&gd[i], &gd[j], sizeof *gd)))
                sum += grad[i];
        want[j] = gd[j] - 0.1 * sum;
    }
    char tmp[] = "/tmp/lt_folded_XXXXXX", out[96];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/trained.onnx", tmp);
    lt_train_opts o;
    sgd_opts(&o);
    lt_model *trained = NULL, *back = NULL;
    lt_err err;
    if (lt_train(file, &o, &trained, &err) != LT_OK || lt_model_export(trained, file, out, &err) != LT_OK ||
        lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s: %s", file, err.msg);
    const lt_tensor *got = tu_param(back, g);
    double e = 0;
    for (int j = 0; j < 8; j++)
        e = fmax(e, fabs(lt_tensor_get_f64(got, j) - want[j]) / fmax(1.0, fabs(want[j])));
    print_message("%s after one step against the expected: %.2g\n", g, e);
    assert_true(e < 1e-6);
    lt_model_free(back);
    lt_model_free(trained);
    lt_model_free(m);
    lt_value_free(xv);
    lt_value_free(yv);
    unlink(out);
    rmdir(tmp);
}

/* table[index] (a relative position bias's shape): 3 values in 8 places,
 * trained as the table */
static void gathered_table_trains_as_table(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "table.onnx");
    assert_int_equal(tables(m), 1);
    assert_null(tu_ir_param(m, "unsqueeze")->fold_op);
    lt_model_free(m);
    lt_trainer *t = tu_trainer_noting(FOLDED "table.onnx");
    assert_non_null(strstr(tu_notes, "relative position bias): they train as those values"));
    lt_trainer_free(t);
    check_step(FOLDED "table.onnx", "unsqueeze", true);
}

/* a.repeat(2): expanded copies of a, trained as a */
static void expanded_copies_train_as_source(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "copy.onnx");
    assert_int_equal(tables(m), 1);
    lt_model_free(m);
    check_step(FOLDED "copy.onnx", "repeat", true);
}

/* A_log.view(8): each entry once, so A_log's own repeats train apart */
static void one_copy_each_trains_apart(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "view.onnx");
    assert_int_equal(tables(m), 0);
    assert_null(tu_ir_param(m, "view")->fold_op);
    lt_model_free(m);
    check_step(FOLDED "view.onnx", "view", false);
}

/* pos.weight[arange(8) + 2] folded into embedding_1 (GPT-2's position
 * table as dynamo writes it): the add made the index, so the rows the
 * model reads train as found, each apart, as PyTorch moves them (was
 * refused as a fold through add) */
static void gathered_rows_train_apart(void **state)
{
    (void)state;
    lt_model *m = tu_model(FOLDED "posgather.onnx");
    assert_int_equal(tables(m), 0);
    assert_null(tu_ir_param(m, "embedding_1")->fold_op);
    lt_model_free(m);
    check_step(FOLDED "posgather.onnx", "embedding_1", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(repeated_values_are_no_table),
        cmocka_unit_test(computed_fold_trains_as_parameter),
        cmocka_unit_test(folded_scalar_trains_as_parameter),
        cmocka_unit_test(computed_after_gather_is_refused),
        cmocka_unit_test(folded_product_is_refused),
        cmocka_unit_test(joined_copies_train),
        cmocka_unit_test(no_record_no_table),
        cmocka_unit_test(constant_record_stays_fixed),
        cmocka_unit_test(gathered_table_trains_as_table),
        cmocka_unit_test(expanded_copies_train_as_source),
        cmocka_unit_test(one_copy_each_trains_apart),
        cmocka_unit_test(gathered_rows_train_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
