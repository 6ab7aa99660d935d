/* The losses lantern train attaches (nll, mse, bce-logits, model) and the
 * data they compare with:
 * - every loss's gradients agree with central differences in float64;
 * - the loss the training program computes equals the evaluation's
 *   independent formula on the same batch;
 * - least squares on float targets (npz) recovers the generating weights;
 *   logistic regression on 0/1 labels separates its classes;
 * - nll on a LogSoftmax output (chosen with --output) trains like
 *   softmax cross-entropy on the logits, and a model whose output is its own
 *   SoftmaxCrossEntropyLoss (--loss model) trains to the same weights. */
#include "testutil.h"
#include "train/train_feed.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

/* ---- a stored .npz written here ---- */

static void put16(FILE *f, unsigned v)
{
    fputc((int)(v & 255), f);
    fputc((int)(v >> 8 & 255), f);
}

static void put32(FILE *f, uint32_t v)
{
    put16(f, v & 0xffff);
    put16(f, v >> 16);
}

/* .npy bytes of a float32 or int64 array */
static unsigned char *npy_bytes(const char *descr, int rank, const int64_t *dims, const void *data, size_t bytes,
                                size_t *len)
{
    char hdr[256], shape[128] = "";
    size_t at = 0;
    for (int i = 0; i < rank; i++)
        at += (size_t)snprintf(shape + at, sizeof shape - at, "%lld,%s", (long long)dims[i], i + 1 < rank ? " " : "");
    int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    size_t total = 10 + (size_t)h + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hl = (size_t)h + pad + 1;
    unsigned char *p = malloc(10 + hl + bytes);
    memcpy(p, "\x93NUMPY\x01\x00", 8);
    p[8] = (unsigned char)(hl & 255);
    p[9] = (unsigned char)(hl >> 8);
    memcpy(p + 10, hdr, (size_t)h);
    memset(p + 10 + h, ' ', pad);
    p[10 + hl - 1] = '\n';
    memcpy(p + 10 + hl, data, bytes);
    *len = 10 + hl + bytes;
    return p;
}

typedef struct member {
    const char *name;
    unsigned char *data;
    size_t len;
} member;

static void write_npz(const char *path, int n, member *m)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint32_t off[8];
    for (int i = 0; i < n; i++) {
        off[i] = (uint32_t)ftell(f);
        uint32_t crc = (uint32_t)crc32(0, m[i].data, (uInt)m[i].len);
        put32(f, 0x04034b50);
        put16(f, 20), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0);
        put32(f, crc), put32(f, (uint32_t)m[i].len), put32(f, (uint32_t)m[i].len);
        put16(f, (unsigned)strlen(m[i].name)), put16(f, 0);
        fwrite(m[i].name, 1, strlen(m[i].name), f);
        fwrite(m[i].data, 1, m[i].len, f);
    }
    uint32_t cd = (uint32_t)ftell(f);
    for (int i = 0; i < n; i++) {
        uint32_t crc = (uint32_t)crc32(0, m[i].data, (uInt)m[i].len);
        put32(f, 0x02014b50);
        put16(f, 20), put16(f, 20), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0);
        put32(f, crc), put32(f, (uint32_t)m[i].len), put32(f, (uint32_t)m[i].len);
        put16(f, (unsigned)strlen(m[i].name)), put16(f, 0), put16(f, 0), put16(f, 0), put16(f, 0);
        put32(f, 0), put32(f, off[i]);
        fwrite(m[i].name, 1, strlen(m[i].name), f);
    }
    uint32_t cdlen = (uint32_t)ftell(f) - cd;
    put32(f, 0x06054b50);
    put16(f, 0), put16(f, 0), put16(f, (unsigned)n), put16(f, (unsigned)n);
    put32(f, cdlen), put32(f, cd), put16(f, 0);
    assert_int_equal(fclose(f), 0);
}

static uint64_t rng_state = 12345;

static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* ---- gradients and loss values ---- */

static lt_value *rand_tensor(lt_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    lt_value *v = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&v->t, dt, rank, dims, &err), LT_OK);
    for (int64_t i = 0; i < v->t.numel; i++)
        lt_tensor_set_f64(&v->t, i, dt == LT_I64 ? floor(lo + (hi - lo) * urand()) : lo + (hi - lo) * urand());
    return v;
}

static void fd_check(const char *model, lt_loss_kind loss, const char *output, const char *yname, lt_value *y,
                     lt_value *x)
{
    lt_grad_opts o = {loss, 0, NULL, 0, output};
    const char *names[2] = {"x", yname};
    lt_value *in[2] = {x, y};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check(model, &o, y ? 2 : 1, names, in, 24, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nrows, 4);
    for (int r = 0; r < nrows; r++) {
        if (!(rows[r].err64 < 1e-5) || rows[r].checked < 1)
            fail_msg("%s loss %d, %s: rel.err %g", model, (int)loss, rows[r].name, rows[r].err64);
    }
    free(rows);
}

static void gradients_match_differences(void **state)
{
    (void)state;
    int64_t xd[2] = {6, 784}, ld[1] = {6}, td[2] = {6, 10};
    lt_value *x = rand_tensor(LT_F32, 2, xd, 0, 1);
    lt_value *lab = rand_tensor(LT_I64, 1, ld, 0, 10);
    lt_value *t01 = rand_tensor(LT_F32, 2, td, 0, 1), *tr = rand_tensor(LT_F32, 2, td, -2, 2);
    fd_check(DATA "loss_mlp_logsm.onnx", LT_LOSS_NLL, "logp", "labels", lab, x);
    fd_check(DATA "loss_mlp.onnx", LT_LOSS_MSE, NULL, "targets", tr, x);
    fd_check(DATA "loss_mlp.onnx", LT_LOSS_BCE_LOGITS, NULL, "targets", t01, x);
    fd_check(DATA "loss_mlp_sce.onnx", LT_LOSS_MODEL, NULL, "labels", lab, x);
    lt_value_free(x);
    lt_value_free(lab);
    lt_value_free(t01);
    lt_value_free(tr);
}

/* The program's loss output on a batch against lt_feed_score's formula. */
static void program_loss_equals_formula(void **state)
{
    (void)state;
    static const struct {
        const char *model, *output;
        lt_loss_kind loss;
    } cases[] = {
        {DATA "loss_mlp.onnx", NULL, LT_LOSS_SOFTMAX_CROSS_ENTROPY},
        {DATA "loss_mlp_logsm.onnx", "logp", LT_LOSS_NLL},
        {DATA "loss_mlp.onnx", NULL, LT_LOSS_MSE},
        {DATA "loss_mlp.onnx", NULL, LT_LOSS_BCE_LOGITS},
    };
    lt_err err;
    lt_dataset *d = NULL;
    assert_int_equal(lt_dataset_open("fashion-mnist", 1, &d, &err), LT_OK);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lt_model *fwd = NULL, *prog = NULL;
        assert_int_equal(lt_model_load(cases[c].model, &fwd, &err), LT_OK);
        assert_int_equal(lt_model_load(cases[c].model, &prog, &err), LT_OK);
        lt_feed f;
        if (lt_feed_plan(fwd, d, cases[c].loss, cases[c].output, -100, &f, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_feed_batch b;
        assert_int_equal(lt_feed_batch_new(&f, d, 16, &b, &err), LT_OK);
        int64_t idx[16];
        for (int i = 0; i < 16; i++)
            idx[i] = 37 * i + 5;
        assert_int_equal(lt_dataset_gather(d, idx, 16, &b.x->t, &b.raw->t, &err), LT_OK);
        assert_int_equal(lt_feed_targets(&f, &b, &err), LT_OK);
        /* the forward output scored by the formula */
        lt_session *s = NULL;
        lt_value *out[2] = {0};
        assert_int_equal(lt_session_new(fwd, &s, &err), LT_OK);
        const char *xn = "x";
        assert_int_equal(lt_session_run(s, 1, &xn, &b.x, out, &err), LT_OK);
        double sum = 0;
        int64_t correct = 0, counted = 0;
        assert_int_equal(lt_feed_score(&f, out[f.out_index], &b, &sum, &correct, &counted, &err), LT_OK);
        lt_session_free(s);
        for (int i = 0; i < 2; i++)
            lt_value_free(out[i]);
        /* the training program's loss */
        lt_grad_opts g = {cases[c].loss, 0, NULL, 0, cases[c].output};
        assert_int_equal(lt_model_grad(prog, &g, &err), LT_OK);
        int nout = lt_model_num_outputs(prog);
        lt_value **po = calloc((size_t)nout, sizeof *po);
        const char *names[2] = {"x", f.y_name};
        lt_value *in[2] = {b.x, b.y ? b.y : b.raw};
        assert_int_equal(lt_session_new(prog, &s, &err), LT_OK);
        if (lt_session_run(s, 2, names, in, po, &err) != LT_OK)
            fail_msg("%s", err.msg);
        double L = lt_tensor_get_f64(lt_value_tensor(po[0]), 0), want = sum / 16;
        print_message("loss %d: program %.7f, formula %.7f\n", (int)cases[c].loss, L, want);
        assert_true(fabs(L - want) <= 1e-5 * (1 + fabs(want)));
        for (int i = 0; i < nout; i++)
            lt_value_free(po[i]);
        free(po);
        lt_session_free(s);
        lt_feed_batch_free(&b);
        lt_model_free(fwd);
        lt_model_free(prog);
    }
    lt_dataset_free(d);
}

/* ---- training on synthetic data ---- */

static char tmpdir[64];

static void make_regression(const char *path, const float *A, const float *c)
{
    enum { N = 512, NT = 128 };
    static float x[N + NT][8], y[N + NT][3];
    for (int i = 0; i < N + NT; i++) {
        for (int k = 0; k < 8; k++)
            x[i][k] = (float)(2 * urand() - 1);
        for (int j = 0; j < 3; j++) {
            double s = c[j];
            for (int k = 0; k < 8; k++)
                s += x[i][k] * A[k * 3 + j];
            y[i][j] = (float)s;
        }
    }
    int64_t xd[2] = {N, 8}, yd[2] = {N, 3}, xtd[2] = {NT, 8}, ytd[2] = {NT, 3};
    member m[4] = {{"x.npy", 0, 0}, {"y.npy", 0, 0}, {"x_test.npy", 0, 0}, {"y_test.npy", 0, 0}};
    m[0].data = npy_bytes("<f4", 2, xd, x, sizeof(float) * N * 8, &m[0].len);
    m[1].data = npy_bytes("<f4", 2, yd, y, sizeof(float) * N * 3, &m[1].len);
    m[2].data = npy_bytes("<f4", 2, xtd, x[N], sizeof(float) * NT * 8, &m[2].len);
    m[3].data = npy_bytes("<f4", 2, ytd, y[N], sizeof(float) * NT * 3, &m[3].len);
    write_npz(path, 4, m);
    for (int i = 0; i < 4; i++)
        free(m[i].data);
}

static const float *param(lt_model *m, const char *name)
{
    lt_module *mod = m;
    for (int p = 0; p < mod->nparams; p++)
        if (!strcmp(mod->params[p].name, name))
            return mod->params[p].data.data;
    fail_msg("no parameter %s", name);
    return NULL;
}

static void mse_recovers_linear_map(void **state)
{
    (void)state;
    float A[24], c[3] = {0.5f, -1.0f, 0.25f};
    for (int i = 0; i < 24; i++)
        A[i] = (float)(2 * urand() - 1);
    char path[128], spec[160];
    snprintf(path, sizeof path, "%s/reg.npz", tmpdir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    make_regression(path, A, c);
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = spec;
    o.loss = LT_LOSS_MSE;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.schedule.lr = 0.05;
    o.batch = 32;
    o.epochs = 30;
    lt_model *m = NULL;
    lt_err err;
    if (lt_train(DATA "linreg.onnx", &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const float *W = param(m, "W"), *b = param(m, "b");
    double worst = 0;
    for (int i = 0; i < 24; i++)
        worst = fmax(worst, fabs(W[i] - A[i]));
    for (int j = 0; j < 3; j++)
        worst = fmax(worst, fabs(b[j] - c[j]));
    lt_eval_result r;
    lt_eval_opts eo = {spec, 0, LT_LOSS_MSE, NULL, {0}};
    assert_int_equal(lt_model_evaluate(m, &eo, &r, &err), LT_OK);
    print_message("least squares: worst |W - A| %.2e, test mse %.2e\n", worst, r.loss);
    assert_true(worst < 1e-3);
    assert_true(r.loss < 1e-6);
    assert_int_equal(r.has_accuracy, 0);
    assert_int_equal(r.count, 128);
    lt_model_free(m);
}

static void bce_separates_two_classes(void **state)
{
    (void)state;
    enum { N = 600 };
    static float x[N][2];
    static int64_t y[N];
    for (int i = 0; i < N; i++) {
        y[i] = i % 2;
        x[i][0] = (float)((y[i] ? 1.0 : -1.0) + 0.6 * (2 * urand() - 1));
        x[i][1] = (float)(2 * urand() - 1);
    }
    int64_t xd[2] = {500, 2}, yd[1] = {500}, xtd[2] = {100, 2}, ytd[1] = {100};
    member m[4] = {{"x.npy", 0, 0}, {"y.npy", 0, 0}, {"x_test.npy", 0, 0}, {"y_test.npy", 0, 0}};
    m[0].data = npy_bytes("<f4", 2, xd, x, sizeof(float) * 1000, &m[0].len);
    m[1].data = npy_bytes("<i8", 1, yd, y, sizeof(int64_t) * 500, &m[1].len);
    m[2].data = npy_bytes("<f4", 2, xtd, x[500], sizeof(float) * 200, &m[2].len);
    m[3].data = npy_bytes("<i8", 1, ytd, y + 500, sizeof(int64_t) * 100, &m[3].len);
    char path[128], spec[160];
    snprintf(path, sizeof path, "%s/cls.npz", tmpdir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    write_npz(path, 4, m);
    for (int i = 0; i < 4; i++)
        free(m[i].data);
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = spec;
    o.loss = LT_LOSS_BCE_LOGITS;
    lt_optim_defaults(LT_OPTIM_ADAM, &o.optim);
    o.schedule.lr = 0.05;
    o.batch = 50;
    o.epochs = 10;
    lt_model *mm = NULL;
    lt_err err;
    if (lt_train(DATA "logreg.onnx", &o, &mm, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_eval_result r;
    lt_eval_opts eo = {spec, 0, LT_LOSS_BCE_LOGITS, NULL, {0}};
    assert_int_equal(lt_model_evaluate(mm, &eo, &r, &err), LT_OK);
    const float *W = param(mm, "W");
    print_message("logistic regression: test accuracy %.3f, loss %.3f, W = (%.2f, %.2f)\n", r.accuracy, r.loss, W[0],
                  W[1]);
    assert_true(r.has_accuracy);
    assert_true(r.accuracy >= 0.97);
    /* the informative feature dominates */
    assert_true(W[0] > 2 * fabs(W[1]));
    lt_model_free(mm);
}

static lt_model *train_small(const char *model, lt_loss_kind loss, const char *output)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.loss = loss;
    o.output = output;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim);
    o.schedule.lr = 0.05;
    o.batch = 64;
    o.limit = 1024;
    o.test_limit = 500;
    lt_model *m = NULL;
    lt_err err;
    if (lt_train(model, &o, &m, &err) != LT_OK)
        fail_msg("%s: %s", model, err.msg);
    return m;
}

static void same_weights(lt_model *a, lt_model *b, double tol)
{
    static const char *const names[] = {"W1", "b1", "W2", "b2"};
    for (int i = 0; i < 4; i++) {
        const float *p = param(a, names[i]), *q = param(b, names[i]);
        int64_t n = !strcmp(names[i], "W1") ? 784 * 32 : !strcmp(names[i], "b1") ? 32 : !strcmp(names[i], "W2") ? 320 : 10;
        double worst = 0;
        for (int64_t k = 0; k < n; k++)
            worst = fmax(worst, fabs(p[k] - q[k]));
        if (!(worst <= tol))
            fail_msg("%s differs by %g", names[i], worst);
    }
}

static void nll_and_model_loss_train_like_sce(void **state)
{
    (void)state;
    lt_model *sce = train_small(DATA "loss_mlp.onnx", LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL);
    lt_model *nll = train_small(DATA "loss_mlp_logsm.onnx", LT_LOSS_NLL, "logp");
    lt_model *own = train_small(DATA "loss_mlp_sce.onnx", LT_LOSS_MODEL, NULL);
    /* the same mathematics along different op sequences: float32 rounding only */
    same_weights(sce, nll, 1e-4);
    same_weights(sce, own, 1e-4);
    lt_eval_result r;
    lt_err err;
    lt_eval_opts eo = {"fashion-mnist", 500, LT_LOSS_NLL, "logp", {0}};
    assert_int_equal(lt_model_evaluate(nll, &eo, &r, &err), LT_OK);
    print_message("nll after 16 steps: test accuracy %.3f\n", r.accuracy);
    assert_true(r.accuracy > 0.5); /* chance is 0.1 */
    lt_model_free(sce);
    lt_model_free(nll);
    lt_model_free(own);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/lt_losses_XXXXXX");
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
        cmocka_unit_test(gradients_match_differences),
        cmocka_unit_test(program_loss_equals_formula),
        cmocka_unit_test(mse_recovers_linear_map),
        cmocka_unit_test(bce_separates_two_classes),
        cmocka_unit_test(nll_and_model_loss_train_like_sce),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
