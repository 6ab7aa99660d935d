/* `lantern export CHECKPOINT --model MODEL` and lt_ckpt_read_params: the
 * model written from a run's last checkpoint is byte-identical to the one
 * `lantern train -o` wrote (every parameter bit-identical, frozen ones and
 * a random initialization included); a checkpoint of another model, or a
 * corrupted or truncated one, gets one line and exit 2 and no output; a
 * mismatch found by lt_ckpt_read_params leaves the model untouched. */
#include "testutil.h"
#include "train/checkpoint.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static char dir[] = "/tmp/lt_ckpt_exportXXXXXX";

/* Runs a shell command; stderr goes to err (NUL-terminated); returns the exit code. */
static int sh(const char *cmd, char *err, size_t errlen)
{
    char full[4096], ef[600];
    snprintf(ef, sizeof ef, "%s/stderr", dir);
    snprintf(full, sizeof full, "%s >/dev/null 2>%s", cmd, ef);
    int st = system(full);
    FILE *f = fopen(ef, "rb");
    size_t n = f ? fread(err, 1, errlen - 1, f) : 0;
    if (f)
        fclose(f);
    err[n] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: missing", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static lt_model *load(const char *path)
{
    lt_model *m = NULL;
    lt_err err;
    if (lt_model_load(path, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return m;
}

/* Trains mlp.onnx for 10 steps of 8 (Adam, fc2.bias frozen, extra args)
 * with checkpoints in dir/sub and the model in dir/sub/out.onnx. */
static void train(const char *sub, const char *extra)
{
    char cmd[2048], err[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/%s && %s train %smlp.onnx --data fashion-mnist=%s/data --optimizer adam --lr 0.003 "
             "--batch 8 --epochs 1 --limit 80 --test-limit 16 --seed 5 --freeze fc2.bias --checkpoint-dir %s/%s "
             "-o %s/%s/out.onnx %s",
             dir, sub, LANTERN, MODELS, dir, dir, sub, dir, sub, extra);
    if (sh(cmd, err, sizeof err) != 0)
        fail_msg("train failed: %s", err);
}

/* `lantern export ARGS`: expects exit 2, one line on stderr with both wants, no output file. */
static void refused(const char *args, const char *want1, const char *want2)
{
    char cmd[2048], err[4096], out[600];
    snprintf(out, sizeof out, "%s/refused.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s export %s -o %s", LANTERN, args, out);
    int rc = sh(cmd, err, sizeof err);
    if (rc != 2 || count_lines(err) != 1 || !strstr(err, want1) || (want2 && !strstr(err, want2)))
        fail_msg("'%s': exit %d, expected one line with '%s'%s%s, got: %s", args, rc, want1, want2 ? " and " : "",
                 want2 ? want2 : "", err);
    assert_int_not_equal(access(out, F_OK), 0);
}

/* The run's last checkpoint exported over mlp.onnx is the file train -o
 * wrote, byte for byte, from the folder and from the file. */
static void export_matches_train(void **state)
{
    (void)state;
    train("a", "");
    char cmd[2048], err[4096], a[600], b[600], c[600], orig[600];
    snprintf(a, sizeof a, "%s/a/out.onnx", dir);
    snprintf(b, sizeof b, "%s/a/from_dir.onnx", dir);
    snprintf(c, sizeof c, "%s/a/from_file.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s export %s/a --model %smlp.onnx -o %s", LANTERN, dir, MODELS, b);
    if (sh(cmd, err, sizeof err) != 0)
        fail_msg("export failed: %s", err);
    snprintf(cmd, sizeof cmd, "%s export %s/a/" LT_CKPT_FILE " --model %smlp.onnx -o %s", LANTERN, dir, MODELS, c);
    if (sh(cmd, err, sizeof err) != 0)
        fail_msg("export failed: %s", err);
    size_t la, lb, lc;
    char *da = slurp(a, &la), *db = slurp(b, &lb), *dc = slurp(c, &lc);
    assert_true(la == lb && memcmp(da, db, la) == 0);
    assert_true(la == lc && memcmp(da, dc, la) == 0);
    free(da);
    free(db);
    free(dc);
    /* parameter by parameter: trained ones changed, the frozen one did not */
    snprintf(orig, sizeof orig, "%smlp.onnx", MODELS);
    lt_model *mt = load(a), *me = load(b), *mo = load(orig);
    assert_int_equal(mt->nparams, me->nparams);
    int changed = 0;
    for (int p = 0; p < mt->nparams; p++) {
        const lt_tensor *t = &mt->params[p].data, *e = &me->params[p].data, *o = &mo->params[p].data;
        assert_string_equal(mt->params[p].name, me->params[p].name);
        assert_memory_equal(t->data, e->data, lt_tensor_nbytes(t));
        int same = memcmp(t->data, o->data, lt_tensor_nbytes(t)) == 0;
        if (!strcmp(mt->params[p].name, "fc2.bias"))
            assert_true(same);
        else
            changed += !same;
    }
    assert_int_equal(changed, mt->nparams - 1);
    lt_model_free(mt);
    lt_model_free(me);
    lt_model_free(mo);
}

/* --init random: every value comes from the run, none from the file */
static void export_after_random_init(void **state)
{
    (void)state;
    train("r", "--init random --optimizer sgd");
    char cmd[2048], err[4096], a[600], b[600];
    snprintf(a, sizeof a, "%s/r/out.onnx", dir);
    snprintf(b, sizeof b, "%s/r/exported.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s export %s/r --model %smlp.onnx -o %s", LANTERN, dir, MODELS, b);
    if (sh(cmd, err, sizeof err) != 0)
        fail_msg("export failed: %s", err);
    size_t la, lb;
    char *da = slurp(a, &la), *db = slurp(b, &lb);
    assert_true(la == lb && memcmp(da, db, la) == 0);
    free(da);
    free(db);
}

static void bad_checkpoints(void **state)
{
    (void)state;
    char ck[600], args[2048], sub[600], f[600];
    snprintf(ck, sizeof ck, "%s/a/" LT_CKPT_FILE, dir);
    /* another model */
    snprintf(args, sizeof args, "%s --model %ssqueezenet.onnx", ck, MODELS);
    refused(args, ck, "squeezenet.onnx");
    /* a checkpoint given as the model, and as a model file */
    snprintf(args, sizeof args, "%s/a", dir);
    refused(args, "--model", NULL);
    snprintf(args, sizeof args, "%smlp.onnx --model %smlp.onnx", MODELS, MODELS);
    refused(args, "bad magic", NULL);
    /* a folder without one */
    snprintf(sub, sizeof sub, "%s/empty", dir);
    mkdir(sub, 0700);
    snprintf(args, sizeof args, "%s --model %smlp.onnx", sub, MODELS);
    refused(args, LT_CKPT_FILE, NULL);
    /* damaged copies of a good one */
    size_t len;
    char *good = slurp(ck, &len), *b = malloc(len);
    assert_non_null(b);
    assert_true(len > 100000);
    snprintf(f, sizeof f, "%s/bad.ltck", dir);
    snprintf(args, sizeof args, "%s --model %smlp.onnx", f, MODELS);
    static const struct {
        long at; /* byte to change (negative: from the end); 0: cut to `cut` bytes */
        long cut;
        const char *want;
    } cases[] = {
        {-1000, 0, "checksum"},   /* in the optimizer state */
        {200000, 0, "checksum"},  /* in the weights */
        {140, 0, "checksum"},     /* in the table: a parameter's name */
        {0, -100, "truncated"},   /* the end cut off */
        {0, 20, "truncated"},     /* the header cut */
        {0, 200, "truncated"},    /* the table cut */
        {8, 0, "version"},
        {2, 0, "bad magic"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, good, len);
        size_t n = len;
        if (cases[i].at)
            b[cases[i].at < 0 ? (long)len + cases[i].at : cases[i].at] ^= 0x10;
        else
            n = cases[i].cut < 0 ? len + (size_t)cases[i].cut : (size_t)cases[i].cut;
        spit(f, b, n);
        refused(args, cases[i].want, f);
    }
    free(b);
    free(good);
}

/* ---- lt_ckpt_read_params on checkpoints written here ---- */

/* Saves a checkpoint in dir/sub holding mlp.onnx's parameters with seeded
 * random values; `odd` (if not NULL) is stored with the shape [5] instead
 * and `skip` is left out. vals[p] receives parameter p's stored values (the
 * caller frees them). */
static void save_mlp_like(const char *sub, const char *odd, const char *skip, lt_value **vals, lt_model *m)
{
    lt_tensor **values = calloc((size_t)m->nparams, sizeof *values);
    const char **names = calloc((size_t)m->nparams, sizeof *names);
    assert_true(values && names);
    int nv = 0;
    uint64_t seed = 11;
    for (int p = 0; p < m->nparams; p++) {
        const lt_tensor *src = &m->params[p].data;
        vals[p] = NULL;
        if (skip && !strcmp(m->params[p].name, skip))
            continue;
        int64_t five = 5;
        vals[p] = odd && !strcmp(m->params[p].name, odd) ? tu_rand(LT_F32, 1, &five, -1, 1, seed++)
                                                         : tu_rand(LT_F32, src->rank, src->dims, -1, 1, seed++);
        names[nv] = m->params[p].name;
        values[nv++] = &vals[p]->t;
    }
    lt_optim *opt;
    lt_optim_opts oo;
    lt_err err;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &oo);
    assert_int_equal(lt_optim_new(&oo, 1, (const lt_tensor *const *)values, &opt, &err), LT_OK);
    int64_t order[3] = {2, 0, 1};
    lt_ckpt_state s = {.model_hash = 1, .nvalues = nv, .values = values, .names = names, .n = 1, .params = values,
                       .opt = opt, .nsamples = 3, .batch = 3, .steps = 1, .order = order, .epoch = 1, .step = 1,
                       .global = 1};
    char folder[600];
    snprintf(folder, sizeof folder, "%s/%s", dir, sub);
    mkdir(folder, 0700);
    if (lt_ckpt_save(folder, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_optim_free(opt);
    free(values);
    free(names);
}

static void free_vals(lt_value **vals, int n)
{
    for (int p = 0; p < n; p++)
        lt_value_free(vals[p]);
}

static void read_params_checks_first(void **state)
{
    (void)state;
    lt_model *m = load(MODELS "mlp.onnx"), *fresh = load(MODELS "mlp.onnx");
    lt_value **vals = calloc((size_t)m->nparams, sizeof *vals);
    assert_non_null(vals);
    char folder[600];
    lt_err err;
    /* a good one: every parameter takes the stored values */
    save_mlp_like("lib_ok", NULL, NULL, vals, m);
    snprintf(folder, sizeof folder, "%s/lib_ok", dir);
    if (lt_ckpt_read_params(folder, m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int p = 0; p < m->nparams; p++)
        assert_memory_equal(m->params[p].data.data, vals[p]->t.data, lt_tensor_nbytes(&m->params[p].data));
    free_vals(vals, m->nparams);
    lt_model_free(m);
    /* the last parameter's shape differs: named with both shapes, and the
     * parameters before it are not touched either */
    m = load(MODELS "mlp.onnx");
    const char *last = m->params[m->nparams - 1].name;
    save_mlp_like("lib_shape", last, NULL, vals, m);
    snprintf(folder, sizeof folder, "%s/lib_shape", dir);
    assert_int_equal(lt_ckpt_read_params(folder, m, &err), LT_ERR_INVALID);
    if (!strstr(err.msg, last) || !strstr(err.msg, "float32 [5]") || !strstr(err.msg, "mlp.onnx") ||
        !strstr(err.msg, LT_CKPT_FILE))
        fail_msg("unexpected message: %s", err.msg);
    for (int p = 0; p < m->nparams; p++)
        assert_memory_equal(m->params[p].data.data, fresh->params[p].data.data, lt_tensor_nbytes(&m->params[p].data));
    free_vals(vals, m->nparams);
    /* one parameter missing */
    save_mlp_like("lib_missing", NULL, m->params[0].name, vals, m);
    snprintf(folder, sizeof folder, "%s/lib_missing", dir);
    assert_int_equal(lt_ckpt_read_params(folder, m, &err), LT_ERR_INVALID);
    if (!strstr(err.msg, m->params[0].name) || !strstr(err.msg, "holds no parameter"))
        fail_msg("unexpected message: %s", err.msg);
    for (int p = 0; p < m->nparams; p++)
        assert_memory_equal(m->params[p].data.data, fresh->params[p].data.data, lt_tensor_nbytes(&m->params[p].data));
    assert_int_equal(lt_ckpt_is_checkpoint(folder), 1);
    assert_int_equal(lt_ckpt_is_checkpoint(MODELS "mlp.onnx"), 0);
    free_vals(vals, m->nparams);
    free(vals);
    lt_model_free(m);
    lt_model_free(fresh);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    char d[600];
    snprintf(d, sizeof d, "%s/data", dir);
    mkdir(d, 0700);
    char data[600];
    snprintf(data, sizeof data, "%s/data", dir);
    return tu_write_idx_split(data, "train", 80, 21) || tu_write_idx_split(data, "t10k", 16, 22) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(export_matches_train),
        cmocka_unit_test(export_after_random_init),
        cmocka_unit_test(bad_checkpoints),
        cmocka_unit_test(read_params_checks_first),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
