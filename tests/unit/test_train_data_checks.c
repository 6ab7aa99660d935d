/* What lantern train checks of a model and its data before it trains, on
 * the models of tests/data/make_input_defaults.py and img_rgb.onnx, with
 * data written here:
 * - initializers the file also lists as graph inputs (IR 3, torch's
 *   keep_initializers_as_inputs) train as the weights they are, step for
 *   step as the same model written without them;
 * - samples holding a model input's values in another layout (an image
 *   stored HxWxC for a CxHxW input) are refused, not read as other pixels;
 * - a test CSV whose header orders the training file's columns otherwise is
 *   read by name (case aside); one naming other columns by position, unless
 *   a shared name stands elsewhere (refused);
 * - named arrays that disagree on a dim their inputs share, or that hold no
 *   samples, are refused before the first step (the test split's too);
 * - a nan in a weight to train is named, not reported as divergence;
 * - a Loop whose state starts from a frozen initializer trains the rest. */
#include "test_dataset.h"
#include <math.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

static void write_npy_f32(const char *path, int rank, const int64_t *dims, const float *v)
{
    size_t n = 1, len;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    uint8_t *b = td_npy("<f4", 0, rank, dims, v, n * sizeof *v, &len);
    td_write(path, b, len);
    free(b);
}

static void write_npy_i64(const char *path, int64_t n, const int64_t *v)
{
    size_t len;
    uint8_t *b = td_npy("<i8", 0, 1, &n, v, (size_t)n * sizeof *v, &len);
    td_write(path, b, len);
    free(b);
}

static int steps_seen;
static void count_step(const lt_train_progress *p, void *user)
{
    (void)p;
    (void)user;
    steps_seen++;
}

static lt_train_opts sgd(const char *spec, int64_t batch)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = spec;
    o.batch = batch;
    o.no_shuffle = 1;
    o.schedule.lr = 0.2;
    o.on_step = count_step;
    return o;
}

static const lt_tensor *named(const lt_model *m, const char *name)
{
    for (int i = 0; i < lt_model_num_params(m); i++)
        if (!strcmp(lt_model_param_name(m, i), name))
            return lt_model_param(m, i);
    fail_msg("no parameter %s", name);
    return NULL;
}

/* lt_train refuses spec on model: the message holds want, no step ran */
static void refused(const char *model, const lt_train_opts *o, const char *want)
{
    lt_err err;
    lt_model *m = NULL;
    steps_seen = 0;
    lt_status st = lt_train(model, o, &m, &err);
    lt_model_free(m);
    if (st != LT_ERR_INVALID || !strstr(err.msg, want))
        fail_msg("%s on %s: status %d, '%s' (wanted '%s')", model, o->data, st, st ? err.msg : "", want);
    assert_int_equal(steps_seen, 0);
}

/* dir/x.npy: n rows of f seeded uniform floats in [lo, hi]; dir/y.npy: the
 * labels i % 3; spec gets "npy=dir/x.npy,dir/y.npy" */
static void write_xy(const char *dir, int64_t n, int64_t f, double lo, double hi, uint64_t seed, char *spec,
                     size_t len)
{
    char xp[128], yp[128];
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/y.npy", dir);
    float *x = malloc(sizeof *x * (size_t)(n * f));
    int64_t *y = malloc(sizeof *y * (size_t)n), dx[2] = {n, f};
    assert_true(x && y);
    for (int64_t i = 0; i < n * f; i++)
        x[i] = (float)td_uniform(&seed, lo, hi);
    for (int64_t i = 0; i < n; i++)
        y[i] = i % 3;
    write_npy_f32(xp, 2, dx, x);
    write_npy_i64(yp, n, y);
    free(x);
    free(y);
    snprintf(spec, len, "npy=%s,%s", xp, yp);
}

static void initializers_listed_as_inputs_train(void **state)
{
    (void)state;
    char dir[64], spec[300];
    td_tmpdir(dir, sizeof dir);
    write_xy(dir, 16, 4, -2, 2, 5, spec, sizeof spec);
    lt_train_opts o = sgd(spec, 4);
    lt_err err;
    lt_model *plain = NULL, *inputs = NULL, *before = NULL;
    assert_int_equal(lt_model_load(DATA "defaults_inputs.onnx", &before, &err), LT_OK);
    if (lt_train(DATA "defaults_plain.onnx", &o, &plain, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_train(DATA "defaults_inputs.onnx", &o, &inputs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *names[] = {"W1", "b1", "W2", "b2"};
    for (int k = 0; k < 4; k++) {
        const lt_tensor *a = named(plain, names[k]), *b = named(inputs, names[k]), *b0 = named(before, names[k]);
        assert_int_equal(a->numel, b->numel);
        double moved = 0, diff = 0;
        for (int64_t i = 0; i < a->numel; i++) {
            moved = fmax(moved, fabs((double)((float *)b->data)[i] - ((float *)b0->data)[i]));
            diff = fmax(diff, fabs((double)((float *)a->data)[i] - ((float *)b->data)[i]));
        }
        if (!(moved > 1e-4) || diff > 1e-6)
            fail_msg("%s: moved %g by training, %g from the plain model's", names[k], moved, diff);
    }
    lt_model_free(plain);
    lt_model_free(inputs);
    lt_model_free(before);
    td_rmtree(dir);
}

static void sample_layout_checked(void **state)
{
    (void)state;
    char dir[64], xp[128], yp[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/y.npy", dir);
    float x[6 * 192];
    int64_t y[6];
    uint64_t seed = 9;
    for (int i = 0; i < 6 * 192; i++)
        x[i] = (float)td_uniform(&seed, 0, 1);
    for (int i = 0; i < 6; i++)
        y[i] = i % 3;
    write_npy_i64(yp, 6, y);
    snprintf(spec, sizeof spec, "npy=%s,%s", xp, yp);
    lt_train_opts o = sgd(spec, 6);
    /* img_rgb.onnx takes x [N,3,8,8] */
    const int64_t hwc[4] = {6, 8, 8, 3}, odd[3] = {6, 8, 24};
    write_npy_f32(xp, 4, hwc, x);
    refused(DATA "img_rgb.onnx", &o, "8x8x3: as many values, laid out otherwise");
    write_npy_f32(xp, 3, odd, x);
    refused(DATA "img_rgb.onnx", &o, "laid out otherwise");
    /* the input's own layout, flat samples, a leading dim of 1, and
     * neighbouring dims merged or split (the same values in the same order)
     * all feed */
    const int64_t chw[4] = {6, 3, 8, 8}, flat[2] = {6, 192}, one[5] = {6, 1, 3, 8, 8}, rows[3] = {6, 3, 64},
                  merged[3] = {6, 24, 8};
    const int64_t *ok[5] = {chw, flat, one, rows, merged};
    const int rk[5] = {4, 2, 5, 3, 3};
    for (int i = 0; i < 5; i++) {
        write_npy_f32(xp, rk[i], ok[i], x);
        lt_err err;
        lt_model *m = NULL;
        if (lt_train(DATA "img_rgb.onnx", &o, &m, &err) != LT_OK)
            fail_msg("layout %d: %s", i, err.msg);
        lt_model_free(m);
    }
    td_rmtree(dir);
}

/* lantern predict feeds the samples as training does: another layout is
 * refused, and each sample's class is the argmax of the model's own scores
 * for it (5 of 6 samples: the batch of 5 taken from the start) */
static void predict_checks_layout(void **state)
{
    (void)state;
    char dir[64], xp[128], yp[128], spec[600];
    td_tmpdir(dir, sizeof dir);
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/y.npy", dir);
    float x[6 * 192];
    int64_t y[6];
    uint64_t seed = 11;
    for (int i = 0; i < 6 * 192; i++)
        x[i] = (float)td_uniform(&seed, -1, 1);
    for (int i = 0; i < 6; i++)
        y[i] = (i * 2) % 3;
    write_npy_i64(yp, 6, y);
    snprintf(spec, sizeof spec, "npy=%s,%s,%s,%s", xp, yp, xp, yp);
    lt_err err;
    lt_model *m = NULL;
    assert_int_equal(lt_model_load(DATA "img_rgb.onnx", &m, &err), LT_OK);
    lt_eval_opts eo = {spec, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0};
    lt_prediction pred[6];
    int64_t n = 0;
    const int64_t hwc[4] = {6, 8, 8, 3}, chw[4] = {6, 3, 8, 8};
    write_npy_f32(xp, 4, hwc, x);
    assert_int_equal(lt_model_predict(m, &eo, 5, pred, &n, &err), LT_ERR_INVALID);
    if (!strstr(err.msg, "laid out otherwise"))
        fail_msg("%s", err.msg);
    write_npy_f32(xp, 4, chw, x);
    if (lt_model_predict(m, &eo, 5, pred, &n, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 5);
    lt_session *s = NULL;
    lt_value *in = lt_value_new_tensor(), *out = NULL;
    assert_non_null(in);
    assert_int_equal(lt_tensor_alloc(&in->t, LT_F32, 4, chw, &err), LT_OK);
    memcpy(in->t.data, x, sizeof x);
    const char *name = "x";
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    assert_int_equal(lt_session_run(s, 1, &name, &in, &out, &err), LT_OK);
    const float *z = out->t.data;
    for (int i = 0; i < 5; i++) {
        int best = 0;
        for (int c = 1; c < 3; c++)
            best = z[i * 3 + c] > z[i * 3 + best] ? c : best;
        assert_int_equal(pred[i].sample, i);
        assert_int_equal(pred[i].predicted, best);
        assert_int_equal(pred[i].truth, y[i]);
    }
    /* a label the 3 scores do not cover */
    y[4] = 3;
    write_npy_i64(yp, 6, y);
    assert_int_equal(lt_model_predict(m, &eo, 5, pred, &n, &err), LT_ERR_INVALID);
    if (!strstr(err.msg, "sample 4 has label 3"))
        fail_msg("%s", err.msg);
    lt_value_free(in);
    lt_value_free(out);
    lt_session_free(s);
    lt_model_free(m);
    td_rmtree(dir);
}

static void write_text(const char *path, const char *text) { td_write(path, text, strlen(text)); }

/* The test split of spec (label_column NULL: the last) reads as the
 * samples 10..30 and 40..60 with the labels 1 and 0. */
static void test_split_reads(const char *spec, const char *label_column)
{
    lt_dataset_opts lo = {0};
    lo.label_column = label_column;
    lt_dataset *d = NULL;
    lt_err err;
    if (lt_dataset_open_opts(spec, 1, &lo, &d, &err) != LT_OK)
        fail_msg("%s: %s", spec, err.msg);
    lt_value *x = NULL, *y = NULL;
    const int64_t shape[2] = {2, 3};
    assert_int_equal(lt_dataset_batch(d, 0, 2, 2, shape, &x, &y, &err), LT_OK);
    const float want[6] = {10, 20, 30, 40, 50, 60};
    assert_memory_equal(x->t.data, want, sizeof want);
    assert_int_equal(((int64_t *)y->t.data)[0], 1);
    assert_int_equal(((int64_t *)y->t.data)[1], 0);
    lt_value_free(x);
    lt_value_free(y);
    lt_dataset_free(d);
}

static void test_csv_columns_by_name(void **state)
{
    (void)state;
    char dir[64], tr[128], te[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(tr, sizeof tr, "%s/train.csv", dir);
    snprintf(te, sizeof te, "%s/test.csv", dir);
    write_text(tr, "a,b,label,c\n1,2,0,3\n4,5,1,6\n");
    /* the same rows with the columns in another order */
    write_text(te, "c,label,a,b\n30,1,10,20\n60,0,40,50\n");
    snprintf(spec, sizeof spec, "csv=%s,%s", tr, te);
    test_split_reads(spec, "label");
    /* the label as the last column by default: the test file's last is c */
    write_text(tr, "a,b,c,label\n1,2,3,0\n4,5,6,1\n");
    write_text(te, "label,c,b,a\n1,30,20,10\n0,60,50,40\n");
    test_split_reads(spec, NULL);
    /* names differing in case only: the same columns, reordered */
    write_text(te, "LABEL,C,B,A\n1,30,20,10\n0,60,50,40\n");
    test_split_reads(spec, NULL);
    /* other names: read by position */
    write_text(te, "w,x,y,target\n10,20,30,1\n40,50,60,0\n");
    test_split_reads(spec, NULL);
    lt_dataset *d = NULL;
    lt_err err;
    /* a name the training file has, at another place among other names:
     * neither order can be trusted; refused naming both headers */
    write_text(te, "b,w,x,label\n1,2,3,0\n");
    assert_int_equal(lt_dataset_open(spec, 1, &d, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "b, w, x, label"));
    assert_non_null(strstr(err.msg, "a, b, c, label"));
    /* no header in the test file: read by position */
    write_text(te, "10,20,30,1\n");
    assert_int_equal(lt_dataset_open(spec, 1, &d, &err), LT_OK);
    lt_dataset_free(d);
    /* a test file the spec names must exist */
    snprintf(spec, sizeof spec, "csv=%s,%s/none.csv", tr, dir);
    assert_int_equal(lt_dataset_has_split(spec, 1), 1);
    assert_int_not_equal(lt_dataset_open(spec, 1, &d, &err), LT_OK);
    assert_non_null(strstr(err.msg, "none.csv"));
    td_rmtree(dir);
}

static void add_f32(td_member *m, int *n, const char *name, int rank, const int64_t *dims, uint64_t seed)
{
    size_t count = 1, len;
    for (int i = 0; i < rank; i++)
        count *= (size_t)dims[i];
    float *v = malloc(count * sizeof *v + 1);
    for (size_t i = 0; i < count; i++)
        v[i] = (float)td_uniform(&seed, -1, 1);
    uint8_t *b = td_npy("<f4", 0, rank, dims, v, count * sizeof *v, &len);
    free(v);
    m[*n] = (td_member){name, b, len, 0};
    (*n)++;
}

static void add_labels(td_member *m, int *n, const char *name, int64_t count)
{
    int64_t v[16];
    size_t len;
    for (int64_t i = 0; i < count; i++)
        v[i] = i % 3;
    m[*n] = (td_member){name, td_npy("<i8", 0, 1, &count, v, (size_t)count * sizeof *v, &len), len, 0};
    (*n)++;
}

static void save_npz(const char *path, td_member *m, int n)
{
    size_t len;
    uint8_t *b = td_zip(m, n, 0, &len);
    td_write(path, b, len);
    free(b);
    for (int i = 0; i < n; i++)
        free((void *)m[i].data);
}

/* path: arrays a and b of shapes da, db [N,seq,2] with labels y, and when
 * dat is given the test split's a_test, b_test (dat, dbt) and y_test */
static void pair_npz(const char *path, const int64_t *da, const int64_t *db, const int64_t *dat, const int64_t *dbt)
{
    td_member m[8];
    int n = 0;
    add_f32(m, &n, "a.npy", 3, da, 1);
    add_f32(m, &n, "b.npy", 3, db, 2);
    add_labels(m, &n, "y.npy", da[0]);
    if (dat) {
        add_f32(m, &n, "a_test.npy", 3, dat, 3);
        add_f32(m, &n, "b_test.npy", 3, dbt, 4);
        add_labels(m, &n, "y_test.npy", dat[0]);
    }
    save_npz(path, m, n);
}

static void named_arrays_checked_first(void **state)
{
    (void)state;
    char dir[64], path[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/d.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    lt_train_opts o = sgd(spec, 2);
    /* seq_pair.onnx: a, b [N,seq,2] */
    const int64_t a[3] = {4, 5, 2}, at[3] = {2, 5, 2}, bt[3] = {2, 7, 2}, b6[3] = {4, 6, 2}, none[3] = {0, 5, 2};
    pair_npz(path, a, a, at, bt);
    refused(DATA "seq_pair.onnx", &o, "give the model's dim 'seq' as 5 and 7");
    /* training arrays that disagree */
    pair_npz(path, a, b6, NULL, NULL);
    refused(DATA "seq_pair.onnx", &o, "give the model's dim 'seq' as 5 and 6");
    /* no samples: the training split, then the test split */
    pair_npz(path, none, none, NULL, NULL);
    refused(DATA "seq_pair.onnx", &o, "the training arrays hold no samples");
    pair_npz(path, a, a, none, none);
    refused(DATA "seq_pair.onnx", &o, "the test arrays hold no samples");
    /* agreeing arrays train */
    pair_npz(path, a, a, NULL, NULL);
    lt_err err;
    lt_model *t = NULL;
    steps_seen = 0;
    if (lt_train(DATA "seq_pair.onnx", &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(steps_seen, 2);
    lt_model_free(t);
    td_rmtree(dir);
}

static void nan_weight_named(void **state)
{
    (void)state;
    char dir[64], model[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(model, sizeof model, "%s/m.onnx", dir);
    lt_err err;
    lt_model *m = NULL;
    assert_int_equal(lt_model_load(DATA "defaults_plain.onnx", &m, &err), LT_OK);
    float *w = named(m, "W2")->data;
    w[4] = NAN;
    assert_int_equal(lt_model_export(m, DATA "defaults_plain.onnx", model, &err), LT_OK);
    lt_model_free(m);
    write_xy(dir, 8, 4, -1, 1, 3, spec, sizeof spec);
    lt_train_opts o = sgd(spec, 4);
    refused(model, &o, "initializer 'W2' holds nan (element 4)");
    /* --init random replaces it */
    o.init_random = 1;
    m = NULL;
    if (lt_train(model, &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_model_free(m);
    td_rmtree(dir);
}

/* A Loop whose state starts from an initializer kept fixed: the weights the
 * body mixes in train, the start stays as it was, and no gradient is asked
 * of it */
static void frozen_loop_start(void **state)
{
    (void)state;
    char dir[64], spec[300];
    td_tmpdir(dir, sizeof dir);
    write_xy(dir, 8, 3, -1, 1, 17, spec, sizeof spec);
    lt_train_opts o = sgd(spec, 4);
    const char *frozen[] = {"h0"};
    o.freeze = frozen;
    o.nfreeze = 1;
    lt_err err;
    lt_model *before = NULL, *after = NULL;
    assert_int_equal(lt_model_load(DATA "loop_state.onnx", &before, &err), LT_OK);
    steps_seen = 0;
    if (lt_train(DATA "loop_state.onnx", &o, &after, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(steps_seen, 2);
    const lt_tensor *h0 = named(before, "h0"), *h1 = named(after, "h0");
    assert_memory_equal(h0->data, h1->data, (size_t)h0->numel * sizeof(float));
    const lt_tensor *w0 = named(before, "W"), *w1 = named(after, "W");
    assert_memory_not_equal(w0->data, w1->data, (size_t)w0->numel * sizeof(float));
    lt_model_free(before);
    lt_model_free(after);
    td_rmtree(dir);
}

static lt_eval_result last_test;
static void keep_test(const lt_epoch_result *r, void *user)
{
    (void)user;
    last_test = r->test;
}

/* lt_model_evaluate with the ignore index training used scores the test
 * split as training's last epoch did */
static void evaluate_with_ignore_index(void **state)
{
    (void)state;
    char dir[64], tr[128], te[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(tr, sizeof tr, "%s/train.csv", dir);
    snprintf(te, sizeof te, "%s/test.csv", dir);
    char rows[4096];
    size_t at = 0;
    uint64_t seed = 23;
    for (int r = 0; r < 24; r++) {
        for (int c = 0; c < 4; c++)
            at += (size_t)snprintf(rows + at, sizeof rows - at, "%.4f,", td_uniform(&seed, -1, 1));
        at += (size_t)snprintf(rows + at, sizeof rows - at, "%d\n", r % 3);
    }
    write_text(tr, rows);
    write_text(te, rows);
    snprintf(spec, sizeof spec, "csv=%s,%s", tr, te);
    lt_train_opts o = sgd(spec, 8);
    o.set_ignore_index = 1;
    o.ignore_index = 2;
    o.on_epoch = keep_test;
    lt_err err;
    lt_model *m = NULL;
    if (lt_train(DATA "defaults_plain.onnx", &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(last_test.count, 24);
    lt_eval_opts eo = {spec, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0, 1, 2};
    lt_eval_result with, without;
    assert_int_equal(lt_model_evaluate(m, &eo, &with, &err), LT_OK);
    assert_float_equal(with.loss, last_test.loss, 1e-9);
    assert_float_equal(with.accuracy, last_test.accuracy, 1e-12);
    eo.set_ignore_index = 0;
    assert_int_equal(lt_model_evaluate(m, &eo, &without, &err), LT_OK);
    assert_true(fabs(without.loss - with.loss) > 1e-6);
    lt_model_free(m);
    td_rmtree(dir);
}

/* CSV data (read as float32) feeds a float64 model widened, in training,
 * evaluation and prediction: the float64 model trains as its float32 twin
 * does, to float32 rounding, under softmax-cross-entropy and mse. */
/* dir/train.csv: 64 rows of 4 seeded features in [-1, 1] (plus lift on
 * the label's own column) and a label of 3 classes; spec gets csv=F,F */
static void write_class_csv(const char *dir, uint64_t seed, double lift, char *spec, size_t len)
{
    char tr[128], rows[8192];
    snprintf(tr, sizeof tr, "%s/train.csv", dir);
    size_t at = 0;
    for (int r = 0; r < 64; r++) {
        int label = (r * 7) % 3;
        for (int c = 0; c < 4; c++)
            at += (size_t)snprintf(rows + at, sizeof rows - at, "%.4f,", td_uniform(&seed, -1, 1) + lift * (c == label));
        at += (size_t)snprintf(rows + at, sizeof rows - at, "%d\n", label);
    }
    write_text(tr, rows);
    snprintf(spec, len, "csv=%s,%s", tr, tr);
}

static void float64_model_from_csv(void **state)
{
    (void)state;
    char dir[64], spec[300];
    td_tmpdir(dir, sizeof dir);
    write_class_csv(dir, 41, 0, spec, sizeof spec);
    for (int mse = 0; mse < 2; mse++) {
        lt_train_opts o = sgd(spec, 32);
        o.epochs = 2;
        if (mse)
            o.loss = LT_LOSS_MSE;
        lt_err err;
        lt_model *m64 = NULL, *m32 = NULL;
        if (lt_train(DATA "mlp_f64.onnx", &o, &m64, &err) != LT_OK)
            fail_msg("%s", err.msg);
        if (lt_train(DATA "mlp_f32.onnx", &o, &m32, &err) != LT_OK)
            fail_msg("%s", err.msg);
        const char *names[] = {"W1", "b1", "W2", "b2"};
        for (int k = 0; k < 4; k++) {
            const lt_tensor *a = named(m64, names[k]), *b = named(m32, names[k]);
            assert_int_equal(a->dtype, LT_F64);
            double diff = 0;
            for (int64_t i = 0; i < a->numel; i++)
                diff = fmax(diff, fabs(lt_tensor_get_f64(a, i) - lt_tensor_get_f64(b, i)));
            if (diff > 1e-5)
                fail_msg("%s: float64 and float32 training differ by %g", names[k], diff);
        }
        lt_eval_opts eo = {spec, 0, o.loss, NULL, {0}, 0, 0, 0};
        lt_eval_result r64, r32;
        assert_int_equal(lt_model_evaluate(m64, &eo, &r64, &err), LT_OK);
        assert_int_equal(lt_model_evaluate(m32, &eo, &r32, &err), LT_OK);
        assert_int_equal(r64.count, 64);
        assert_float_equal(r64.loss, r32.loss, 1e-5);
        lt_model_free(m64);
        lt_model_free(m32);
    }
    td_rmtree(dir);
}

/* A float16 output (a torch.autocast export: float32 weights, the product
 * in float16) trains with a test split scored each epoch, against class
 * labels and against one-hot float16 rows under mse, and evaluates. */
static void half_output_scored(void **state)
{
    (void)state;
    char dir[64], spec[300];
    td_tmpdir(dir, sizeof dir);
    write_class_csv(dir, 43, 1, spec, sizeof spec);
    for (int mse = 0; mse < 2; mse++) {
        lt_train_opts o = sgd(spec, 16);
        o.epochs = 3;
        o.on_epoch = keep_test;
        if (mse)
            o.loss = LT_LOSS_MSE;
        last_test.count = 0;
        lt_err err;
        lt_model *m = NULL, *before = NULL;
        if (lt_train(DATA "autocast_mlp.onnx", &o, &m, &err) != LT_OK)
            fail_msg("%s: %s", mse ? "mse" : "softmax-cross-entropy", err.msg);
        assert_int_equal(last_test.count, 64);
        assert_true(isfinite(last_test.loss) && last_test.loss > 0);
        assert_int_equal(lt_model_load(DATA "autocast_mlp.onnx", &before, &err), LT_OK);
        assert_true(fabs(lt_tensor_get_f64(named(m, "W"), 0) - lt_tensor_get_f64(named(before, "W"), 0)) > 1e-4);
        lt_eval_opts eo = {spec, 0, o.loss, NULL, {0}, 0, 0, 0};
        lt_eval_result r;
        assert_int_equal(lt_model_evaluate(m, &eo, &r, &err), LT_OK);
        assert_float_equal(r.loss, last_test.loss, 1e-9);
        lt_model_free(m);
        lt_model_free(before);
    }
    td_rmtree(dir);
}

/* A weight also held as its folded transpose with a dim of 1 (W.t().
 * unsqueeze(0) as an exporter folds it) trains as the one weight: as the
 * model that computes the copy with Transpose and Unsqueeze, and the
 * written copy is the trained weight's transpose */
static void folded_unsqueezed_transpose_tied(void **state)
{
    (void)state;
    char dir[64], xp[128], yp[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/t.npy", dir);
    float x[8 * 6], t[8 * 5];
    int64_t dx[2] = {8, 6}, dt[2] = {8, 5};
    uint64_t seed = 31;
    for (int i = 0; i < 8 * 6; i++)
        x[i] = (float)td_uniform(&seed, -1, 1);
    for (int i = 0; i < 8 * 5; i++)
        t[i] = (float)td_uniform(&seed, -1, 1);
    write_npy_f32(xp, 2, dx, x);
    write_npy_f32(yp, 2, dt, t);
    snprintf(spec, sizeof spec, "npy=%s,%s", xp, yp);
    lt_train_opts o = sgd(spec, 4);
    o.loss = LT_LOSS_MSE;
    lt_err err;
    lt_model *folded = NULL, *ops = NULL;
    if (lt_train(DATA "unsq_folded.onnx", &o, &folded, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_train(DATA "unsq_ops.onnx", &o, &ops, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_tensor *w = named(folded, "W"), *w2 = named(ops, "W");
    for (int64_t i = 0; i < w->numel; i++)
        assert_float_equal(((float *)w->data)[i], ((float *)w2->data)[i], 1e-6);
    char out[128];
    snprintf(out, sizeof out, "%s/o.onnx", dir);
    assert_int_equal(lt_model_export(folded, DATA "unsq_folded.onnx", out, &err), LT_OK);
    lt_model *back = NULL;
    assert_int_equal(lt_model_load(out, &back, &err), LT_OK);
    const lt_tensor *c = named(back, "Wt1"), *wb = named(back, "W");
    for (int r = 0; r < 6; r++)
        for (int k = 0; k < 5; k++)
            assert_true(((float *)c->data)[k * 6 + r] == ((float *)wb->data)[r * 5 + k]);
    lt_model_free(back);
    lt_model_free(folded);
    lt_model_free(ops);
    td_rmtree(dir);
}

int main(void)
{
    lt_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float64_model_from_csv),
        cmocka_unit_test(half_output_scored),
        cmocka_unit_test(initializers_listed_as_inputs_train),
        cmocka_unit_test(sample_layout_checked),
        cmocka_unit_test(predict_checks_layout),
        cmocka_unit_test(test_csv_columns_by_name),
        cmocka_unit_test(named_arrays_checked_first),
        cmocka_unit_test(nan_weight_named),
        cmocka_unit_test(frozen_loop_start),
        cmocka_unit_test(evaluate_with_ignore_index),
        cmocka_unit_test(folded_unsqueezed_transpose_tied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
