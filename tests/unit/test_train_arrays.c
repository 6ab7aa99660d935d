/* lantern train on npz named inputs (runtime/train_arrays.c), on the small
 * models of tests/data/make_feed_models.py and data written here:
 * - int64 token ids and a bool mask feed their inputs as they are, and the
 *   program's loss on them equals a loss computed here from the weights;
 * - a time-major RNN ([T, N, I]) gets each sample in column N, trains, and
 *   a model whose batch axis nothing tells is refused until --batch-axis;
 * - per-token softmax cross-entropy skips ignore_index labels, as the
 *   reference computed here does, in training and in evaluation;
 * - ragged arrays (NAME_splits) feed a model without a batch axis one tree
 *   at a time; --batch B makes one step of the mean of B trees' gradients,
 *   each taken alone through the step API;
 * - a 0-d array feeds a rank-0 input (a step count) whole every run;
 * - a per-pixel class map [N, C, H, W] takes labels [N, H, W] (classes on
 *   axis 1), or --class-axis says where both axes fit;
 * - every bad file or option gives one line naming the array, exit 2. */
#include "test_dataset.h"
#include "train/dataset_arrays.h"
#include "train/train_arrays.h"
#include <signal.h>
#include <sys/wait.h>

#define DATA LT_SOURCE_DIR "/tests/data/"
#define LANTERN LT_BINARY_DIR "/lantern"

/* ---- an npz written here ---- */

typedef struct npz_w {
    td_member m[24];
    int n;
} npz_w;

static void add(npz_w *z, const char *member, const char *descr, int rank, const int64_t *dims, const void *data,
                size_t nbytes)
{
    size_t len;
    uint8_t *b = td_npy(descr, 0, rank, dims, data, nbytes, &len);
    z->m[z->n++] = (td_member){member, b, len, z->n % 2 ? 8 : 0};
}

static void save(npz_w *z, const char *path)
{
    size_t len;
    uint8_t *b = td_zip(z->m, z->n, 0, &len);
    td_write(path, b, len);
    free(b);
    for (int i = 0; i < z->n; i++)
        free((void *)z->m[i].data);
    z->n = 0;
}

static const float *param(const lt_model *m, const char *name)
{
    for (int i = 0; i < lt_model_num_params(m); i++)
        if (!strcmp(lt_model_param_name(m, i), name))
            return lt_model_param(m, i)->data;
    fail_msg("no parameter %s", name);
    return NULL;
}

static double ce(const double *z, int C, int64_t lab)
{
    double mx = z[0], s = 0;
    for (int c = 1; c < C; c++)
        mx = z[c] > mx ? z[c] : mx;
    for (int c = 0; c < C; c++)
        s += exp(z[c] - mx);
    return log(s) + mx - z[lab];
}

typedef struct epochs {
    double first, last, acc;
    int n;
} epochs;

static void on_epoch(const lt_epoch_result *r, void *user)
{
    epochs *e = user;
    if (e->n++ == 0)
        e->first = r->train_loss;
    e->last = r->train_loss;
    e->acc = r->test.accuracy;
}

static lt_train_opts opts_for(const char *spec, epochs *e)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = spec;
    o.on_epoch = on_epoch;
    o.user = e;
    return o;
}

/* the program's loss on samples idx[0..k), before any update */
static double program_loss(const char *model, const lt_train_opts *o, const lt_afeed *f, const int64_t *idx, int64_t k)
{
    lt_err err;
    lt_trainer *t = NULL;
    if (lt_trainer_new(model, o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *names[LT_AFEED_MAX + 1];
    lt_value *in[LT_AFEED_MAX + 1];
    if (lt_afeed_make(f, idx, k, names, in, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double loss = NAN;
    if (lt_trainer_step(t, 0.0, f->nslot, names, in, &loss, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_afeed_free_values(f, in);
    lt_trainer_free(t);
    return loss;
}

/* ---- token ids and a mask ---- */

enum { TOK_N = 240, TOK_T = 6 };

static void write_tok(const char *path, int n, int ntest, uint64_t seed)
{
    int64_t *ids = malloc(sizeof *ids * (size_t)(n + ntest) * TOK_T), *y = malloc(sizeof *y * (size_t)(n + ntest));
    uint8_t *mask = malloc((size_t)(n + ntest) * TOK_T);
    int32_t *ids32 = malloc(sizeof *ids32 * (size_t)ntest * TOK_T);
    for (int i = 0; i < n + ntest; i++) {
        /* class c draws its tokens from 4c..4c+3; padding past the length */
        y[i] = (int64_t)(td_next(&seed) % 3);
        int len = 2 + (int)(td_next(&seed) % 5);
        for (int t = 0; t < TOK_T; t++) {
            ids[i * TOK_T + t] = t < len ? 4 * y[i] + (int64_t)(td_next(&seed) % 4) : (int64_t)(td_next(&seed) % 12);
            mask[i * TOK_T + t] = t < len;
        }
    }
    for (int i = 0; i < ntest * TOK_T; i++)
        ids32[i] = (int32_t)ids[n * TOK_T + i];
    npz_w z = {0};
    int64_t d2[2] = {n, TOK_T}, d1[1] = {n}, t2[2] = {ntest, TOK_T}, t1[1] = {ntest};
    add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof *ids * (size_t)n * TOK_T);
    add(&z, "attention_mask.npy", "|b1", 2, d2, mask, (size_t)n * TOK_T);
    add(&z, "y.npy", "<i8", 1, d1, y, sizeof *y * (size_t)n);
    if (ntest) {
        /* int32 ids: the input's int64 takes them */
        add(&z, "input_ids_test.npy", "<i4", 2, t2, ids32, sizeof *ids32 * (size_t)ntest * TOK_T);
        add(&z, "attention_mask_test.npy", "|b1", 2, t2, mask + n * TOK_T, (size_t)ntest * TOK_T);
        add(&z, "y_test.npy", "<i8", 1, t1, y + n, sizeof *y * (size_t)ntest);
    }
    save(&z, path);
    free(ids);
    free(ids32);
    free(y);
    free(mask);
}

static void named_inputs_take_their_types(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tok.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    write_tok(path, TOK_N, 60, 21);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_tok.onnx", &m, &err), LT_OK);
    epochs e = {0};
    lt_train_opts o = opts_for(spec, &e);
    assert_int_equal(lt_afeed_wanted(m, a, &o), 1);
    lt_afeed f;
    if (lt_afeed_plan(m, a, &o, &f, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(f.nslot, 3);
    assert_true(f.batched && !f.ragged);
    assert_string_equal(f.slot[0].name, "input_ids");
    assert_string_equal(f.slot[1].name, "attention_mask");
    assert_string_equal(f.slot[2].name, "labels");
    int64_t idx[5] = {7, 0, 133, 52, 239};
    const char *names[4];
    lt_value *in[4];
    assert_int_equal(lt_afeed_make(&f, idx, 5, names, in, &err), LT_OK);
    const lt_ds_array *ids = lt_arrays_find(a, "input_ids"), *mask = lt_arrays_find(a, "attention_mask"),
                      *y = lt_arrays_find(a, "y");
    assert_int_equal(in[0]->t.dtype, LT_I64);
    assert_int_equal(in[1]->t.dtype, LT_BOOL);
    assert_int_equal(in[0]->t.rank, 2);
    assert_int_equal(in[0]->t.dims[0], 5);
    assert_int_equal(in[0]->t.dims[1], TOK_T);
    for (int j = 0; j < 5; j++) {
        assert_memory_equal((int64_t *)in[0]->t.data + j * TOK_T, (int64_t *)ids->t.data + idx[j] * TOK_T,
                            TOK_T * sizeof(int64_t));
        assert_memory_equal((uint8_t *)in[1]->t.data + j * TOK_T, (uint8_t *)mask->t.data + idx[j] * TOK_T, TOK_T);
        assert_int_equal(((int64_t *)in[2]->t.data)[j], ((int64_t *)y->t.data)[idx[j]]);
    }
    /* the loss here: masked sum of embeddings, then W, b */
    const float *emb = param(m, "emb"), *W = param(m, "W"), *b = param(m, "b");
    double want = 0;
    for (int j = 0; j < 5; j++) {
        double s[8] = {0}, z[3];
        for (int t = 0; t < TOK_T; t++) {
            int64_t id = ((int64_t *)in[0]->t.data)[j * TOK_T + t];
            for (int k = 0; k < 8 && ((uint8_t *)in[1]->t.data)[j * TOK_T + t]; k++)
                s[k] += emb[id * 8 + k];
        }
        for (int c = 0; c < 3; c++) {
            z[c] = b[c];
            for (int k = 0; k < 8; k++)
                z[c] += s[k] * W[k * 3 + c];
        }
        want += ce(z, 3, ((int64_t *)in[2]->t.data)[j]) / 5;
    }
    lt_afeed_free_values(&f, in);
    double got = program_loss(DATA "feed_tok.onnx", &o, &f, idx, 5);
    if (fabs(got - want) > 1e-5 * (1 + fabs(want)))
        fail_msg("program loss %.9g, reference %.9g", got, want);
    lt_arrays_free(a);
    lt_model_free(m);

    /* trains: the loss falls, the test split (int32 ids) is classified */
    o.epochs = 4;
    o.batch = 16;
    o.schedule.lr = 0.1;
    lt_model *trained = NULL;
    if (lt_train(DATA "feed_tok.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(trained);
    assert_int_equal(e.n, 4);
    if (!(e.last < 0.5 * e.first) || !(e.acc > 0.9))
        fail_msg("train loss %g -> %g, test accuracy %g", e.first, e.last, e.acc);
    td_rmtree(dir);
}

/* lantern predict on named inputs: each test sample's class is the argmax
 * of the scores computed here from the weights (ties: the first), and the
 * accuracy is eval's; labels per token are refused (eval scores them). */
static void predict_named_inputs(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tok.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    enum { NT = 70 };
    write_tok(path, 20, NT, 5);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 1, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_tok.onnx", &m, &err), LT_OK);
    const lt_ds_array *ids = lt_arrays_find(a, "input_ids"), *mask = lt_arrays_find(a, "attention_mask"),
                      *y = lt_arrays_find(a, "y");
    const float *emb = param(m, "emb"), *W = param(m, "W"), *b = param(m, "b");
    lt_eval_opts eo = {spec, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0};
    lt_prediction pred[NT + 5];
    int64_t n = 0;
    if (lt_model_predict(m, &eo, NT + 5, pred, &n, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(n, NT);
    int64_t correct = 0;
    for (int j = 0; j < NT; j++) {
        double s[8] = {0}, z[3];
        for (int t = 0; t < TOK_T; t++) {
            int64_t id = (int64_t)lt_tensor_get_f64(&ids->t, j * TOK_T + t);
            for (int k = 0; k < 8 && ((uint8_t *)mask->t.data)[j * TOK_T + t]; k++)
                s[k] += emb[id * 8 + k];
        }
        int best = 0;
        for (int c = 0; c < 3; c++) {
            z[c] = b[c];
            for (int k = 0; k < 8; k++)
                z[c] += s[k] * W[k * 3 + c];
            best = z[c] > z[best] ? c : best;
        }
        assert_int_equal(pred[j].sample, j);
        assert_int_equal(pred[j].predicted, best);
        assert_int_equal(pred[j].truth, ((int64_t *)y->t.data)[j]);
        assert_false(pred[j].ignored);
        correct += best == ((int64_t *)y->t.data)[j];
    }
    lt_eval_result r;
    if (lt_model_evaluate(m, &eo, &r, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(r.count, NT);
    assert_true(fabs(r.accuracy - (double)correct / NT) < 1e-12);
    lt_model_free(m);
    lt_arrays_free(a);

    /* a label per token is not a sample's class */
    int64_t tid[4 * 5], tag[4 * 5], d2[2] = {4, 5};
    for (int i = 0; i < 20; i++) {
        tid[i] = i % 12;
        tag[i] = i % 4;
    }
    npz_w z = {0};
    add(&z, "input_ids.npy", "<i8", 2, d2, tid, sizeof tid);
    add(&z, "y.npy", "<i8", 2, d2, tag, sizeof tag);
    add(&z, "input_ids_test.npy", "<i8", 2, d2, tid, sizeof tid);
    add(&z, "y_test.npy", "<i8", 2, d2, tag, sizeof tag);
    save(&z, path);
    assert_int_equal(lt_model_load(DATA "feed_tagger.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_model_predict(m, &eo, 3, pred, &n, &err), LT_ERR_INVALID);
    if (!strstr(err.msg, "one class per sample"))
        fail_msg("%s", err.msg);
    lt_model_free(m);
    td_rmtree(dir);
}

/* ---- time-major RNN ---- */

static void write_tm(const char *path, int n, bool per_step, uint64_t seed)
{
    double *x = malloc(sizeof *x * (size_t)n * 7 * 3);
    int64_t *y = malloc(sizeof *y * (size_t)n * 7);
    for (int i = 0; i < n; i++) {
        double run = 0;
        for (int t = 0; t < 7; t++) {
            for (int k = 0; k < 3; k++)
                x[(i * 7 + t) * 3 + k] = td_uniform(&seed, -1, 1);
            run += x[(i * 7 + t) * 3];
            y[i * 7 + t] = x[(i * 7 + t) * 3] > 0;
        }
        if (!per_step)
            y[i] = run > 0;
    }
    npz_w z = {0};
    int64_t d3[3] = {n, 7, 3}, dy[2] = {n, 7};
    add(&z, "x.npy", "<f8", 3, d3, x, sizeof *x * (size_t)n * 21);
    add(&z, "y.npy", "<i8", per_step ? 2 : 1, dy, y, sizeof *y * (size_t)n * (per_step ? 7 : 1));
    save(&z, path);
    free(x);
    free(y);
}

static void time_major_batch_axis(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tm.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    write_tm(path, 320, false, 5);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_tm_rnn.onnx", &m, &err), LT_OK);
    epochs e = {0};
    lt_train_opts o = opts_for(spec, &e);
    /* x is called x and is float: the x / y feed would take it, batch first */
    assert_int_equal(lt_afeed_wanted(m, a, &o), 1);
    lt_afeed f;
    if (lt_afeed_plan(m, a, &o, &f, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(f.slot[0].axis, 1);
    assert_int_equal(f.slot[1].axis, 0);
    int64_t idx[3] = {11, 300, 2};
    const char *names[2];
    lt_value *in[2];
    assert_int_equal(lt_afeed_make(&f, idx, 3, names, in, &err), LT_OK);
    const lt_tensor *xt = &in[0]->t;
    assert_int_equal(xt->dtype, LT_F32);
    assert_int_equal(xt->dims[0], 7);
    assert_int_equal(xt->dims[1], 3);
    assert_int_equal(xt->dims[2], 3);
    const double *src = lt_arrays_find(a, "x")->t.data;
    for (int t = 0; t < 7; t++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                assert_true(((float *)xt->data)[(t * 3 + j) * 3 + k] == (float)src[(idx[j] * 7 + t) * 3 + k]);
    lt_afeed_free_values(&f, in);
    lt_arrays_free(a);
    lt_model_free(m);
    o.epochs = 4;
    o.batch = 16;
    o.schedule.lr = 0.1;
    lt_model *trained = NULL;
    if (lt_train(DATA "feed_tm_rnn.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(trained);
    if (!(e.last < 0.8 * e.first))
        fail_msg("train loss %g -> %g", e.first, e.last);

    /* every step scored: both symbolic axes reach the output, and neither
     * is named like a batch */
    write_tm(path, 64, true, 6);
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_tm_tag.onnx", &m, &err), LT_OK);
    td_fails(lt_afeed_plan(m, a, &o, &f, &err), LT_ERR_INVALID, &err, "input 'x'", "array 'x'", "--batch-axis x=K",
             NULL);
    const char *ax[1] = {"x=1"};
    o.batch_axes = ax;
    o.nbatch_axes = 1;
    if (lt_afeed_plan(m, a, &o, &f, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(f.slot[0].axis, 1);
    assert_int_equal(f.slot[1].axis, 1); /* labels [T, N] as the output's [T, N, 2] */
    assert_int_equal(f.slot[1].rank, 2);
    ax[0] = "x=3";
    td_fails(lt_afeed_plan(m, a, &o, &f, &err), LT_ERR_INVALID, &err, "--batch-axis x=3", "0..2", NULL);
    ax[0] = "h=1";
    td_fails(lt_afeed_plan(m, a, &o, &f, &err), LT_ERR_INVALID, &err, "--batch-axis h=1", "INPUT=K", NULL);
    lt_arrays_free(a);
    lt_model_free(m);
    td_rmtree(dir);
}

/* ---- per-token loss ---- */

static void sequence_loss_skips_ignored(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tag.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    enum { N = 40, T = 9 };
    int64_t ids[N * T], y[N * T], y3[N * T];
    uint64_t seed = 77;
    for (int i = 0; i < N * T; i++) {
        ids[i] = (int64_t)(td_next(&seed) % 12);
        y[i] = i % T >= 6 ? -100 : ids[i] % 4; /* padding past 6 */
        y3[i] = ids[i] % 4;
    }
    npz_w z = {0};
    int64_t d2[2] = {N, T};
    add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof ids);
    add(&z, "y.npy", "<i8", 2, d2, y, sizeof y);
    add(&z, "tags.npy", "<i8", 2, d2, y3, sizeof y3);
    add(&z, "input_ids_test.npy", "<i8", 2, d2, ids, sizeof ids);
    add(&z, "y_test.npy", "<i8", 2, d2, y, sizeof y);
    add(&z, "tags_test.npy", "<i8", 2, d2, y3, sizeof y3);
    save(&z, path);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_tagger.onnx", &m, &err), LT_OK);
    const float *emb = param(m, "emb"), *W = param(m, "W"), *b = param(m, "b");
    int64_t idx[N];
    for (int i = 0; i < N; i++)
        idx[i] = i;
    /* two labellings: -100 past the sixth token (the default ignore index),
     * and every token with class 3 skipped through --ignore-index 3 */
    for (int pass = 0; pass < 2; pass++) {
        epochs e = {0};
        lt_train_opts o = opts_for(spec, &e);
        const int64_t *lab = pass ? y3 : y;
        if (pass) {
            o.labels = "tags";
            o.set_ignore_index = 1;
            o.ignore_index = 3;
        }
        int64_t skip = pass ? 3 : -100;
        lt_afeed f;
        if (lt_afeed_plan(m, a, &o, &f, &err) != LT_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(f.slot[1].rank, 2);
        double want = 0;
        int64_t counted = 0;
        for (int i = 0; i < N * T; i++) {
            if (lab[i] == skip)
                continue;
            double zz[4];
            for (int c = 0; c < 4; c++) {
                zz[c] = b[c];
                for (int k = 0; k < 8; k++)
                    zz[c] += emb[ids[i] * 8 + k] * W[k * 4 + c];
            }
            want += ce(zz, 4, lab[i]);
            counted++;
        }
        want /= (double)counted;
        double got = program_loss(DATA "feed_tagger.onnx", &o, &f, idx, N);
        if (fabs(got - want) > 1e-5 * (1 + fabs(want)))
            fail_msg("pass %d: program loss %.9g, reference %.9g", pass, got, want);
        /* the evaluation's mean over the counted tokens */
        lt_arrays *at = NULL;
        lt_afeed ft;
        lt_session *s = NULL;
        lt_eval_result r;
        assert_int_equal(lt_arrays_open(path, 1, &at, &err), LT_OK);
        assert_int_equal(lt_afeed_plan(m, at, &o, &ft, &err), LT_OK);
        assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
        if (lt_afeed_evaluate(&ft, s, m, 0, &r, &err) != LT_OK)
            fail_msg("%s", err.msg);
        if (fabs(r.loss - want) > 1e-5 * (1 + fabs(want)) || r.count != N)
            fail_msg("pass %d: evaluated loss %.9g over %lld, reference %.9g", pass, r.loss, (long long)r.count, want);
        lt_session_free(s);
        lt_arrays_free(at);
        if (!pass) { /* lantern eval's way in */
            lt_eval_opts eo = {spec, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}};
            lt_eval_result r2;
            if (lt_model_evaluate(m, &eo, &r2, &err) != LT_OK)
                fail_msg("%s", err.msg);
            if (fabs(r2.loss - want) > 1e-5 * (1 + fabs(want)) || r2.accuracy != r.accuracy)
                fail_msg("lt_model_evaluate: loss %.9g, reference %.9g", r2.loss, want);
        }
        /* and it trains */
        o.epochs = 10;
        o.batch = 8;
        o.schedule.lr = 1.0;
        lt_model *trained = NULL;
        if (lt_train(DATA "feed_tagger.onnx", &o, &trained, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_model_free(trained);
        if (!(e.last < 0.8 * e.first))
            fail_msg("pass %d: train loss %g -> %g", pass, e.first, e.last);
    }
    /* the per-token loss's gradients against central differences */
    {
        int64_t d2[2] = {3, T};
        double vi[3 * T], vl[3 * T];
        for (int i = 0; i < 3 * T; i++) {
            vi[i] = (double)ids[i];
            vl[i] = (double)y[i];
        }
        lt_value *iv = tu_from(LT_I64, 2, d2, vi), *lv = tu_from(LT_I64, 2, d2, vl);
        lt_grad_opts g = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0, NULL, 0, 0};
        const char *gn[2] = {"input_ids", "labels"};
        lt_value *gi[2] = {iv, lv};
        lt_gradcheck_row *rows = NULL;
        int nrows = 0;
        if (lt_grad_check(DATA "feed_tagger.onnx", &g, 2, gn, gi, 24, &rows, &nrows, &err) != LT_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(nrows, 3);
        for (int r = 0; r < nrows; r++)
            if (!(rows[r].err64 < 1e-5) || rows[r].checked < 1)
                fail_msg("%s: rel.err %g over %d", rows[r].name, rows[r].err64, rows[r].checked);
        free(rows);
        lt_value_free(iv);
        lt_value_free(lv);
    }
    /* -100 is no class when the ignore index is 3 */
    {
        lt_train_opts o = opts_for(spec, NULL);
        o.set_ignore_index = 1;
        o.ignore_index = 3;
        lt_afeed f;
        const char *names[2];
        lt_value *in[2];
        assert_int_equal(lt_afeed_plan(m, a, &o, &f, &err), LT_OK);
        td_fails(lt_afeed_make(&f, idx, 2, names, in, &err), LT_ERR_INVALID, &err, "y holds label -100",
                 "ignore index", NULL);
    }
    lt_arrays_free(a);
    lt_model_free(m);
    td_rmtree(dir);
}

/* ---- ragged trees ---- */

enum { TREES = 120 };

/* random trees of 1..7 nodes: word ids, two children each (indices into
 * the tree's own nodes), node labels word % 3 */
static void write_trees(const char *path, uint64_t seed)
{
    int64_t sp[TREES + 1], words[TREES * 7], ch[TREES * 7 * 2], y[TREES * 7];
    sp[0] = 0;
    for (int t = 0; t < TREES; t++) {
        int64_t n = 1 + (int64_t)(td_next(&seed) % 7);
        for (int64_t i = 0; i < n; i++) {
            int64_t at = sp[t] + i;
            words[at] = (int64_t)(td_next(&seed) % 12);
            ch[2 * at] = (int64_t)(td_next(&seed) % (uint64_t)n);
            ch[2 * at + 1] = (int64_t)(td_next(&seed) % (uint64_t)n);
            y[at] = words[at] % 3;
        }
        sp[t + 1] = sp[t] + n;
    }
    int64_t L = sp[TREES], d1[1] = {L}, d2[2] = {L, 2}, ds[1] = {TREES + 1};
    npz_w z = {0};
    add(&z, "words.npy", "<i8", 1, d1, words, sizeof *words * (size_t)L);
    add(&z, "words_splits.npy", "<i8", 1, ds, sp, sizeof sp);
    add(&z, "children.npy", "<i8", 2, d2, ch, sizeof *ch * (size_t)L * 2);
    add(&z, "children_splits.npy", "<i8", 1, ds, sp, sizeof sp);
    add(&z, "y.npy", "<i8", 1, d1, y, sizeof *y * (size_t)L);
    add(&z, "y_splits.npy", "<i8", 1, ds, sp, sizeof sp);
    save(&z, path);
}

static void ragged_trees_accumulate(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/trees.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    write_trees(path, 31);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(a->samples, TREES);
    assert_int_equal(lt_model_load(DATA "feed_tree.onnx", &m, &err), LT_OK);
    epochs e = {0};
    lt_train_opts o = opts_for(spec, &e);
    lt_afeed f;
    if (lt_afeed_plan(m, a, &o, &f, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(!f.batched && f.ragged);
    assert_int_equal(lt_afeed_run_size(&f, 4), 1);
    /* one tree: its rows of each array, as they are */
    const lt_ds_array *w = lt_arrays_find(a, "words"), *c = lt_arrays_find(a, "children");
    int64_t one = 17;
    const char *names[3];
    lt_value *in[3];
    assert_int_equal(lt_afeed_make(&f, &one, 1, names, in, &err), LT_OK);
    int64_t n = w->splits[18] - w->splits[17];
    assert_int_equal(in[0]->t.rank, 1);
    assert_int_equal(in[0]->t.dims[0], n);
    assert_int_equal(in[1]->t.dims[0], n);
    assert_int_equal(in[1]->t.dims[1], 2);
    assert_int_equal(in[2]->t.dims[0], n);
    assert_memory_equal(in[0]->t.data, (int64_t *)w->t.data + w->splits[17], sizeof(int64_t) * (size_t)n);
    assert_memory_equal(in[1]->t.data, (int64_t *)c->t.data + 2 * c->splits[17], sizeof(int64_t) * (size_t)n * 2);
    lt_afeed_free_values(&f, in);

    /* each of the first four trees' gradient alone (sgd at lr 1: the
     * parameter change), and its loss */
    int np = lt_model_num_params(m);
    double *want[8] = {0}, loss_mean = 0;
    lt_trainer *t = NULL;
    o.optim.kind = LT_OPTIM_SGD;
    for (int k = 0; k < 4; k++) {
        int64_t i = k;
        assert_int_equal(lt_trainer_new(DATA "feed_tree.onnx", &o, &t, &err), LT_OK);
        assert_int_equal(lt_afeed_make(&f, &i, 1, names, in, &err), LT_OK);
        double l;
        if (lt_trainer_step(t, 1.0, 3, names, in, &l, &err) != LT_OK)
            fail_msg("%s", err.msg);
        loss_mean += l / 4;
        lt_afeed_free_values(&f, in);
        lt_model *after = lt_trainer_model(t);
        for (int p = 0; p < np && p < 8; p++) {
            const lt_tensor *p0 = lt_model_param(m, p), *p1 = lt_model_param(after, p);
            if (p0->dtype != LT_F32)
                continue;
            if (!want[p])
                want[p] = calloc((size_t)p0->numel, sizeof **want);
            for (int64_t j = 0; j < p0->numel; j++)
                want[p][j] += ((const float *)p0->data)[j] - ((const float *)p1->data)[j];
        }
        lt_trainer_free(t);
    }
    /* one step of four trees at lr 0.5: the mean gradient */
    o.batch = 4;
    o.limit = 4;
    o.no_shuffle = 1;
    o.schedule.lr = 0.5;
    lt_model *trained = NULL;
    if (lt_train(DATA "feed_tree.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (fabs(e.first - loss_mean) > 1e-6 * (1 + loss_mean))
        fail_msg("step loss %.9g, mean of the trees' %.9g", e.first, loss_mean);
    for (int p = 0; p < np && p < 8; p++) {
        const lt_tensor *p0 = lt_model_param(m, p), *p1 = lt_model_param(trained, p);
        for (int64_t j = 0; want[p] && j < p0->numel; j++) {
            double w0 = ((const float *)p0->data)[j] - 0.5 * want[p][j] / 4, got = ((const float *)p1->data)[j];
            if (fabs(got - w0) > 1e-5)
                fail_msg("%s[%lld]: %.9g after the step, %.9g from the trees' mean gradient", lt_model_param_name(m, p),
                         (long long)j, got, w0);
        }
        free(want[p]);
    }
    /* the step API's accumulate / apply: the same bytes */
    assert_int_equal(lt_trainer_new(DATA "feed_tree.onnx", &o, &t, &err), LT_OK);
    td_fails(lt_trainer_apply(t, 0.5, &err), LT_ERR_INVALID, &err, "without lt_trainer_accumulate", NULL);
    for (int64_t i = 0; i < 4; i++) {
        assert_int_equal(lt_afeed_make(&f, &i, 1, names, in, &err), LT_OK);
        if (lt_trainer_accumulate(t, 3, names, in, NULL, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_afeed_free_values(&f, in);
    }
    assert_int_equal(lt_trainer_apply(t, 0.5, &err), LT_OK);
    assert_int_equal(lt_trainer_num_steps(t), 1);
    for (int p = 0; p < np; p++)
        assert_memory_equal(lt_model_param(lt_trainer_model(t), p)->data, lt_model_param(trained, p)->data,
                            lt_tensor_nbytes(lt_model_param(trained, p)));
    lt_trainer_free(t);
    lt_model_free(trained);
    lt_arrays_free(a);
    lt_model_free(m);

    /* and it learns, a tree per step and four per step */
    for (int B = 1; B <= 4; B += 3) {
        epochs e2 = {0};
        lt_train_opts o2 = opts_for(spec, &e2);
        o2.epochs = 3;
        o2.batch = B;
        o2.schedule.lr = 0.2;
        if (lt_train(DATA "feed_tree.onnx", &o2, &trained, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_model_free(trained);
        if (!(e2.last < 0.75 * e2.first))
            fail_msg("batch %d: train loss %g -> %g", B, e2.first, e2.last);
    }
    td_rmtree(dir);
}

/* A run stopped after step 5 (Ctrl-C's flag) and resumed from its
 * checkpoint ends with the bytes of one that ran through: gradient
 * accumulation over ragged trees with Adagrad's state, shuffled. */
static volatile sig_atomic_t stop_flag;

static void stop_at_5(const lt_train_progress *p, void *user)
{
    (void)user;
    if (p->global_step == 5)
        stop_flag = 1;
}

static int64_t first_step;

static void note_first(const lt_train_progress *p, void *user)
{
    (void)user;
    if (!first_step)
        first_step = p->global_step;
}

static void ragged_resume_bit_exact(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160], ck[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/trees.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    snprintf(ck, sizeof ck, "%s/ck", dir);
    assert_int_equal(mkdir(ck, 0700), 0);
    write_trees(path, 32);
    lt_err err;
    lt_model *run[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        epochs e = {0};
        lt_train_opts o = opts_for(spec, &e);
        o.epochs = 2;
        o.batch = 4;
        o.limit = 40;
        lt_optim_defaults(LT_OPTIM_ADAGRAD, &o.optim);
        o.schedule.lr = 0.1;
        o.seed = 9;
        int stopped = 0;
        if (r == 1) {
            o.checkpoint_dir = ck;
            o.stop = &stop_flag;
            o.stopped = &stopped;
            o.on_step = stop_at_5;
            stop_flag = 0;
            lt_model *part = NULL;
            if (lt_train(DATA "feed_tree.onnx", &o, &part, &err) != LT_OK)
                fail_msg("%s", err.msg);
            lt_model_free(part);
            assert_int_equal(stopped, 1);
            stop_flag = 0;
            o.on_step = note_first;
            o.resume = 1;
            first_step = 0;
        }
        if (lt_train(DATA "feed_tree.onnx", &o, &run[r], &err) != LT_OK)
            fail_msg("%s", err.msg);
        if (r == 1)
            assert_int_equal(first_step, 6); /* it went on after step 5 */
    }
    for (int p = 0; p < lt_model_num_params(run[0]); p++) {
        const lt_tensor *a = lt_model_param(run[0], p), *b = lt_model_param(run[1], p);
        assert_memory_equal(a->data, b->data, lt_tensor_nbytes(a));
    }
    lt_model_free(run[0]);
    lt_model_free(run[1]);
    td_rmtree(dir);
}

/* Sequences of any length through a time-major RNN: x ragged along time
 * (x_splits), each run one sequence as [T_i, 1, 3], a step the mean of
 * --batch sequences' gradients. */
static void ragged_sequences_time_major(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/seq.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    enum { N = 160 };
    static float x[N * 12 * 3];
    int64_t sp[N + 1], y[N];
    uint64_t seed = 8;
    sp[0] = 0;
    for (int i = 0; i < N; i++) {
        int64_t len = 3 + (int64_t)(td_next(&seed) % 10);
        double sum = 0;
        for (int64_t k = 0; k < len * 3; k++)
            x[sp[i] * 3 + k] = (float)td_uniform(&seed, -1, 1);
        for (int64_t t = 0; t < len; t++)
            sum += x[(sp[i] + t) * 3];
        y[i] = sum > 0;
        sp[i + 1] = sp[i] + len;
    }
    npz_w z = {0};
    int64_t dx[2] = {sp[N], 3}, ds[1] = {N + 1}, dy[1] = {N};
    add(&z, "x.npy", "<f4", 2, dx, x, sizeof *x * (size_t)sp[N] * 3);
    add(&z, "x_splits.npy", "<i8", 1, ds, sp, sizeof sp);
    add(&z, "y.npy", "<i8", 1, dy, y, sizeof y);
    save(&z, path);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_tm_rnn.onnx", &m, &err), LT_OK);
    epochs e = {0};
    lt_train_opts o = opts_for(spec, &e);
    lt_afeed f;
    if (lt_afeed_plan(m, a, &o, &f, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(f.batched && f.ragged);
    assert_int_equal(f.slot[0].axis, 1);
    int64_t i7 = 7;
    const char *names[2];
    lt_value *in[2];
    assert_int_equal(lt_afeed_make(&f, &i7, 1, names, in, &err), LT_OK);
    assert_int_equal(in[0]->t.dims[0], sp[8] - sp[7]);
    assert_int_equal(in[0]->t.dims[1], 1);
    assert_memory_equal(in[0]->t.data, x + sp[7] * 3, sizeof(float) * (size_t)(sp[8] - sp[7]) * 3);
    lt_afeed_free_values(&f, in);
    lt_arrays_free(a);
    lt_model_free(m);
    o.epochs = 4;
    o.batch = 8;
    lt_optim_defaults(LT_OPTIM_ADAM, &o.optim);
    o.schedule.lr = 0.01;
    lt_model *trained = NULL;
    if (lt_train(DATA "feed_tm_rnn.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(trained);
    if (!(e.last < 0.8 * e.first))
        fail_msg("train loss %g -> %g", e.first, e.last);
    td_rmtree(dir);
}

/* float64 values into a float16 input: rounded to the nearest half, and
 * it trains */
static void float16_input(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/h.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    enum { N = 96 };
    double x[N * 4];
    int64_t y[N];
    uint64_t seed = 16;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 4; k++)
            x[i * 4 + k] = td_uniform(&seed, -2, 2);
        y[i] = x[i * 4] + x[i * 4 + 1] > 0;
    }
    npz_w z = {0};
    int64_t dx[2] = {N, 4}, dy[1] = {N};
    add(&z, "x.npy", "<f8", 2, dx, x, sizeof x);
    add(&z, "y.npy", "<i8", 1, dy, y, sizeof y);
    save(&z, path);
    lt_err err;
    lt_arrays *a = NULL;
    lt_model *m = NULL;
    assert_int_equal(lt_arrays_open(path, 0, &a, &err), LT_OK);
    assert_int_equal(lt_model_load(DATA "feed_f16.onnx", &m, &err), LT_OK);
    epochs e = {0};
    lt_train_opts o = opts_for(spec, &e);
    assert_int_equal(lt_afeed_wanted(m, a, &o), 1);
    lt_afeed f;
    assert_int_equal(lt_afeed_plan(m, a, &o, &f, &err), LT_OK);
    int64_t idx[2] = {3, 50};
    const char *names[2];
    lt_value *in[2];
    assert_int_equal(lt_afeed_make(&f, idx, 2, names, in, &err), LT_OK);
    assert_int_equal(in[0]->t.dtype, LT_F16);
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 4; k++) {
            double v = x[idx[j] * 4 + k], h = lt_f16_to_f32(((uint16_t *)in[0]->t.data)[j * 4 + k]);
            assert_true(fabs(h - v) <= fabs(v) * 0x1p-11 + 1e-7); /* half an ulp of float16 */
        }
    lt_afeed_free_values(&f, in);
    lt_arrays_free(a);
    lt_model_free(m);
    o.epochs = 5;
    o.batch = 16;
    o.schedule.lr = 0.2;
    lt_model *trained = NULL;
    if (lt_train(DATA "feed_f16.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(trained);
    if (!(e.last < 0.7 * e.first))
        fail_msg("train loss %g -> %g", e.first, e.last);
    td_rmtree(dir);
}

/* ---- models PyTorch exported (models/make_feed_demos.py) ---- */

/* tiny_bert.onnx: int64 ids and mask, per-token labels (1 when the token's
 * id occurs elsewhere in its sequence, -100 on padding); tm_rnn.onnx: a
 * time-major nn.RNN. Both exported by torch 2.x; both train from data
 * written here. */
static void torch_exports_train(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    /* the checked-in models come from torch 2.x (models/make_feed_demos.py),
     * with int64 input_ids and attention_mask */
    const char *exported[2] = {LT_SOURCE_DIR "/models/tiny_bert.onnx", LT_SOURCE_DIR "/models/tm_rnn.onnx"};
    for (int k = 0; k < 2; k++) {
        lt_model *m = NULL;
        lt_err err;
        assert_int_equal(lt_model_load(exported[k], &m, &err), LT_OK);
        if (strcmp(m->producer_name, "pytorch") != 0 || m->producer_version[0] < '2' || m->producer_version[1] != '.')
            fail_msg("%s: made by %s %s, not torch 2.x", exported[k], m->producer_name, m->producer_version);
        for (int i = 0; k == 0 && i < 2; i++)
            assert_int_equal(m->main->params[i]->type.dtype, LT_I64);
        lt_model_free(m);
    }
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bert.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    enum { N = 480, S = 12 };
    static int64_t ids[N * S], mask[N * S], y[N * S];
    uint64_t seed = 404;
    for (int i = 0; i < N; i++) {
        int len = 4 + (int)(td_next(&seed) % 9);
        for (int t = 0; t < S; t++) {
            ids[i * S + t] = t < len ? 1 + (int64_t)(td_next(&seed) % 23) : 0;
            mask[i * S + t] = t < len;
        }
        for (int t = 0; t < S; t++) {
            int same = 0;
            for (int u = 0; u < len; u++)
                same += ids[i * S + u] == ids[i * S + t];
            y[i * S + t] = t < len ? same > 1 : -100;
        }
    }
    npz_w z = {0};
    int64_t d2[2] = {N, S};
    add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof ids);
    add(&z, "attention_mask.npy", "<i8", 2, d2, mask, sizeof mask);
    add(&z, "y.npy", "<i8", 2, d2, y, sizeof y);
    save(&z, path);
    lt_err err;
    epochs e = {0};
    lt_train_opts o = opts_for(spec, &e);
    o.epochs = 12;
    o.batch = 32;
    lt_optim_defaults(LT_OPTIM_ADAM, &o.optim);
    o.schedule.lr = 0.003;
    lt_model *trained = NULL;
    if (lt_train(LT_SOURCE_DIR "/models/tiny_bert.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(trained);
    print_message("tiny_bert: train loss %.4f -> %.4f over %d epochs\n", e.first, e.last, e.n);
    if (!(e.last < 0.8 * e.first))
        fail_msg("tiny_bert: train loss %g -> %g", e.first, e.last);

    snprintf(path, sizeof path, "%s/rnn.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    static float x[N * 10 * 3];
    int64_t yr[N];
    for (int i = 0; i < N; i++) {
        double sum = 0;
        for (int k = 0; k < 30; k++)
            x[i * 30 + k] = (float)td_uniform(&seed, -1, 1);
        for (int t = 0; t < 10; t++)
            sum += x[i * 30 + t * 3];
        yr[i] = sum > 0;
    }
    int64_t d3[3] = {N, 10, 3}, d1[1] = {N};
    add(&z, "x.npy", "<f4", 3, d3, x, sizeof x);
    add(&z, "y.npy", "<i8", 1, d1, yr, sizeof yr);
    save(&z, path);
    epochs e2 = {0};
    o = opts_for(spec, &e2);
    o.epochs = 4;
    o.batch = 32;
    lt_optim_defaults(LT_OPTIM_ADAM, &o.optim);
    o.schedule.lr = 0.003;
    if (lt_train(LT_SOURCE_DIR "/models/tm_rnn.onnx", &o, &trained, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(trained);
    print_message("tm_rnn: train loss %.4f -> %.4f over %d epochs\n", e2.first, e2.last, e2.n);
    if (!(e2.last < 0.6 * e2.first))
        fail_msg("tm_rnn: train loss %g -> %g", e2.first, e2.last);
    td_rmtree(dir);
}

/* ---- bad data: one line naming the array, exit 2 ---- */

/* runs lantern train MODEL on path with extra options; asserts exit 2 and
 * one stderr line holding every fragment */
static void cli_refuses(const char *model, const char *path, const char *extra, const char *frag, ...)
{
    char cmd[2048], ef[] = "/tmp/lt_arrays_errXXXXXX", msg[4096];
    close(mkstemp(ef));
    snprintf(cmd, sizeof cmd, "%s train %s --data npz=%s -o %s.onnx %s >/dev/null 2>%s", LANTERN, model, path, path,
             extra, ef);
    int st = system(cmd);
    FILE *f = fopen(ef, "r");
    size_t got = f ? fread(msg, 1, sizeof msg - 1, f) : 0;
    msg[got] = 0;
    if (f)
        fclose(f);
    unlink(ef);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 2)
        fail_msg("%s: exit %d, stderr '%s'", cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1, msg);
    char *nl = strchr(msg, '\n');
    if (!nl || nl[1])
        fail_msg("not one line: '%s'", msg);
    va_list ap;
    va_start(ap, frag);
    for (const char *s = frag; s; s = va_arg(ap, const char *))
        if (!strstr(msg, s))
            fail_msg("'%s' lacks '%s'", msg, s);
    va_end(ap);
}

/* a one-tree-array npz: words with the given splits, y plain */
static void write_split_case(const char *path, const char *descr, const void *splits, size_t sbytes, int64_t nsplits)
{
    int64_t words[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ch[18] = {0}, d1[1] = {9}, d2[2] = {9, 2}, ds[1] = {nsplits};
    int64_t good[4] = {0, 3, 5, 9}, dg[1] = {4};
    npz_w z = {0};
    add(&z, "words.npy", "<i8", 1, d1, words, sizeof words);
    add(&z, "words_splits.npy", descr, 1, ds, splits, sbytes);
    add(&z, "children.npy", "<i8", 2, d2, ch, sizeof ch);
    add(&z, "children_splits.npy", "<i8", 1, dg, good, sizeof good);
    add(&z, "y.npy", "<i8", 1, d1, words, sizeof words);
    add(&z, "y_splits.npy", "<i8", 1, dg, good, sizeof good);
    save(&z, path);
}

static void bad_data_one_line(void **state)
{
    (void)state;
    char dir[64], path[128];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.npz", dir);
    const char *tree = DATA "feed_tree.onnx", *tok = DATA "feed_tok.onnx";

    int64_t end[4] = {0, 3, 5, 8}, neg[4] = {0, 3, -5, 9}, dec[4] = {0, 5, 3, 9}, start[4] = {1, 3, 5, 9};
    write_split_case(path, "<i8", end, sizeof end, 4);
    cli_refuses(tree, path, "", "words_splits ends at 8", "words has 9 rows", NULL);
    write_split_case(path, "<i8", neg, sizeof neg, 4);
    cli_refuses(tree, path, "", "words_splits[2] is -5", "negative", NULL);
    write_split_case(path, "<i8", dec, sizeof dec, 4);
    cli_refuses(tree, path, "", "words_splits decreases at 2", NULL);
    write_split_case(path, "<i8", start, sizeof start, 4);
    cli_refuses(tree, path, "", "words_splits starts at 1", NULL);
    float fsp[4] = {0, 3, 5, 9};
    write_split_case(path, "<f4", fsp, sizeof fsp, 4);
    cli_refuses(tree, path, "", "words_splits is float32", "int64", NULL);
    int64_t three[3] = {0, 4, 9};
    write_split_case(path, "<i8", three, sizeof three, 3);
    cli_refuses(tree, path, "", "words holds 2 samples but", "3", NULL);
    /* ragged arrays that share the model's dim n but not sample 0's length
     * (words 4 rows, children 3): checked sample by sample before the
     * first step (one of length 1 would have broadcast) */
    int64_t other[4] = {0, 4, 5, 9};
    write_split_case(path, "<i8", other, sizeof other, 4);
    cli_refuses(tree, path, "", "arrays 'words' (for input 'words') and 'children' (for input 'children') give the "
                "model's dim 'n' as 4 and 3 for sample 0", NULL);

    /* a tree with no labels, or only the ignore index: its loss, a mean
     * over none, was nan, and training stopped calling it diverged */
    for (int ignored = 0; ignored < 2; ignored++) {
        int64_t words[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ch[18] = {0}, y[9] = {0, 1, 2, 1, 1, 2, 0, 1, 2};
        int64_t sp[5] = {0, 3, 3, 5, 9}, sp2[5] = {0, 3, 4, 5, 9}, d1[1] = {9}, d2[2] = {9, 2}, ds[1] = {5};
        const int64_t *splits = ignored ? sp2 : sp;
        if (ignored)
            y[3] = -100;
        npz_w z = {0};
        add(&z, "words.npy", "<i8", 1, d1, words, sizeof words);
        add(&z, "words_splits.npy", "<i8", 1, ds, splits, sizeof sp);
        add(&z, "children.npy", "<i8", 2, d2, ch, sizeof ch);
        add(&z, "children_splits.npy", "<i8", 1, ds, splits, sizeof sp);
        add(&z, "y.npy", "<i8", 1, d1, y, sizeof y);
        add(&z, "y_splits.npy", "<i8", 1, ds, splits, sizeof sp);
        save(&z, path);
        cli_refuses(tree, path, "--batch 2", ignored ? "sample 1 of 'y' holds no labels but the ignore index"
                                                     : "sample 1 of 'y' holds no labels", "would be nan", NULL);
    }

    /* ragged rows saved as Python objects, without splits */
    {
        const char hdr[] = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }";
        uint8_t npy[128] = "\x93NUMPY\x01\x00";
        size_t hl = sizeof hdr - 1, total = 128;
        npy[8] = (uint8_t)(total - 10);
        npy[9] = 0;
        memcpy(npy + 10, hdr, hl);
        memset(npy + 10 + hl, ' ', total - 11 - hl);
        npy[total - 1] = '\n';
        td_member m[2] = {{"words.npy", npy, total, 0}, {"y.npy", npy, total, 0}};
        size_t len;
        uint8_t *zb = td_zip(m, 2, 0, &len);
        td_write(path, zb, len);
        free(zb);
        cli_refuses(tree, path, "", "words.npy", "object array", "NAME_splits", NULL);
    }

    /* splits for an array that is not there */
    {
        int64_t ids[12] = {0}, y[2] = {1, 2}, sp[3] = {0, 1, 2}, d2[2] = {2, 6}, d1[1] = {2}, ds[1] = {3};
        uint8_t mask[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        npz_w z = {0};
        add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof ids);
        add(&z, "attention_mask.npy", "|b1", 2, d2, mask, sizeof mask);
        add(&z, "y.npy", "<i8", 1, d1, y, sizeof y);
        add(&z, "tokens_splits.npy", "<i8", 1, ds, sp, sizeof sp);
        save(&z, path);
        cli_refuses(tok, path, "--batch 2", "tokens_splits", "no array 'tokens'", NULL);
    }

    /* token data gone wrong: a float id array, an input without its array,
     * samples of another length, float labels, a label past the classes */
    float fids[12] = {0};
    int64_t ids[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0}, ids7[14] = {0}, y[2] = {1, 2}, y7[2] = {1, 7};
    uint8_t mask[14] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    double fy[2] = {1, 2};
    int64_t d2[2] = {2, 6}, d7[2] = {2, 7}, d1[1] = {2};
    npz_w z = {0};
    add(&z, "input_ids.npy", "<f4", 2, d2, fids, sizeof fids);
    add(&z, "attention_mask.npy", "|b1", 2, d2, mask, 12);
    add(&z, "y.npy", "<i8", 1, d1, y, sizeof y);
    save(&z, path);
    cli_refuses(tok, path, "", "array 'input_ids' is float32", "input 'input_ids' takes int64", NULL);
    add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof ids);
    add(&z, "y.npy", "<i8", 1, d1, y, sizeof y);
    save(&z, path);
    cli_refuses(tok, path, "", "no array 'attention_mask'", "input 'attention_mask'", NULL);
    add(&z, "input_ids.npy", "<i8", 2, d7, ids7, sizeof ids7);
    add(&z, "attention_mask.npy", "|b1", 2, d7, mask, 14);
    add(&z, "y.npy", "<i8", 1, d1, y, sizeof y);
    save(&z, path);
    cli_refuses(tok, path, "", "array 'input_ids' holds samples of 7", "input 'input_ids'", NULL);
    add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof ids);
    add(&z, "attention_mask.npy", "|b1", 2, d2, mask, 12);
    add(&z, "y.npy", "<f8", 1, d1, fy, sizeof fy);
    save(&z, path);
    cli_refuses(tok, path, "", "array 'y' is float64", "integer class labels", NULL);
    add(&z, "input_ids.npy", "<i8", 2, d2, ids, sizeof ids);
    add(&z, "attention_mask.npy", "|b1", 2, d2, mask, 12);
    add(&z, "y.npy", "<i8", 1, d1, y7, sizeof y7);
    save(&z, path);
    cli_refuses(tok, path, "--batch 2", "y holds label 7", "0..2", NULL);
    cli_refuses(tok, path, "--labels tags", "no array 'tags'", NULL);
    td_rmtree(dir);
}

/* ---- the step and test losses of a --log file ---- */

/* loss[step - 1] for each step row (at most max), *test the epoch row's
 * test loss (NAN without one); the number of rows read */
static int read_log(const char *log, double *loss, int max, double *test)
{
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[256];
    int rows = 0;
    *test = NAN;
    while (fgets(line, sizeof line, f)) {
        int ep, step;
        double lr, l, tl;
        if (sscanf(line, "%d,%d,%*d,%lf,%lf", &ep, &step, &lr, &l) == 4) {
            assert_true(step >= 1 && step <= max);
            loss[step - 1] = l;
            rows++;
        } else if (sscanf(line, "%d,,,%lf,%lf,%lf", &ep, &lr, &l, &tl) == 4) {
            *test = tl;
            rows++;
        }
    }
    fclose(f);
    return rows;
}

/* ---- a value every sample shares ---- */

/* feed_steps.onnx on sample i: h = x, steps times tanh(h W); its softmax
 * cross-entropy against y[i], in double */
static double steps_ce(const float *W, const float *x, int64_t y, int steps)
{
    double h[4], t[4];
    for (int c = 0; c < 4; c++)
        h[c] = x[c];
    for (int s = 0; s < steps; s++) {
        for (int c = 0; c < 4; c++) {
            double a = 0;
            for (int r = 0; r < 4; r++)
                a += h[r] * W[r * 4 + c];
            t[c] = tanh(a);
        }
        memcpy(h, t, sizeof h);
    }
    return ce(h, 4, y);
}

/* A 0-d array (a Loop's trip count beside batched samples) feeds its rank-0
 * input whole every run, in training and on the test split: each step's
 * loss is the one computed here with that count (it was refused: "steps is
 * a scalar"); a 0-d array for a batched input or for the labels, or a [1]
 * one for the count, is refused with one line */
static void whole_array_input(void **state)
{
    (void)state;
    enum { N = 32 };
    float x[N * 4];
    int64_t y[N];
    uint64_t seed = 35;
    for (int i = 0; i < N * 4; i++)
        x[i] = (float)td_uniform(&seed, -2, 2);
    for (int i = 0; i < N; i++)
        y[i] = (int64_t)(td_next(&seed) % 4);
    lt_err err;
    lt_model *m = NULL;
    assert_int_equal(lt_model_load(DATA "feed_steps.onnx", &m, &err), LT_OK);
    const float *W = param(m, "W");
    char dir[64], path[128], log[160], cmd[1024];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/s.npz", dir);
    snprintf(log, sizeof log, "%s/log.csv", dir);
    int64_t dx[2] = {N, 4}, dy[1] = {N};
    for (int steps = 0; steps <= 3; steps += 3) {
        int64_t st = steps;
        npz_w z = {0};
        add(&z, "x.npy", "<f4", 2, dx, x, sizeof x);
        add(&z, "steps.npy", "<i8", 0, NULL, &st, sizeof st);
        add(&z, "y.npy", "<i8", 1, dy, y, sizeof y);
        add(&z, "x_test.npy", "<f4", 2, dx, x, sizeof x);
        add(&z, "steps_test.npy", "<i8", 0, NULL, &st, sizeof st);
        add(&z, "y_test.npy", "<i8", 1, dy, y, sizeof y);
        save(&z, path);
        snprintf(cmd, sizeof cmd, "%s train %sfeed_steps.onnx --data npz=%s --batch 8 --lr 1e-12 --shuffle off "
                 "--log %s -o %s/out.onnx >/dev/null 2>&1", LANTERN, DATA, path, log, dir);
        assert_int_equal(system(cmd), 0);
        double l[4], tl, all = 0;
        assert_int_equal(read_log(log, l, 4, &tl), 5);
        for (int i = 0; i < N; i++)
            all += steps_ce(W, x + i * 4, y[i], steps) / N;
        for (int step = 1; step <= 4; step++) {
            double want = 0;
            for (int i = (step - 1) * 8; i < step * 8; i++)
                want += steps_ce(W, x + i * 4, y[i], steps) / 8;
            if (!(fabs(l[step - 1] - want) <= 1e-6 * fabs(want)))
                fail_msg("steps %d, step %d: loss %.9g, want %.9g", steps, step, l[step - 1], want);
        }
        if (!(fabs(tl - all) <= 1e-6 * all))
            fail_msg("steps %d: test loss %.9g, want %.9g", steps, tl, all);
    }
    lt_model_free(m);

    int64_t one[1] = {1}, three = 3;
    npz_w z = {0};
    add(&z, "x.npy", "<f4", 2, dx, x, sizeof x);
    add(&z, "steps.npy", "<i8", 1, one, &three, sizeof three);
    add(&z, "y.npy", "<i8", 1, dy, y, sizeof y);
    save(&z, path);
    cli_refuses(DATA "feed_steps.onnx", path, "", "x holds 32 samples but steps holds 1", NULL);
    add(&z, "x.npy", "<f4", 2, dx, x, sizeof x);
    add(&z, "steps.npy", "<i8", 0, NULL, &three, sizeof three);
    add(&z, "y.npy", "<i8", 0, NULL, y, sizeof *y);
    save(&z, path);
    cli_refuses(DATA "feed_steps.onnx", path, "", "array 'y' is a single value (0-d); the labels hold one per sample",
                NULL);
    float x0 = 1;
    add(&z, "x.npy", "<f4", 0, NULL, &x0, sizeof x0);
    add(&z, "steps.npy", "<i8", 0, NULL, &three, sizeof three);
    add(&z, "y.npy", "<i8", 1, dy, y, sizeof y);
    save(&z, path);
    cli_refuses(DATA "feed_steps.onnx", path, "", "array 'x' is a single value (0-d), which feeds a rank-0 input",
                "the model's input 'x' is float32[N,4]", NULL);
    td_rmtree(dir);
}

/* ---- per-pixel classes ---- */

/* feed_seg*.onnx (a 1x1 convolution, C classes, images [2, 4, W]) on
 * samples [from, from + n): the mean softmax cross-entropy of the pixels'
 * labels not -100, the classes read on axis 1 (axis1) or on the last axis,
 * in double */
static double seg_loss(const float *W, const float *b, const float *x, const int64_t *y, int C, int Wd, int from,
                       int n, bool axis1)
{
    double sum = 0;
    int counted = 0;
    for (int i = from; i < from + n; i++) {
        double z[4][4][5]; /* [class][row][col] */
        for (int c = 0; c < C; c++)
            for (int h = 0; h < 4; h++)
                for (int w = 0; w < Wd; w++)
                    z[c][h][w] = b[c] + W[c * 2] * x[((i * 2 + 0) * 4 + h) * Wd + w] +
                                 W[c * 2 + 1] * x[((i * 2 + 1) * 4 + h) * Wd + w];
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < Wd; w++) {
                int64_t lab = y[(i * 4 + h) * Wd + w];
                if (lab == -100)
                    continue;
                double row[5];
                for (int c = 0; c < (axis1 ? C : Wd); c++)
                    row[c] = axis1 ? z[c][h][w] : z[h][w][c]; /* last axis: scores [N, C, 4, W] read as rows of W */
                sum += ce(row, axis1 ? C : Wd, lab);
                counted++;
            }
    }
    return sum / counted;
}

/* A per-pixel class map [N, C, H, W] with labels [N, H, W] (segmentation,
 * as PyTorch's losses read it) trains with the classes on axis 1: the step
 * losses and the test split's are the ones computed here (it was refused,
 * "needs labels of rank 2", and where C equals W trained over the wrong
 * axis); where the labels fit both axes ([N, 4, 4, 4]) --class-axis says
 * which, and without it the run is refused with one line */
static void segmentation_classes(void **state)
{
    (void)state;
    char dir[64], path[128], log[160], cmd[1024];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/seg.npz", dir);
    snprintf(log, sizeof log, "%s/log.csv", dir);
    for (int sq = 0; sq < 2; sq++) {
        int C = sq ? 4 : 3, Wd = sq ? 4 : 5;
        const char *model = sq ? DATA "feed_seg_sq.onnx" : DATA "feed_seg.onnx";
        enum { N = 8 };
        float x[N * 2 * 4 * 5];
        int64_t y[N * 4 * 5];
        uint64_t seed = 37 + (uint64_t)sq;
        for (int i = 0; i < N * 2 * 4 * Wd; i++)
            x[i] = (float)td_uniform(&seed, -2, 2);
        for (int i = 0; i < N * 4 * Wd; i++)
            y[i] = (int64_t)(td_next(&seed) % (uint64_t)C);
        y[3] = -100;
        int64_t dx[4] = {N, 2, 4, Wd}, dy[3] = {N, 4, Wd};
        npz_w z = {0};
        add(&z, "x.npy", "<f4", 4, dx, x, sizeof *x * (size_t)(N * 2 * 4 * Wd));
        add(&z, "y.npy", "<i8", 3, dy, y, sizeof *y * (size_t)(N * 4 * Wd));
        add(&z, "x_test.npy", "<f4", 4, dx, x, sizeof *x * (size_t)(N * 2 * 4 * Wd));
        add(&z, "y_test.npy", "<i8", 3, dy, y, sizeof *y * (size_t)(N * 4 * Wd));
        save(&z, path);
        lt_err err;
        lt_model *m = NULL;
        assert_int_equal(lt_model_load(model, &m, &err), LT_OK);
        const float *W = param(m, "W"), *b = param(m, "b");
        if (sq)
            cli_refuses(model, path, "--batch 4", "labels [N,4,4] fit output 'logits' with its classes on axis 1",
                        "--class-axis 1 or --class-axis -1", NULL);
        /* the square model with --class-axis -1 and 1; the other without
         * (its labels fit axis 1 only) and with 1 */
        static const char *const given[2][2] = {{"", "--class-axis 1"}, {"--class-axis -1", "--class-axis 1"}};
        for (int k = 0; k < 2; k++) {
            const char *extra = given[sq][k];
            bool axis1 = !(sq && k == 0);
            snprintf(cmd, sizeof cmd, "%s train %s --data npz=%s --batch 4 --lr 1e-12 --shuffle off %s --log %s "
                     "-o %s/out.onnx >/dev/null 2>&1", LANTERN, model, path, extra, log, dir);
            assert_int_equal(system(cmd), 0);
            double l[2], tl;
            assert_int_equal(read_log(log, l, 2, &tl), 3);
            for (int step = 1; step <= 2; step++) {
                double want = seg_loss(W, b, x, y, C, Wd, (step - 1) * 4, 4, axis1);
                if (!(fabs(l[step - 1] - want) <= 1e-6 * want))
                    fail_msg("%s %s step %d: loss %.9g, want %.9g", model, extra, step, l[step - 1], want);
            }
            double want = seg_loss(W, b, x, y, C, Wd, 0, N, axis1);
            if (!(fabs(tl - want) <= 1e-6 * want))
                fail_msg("%s %s: test loss %.9g, want %.9g", model, extra, tl, want);
        }
        if (!sq) /* the last axis named against [N, H, W] labels: the shape wanted */
            cli_refuses(model, path, "--batch 4 --class-axis -1", "array 'y' holds labels of 4x5 per sample",
                        "so each sample needs labels of 3x4", NULL);
        lt_model_free(m);
    }
    td_rmtree(dir);
}

/* A model whose batch size is fixed (loop_state.onnx: x [4, 3]) trains on
 * whole batches only: 10 samples at --batch 4 run 2 steps, and a note says
 * that 2 samples were left out (they were dropped without a word) */
static void fixed_batch_noted(void **state)
{
    (void)state;
    char dir[64], path[128], cmd[1024], out[4096], err[4096];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/fb.npz", dir);
    float x[30], y[30];
    uint64_t seed = 39;
    for (int i = 0; i < 30; i++) {
        x[i] = (float)td_uniform(&seed, -1, 1);
        y[i] = (float)td_uniform(&seed, -1, 1);
    }
    int64_t d[2] = {10, 3};
    npz_w z = {0};
    add(&z, "x.npy", "<f4", 2, d, x, sizeof x);
    add(&z, "y.npy", "<f4", 2, d, y, sizeof y);
    save(&z, path);
    snprintf(cmd, sizeof cmd, "%s train %sloop_state.onnx --data npz=%s --batch 4 --loss mse -o %s/out.onnx", LANTERN,
             DATA, path, dir);
    if (tu_sh(cmd, out, sizeof out, err, sizeof err) != 0)
        fail_msg("%s: %s", cmd, err);
    if (!strstr(err, "the model fixes its batch size at 4, so each epoch trains on 8 of the 10 samples (the last 2 "
                     "do not fill a batch)"))
        fail_msg("no note: %s", err);
    assert_true(strstr(out, "step 1/2") || strstr(err, "step 1/2")); /* 2 steps an epoch */
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(named_inputs_take_their_types),
        cmocka_unit_test(predict_named_inputs),
        cmocka_unit_test(time_major_batch_axis),
        cmocka_unit_test(sequence_loss_skips_ignored),
        cmocka_unit_test(ragged_trees_accumulate),
        cmocka_unit_test(ragged_resume_bit_exact),
        cmocka_unit_test(ragged_sequences_time_major),
        cmocka_unit_test(float16_input),
        cmocka_unit_test(torch_exports_train),
        cmocka_unit_test(bad_data_one_line),
        cmocka_unit_test(whole_array_input),
        cmocka_unit_test(segmentation_classes),
        cmocka_unit_test(fixed_batch_noted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
