/* Helpers for the cmocka suites. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

tu_graph tu_single(lt_op op, int opset, int nin, int nout)
{
    tu_graph g = {0};
    g.m = lt_module_new();
    assert_non_null(g.m);
    g.m->path = "test";
    lt_block *b = lt_block_new(g.m, NULL, "main");
    g.m->main = b;
    lt_block_set_params(g.m, b, nin);
    g.m->input_default = lt_ir_alloc(g.m, sizeof(int) * (nin ? nin : 1));
    for (int i = 0; i < nin; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "in%d", i);
        b->params[i] = lt_ival_new(g.m, b, nm);
        g.m->input_default[i] = -1;
    }
    g.node = lt_node_new(g.m, b, op, nin, nout);
    g.node->opset = opset;
    g.node->name = "n0";
    lt_block_set_results(g.m, b, nout);
    for (int i = 0; i < nin; i++)
        g.node->in[i] = b->params[i];
    for (int i = 0; i < nout; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "out%d", i);
        g.node->out[i] = lt_ival_new(g.m, b, nm);
        g.node->out[i]->def = g.node;
        b->results[i] = g.node->out[i];
    }
    return g;
}

void tu_omit_input(tu_graph *g, int i)
{
    /* the graph input becomes an optional nobody feeds */
    g->m->main->params[i]->type.kind = LT_KIND_OPTIONAL;
    g->node->in[i] = NULL;
}

static lt_attr *new_attr(tu_graph *g, const char *name, lt_attr_kind kind)
{
    lt_node *n = g->node;
    lt_attr *a = lt_ir_alloc(g->m, sizeof *a * (n->nattr + 1));
    if (n->nattr)
        memcpy(a, n->attrs, sizeof *a * n->nattr);
    n->attrs = a;
    lt_attr *x = &a[n->nattr++];
    x->name = lt_ir_strdup(g->m, name);
    x->kind = kind;
    return x;
}

void tu_attr_int(tu_graph *g, const char *name, int64_t v) { new_attr(g, name, LT_ATTR_INT)->i = v; }
void tu_attr_float(tu_graph *g, const char *name, float v) { new_attr(g, name, LT_ATTR_FLOAT)->f = v; }

void tu_attr_str(tu_graph *g, const char *name, const char *s)
{
    lt_attr *a = new_attr(g, name, LT_ATTR_STRING);
    a->s = lt_ir_strdup(g->m, s);
    a->slen = strlen(s);
}

void tu_attr_strings(tu_graph *g, const char *name, int n, const char *const *s)
{
    lt_attr *a = new_attr(g, name, LT_ATTR_STRINGS);
    a->n = n;
    a->strings = lt_ir_alloc(g->m, sizeof(char *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        a->strings[i] = lt_ir_strdup(g->m, s[i]);
}

void tu_attr_ints(tu_graph *g, const char *name, int n, const int64_t *v)
{
    lt_attr *a = new_attr(g, name, LT_ATTR_INTS);
    a->n = n;
    a->ints = lt_ir_alloc(g->m, sizeof *v * (n ? n : 1));
    memcpy(a->ints, v, sizeof *v * n);
}

void tu_attr_floats(tu_graph *g, const char *name, int n, const float *v)
{
    lt_attr *a = new_attr(g, name, LT_ATTR_FLOATS);
    a->n = n;
    a->floats = lt_ir_alloc(g->m, sizeof *v * (n ? n : 1));
    memcpy(a->floats, v, sizeof *v * n);
}

lt_copy_stats tu_last_copies;

bool tu_device_path(void)
{
    lt_err err;
    const lt_backend *be = lt_backend_from_env(&err);
    return be && !be->host;
}

lt_status tu_run(tu_graph *g, lt_value *const *inputs, lt_value **outputs, lt_err *err)
{
    lt_block *b = g->m->main;
    const char *names[64];
    lt_value *vals[64];
    int n = 0;
    for (int i = 0; i < b->nparams; i++)
        if (inputs[i]) {
            names[n] = b->params[i]->name;
            vals[n++] = inputs[i];
        }
    lt_session *s;
    lt_status st = lt_session_new(g->m, &s, err);
    if (st != LT_OK)
        return st;
    st = lt_session_run(s, n, names, vals, outputs, err);
    lt_session_copy_stats(s, &tu_last_copies);
    lt_session_free(s);
    return st;
}

void tu_free(tu_graph *g)
{
    lt_module_free(g->m);
    g->m = NULL;
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

lt_value *tu_rand(lt_dtype dtype, int rank, const int64_t *dims, double lo, double hi, uint64_t seed)
{
    lt_value *v = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&v->t, dtype, rank, dims, &err), LT_OK);
    for (int64_t i = 0; i < v->t.numel; i++) {
        double u = (double)(next(&seed) >> 11) / 9007199254740992.0;
        double x = lo + (hi - lo) * u;
        if (lt_dtype_is_float(dtype))
            lt_tensor_set_f64(&v->t, i, x);
        else
            lt_tensor_set_i64(&v->t, i, (int64_t)floor(x));
    }
    return v;
}

lt_value *tu_from(lt_dtype dtype, int rank, const int64_t *dims, const double *vals)
{
    lt_value *v = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&v->t, dtype, rank, dims, &err), LT_OK);
    for (int64_t i = 0; i < v->t.numel; i++)
        lt_tensor_set_f64(&v->t, i, vals[i]);
    return v;
}

double tu_get(const lt_value *v, int64_t i) { return lt_tensor_get_f64(&v->t, i); }

void tu_assert_close(const lt_value *got, const double *want, int64_t n, double rtol, double atol, uint64_t seed)
{
    assert_int_equal(got->kind, LT_VAL_TENSOR);
    if (got->t.numel != n)
        fail_msg("seed %llu: %lld elements, expected %lld", (unsigned long long)seed, (long long)got->t.numel,
                 (long long)n);
    for (int64_t i = 0; i < n; i++) {
        double x = lt_tensor_get_f64(&got->t, i);
        if (!(fabs(x - want[i]) <= atol + rtol * fabs(want[i])))
            fail_msg("seed %llu: element %lld is %.9g, expected %.9g", (unsigned long long)seed, (long long)i, x,
                     want[i]);
    }
}

static void tu_be32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    fwrite(b, 1, 4, f);
}

int tu_write_idx_split(const char *dir, const char *prefix, uint32_t n, unsigned seed)
{
    char ip[700], lp[700];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    FILE *fi = fopen(ip, "wb"), *fl = fopen(lp, "wb");
    if (!fi || !fl) {
        if (fi)
            fclose(fi);
        if (fl)
            fclose(fl);
        return -1;
    }
    srand(seed);
    tu_be32(fi, 0x803);
    tu_be32(fi, n);
    tu_be32(fi, 28);
    tu_be32(fi, 28);
    tu_be32(fl, 0x801);
    tu_be32(fl, n);
    for (uint32_t i = 0; i < n; i++) {
        int label = rand() % 10;
        fputc(label, fl);
        for (int p = 0; p < 784; p++)
            fputc(p % 10 == label ? 200 + rand() % 56 : rand() % 100, fi);
    }
    int bad = fclose(fl) != 0;
    return fclose(fi) != 0 || bad ? -1 : 0;
}

lt_value *tu_load(const char *path)
{
    lt_err err;
    lt_value *v;
    if (lt_value_load(path, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return v;
}

int tu_sh(const char *cmd, char *out, size_t olen, char *err, size_t elen)
{
    char full[4096], of[] = "/tmp/lt_sh_outXXXXXX", ef[] = "/tmp/lt_sh_errXXXXXX";
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

void tu_grad_check_model(const char *file, int rank, const int64_t *dims, double lo, double hi, uint64_t seed,
                         const char *must_be_nonzero)
{
    lt_value *x = tu_rand(LT_F32, rank, dims, lo, hi, seed);
    const char *name = "x";
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check(file, &o, 1, &name, &x, 64, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(nrows > 0);
    bool seen = must_be_nonzero == NULL;
    for (int r = 0; r < nrows; r++) {
        if (rows[r].err64 > 1e-5 || rows[r].err32 > 1e-3)
            fail_msg("%s, seed %llu: parameter %s: relative error %.3g (f64), %.3g (f32)", file,
                     (unsigned long long)seed, rows[r].name, rows[r].err64, rows[r].err32);
        assert_true(rows[r].checked > 0);
        if (must_be_nonzero && !strcmp(rows[r].name, must_be_nonzero))
            seen = rows[r].max_grad > 0;
    }
    if (!seen)
        fail_msg("%s: %s got no gradient", file, must_be_nonzero);
    free(rows);
    lt_value_free(x);
}
