/* The normalisation of a training run travels with the model: lantern train
 * --mean/--std stores them in the exported model's metadata_props
 * (lantern.mean, lantern.std) and nothing else changes (checked with onnx:
 * the file of a run with --mean 0 --std 1 is the file of a run without them
 * plus the two entries); lantern eval and predict apply them, --mean/--std
 * replace them, --no-model-norm ignores them; a stored value that does not
 * parse is one line and exit 2. */
#include "test_dataset.h"
#include <sys/wait.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static void ok(const char *cmd, char *out, size_t olen)
{
    char err[4096];
    int rc = tu_sh(cmd, out, olen, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: exit %d: %s", cmd, rc, err);
}

/* the number after "loss: " in eval's output */
static double eval_loss(const char *out)
{
    const char *l = strstr(out, "\nloss: ");
    if (!l && !strncmp(out, "loss: ", 6))
        l = out - 1;
    double v = NAN;
    if (!l || sscanf(l + 1, "loss: %lf", &v) != 1)
        fail_msg("no loss in: %s", out);
    return v;
}

static char dir[64];

static void round_trip(void **state)
{
    (void)state;
    char cmd[2048], out[8192];
    const char *common = "--data fashion-mnist --limit 512 --test-limit 200 --epochs 1 --seed 2";
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx %s --mean 0.25 --std 0.5 -o %s/n.onnx", LANTERN, MODELS, common,
             dir);
    ok(cmd, out, sizeof out);
    assert_non_null(strstr(out, "normalisation stored in"));
    /* the library reads what the file holds */
    char path[160];
    snprintf(path, sizeof path, "%s/n.onnx", dir);
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(path, &m, &err), LT_OK);
    assert_string_equal(lt_model_metadata(m, LT_META_MEAN), "0.25");
    assert_string_equal(lt_model_metadata(m, LT_META_STD), "0.5");
    lt_dataset_opts n;
    assert_int_equal(lt_model_norm(m, &n, &err), LT_OK);
    assert_true(n.nmean == 1 && n.mean[0] == 0.25 && n.nstd == 1 && n.std[0] == 0.5);
    lt_model_free(m);

    /* eval applies them: as if given, and not as without them */
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200", LANTERN, path);
    ok(cmd, out, sizeof out);
    double stored = eval_loss(out);
    assert_non_null(strstr(out, "normalisation: (x - mean) / std with mean 0.25, std 0.5 (stored in"));
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200 --no-model-norm --mean 0.25 --std 0.5", LANTERN, path);
    ok(cmd, out, sizeof out);
    double given = eval_loss(out);
    assert_null(strstr(out, "stored in"));
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200 --no-model-norm", LANTERN, path);
    ok(cmd, out, sizeof out);
    double raw = eval_loss(out);
    assert_null(strstr(out, "normalisation"));
    assert_true(stored == given);
    assert_true(fabs(raw - stored) > 1e-3);
    /* an explicit --std replaces the stored one, the stored mean stays */
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200 --std 0.5", LANTERN, path);
    ok(cmd, out, sizeof out);
    assert_true(eval_loss(out) == stored);
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200 --std 0.25", LANTERN, path);
    ok(cmd, out, sizeof out);
    assert_true(fabs(eval_loss(out) - stored) > 1e-3);
    /* the JSON says which */
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200 --json", LANTERN, path);
    ok(cmd, out, sizeof out);
    assert_non_null(strstr(out, "\"mean\":[0.25],\"std\":[0.5],\"normalisation_from_model\":true"));

    /* predict applies them too: its accuracy on 200 samples is eval's */
    snprintf(cmd, sizeof cmd, "%s eval %s --limit 200", LANTERN, path);
    ok(cmd, out, sizeof out);
    double acc_eval = -1, acc_pred = -2, acc_raw = -3;
    assert_int_equal(sscanf(strstr(out, "accuracy: "), "accuracy: %lf", &acc_eval), 1);
    snprintf(cmd, sizeof cmd, "%s predict %s --count 200", LANTERN, path);
    ok(cmd, out, sizeof out);
    assert_non_null(strstr(out, "(stored in"));
    assert_int_equal(sscanf(strstr(out, "accuracy on 200 test samples: "), "accuracy on 200 test samples: %lf", &acc_pred),
                     1);
    assert_true(fabs(acc_eval - acc_pred) < 1e-9);
    snprintf(cmd, sizeof cmd, "%s predict %s --count 200 --mean 0 --std 1", LANTERN, path);
    ok(cmd, out, sizeof out);
    assert_null(strstr(out, "stored in"));
    assert_int_equal(sscanf(strstr(out, "accuracy on 200 test samples: "), "accuracy on 200 test samples: %lf", &acc_raw),
                     1);
    snprintf(cmd, sizeof cmd, "%s predict %s --count 200 --no-model-norm", LANTERN, path);
    ok(cmd, out, sizeof out);
    double acc_none = -4;
    assert_int_equal(sscanf(strstr(out, "accuracy on 200 test samples: "), "accuracy on 200 test samples: %lf", &acc_none),
                     1);
    assert_true(acc_raw == acc_none);
}

/* A run with --mean 0 --std 1 trains exactly as one without ((x - 0) / 1 is
 * x): its file is the other's with the two metadata entries added. */
static void only_metadata_changes(void **state)
{
    (void)state;
    char cmd[2048], out[8192], err[4096];
    const char *common = "--data fashion-mnist --limit 256 --test-limit 50 --epochs 1 --seed 4";
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx %s -o %s/plain.onnx", LANTERN, MODELS, common, dir);
    ok(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx %s --mean 0 --std 1 -o %s/meta.onnx", LANTERN, MODELS, common, dir);
    ok(cmd, out, sizeof out);
    if (access("/usr/bin/python3", X_OK) != 0 || system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") != 0) {
        print_message("python3 with onnx missing: the onnx comparison is skipped\n");
        return;
    }
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import onnx, sys\n"
             "a = onnx.load('%s/plain.onnx'); b = onnx.load('%s/meta.onnx')\n"
             "meta = [(e.key, e.value) for e in b.metadata_props]\n"
             "assert len(a.metadata_props) == 0, a.metadata_props\n"
             "assert meta == [('lantern.mean', '0'), ('lantern.std', '1')], meta\n"
             "assert a.graph.SerializeToString() == b.graph.SerializeToString(), 'graphs differ'\n"
             "del b.metadata_props[:]\n"
             "assert a.SerializeToString() == b.SerializeToString(), 'models differ'\n"
             "print('same graph')\"",
             dir, dir);
    int rc = tu_sh(cmd, out, sizeof out, err, sizeof err);
    if (rc != 0 || !strstr(out, "same graph"))
        fail_msg("exit %d: %s%s", rc, out, err);
}

/* A stored value that is not a list of numbers: one line, exit 2. */
static void bad_metadata(void **state)
{
    (void)state;
    lt_model *m = NULL;
    lt_err err;
    char path[160], cmd[2048], out[4096], e[4096];
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_model_set_metadata(m, LT_META_STD, "0.5,x", &err), LT_OK);
    snprintf(path, sizeof path, "%s/bad.onnx", dir);
    assert_int_equal(lt_model_export(m, MODELS "mlp.onnx", path, &err), LT_OK);
    lt_model_free(m);
    const char *cmds[2] = {"eval", "predict"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s %s %s", LANTERN, cmds[i], path);
        int rc = tu_sh(cmd, out, sizeof out, e, sizeof e);
        if (rc != 2 || !strstr(e, "metadata lantern.std is '0.5,x'") || !strstr(e, "bad.onnx"))
            fail_msg("%s: exit %d: %s", cmds[i], rc, e);
        int lines = 0;
        for (const char *c = e; *c; c++)
            lines += *c == '\n';
        assert_int_equal(lines, 1);
        /* --no-model-norm does not read it */
        snprintf(cmd, sizeof cmd, "%s %s %s --no-model-norm%s", LANTERN, cmds[i], path, i ? "" : " --limit 10");
        ok(cmd, out, sizeof out);
    }
}

static int setup(void **state)
{
    (void)state;
    td_tmpdir(dir, sizeof dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    td_rmtree(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(only_metadata_changes),
        cmocka_unit_test(bad_metadata),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
