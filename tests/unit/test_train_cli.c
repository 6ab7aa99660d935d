/* `lantern train`, `eval` and `export` end to end: a short run writes a model
 * that `eval` scores as `train` reported, progress and the CSV log appear,
 * and bad usage, data or models get one line on stderr and exit 2. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static const char *last_line(const char *s)
{
    size_t n = strlen(s);
    if (n && s[n - 1] == '\n')
        n--;
    while (n && s[n - 1] != '\n')
        n--;
    return s + n;
}

static void train_then_eval(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_train_cliXXXXXX", cmd[2048], out[8192], err[4096], model[256], log[256];
    assert_non_null(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/trained.onnx", dir);
    snprintf(log, sizeof log, "%s/log.csv", dir);
    snprintf(cmd, sizeof cmd,
             "%s train %smlp.onnx --data fashion-mnist --optimizer adamw --lr 0.001 --batch 64 --epochs 2 "
             "--schedule step --step-size 10 --gamma 0.5 --clip-norm 5 --limit 1280 --test-limit 500 --seed 3 "
             "--freeze fc1.bias --log %s -o %s",
             LANTERN, MODELS, log, model);
    int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    /* not a terminal: plain lines, one per epoch with test figures, the accuracy last */
    assert_null(strchr(out, '\r'));
    assert_non_null(strstr(out, "epoch 1/2: train loss "));
    assert_non_null(strstr(out, "epoch 2/2: train loss "));
    const char *last = last_line(out);
    double acc = -1;
    if (sscanf(last, "test accuracy: %lf", &acc) != 1)
        fail_msg("last line: '%s'", last);
    assert_true(acc > 0.6 && acc <= 1);
    /* the CSV: a header, 2 x 20 step rows and 2 epoch rows */
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char csv[16384];
    size_t n = fread(csv, 1, sizeof csv - 1, f);
    csv[n] = 0;
    fclose(f);
    assert_int_equal(count_lines(csv), 43);
    assert_true(strncmp(csv, "epoch,step,global_step,lr,train_loss,test_loss,test_accuracy,seconds\n", 69) == 0);
    /* eval on the same test images agrees to the printed digits */
    snprintf(cmd, sizeof cmd, "%s eval %s --data fashion-mnist --limit 500", LANTERN, model);
    assert_int_equal(tu_sh(cmd, out, sizeof out, err, sizeof err), 0);
    char want[64];
    snprintf(want, sizeof want, "accuracy: %.4f\n", acc);
    assert_string_equal(last_line(out), want);
    assert_non_null(strstr(out, "loss: "));
    unlink(model);
    unlink(log);
    rmdir(dir);
}

static void export_weights_from_npy(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_train_cliXXXXXX", cmd[2048], out[4096], err[4096], model[256], npy[256];
    assert_non_null(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/out.onnx", dir);
    snprintf(npy, sizeof npy, "%s/fc3.bias.npy", dir);
    float b[10];
    for (int i = 0; i < 10; i++)
        b[i] = 0.125f * (float)i - 0.5f;
    lt_tensor t = {LT_F32, 1, {10}, 10, b, NULL};
    lt_value *v;
    lt_err e;
    assert_int_equal(lt_value_from_tensor(&t, &v, &e), LT_OK);
    assert_int_equal(lt_value_save_npy(v, npy, &e), LT_OK);
    lt_value_free(v);
    snprintf(cmd, sizeof cmd, "%s export %smlp.onnx --weights %s -o %s", LANTERN, MODELS, dir, model);
    if (tu_sh(cmd, out, sizeof out, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_non_null(strstr(out, "1 parameter(s)"));
    lt_model *m;
    assert_int_equal(lt_model_load(model, &m, &e), LT_OK);
    for (int p = 0; p < m->nparams; p++)
        if (!strcmp(m->params[p].name, "fc3.bias"))
            assert_memory_equal(m->params[p].data.data, b, sizeof b);
    lt_model_free(m);
    /* a file of the wrong shape is refused: fc3.bias's 10 values as fc2.bias */
    char wrong[256];
    snprintf(wrong, sizeof wrong, "%s/fc2.bias.npy", dir);
    assert_int_equal(rename(npy, wrong), 0);
    unlink(model);
    assert_int_equal(tu_sh(cmd, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "fc2.bias"));
    assert_non_null(strstr(err, "fc2.bias.npy"));
    assert_non_null(strstr(err, "the new value is float32[10]"));
    assert_int_not_equal(access(model, F_OK), 0);
    unlink(wrong);
    /* a folder naming no parameter: refused, nothing written */
    assert_int_equal(tu_sh(cmd, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "names a parameter"));
    assert_int_not_equal(access(model, F_OK), 0);
    rmdir(dir);
}

/* Each case: exit 2 and exactly one line on stderr containing `want`. */
static void bad_input(void **state)
{
    (void)state;
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"train " MODELS "mlp.onnx --data cifar-10 -o /tmp/lt_never.onnx", "cifar-10"},
        {"train " MODELS "mlp.onnx --data fashion-mnist=/nonexistent -o /tmp/lt_never.onnx", "/nonexistent"},
        {"train " LT_SOURCE_DIR "/tests/data/ad_if.onnx --data fashion-mnist -o /tmp/lt_never.onnx", "28x28"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --optimizer rmsprop -o /tmp/lt_never.onnx", "rmsprop"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --lr -1 -o /tmp/lt_never.onnx", "--lr"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --freeze fc9.weight -o /tmp/lt_never.onnx", "fc9.weight"},
        {"train " MODELS "mlp.onnx --data fashion-mnist -o /nonexistent/dir/out.onnx", "/nonexistent/dir"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --loss hinge -o /tmp/lt_never.onnx", "hinge"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --device cuda -o /tmp/lt_never.onnx", "--device"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --output probs -o /tmp/lt_never.onnx", "probs"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --loss model -o /tmp/lt_never.onnx", "--loss model"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --std 0 -o /tmp/lt_never.onnx", "std"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --plot /nonexistent/dir/p.svg -o /tmp/lt_never.onnx",
         "/nonexistent/dir"},
        {"eval " MODELS "mlp.onnx --data fashion-mnist --loss hinge", "hinge"},
        {"train /nonexistent.onnx --data fashion-mnist -o /tmp/lt_never.onnx", "/nonexistent.onnx"},
        {"eval " LT_SOURCE_DIR "/tests/data/ad_if.onnx --data fashion-mnist", "28x28"},
        {"eval " MODELS "mlp.onnx --data fashion-mnist=/nonexistent", "/nonexistent"},
        {"export " MODELS "mlp.onnx -o /nonexistent/dir/out.onnx", "/nonexistent/dir"},
        /* options for another kind of data would be ignored */
        {"train " MODELS "mlp.onnx --data fashion-mnist --label-column 3 -o /tmp/lt_never.onnx", "--label-column"},
        {"train " MODELS "mlp.onnx --data fashion-mnist --labels y2 -o /tmp/lt_never.onnx", "--labels"},
        {"eval " MODELS "mlp.onnx --data fashion-mnist --label-column species", "--label-column"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[2048], out[8192], err[4096];
        snprintf(cmd, sizeof cmd, "%s %s", LANTERN, cases[i].args);
        int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
        if (rc != 2 || count_lines(err) != 1 || !strstr(err, cases[i].want))
            fail_msg("'%s': exit %d, stderr '%s'", cases[i].args, rc, err);
    }
    /* usage without -o or --data: exit 2 */
    char out[8192], err[4096];
    assert_int_equal(tu_sh(LANTERN " train " MODELS "mlp.onnx --data fashion-mnist", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(tu_sh(LANTERN " train " MODELS "mlp.onnx -o /tmp/x.onnx", out, sizeof out, err, sizeof err), 2);
    assert_int_not_equal(access("/tmp/lt_never.onnx", F_OK), 0);
}

/* IDX files written gzip-compressed: n images of rows x cols (magic 0x803)
 * and m labels (0x801); magic_fix replaces the image magic's third byte. */
static void write_idx(const char *dir, const char *pre, int n, int rows, int cols, int m, int image_type)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, pre);
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    unsigned char h[16] = {0, 0, (unsigned char)image_type, 3, 0, 0, (unsigned char)(n >> 8), (unsigned char)n,
                           0, 0, 0, (unsigned char)rows, 0, 0, 0, (unsigned char)cols};
    gzwrite(g, h, 16);
    for (int i = 0; i < n * rows * cols; i++)
        gzputc(g, (i * 37 + 11) & 255);
    gzclose(g);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, pre);
    g = gzopen(path, "wb");
    assert_non_null(g);
    unsigned char l[8] = {0, 0, 8, 1, 0, 0, (unsigned char)(m >> 8), (unsigned char)m};
    gzwrite(g, l, 8);
    for (int i = 0; i < m; i++)
        gzputc(g, i % 10);
    gzclose(g);
}

/* gzip cut in half: the stream ends without its trailer */
static void truncate_file(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
}

static void bad_data(void **state)
{
    (void)state;
    char base[] = "/tmp/lt_bad_dataXXXXXX", dir[200], cmd[2048], out[8192], err[4096], path[400];
    assert_non_null(mkdtemp(base));
    static const struct {
        const char *name, *want;
    } cases[] = {
        {"truncated", "truncated"},
        {"magic", "magic"},
        {"count", "labels"},
        {"fit", "does not take"},
        {"ok", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(dir, sizeof dir, "%s/%s", base, cases[i].name);
        assert_int_equal(mkdir(dir, 0777), 0);
        int rows = !strcmp(cases[i].name, "fit") ? 20 : 28;
        write_idx(dir, "train", 300, rows, rows, !strcmp(cases[i].name, "count") ? 299 : 300,
                  !strcmp(cases[i].name, "magic") ? 0x09 : 0x08);
        write_idx(dir, "t10k", 100, rows, rows, 100, 0x08);
        if (!strcmp(cases[i].name, "truncated")) {
            snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
            truncate_file(path);
        }
        snprintf(cmd, sizeof cmd, "%s train %smlp.onnx --data mnist=%s --batch 50 -o %s/out.onnx", LANTERN, MODELS, dir,
                 dir);
        int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
        snprintf(path, sizeof path, "%s/out.onnx", dir);
        if (!cases[i].want) {
            /* the same files, intact, train */
            if (rc != 0 || access(path, F_OK) != 0)
                fail_msg("intact data: exit %d, stderr '%s'", rc, err);
            continue;
        }
        if (rc != 2 || count_lines(err) != 1 || !strstr(err, cases[i].want) || access(path, F_OK) == 0)
            fail_msg("%s: exit %d, stderr '%s'", cases[i].name, rc, err);
        print_message("%s: %s", cases[i].name, err);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    assert_int_equal(system(cmd), 0);
}

/* --plot writes an SVG next to the model; --loss and --output reach the trainer */
static void plot_and_losses(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_train_plotXXXXXX", cmd[2048], out[8192], err[4096], svg[256];
    assert_non_null(mkdtemp(dir));
    snprintf(svg, sizeof svg, "%s/curves.svg", dir);
    snprintf(cmd, sizeof cmd,
             "%s train " LT_SOURCE_DIR "/tests/data/loss_mlp_logsm.onnx --data fashion-mnist --loss nll --output logp "
             "--device cpu --batch 64 --epochs 2 --limit 640 --test-limit 300 --plot %s -o %s/m.onnx",
             LANTERN, svg, dir);
    int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_non_null(strstr(out, "nll loss"));
    assert_true(strncmp(last_line(out), "test accuracy: ", 15) == 0);
    FILE *f = fopen(svg, "r");
    assert_non_null(f);
    char head[4096];
    size_t got = fread(head, 1, sizeof head - 1, f);
    head[got] = 0;
    fclose(f);
    assert_non_null(strstr(head, "<svg"));
    /* mse on class labels compares the logits with one-hot rows */
    snprintf(cmd, sizeof cmd,
             "%s eval %s/m.onnx --data fashion-mnist --loss mse --output logits --limit 200", LANTERN, dir);
    rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_non_null(strstr(out, "accuracy: "));
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* predict: names for Fashion-MNIST; labels the output has no score for,
 * and a count of 0, one line and exit 2 */
static void predict(void **state)
{
    (void)state;
    char out[8192], err[4096];
    int rc = tu_sh(LANTERN " predict " MODELS "cnn.onnx --count 5", out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    assert_int_equal(count_lines(out), 7);
    assert_non_null(strstr(out, "Ankle boot"));
    assert_true(strncmp(last_line(out), "accuracy on 5 test samples: ", 28) == 0);
    rc = tu_sh(LANTERN " predict " LT_SOURCE_DIR "/tests/data/linreg.onnx --data npz=" LT_SOURCE_DIR
                   "/tests/data/predict16.npz",
            out, sizeof out, err, sizeof err);
    /* labels up to 15 for 3 class scores: refused, naming a sample */
    assert_int_equal(rc, 2);
    if (!strstr(err, "sample 0 has label 12"))
        fail_msg("%s", err);
    rc = tu_sh(LANTERN " predict " LT_SOURCE_DIR "/tests/data/linreg.onnx --data npz=" LT_SOURCE_DIR
                   "/tests/data/predict16.npz --count 0",
            out, sizeof out, err, sizeof err);
    assert_int_equal(rc, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(train_then_eval),
        cmocka_unit_test(export_weights_from_npy),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(bad_data),
        cmocka_unit_test(plot_and_losses),
        cmocka_unit_test(predict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
