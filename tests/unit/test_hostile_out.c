/* The output side against hostile models and paths, end to end through the
 * lantern command: names with terminal escapes reach stdout escaped, .npy
 * files never write through planted links, parameters whose file names would
 * collide, output targets that are folders, devices or links, a log on a full
 * disk, a missing --weights folder and a repeated --input are each refused
 * with one line on stderr and exit 2. */
#include "testutil.h"
#include "onnx.pb-c.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

/* what a hostile model puts in its strings: colour, a title change, a newline
 * that would start a forged line */
#define EVIL "\x1b[31m\x1b]0;pwned\x07\nFORGED"

/* Runs cmd; stdout (binary, *olen bytes) and stderr captured. */
static int sh(const char *cmd, char *out, size_t *olen, char *err, size_t elen)
{
    char full[4096], of[] = "/tmp/lt_hostile_outXXXXXX", ef[] = "/tmp/lt_hostile_errXXXXXX";
    close(mkstemp(of));
    close(mkstemp(ef));
    snprintf(full, sizeof full, "%s >%s 2>%s", cmd, of, ef);
    int st = system(full);
    FILE *f = fopen(of, "rb");
    size_t got = f ? fread(out, 1, *olen - 1, f) : 0;
    out[got] = 0;
    *olen = got;
    if (f)
        fclose(f);
    f = fopen(ef, "r");
    got = f ? fread(err, 1, elen - 1, f) : 0;
    err[got] = 0;
    if (f)
        fclose(f);
    unlink(of);
    unlink(ef);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* exit 2 and one line on stderr holding each of want[] */
static void refused(const char *cmd, const char *const *want, int nwant)
{
    char out[16384], err[4096];
    size_t olen = sizeof out;
    int rc = sh(cmd, out, &olen, err, sizeof err);
    if (rc != 2 || count_lines(err) != 1)
        fail_msg("%s\nexit %d, stderr: %s", cmd, rc, err);
    for (int i = 0; i < nwant; i++)
        if (!strstr(err, want[i]))
            fail_msg("%s\nstderr lacks '%s': %s", cmd, want[i], err);
}

/* ---- a small model through the protobuf structs ----
 *   y = x * w1 + w2      (x, w1, w2: float[2])
 *   s = Identity(str)    (with_string: a string initializer as a second output)
 *   Unknown(x)           (with_unknown: an op lantern does not know) */
typedef struct names {
    const char *producer, *version, *graph, *doc, *w1, *w2, *y, *node, *unknown_op;
    int with_string;
} names;

static void write_model(const names *nm, const char *path)
{
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
    Onnx__NodeProto nodes[4], *np[4];
    Onnx__TensorProto inits[3], *ip[3];
    Onnx__ValueInfoProto vin, vout[2], *vinp[1] = {&vin}, *voutp[2] = {&vout[0], &vout[1]};
    Onnx__TypeProto tin, tout[2];
    Onnx__TypeProto__Tensor ttin, ttout[2];
    float w1[2] = {1.5f, -2.0f}, w2[2] = {0.25f, 3.0f};
    int64_t dims[1] = {2};
    char *mul_in[2] = {"x", (char *)nm->w1}, *mul_out[1] = {"t"};
    char *add_in[2] = {"t", (char *)nm->w2}, *add_out[1] = {(char *)nm->y};
    char *id_in[1] = {"str"}, *id_out[1] = {"s\x1b[2J"}, *unk_in[1] = {"x"}, *unk_out[1] = {"u"};
    ProtobufCBinaryData sdata[1] = {{strlen(EVIL), (uint8_t *)EVIL}};

    onnx__model_proto__init(&model);
    onnx__graph_proto__init(&graph);
    onnx__operator_set_id_proto__init(&opset);
    model.has_ir_version = 1;
    model.ir_version = 8;
    model.producer_name = (char *)nm->producer;
    model.producer_version = (char *)nm->version;
    model.doc_string = (char *)nm->doc;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    model.graph = &graph;
    graph.name = (char *)nm->graph;
    graph.doc_string = (char *)nm->doc;

    int nn = 0;
    const char *ops[4] = {"Mul", "Add", "Identity", nm->unknown_op};
    char **ins[4] = {mul_in, add_in, id_in, unk_in}, **outs[4] = {mul_out, add_out, id_out, unk_out};
    int nins[4] = {2, 2, 1, 1};
    for (int i = 0; i < 4; i++) {
        if ((i == 2 && !nm->with_string) || (i == 3 && !nm->unknown_op))
            continue;
        onnx__node_proto__init(&nodes[nn]);
        nodes[nn].op_type = (char *)ops[i];
        nodes[nn].name = (char *)nm->node;
        nodes[nn].doc_string = (char *)nm->doc;
        nodes[nn].n_input = (size_t)nins[i];
        nodes[nn].input = ins[i];
        nodes[nn].n_output = 1;
        nodes[nn].output = outs[i];
        np[nn] = &nodes[nn];
        nn++;
    }
    graph.n_node = (size_t)nn;
    graph.node = np;

    const char *inames[3] = {nm->w1, nm->w2, "str"};
    float *idata[2] = {w1, w2};
    int ni = nm->with_string ? 3 : 2;
    for (int i = 0; i < ni; i++) {
        onnx__tensor_proto__init(&inits[i]);
        inits[i].name = (char *)inames[i];
        inits[i].has_data_type = 1;
        inits[i].n_dims = 1;
        inits[i].dims = i < 2 ? dims : dims; /* str holds one string: dims {1} below */
        if (i < 2) {
            inits[i].data_type = LT_F32;
            inits[i].n_float_data = 2;
            inits[i].float_data = idata[i];
        } else {
            static int64_t one[1] = {1};
            inits[i].dims = one;
            inits[i].data_type = LT_STRING;
            inits[i].n_string_data = 1;
            inits[i].string_data = sdata;
        }
        ip[i] = &inits[i];
    }
    graph.n_initializer = (size_t)ni;
    graph.initializer = ip;

    onnx__value_info_proto__init(&vin);
    onnx__type_proto__init(&tin);
    onnx__type_proto__tensor__init(&ttin);
    ttin.has_elem_type = 1;
    ttin.elem_type = LT_F32;
    tin.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tin.tensor_type = &ttin;
    vin.name = "x";
    vin.type = &tin;
    vin.doc_string = (char *)nm->doc;
    graph.n_input = 1;
    graph.input = vinp;
    const char *onames[2] = {nm->y, "s\x1b[2J"};
    int types[2] = {LT_F32, LT_STRING};
    for (int i = 0; i < 2; i++) {
        onnx__value_info_proto__init(&vout[i]);
        onnx__type_proto__init(&tout[i]);
        onnx__type_proto__tensor__init(&ttout[i]);
        ttout[i].has_elem_type = 1;
        ttout[i].elem_type = types[i];
        tout[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tout[i].tensor_type = &ttout[i];
        vout[i].name = (char *)onames[i];
        vout[i].type = &tout[i];
    }
    graph.n_output = nm->with_string ? 2 : 1;
    graph.output = voutp;

    size_t n = onnx__model_proto__get_packed_size(&model);
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    onnx__model_proto__pack(&model, buf);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(buf);
}

static const names clean = {"t", "1", "g", "", "w1", "w2", "y", "n", NULL, 0};

typedef struct scratch {
    char dir[64], model[128], x[128];
} scratch;

static void scratch_new(scratch *s, const names *nm)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/lt_hostileXXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->model, sizeof s->model, "%s/m.onnx", s->dir);
    snprintf(s->x, sizeof s->x, "%s/x.npy", s->dir);
    write_model(nm, s->model);
    int64_t d[1] = {2};
    lt_value *x = tu_rand(LT_F32, 1, d, -1, 1, 7);
    lt_err err;
    assert_int_equal(lt_value_save_npy(x, s->x, &err), LT_OK);
    lt_value_free(x);
}

static void scratch_free(scratch *s)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    assert_int_equal(system(cmd), 0);
}

/* stdout holds no control byte but newlines, and no line a model started */
static void assert_clean(const char *cmd, const char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        if ((c < 0x20 && c != '\n') || c == 0x7f)
            fail_msg("%s\nstdout byte %zu is 0x%02x:\n%s", cmd, i, c, out);
    }
    for (const char *l = out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, "FORGED", 6))
            fail_msg("%s\na model-made line on stdout:\n%s", cmd, out);
}

static void escapes_on_stdout(void **state)
{
    (void)state;
    names nm = {EVIL "p", EVIL "v", EVIL "g", EVIL "d", "w1" EVIL, "w2" EVIL, "y" EVIL, "node" EVIL, NULL, 1};
    scratch s;
    scratch_new(&s, &nm);
    char cmd[2048], out[65536], err[4096];
    const char *fmts[] = {"%s import %s", "%s import %s --print", "%s run %s --input x=%s"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, fmts[i], LANTERN, s.model, s.x);
        size_t olen = sizeof out;
        int rc = sh(cmd, out, &olen, err, sizeof err);
        if (rc != 0)
            fail_msg("%s\nexit %d: %s", cmd, rc, err);
        assert_clean(cmd, out, olen);
        /* the names are there, escaped */
        assert_non_null(strstr(out, "\\x1b[31m\\x1b]0;pwned\\x07\\x0aFORGED"));
    }
    /* grad: the string output is not differentiable, so a model without it */
    nm.with_string = 0;
    write_model(&nm, s.model);
    snprintf(cmd, sizeof cmd, "%s grad %s --input x=%s --output-dir %s/g", LANTERN, s.model, s.x, s.dir);
    size_t olen = sizeof out;
    int rc = sh(cmd, out, &olen, err, sizeof err);
    if (rc != 0)
        fail_msg("%s\nexit %d: %s", cmd, rc, err);
    assert_clean(cmd, out, olen);
    assert_non_null(strstr(out, "w1\\x1b[31m"));
    /* an op type lantern does not know, listed by import (exit 2) */
    nm.unknown_op = "Evil\x1b[2J\nFORGED";
    write_model(&nm, s.model);
    snprintf(cmd, sizeof cmd, "%s import %s", LANTERN, s.model);
    olen = sizeof out;
    assert_int_equal(sh(cmd, out, &olen, err, sizeof err), 2);
    assert_clean(cmd, out, olen);
    assert_non_null(strstr(out, "Evil\\x1b[2J\\x0aFORGED"));
    assert_int_equal(count_lines(err), 1);
    scratch_free(&s);
}

/* The escaping itself: UTF-8 text stays, everything a terminal acts on goes. */
static void printable_rules(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(lt_str_printable("caf\xc3\xa9 \xe2\x82\xac ok", buf, sizeof buf), "caf\xc3\xa9 \xe2\x82\xac ok");
    assert_string_equal(lt_str_printable("a\x1b[0m\tb\x7f", buf, sizeof buf), "a\\x1b[0m\\x09b\\x7f");
    /* C1 CSI as UTF-8 and as a bare byte, a bidi override, a truncated sequence, an overlong '/' */
    assert_string_equal(lt_str_printable("\xc2\x9b" "1\x9b" "2\xe2\x80\xae" "3\xe2\x82" "4\xc0\xaf", buf, sizeof buf),
                        "\\xc2\\x9b1\\x9b2\\xe2\\x80\\xae3\\xe2\\x824\\xc0\\xaf");
    /* truncation never splits an escape */
    assert_string_equal(lt_str_printable("ab\x1b", buf, 6), "ab");
    assert_string_equal(lt_str_printable(NULL, buf, sizeof buf), "");
}

static int file_is(const char *path, const char *want)
{
    char got[256] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = 0;
    fclose(f);
    return !strcmp(got, want);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void npy_never_follows_links(void **state)
{
    (void)state;
    scratch s;
    scratch_new(&s, &clean);
    char out_dir[256], victim[256], victim2[256], link[300], cmd[2048], out[8192], err[4096];
    snprintf(out_dir, sizeof out_dir, "%s/out", s.dir);
    snprintf(victim, sizeof victim, "%s/victim", s.dir);
    snprintf(victim2, sizeof victim2, "%s/victim2", s.dir);
    assert_int_equal(mkdir(out_dir, 0777), 0);
    write_text(victim, "precious\n");
    write_text(victim2, "also precious\n");
    /* links at the old fixed temp names and at the final names */
    const char *tmps[] = {"y.npy.tmp", "w1.npy.tmp", "w2.npy.tmp"}, *finals[] = {"y.npy", "w1.npy"};
    for (int i = 0; i < 3; i++) {
        snprintf(link, sizeof link, "%s/%s", out_dir, tmps[i]);
        assert_int_equal(symlink(victim, link), 0);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(link, sizeof link, "%s/%s", out_dir, finals[i]);
        assert_int_equal(symlink(victim2, link), 0);
    }
    snprintf(cmd, sizeof cmd, "%s run %s --input x=%s --output-dir %s", LANTERN, s.model, s.x, out_dir);
    size_t olen = sizeof out;
    int rc = sh(cmd, out, &olen, err, sizeof err);
    if (rc != 0)
        fail_msg("%s\nexit %d: %s", cmd, rc, err);
    snprintf(cmd, sizeof cmd, "%s grad %s --input x=%s --output-dir %s", LANTERN, s.model, s.x, out_dir);
    olen = sizeof out;
    rc = sh(cmd, out, &olen, err, sizeof err);
    if (rc != 0)
        fail_msg("%s\nexit %d: %s", cmd, rc, err);
    assert_true(file_is(victim, "precious\n"));
    assert_true(file_is(victim2, "also precious\n"));
    /* the final names became the arrays themselves */
    const char *all[] = {"y.npy", "w1.npy", "w2.npy"};
    for (int i = 0; i < 3; i++) {
        struct stat st;
        snprintf(link, sizeof link, "%s/%s", out_dir, all[i]);
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        lt_value *v;
        lt_err e;
        assert_int_equal(lt_value_load(link, &v, &e), LT_OK);
        lt_value_free(v);
    }
    /* dw2 = 1 for a sum loss: the gradient really was written */
    lt_value *g;
    lt_err e;
    snprintf(link, sizeof link, "%s/w2.npy", out_dir);
    assert_int_equal(lt_value_load(link, &g, &e), LT_OK);
    double ones[2] = {1, 1};
    tu_assert_close(g, ones, 2, 0, 0, 7);
    lt_value_free(g);
    scratch_free(&s);
}

static void colliding_npy_names(void **state)
{
    (void)state;
    names nm = clean;
    nm.w1 = "a/b";
    nm.w2 = "a_b";
    scratch s;
    scratch_new(&s, &nm);
    char cmd[2048], out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", s.dir);
    const char *want[] = {"'a/b'", "'a_b'", "a_b.npy"};
    snprintf(cmd, sizeof cmd, "%s grad %s --input x=%s --output-dir %s", LANTERN, s.model, s.x, out_dir);
    refused(cmd, want, 3);
    struct stat st;
    assert_int_not_equal(stat(out_dir, &st), 0); /* refused before anything was written */
    /* export --weights would read one file for both */
    assert_int_equal(mkdir(out_dir, 0777), 0);
    snprintf(cmd, sizeof cmd, "%s export %s --weights %s -o %s/e.onnx", LANTERN, s.model, out_dir, s.dir);
    refused(cmd, want, 3);
    /* outputs of run: "s_[2J" and "s\x1b[2J" are both s__2J.npy */
    nm = clean;
    nm.y = "s_[2J";
    nm.with_string = 1;
    write_model(&nm, s.model);
    snprintf(cmd, sizeof cmd, "%s run %s --input x=%s --output-dir %s", LANTERN, s.model, s.x, out_dir);
    const char *want_run[] = {"'s_[2J'", "'s\\x1b[2J'", "s__2J.npy"};
    refused(cmd, want_run, 3);
    scratch_free(&s);
}

/* Every file a command writes is checked before the work: a folder, a path
 * ending in '/', a device or a symbolic link is refused with one line. The
 * data named does not exist, so a check left to the end would report the
 * data instead. */
static void output_targets_checked_first(void **state)
{
    (void)state;
    scratch s;
    scratch_new(&s, &clean);
    char victim[256], link[256], file[256], cmd[2048];
    snprintf(victim, sizeof victim, "%s/victim", s.dir);
    snprintf(link, sizeof link, "%s/link.onnx", s.dir);
    snprintf(file, sizeof file, "%s/plain", s.dir);
    write_text(victim, "precious\n");
    write_text(file, "x\n");
    assert_int_equal(symlink(victim, link), 0);
    const char *train = LANTERN " train " MODELS "mlp.onnx --data mnist=/nonexistent/lt_data";
    struct {
        const char *opts, *target, *want;
    } cases[] = {
        {"-o", s.dir, "is a folder"},
        {"-o", "/tmp/lt_no_such_file/", "names a folder"},
        {"-o", "/dev/null", "not a regular file"},
        {"-o", link, "symbolic link"},
        {"--plot", s.dir, "is a folder"},
        {"--plot", link, "symbolic link"},
        {"--log", s.dir, "is a folder"},
        {"--log", link, "symbolic link"},
        {"--checkpoint-dir", file, "not a folder"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *want[] = {cases[i].opts, cases[i].target, cases[i].want};
        if (!strcmp(cases[i].opts, "-o"))
            snprintf(cmd, sizeof cmd, "%s -o %s", train, cases[i].target);
        else
            snprintf(cmd, sizeof cmd, "%s -o %s/out.onnx %s %s", train, s.dir, cases[i].opts, cases[i].target);
        refused(cmd, want, 3);
    }
    /* export -o: the same checks, before the model is read */
    const char *targets[] = {s.dir, "/dev/null", link};
    for (int i = 0; i < 3; i++) {
        const char *want[] = {"-o", targets[i]};
        snprintf(cmd, sizeof cmd, "%s export %s -o %s", LANTERN, s.model, targets[i]);
        refused(cmd, want, 2);
    }
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_true(file_is(victim, "precious\n"));
    scratch_free(&s);
}

/* 8 rows of 784 seeded features and a class label 0..9 (models/mlp.onnx) */
static void write_mlp_csv(const char *path, unsigned seed)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int r = 0; r < 8; r++) {
        for (int c = 0; c < 784; c++) {
            seed = seed * 1103515245u + 12345u;
            fprintf(f, "%.4f,", (double)(seed >> 8 & 0xffff) / 65536.0);
        }
        fprintf(f, "%d\n", r % 10);
    }
    assert_int_equal(fclose(f), 0);
}

static int same_bytes(const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* -o, --log and --plot never name the model (--log, --plot), a file of the
 * data, the checkpoint or each other; a new run does not replace another's
 * checkpoint; a test file the spec names must exist; a run that fails
 * leaves an existing log as it was. Each is refused before any work, and
 * every file keeps its bytes. */
static void outputs_never_clobber_inputs(void **state)
{
    (void)state;
    scratch s;
    scratch_new(&s, &clean);
    char model[256], keep_model[256], tr[256], te[256], keep_tr[256], keep_te[256], ck[256], ckf[256], logf[256];
    char cmd[4096], base[1024];
    snprintf(model, sizeof model, "%s/mlp.onnx", s.dir);
    snprintf(keep_model, sizeof keep_model, "%s/mlp.keep", s.dir);
    snprintf(tr, sizeof tr, "%s/train.csv", s.dir);
    snprintf(te, sizeof te, "%s/test.csv", s.dir);
    snprintf(keep_tr, sizeof keep_tr, "%s/train.keep", s.dir);
    snprintf(keep_te, sizeof keep_te, "%s/test.keep", s.dir);
    snprintf(ck, sizeof ck, "%s/ck", s.dir);
    snprintf(ckf, sizeof ckf, "%s/ck/checkpoint.ltck", s.dir);
    snprintf(logf, sizeof logf, "%s/run.csv", s.dir);
    snprintf(cmd, sizeof cmd, "cp %smlp.onnx %s && cp %smlp.onnx %s", MODELS, model, MODELS, keep_model);
    assert_int_equal(system(cmd), 0);
    write_mlp_csv(tr, 1);
    write_mlp_csv(te, 2);
    write_mlp_csv(keep_tr, 1);
    write_mlp_csv(keep_te, 2);
    snprintf(base, sizeof base, "%s train %s --data csv=%s,%s --batch 4 --threads 1", LANTERN, model, tr, te);
    /* a run that leaves a checkpoint behind */
    snprintf(cmd, sizeof cmd, "%s -o %s/first.onnx --checkpoint-dir %s >/dev/null 2>&1", base, s.dir, ck);
    assert_int_equal(system(cmd), 0);
    char keep_ck[256];
    snprintf(keep_ck, sizeof keep_ck, "%s/ck.keep", s.dir);
    snprintf(cmd, sizeof cmd, "cp %s %s", ckf, keep_ck);
    assert_int_equal(system(cmd), 0);
    struct {
        const char *extra, *want1, *want2;
    } cases[] = {
        {"-o %s/o.onnx --log %s", "--log", "the model"},
        {"-o %s/o.onnx --log %s", "--log", "a file of --data"},
        {"-o %s/o.onnx --plot %s", "--plot", "a file of --data"},
        {"-o %s", "-o", "a file of --data"},
        {"-o %s --checkpoint-dir %s/ck --resume", "-o", "the checkpoint"},
        {"-o %s/o.onnx --log %s/same --plot %s/same", "--log", "--plot"},
        {"-o %s/o.onnx --checkpoint-dir %s/ck", "--checkpoint-dir", "--resume continues it"},
    };
    const char *target[] = {model, tr, te, tr, ckf, s.dir, s.dir};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char extra[1024];
        if (i == 4)
            snprintf(extra, sizeof extra, cases[i].extra, target[i], s.dir);
        else if (i == 5)
            snprintf(extra, sizeof extra, cases[i].extra, s.dir, s.dir, s.dir);
        else if (i == 6)
            snprintf(extra, sizeof extra, cases[i].extra, s.dir, s.dir);
        else if (i == 3)
            snprintf(extra, sizeof extra, cases[i].extra, target[i]);
        else
            snprintf(extra, sizeof extra, cases[i].extra, s.dir, target[i]);
        snprintf(cmd, sizeof cmd, "%s %s", base, extra);
        const char *want[] = {cases[i].want1, cases[i].want2};
        refused(cmd, want, 2);
        assert_true(same_bytes(model, keep_model));
        assert_true(same_bytes(tr, keep_tr));
        assert_true(same_bytes(te, keep_te));
        assert_true(same_bytes(ckf, keep_ck));
    }
    /* Ctrl-C's checkpoint folder beside -o is a file */
    char stop[256];
    snprintf(stop, sizeof stop, "%s/o.checkpoint", s.dir);
    write_text(stop, "precious\n");
    snprintf(cmd, sizeof cmd, "%s -o %s/o.onnx", base, s.dir);
    const char *want_stop[] = {"o.checkpoint", "not a folder"};
    refused(cmd, want_stop, 2);
    assert_true(file_is(stop, "precious\n"));
    /* a named test file that is missing; the log it would write stays */
    write_text(logf, "earlier run\n");
    snprintf(cmd, sizeof cmd, "%s train %s --data csv=%s,%s/none.csv -o %s/o2.onnx --log %s", LANTERN, model, tr, s.dir,
             s.dir, logf);
    const char *want_missing[] = {"none.csv", "No such file"};
    refused(cmd, want_missing, 2);
    assert_true(file_is(logf, "earlier run\n"));
    /* export -o: never the checkpoint it reads, nor a .npy of --weights */
    snprintf(cmd, sizeof cmd, "%s export %s --model %s -o %s", LANTERN, ck, model, ckf);
    const char *want_ck[] = {"-o", "the checkpoint"};
    refused(cmd, want_ck, 2);
    assert_true(same_bytes(ckf, keep_ck));
    snprintf(cmd, sizeof cmd, "%s export %s --weights %s -o %s/w.npy", LANTERN, model, s.dir, s.dir);
    const char *want_npy[] = {"-o", "--weights"};
    refused(cmd, want_npy, 2);
    scratch_free(&s);
}

/* A log that cannot be written (ENOSPC on /dev/full) ends the run with one
 * line and exit 2, and no trained model is written as if all went well. */
static void log_write_failure_reported(void **state)
{
    (void)state;
    scratch s;
    scratch_new(&s, &clean);
    char cmd[2048], out_model[256];
    snprintf(out_model, sizeof out_model, "%s/out.onnx", s.dir);
    snprintf(cmd, sizeof cmd,
             "%s train %smlp.onnx --data fashion-mnist --limit 128 --test-limit 64 --batch 64 --epochs 1 "
             "--log /dev/full -o %s",
             LANTERN, MODELS, out_model);
    const char *want[] = {"--log /dev/full", "No space left"};
    refused(cmd, want, 2);
    assert_int_not_equal(access(out_model, F_OK), 0);
    scratch_free(&s);
}

static void weights_folder_must_exist(void **state)
{
    (void)state;
    scratch s;
    scratch_new(&s, &clean);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s export %s --weights /nonexistent/lt_weights -o %s/o.onnx", LANTERN, s.model, s.dir);
    const char *want[] = {"--weights", "/nonexistent/lt_weights"};
    refused(cmd, want, 2);
    snprintf(cmd, sizeof cmd, "%s export %s --weights %s -o %s/o.onnx", LANTERN, s.model, s.model, s.dir);
    const char *want2[] = {"--weights", "not a folder"};
    refused(cmd, want2, 2);
    snprintf(cmd, sizeof cmd, "%s/o.onnx", s.dir);
    assert_int_not_equal(access(cmd, F_OK), 0);
    scratch_free(&s);
}

static void repeated_input_refused(void **state)
{
    (void)state;
    scratch s;
    scratch_new(&s, &clean);
    char cmd[2048];
    const char *want[] = {"--input", "'x'", "twice"};
    snprintf(cmd, sizeof cmd, "%s run %s --input x=%s --input x=%s", LANTERN, s.model, s.x, s.x);
    refused(cmd, want, 3);
    snprintf(cmd, sizeof cmd, "%s grad %s --input x=%s --input x=%s", LANTERN, s.model, s.x, s.x);
    refused(cmd, want, 3);
    const char *want_seed[] = {"--seed", "'y'", "twice"};
    snprintf(cmd, sizeof cmd, "%s grad %s --input x=%s --seed y=%s --seed y=%s", LANTERN, s.model, s.x, s.x, s.x);
    refused(cmd, want_seed, 3);
    scratch_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(printable_rules),
        cmocka_unit_test(escapes_on_stdout),
        cmocka_unit_test(npy_never_follows_links),
        cmocka_unit_test(colliding_npy_names),
        cmocka_unit_test(output_targets_checked_first),
        cmocka_unit_test(log_write_failure_reported),
        cmocka_unit_test(outputs_never_clobber_inputs),
        cmocka_unit_test(weights_folder_must_exist),
        cmocka_unit_test(repeated_input_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
