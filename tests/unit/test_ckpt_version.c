/* Checkpoints record the lantern that wrote them (format version 4) and,
 * since version 5, the validation state after it: the record reads back,
 * `lantern train --resume` names the writer, and version 4 (without the
 * state) and version 3 checkpoints (without the record either) are still
 * read by export and --resume, which says when the writer did not record a
 * version. A writer record that is too long or cut short, and a validation
 * state that does not parse, are refused. */
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

static char tmp[] = "/tmp/lt_ckpt_versionXXXXXX";

static int sh(const char *cmd, char *out, size_t len)
{
    char full[4096], of[600];
    snprintf(of, sizeof of, "%s/stdout", tmp);
    snprintf(full, sizeof full, "%s >%s 2>&1", cmd, of);
    int st = system(full);
    FILE *f = fopen(of, "rb");
    size_t got = f ? fread(out, 1, len - 1, f) : 0;
    out[got] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void spit(const char *dir, const unsigned char *b, size_t len)
{
    char path[700];
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/" LT_CKPT_FILE, dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
}

/* The format's checksum: FNV-1a (64-bit) of every byte before the last 8,
 * stored in those 8. */
static void reseal(unsigned char *b, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i + 8 < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    memcpy(b + len - 8, &h, 8);
}

static char data_spec[800], args[2048];

static void train(const char *ckdir, const char *out, int resume, char *log, size_t len, int want)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train %smlp.onnx --data %s --batch 8 --limit 32 --test-limit 8 --seed 3 "
             "--checkpoint-dir %s -o %s%s", LANTERN, MODELS, data_spec, ckdir, out, resume ? " --resume" : "");
    int rc = sh(cmd, log, len);
    if (rc != want)
        fail_msg("%s: exit %d (want %d): %s", cmd, rc, want, log);
}

static void version_record(void **state)
{
    (void)state;
    char c4[700], c3[700], out[700], out3[700], log[16384], writer[64];
    snprintf(c4, sizeof c4, "%s/v4", tmp);
    snprintf(c3, sizeof c3, "%s/v3", tmp);
    snprintf(out, sizeof out, "%s/out4.onnx", tmp);
    snprintf(out3, sizeof out3, "%s/out3.onnx", tmp);
    mkdir(c4, 0700);
    train(c4, out, 0, log, sizeof log, 0);

    /* the record reads back */
    lt_ckpt_info ci;
    lt_err err;
    snprintf(writer, sizeof writer, "lantern %s", lt_version());
    assert_int_equal(lt_ckpt_read_info(c4, &ci, &err), LT_OK);
    assert_int_equal(ci.version, 5);
    assert_string_equal(ci.writer, writer);
    assert_true(ci.global == 4 && ci.epoch == 1 && ci.step == 4 && ci.steps == 4);

    /* it is a length and the text, after the run's options */
    char path[800];
    snprintf(path, sizeof path, "%s/" LT_CKPT_FILE, c4);
    size_t len;
    unsigned char *b = slurp(path, &len);
    uint32_t version;
    memcpy(&version, b + 8, 4);
    assert_int_equal(version, 5);
    size_t wl = strlen(writer), at = 0;
    for (size_t i = 8; i + wl < len && !at; i++)
        if (!memcmp(b + i, writer, wl)) {
            uint64_t n;
            memcpy(&n, b + i - 8, 8);
            if (n == wl)
                at = i - 8;
        }
    assert_true(at > 0);
    /* version 5: the validation state follows, a length and the text (no
     * validation in this run: no best epoch, no best values) */
    size_t st_at = at + 8 + wl;
    uint64_t sl;
    memcpy(&sl, b + st_at, 8);
    const char *state_text = "best_epoch 0\nbest_value 0x0p+0\nsince_best 0\nbest_values 0\n";
    assert_int_equal(sl, strlen(state_text));
    assert_memory_equal(b + st_at + 8, state_text, sl);

    /* the same checkpoint as version 4 wrote it: no validation state */
    unsigned char *o = malloc(len);
    assert_non_null(o);
    char c4b[700], out4b[700];
    snprintf(c4b, sizeof c4b, "%s/v4b", tmp);
    snprintf(out4b, sizeof out4b, "%s/out4b.onnx", tmp);
    memcpy(o, b, st_at);
    memcpy(o + st_at, b + st_at + 8 + sl, len - st_at - 8 - sl);
    version = 4;
    memcpy(o + 8, &version, 4);
    reseal(o, len - 8 - sl);
    spit(c4b, o, len - 8 - sl);
    assert_int_equal(lt_ckpt_read_info(c4b, &ci, &err), LT_OK);
    assert_int_equal(ci.version, 4);
    assert_string_equal(ci.writer, writer);

    /* the same checkpoint as version 3 wrote it: no record, no state */
    memcpy(o, b, at);
    memcpy(o + at, b + st_at + 8 + sl, len - st_at - 8 - sl);
    size_t olen = len - 8 - wl - 8 - sl;
    version = 3;
    memcpy(o + 8, &version, 4);
    reseal(o, olen);
    spit(c3, o, olen);
    assert_int_equal(lt_ckpt_read_info(c3, &ci, &err), LT_OK);
    assert_int_equal(ci.version, 3);
    assert_string_equal(ci.writer, "");

    /* export reads all three, to the same weights */
    snprintf(args, sizeof args, "%s export %s --model %smlp.onnx -o %s", LANTERN, c3, MODELS, out3);
    assert_int_equal(sh(args, log, sizeof log), 0);
    snprintf(args, sizeof args, "%s export %s --model %smlp.onnx -o %s", LANTERN, c4b, MODELS, out4b);
    assert_int_equal(sh(args, log, sizeof log), 0);
    size_t l3, l4, l4b;
    unsigned char *e3 = slurp(out3, &l3), *e4 = slurp(out, &l4), *e4b = slurp(out4b, &l4b);
    assert_int_equal(l3, l4);
    assert_memory_equal(e3, e4, l3);
    assert_int_equal(l4b, l4);
    assert_memory_equal(e4b, e4, l4);
    free(e3);
    free(e4);
    free(e4b);

    /* --resume names the writer, or says there is none */
    train(c4, out, 1, log, sizeof log, 0);
    char want[200];
    snprintf(want, sizeof want, "resuming at step 4 (epoch 1, step 4 of 4)");
    if (!strstr(log, want) || !strstr(log, "(checkpoint written by ") || !strstr(log, writer))
        fail_msg("resume from version 4: %s", log);
    train(c3, out3, 1, log, sizeof log, 0);
    if (!strstr(log, want) || !strstr(log, "checkpoint format 3"))
        fail_msg("resume from version 3: %s", log);
    train(c4b, out4b, 1, log, sizeof log, 0);
    if (!strstr(log, want) || !strstr(log, writer))
        fail_msg("resume from version 4: %s", log);

    /* a writer record longer than the format allows, or past the end */
    char bad[700];
    snprintf(bad, sizeof bad, "%s/bad", tmp);
    uint64_t huge = 1000;
    memcpy(b + at, &huge, 8);
    reseal(b, len);
    spit(bad, b, len);
    assert_int_equal(lt_ckpt_read_info(bad, &ci, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "corrupted"));
    train(bad, out, 1, log, sizeof log, 2);
    assert_non_null(strstr(log, "corrupted"));
    /* a validation state that does not parse */
    unsigned char *v = malloc(len);
    assert_non_null(v);
    memcpy(v, b, len);
    memcpy(v + at, &(uint64_t){wl}, 8); /* undo the bad writer length above */
    v[st_at + 8] = 'X';
    reseal(v, len);
    spit(bad, v, len);
    train(bad, out, 1, log, sizeof log, 2);
    if (!strstr(log, "corrupted checkpoint (the validation state)"))
        fail_msg("bad validation state: %s", log);
    free(v);
    /* a version from the future is refused by number */
    version = 6;
    memcpy(o + 8, &version, 4);
    spit(bad, o, olen);
    assert_int_equal(lt_ckpt_read_info(bad, &ci, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "version 6"));
    free(o);
    free(b);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmp))
        return -1;
    char d[700];
    snprintf(d, sizeof d, "%s/data", tmp);
    mkdir(d, 0700);
    snprintf(data_spec, sizeof data_spec, "mnist=%s", d);
    return tu_write_idx_split(d, "train", 32, 11) || tu_write_idx_split(d, "t10k", 8, 12) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(version_record)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
