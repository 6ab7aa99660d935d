/* The lantern command's option tables: for every command, `--help`, `-h`
 * and `lantern help CMD` exit 0 and document every option the parser
 * accepts (the hidden --list-options), each of which the parser takes;
 * --opt=value equals --opt value; an unknown command or option gets one line
 * with the nearest name and exit 2; eval --json and import --json are valid
 * JSON (read back by a strict reader written here, independent of
 * cli/json.c) carrying the right values, escaped names included. */
#include "testutil.h"
#include "onnx.pb-c.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static char tmp[] = "/tmp/lt_cli_optsXXXXXX";

/* Runs lantern with args (a shell fragment); stdout and stderr captured,
 * malloc'ed. Returns the exit code. */
static int lantern(const char *args, char **out, char **err)
{
    char cmd[8192], of[600], ef[600];
    snprintf(of, sizeof of, "%s/stdout", tmp);
    snprintf(ef, sizeof ef, "%s/stderr", tmp);
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", LANTERN, args, of, ef);
    int st = system(cmd);
    const char *files[2] = {of, ef};
    char **dst[2] = {out, err};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *b = malloc((size_t)n + 1);
        assert_non_null(b);
        assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
        b[n] = 0;
        fclose(f);
        *dst[i] = b;
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

/* name occurs in text as a whole option name (not inside a longer one) */
static int has_option(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        char before = p == text ? ' ' : p[-1], after = p[n];
        if ((before == ' ' || before == ',' || before == '\n') &&
            (after == ' ' || after == ',' || after == '\n' || after == 0))
            return 1;
    }
    return 0;
}

/* ---- every command's help against its parser ---- */

static void help_matches_parser(void **state)
{
    (void)state;
    char *out, *err, *cmds, *top;
    assert_int_equal(lantern("--list-commands", &cmds, &err), 0);
    free(err);
    assert_int_equal(lantern("help", &top, &err), 0);
    free(err);
    int ncmd = 0;
    for (char *c = strtok(cmds, "\n"); c; c = strtok(NULL, "\n"), ncmd++) {
        char cmd_name[64];
        snprintf(cmd_name, sizeof cmd_name, "%s", c);
        if (!has_option(top, cmd_name))
            fail_msg("lantern help does not list '%s'", cmd_name);
        char args[512], *help, *list;
        snprintf(args, sizeof args, "%s --help", cmd_name);
        assert_int_equal(lantern(args, &help, &err), 0);
        assert_string_equal(err, "");
        free(err);
        /* the three ways to ask give the same text */
        const char *forms[2] = {"%s -h", "help %s"};
        for (int k = 0; k < 2; k++) {
            snprintf(args, sizeof args, forms[k], cmd_name);
            assert_int_equal(lantern(args, &out, &err), 0);
            assert_string_equal(out, help);
            free(out);
            free(err);
        }
        snprintf(args, sizeof args, "%s --list-options", cmd_name);
        assert_int_equal(lantern(args, &list, &err), 0);
        free(err);
        int nopt = 0, threads = 0;
        char *save = NULL, *listed = strdup(list); /* list is cut into lines below */
        assert_non_null(listed);
        for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save), nopt++) {
            char name[128] = "", arg[128] = "";
            sscanf(line, "%127s %127s", name, arg);
            threads += !strcmp(name, "--threads");
            /* the help names it, with its placeholder */
            if (!has_option(help, name))
                fail_msg("lantern %s --help does not list %s", cmd_name, name);
            if (*arg && !has_option(help, arg))
                fail_msg("lantern %s --help does not show %s's value %s", cmd_name, name, arg);
            /* the parser takes it: whatever else goes wrong (no MODEL, a bad
             * value), it is not an unknown option */
            if (!strcmp(name, "-h") || !strcmp(name, "--help"))
                continue;
            snprintf(args, sizeof args, "%s %s%s", cmd_name, name, *arg ? "=0" : "");
            int rc = lantern(args, &out, &err);
            if (strstr(err, "unknown option") || rc < 0 || rc > 2)
                fail_msg("lantern %s: exit %d, stderr %s", args, rc, err);
            free(out);
            free(err);
        }
        assert_int_equal(threads, 1);
        /* and the reverse: every option line of the help is one the
         * parser lists */
        int nhelp = 0;
        for (const char *l = strstr(help, "\noptions:\n"); l && (l = strchr(l, '\n')); l++) {
            if (strncmp(l, "\n  -", 4) != 0)
                continue;
            char names[256];
            sscanf(l + 3, "%255[^\n]", names);
            /* "-o, --output OUT.onnx   meaning": the names before the value */
            for (char *tok = strtok_r(names, ", ", &save); tok && tok[0] == '-'; tok = strtok_r(NULL, ", ", &save)) {
                nhelp++;
                char line[140];
                snprintf(line, sizeof line, "%s", tok);
                if (!has_option(listed, line))
                    fail_msg("lantern %s --help shows %s, which --list-options does not", cmd_name, tok);
            }
        }
        if (nhelp != nopt)
            fail_msg("lantern %s: %d option names in the help, %d in the parser's list", cmd_name, nhelp, nopt);
        free(help);
        free(list);
        free(listed);
    }
    assert_true(ncmd >= 8);
    free(cmds);
    /* lantern --help is lantern help */
    assert_int_equal(lantern("--help", &out, &err), 0);
    assert_string_equal(out, top);
    free(out);
    free(err);
    free(top);
}

/* ---- usage errors: one line, the nearest name, exit 2 ---- */

static void usage_errors(void **state)
{
    (void)state;
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"trian", "did you mean train?"},
        {"improt " MODELS "mlp.onnx", "did you mean import?"},
        {"train " MODELS "mlp.onnx --epoch 2 -o /tmp/lt_never.onnx", "did you mean --epochs?"},
        {"eval " MODELS "mlp.onnx --jsn", "did you mean --json?"},
        {"grad " MODELS "mlp.onnx --wrt-input", "did you mean --wrt-inputs?"},
        {"export " MODELS "mlp.onnx --ouput x.onnx", "did you mean --output?"},
        {"import " MODELS "mlp.onnx --frobnicate-everything", "lantern help import lists the options"},
        {"frobnicate", "lantern help lists the commands"},
        {"help trian", "did you mean train?"},
        {"train " MODELS "mlp.onnx --epochs", "--epochs needs a value"},
        {"import " MODELS "mlp.onnx --print=yes", "--print takes no value"},
        {"import " MODELS "mlp.onnx --threads 0", "--threads"},
        {"import", "no MODEL given"},
        {"import " MODELS "mlp.onnx " MODELS "cnn.onnx", "unexpected argument"},
        {"train " MODELS "mlp.onnx --epochs=0 -o /tmp/lt_never.onnx", "--epochs"},
        {"import " MODELS "mlp.onnx --print --json", "do not go together"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out, *err;
        int rc = lantern(cases[i].args, &out, &err);
        if (rc != 2 || count_lines(err) != 1 || !strstr(err, cases[i].want))
            fail_msg("lantern %s: exit %d (want 2 and one line with '%s'): %s", cases[i].args, rc, cases[i].want,
                     err);
        free(out);
        free(err);
    }
    assert_int_not_equal(access("/tmp/lt_never.onnx", F_OK), 0);
    /* a good --threads is taken by any command */
    char *out, *err;
    assert_int_equal(lantern("import --threads 1 " MODELS "mlp.onnx", &out, &err), 0);
    assert_non_null(strstr(out, "Gemm"));
    free(out);
    free(err);
}

/* ---- a strict JSON reader ---- */

typedef enum { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_kind;

typedef struct jv {
    jv_kind kind;
    double num;
    char *str;
    size_t n;
    char **keys;
    struct jv **v;
} jv;

typedef struct jp {
    const unsigned char *p;
    int depth;
    const char *why;
} jp;

static void jv_free(jv *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        jv_free(v->v[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->v);
    free(v->keys);
    free(v->str);
    free(v);
}

static void ws(jp *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static void put_utf8(char **o, unsigned c)
{
    unsigned char *b = (unsigned char *)*o;
    if (c < 0x80)
        *b++ = (unsigned char)c;
    else if (c < 0x800) {
        *b++ = (unsigned char)(0xc0 | c >> 6);
        *b++ = (unsigned char)(0x80 | (c & 63));
    } else if (c < 0x10000) {
        *b++ = (unsigned char)(0xe0 | c >> 12);
        *b++ = (unsigned char)(0x80 | (c >> 6 & 63));
        *b++ = (unsigned char)(0x80 | (c & 63));
    } else {
        *b++ = (unsigned char)(0xf0 | c >> 18);
        *b++ = (unsigned char)(0x80 | (c >> 12 & 63));
        *b++ = (unsigned char)(0x80 | (c >> 6 & 63));
        *b++ = (unsigned char)(0x80 | (c & 63));
    }
    *o = (char *)b;
}

static int hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return 0;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 1;
}

/* a raw (unescaped) UTF-8 sequence at p: its length, 0 when invalid */
static int raw_utf8(const unsigned char *p)
{
    unsigned c = p[0];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    unsigned cp = n == 1 ? c : n == 2 ? c & 31 : n == 3 ? c & 15 : c & 7;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 63);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (!n || cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

static char *jstring(jp *j)
{
    j->p++; /* the quote */
    size_t cap = strlen((const char *)j->p) * 2 + 8;
    char *s = malloc(cap), *o = s;
    assert_non_null(s);
    for (;;) {
        unsigned c = *j->p;
        if (c == '"') {
            j->p++;
            *o = 0;
            return s;
        }
        if (c < 0x20) {
            j->why = c ? "a raw control character in a string" : "an unterminated string";
            free(s);
            return NULL;
        }
        if (c == '\\') {
            unsigned e = j->p[1], u;
            const char *simple = strchr("\"\\/bfnrt", (int)e);
            if (e && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                *o++ = map[simple - "\"\\/bfnrt"];
                j->p += 2;
                continue;
            }
            if (e != 'u' || !hex4(j->p + 2, &u)) {
                j->why = "a bad escape";
                free(s);
                return NULL;
            }
            j->p += 6;
            if (u >= 0xd800 && u <= 0xdbff) {
                unsigned lo;
                if (j->p[0] != '\\' || j->p[1] != 'u' || !hex4(j->p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff) {
                    j->why = "a lone surrogate";
                    free(s);
                    return NULL;
                }
                j->p += 6;
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            } else if (u >= 0xdc00 && u <= 0xdfff) {
                j->why = "a lone surrogate";
                free(s);
                return NULL;
            }
            put_utf8(&o, u);
            continue;
        }
        int n = raw_utf8(j->p);
        if (!n) {
            j->why = "bytes that are not UTF-8";
            free(s);
            return NULL;
        }
        memcpy(o, j->p, (size_t)n);
        o += n;
        j->p += n;
    }
}

static jv *jvalue(jp *j);

static jv *jnew(jv_kind k)
{
    jv *v = calloc(1, sizeof *v);
    assert_non_null(v);
    v->kind = k;
    return v;
}

static void jpush(jv *v, char *key, jv *m)
{
    v->v = realloc(v->v, sizeof *v->v * (v->n + 1));
    assert_non_null(v->v);
    if (v->kind == JV_OBJ) {
        v->keys = realloc(v->keys, sizeof *v->keys * (v->n + 1));
        assert_non_null(v->keys);
        v->keys[v->n] = key;
    }
    v->v[v->n++] = m;
}

static jv *jcontainer(jp *j, int obj)
{
    jv *v = jnew(obj ? JV_OBJ : JV_ARR);
    j->p++;
    ws(j);
    if (*j->p == (obj ? '}' : ']')) {
        j->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        ws(j);
        if (obj) {
            if (*j->p != '"' || !(key = jstring(j))) {
                j->why = j->why ? j->why : "an object key that is not a string";
                jv_free(v);
                return NULL;
            }
            ws(j);
            if (*j->p++ != ':') {
                j->why = "no ':' after a key";
                free(key);
                jv_free(v);
                return NULL;
            }
        }
        jv *m = jvalue(j);
        if (!m) {
            free(key);
            jv_free(v);
            return NULL;
        }
        jpush(v, key, m);
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p == (obj ? '}' : ']')) {
            j->p++;
            return v;
        }
        j->why = "no ',' or closing bracket";
        jv_free(v);
        return NULL;
    }
}

static jv *jvalue(jp *j)
{
    ws(j);
    if (++j->depth > 64) {
        j->why = "too deep";
        return NULL;
    }
    jv *v = NULL;
    const char *p = (const char *)j->p;
    if (*p == '{' || *p == '[')
        v = jcontainer(j, *p == '{');
    else if (*p == '"') {
        char *s = jstring(j);
        if (s) {
            v = jnew(JV_STR);
            v->str = s;
        }
    } else if (!strncmp(p, "null", 4)) {
        v = jnew(JV_NULL);
        j->p += 4;
    } else if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        v = jnew(JV_BOOL);
        v->num = *p == 't';
        j->p += *p == 't' ? 4 : 5;
    } else {
        /* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
        const char *q = p;
        q += *q == '-';
        int ok = *q >= '0' && *q <= '9';
        if (*q == '0')
            q++;
        else
            while (*q >= '0' && *q <= '9')
                q++;
        if (ok && *q == '.') {
            ok = q[1] >= '0' && q[1] <= '9';
            for (q++; *q >= '0' && *q <= '9';)
                q++;
        }
        if (ok && (*q == 'e' || *q == 'E')) {
            q++;
            q += *q == '+' || *q == '-';
            ok = *q >= '0' && *q <= '9';
            while (*q >= '0' && *q <= '9')
                q++;
        }
        if (ok) {
            v = jnew(JV_NUM);
            v->num = strtod(p, NULL);
            j->p = (const unsigned char *)q;
        } else {
            j->why = "not a JSON value";
        }
    }
    j->depth--;
    return v;
}

static jv *jv_parse(const char *text, const char **why)
{
    jp j = {(const unsigned char *)text, 0, NULL};
    jv *v = jvalue(&j);
    if (v) {
        ws(&j);
        if (*j.p) {
            j.why = "text after the value";
            jv_free(v);
            v = NULL;
        }
    }
    *why = j.why;
    return v;
}

static const jv *get(const jv *v, const char *key)
{
    for (size_t i = 0; v && v->kind == JV_OBJ && i < v->n; i++)
        if (!strcmp(v->keys[i], key))
            return v->v[i];
    return NULL;
}

static const jv *at(const jv *v, size_t i) { return v && v->kind == JV_ARR && i < v->n ? v->v[i] : NULL; }

static jv *parse_or_fail(const char *text)
{
    const char *why;
    jv *v = jv_parse(text, &why);
    if (!v || v->kind != JV_OBJ)
        fail_msg("not one JSON object (%s): %s", why ? why : "not an object", text);
    return v;
}

static double num(const jv *v, const char *key)
{
    const jv *m = get(v, key);
    if (!m || m->kind != JV_NUM)
        fail_msg("\"%s\" is not a number", key);
    return m->num;
}

static const char *str(const jv *v, const char *key)
{
    const jv *m = get(v, key);
    if (!m || m->kind != JV_STR)
        fail_msg("\"%s\" is not a string", key);
    return m->str;
}

/* the reader itself refuses what is not JSON */
static void reader_is_strict(void **state)
{
    (void)state;
    static const char *const bad[] = {"{\"a\":1,}", "{\"a\" 1}", "[1 2]", "\"\x01\"", "\"\xc3\"", "\"\xed\xa0\x80\"",
                                      "{\"a\":01}", "\"\\ud800\"", "{} x", "[1.]", "{'a':1}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *why;
        jv *v = jv_parse(bad[i], &why);
        if (v)
            fail_msg("the test's JSON reader took %s", bad[i]);
    }
    const char *why;
    jv *v = jv_parse(" {\"k\\u00e9\":[1,-2.5e3,true,null,\"\\ufffd\\\"\"]} ", &why);
    assert_non_null(v);
    const jv *a = get(v, "k\xc3\xa9");
    assert_non_null(a);
    assert_int_equal(a->n, 5);
    assert_true(at(a, 1)->num == -2500);
    assert_string_equal(at(a, 4)->str, "\xef\xbf\xbd\"");
    jv_free(v);
}

/* ---- eval --json ---- */

static void eval_json(void **state)
{
    (void)state;
    char data[700], args[2048];
    snprintf(data, sizeof data, "%s/data", tmp);
    char mk[800];
    snprintf(mk, sizeof mk, "mkdir -p %s", data);
    assert_int_equal(system(mk), 0);
    assert_int_equal(tu_write_idx_split(data, "train", 40, 5), 0);
    assert_int_equal(tu_write_idx_split(data, "t10k", 30, 6), 0);
    /* the text form, and --json both as --opt value and --opt=value */
    char *text, *j1, *j2, *err;
    snprintf(args, sizeof args, "eval %smlp.onnx --data mnist=%s --limit 25 --mean 0.2 --std 0.3", MODELS, data);
    assert_int_equal(lantern(args, &text, &err), 0);
    free(err);
    snprintf(args, sizeof args, "eval %smlp.onnx --data mnist=%s --limit 25 --mean 0.2 --std 0.3 --json", MODELS,
             data);
    assert_int_equal(lantern(args, &j1, &err), 0);
    free(err);
    snprintf(args, sizeof args, "eval --json --data=mnist=%s --limit=25 --mean=0.2 --std=0.3 %smlp.onnx", data,
             MODELS);
    assert_int_equal(lantern(args, &j2, &err), 0);
    free(err);
    assert_string_equal(j1, j2);
    jv *v = parse_or_fail(j1);
    double tloss = -1, tacc = -1;
    long long tcount = -1;
    const char *l = strstr(text, "test samples: "), *lo = strstr(text, "loss: "), *ac = strstr(text, "accuracy: ");
    assert_true(l && lo && ac);
    sscanf(l, "test samples: %lld", &tcount);
    sscanf(lo, "loss: %lf", &tloss);
    sscanf(ac, "accuracy: %lf", &tacc);
    assert_int_equal((long long)num(v, "samples"), 25);
    assert_int_equal(tcount, 25);
    /* the text rounds to 6 and 4 places */
    assert_true(fabs(num(v, "loss") - tloss) <= 5e-7);
    assert_true(num(v, "loss") > 0);
    assert_true(fabs(num(v, "accuracy") - tacc) <= 5e-5);
    assert_true(fabs(num(v, "correct") - num(v, "accuracy") * 25) < 1e-9);
    assert_string_equal(str(v, "loss_function"), "softmax-cross-entropy");
    assert_non_null(get(v, "output"));
    assert_int_equal(get(v, "output")->kind, JV_NULL);
    jv_free(v);
    free(text);
    free(j1);
    free(j2);
}

/* ---- import --json ---- */

/* A model whose names hold a quote, a backslash, control characters, a
 * valid two- and a four-byte character and bytes that are not UTF-8; a symbolic batch
 * dim; and a node of an op lantern does not know. */
#define ODD_NAME "q\"b\\c\x01\x7f\xc3\xa9\xff!\xc0\xaf\xed\xa0\x80\xf0\x9f\x98\x80"
/* each byte of a bad sequence (a stray byte, an overlong '/', a surrogate)
 * becomes U+FFFD; a four-byte character stays */
#define FFFD "\xef\xbf\xbd"
#define ODD_DECODED "q\"b\\c\x01\x7f\xc3\xa9" FFFD "!" FFFD FFFD FFFD FFFD FFFD "\xf0\x9f\x98\x80"

static void write_odd_model(const char *path)
{
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
    Onnx__NodeProto nodes[2], *np[2] = {&nodes[0], &nodes[1]};
    Onnx__TensorProto init, *ip[1] = {&init};
    Onnx__ValueInfoProto vin, vout, *vinp[1] = {&vin}, *voutp[1] = {&vout};
    Onnx__TypeProto tin, tout;
    Onnx__TypeProto__Tensor ttin, ttout;
    Onnx__TensorShapeProto shape;
    Onnx__TensorShapeProto__Dimension d0, d1, *dp[2] = {&d0, &d1};
    float w[3] = {0.5f, -1.25f, 2.0f};
    int64_t dims[1] = {3};
    char *mul_in[2] = {"x", "w"}, *mul_out[1] = {ODD_NAME}, *unk_in[1] = {"x"}, *unk_out[1] = {"u"};

    onnx__model_proto__init(&model);
    onnx__graph_proto__init(&graph);
    onnx__operator_set_id_proto__init(&opset);
    model.has_ir_version = 1;
    model.ir_version = 8;
    model.producer_name = "maker\n\"x\"";
    model.producer_version = "2.1";
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 13;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    model.graph = &graph;
    graph.name = "g";
    const char *ops[2] = {"Mul", "NoSuchOp"};
    char **ins[2] = {mul_in, unk_in}, **outs[2] = {mul_out, unk_out};
    for (int i = 0; i < 2; i++) {
        onnx__node_proto__init(&nodes[i]);
        nodes[i].op_type = (char *)ops[i];
        nodes[i].name = i ? "odd\tnode" : "mul";
        nodes[i].n_input = i ? 1 : 2;
        nodes[i].input = ins[i];
        nodes[i].n_output = 1;
        nodes[i].output = outs[i];
    }
    graph.n_node = 2;
    graph.node = np;
    onnx__tensor_proto__init(&init);
    init.name = "w";
    init.has_data_type = 1;
    init.data_type = LT_F32;
    init.n_dims = 1;
    init.dims = dims;
    init.n_float_data = 3;
    init.float_data = w;
    graph.n_initializer = 1;
    graph.initializer = ip;
    onnx__tensor_shape_proto__init(&shape);
    onnx__tensor_shape_proto__dimension__init(&d0);
    onnx__tensor_shape_proto__dimension__init(&d1);
    d0.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d0.dim_param = "batch";
    d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d1.dim_value = 3;
    shape.n_dim = 2;
    shape.dim = dp;
    Onnx__TypeProto *tps[2] = {&tin, &tout};
    Onnx__TypeProto__Tensor *tts[2] = {&ttin, &ttout};
    Onnx__ValueInfoProto *vis[2] = {&vin, &vout};
    const char *vnames[2] = {"x", ODD_NAME};
    for (int i = 0; i < 2; i++) {
        onnx__value_info_proto__init(vis[i]);
        onnx__type_proto__init(tps[i]);
        onnx__type_proto__tensor__init(tts[i]);
        tts[i]->has_elem_type = 1;
        tts[i]->elem_type = LT_F32;
        tts[i]->shape = &shape;
        tps[i]->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tps[i]->tensor_type = tts[i];
        vis[i]->name = (char *)vnames[i];
        vis[i]->type = tps[i];
    }
    graph.n_input = 1;
    graph.input = vinp;
    graph.n_output = 1;
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

static void import_json(void **state)
{
    (void)state;
    char *out, *err;
    /* a model lantern runs: figures against the library's own accessors */
    assert_int_equal(lantern("import --json " MODELS "mlp.onnx", &out, &err), 0);
    assert_string_equal(err, "");
    jv *v = parse_or_fail(out);
    lt_model *m;
    lt_err e;
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &m, &e), LT_OK);
    int64_t values = 0, bytes = 0;
    for (int i = 0; i < lt_model_num_params(m); i++) {
        const lt_tensor *t = lt_model_param(m, i);
        values += t->numel;
        bytes += t->numel * (int64_t)lt_dtype_size(t->dtype);
    }
    const jv *p = get(v, "parameters");
    assert_int_equal((int64_t)num(p, "tensors"), lt_model_num_params(m));
    assert_int_equal((int64_t)num(p, "values"), values);
    assert_int_equal((int64_t)num(p, "bytes"), bytes);
    assert_int_equal((int64_t)num(p, "split_from_merged"), 0);
    const jv *in = at(get(v, "inputs"), 0);
    assert_string_equal(str(in, "name"), lt_model_input_name(m, 0));
    assert_string_equal(str(in, "elem_type"), "float32");
    const jv *shape = get(in, "shape");
    assert_int_equal(shape->n, 2);
    assert_int_equal(at(shape, 0)->kind, JV_STR); /* the batch dim, symbolic */
    assert_true(at(shape, 1)->kind == JV_NUM && at(shape, 1)->num == 784);
    assert_string_equal(str(at(get(v, "outputs"), 0), "name"), lt_model_output_name(m, 0));
    assert_true(num(get(v, "ops"), "Gemm") == 3 && num(get(v, "ops"), "Relu") == 2);
    assert_true(num(v, "nodes") == 5 && num(v, "ir_version") == 7);
    assert_string_equal(str(at(get(v, "opsets"), 0), "domain"), "ai.onnx");
    assert_int_equal(get(v, "unsupported")->n, 0);
    lt_model_free(m);
    jv_free(v);
    free(out);
    free(err);

    /* odd names and an unknown op: the JSON still comes, then exit 2 */
    char path[700];
    snprintf(path, sizeof path, "%s/odd.onnx", tmp);
    write_odd_model(path);
    char args[1024];
    snprintf(args, sizeof args, "import --json %s", path);
    assert_int_equal(lantern(args, &out, &err), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "cannot run"));
    assert_int_equal(count_lines(out), 1);
    v = parse_or_fail(out);
    /* and by Python's json where there is one (stdin strictly UTF-8) */
    if (access("/usr/bin/python3", X_OK) == 0) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s/stdout", tmp);
        FILE *f = fopen(cmd, "wb");
        assert_non_null(f);
        fputs(out, f);
        fclose(f);
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 -c 'import io,json,sys; d=json.load(io.TextIOWrapper(sys.stdin.buffer, "
                 "encoding=\"utf-8\", errors=\"strict\")); sys.exit(d[\"unsupported\"][0][\"op\"] != "
                 "\"NoSuchOp\")' <%s/stdout",
                 tmp);
        assert_int_equal(system(cmd), 0);
    }
    assert_string_equal(str(get(v, "producer"), "name"), "maker\n\"x\"");
    const jv *o = at(get(v, "outputs"), 0);
    assert_string_equal(str(o, "name"), ODD_DECODED);
    assert_string_equal(at(get(o, "shape"), 0)->str, "batch");
    const jv *u = at(get(v, "unsupported"), 0);
    assert_non_null(u);
    assert_string_equal(str(u, "op"), "NoSuchOp");
    assert_string_equal(str(u, "node"), "odd\tnode");
    assert_int_equal(get(v, "unsupported")->n, 1);
    jv_free(v);
    free(out);
    free(err);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmp) ? 0 : -1;
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(help_matches_parser), cmocka_unit_test(usage_errors), cmocka_unit_test(reader_is_strict),
        cmocka_unit_test(eval_json),           cmocka_unit_test(import_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
