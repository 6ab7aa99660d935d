/* The data formats beside npz (train/dataset_csv.c, dataset_npy.c) and the
 * half-precision sample arrays, written here:
 * - CSV: header detection, the label column by name or number, quoting,
 *   CRLF, a BOM, blank lines; integer label text gives classes, any other
 *   float targets; a second file is the test split; values against the text;
 * - .npy pairs: the same dataset as an npz of the same arrays, a test split
 *   from the third and fourth file, int64 arrays through the named feed;
 * - float16 and bfloat16 (ml_dtypes' '<V2') samples and targets, decoded
 *   here bit by bit, in npz and npy, into float32 samples and into a
 *   float16 input;
 * - lantern train and eval on each, and every bad file one line naming the
 *   file (line and column for CSV), exit 2. */
#include "test_dataset.h"
#include "train/dataset_arrays.h"
#include <sys/wait.h>

#define DATA LT_SOURCE_DIR "/tests/data/"
#define LANTERN LT_BINARY_DIR "/lantern"

/* runs cmd (stdout dropped); *msg gets stderr; returns the exit code */
static int run_cmd(const char *cmd, char *msg, size_t len)
{
    char full[4096], ef[] = "/tmp/lt_fmt_errXXXXXX";
    close(mkstemp(ef));
    snprintf(full, sizeof full, "%s >/dev/null 2>%s", cmd, ef);
    int st = system(full);
    FILE *f = fopen(ef, "r");
    size_t got = f ? fread(msg, 1, len - 1, f) : 0;
    msg[got] = 0;
    if (f)
        fclose(f);
    unlink(ef);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* cmd exits 2 with one stderr line holding every fragment */
static void cmd_refuses(const char *cmd, const char *frag, ...)
{
    char msg[4096];
    int rc = run_cmd(cmd, msg, sizeof msg);
    if (rc != 2)
        fail_msg("%s: exit %d, stderr '%s'", cmd, rc, msg);
    char *nl = strchr(msg, '\n');
    if (!nl || nl[1])
        fail_msg("not one line: '%s'", msg);
    va_list ap;
    va_start(ap, frag);
    for (const char *s = frag; s; s = va_arg(ap, const char *))
        if (!strstr(msg, s))
            fail_msg("'%s' lacks '%s'", msg, s);
    va_end(ap);
}

static void write_text(const char *path, const char *text) { td_write(path, text, strlen(text)); }

static lt_dataset *open_ok(const char *spec, int split, const char *label_column)
{
    lt_dataset_opts o;
    memset(&o, 0, sizeof o);
    o.label_column = label_column;
    lt_dataset *d = NULL;
    lt_err err;
    if (lt_dataset_open_opts(spec, split, &o, &d, &err) != LT_OK)
        fail_msg("%s: %s", spec, err.msg);
    return d;
}

/* every sample and label of d, in order */
static void all_of(const lt_dataset *d, lt_tensor *x, lt_tensor *y)
{
    int64_t n = lt_dataset_size(d), *idx = malloc(sizeof *idx * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    td_batch_tensors(d, n, x, y);
    lt_err err;
    assert_int_equal(lt_dataset_gather(d, idx, n, x, y, &err), LT_OK);
    free(idx);
}

static void csv_fails_(const char *spec, const char *label_column, const char *frag, ...)
{
    lt_dataset_opts o;
    memset(&o, 0, sizeof o);
    o.label_column = label_column;
    lt_dataset *d = (lt_dataset *)0x1;
    lt_err err;
    lt_status s = lt_dataset_open_opts(spec, 0, &o, &d, &err);
    if (s == LT_OK)
        fail_msg("%s opened", spec);
    assert_null(d);
    assert_null(strchr(err.msg, '\n'));
    va_list ap;
    va_start(ap, frag);
    for (const char *f = frag; f; f = va_arg(ap, const char *))
        if (!strstr(err.msg, f))
            fail_msg("message '%s' lacks '%s'", err.msg, f);
    va_end(ap);
}

#define csv_fails(spec, col, ...) csv_fails_(spec, col, __VA_ARGS__, NULL)

/* ---- CSV ---- */

static void csv_values_and_labels(void **state)
{
    (void)state;
    char dir[64], tr[128], te[128], spec[300];
    td_tmpdir(dir, sizeof dir);
    snprintf(tr, sizeof tr, "%s/train.csv", dir);
    snprintf(te, sizeof te, "%s/test.csv", dir);
    /* a BOM, CRLF, a quoted name holding a comma, spaces, a blank line */
    write_text(tr, "\xef\xbb\xbf" "sepal, \"width, cm\" ,kind,petal\r\n"
                   "5.1, 3.5 ,0,1.4\r\n"
                   "\r\n"
                   "4.9,\"3.0\",2,-1.25e1\r\n"
                   "6.2,2.9,1,4.3\r\n");
    write_text(te, "sepal,\"width, cm\",kind,petal\n7,3.2,1,4.7\n");
    snprintf(spec, sizeof spec, "csv=%s,%s", tr, te);
    assert_int_equal(lt_dataset_has_split(spec, 0), 1);
    assert_int_equal(lt_dataset_has_split(spec, 1), 1);
    /* by name: kind is written as integers, so classes */
    lt_dataset *d = open_ok(spec, 0, "kind");
    assert_int_equal(lt_dataset_size(d), 3);
    assert_int_equal(lt_dataset_sample_numel(d), 3);
    assert_int_equal(lt_dataset_has_classes(d), 1);
    assert_int_equal(lt_dataset_num_classes(d), 3);
    lt_tensor x, y;
    all_of(d, &x, &y);
    const float want[9] = {5.1f, 3.5f, 1.4f, 4.9f, 3.0f, -12.5f, 6.2f, 2.9f, 4.3f};
    const int64_t wl[3] = {0, 2, 1};
    assert_memory_equal(x.data, want, sizeof want);
    assert_memory_equal(y.data, wl, sizeof wl);
    free(x.data);
    free(y.data);
    lt_dataset_free(d);
    /* the same column by number, 3 and -2 */
    const char *cols[2] = {"3", "-2"};
    for (int k = 0; k < 2; k++) {
        d = open_ok(spec, 0, cols[k]);
        all_of(d, &x, &y);
        assert_memory_equal(x.data, want, sizeof want);
        assert_memory_equal(y.data, wl, sizeof wl);
        free(x.data);
        free(y.data);
        lt_dataset_free(d);
    }
    /* the default, the last column: written with decimals, so float targets */
    d = open_ok(spec, 0, NULL);
    assert_int_equal(lt_dataset_has_classes(d), 0);
    int tr_rank;
    int64_t td[LT_MAX_RANK];
    lt_dataset_target_shape(d, &tr_rank, td);
    assert_int_equal(tr_rank, 0);
    all_of(d, &x, &y);
    const float wx[9] = {5.1f, 3.5f, 0, 4.9f, 3.0f, 2, 6.2f, 2.9f, 1}, wy[3] = {1.4f, -12.5f, 4.3f};
    assert_memory_equal(x.data, wx, sizeof wx);
    assert_memory_equal(y.data, wy, sizeof wy);
    free(x.data);
    free(y.data);
    lt_dataset_free(d);
    /* the test split */
    d = open_ok(spec, 1, "kind");
    assert_int_equal(lt_dataset_size(d), 1);
    all_of(d, &x, &y);
    const float wt[3] = {7, 3.2f, 4.7f};
    assert_memory_equal(x.data, wt, sizeof wt);
    assert_int_equal(((int64_t *)y.data)[0], 1);
    free(x.data);
    free(y.data);
    lt_dataset_free(d);
    /* no header: the first row is data; --label-column by name then fails */
    write_text(tr, "1,2,3\n4,5,6\n\n\n");
    snprintf(spec, sizeof spec, "csv=%s", tr);
    assert_int_equal(lt_dataset_has_split(spec, 1), 0);
    d = open_ok(spec, 0, "1");
    assert_int_equal(lt_dataset_size(d), 2);
    all_of(d, &x, &y);
    const float wn[4] = {2, 3, 5, 6};
    const int64_t wln[2] = {1, 4};
    assert_memory_equal(x.data, wn, sizeof wn);
    assert_memory_equal(y.data, wln, sizeof wln);
    free(x.data);
    free(y.data);
    lt_dataset_free(d);
    csv_fails(spec, "kind", "no header row", "give a column number");
    td_rmtree(dir);
}

static void csv_bad_files(void **state)
{
    (void)state;
    char dir[64], p[128], spec[512];
    td_tmpdir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/bad.csv", dir);
    snprintf(spec, sizeof spec, "csv=%s", p);
    static const struct {
        const char *text, *col, *frag[3];
    } cases[] = {
        {"", NULL, {"bad.csv", "empty", NULL}},
        {"\n  \r\n\n", NULL, {"bad.csv", "empty", NULL}},
        {"a,b,c\n", NULL, {"bad.csv", "no rows", NULL}},
        {"a,b,c\n1,2,3\n4,5\n", NULL, {"bad.csv", "line 3 has 2 fields", "header has 3"}},
        {"1,2,3\n4,5,6,7\n", NULL, {"bad.csv", "line 2 has more than 3 fields", "first row"}},
        {"a,b,c\n1,2,3\n4,x5,6\n", NULL, {"line 3, column 2", "'x5' is not a number", NULL}},
        {"a,b,c\n1,2,3\n4,,6\n", NULL, {"line 3, column 2 is empty", NULL, NULL}},
        {"a,b,c\n1,nan,3\n", NULL, {"line 2, column 2", "not a finite number", NULL}},
        {"a,b,c\n1,2,inf\n", NULL, {"line 2, column 3", "not a finite number", NULL}},
        {"a,b,c\n1,2,-1\n", NULL, {"line 2, column 3 ('c')", "class label -1", "-1.0"}},
        {"x,2,c\n1,2,3\n", NULL, {"line 1, column 1", "'x' is not a number", "no header"}},
        {"a,b,c\n1,\"2,3\n", NULL, {"line 2, column 2", "quoted field", NULL}},
        {"a,b,c\n1,\"2\"x,3\n", NULL, {"line 2, column 2", "after a quoted field", NULL}},
        {"a;b;c\n1;2;3\n", NULL, {"line 1 has one column", "commas", NULL}},
        {"a,b,c\n1,2,3\n", "d", {"--label-column d", "no column of that name", "a, b, c"}},
        {"a,b,c\n1,2,3\n", "4", {"--label-column 4", "columns 1..3", NULL}},
        {"a,b,c\n1,2,3\n", "0", {"--label-column 0", "columns 1..3", NULL}},
        {"a,b\0,c\n1,2,3\n", NULL, {"NUL", NULL, NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t len = strlen(cases[i].text);
        if (i == sizeof cases / sizeof *cases - 1)
            len = 14; /* the NUL case */
        td_write(p, cases[i].text, len);
        csv_fails(spec, cases[i].col, cases[i].frag[0], cases[i].frag[1], cases[i].frag[2], NULL);
    }
    /* the specs */
    csv_fails("csv=", NULL, "csv=TRAIN.csv[,TEST.csv]", NULL);
    snprintf(spec, sizeof spec, "csv=%s,%s,%s", p, p, p);
    csv_fails(spec, NULL, "csv=TRAIN.csv,TEST.csv", NULL);
    snprintf(spec, sizeof spec, "csv=%s/none.csv", dir);
    csv_fails(spec, NULL, "none.csv", NULL);
    td_rmtree(dir);
}

/* 8 features, a class from their sign pattern: learnable by linreg.onnx
 * (x [N,8] -> Gemm -> [N,3]) */
static void write_csv_classes(const char *path, int n, uint64_t seed, bool header)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    if (header)
        fprintf(f, "f1,f2,f3,f4,f5,f6,f7,f8,species\n");
    for (int i = 0; i < n; i++) {
        double v[8];
        for (int k = 0; k < 8; k++)
            v[k] = td_uniform(&seed, -1, 1);
        int c = v[0] + v[1] > 0.3 ? 2 : v[0] + v[1] < -0.3 ? 0 : 1;
        for (int k = 0; k < 8; k++)
            fprintf(f, "%.6f,", v[k]);
        fprintf(f, "%d\n", c);
    }
    assert_int_equal(fclose(f), 0);
}

static void csv_trains(void **state)
{
    (void)state;
    char dir[64], tr[128], te[128], cmd[2048], msg[4096];
    td_tmpdir(dir, sizeof dir);
    snprintf(tr, sizeof tr, "%s/train.csv", dir);
    snprintf(te, sizeof te, "%s/test.csv", dir);
    write_csv_classes(tr, 400, 5, true);
    write_csv_classes(te, 100, 6, true);
    snprintf(cmd, sizeof cmd, "%s train %slinreg.onnx --data csv=%s,%s --label-column species --epochs 8 --batch 16 "
             "--lr 0.2 -o %s/out.onnx", LANTERN, DATA, tr, te, dir);
    int rc = run_cmd(cmd, msg, sizeof msg);
    if (rc != 0)
        fail_msg("%s: exit %d: %s", cmd, rc, msg);
    /* eval of the trained model on the test file */
    char out[256], line[256];
    snprintf(cmd, sizeof cmd, "%s eval %s/out.onnx --data csv=%s,%s --label-column -1 > %s/eval.txt", LANTERN, dir, tr,
             te, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(out, sizeof out, "%s/eval.txt", dir);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    double acc = -1;
    while (fgets(line, sizeof line, f))
        sscanf(line, "accuracy: %lf", &acc);
    fclose(f);
    if (!(acc > 0.8))
        fail_msg("test accuracy %g after training on the CSV", acc);
    /* bad rows stop lantern train with the line and column */
    write_text(te, "f1,f2,f3,f4,f5,f6,f7,f8,species\n1,2,3,4,5,6,7,8,1\n1,2,3,4,5,6,7,8\n");
    snprintf(cmd, sizeof cmd, "%s train %slinreg.onnx --data csv=%s,%s -o %s/out2.onnx", LANTERN, DATA, tr, te, dir);
    cmd_refuses(cmd, "test.csv", "line 3 has 8 fields", NULL);
    snprintf(cmd, sizeof cmd, "%s train %slinreg.onnx --data csv=%s --label-column kind -o %s/out2.onnx", LANTERN,
             DATA, tr, dir);
    cmd_refuses(cmd, "train.csv", "--label-column kind", "species", NULL);
    /* a test file with other columns than the training file's */
    write_text(te, "f1,f2,species\n1,2,1\n");
    snprintf(cmd, sizeof cmd, "%s train %slinreg.onnx --data csv=%s,%s -o %s/out2.onnx", LANTERN, DATA, tr, te, dir);
    cmd_refuses(cmd, "test split's samples are 2", "training split's 8", NULL);
    snprintf(out, sizeof out, "%s/out2.onnx", dir);
    assert_int_not_equal(access(out, F_OK), 0);
    td_rmtree(dir);
}

/* ---- .npy pairs ---- */

static void write_npy(const char *path, const char *descr, int rank, const int64_t *dims, const void *data,
                      size_t nbytes)
{
    size_t len;
    uint8_t *b = td_npy(descr, 0, rank, dims, data, nbytes, &len);
    td_write(path, b, len);
    free(b);
}

/* float16 bits to a double, by the IEEE layout */
static double f16_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return s ? -v : v;
}

/* bfloat16 bits: the top half of a float32 */
static double bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void npy_pairs(void **state)
{
    (void)state;
    char dir[64], xp[128], yp[128], xt[128], yt[128], spec[700], npz[128], zspec[160];
    td_tmpdir(dir, sizeof dir);
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/y.npy", dir);
    snprintf(xt, sizeof xt, "%s/xt.npy", dir);
    snprintf(yt, sizeof yt, "%s/yt.npy", dir);
    snprintf(npz, sizeof npz, "%s/same.npz", dir);
    enum { N = 20 };
    uint8_t *x = td_bytes(N * 6, 256, 3);
    int64_t y[N];
    int32_t yi[N];
    uint64_t r = 4;
    for (int i = 0; i < N; i++)
        y[i] = yi[i] = (int32_t)(td_next(&r) % 5);
    int64_t dx[3] = {N, 2, 3}, dy[1] = {N}, dxt[3] = {4, 2, 3}, dyt[1] = {4};
    write_npy(xp, "|u1", 3, dx, x, N * 6);
    write_npy(yp, "<i4", 1, dy, yi, sizeof yi);
    write_npy(xt, "|u1", 3, dxt, x, 24);
    write_npy(yt, "<i8", 1, dyt, y, 32);
    /* the npz of the same arrays */
    size_t l[4];
    uint8_t *b[4] = {td_npy("|u1", 0, 3, dx, x, N * 6, &l[0]), td_npy("<i8", 0, 1, dy, y, sizeof y, &l[1]),
                     td_npy("|u1", 0, 3, dxt, x, 24, &l[2]), td_npy("<i8", 0, 1, dyt, y, 32, &l[3])};
    td_member m[4] = {{"x.npy", b[0], l[0], 0}, {"y.npy", b[1], l[1], 8}, {"x_test.npy", b[2], l[2], 0},
                      {"y_test.npy", b[3], l[3], 0}};
    size_t zl;
    uint8_t *z = td_zip(m, 4, 0, &zl);
    td_write(npz, z, zl);
    free(z);
    for (int i = 0; i < 4; i++)
        free(b[i]);
    snprintf(spec, sizeof spec, "npy=%s,%s,%s,%s", xp, yp, xt, yt);
    snprintf(zspec, sizeof zspec, "npz=%s", npz);
    for (int split = 0; split < 2; split++) {
        assert_int_equal(lt_dataset_has_split(spec, split), 1);
        lt_dataset *a = open_ok(spec, split, NULL), *c = open_ok(zspec, split, NULL);
        assert_int_equal(lt_dataset_size(a), split ? 4 : N);
        lt_tensor x1, y1, x2, y2;
        all_of(a, &x1, &y1);
        all_of(c, &x2, &y2);
        assert_memory_equal(x1.data, x2.data, lt_tensor_nbytes(&x1));
        assert_memory_equal(y1.data, y2.data, lt_tensor_nbytes(&y1));
        assert_true(fabsf(((float *)x1.data)[5] - (float)x[5] / 255.0f) < 1e-6f);
        free(x1.data);
        free(y1.data);
        free(x2.data);
        free(y2.data);
        lt_dataset_free(a);
        lt_dataset_free(c);
    }
    /* two files: no test split */
    snprintf(spec, sizeof spec, "npy=%s,%s", xp, yp);
    assert_int_equal(lt_dataset_has_split(spec, 1), 0);
    lt_dataset_free(open_ok(spec, 0, NULL));
    /* bad pairs */
    snprintf(spec, sizeof spec, "npy=%s", xp);
    td_open_fails(spec, 0, LT_ERR_INVALID, "npy=X.npy,Y.npy");
    snprintf(spec, sizeof spec, "npy=%s,%s,%s", xp, yp, xt);
    td_open_fails(spec, 0, LT_ERR_INVALID, "npy=X.npy,Y.npy");
    snprintf(spec, sizeof spec, "npy=%s,", xp);
    td_open_fails(spec, 0, LT_ERR_INVALID, "npy=X.npy,Y.npy");
    snprintf(spec, sizeof spec, "npy=%s,%s/none.npy", xp, dir);
    td_open_fails(spec, 0, LT_ERR_IO, "none.npy");
    snprintf(spec, sizeof spec, "npy=%s,%s", xp, yt);
    td_open_fails(spec, 0, LT_ERR_INVALID, "x.npy has 20 samples", "yt.npy has 4");
    write_text(yt, "not an npy file");
    snprintf(spec, sizeof spec, "npy=%s,%s", xp, yt);
    td_open_fails(spec, 0, LT_ERR_INVALID, "yt.npy", "not a .npy file");
    free(x);
    td_rmtree(dir);
}

/* float16 and bfloat16 samples and targets become float32 exactly */
static void half_precision_samples(void **state)
{
    (void)state;
    char dir[64], xp[128], yp[128], spec[300], npz[128];
    td_tmpdir(dir, sizeof dir);
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/y.npy", dir);
    snprintf(npz, sizeof npz, "%s/h.npz", dir);
    enum { N = 6, F = 5 };
    uint16_t xh[N * F], yb[N];
    uint64_t r = 21;
    for (int i = 0; i < N * F; i++)
        xh[i] = (uint16_t)(td_next(&r) & 0x7bff); /* finite halves, subnormals too */
    xh[0] = 0x0001; /* 2^-24 */
    xh[1] = 0xfbff; /* -65504 */
    for (int i = 0; i < N; i++)
        yb[i] = (uint16_t)((td_next(&r) & 0x3fff) | (i % 2 ? 0x8000 : 0)); /* |v| < 2 */
    int64_t dx[2] = {N, F}, dy[1] = {N};
    for (int kind = 0; kind < 2; kind++) {
        /* kind 0: x float16, y bfloat16; kind 1: x bfloat16, y float16 */
        const char *xd = kind ? "<V2" : "<f2", *yd = kind ? "<f2" : "<V2";
        write_npy(xp, xd, 2, dx, xh, sizeof xh);
        write_npy(yp, yd, 1, dy, yb, sizeof yb);
        size_t l[2];
        uint8_t *b[2] = {td_npy(xd, 0, 2, dx, xh, sizeof xh, &l[0]), td_npy(yd, 0, 1, dy, yb, sizeof yb, &l[1])};
        td_member m[2] = {{"x.npy", b[0], l[0], 8}, {"y.npy", b[1], l[1], 0}};
        size_t zl;
        uint8_t *z = td_zip(m, 2, 0, &zl);
        td_write(npz, z, zl);
        free(z);
        free(b[0]);
        free(b[1]);
        for (int fmt = 0; fmt < 2; fmt++) {
            if (fmt)
                snprintf(spec, sizeof spec, "npz=%s", npz);
            else
                snprintf(spec, sizeof spec, "npy=%s,%s", xp, yp);
            lt_dataset *d = open_ok(spec, 0, NULL);
            assert_int_equal(lt_dataset_has_classes(d), 0);
            lt_tensor x, y;
            all_of(d, &x, &y);
            for (int i = 0; i < N * F; i++) {
                double w = kind ? bf16_value(xh[i]) : f16_value(xh[i]);
                if (((float *)x.data)[i] != (float)w)
                    fail_msg("kind %d fmt %d x[%d]: %.9g, want %.9g", kind, fmt, i, ((float *)x.data)[i], w);
            }
            for (int i = 0; i < N; i++) {
                double w = kind ? f16_value(yb[i]) : bf16_value(yb[i]);
                assert_true(((float *)y.data)[i] == (float)w);
            }
            free(x.data);
            free(y.data);
            lt_dataset_free(d);
        }
    }
    td_rmtree(dir);
}

/* A bfloat16 npy pair into feed_f16.onnx (x float16 [N,4]): the samples are
 * converted to the input's float16 and the model trains; an int64 x for its
 * float input is refused naming the file. */
static void npy_pair_feeds_declared_type(void **state)
{
    (void)state;
    char dir[64], xp[128], yp[128], cmd[2048], msg[4096];
    td_tmpdir(dir, sizeof dir);
    snprintf(xp, sizeof xp, "%s/x.npy", dir);
    snprintf(yp, sizeof yp, "%s/y.npy", dir);
    enum { N = 96 };
    uint16_t xb[N * 4];
    int64_t y[N];
    uint64_t seed = 16;
    for (int i = 0; i < N; i++) {
        float v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = (float)td_uniform(&seed, -2, 2);
            uint32_t u;
            memcpy(&u, &v[k], 4);
            xb[i * 4 + k] = (uint16_t)(u >> 16);
        }
        y[i] = bf16_value(xb[i * 4]) + bf16_value(xb[i * 4 + 1]) > 0;
    }
    int64_t dx[2] = {N, 4}, dy[1] = {N};
    write_npy(xp, "<V2", 2, dx, xb, sizeof xb);
    write_npy(yp, "<i8", 1, dy, y, sizeof y);
    char spec[300];
    snprintf(spec, sizeof spec, "npy=%s,%s", xp, yp);
    lt_arrays *a = NULL;
    lt_err err;
    assert_int_equal(lt_arrays_open_spec(spec, 0, &a, &err), LT_OK);
    assert_non_null(a);
    assert_int_equal(a->samples, N);
    assert_int_equal(lt_arrays_find(a, "x")->t.dtype, LT_BF16);
    lt_arrays_free(a);
    snprintf(cmd, sizeof cmd, "%s train %sfeed_f16.onnx --data %s --epochs 5 --batch 16 --lr 0.2 --log %s/log.csv "
             "-o %s/out.onnx", LANTERN, DATA, spec, dir, dir);
    int rc = run_cmd(cmd, msg, sizeof msg);
    if (rc != 0)
        fail_msg("%s: exit %d: %s", cmd, rc, msg);
    /* the epochs' train losses fall */
    char logp[128], line[512];
    snprintf(logp, sizeof logp, "%s/log.csv", dir);
    FILE *f = fopen(logp, "r");
    assert_non_null(f);
    double first = -1, last = -1;
    while (fgets(line, sizeof line, f)) {
        int e;
        double lr, l;
        if (sscanf(line, "%d,,,%lf,%lf,", &e, &lr, &l) == 3) {
            if (first < 0)
                first = l;
            last = l;
        }
    }
    fclose(f);
    if (!(first > 0 && last < 0.7 * first))
        fail_msg("train loss %g -> %g", first, last);
    /* int64 samples for a float input */
    write_npy(xp, "<i8", 1, dy, y, sizeof y);
    snprintf(cmd, sizeof cmd, "%s train %slinreg.onnx --data %s -o %s/out2.onnx", LANTERN, DATA, spec, dir);
    cmd_refuses(cmd, "x.npy", "int64", "float32", NULL);
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_values_and_labels),
        cmocka_unit_test(csv_bad_files),
        cmocka_unit_test(csv_trains),
        cmocka_unit_test(npy_pairs),
        cmocka_unit_test(half_precision_samples),
        cmocka_unit_test(npy_pair_feeds_declared_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
