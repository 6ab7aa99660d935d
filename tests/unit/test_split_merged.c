/* Initializers torch's dynamo exporter merged for holding equal values
 * (ir/split_merged.c), on files that exporter wrote
 * (tests/data/merged/make_merged.py): a fresh network whose norm scales,
 * running variances, norm biases and running means are all one of two
 * initializers, and whose two deep-copied layers share one weight and one
 * bias. lantern splits them into the module's 20 tensors by their PyTorch
 * names, three SGD steps then match PyTorch's (every parameter and running
 * statistic within 2e-5 relative), and the written model holds each as an
 * initializer of its own that its nodes read. A random weight two
 * differently named modules read stays one tensor (a tie); a weight of
 * ones read that way is split. The trainer's notes name what was split,
 * a BatchNorm folded into a Conv (by either exporter) and parameters the
 * exporter dropped. GroupNorm's weight and bias, folded into single-valued
 * constants both GroupNorms read, train apart as PyTorch's; so does a
 * fresh nn.TransformerDecoder, whose cross-attentions share one Split.
 * Registered buffers stay fixed, and so does a table folded from one that
 * every layer multiplies by (a rotary embedding's cos). Inside torch.cond,
 * while_loop and scan bodies (tests/data/merged/make_body_merged.py) a
 * merged LayerNorm is split and a dropped zero bias restored as well,
 * with gradients within 1e-5 of PyTorch's. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#define MERGED LT_SOURCE_DIR "/tests/data/merged/"

static const char *const names[] = {
    "h.0.ln.weight", "h.0.ln.bias", "h.0.fc.weight", "h.0.fc.bias", "h.0.bn.weight", "h.0.bn.bias",
    "h.0.bn.running_mean", "h.0.bn.running_var", "h.1.ln.weight", "h.1.ln.bias", "h.1.fc.weight", "h.1.fc.bias",
    "h.1.bn.weight", "h.1.bn.bias", "h.1.bn.running_mean", "h.1.bn.running_var", "c.0.weight", "c.0.bias",
    "c.1.weight", "c.1.bias", "head.weight", "head.bias"};
#define NNAMES (int)(sizeof names / sizeof *names)

static int split_count(const lt_model *m)
{
    int n = 0;
    for (int p = 0; p < m->nparams; p++)
        n += m->params[p].split_from != NULL;
    return n;
}

/* The value a node input reads, by node name and slot. */
static const lt_ival *input_of(const lt_model *m, const char *node, int slot)
{
    for (int i = 0; i < m->main->nnodes; i++)
        if (!strcmp(m->main->nodes[i]->name, node))
            return slot < m->main->nodes[i]->nin ? m->main->nodes[i]->in[slot] : NULL;
    return NULL;
}

/* model trained by SGD at lr 0.1 on the npy pair data (in order), batch
 * samples a step for `steps` steps, as make_merged.py trains PyTorch's */
static lt_model *train_sgd_ck(const char *model, const char *data, int64_t batch, int steps, const char *ck)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.checkpoint_dir = ck;
    o.data = data;
    o.schedule.lr = 0.1;
    o.batch = batch;
    o.limit = batch * steps;
    o.no_shuffle = 1;
    lt_model *trained = NULL;
    lt_err err;
    if (lt_train(model, &o, &trained, &err) != LT_OK)
        fail_msg("%s: %s", model, err.msg);
    return trained;
}

static lt_model *train_sgd(const char *model, const char *data, int64_t batch, int steps)
{
    return train_sgd_ck(model, data, batch, steps, NULL);
}

static void splits_into_source_tensors(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    if (lt_model_load(MERGED "fresh.onnx", &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(m->nparams, NNAMES);
    assert_int_equal(split_count(m), 12);
    for (int i = 0; i < NNAMES; i++) {
        const lt_tensor *t = tu_param(m, names[i]);
        assert_true(t->numel > 0);
    }
    /* each node reads its own module's tensor: a BatchNormalization's
     * scale and running variance are apart although both were ones */
    for (int p = 0; p < m->nparams; p++) {
        const lt_param *pp = &m->params[p];
        assert_non_null(pp->value);
        for (int r = 0; r < pp->nsplit; r++)
            assert_ptr_equal(input_of(m, pp->split_node[r], pp->split_slot[r]), pp->value);
        if (strstr(pp->name, "running_") || strstr(pp->name, ".ln."))
            assert_int_equal(pp->value->uses, 1);
    }
    lt_model_free(m);
}

static void trains_as_pytorch(void **state)
{
    (void)state;
    char tmp[] = "/tmp/lt_split_XXXXXX", out[128], path[512];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/trained.onnx", tmp);
    lt_model *trained = train_sgd(MERGED "fresh.onnx", "npy=" MERGED "x.npy," MERGED "y.npy", 8, 3), *back = NULL;
    lt_err err;
    double worst = 0;
    for (int i = 0; i < NNAMES; i++) {
        snprintf(path, sizeof path, MERGED "ref/%s.npy", names[i]);
        lt_value *want = tu_load(path);
        double e = tu_max_rel_err(tu_param(trained, names[i]), lt_value_tensor(want));
        if (e > 2e-5)
            fail_msg("%s: %g off PyTorch after three steps", names[i], e);
        worst = e > worst ? e : worst;
        lt_value_free(want);
    }
    print_message("worst relative error against PyTorch: %.2g\n", worst);
    /* written back: every tensor an initializer of its own, read by its
     * nodes; importing the file again splits nothing */
    if (lt_model_export(trained, MERGED "fresh.onnx", out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(back->nparams, NNAMES);
    assert_int_equal(split_count(back), 0);
    for (int i = 0; i < NNAMES; i++) {
        const lt_tensor *a = tu_param(trained, names[i]), *b = tu_param(back, names[i]);
        assert_int_equal(a->numel, b->numel);
        assert_memory_equal(a->data, b->data, (size_t)a->numel * sizeof(float));
    }
    for (int p = 0; p < trained->nparams; p++)
        for (int r = 0; r < trained->params[p].nsplit; r++) {
            const lt_ival *v = input_of(back, trained->params[p].split_node[r], trained->params[p].split_slot[r]);
            assert_non_null(v);
            assert_string_equal(v->name, trained->params[p].name);
        }
    lt_model_free(back);
    lt_model_free(trained);
    unlink(out);
    rmdir(tmp);
}

/* the parameter standing for source tensor name: of that name, or the
 * folded constant that records it */
static const lt_tensor *source_param(const lt_model *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, name) || (m->params[p].torch_source && !strcmp(m->params[p].torch_source, name)))
            return &m->params[p].data;
    fail_msg("no parameter stands for %s", name);
    return NULL;
}

/* GroupNorm's weight and bias folded into single-valued val_N constants
 * that both GroupNorms read: trained (not kept as constants), one per
 * GroupNorm, three steps as PyTorch's */
static void folded_group_norm_trains(void **state)
{
    (void)state;
    static const char *const gn[] = {"c1.weight", "c1.bias", "gn1.weight", "gn1.bias", "c2.weight",
                                     "c2.bias", "gn2.weight", "gn2.bias", "head.weight", "head.bias"};
    lt_model *trained = train_sgd(MERGED "gn.onnx", "npy=" MERGED "gx.npy," MERGED "gy.npy", 4, 3);
    int folded = 0;
    for (int p = 0; p < trained->nparams; p++)
        folded += trained->params[p].torch_source != NULL;
    assert_int_equal(folded, 2); /* gn1's weight and bias; gn2's were split off by name */
    char path[512];
    for (int i = 0; i < (int)(sizeof gn / sizeof *gn); i++) {
        snprintf(path, sizeof path, MERGED "gn_ref/%s.npy", gn[i]);
        lt_value *want = tu_load(path);
        const lt_tensor *got = source_param(trained, gn[i]);
        double e = tu_max_rel_err(got, lt_value_tensor(want)); /* by element: [C, 1, 1] against [C] */
        if (e > 2e-5)
            fail_msg("%s: %g off PyTorch after three steps", gn[i], e);
        lt_value_free(want);
    }
    lt_model_free(trained);
}

/* The largest relative error of model m's output on the first eight
 * samples of the npy data (rank dims, the batch first) against the npy
 * logits PyTorch wrote. */
static double logits_err(lt_model *m, const char *data, int rank, const int64_t *dims, const char *logits)
{
    lt_value *x = tu_load(data), *want = tu_load(logits), *outs[1] = {NULL};
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    double *first = malloc(sizeof(double) * (size_t)n);
    assert_non_null(first);
    for (int64_t i = 0; i < n; i++)
        first[i] = tu_get(x, i);
    lt_value *x8 = tu_from(LT_F32, rank, dims, first);
    free(first);
    assert_int_equal(tu_run_x(m, x8, outs), 1);
    double e = tu_max_rel_err(lt_value_tensor(outs[0]), lt_value_tensor(want));
    lt_value_free(outs[0]);
    lt_value_free(x8);
    lt_value_free(x);
    lt_value_free(want);
    return e;
}

/* A fresh nn.TransformerDecoder: one Split of the merged in_proj_bias
 * serves both layers' cross-attention (copied per layer), the layers'
 * equal weights and biases are merged, their out_proj biases dropped.
 * Trained three steps and written back, the file gives PyTorch's logits. */
static void decoder_trains_as_pytorch(void **state)
{
    (void)state;
    char tmp[] = "/tmp/lt_split_XXXXXX", out[128];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/dec.onnx", tmp);
    lt_model *m = NULL, *trained = NULL, *back = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(MERGED "dec.onnx", &m, &err), LT_OK);
    assert_int_equal(m->nclones, 1);
    assert_non_null(strstr(m->clones[0].from, "Split"));
    int restored = 0;
    for (int p = 0; p < m->nparams; p++)
        restored += m->params[p].restored;
    assert_int_equal(restored, 4); /* both attentions' out_proj.bias in both layers */
    lt_model_free(m);
    trained = train_sgd(MERGED "dec.onnx", "npy=" MERGED "dx.npy," MERGED "dy.npy", 8, 3);
    if (lt_model_export(trained, MERGED "dec.onnx", out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(back->nclones, 0); /* the written file reads each module's own */
    static const int64_t d8[3] = {8, 5, 32};
    double e = logits_err(back, MERGED "dx.npy", 3, d8, MERGED "dec_logits.npy");
    print_message("decoder logits against PyTorch's after three steps: %.2g\n", e);
    assert_true(e < 1e-5);
    lt_model_free(back);
    lt_model_free(trained);
    unlink(out);
    rmdir(tmp);
}

/* A registered buffer stays fixed (PyTorch never moves it); a fresh
 * start (--init random) keeps an RMSNorm's weight of ones, which the graph
 * multiplies by itself, at one. */
/* model trained three steps as make_merged.py trains PyTorch's, against
 * every tensor of refdir (NAME.npy), and written back and read again: the
 * same numbers under the same names. The worst relative error. */
static double check_against_ref(const char *model, const char *refdir, lt_model **trained_out)
{
    char tmp[] = "/tmp/lt_unmerge_XXXXXX", out[128], path[512];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/trained.onnx", tmp);
    lt_model *trained = train_sgd(model, "npy=" MERGED "x.npy," MERGED "y.npy", 8, 3), *back = NULL;
    lt_err err;
    if (lt_model_export(trained, model, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(back->nparams, trained->nparams);
    DIR *d = opendir(refdir);
    assert_non_null(d);
    double worst = 0;
    int checked = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".npy") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l - 4), de->d_name);
        snprintf(path, sizeof path, "%s/%s", refdir, de->d_name);
        lt_value *want = tu_load(path);
        const lt_tensor *got = source_param(trained, name), *again = source_param(back, name);
        double e = tu_max_rel_err(got, lt_value_tensor(want));
        if (e > 2e-5)
            fail_msg("%s: %s: %g off PyTorch after three steps", model, name, e);
        worst = e > worst ? e : worst;
        assert_int_equal(got->numel, again->numel);
        assert_memory_equal(got->data, again->data, (size_t)got->numel * sizeof(float));
        lt_value_free(want);
        checked++;
    }
    closedir(d);
    assert_true(checked >= 4);
    lt_model_free(back);
    unlink(out);
    rmdir(tmp);
    *trained_out = trained;
    return worst;
}

/* Two blocks each normalising one input three times (LayerNorms) and a
 * shared context twice (RMSNorms written out; the second block's two
 * normalise it again): the exporter keeps one node per tensor normalised,
 * which lantern copies per module again, each with tensors of its own.
 * Three steps as PyTorch's, every tensor. */
static void merged_norms_train_apart(void **state)
{
    (void)state;
    lt_model *trained;
    double worst = check_against_ref(MERGED "twonorm.onnx", MERGED "twonorm_ref", &trained);
    print_message("worst relative error against PyTorch: %.2g\n", worst);
    int copies = 0;
    for (int c = 0; c < trained->nclones; c++)
        copies += trained->clones[c].whole;
    assert_int_equal(copies, 7); /* ln_b, ln_c and r2 of block 0; ln_b, ln_c, r1 and r2 of block 1 */
    lt_model_free(trained);
    lt_trainer *t = tu_trainer_noting(MERGED "twonorm.onnx");
    assert_non_null(strstr(tu_notes, "7 node(s) the exporter had merged from two modules' computations of one tensor"));
    assert_null(strstr(tu_notes, "have no initializer of that name"));
    lt_trainer_free(t);
}

/* Zero tensors merged within one module path (a GRN's weight and bias;
 * attention calling F.linear over its qkv and proj layers): each node's
 * torch.fx call names the tensor it read. Three steps as PyTorch's. */
static void fx_calls_name_merged_tensors(void **state)
{
    (void)state;
    lt_model *trained;
    double worst = check_against_ref(MERGED "fxnames.onnx", MERGED "fxnames_ref", &trained);
    print_message("worst relative error against PyTorch: %.2g\n", worst);
    assert_non_null(tu_param(trained, "grn.bias"));
    assert_non_null(tu_param(trained, "a2.proj.bias"));
    lt_model_free(trained);
}

/* An Identity from a tensor to a name the signature does not hold is the
 * module's own copy (x.clone()): it stays, and the tensor trains under its
 * name. */
static void clone_trains_its_source(void **state)
{
    (void)state;
    lt_model *trained;
    check_against_ref(MERGED "clone.onnx", MERGED "clone_ref", &trained);
    int identities = 0;
    for (int i = 0; i < trained->main->nnodes; i++)
        identities += trained->main->nodes[i]->op == LT_OP_IDENTITY;
    assert_int_equal(identities, 1);
    for (int p = 0; p < trained->nparams; p++)
        assert_string_not_equal(trained->params[p].name, "clone");
    lt_model_free(trained);
}

/* One block applied twice: the exporter's two folded transposes of each
 * weight train as one tensor, the second written from the first; the
 * written model gives PyTorch's logits after three steps. */
static void folded_copies_train_as_one(void **state)
{
    (void)state;
    char tmp[] = "/tmp/lt_twice_XXXXXX", out[128];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/trained.onnx", tmp);
    lt_model *trained = train_sgd(MERGED "twice.onnx", "npy=" MERGED "x.npy," MERGED "y.npy", 8, 3), *back = NULL;
    int copies = 0;
    for (int p = 0; p < trained->nparams; p++)
        copies += trained->params[p].copy_of != NULL;
    assert_int_equal(copies, 2); /* ffn's and out's second transposes */
    lt_err err;
    if (lt_model_export(trained, MERGED "twice.onnx", out, &err) != LT_OK || lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    static const int64_t d8[2] = {8, 8};
    double e = logits_err(back, MERGED "x.npy", 2, d8, MERGED "twice_logits.npy");
    print_message("logits of the written model against PyTorch's after three steps: %.2g\n", e);
    assert_true(e < 2e-5);
    lt_model_free(back);
    lt_model_free(trained);
    unlink(out);
    rmdir(tmp);
}

/* The merged initializers named after a BatchNorm that reads each at two
 * inputs (scale and running variance; bias and running mean): each input
 * gets its own tensor, as the BatchNorm's fx call names them. */
static void batch_norm_of_merged_names(void **state)
{
    (void)state;
    lt_model *trained;
    check_against_ref(MERGED "bnfirst.onnx", MERGED "bnfirst_ref", &trained);
    lt_model_free(trained);
}

/* A relative position bias gathered from a small table and folded: the
 * folded tensor trains as the table's values, and the written model holds
 * the gathered tensor PyTorch's table makes after three steps, and gives
 * PyTorch's logits. */
static void gathered_table_trains_as_table(void **state)
{
    (void)state;
    char tmp[] = "/tmp/lt_relbias_XXXXXX", out[128], ck[128], ckfile[160];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/trained.onnx", tmp);
    snprintf(ck, sizeof ck, "%s/ck", tmp);
    snprintf(ckfile, sizeof ckfile, "%s/checkpoint.ltck", ck);
    assert_int_equal(mkdir(ck, 0700), 0);
    lt_model *trained = train_sgd_ck(MERGED "relbias.onnx", "npy=" MERGED "x.npy," MERGED "y.npy", 8, 3, ck),
             *back = NULL, *from_ck = NULL;
    int tables = 0;
    for (int p = 0; p < trained->nparams; p++)
        tables += trained->params[p].gathered_from != NULL;
    assert_int_equal(tables, 2);
    lt_err err;
    if (lt_model_export(trained, MERGED "relbias.onnx", out, &err) != LT_OK || lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *want = tu_load(MERGED "relbias_table.npy");
    double e = tu_max_rel_err(tu_param(back, "unsqueeze"), lt_value_tensor(want));
    print_message("written bias table against PyTorch's after three steps: %.2g\n", e);
    assert_true(e < 2e-5);
    /* the same from the checkpoint, as lantern export CHECKPOINT writes it */
    if (lt_model_load(MERGED "relbias.onnx", &from_ck, &err) != LT_OK ||
        lt_model_load_checkpoint(from_ck, ckfile, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(tu_max_rel_err(tu_param(from_ck, "unsqueeze"), lt_value_tensor(want)) < 2e-5);
    lt_model_free(from_ck);
    unlink(ckfile);
    char lock[192];
    snprintf(lock, sizeof lock, "%s/checkpoint.lock", ck);
    unlink(lock);
    rmdir(ck);
    lt_value_free(want);
    static const int64_t d8[2] = {8, 8};
    e = logits_err(back, MERGED "x.npy", 2, d8, MERGED "relbias_logits.npy");
    print_message("logits of the written model against PyTorch's: %.2g\n", e);
    assert_true(e < 2e-5);
    lt_model_free(back);
    lt_model_free(trained);
    unlink(out);
    rmdir(tmp);
}

/* BatchNorms the exporter folded, fresh, into the Conv or Gemm before
 * them train again as BatchNorms: three steps as PyTorch's, running
 * statistics included, and written back into the graph. */
static void folded_batch_norms_come_back(void **state)
{
    (void)state;
    lt_model *trained;
    check_against_ref(MERGED "unfold.onnx", MERGED "unfold_ref", &trained);
    assert_int_equal(trained->nbn_inserts, 3);
    lt_model_free(trained);
    lt_trainer *t = tu_trainer_noting(MERGED "unfold.onnx");
    assert_non_null(strstr(tu_notes, "3 BatchNorm(s) the exporter had folded, fresh, into the product before them"));
    assert_null(strstr(tu_notes, "have a BatchNorm the exporter folded in"));
    lt_trainer_free(t);
    /* scales drawn at random: not a fresh BatchNorm, so it stays folded */
    t = tu_trainer_noting(MERGED "bngamma.onnx");
    assert_non_null(strstr(tu_notes, "1 node(s) have a BatchNorm the exporter folded in"));
    assert_null(strstr(tu_notes, "BatchNorm(s) the exporter had folded, fresh"));
    lt_trainer_free(t);
}

/* The same network exported in eval mode (the fx calls are
 * _native_batch_norm_legit_no_training, with no training flag), its first
 * Conv and its Linear made with bias=True (the fold keeps their biases,
 * divided by sqrt(1 + eps)): the three BatchNorms come back all the same,
 * and the network trains as PyTorch's in training mode. A Conv with a bias
 * before a BatchNorm PyTorch trained for 20 steps stays folded. */
static void folded_with_bias_in_eval_mode(void **state)
{
    (void)state;
    lt_model *trained;
    double worst = check_against_ref(MERGED "unfold_bias.onnx", MERGED "unfold_bias_ref", &trained);
    print_message("worst relative error against PyTorch: %.2g\n", worst);
    assert_int_equal(trained->nbn_inserts, 3);
    lt_model_free(trained);
    lt_trainer *t = tu_trainer_noting(MERGED "bnbias_trained.onnx");
    assert_non_null(strstr(tu_notes, "1 node(s) have a BatchNorm the exporter folded in"));
    assert_null(strstr(tu_notes, "BatchNorm(s) the exporter had folded, fresh"));
    lt_trainer_free(t);
}

static void buffers_stay_fixed(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(MERGED "buf.onnx", &m, &err), LT_OK);
    const lt_tensor *scale0 = tu_param(m, "scale");
    lt_tensor before = *scale0;
    float keep[8];
    assert_int_equal(before.numel, 8);
    memcpy(keep, before.data, sizeof keep);
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, "scale")) {
            assert_false(m->params[p].trainable);
            assert_true(m->params[p].torch_buffer);
        } else if (lt_dtype_is_float(m->params[p].data.dtype) && strncmp(m->params[p].name, "val_", 4)) {
            assert_true(m->params[p].trainable);
        }
    lt_model_free(m);
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = "npy=" MERGED "x.npy," MERGED "y.npy";
    o.schedule.lr = 0.1;
    o.batch = 8;
    o.limit = 24;
    o.init_random = 1;
    lt_model *trained = NULL;
    if (lt_train(MERGED "buf.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_memory_equal(tu_param(trained, "scale")->data, keep, sizeof keep);
    /* three steps move the RMSNorm weight off one, not off zero */
    const lt_tensor *w = tu_param(trained, "norm.weight");
    for (int64_t i = 0; i < w->numel; i++)
        assert_true(fabs(lt_tensor_get_f64(w, i) - 1.0) < 0.5);
    lt_model_free(trained);
}

/* A cos table folded from a buffer that both layers multiply by stays
 * fixed; the layers' own (folded, transposed) weights train. */
static void folded_buffer_table_stays(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(MERGED "rot.onnx", &m, &err), LT_OK);
    int tables = 0;
    for (int p = 0; p < m->nparams; p++) {
        const lt_param *pp = &m->params[p];
        if (!strcmp(pp->name, "cos")) {
            assert_false(pp->trainable);
            assert_true(pp->torch_buffer);
            tables++;
        } else if (lt_dtype_is_float(pp->data.dtype) && pp->data.numel > 1) {
            assert_true(pp->trainable);
        }
    }
    assert_int_equal(tables, 1); /* not split per layer either */
    lt_model_free(m);
}

static void tie_of_random_weight_stays(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(MERGED "tie.onnx", &m, &err), LT_OK);
    assert_int_equal(m->nparams, 1);
    assert_int_equal(m->params[0].value->uses, 2);
    lt_model_free(m);
    assert_int_equal(lt_model_load(MERGED "ones_tie.onnx", &m, &err), LT_OK);
    assert_int_equal(m->nparams, 2);
    assert_string_equal(m->params[1].name, "b.weight");
    assert_string_equal(m->params[1].split_from, "a.weight");
    assert_ptr_equal(input_of(m, "node_mm_1", 1), m->params[1].value);
    assert_ptr_equal(input_of(m, "node_mm_0", 1), m->params[0].value);
    lt_model_free(m);
}

/* Without the signature (any other exporter) nothing is split: the
 * shipped TorchScript nets keep their parameter counts. */
static void no_signature_no_split(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/nets/resnet.onnx", &m, &err), LT_OK);
    assert_int_equal(m->ntorch, 0);
    assert_int_equal(split_count(m), 0);
    lt_model_free(m);
}

/* The trainer says what it split, what it gave back (a BatchNorm folded
 * into a Conv, a zero bias the exporter dropped) and what it cannot undo
 * (TorchScript's fold). */
static void notes_name_the_rewrites(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(MERGED "fresh.onnx");
    assert_non_null(strstr(tu_notes, "12 tensor(s) of the source module that the exporter had merged"));
    assert_null(strstr(tu_notes, "folded in"));
    assert_null(strstr(tu_notes, "have no initializer of that name"));
    lt_trainer_free(t);
    /* the Conv keeps its own bias, fresh as the BatchNorm folded into it */
    t = tu_trainer_noting(MERGED "folded.onnx");
    assert_non_null(strstr(tu_notes, "1 BatchNorm(s) the exporter had folded, fresh, into the product before them "
                                  "train again as BatchNorms with batch statistics, as the nodes' torch.fx calls "
                                  "name them ('bn.batch_norm' after node 'node_Conv_"));
    assert_null(strstr(tu_notes, "have no initializer of that name"));
    assert_non_null(strstr(tu_notes, "1 bias(es) the exporter dropped for holding zeros (onnxscript's "
                                  "RemoveOptionalBias rules) train from zero again as the graph signature names "
                                  "them (fc.bias, of node 'node_Gemm_"));
    assert_null(strstr(tu_notes, "constant folding"));
    lt_trainer_free(t);
    t = tu_trainer_noting(MERGED "ts_folded.onnx");
    assert_non_null(strstr(tu_notes, "1 Conv weight(s) are tensors the exporter made by constant folding (onnx::Conv_"));
    assert_null(strstr(tu_notes, "TorchScript's constant folding computed"));
    lt_trainer_free(t);
    /* 1 + weight folded (Gemma's norms): noted; a transposed weight is not */
    t = tu_trainer_noting(LT_SOURCE_DIR "/tests/data/ts_fold_names.onnx");
    assert_non_null(strstr(tu_notes, "1 initializer(s) are tensors TorchScript's constant folding computed "
                                  "(onnx::Mul_7), which train each as a tensor of its own"));
    lt_trainer_free(t);
}

/* The first eight samples of x.npy, as the data's generators export and
 * differentiate their models. */
static lt_value *first8(void)
{
    lt_value *x = tu_load(MERGED "x.npy");
    double v[64];
    for (int i = 0; i < 64; i++)
        v[i] = tu_get(x, i);
    lt_value_free(x);
    static const int64_t d8[2] = {8, 8};
    return tu_from(LT_F32, 2, d8, v);
}

/* The gradient of the sum of model's output on x[:8] against PyTorch's,
 * refdir/NAME.npy: every parameter of the source module has one within
 * 1e-5 relative (zero where PyTorch's is: a branch not taken), and the
 * only others are the graph's constants (val_N). The worst error. */
static double grads_against_ref(const char *model, const char *refdir)
{
    lt_model *g = tu_grad_program(model, false);
    lt_value *x = first8(), *outs[TU_MAX_OUTPUTS] = {NULL};
    int n = tu_run_x(g, x, outs), matched = 0, files = 0;
    double worst = 0;
    char path[512], name[256];
    for (int i = 1; i < n; i++) {
        const char *o = lt_model_output_name(g, i);
        size_t l = strlen(o);
        assert_true(l > 5 && !strcmp(o + l - 5, "_grad"));
        snprintf(name, sizeof name, "%.*s", (int)(l - 5), o);
        snprintf(path, sizeof path, "%s/%s.npy", refdir, name);
        if (access(path, R_OK) != 0) {
            if (strncmp(name, "val_", 4) != 0)
                fail_msg("%s: gradient of %s, which PyTorch's module does not have", model, name);
            continue;
        }
        lt_value *want = tu_load(path);
        const lt_tensor *w = lt_value_tensor(want), *got = lt_value_tensor(outs[i]);
        double e = tu_max_rel_err(got, w), wmax = 0;
        for (int64_t k = 0; k < w->numel; k++)
            wmax = fmax(wmax, fabs(lt_tensor_get_f64(w, k)));
        if (wmax == 0)
            e = tu_max_rel_err(w, got) == 0 ? 0 : 1; /* both zero */
        if (e > 1e-5)
            fail_msg("%s: gradient of %s %g off PyTorch's", model, name, e);
        worst = e > worst ? e : worst;
        matched++;
        lt_value_free(want);
    }
    DIR *d = opendir(refdir);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));)
        files += strlen(de->d_name) > 4 && !strcmp(de->d_name + strlen(de->d_name) - 4, ".npy");
    closedir(d);
    if (matched != files)
        fail_msg("%s: %d of PyTorch's %d parameters have a gradient", model, matched, files);
    for (int i = 0; i < n; i++)
        lt_value_free(outs[i]);
    lt_value_free(x);
    lt_model_free(g);
    return worst;
}

/* Whether node n sits at path: its name in the main graph, else the path
 * of the node holding its graph, '/', the graph's name, '/', its name
 * ("node_cond__0/true_graph_0/node_Gemm_1"). */
static bool at_path(const lt_node *n, const char *path, size_t len)
{
    size_t ln = strlen(n->name);
    if (len < ln || strncmp(path + len - ln, n->name, ln) != 0)
        return false;
    const lt_block *b = n->block;
    if (!b->owner)
        return len == ln;
    size_t lb = strlen(b->name);
    if (len < ln + lb + 2 || path[len - ln - 1] != '/' || path[len - ln - lb - 2] != '/' ||
        strncmp(path + len - ln - lb - 1, b->name, lb) != 0)
        return false;
    return at_path(b->owner, path, len - ln - lb - 2);
}

/* The node of block b (or below) at path; NULL when none. */
static const lt_node *node_at(const lt_block *b, const char *path)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (at_path(n, path, strlen(path)))
            return n;
        for (int r = 0; r < n->nregions; r++) {
            const lt_node *in = node_at(n->regions[r], path);
            if (in)
                return in;
        }
    }
    return NULL;
}

/* The name of the value input slot of node path of the model file reads. */
static void assert_reads(const char *model, const char *path, int slot, const char *name)
{
    lt_model *m = tu_model(model);
    const lt_node *n = node_at(m->main, path);
    if (!n || slot >= n->nin || !n->in[slot] || !n->in[slot]->name || strcmp(n->in[slot]->name, name) != 0)
        fail_msg("%s: node %s does not read %s at input %d", model, path, name, slot);
    lt_model_free(m);
}

/* A node input the written model must have: node path reads name at slot. */
typedef struct node_read {
    const char *path;
    int slot;
    const char *name;
} node_read;

/* model's gradients (against grad_dir) and three SGD steps (against
 * ref_dir) as PyTorch's; the trained model, written to a temporary folder,
 * has each of the nreads inputs of reads. */
static void trains_and_writes(const char *model, const char *grad_dir, const char *ref_dir, const node_read *reads,
                              int nreads)
{
    double g = grads_against_ref(model, grad_dir);
    lt_model *trained;
    double worst = check_against_ref(model, ref_dir, &trained);
    print_message("gradients %.2g and three steps %.2g off PyTorch\n", g, worst);
    char tmp[] = "/tmp/lt_body_XXXXXX", out[128];
    assert_non_null(mkdtemp(tmp));
    snprintf(out, sizeof out, "%s/trained.onnx", tmp);
    lt_err err;
    if (lt_model_export(trained, model, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int i = 0; i < nreads; i++)
        assert_reads(out, reads[i].path, reads[i].slot, reads[i].name);
    unlink(out);
    rmdir(tmp);
    lt_model_free(trained);
}

/* A LayerNorm outside and one each in a scan's step, a while_loop's body
 * and a torch.cond's branch (tests/data/merged/make_body_merged.py), all
 * merged into ln_in's weight and bias: the bodies' nodes have no module
 * path, and their fx calls read the body graphs' placeholders (%arg4_1),
 * which name the Scan's and Loop's operands (%p_ln_scan_weight). Each
 * trains its own tensors: gradients and three SGD steps as PyTorch's, the
 * written model's bodies reading their own. */
static void body_norms_split(void **state)
{
    (void)state;
    static const char *const split[] = {"ln_scan.weight", "ln_scan.bias",   "ln_while.weight",
                                        "ln_while.bias",  "ln_then.weight", "ln_then.bias"};
    lt_model *m = tu_model(MERGED "body_ln.onnx");
    assert_int_equal(split_count(m), 6);
    for (int i = 0; i < 6; i++) {
        const lt_param *pp = tu_ir_param(m, split[i]);
        assert_non_null(pp);
        assert_string_equal(pp->split_from, strstr(split[i], "weight") ? "ln_in.weight" : "ln_in.bias");
        assert_int_equal(pp->nsplit, 1);
        assert_non_null(strchr(pp->split_node[0], '/')); /* a body's node */
    }
    lt_model_free(m);
    static const node_read reads[] = {
        {"node_scan__1/scan_combine_graph_0/node_layer_norm_2", 1, "ln_scan.weight"},
        {"node_while_loop__1/while_loop_body_graph_0_loop_body/node_layer_norm_3", 2, "ln_while.bias"},
        {"node_cond__0/true_graph_0/node_layer_norm_4", 1, "ln_then.weight"},
        {"node_layer_norm", 1, "ln_in.weight"},
    };
    trains_and_writes(MERGED "body_ln.onnx", MERGED "body_ln_grad", MERGED "body_ln_ref", reads, 4);
    lt_trainer *t = tu_trainer_noting(MERGED "body_ln.onnx");
    assert_non_null(strstr(tu_notes, "6 tensor(s) of the source module that the exporter had merged"));
    assert_non_null(strstr(tu_notes, "(ln_scan.weight, split from ln_in.weight)"));
    lt_trainer_free(t);
}

/* Linear layers with zero biases in a scan's step, a while_loop's body,
 * both branches of a torch.cond and the head: the exporter drops every
 * bias, and the Gemms of the scan's step and of both branches have one
 * name (node_Gemm_1). Each bias trains from zero again, gradients and
 * three SGD steps as PyTorch's, and the written model gives each its own
 * node. */
static void body_biases_restored(void **state)
{
    (void)state;
    static const char *const restored[] = {"step_fc.bias", "fw.bias", "a.bias", "b.bias", "head.bias"};
    lt_model *m = tu_model(MERGED "body_bias.onnx");
    for (int i = 0; i < 5; i++) {
        const lt_param *pp = tu_ir_param(m, restored[i]);
        assert_non_null(pp);
        assert_true(pp->restored);
    }
    lt_model_free(m);
    static const node_read reads[] = {
        {"node_scan__1/scan_combine_graph_0/node_Gemm_1", 2, "step_fc.bias"},
        {"node_while_loop__1/while_loop_body_graph_0_loop_body/node_Gemm_2", 2, "fw.bias"},
        {"node_cond__0/true_graph_0/node_Gemm_1", 2, "a.bias"},
        {"node_cond__0/false_graph_0/node_Gemm_1", 2, "b.bias"},
        {"node_Gemm_15", 2, "head.bias"},
    };
    trains_and_writes(MERGED "body_bias.onnx", MERGED "body_bias_grad", MERGED "body_bias_ref", reads, 5);
    lt_trainer *t = tu_trainer_noting(MERGED "body_bias.onnx");
    assert_non_null(strstr(tu_notes, "5 bias(es) the exporter dropped for holding zeros"));
    assert_non_null(strstr(tu_notes, "(step_fc.bias, of node 'node_scan__1/scan_combine_graph_0/node_Gemm_1')"));
    assert_null(strstr(tu_notes, "have no initializer of that name"));
    lt_trainer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_into_source_tensors),
        cmocka_unit_test(trains_as_pytorch),
        cmocka_unit_test(folded_group_norm_trains),
        cmocka_unit_test(decoder_trains_as_pytorch),
        cmocka_unit_test(merged_norms_train_apart),
        cmocka_unit_test(fx_calls_name_merged_tensors),
        cmocka_unit_test(clone_trains_its_source),
        cmocka_unit_test(folded_copies_train_as_one),
        cmocka_unit_test(batch_norm_of_merged_names),
        cmocka_unit_test(gathered_table_trains_as_table),
        cmocka_unit_test(folded_batch_norms_come_back),
        cmocka_unit_test(folded_with_bias_in_eval_mode),
        cmocka_unit_test(buffers_stay_fixed),
        cmocka_unit_test(folded_buffer_table_stays),
        cmocka_unit_test(tie_of_random_weight_stays),
        cmocka_unit_test(no_signature_no_split),
        cmocka_unit_test(notes_name_the_rewrites),
        cmocka_unit_test(body_norms_split),
        cmocka_unit_test(body_biases_restored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
