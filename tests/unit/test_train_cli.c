/* `lantern train`, `eval` and `export` end to end: a short run writes a model
 * that `eval` scores as `train` reported, progress and the CSV log appear,
 * and bad usage, data or models get one line on stderr and exit 2. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

/* Runs cmd with stdout and stderr captured into out and err. */
static int sh(const char *cmd, char *out, size_t olen, char *err, size_t elen)
{
    char full[4096], of[] = "/tmp/lt_train_outXXXXXX", ef[] = "/tmp/lt_train_errXXXXXX";
    close(mkstemp(of));
    close(mkstemp(ef));
    snprintf(full, sizeof full, "%s >%s 2>%s", cmd, of, ef);
    int st = system(full);
    const char *files[2] = {of, ef};
    char *bufs[2] = {out, err};
    size_t lens[2] = {olen, elen};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        size_t got = f ? fread(bufs[i], 1, lens[i] - 1, f) : 0;
        bufs[i][got] = 0;
        if (f)
            fclose(f);
        unlink(files[i]);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

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
    int rc = sh(cmd, out, sizeof out, err, sizeof err);
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
    assert_int_equal(sh(cmd, out, sizeof out, err, sizeof err), 0);
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
    if (sh(cmd, out, sizeof out, err, sizeof err) != 0)
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
    assert_int_equal(sh(cmd, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "fc2.bias"));
    assert_int_not_equal(access(model, F_OK), 0);
    unlink(wrong);
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
        {"eval " MODELS "mlp.onnx --data fashion-mnist --loss hinge", "hinge"},
        {"train /nonexistent.onnx --data fashion-mnist -o /tmp/lt_never.onnx", "/nonexistent.onnx"},
        {"eval " LT_SOURCE_DIR "/tests/data/ad_if.onnx --data fashion-mnist", "28x28"},
        {"eval " MODELS "mlp.onnx --data fashion-mnist=/nonexistent", "/nonexistent"},
        {"export " MODELS "mlp.onnx -o /nonexistent/dir/out.onnx", "/nonexistent/dir"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[2048], out[8192], err[4096];
        snprintf(cmd, sizeof cmd, "%s %s", LANTERN, cases[i].args);
        int rc = sh(cmd, out, sizeof out, err, sizeof err);
        if (rc != 2 || count_lines(err) != 1 || !strstr(err, cases[i].want))
            fail_msg("'%s': exit %d, stderr '%s'", cases[i].args, rc, err);
    }
    /* usage without -o or --data: exit 2 */
    char out[8192], err[4096];
    assert_int_equal(sh(LANTERN " train " MODELS "mlp.onnx --data fashion-mnist", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(sh(LANTERN " train " MODELS "mlp.onnx -o /tmp/x.onnx", out, sizeof out, err, sizeof err), 2);
    assert_int_not_equal(access("/tmp/lt_never.onnx", F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(train_then_eval),
        cmocka_unit_test(export_weights_from_npy),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
