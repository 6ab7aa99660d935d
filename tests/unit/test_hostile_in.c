/* Hostile files on the input side: a FIFO wherever lantern reads a file
 * (models, external data, --input, datasets, checkpoints, --resume) is
 * refused at once instead of blocking; an op lantern lacks is named with
 * its node when the model runs; .npy headers are parsed as the Python dict
 * they are; external data names may hold ".." inside a name; checkpoint
 * folders take one writer and --resume only the run that wrote them;
 * crafted checkpoint counters are refused; integer element stores from
 * doubles are defined; a runaway Loop names itself when memory runs out
 * and stops on Ctrl-C. Every lantern run is under `timeout`, and the test
 * itself under alarm(), so a regression fails instead of hanging. */
#include "testutil.h"
#include "onnx.pb-c.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* paths here are short; gcc cannot know that */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

/* AddressSanitizer reserves terabytes of shadow address space, so a build
 * with it cannot run under an address-space limit */
#if defined(__SANITIZE_ADDRESS__)
#define LT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LT_TEST_ASAN 1
#endif
#endif

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static char dir[] = "/tmp/lt_hostile_inXXXXXX";

/* ---- running lantern ---- */

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Runs `lantern ARGS` (killed after `secs`), stdout dropped; returns the
 * exit code (-1 when killed) with stderr in err. */
static int lantern_t(int secs, const char *args, char *err, size_t len)
{
    char cmd[8192], ef[700];
    snprintf(ef, sizeof ef, "%s/stderr", dir);
    snprintf(cmd, sizeof cmd, "timeout -s KILL %d %s %s >/dev/null 2>%s </dev/null", secs, LANTERN, args, ef);
    int st = system(cmd);
    FILE *f = fopen(ef, "r");
    size_t got = f ? fread(err, 1, len - 1, f) : 0;
    err[got] = 0;
    if (f)
        fclose(f);
    return WIFEXITED(st) && WEXITSTATUS(st) != 137 ? WEXITSTATUS(st) : -1;
}

static int lantern(const char *args, char *err, size_t len) { return lantern_t(60, args, err, len); }

/* lantern ARGS must fail with exit 2 and one line holding want (and want2). */
static void refused(const char *args, const char *want, const char *want2)
{
    char err[4096];
    int rc = lantern(args, err, sizeof err);
    if (rc != 2 || count_lines(err) != 1 || !strstr(err, want) || (want2 && !strstr(err, want2)))
        fail_msg("lantern %s: exit %d (want 2, one line with '%s'%s%s): %s", args, rc, want, want2 ? " and " : "",
                 want2 ? want2 : "", err);
}

static void path(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", dir, name); }

static void spit(const char *p, const void *data, size_t len)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void fifo(const char *p)
{
    unlink(p);
    if (mkfifo(p, 0600) != 0)
        fail_msg("mkfifo %s: %s", p, strerror(errno));
}

/* ---- models through the protobuf structs (an arena frees them) ---- */

static void *arena[512];
static int narena;

static void *A(size_t n)
{
    assert_true(narena < 512);
    void *p = calloc(1, n);
    assert_non_null(p);
    return arena[narena++] = p;
}

static void arena_free(void)
{
    while (narena)
        free(arena[--narena]);
}

static Onnx__ValueInfoProto *vi(const char *name, int elem, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = A(sizeof *v);
    Onnx__TypeProto *t = A(sizeof *t);
    Onnx__TypeProto__Tensor *tt = A(sizeof *tt);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    v->name = (char *)name;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = A(sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        sh->n_dim = (size_t)rank;
        sh->dim = A(sizeof *sh->dim * (rank + 1));
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = A(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] >= 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = "n";
            }
            sh->dim[i] = d;
        }
        tt->shape = sh;
    }
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    v->type = t;
    return v;
}

static Onnx__NodeProto *node(const char *op, const char *name, const char *ins, const char *outs)
{
    Onnx__NodeProto *n = A(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    /* comma-separated names */
    const char *lists[2] = {ins, outs};
    for (int k = 0; k < 2; k++) {
        char **v = A(sizeof *v * 8), *copy = A(strlen(lists[k]) + 1);
        size_t c = 0;
        strcpy(copy, lists[k]);
        for (char *s = strtok(copy, ","); s && c < 8; s = strtok(NULL, ","))
            v[c++] = s;
        if (k == 0) {
            n->n_input = c;
            n->input = v;
        } else {
            n->n_output = c;
            n->output = v;
        }
    }
    return n;
}

static void attr_graph(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = A(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = g;
    n->n_attribute = 1;
    n->attribute = A(sizeof *n->attribute);
    n->attribute[0] = a;
}

static Onnx__TensorProto *tensor(const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                                 size_t bytes)
{
    Onnx__TensorProto *t = A(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = A(sizeof *t->dims * (rank + 1));
    memcpy(t->dims, dims, sizeof *dims * rank);
    if (data) {
        t->has_raw_data = 1;
        t->raw_data.len = bytes;
        t->raw_data.data = A(bytes + 1);
        memcpy(t->raw_data.data, data, bytes);
    }
    return t;
}

#define LIST(T, ...) ((T *[]){__VA_ARGS__}), sizeof((T *[]){__VA_ARGS__}) / sizeof(T *)

static Onnx__GraphProto *graph(Onnx__NodeProto **nodes, size_t nn, Onnx__TensorProto **inits, size_t ni,
                               Onnx__ValueInfoProto **ins, size_t nin, Onnx__ValueInfoProto **outs, size_t nout)
{
    Onnx__GraphProto *g = A(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = "g";
    g->n_node = nn;
    g->node = A(sizeof *g->node * (nn + 1));
    memcpy(g->node, nodes, sizeof *nodes * nn);
    g->n_initializer = ni;
    g->initializer = A(sizeof *g->initializer * (ni + 1));
    if (ni)
        memcpy(g->initializer, inits, sizeof *inits * ni);
    g->n_input = nin;
    g->input = A(sizeof *g->input * (nin + 1));
    if (nin)
        memcpy(g->input, ins, sizeof *ins * nin);
    g->n_output = nout;
    g->output = A(sizeof *g->output * (nout + 1));
    memcpy(g->output, outs, sizeof *outs * nout);
    return g;
}

static void write_model(const char *p, Onnx__GraphProto *g)
{
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *oss[1] = {&os};
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.domain = "";
    os.has_version = 1;
    os.version = 13;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = oss;
    m.graph = g;
    size_t n = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    onnx__model_proto__pack(&m, buf);
    spit(p, buf, n);
    free(buf);
}

static const int64_t two[1] = {2};

/* y = Identity(x), x float[2]; with ext, y = Identity(w) and w's 8 bytes
 * live in external data at `ext`. */
static void identity_model(const char *p, const char *ext)
{
    Onnx__TensorProto *w = tensor("w", LT_F32, 1, two, NULL, 0);
    if (ext) {
        Onnx__StringStringEntryProto *e = A(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = "location";
        e->value = (char *)ext;
        w->n_external_data = 1;
        w->external_data = A(sizeof *w->external_data);
        w->external_data[0] = e;
        w->has_data_location = 1;
        w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        write_model(p, graph(LIST(Onnx__NodeProto, node("Identity", "id", "w", "y")), LIST(Onnx__TensorProto, w),
                             NULL, 0, LIST(Onnx__ValueInfoProto, vi("y", LT_F32, 1, two))));
    } else {
        write_model(p, graph(LIST(Onnx__NodeProto, node("Identity", "id", "x", "y")), NULL, 0,
                             LIST(Onnx__ValueInfoProto, vi("x", LT_F32, 1, two)),
                             LIST(Onnx__ValueInfoProto, vi("y", LT_F32, 1, two))));
    }
    arena_free();
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    char d[600];
    path(d, sizeof d, "data");
    mkdir(d, 0700);
    return tu_write_idx_split(d, "train", 64, 1) || tu_write_idx_split(d, "t10k", 32, 2) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- 1. FIFOs ---- */

static void fifos_refused(void **state)
{
    (void)state;
    alarm(300);
    char p[700], q[700], m[700], a[4096], sub[700];
    /* the model itself */
    path(p, sizeof p, "model.fifo");
    fifo(p);
    snprintf(a, sizeof a, "import %s", p);
    refused(a, p, "FIFO");
    snprintf(a, sizeof a, "run %s", p);
    refused(a, p, "FIFO");
    /* external data that is a FIFO in the model's folder */
    path(sub, sizeof sub, "ext");
    mkdir(sub, 0700);
    snprintf(m, sizeof m, "%s/ext.onnx", sub);
    identity_model(m, "w.bin");
    snprintf(q, sizeof q, "%s/w.bin", sub);
    fifo(q);
    snprintf(a, sizeof a, "import %s", m);
    refused(a, m, "FIFO");
    /* --input */
    path(m, sizeof m, "id.onnx");
    identity_model(m, NULL);
    path(q, sizeof q, "x.npy");
    fifo(q);
    snprintf(a, sizeof a, "run %s --input x=%s", m, q);
    refused(a, q, "FIFO");
    path(q, sizeof q, "x.pb");
    fifo(q);
    snprintf(a, sizeof a, "run %s --input x=%s", m, q);
    refused(a, q, "FIFO");
    /* datasets: npz, IDX, CIFAR-10, onnx-pb */
    path(q, sizeof q, "data.npz");
    fifo(q);
    snprintf(a, sizeof a, "eval %smlp.onnx --data npz=%s", MODELS, q);
    refused(a, q, "FIFO");
    path(sub, sizeof sub, "idx");
    mkdir(sub, 0700);
    assert_int_equal(tu_write_idx_split(sub, "t10k", 8, 3), 0);
    snprintf(q, sizeof q, "%s/t10k-images-idx3-ubyte.gz", sub);
    fifo(q);
    snprintf(a, sizeof a, "eval %smlp.onnx --data mnist=%s", MODELS, sub);
    refused(a, q, "FIFO");
    path(sub, sizeof sub, "cifar");
    mkdir(sub, 0700);
    snprintf(q, sizeof q, "%s/test_batch.bin", sub);
    fifo(q);
    snprintf(a, sizeof a, "eval %scnn.onnx --data cifar10=%s", MODELS, sub);
    refused(a, q, NULL);
    path(sub, sizeof sub, "pb");
    mkdir(sub, 0700);
    snprintf(q, sizeof q, "%s/x_test.pb", sub);
    fifo(q);
    snprintf(q, sizeof q, "%s/y_test.pb", sub);
    fifo(q);
    snprintf(q, sizeof q, "%s/x_test.pb", sub);
    snprintf(a, sizeof a, "eval %smlp.onnx --data onnx-pb=%s", MODELS, sub);
    refused(a, q, "FIFO");
    /* a checkpoint, named or in its folder, and --resume */
    path(sub, sizeof sub, "ck");
    mkdir(sub, 0700);
    snprintf(q, sizeof q, "%s/checkpoint.ltck", sub);
    fifo(q);
    path(p, sizeof p, "out.onnx");
    snprintf(a, sizeof a, "export %s --model %smlp.onnx -o %s", q, MODELS, p);
    refused(a, q, "FIFO");
    snprintf(a, sizeof a, "export %s --model %smlp.onnx -o %s", sub, MODELS, p);
    refused(a, sub, NULL);
    path(m, sizeof m, "data");
    snprintf(a, sizeof a, "train %smlp.onnx --data fashion-mnist=%s --epochs 1 --checkpoint-dir %s --resume -o %s",
             MODELS, m, sub, p);
    refused(a, q, "FIFO");
    /* check --expect */
    path(q, sizeof q, "expect.fifo");
    fifo(q);
    path(m, sizeof m, "case");
    mkdir(m, 0700);
    snprintf(p, sizeof p, "%s/model.onnx", m);
    identity_model(p, NULL);
    snprintf(a, sizeof a, "check --expect %s %s", q, m);
    refused(a, q, "FIFO");
    alarm(0);
}

/* ---- 4. an op lantern lacks, named with its node ---- */

static void unknown_op_named(void **state)
{
    (void)state;
    char m[700], x[700], a[2048], err[4096];
    path(m, sizeof m, "unknown.onnx");
    write_model(m, graph(LIST(Onnx__NodeProto, node("Relu", "r", "x", "h"), node("FrobnicateX", "weird", "h", "Y")),
                         NULL, 0, LIST(Onnx__ValueInfoProto, vi("x", LT_F32, 1, two)),
                         LIST(Onnx__ValueInfoProto, vi("Y", LT_F32, 1, two))));
    arena_free();
    /* import lists it as an op lantern cannot run */
    snprintf(a, sizeof a, "import %s", m);
    assert_int_equal(lantern(a, err, sizeof err), 2);
    lt_value *xv = tu_from(LT_F32, 1, two, (const double[]){1, -2});
    lt_err e;
    path(x, sizeof x, "x2.npy");
    assert_int_equal(lt_value_save_npy(xv, x, &e), LT_OK);
    lt_value_free(xv);
    snprintf(a, sizeof a, "run %s --input x=%s", m, x);
    refused(a, "node 'weird' (FrobnicateX): no CPU kernel for op FrobnicateX", m);
}

/* ---- 5. .npy headers parsed as a dict ---- */

/* dir/name.npy: version 1.0 with header text hdr (padded) and the 6 floats
 * 0..5 as data. */
static void npy_file(char *p, size_t len, const char *name, const char *hdr)
{
    path(p, len, name);
    size_t hl = strlen(hdr), pad = (64 - (10 + hl + 1) % 64) % 64, total = hl + pad + 1;
    uint8_t *b = malloc(10 + total + 24);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(total & 0xff);
    b[9] = (uint8_t)(total >> 8);
    memcpy(b + 10, hdr, hl);
    memset(b + 10 + hl, ' ', pad);
    b[10 + hl + pad] = '\n';
    float v[6] = {0, 1, 2, 3, 4, 5};
    memcpy(b + 10 + total, v, sizeof v);
    spit(p, b, 10 + total + 24);
    free(b);
}

static void npy_header_parsed(void **state)
{
    (void)state;
    char p[700];
    lt_err e;
    lt_value *v;
    /* accepted: any whitespace, either quote, keys in any order */
    const char *good[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
        "{'descr':'<f4','fortran_order':False,'shape':(2,3)}",
        "{ \"shape\" :\t( 2 ,3 ,) ,\n'fortran_order' : False , 'descr' : '<f4' }",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        npy_file(p, sizeof p, "good.npy", good[i]);
        if (lt_value_load(p, &v, &e) != LT_OK)
            fail_msg("header %zu: %s", i, e.msg);
        const lt_tensor *t = lt_value_tensor(v);
        assert_int_equal(t->rank, 2);
        assert_int_equal(t->dims[0], 2);
        assert_int_equal(t->dims[1], 3);
        assert_true(((float *)t->data)[5] == 5.0f);
        lt_value_free(v);
    }
    /* Fortran order without the space used to load as C order */
    npy_file(p, sizeof p, "fortran.npy", "{'descr':'<f4','fortran_order':True,'shape':(2,3)}");
    assert_int_equal(lt_value_load(p, &v, &e), LT_ERR_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "Fortran"));
    assert_non_null(strstr(e.msg, p));
    /* one-dimensional Fortran order is C order */
    npy_file(p, sizeof p, "f1.npy", "{'descr':'<f4','fortran_order':True,'shape':(6,)}");
    assert_int_equal(lt_value_load(p, &v, &e), LT_OK);
    lt_value_free(v);
    const char *bad[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (6,)}", /* duplicate */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}",    /* unknown key */
        "{'descr': '<f4', 'fortran_order': False}",                                 /* no shape */
        "{'descr': '<f4', 'fortran_order': Fals, 'shape': (2, 3)}",                 /* not a bool */
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}",                 /* no comma */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}",               /* negative dim */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x",              /* trailing text */
        "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",                  /* no braces */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",                 /* no comma in shape */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        npy_file(p, sizeof p, "bad.npy", bad[i]);
        lt_status s = lt_value_load(p, &v, &e);
        if (s != LT_ERR_INVALID || !strstr(e.msg, p) || strchr(e.msg, '\n'))
            fail_msg("header %zu (%s): status %d: %s", i, bad[i], s, s == LT_OK ? "loaded" : e.msg);
    }
}

/* ---- 6. ".." inside a name stays in the folder ---- */

static void dots_inside_a_name(void **state)
{
    (void)state;
    char sub[700], m[700], q[700];
    path(sub, sizeof sub, "dots");
    mkdir(sub, 0700);
    snprintf(q, sizeof q, "%s/a..b.bin", sub);
    float w[2] = {3.5f, -1.25f};
    spit(q, w, sizeof w);
    snprintf(m, sizeof m, "%s/m.onnx", sub);
    identity_model(m, "a..b.bin");
    lt_err e;
    lt_model *md;
    if (lt_model_load(m, &md, &e) != LT_OK)
        fail_msg("%s", e.msg);
    lt_session *s;
    lt_value *y = NULL;
    assert_int_equal(lt_session_new(md, &s, &e), LT_OK);
    assert_int_equal(lt_session_run(s, 0, NULL, NULL, &y, &e), LT_OK);
    tu_assert_close(y, (const double[]){3.5, -1.25}, 2, 0, 0, 0);
    lt_value_free(y);
    lt_session_free(s);
    lt_model_free(md);
    /* a component that is "..", and an absolute path, stay refused */
    const char *outside[] = {"../w.bin", "x/../../w.bin", "/etc/passwd", ".."};
    path(q, sizeof q, "w.bin");
    spit(q, w, sizeof w);
    for (size_t i = 0; i < sizeof outside / sizeof *outside; i++) {
        identity_model(m, outside[i]);
        assert_int_equal(lt_model_load(m, &md, &e), LT_ERR_INVALID);
        assert_non_null(strstr(e.msg, "leaves the model's folder"));
    }
    /* a link out of the folder is refused where it resolves */
    snprintf(q, sizeof q, "%s/link.bin", sub);
    char target[700];
    path(target, sizeof target, "w.bin");
    assert_int_equal(symlink(target, q), 0);
    identity_model(m, "link.bin");
    assert_int_equal(lt_model_load(m, &md, &e), LT_ERR_INVALID);
    assert_non_null(strstr(e.msg, "outside the model's folder"));
}

/* ---- 2 and 3. checkpoint folders, resumed options, crafted counters ---- */

static char *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        fail_msg("%s: missing", p);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0'; /* callers print it as a string */
    *len = (size_t)n;
    return b;
}

/* lantern train on the small data with checkpoints in dir/ck; extra goes
 * last (e.g. "--resume --lr 0.5"). */
static void train_args(char *a, size_t len, const char *extra)
{
    char data[700], ck[700], out[700];
    path(data, sizeof data, "data");
    path(ck, sizeof ck, "ck2");
    path(out, sizeof out, "ck2_out.onnx");
    snprintf(a, len,
             "train %smlp.onnx --data fashion-mnist=%s --epochs 1 --batch 8 --limit 32 --test-limit 16 --seed 3 "
             "--optimizer adam --lr 0.002 --checkpoint-dir %s -o %s %s",
             MODELS, data, ck, out, extra);
}

static void checkpoint_folder(void **state)
{
    (void)state;
    alarm(300);
    char a[4096], err[4096], ck[700], lockf[760], file[760];
    path(ck, sizeof ck, "ck2");
    mkdir(ck, 0700);
    train_args(a, sizeof a, "");
    if (lantern(a, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* a new run does not replace the checkpoint the folder holds */
    refused(a, ck, "--resume continues it");
    /* a second writer while the folder is held: refused at once */
    train_args(a, sizeof a, "--resume");
    snprintf(lockf, sizeof lockf, "%s/checkpoint.lock", ck);
    int fd = open(lockf, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
    time_t t0 = time(NULL);
    refused(a, ck, "in use by another lantern run");
    assert_true(time(NULL) - t0 < 20);
    close(fd);
    /* --resume with other options: the first that differs is named */
    train_args(a, sizeof a, "--resume --lr 0.5");
    refused(a, "--lr 0.002", "--lr 0.5");
    train_args(a, sizeof a, "--resume --seed 4");
    refused(a, "--seed 3", "--seed 4");
    train_args(a, sizeof a, "--resume --batch 4");
    refused(a, "--batch", ck);
    train_args(a, sizeof a, "--resume --optimizer sgd");
    refused(a, "--optimizer", ck);
    /* the same options resume (the run was over: nothing left to do) */
    train_args(a, sizeof a, "--resume");
    if (lantern(a, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* epoch 2^62 with a good checksum: refused, no overflow */
    snprintf(file, sizeof file, "%s/checkpoint.ltck", ck);
    size_t len;
    char *b = slurp(file, &len);
    int64_t epoch = (int64_t)1 << 62;
    memcpy(b + 32, &epoch, sizeof epoch);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i + 8 < len; i++)
        h = (h ^ (unsigned char)b[i]) * 0x100000001b3ull;
    memcpy(b + len - 8, &h, sizeof h);
    spit(file, b, len);
    free(b);
    refused(a, file, "step counters");
    alarm(0);
}

static void int_stores_defined(void **state)
{
    (void)state;
    const double in[] = {NAN, INFINITY, -INFINITY, 1e300, -1e300, 3.7, -3.7, 200.5, -200.5, 70000.0, 5e9, 1e19, 2e19};
    const int n = sizeof in / sizeof *in;
    static const struct {
        lt_dtype t;
        double lo, hi;
    } types[] = {
        {LT_I8, -128, 127}, {LT_U8, 0, 255}, {LT_I16, -32768, 32767}, {LT_U16, 0, 65535},
        {LT_I32, -2147483648.0, 2147483647.0}, {LT_U32, 0, 4294967295.0},
        {LT_I64, -9223372036854775808.0, 9223372036854775807.0}, {LT_U64, 0, 18446744073709551615.0},
    };
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        lt_tensor t;
        lt_err e;
        int64_t dims[1] = {n};
        assert_int_equal(lt_tensor_alloc(&t, types[k].t, 1, dims, &e), LT_OK);
        for (int i = 0; i < n; i++)
            lt_tensor_set_f64(&t, i, in[i]);
        for (int i = 0; i < n; i++) {
            double want = in[i] != in[i] ? 0 : in[i] <= types[k].lo ? types[k].lo : in[i] >= types[k].hi ? types[k].hi
                                                                                                   : trunc(in[i]);
            double got = types[k].t == LT_U64 ? (double)((uint64_t *)t.data)[i] : lt_tensor_get_f64(&t, i);
            if (got != want)
                fail_msg("%s from %g: %.17g, want %.17g", lt_dtype_name(types[k].t), in[i], got, want);
        }
        lt_tensor_release(&t);
    }
}

/* ---- 7. runaway Loops: out of memory names the Loop; Ctrl-C stops it ---- */

/* A Loop of 2^62 iterations named `name`: with scan, every iteration
 * stacks a fresh 4 MiB ConstantOfShape; without, it carries x along. */
static void loop_model(const char *p, const char *name, int scan)
{
    const int64_t none[1] = {0}, one[1] = {1}, big = (int64_t)1 << 20, ydims[2] = {-1, big};
    int64_t trips = (int64_t)1 << 62;
    uint8_t yes = 1;
    float x0[2] = {1, 2};
    Onnx__TensorProto *M = tensor("M", LT_I64, 0, none, &trips, sizeof trips),
                      *cond = tensor("cond", LT_BOOL, 0, none, &yes, 1),
                      *shp = tensor("shp", LT_I64, 1, one, &big, sizeof big),
                      *x = tensor("x0", LT_F32, 1, two, x0, sizeof x0);
    Onnx__GraphProto *body;
    Onnx__NodeProto *loop;
    if (scan) {
        body = graph(LIST(Onnx__NodeProto, node("Identity", "keep", "c", "c_out"), node("ConstantOfShape", "fill", "shp", "block")),
                     NULL, 0, LIST(Onnx__ValueInfoProto, vi("i", LT_I64, 0, NULL), vi("c", LT_BOOL, 0, NULL)),
                     LIST(Onnx__ValueInfoProto, vi("c_out", LT_BOOL, 0, NULL), vi("block", LT_F32, 1, &big)));
        loop = node("Loop", name, "M,cond", "Y");
    } else {
        body = graph(LIST(Onnx__NodeProto, node("Identity", "keep", "c", "c_out"), node("Identity", "carry", "x_in", "x_out")),
                     NULL, 0,
                     LIST(Onnx__ValueInfoProto, vi("i", LT_I64, 0, NULL), vi("c", LT_BOOL, 0, NULL),
                          vi("x_in", LT_F32, 1, two)),
                     LIST(Onnx__ValueInfoProto, vi("c_out", LT_BOOL, 0, NULL), vi("x_out", LT_F32, 1, two)));
        loop = node("Loop", name, "M,cond,x0", "Y");
    }
    attr_graph(loop, "body", body);
    write_model(p, graph(LIST(Onnx__NodeProto, loop), LIST(Onnx__TensorProto, M, cond, shp, x), NULL, 0,
                         LIST(Onnx__ValueInfoProto, scan ? vi("Y", LT_F32, 2, ydims) : vi("Y", LT_F32, 1, two))));
    arena_free();
}

/* Starts `lantern run model` with stderr to dir/loop_err; as_bytes > 0
 * limits its address space. */
static pid_t start_run(const char *model, rlim_t as_bytes)
{
    char ef[700];
    path(ef, sizeof ef, "loop_err");
    pid_t pid = fork();
    if (pid == 0) {
        if (as_bytes) {
            struct rlimit rl = {as_bytes, as_bytes};
            setrlimit(RLIMIT_AS, &rl);
        }
        int fe = open(ef, O_WRONLY | O_CREAT | O_TRUNC, 0600), fo = open("/dev/null", O_WRONLY);
        dup2(fe, 2);
        dup2(fo, 1);
        execl(LANTERN, LANTERN, "run", model, (char *)NULL);
        _exit(127);
    }
    assert_true(pid > 0);
    return pid;
}

/* Exit code (1000 + signal), or -1 after `ms` milliseconds (then killed). */
static int wait_ms(pid_t pid, int ms)
{
    int st;
    for (int i = 0; i < ms; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static void loop_err(char *err, size_t len)
{
    char ef[700];
    path(ef, sizeof ef, "loop_err");
    size_t n;
    char *t = slurp(ef, &n);
    snprintf(err, len, "%s", t);
    free(t);
}

static void runaway_loop_out_of_memory(void **state)
{
    (void)state;
#ifdef LT_TEST_ASAN
    skip();
#endif
    char m[700], err[4096];
    path(m, sizeof m, "runaway.onnx");
    loop_model(m, "runaway", 1);
    int rc = wait_ms(start_run(m, (rlim_t)1536 << 20), 120000);
    loop_err(err, sizeof err);
    if (rc != 1 || count_lines(err) != 1 || !strstr(err, "node 'runaway' (Loop)") || !strstr(err, "out of memory") ||
        !strstr(err, m))
        fail_msg("exit %d (want 1 and one line naming node 'runaway' (Loop)): %s", rc, err);
    print_message("%s", err);
}

static void sigint_stops_loop(void **state)
{
    (void)state;
    char m[700], err[4096];
    path(m, sizeof m, "forever.onnx");
    loop_model(m, "forever", 0);
    pid_t pid = start_run(m, 0);
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    kill(pid, SIGINT);
    int rc = wait_ms(pid, 3000);
    loop_err(err, sizeof err);
    if (rc != 130 || count_lines(err) != 1 || !strstr(err, "node 'forever' (Loop)") || !strstr(err, "interrupted"))
        fail_msg("exit %d (want 130 within 3 s, one line naming node 'forever' (Loop)): %s", rc, err);
    print_message("%s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fifos_refused),
        cmocka_unit_test(unknown_op_named),
        cmocka_unit_test(npy_header_parsed),
        cmocka_unit_test(dots_inside_a_name),
        cmocka_unit_test(checkpoint_folder),
        cmocka_unit_test(int_stores_defined),
        cmocka_unit_test(runaway_loop_out_of_memory),
        cmocka_unit_test(sigint_stops_loop),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
