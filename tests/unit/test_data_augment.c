/* --augment flip,crop:P (train/augment.c, the gather in dataset.c):
 * - the gathered pixels of a fixed seed equal an image padded, cropped and
 *   mirrored here step by step, with the draws computed here from the
 *   formula augment.h documents (float samples exactly; bytes with
 *   per-channel mean/std to float rounding, the padding a raw 0);
 * - every flip and offset occurs, and the draws depend on seed, epoch and
 *   sample only;
 * - training with it is reproducible bit for bit across runs and across a
 *   stop and --resume, differs from training without it, and the test
 *   figures are those of the unaugmented test split;
 * - bad lists, samples that are no images and named-array data are refused
 *   with one line, exit 2. */
#include "test_dataset.h"
#include "train/dataset_impl.h"
#include <signal.h>
#include <sys/wait.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

/* ---- the draws, from augment.h's description ---- */

static uint64_t ref_mix(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void ref_draw(bool flip_on, int P, uint64_t seed, int64_t epoch, int64_t s, int *flip, int *dy, int *dx)
{
    uint64_t st = ref_mix(ref_mix(ref_mix(seed ^ 0x6175676d656e7421ull) ^ (uint64_t)epoch) ^ (uint64_t)s);
    uint64_t r[3];
    for (int i = 0; i < 3; i++)
        r[i] = td_next(&st); /* splitmix64's stream from state st */
    *flip = flip_on && (r[0] >> 63);
    *dy = P ? (int)(r[1] % (uint64_t)(2 * P + 1)) : 0;
    *dx = P ? (int)(r[2] % (uint64_t)(2 * P + 1)) : 0;
}

/* img [C,H,W] (raw values) padded by P zeros, cropped at (dy, dx), mirrored */
static void ref_augment(const double *img, int C, int H, int W, int P, int flip, int dy, int dx, double *out)
{
    int PH = H + 2 * P, PW = W + 2 * P;
    double *pad = calloc((size_t)(C * PH * PW), sizeof *pad);
    double *crop = malloc(sizeof *crop * (size_t)(C * H * W));
    assert_non_null(pad);
    assert_non_null(crop);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                pad[(c * PH + y + P) * PW + x + P] = img[(c * H + y) * W + x];
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                crop[(c * H + y) * W + x] = pad[(c * PH + y + dy) * PW + x + dx];
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                out[(c * H + y) * W + x] = crop[(c * H + y) * W + (flip ? W - 1 - x : x)];
    free(pad);
    free(crop);
}

static void parse_rules(void **state)
{
    (void)state;
    lt_augment a;
    lt_err err;
    assert_int_equal(lt_augment_parse("flip,crop:4", &a, &err), LT_OK);
    assert_true(a.flip);
    assert_int_equal(a.crop, 4);
    assert_int_equal(lt_augment_parse("crop:2", &a, &err), LT_OK);
    assert_false(a.flip);
    assert_int_equal(a.crop, 2);
    assert_int_equal(lt_augment_parse(NULL, &a, &err), LT_OK);
    assert_false(lt_augment_on(&a));
    assert_int_equal(lt_augment_parse("none", &a, &err), LT_OK);
    assert_false(lt_augment_on(&a));
    static const char *const bad[] = {"flip,flip", "crop:0", "crop:x", "crop:", "crop:4,crop:2", "rotate",
                                      "flip,", "crop:4x", "crop:100000", "FLIP"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        lt_status s = lt_augment_parse(bad[i], &a, &err);
        td_fails(s, LT_ERR_INVALID, &err, "--augment", NULL);
    }
}

/* n images [C,H,W]: float when f, else bytes, values never 0 so padding shows */
static lt_dataset *images(int n, int C, int H, int W, bool f, const lt_dataset_opts *o, double **raw)
{
    int64_t numel = (int64_t)n * C * H * W;
    *raw = malloc(sizeof **raw * (size_t)numel);
    void *x = malloc(f ? sizeof(float) * (size_t)numel : (size_t)numel);
    int64_t *y = malloc(sizeof *y * (size_t)n);
    uint64_t s = 77;
    for (int64_t i = 0; i < numel; i++) {
        if (f) {
            float v = (float)td_uniform(&s, 0.5, 2.0);
            ((float *)x)[i] = v;
            (*raw)[i] = v;
        } else {
            uint8_t b = (uint8_t)(1 + td_next(&s) % 255);
            ((uint8_t *)x)[i] = b;
            (*raw)[i] = b;
        }
    }
    for (int i = 0; i < n; i++)
        y[i] = i % 3;
    lt_tensor xt = {f ? LT_F32 : LT_U8, 4, {n, C, H, W}, numel, x, NULL};
    lt_tensor yt = {LT_I64, 1, {n}, n, y, NULL};
    lt_dataset *d = NULL;
    lt_err err;
    if (lt_dataset_from_arrays(&xt, &yt, o, &d, &err) != LT_OK)
        fail_msg("%s", err.msg);
    free(x);
    free(y);
    return d;
}

static void exact_pixels(void **state)
{
    (void)state;
    enum { N = 40, C = 3, H = 5, W = 7, P = 3 };
    lt_err err;
    for (int f = 0; f < 2; f++) {
        lt_dataset_opts o;
        memset(&o, 0, sizeof o);
        double mean[C] = {0.2, 0.5, 0.7}, sd[C] = {0.25, 0.5, 2.0};
        if (!f) { /* bytes: per-channel mean/std, the padding a raw 0 */
            o.nmean = o.nstd = C;
            memcpy(o.mean, mean, sizeof mean);
            memcpy(o.std, sd, sizeof sd);
        }
        double *raw;
        lt_dataset *d = images(N, C, H, W, f, &o, &raw);
        lt_ds_aug aug = {{true, P}, 1234, 3};
        int64_t idx[N];
        for (int i = 0; i < N; i++)
            idx[i] = (i * 17 + 5) % N;
        lt_tensor x, y;
        td_batch_tensors(d, N, &x, &y);
        for (int par = 0; par < 2; par++) {
            assert_int_equal(lt_ds_gather_aug(d, idx, N, &x, &y, par, &aug, &err), LT_OK);
            int seen_flip[2] = {0, 0}, seen_dy[2 * P + 1] = {0}, seen_dx[2 * P + 1] = {0};
            double want[C * H * W];
            for (int i = 0; i < N; i++) {
                int fl, dy, dx;
                ref_draw(true, P, 1234, 3, idx[i], &fl, &dy, &dx);
                seen_flip[fl]++;
                seen_dy[dy]++;
                seen_dx[dx]++;
                ref_augment(raw + idx[i] * C * H * W, C, H, W, P, fl, dy, dx, want);
                const float *got = (const float *)x.data + i * C * H * W;
                for (int k = 0; k < C * H * W; k++) {
                    int c = k / (H * W);
                    double w = f ? want[k] : (want[k] / 255.0 - mean[c]) / sd[c];
                    if (f ? got[k] != (float)w : fabs(got[k] - w) > 1e-5 * (1 + fabs(w)))
                        fail_msg("float %d sample %lld (flip %d, dy %d, dx %d) value %d: %.9g, want %.9g", f,
                                 (long long)idx[i], fl, dy, dx, k, got[k], w);
                }
                assert_int_equal(((int64_t *)y.data)[i], idx[i] % 3);
            }
            /* the draws cover every choice */
            assert_true(seen_flip[0] > 0 && seen_flip[1] > 0);
            for (int k = 0; k <= 2 * P; k++)
                assert_true(seen_dy[k] > 0 || seen_dx[k] > 0);
        }
        /* another epoch, another seed: other draws; flip alone never moves rows */
        lt_ds_aug a2 = aug, a3 = aug;
        a2.epoch = 4;
        a3.seed = 1235;
        lt_tensor x2, y2, x3, y3;
        td_batch_tensors(d, N, &x2, &y2);
        td_batch_tensors(d, N, &x3, &y3);
        assert_int_equal(lt_ds_gather_aug(d, idx, N, &x2, &y2, 0, &a2, &err), LT_OK);
        assert_int_equal(lt_ds_gather_aug(d, idx, N, &x3, &y3, 0, &a3, &err), LT_OK);
        assert_true(memcmp(x.data, x2.data, lt_tensor_nbytes(&x)) != 0);
        assert_true(memcmp(x.data, x3.data, lt_tensor_nbytes(&x)) != 0);
        lt_ds_aug fl = {{true, 0}, 9, 1};
        assert_int_equal(lt_ds_gather_aug(d, idx, N, &x2, &y2, 0, &fl, &err), LT_OK);
        assert_int_equal(lt_ds_gather(d, idx, N, &x3, &y3, 0, &err), LT_OK);
        for (int i = 0; i < N; i++) {
            int fli, dy, dx;
            ref_draw(true, 0, 9, 1, idx[i], &fli, &dy, &dx);
            const float *a = (const float *)x2.data + i * C * H * W, *b = (const float *)x3.data + i * C * H * W;
            for (int k = 0; k < C * H * W; k++) {
                int xx = k % W, row = k - xx;
                assert_true(a[k] == b[row + (fli ? W - 1 - xx : xx)]);
            }
        }
        free(x.data);
        free(y.data);
        free(x2.data);
        free(y2.data);
        free(x3.data);
        free(y3.data);
        free(raw);
        lt_dataset_free(d);
    }
}

static void refuses_non_images(void **state)
{
    (void)state;
    lt_err err;
    lt_augment a = {true, 2};
    double *raw;
    lt_dataset *d = images(4, 1, 2, 3, true, NULL, &raw);
    assert_int_equal(lt_ds_aug_check(d, &a, "spec", &err), LT_OK);
    lt_dataset_free(d);
    free(raw);
    float x[4 * 12] = {1};
    int64_t y[4] = {0, 1, 0, 1};
    lt_tensor yt = {LT_I64, 1, {4}, 4, y, NULL};
    struct {
        int rank;
        int64_t dims[5];
        const char *frag;
    } cases[] = {
        {2, {4, 12}, "images [H,W] or [C,H,W]"},
        {5, {2, 1, 2, 3, 2}, "images [H,W] or [C,H,W]"},
        {4, {4, 2, 2, 3}, NULL},
        {4, {4, 6, 2, 1}, "channels last?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lt_tensor xt = {LT_F32, cases[i].rank, {0}, 48, x, NULL};
        memcpy(xt.dims, cases[i].dims, sizeof cases[i].dims);
        xt.numel = lt_shape_numel(cases[i].rank, xt.dims);
        yt.dims[0] = yt.numel = xt.dims[0];
        assert_int_equal(lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err), LT_OK);
        lt_status s = lt_ds_aug_check(d, &a, "spec", &err);
        if (cases[i].frag)
            td_fails(s, LT_ERR_INVALID, &err, "spec", cases[i].frag, NULL);
        else
            assert_int_equal(s, LT_OK);
        lt_dataset_free(d);
    }
}

/* ---- training ---- */

static volatile sig_atomic_t stop_flag;
static void stop_at_3(const lt_train_progress *p, void *user)
{
    (void)user;
    if (p->global_step == 3)
        stop_flag = 1;
}

static double last_test_loss;
static void on_epoch(const lt_epoch_result *r, void *user)
{
    (void)user;
    last_test_loss = r->test.loss;
}

static void write_images_npz(const char *path, int n, int ntest)
{
    uint8_t *x = td_bytes((size_t)(n + ntest) * 784, 256, 31);
    int64_t y[256];
    uint64_t s = 32;
    for (int i = 0; i < n + ntest; i++)
        y[i] = (int64_t)(td_next(&s) % 10);
    int64_t dx[3] = {n, 28, 28}, dy[1] = {n}, dxt[3] = {ntest, 28, 28}, dyt[1] = {ntest};
    size_t l[4];
    uint8_t *b[4] = {td_npy("|u1", 0, 3, dx, x, (size_t)n * 784, &l[0]), td_npy("<i8", 0, 1, dy, y, (size_t)n * 8, &l[1]),
                     td_npy("|u1", 0, 3, dxt, x + n * 784, (size_t)ntest * 784, &l[2]),
                     td_npy("<i8", 0, 1, dyt, y + n, (size_t)ntest * 8, &l[3])};
    td_member m[4] = {{"x.npy", b[0], l[0], 0}, {"y.npy", b[1], l[1], 0}, {"x_test.npy", b[2], l[2], 0},
                      {"y_test.npy", b[3], l[3], 0}};
    size_t zl;
    uint8_t *z = td_zip(m, 4, 0, &zl);
    td_write(path, z, zl);
    free(z);
    for (int i = 0; i < 4; i++)
        free(b[i]);
    free(x);
}

static lt_model *train(const char *spec, const char *augment, const char *ck, int stop)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.data = spec;
    o.epochs = 2;
    o.batch = 8;
    o.augment = augment;
    o.seed = 5;
    o.on_epoch = on_epoch;
    o.norm.nmean = o.norm.nstd = 1;
    o.norm.mean[0] = 0.3;
    o.norm.std[0] = 0.4;
    int stopped = 0;
    o.checkpoint_dir = ck;
    if (stop > 0) {
        stop_flag = 0;
        o.stop = &stop_flag;
        o.stopped = &stopped;
        o.on_step = stop_at_3;
    } else if (ck && stop == 0) {
        o.resume = 1;
    }
    lt_model *m = NULL;
    lt_err err;
    if (lt_train(MODELS "mlp.onnx", &o, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (stop > 0)
        assert_int_equal(stopped, 1);
    return m;
}

static bool same_params(const lt_model *a, const lt_model *b)
{
    for (int p = 0; p < lt_model_num_params(a); p++) {
        const lt_tensor *x = lt_model_param(a, p), *y = lt_model_param(b, p);
        if (memcmp(x->data, y->data, lt_tensor_nbytes(x)) != 0)
            return false;
    }
    return true;
}

static void training_reproducible(void **state)
{
    (void)state;
    char dir[64], path[128], spec[160], ck[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/img.npz", dir);
    snprintf(spec, sizeof spec, "npz=%s", path);
    snprintf(ck, sizeof ck, "%s/ck", dir);
    assert_int_equal(mkdir(ck, 0700), 0);
    write_images_npz(path, 48, 16);
    lt_model *a = train(spec, "flip,crop:4", NULL, -1);
    double test_a = last_test_loss;
    lt_model *b = train(spec, "flip,crop:4", NULL, -1);
    lt_model *plain = train(spec, NULL, NULL, -1);
    assert_true(same_params(a, b));
    assert_false(same_params(a, plain));
    /* the test split is scored unaugmented: lt_model_evaluate agrees */
    lt_eval_opts eo = {spec, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}};
    eo.norm.nmean = eo.norm.nstd = 1;
    eo.norm.mean[0] = 0.3;
    eo.norm.std[0] = 0.4;
    lt_eval_result r;
    lt_err err;
    assert_int_equal(lt_model_evaluate(a, &eo, &r, &err), LT_OK);
    assert_true(fabs(r.loss - test_a) <= 1e-9 * fabs(test_a));
    /* stopped after step 3 and resumed: the same bytes */
    lt_model *part = train(spec, "flip,crop:4", ck, 1);
    lt_model_free(part);
    lt_model *c = train(spec, "flip,crop:4", ck, 0);
    assert_true(same_params(a, c));
    lt_model_free(a);
    lt_model_free(b);
    lt_model_free(c);
    lt_model_free(plain);
    td_rmtree(dir);
}

/* runs cmd; asserts exit 2 and one stderr line holding frag */
static void cli_refuses(const char *cmd, const char *frag, const char *frag2)
{
    char full[4096], ef[] = "/tmp/lt_aug_errXXXXXX", msg[4096];
    close(mkstemp(ef));
    snprintf(full, sizeof full, "%s >/dev/null 2>%s", cmd, ef);
    int st = system(full);
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
    if (!strstr(msg, frag) || (frag2 && !strstr(msg, frag2)))
        fail_msg("'%s' lacks '%s' or '%s'", msg, frag, frag2 ? frag2 : "");
}

static void cli_bad_uses(void **state)
{
    (void)state;
    char dir[64], path[128], csv[128], cmd[2048];
    td_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/img.npz", dir);
    write_images_npz(path, 16, 4);
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx --data npz=%s --augment flip,spin -o %s/o.onnx", LANTERN, MODELS,
             path, dir);
    cli_refuses(cmd, "--augment flip,spin", "flip, crop:P");
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx --data npz=%s --augment crop:0 -o %s/o.onnx", LANTERN, MODELS, path,
             dir);
    cli_refuses(cmd, "--augment crop:0", "1..");
    /* flat samples are no images */
    snprintf(csv, sizeof csv, "%s/t.csv", dir);
    FILE *f = fopen(csv, "w");
    for (int i = 0; i < 8; i++) {
        for (int k = 0; k < 784; k++)
            fprintf(f, "%d,", (i + k) % 5);
        fprintf(f, "%d\n", i % 2);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx --data csv=%s --augment flip -o %s/o.onnx", LANTERN, MODELS, csv,
             dir);
    cli_refuses(cmd, "t.csv", "the samples are 784");
    /* named arrays are fed as they are: int64 tokens for tiny_bert */
    snprintf(cmd, sizeof cmd, "%s train %slinreg.onnx --data npz=%s --labels y --augment flip -o %s/o.onnx", LANTERN,
             LT_SOURCE_DIR "/tests/data/", path, dir);
    cli_refuses(cmd, "--augment", "by name");
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_rules),
        cmocka_unit_test(exact_pixels),
        cmocka_unit_test(refuses_non_images),
        cmocka_unit_test(training_reproducible),
        cmocka_unit_test(cli_bad_uses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
