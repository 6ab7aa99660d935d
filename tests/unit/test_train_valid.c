/* Validation in lantern train (lt_train_opts.val_split, --val-split):
 * - the held-out samples are a seeded fraction of the training split: the
 *   same for a seed, left out of the epoch's steps, for x / y data and for
 *   ragged trees fed one at a time with --batch accumulation;
 * - --save-best hands back the epoch with the best validation figure (its
 *   test loss, evaluated again, is the one reported for that epoch), and a
 *   run stopped and resumed from its checkpoint keeps that epoch's weights;
 * - --early-stop N ends the run after N epochs without a better figure;
 * - the CLI prints the figures beside the test ones, writes them to the CSV
 *   and the plot, and refuses bad values and --save-best / --early-stop
 *   without validation data with one line and exit 2. */
#include "test_dataset.h"
#include <signal.h>
#include <sys/wait.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"
#define DATA LT_SOURCE_DIR "/tests/data/"

enum { MAX_EPOCHS = 16 };

/* mnist=DIR: small seeded IDX files (tu_write_idx_split), quick to read */
static char data_dir[64], data_spec[128];

typedef struct record {
    int n;
    lt_epoch_result r[MAX_EPOCHS];
    int64_t steps;         /* steps per epoch, from the progress */
    int64_t first_global;  /* the first step reported (1-based) */
    int64_t resumed_step;  /* as the first step reported it */
    int64_t stop_at;       /* > 0: set the stop flag after this global step */
} record;

static volatile sig_atomic_t stop_flag;

static void on_epoch(const lt_epoch_result *r, void *user)
{
    record *rec = user;
    if (rec->n < MAX_EPOCHS)
        rec->r[rec->n++] = *r;
}

static void on_step(const lt_train_progress *p, void *user)
{
    record *rec = user;
    rec->steps = p->steps;
    if (!rec->first_global) {
        rec->first_global = p->global_step;
        rec->resumed_step = p->resumed_step;
    }
    if (rec->stop_at > 0 && p->global_step == rec->stop_at)
        stop_flag = 1;
}

static lt_train_opts opts(const char *data, record *rec)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = data;
    o.on_epoch = on_epoch;
    o.on_step = on_step;
    o.user = rec;
    return o;
}

static lt_model *train(const char *model, const lt_train_opts *o)
{
    lt_err err;
    lt_model *m = NULL;
    if (lt_train(model, o, &m, &err) != LT_OK)
        fail_msg("%s: %s", model, err.msg);
    return m;
}

/* ---- the split ---- */

static void split_is_seeded(void **state)
{
    (void)state;
    record a = {0}, b = {0}, c = {0}, none = {0};
    lt_train_opts o = opts(data_spec, &a);
    o.limit = 400;
    o.test_limit = 100;
    o.epochs = 2;
    o.val_split = 0.25;
    o.seed = 3;
    lt_model_free(train(MODELS "mlp.onnx", &o));
    o.user = &b;
    lt_model_free(train(MODELS "mlp.onnx", &o));
    o.user = &c;
    o.seed = 4;
    lt_model_free(train(MODELS "mlp.onnx", &o));
    o.user = &none;
    o.val_split = 0;
    lt_model_free(train(MODELS "mlp.onnx", &o));
    assert_int_equal(a.n, 2);
    /* 100 of 400 held out: 300 train in ceil(300 / 64) steps, not 7 */
    assert_int_equal(a.steps, 5);
    assert_int_equal(none.steps, 7);
    assert_int_equal(none.r[0].val.count, 0);
    for (int e = 0; e < 2; e++) {
        assert_int_equal(a.r[e].val.count, 100);
        assert_true(a.r[e].val.has_accuracy);
        assert_true(isfinite(a.r[e].val.loss) && a.r[e].val.loss > 0);
        /* the same seed: the same split, the same figures to the bit */
        assert_memory_equal(&a.r[e].val.loss, &b.r[e].val.loss, sizeof(double));
        assert_memory_equal(&a.r[e].train_loss, &b.r[e].train_loss, sizeof(double));
    }
    /* another seed holds out other samples */
    assert_true(a.r[0].val.loss != c.r[0].val.loss);
}

enum { TREES = 120 };

/* random trees of 1..7 nodes (word ids, two children each, node labels
 * word % 3) as a ragged npz */
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
    td_member m[6];
    const char *names[6] = {"words.npy", "words_splits.npy", "children.npy", "children_splits.npy", "y.npy",
                            "y_splits.npy"};
    const void *data[6] = {words, sp, ch, sp, y, sp};
    size_t bytes[6] = {sizeof *words * (size_t)L, sizeof sp, sizeof *ch * (size_t)L * 2, sizeof sp,
                       sizeof *y * (size_t)L, sizeof sp};
    const int64_t *dims[6] = {d1, ds, d2, ds, d1, ds};
    int ranks[6] = {1, 1, 2, 1, 1, 1};
    for (int i = 0; i < 6; i++) {
        size_t len;
        uint8_t *b = td_npy("<i8", 0, ranks[i], dims[i], data[i], bytes[i], &len);
        m[i] = (td_member){names[i], b, len, 0};
    }
    size_t len;
    uint8_t *z = td_zip(m, 6, 0, &len);
    td_write(path, z, len);
    free(z);
    for (int i = 0; i < 6; i++)
        free((void *)m[i].data);
}

/* Trees fed one at a time, four per step: the split holds out whole trees,
 * scores them node by node, the same for a seed. */
static void ragged_trees_validate(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/trees.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    write_trees(path, 77);
    record a = {0}, b = {0};
    lt_train_opts o = opts(spec, &a);
    o.epochs = 2;
    o.batch = 4;
    o.val_split = 0.2;
    o.schedule.lr = 0.2;
    lt_model_free(train(DATA "feed_tree.onnx", &o));
    o.user = &b;
    lt_model_free(train(DATA "feed_tree.onnx", &o));
    assert_int_equal(a.n, 2);
    assert_int_equal(a.steps, 24); /* 96 trees of 120 in steps of 4 */
    for (int e = 0; e < 2; e++) {
        assert_int_equal(a.r[e].val.count, 24);
        assert_true(a.r[e].val.has_accuracy);
        assert_true(a.r[e].val.accuracy >= 0 && a.r[e].val.accuracy <= 1);
        assert_memory_equal(&a.r[e].val.loss, &b.r[e].val.loss, sizeof(double));
    }
    assert_true(a.r[1].val.loss < a.r[0].val.loss);
    td_rmtree(dir);
}

/* ---- the best epoch ---- */

static void save_best_returns_best(void **state)
{
    (void)state;
    record a = {0};
    lt_train_opts o = opts(data_spec, &a);
    o.limit = 600;
    o.test_limit = 200;
    o.epochs = 4;
    o.batch = 32;
    o.val_split = 0.2;
    o.save_best = 1;
    o.seed = 5;
    o.schedule.lr = 0.05;
    lt_model *m = train(MODELS "mlp.onnx", &o);
    assert_int_equal(a.n, 4);
    /* the best so far, by strict improvement of the accuracy */
    int best = 0;
    for (int e = 0; e < a.n; e++) {
        if (e == 0 || a.r[e].val.accuracy > a.r[best].val.accuracy)
            best = e;
        assert_int_equal(a.r[e].best_epoch, best + 1);
        assert_true(a.r[e].best_value == a.r[best].val.accuracy);
    }
    /* this run's best is not its last epoch, so the weights handed back are
     * not the last ones: their test loss is the best epoch's */
    assert_true(best + 1 < a.n);
    lt_eval_opts eo = {data_spec, 200, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0};
    lt_eval_result r;
    lt_err err;
    assert_int_equal(lt_model_evaluate(m, &eo, &r, &err), LT_OK);
    if (fabs(r.loss - a.r[best].test.loss) > 1e-9 * fabs(r.loss))
        fail_msg("test loss %.12g; epoch %d (best) reported %.12g, the last %.12g", r.loss, best + 1,
                 a.r[best].test.loss, a.r[a.n - 1].test.loss);
    lt_model_free(m);
}

/* Stopped in epoch 3 (the best was epoch 2) and resumed from the checkpoint:
 * the same weights as a run that went through; the resumed run says where
 * it picked up. */
static void resume_keeps_best(void **state)
{
    (void)state;
    char dir[64];
    td_tmpdir(dir, sizeof dir);
    record full = {0}, part = {0}, rest = {0};
    lt_train_opts o = opts(data_spec, &full);
    o.limit = 600;
    o.test_limit = 200;
    o.epochs = 4;
    o.batch = 32;
    o.val_split = 0.2;
    o.save_best = 1;
    o.seed = 5;
    o.schedule.lr = 0.05;
    lt_model *want = train(MODELS "mlp.onnx", &o);
    assert_int_equal(full.r[3].best_epoch, 2);
    int stopped = 0;
    o.checkpoint_dir = dir;
    o.stop = &stop_flag;
    o.stopped = &stopped;
    o.user = &part;
    part.stop_at = 2 * 15 + 4; /* 15 steps an epoch: inside epoch 3 */
    stop_flag = 0;
    lt_model *m = train(MODELS "mlp.onnx", &o);
    lt_model_free(m);
    assert_int_equal(stopped, 1);
    assert_int_equal(part.n, 2);
    stop_flag = 0;
    o.resume = 1;
    o.user = &rest;
    m = train(MODELS "mlp.onnx", &o);
    assert_int_equal(rest.first_global, 35);
    assert_int_equal(rest.resumed_step, 34);
    assert_int_equal(rest.n, 2);
    assert_int_equal(rest.r[1].best_epoch, 2);
    for (int p = 0; p < lt_model_num_params(m); p++) {
        const lt_tensor *a = lt_model_param(want, p), *b = lt_model_param(m, p);
        assert_memory_equal(a->data, b->data, lt_tensor_nbytes(a));
    }
    lt_model_free(m);
    lt_model_free(want);
    td_rmtree(dir);
}

/* At a learning rate too small to change a prediction the accuracy stays
 * where it is: no epoch after the first is better. */
static void early_stop_counts_epochs(void **state)
{
    (void)state;
    record a = {0};
    lt_train_opts o = opts(data_spec, &a);
    o.limit = 300;
    o.test_limit = 50;
    o.epochs = 10;
    o.val_split = 0.3;
    o.early_stop = 2;
    o.schedule.lr = 1e-12;
    lt_model_free(train(MODELS "mlp.onnx", &o));
    assert_int_equal(a.n, 3);
    assert_int_equal(a.r[2].best_epoch, 1);
    assert_false(a.r[0].stop_early || a.r[1].stop_early);
    assert_true(a.r[2].stop_early);
    /* and without validation data it is refused */
    lt_err err;
    lt_model *m = NULL;
    o.val_split = 0;
    td_fails(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID, &err, "validation", NULL);
    o.val_split = 1.5;
    td_fails(lt_train(MODELS "mlp.onnx", &o, &m, &err), LT_ERR_INVALID, &err, "(0, 1)", NULL);
    assert_null(m);
}

/* ---- the command ---- */

/* a file's text, NUL-terminated */
static char *text_of(const char *path)
{
    size_t len;
    uint8_t *d = td_read(path, &len);
    char *t = malloc(len + 1);
    assert_non_null(t);
    memcpy(t, d, len);
    t[len] = 0;
    free(d);
    return t;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void cli_prints_and_logs(void **state)
{
    (void)state;
    char dir[64], cmd[2048], out[16384], err[4096];
    td_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             "%s train %smlp.onnx --data %s --limit 600 --test-limit 200 --epochs 4 --batch 32 "
             "--lr 0.05 --seed 5 --val-split 0.2 --save-best --log %s/log.csv --plot %s/p.svg "
             "-o %s/best.onnx",
             LANTERN, MODELS, data_spec, dir, dir, dir);
    int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_non_null(strstr(out, "epoch 1/4: train loss "));
    assert_non_null(strstr(out, ", val loss "));
    assert_non_null(strstr(out, ", val accuracy "));
    assert_non_null(strstr(out, "(120 val samples, best so far)"));
    if (!strstr(out, "the weights of epoch 2 of 4, the best validation accuracy ("))
        fail_msg("no line naming the best epoch: %s", out);
    /* the last line: the test accuracy of the epoch written, epoch 2's */
    const char *e2 = strstr(out, "epoch 2/4: ");
    assert_non_null(e2);
    double acc2 = -1, last = -2;
    const char *ta = strstr(e2, "test accuracy ");
    assert_non_null(ta);
    assert_int_equal(sscanf(ta, "test accuracy %lf", &acc2), 1);
    const char *tl = strstr(out, "\ntest accuracy: ");
    assert_non_null(tl);
    assert_int_equal(sscanf(tl, "\ntest accuracy: %lf", &last), 1);
    assert_true(fabs(acc2 - last) < 1e-9);
    /* the CSV has the two columns, filled on the epoch rows */
    char path[160];
    snprintf(path, sizeof path, "%s/log.csv", dir);
    char *csv = text_of(path);
    assert_true(strncmp(csv, "epoch,step,global_step,lr,train_loss,test_loss,test_accuracy,seconds,val_loss,"
                             "val_accuracy\n", 91) == 0);
    int epoch_rows = 0;
    for (char *l = strchr(csv, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        int commas = 0;
        for (char *c = l + 1; *c && *c != '\n'; c++)
            commas += *c == ',';
        assert_int_equal(commas, 9);
        if (strstr(l + 1, ",,,") == strchr(l + 1, ',')) { /* an epoch row: "E,,,lr,..." */
            epoch_rows++;
            char *end = strchr(l + 1, '\n');
            assert_true(end[-1] != ','); /* val_accuracy is there */
        }
    }
    assert_int_equal(epoch_rows, 4);
    free(csv);
    snprintf(path, sizeof path, "%s/p.svg", dir);
    char *svg = text_of(path);
    assert_non_null(strstr(svg, "class=\"epoch-val\""));
    assert_non_null(strstr(svg, "class=\"epoch-val-accuracy\""));
    assert_non_null(strstr(svg, "epoch validation loss"));
    free(svg);
    /* stopped early: the line says how many epochs ran of those asked */
    snprintf(cmd, sizeof cmd,
             "%s train %smlp.onnx --data %s --limit 600 --test-limit 200 --epochs 8 --batch 32 "
             "--lr 0.05 --seed 5 --val-split 0.2 --save-best --early-stop 2 -o %s/early.onnx",
             LANTERN, MODELS, data_spec, dir);
    rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    if (!strstr(out, "the weights of epoch 2 of 4 run (stopped early; 8 asked), the best validation accuracy ("))
        fail_msg("no line naming the best epoch of an early stop: %s", out);
    td_rmtree(dir);
}

/* lantern train MODEL ... with extra options: exit 2, one line on stderr
 * holding frag, nothing written */
static void refused(const char *extra, const char *frag)
{
    char dir[64], cmd[2048], out[8192], err[4096], path[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx --data %s --limit 200 --test-limit 20 %s -o %s/m.onnx", LANTERN,
             MODELS, data_spec, extra, dir);
    int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 2 || count_lines(err) != 1 || !strstr(err, frag))
        fail_msg("%s: exit %d, want 2 and one line with '%s': %s", extra, rc, frag, err);
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    assert_int_equal(access(path, F_OK), -1);
    td_rmtree(dir);
}

static void cli_refuses(void **state)
{
    (void)state;
    refused("--val-split 0", "--val-split wants a fraction between 0 and 1");
    refused("--val-split 1", "--val-split wants a fraction between 0 and 1");
    refused("--val-split 1.5", "got '1.5'");
    refused("--val-split -0.2", "got '-0.2'");
    refused("--val-split abc", "got 'abc'");
    refused("--save-best", "--save-best needs validation data");
    refused("--early-stop 3", "--early-stop needs validation data");
    refused("--val-split 0.2 --early-stop 0", "--early-stop");
    /* 0.001 of 200 samples is none */
    refused("--val-split 0.001", "holds out 0");
}

static int setup(void **state)
{
    (void)state;
    td_tmpdir(data_dir, sizeof data_dir);
    snprintf(data_spec, sizeof data_spec, "mnist=%s", data_dir);
    return tu_write_idx_split(data_dir, "train", 600, 31) || tu_write_idx_split(data_dir, "t10k", 200, 32) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    td_rmtree(data_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_is_seeded),        cmocka_unit_test(ragged_trees_validate),
        cmocka_unit_test(save_best_returns_best), cmocka_unit_test(resume_keeps_best),
        cmocka_unit_test(early_stop_counts_epochs), cmocka_unit_test(cli_prints_and_logs),
        cmocka_unit_test(cli_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
