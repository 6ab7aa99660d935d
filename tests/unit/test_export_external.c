/* lantern train / export -o and external data, end to end through the
 * command (tests/data/external, from make_external_models.py): a model that
 * had external data (one file beside it, or in a subfolder) is written with
 * its initializers of 1 KiB or more in OUT.onnx.data (location the bare
 * name, offsets multiples of 4096, offset and length set), smaller ones and
 * a sparse initializer's parts inline, the input's data file untouched; a
 * model past the inline size (lowered here) is written the same way while a
 * smaller one stays byte-identical; -o naming the input's external data, an
 * -o whose data file would be one of the command's files, and -o
 * CKDIR/checkpoint.lock are refused (exit 2, one line); a run that takes
 * its checkpoint folder removes the temp files of a killed checkpoint
 * write. */
#include "testutil.h"
#include "onnx.pb-c.h"
#include "importer/export_external.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define DATA LT_SOURCE_DIR "/tests/data/external"

/* Runs cmd (stdout dropped); stderr into err. Returns the exit code. */
static int sh(const char *cmd, char *err, size_t elen)
{
    char out[64];
    return tu_sh(cmd, out, sizeof out, err, elen);
}

static void ok(const char *cmd)
{
    char err[4096];
    int rc = sh(cmd, err, sizeof err);
    if (rc != 0)
        fail_msg("%s\nexit %d: %s", cmd, rc, err);
}

/* exit 2, one line on stderr holding want */
static void refused(const char *cmd, const char *want)
{
    char err[4096];
    int rc = sh(cmd, err, sizeof err), lines = 0;
    for (const char *p = err; *p; p++)
        lines += *p == '\n';
    if (rc != 2 || lines != 1 || !strstr(err, want))
        fail_msg("%s\nexit %d (want 2, one line holding '%s'): %s", cmd, rc, want, err);
}

static void assert_same_bytes(const char *a, const char *b)
{
    size_t la, lb;
    uint8_t *da = tu_slurp(a, &la), *db = tu_slurp(b, &lb);
    if (la != lb || memcmp(da, db, la) != 0)
        fail_msg("%s and %s differ", a, b);
    free(da);
    free(db);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A scratch folder holding a copy of tests/data/external. */
static void scratch(char *dir)
{
    char cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "cp -r " DATA "/. %s/", dir);
    assert_int_equal(system(cmd), 0);
}

static void rm_tree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static Onnx__ModelProto *unpack_file(const char *path)
{
    size_t n;
    uint8_t *d = tu_slurp(path, &n);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, d);
    free(d);
    assert_non_null(mp);
    return mp;
}

static const char *entry(const Onnx__TensorProto *tp, const char *key)
{
    for (size_t i = 0; i < tp->n_external_data; i++)
        if (!strcmp(tp->external_data[i]->key, key))
            return tp->external_data[i]->value;
    return NULL;
}

static bool is_external(const Onnx__TensorProto *tp)
{
    return tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* out (a model of float32 initializers) has each initializer of 1024 bytes
 * or more in OUT.data (bare name, 4096-aligned offset, length), the others
 * inline, and the data file ends with the last (inline: every initializer
 * inline); returns how many are external. Sparse initializers' parts are
 * inline. */
static int assert_layout_as(const char *out, bool inline_only)
{
    char data[512], want_loc[512];
    snprintf(data, sizeof data, "%s.data", out);
    const char *base = strrchr(out, '/');
    snprintf(want_loc, sizeof want_loc, "%s.data", base ? base + 1 : out);
    Onnx__ModelProto *mp = unpack_file(out);
    int n = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < mp->graph->n_initializer; i++) {
        const Onnx__TensorProto *tp = mp->graph->initializer[i];
        uint64_t bytes = 4;
        for (size_t d = 0; d < tp->n_dims; d++)
            bytes *= (uint64_t)tp->dims[d];
        assert_int_equal(tp->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        if (inline_only || bytes < LT_EXPORT_SIZE_THRESHOLD) {
            if (is_external(tp) || !tp->has_raw_data || tp->raw_data.len != bytes)
                fail_msg("%s: '%s' (%llu bytes) should be inline", out, tp->name, (unsigned long long)bytes);
            continue;
        }
        if (!is_external(tp) || tp->has_raw_data || tp->n_external_data != 3)
            fail_msg("%s: '%s' (%llu bytes) should be external data", out, tp->name, (unsigned long long)bytes);
        const char *loc = entry(tp, "location"), *off = entry(tp, "offset"), *len = entry(tp, "length");
        if (!loc || strcmp(loc, want_loc) != 0 || !off || !len)
            fail_msg("%s: '%s' location %s, offset %s, length %s", out, tp->name, loc ? loc : "-", off ? off : "-",
                     len ? len : "-");
        uint64_t o = strtoull(off, NULL, 10), l = strtoull(len, NULL, 10);
        assert_int_equal(o % LT_EXPORT_DATA_ALIGN, 0);
        assert_int_equal(l, bytes);
        assert_true(o >= end);
        end = o + l;
        n++;
    }
    for (size_t i = 0; i < mp->graph->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = mp->graph->sparse_initializer[i];
        assert_false(is_external(sp->values) || is_external(sp->indices));
        assert_true(sp->values->has_raw_data && sp->indices->has_raw_data);
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    struct stat st;
    if (n) {
        assert_int_equal(stat(data, &st), 0);
        assert_int_equal((uint64_t)st.st_size, end);
    }
    return n;
}

static int assert_layout(const char *out) { return assert_layout_as(out, false); }

/* The parameters of models a and b: same names and bytes (equal) or the
 * same names with at least one changed (!equal). */
static void assert_params(const char *a, const char *b, bool equal)
{
    lt_model *ma = tu_model(a), *mb = tu_model(b);
    assert_int_equal(lt_model_num_params(ma), lt_model_num_params(mb));
    int differ = 0;
    for (int i = 0; i < lt_model_num_params(ma); i++) {
        const lt_tensor *ta = lt_model_param(ma, i), *tb = tu_param(mb, lt_model_param_name(ma, i));
        assert_int_equal(ta->numel, tb->numel);
        differ += memcmp(ta->data, tb->data, (size_t)ta->numel * lt_dtype_size(ta->dtype)) != 0;
    }
    if (equal ? differ != 0 : differ == 0)
        fail_msg("%s against %s: %d parameter(s) differ", a, b, differ);
    lt_model_free(ma);
    lt_model_free(mb);
}

static void assert_no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp."))
            fail_msg("left behind: %s/%s", dir, e->d_name);
    closedir(d);
}

/* export of ext.onnx (data beside it) and sub.onnx (weights/w.bin) into
 * another folder: W1 and W2 in out.onnx.data, b1 and b2 inline, the values
 * the input's, its data files as they were */
static void export_writes_external(void **state)
{
    (void)state;
    static const char *const src[2] = {"ext.onnx", "sub.onnx"};
    char dir[] = "/tmp/lt_extdataXXXXXX", other[] = "/tmp/lt_extdataXXXXXX", cmd[2048], out[256], in[256];
    scratch(dir);
    assert_non_null(mkdtemp(other));
    snprintf(out, sizeof out, "%s/out.onnx", other);
    for (int k = 0; k < 2; k++) {
        snprintf(in, sizeof in, "%s/%s", dir, src[k]);
        snprintf(cmd, sizeof cmd, "%s export %s -o %s", LANTERN, in, out);
        ok(cmd);
        assert_int_equal(assert_layout(out), 2);
        assert_params(out, DATA "/plain.onnx", true);
        assert_no_temp_files(other);
    }
    char a[256];
    snprintf(a, sizeof a, "%s/ext.onnx.data", dir);
    assert_same_bytes(a, DATA "/ext.onnx.data");
    snprintf(a, sizeof a, "%s/weights/w.bin", dir);
    assert_same_bytes(a, DATA "/weights/w.bin");
    rm_tree(dir);
    rm_tree(other);
}

/* train: the trained weights in OUT.onnx.data beside the output */
static void train_writes_external(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_extdataXXXXXX", cmd[2048], out[256], a[256];
    scratch(dir);
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/trained%d.onnx", dir, k);
        snprintf(cmd, sizeof cmd, "%s train %s/%s --data npz=%s/d.npz --batch 8 --epochs 2 -o %s", LANTERN, dir,
                 k ? "sub.onnx" : "ext.onnx", dir, out);
        ok(cmd);
        assert_int_equal(assert_layout(out), 2);
        assert_params(out, DATA "/plain.onnx", false);
    }
    assert_no_temp_files(dir);
    snprintf(a, sizeof a, "%s/ext.onnx.data", dir);
    assert_same_bytes(a, DATA "/ext.onnx.data");
    snprintf(a, sizeof a, "%s/weights/w.bin", dir);
    assert_same_bytes(a, DATA "/weights/w.bin");
    rm_tree(dir);
}

/* a sparse initializer whose parts were external data: inline again, as
 * it is (export) or dense and external once trained */
static void sparse_parts_inline(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_extdataXXXXXX", cmd[2048], out[256], in[256];
    scratch(dir);
    snprintf(in, sizeof in, "%s/sparse.onnx", dir);
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    snprintf(cmd, sizeof cmd, "%s export %s -o %s", LANTERN, in, out);
    ok(cmd);
    assert_int_equal(assert_layout(out), 2);
    assert_params(out, in, true);
    Onnx__ModelProto *mp = unpack_file(out);
    assert_int_equal(mp->graph->n_sparse_initializer, 1);
    onnx__model_proto__free_unpacked(mp, NULL);
    snprintf(cmd, sizeof cmd, "%s train %s --data npz=%s/d.npz --batch 8 -o %s", LANTERN, in, dir, out);
    ok(cmd);
    assert_int_equal(assert_layout(out), 3); /* S, trained, is a dense initializer */
    assert_params(out, in, false);
    rm_tree(dir);
}

/* A model without external data: inline up to the inline size (exactly as
 * before), external past it. */
static void inline_size_decides(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_extdataXXXXXX", ref[256], out[256], data[256];
    assert_non_null(mkdtemp(dir));
    snprintf(ref, sizeof ref, "%s/ref.onnx", dir);
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    snprintf(data, sizeof data, "%s/out.onnx.data", dir);
    lt_err err;
    lt_model *m = tu_model(DATA "/plain.onnx");
    if (lt_model_export(m, DATA "/plain.onnx", ref, &err) != LT_OK)
        fail_msg("%s", err.msg);
    struct stat st;
    assert_int_equal(stat(ref, &st), 0);
    assert_int_equal(assert_layout_as(ref, true), 0);
    /* the packed size itself is still inline; a byte less is not */
    lt_export_set_inline_max((size_t)st.st_size);
    if (lt_model_export(m, DATA "/plain.onnx", out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_same_bytes(out, ref);
    assert_false(exists(data));
    lt_export_set_inline_max((size_t)st.st_size - 1);
    lt_status s = lt_model_export(m, DATA "/plain.onnx", out, &err);
    lt_export_set_inline_max(0);
    if (s != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(assert_layout(out), 2);
    assert_params(out, DATA "/plain.onnx", true);
    assert_no_temp_files(dir);
    lt_model_free(m);
    rm_tree(dir);
}

/* Outputs that would replace a file the command reads, or the folder's
 * lock: refused before any work, the files as they were. */
static void outputs_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_extdataXXXXXX", cmd[2048], a[256], b[256];
    scratch(dir);
    const char *L = LANTERN;
    /* -o naming the model's external data */
    snprintf(cmd, sizeof cmd, "%s train %s/ext.onnx --data npz=%s/d.npz -o %s/ext.onnx.data", L, dir, dir, dir);
    refused(cmd, "the model's external data");
    snprintf(cmd, sizeof cmd, "%s export %s/ext.onnx -o %s/ext.onnx.data", L, dir, dir);
    refused(cmd, "the model's external data");
    snprintf(cmd, sizeof cmd, "%s train %s/sub.onnx --data npz=%s/d.npz -o %s/weights/../weights/w.bin", L, dir, dir,
             dir);
    refused(cmd, "the model's external data");
    snprintf(cmd, sizeof cmd, "%s export %s/sub.onnx -o %s/weights/w.bin", L, dir, dir);
    refused(cmd, "the model's external data");
    /* -o whose own data file would be one */
    snprintf(cmd, sizeof cmd, "%s train %s/ext.onnx --data npz=%s/d.npz -o %s/ext.onnx", L, dir, dir, dir);
    refused(cmd, "would write its external data to");
    snprintf(cmd, sizeof cmd, "%s export %s/ext.onnx -o %s/ext.onnx", L, dir, dir);
    refused(cmd, "would write its external data to");
    snprintf(a, sizeof a, "%s/d.npz", dir);
    snprintf(b, sizeof b, "%s/d.data", dir);
    assert_int_equal(link(a, b), 0);
    snprintf(cmd, sizeof cmd, "%s train %s/plain.onnx --data npz=%s/d.data -o %s/d", L, dir, dir, dir);
    refused(cmd, "a file of --data");
    snprintf(cmd, sizeof cmd, "%s train %s/plain.onnx --data npz=%s/d.npz -o %s/x.onnx --log %s/x.onnx.data", L, dir,
             dir, dir, dir);
    refused(cmd, "--log");
    /* the checkpoint folder's lock */
    snprintf(cmd, sizeof cmd, "%s train %s/plain.onnx --data npz=%s/d.npz --batch 8 -o %s/p.onnx --checkpoint-dir %s/ck",
             L, dir, dir, dir, dir);
    ok(cmd);
    snprintf(cmd, sizeof cmd, "%s train %s/plain.onnx --data npz=%s/d.npz --batch 8 -o %s/ck/checkpoint.lock "
             "--checkpoint-dir %s/ck --resume", L, dir, dir, dir, dir);
    refused(cmd, "the checkpoint folder's lock");
    snprintf(cmd, sizeof cmd, "%s export %s/ck --model %s/plain.onnx -o %s/ck/checkpoint.lock", L, dir, dir, dir);
    refused(cmd, "the checkpoint folder's lock");
    snprintf(cmd, sizeof cmd, "%s export %s/ck/checkpoint.ltck --model %s/plain.onnx -o %s/ck/checkpoint.lock", L, dir,
             dir, dir);
    refused(cmd, "the checkpoint folder's lock");
    struct stat st;
    snprintf(a, sizeof a, "%s/ck/checkpoint.lock", dir);
    assert_int_equal(stat(a, &st), 0);
    assert_int_equal(st.st_size, 0);
    snprintf(a, sizeof a, "%s/ext.onnx.data", dir);
    assert_same_bytes(a, DATA "/ext.onnx.data");
    snprintf(a, sizeof a, "%s/weights/w.bin", dir);
    assert_same_bytes(a, DATA "/weights/w.bin");
    snprintf(a, sizeof a, "%s/ext.onnx", dir);
    assert_same_bytes(a, DATA "/ext.onnx");
    snprintf(a, sizeof a, "%s/d.data", dir);
    assert_same_bytes(a, DATA "/d.npz");
    snprintf(a, sizeof a, "%s/x.onnx", dir);
    assert_false(exists(a));
    rm_tree(dir);
}

/* Temp files a killed checkpoint write left (checkpoint.ltck.tmp.XXXXXX)
 * go when a run takes the folder; other names stay. */
static void stale_checkpoint_temps_removed(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_extdataXXXXXX", cmd[2048], f[256];
    scratch(dir);
    snprintf(cmd, sizeof cmd, "%s train %s/plain.onnx --data npz=%s/d.npz --batch 8 -o %s/p.onnx --checkpoint-dir %s/ck",
             LANTERN, dir, dir, dir, dir);
    ok(cmd);
    static const char *const stale[2] = {"checkpoint.ltck.tmp.Ab12Z9", "checkpoint.ltck.tmp.000000"};
    static const char *const kept[3] = {"checkpoint.ltck.tmp.keep", "checkpoint.ltck.tmp.Ab12Z", "other.tmp.Ab12Z9"};
    for (int i = 0; i < 5; i++) {
        snprintf(f, sizeof f, "%s/ck/%s", dir, i < 2 ? stale[i] : kept[i - 2]);
        FILE *fp = fopen(f, "w");
        assert_non_null(fp);
        fputs("partial", fp);
        fclose(fp);
    }
    snprintf(cmd, sizeof cmd, "%s train %s/plain.onnx --data npz=%s/d.npz --batch 8 -o %s/p.onnx --checkpoint-dir %s/ck "
             "--resume", LANTERN, dir, dir, dir, dir);
    ok(cmd);
    for (int i = 0; i < 5; i++) {
        snprintf(f, sizeof f, "%s/ck/%s", dir, i < 2 ? stale[i] : kept[i - 2]);
        if (exists(f) != (i >= 2))
            fail_msg("%s: %s", f, i < 2 ? "a stale checkpoint temp file, still there" : "not ours, but removed");
    }
    rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(export_writes_external),
        cmocka_unit_test(train_writes_external),
        cmocka_unit_test(sparse_parts_inline),
        cmocka_unit_test(inline_size_decides),
        cmocka_unit_test(outputs_refused),
        cmocka_unit_test(stale_checkpoint_temps_removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
