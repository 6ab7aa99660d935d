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

void tu_attr_tensor1(tu_graph *g, const char *name, lt_dtype dt, double v)
{
    lt_attr *a = new_attr(g, name, LT_ATTR_TENSOR);
    a->t = lt_ir_alloc(g->m, sizeof *a->t);
    memset(a->t, 0, sizeof *a->t);
    a->t->dtype = dt;
    a->t->rank = 1;
    a->t->dims[0] = 1;
    a->t->numel = 1;
    a->t->data = lt_ir_alloc(g->m, 8);
    memset(a->t->data, 0, 8);
    lt_tensor_set_f64(a->t, 0, v);
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

void tu_fill(lt_tensor *t, double lo, double hi, uint64_t *seed)
{
    for (int64_t e = 0; e < t->numel; e++)
        lt_tensor_set_f64(t, e, lo + (hi - lo) * ((double)(next(seed) >> 11) / 9007199254740992.0));
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

char tu_notes[8192];

void tu_keep_note(const char *msg, void *user)
{
    (void)user;
    size_t at = strlen(tu_notes);
    snprintf(tu_notes + at, sizeof tu_notes - at, "%s\n", msg);
}

lt_trainer *tu_trainer_noting(const char *model)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    o.on_note = tu_keep_note;
    lt_trainer *t = NULL;
    lt_err err;
    tu_notes[0] = 0;
    if (lt_trainer_new(model, &o, &t, &err) != LT_OK)
        fail_msg("%s: %s", model, err.msg);
    return t;
}

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

double tu_max_rel_err(const lt_tensor *got, const lt_tensor *want)
{
    assert_int_equal(got->numel, want->numel);
    double d = 0, w = 0;
    for (int64_t e = 0; e < got->numel; e++) {
        d = fmax(d, fabs(lt_tensor_get_f64(got, e) - lt_tensor_get_f64(want, e)));
        w = fmax(w, fabs(lt_tensor_get_f64(want, e)));
    }
    return d / fmax(w, 1e-12);
}

const lt_tensor *tu_param(lt_model *m, const char *name)
{
    for (int p = 0; p < lt_model_num_params(m); p++)
        if (!strcmp(lt_model_param_name(m, p), name))
            return lt_model_param(m, p);
    fail_msg("no parameter %s", name);
    return NULL;
}

const lt_param *tu_ir_param(const lt_model *m, const char *name)
{
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].name && !strcmp(m->params[p].name, name))
            return &m->params[p];
    fail_msg("no parameter %s", name);
    return NULL;
}

lt_model *tu_model(const char *path)
{
    lt_model *m = NULL;
    lt_err err;
    if (lt_model_load(path, &m, &err) != LT_OK)
        fail_msg("%s: %s", path, err.msg);
    return m;
}

lt_value *tu_load(const char *path)
{
    lt_err err;
    lt_value *v;
    if (lt_value_load(path, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return v;
}

uint8_t *tu_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return d;
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

lt_model *tu_grad_program(const char *path, bool f64)
{
    lt_err err;
    lt_model *m;
    if (lt_model_load(path, &m, &err) != LT_OK || (f64 && lt_model_to_f64(m, &err) != LT_OK))
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return m;
}

void tu_verify(lt_model *m)
{
    lt_err err;
    if (lt_ir_verify(m, &err) != LT_OK)
        fail_msg("verify: %s", err.msg);
}

int tu_run_x(lt_model *m, const lt_value *x, lt_value **outs)
{
    lt_err err;
    const char *names[1] = {"x"};
    lt_value *ins[1] = {lt_value_ref((lt_value *)x)};
    lt_session *s;
    if (lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (lt_session_run(s, 1, names, ins, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    lt_value_free(ins[0]);
    return lt_model_num_outputs(m);
}

double tu_loss_of(lt_model *m, const lt_value *x)
{
    lt_value *o[TU_MAX_OUTPUTS] = {0};
    int n = tu_run_x(m, x, o);
    double l = tu_get(o[0], 0);
    for (int i = 0; i < n; i++)
        lt_value_free(o[i]);
    return l;
}

void tu_assert_same_outputs(lt_value *const *a, lt_value *const *b, int n, double tol, const char *what)
{
    for (int i = 0; i < n; i++) {
        const lt_tensor *ta = lt_value_tensor(a[i]), *tb = lt_value_tensor(b[i]);
        assert_int_equal(ta->numel, tb->numel);
        for (int64_t e = 0; e < ta->numel; e++) {
            double u = lt_tensor_get_f64(ta, e), v = lt_tensor_get_f64(tb, e);
            if (u != v && !(fabs(u - v) <= tol * fmax(1, fabs(u))))
                fail_msg("%s: output %d element %lld: %.17g before, %.17g after", what, i, (long long)e, u, v);
        }
    }
}

int tu_fd_check_grads(lt_model *m, const lt_value *x, lt_value *const *outs, int n, int64_t every,
                      const char *what)
{
    int checked = 0;
    for (int i = 1; i < n; i++) {
        const char *on = lt_model_output_name(m, i);
        size_t len = strlen(on);
        assert_true(len > 5 && !strcmp(on + len - 5, "_grad"));
        int p = 0;
        while (p < m->nparams && (strncmp(m->params[p].name, on, len - 5) || m->params[p].name[len - 5]))
            p++;
        assert_true(p < m->nparams);
        lt_tensor *pt = &m->params[p].data;
        assert_int_equal(pt->dtype, LT_F64);
        const lt_tensor *g = lt_value_tensor(outs[i]);
        assert_int_equal(g->numel, pt->numel);
        double *w = pt->data;
        for (int64_t e = 0; e < pt->numel; e += 1 + pt->numel / every) {
            double h = 1e-6, keep = w[e];
            w[e] = keep + h;
            double up = tu_loss_of(m, x);
            w[e] = keep - h;
            double dn = tu_loss_of(m, x);
            w[e] = keep;
            double fd = (up - dn) / (2 * h), an = lt_tensor_get_f64(g, e);
            if (fabs(fd - an) > 1e-5 * fmax(1, fabs(fd)))
                fail_msg("%s: %s[%lld]: analytic %.9g, differences %.9g", what, on, (long long)e, an, fd);
            checked++;
        }
    }
    return checked;
}

void tu_gemm_ref(double *want, int64_t ldw, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, double beta, const float *c, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t q = 0; q < K; q++)
                s += (double)a[ta ? q * lda + i : i * lda + q] * (double)b[tb ? j * ldb + q : q * ldb + j];
            want[i * ldw + j] = alpha * s + (beta != 0 ? beta * (double)c[i * ldc + j] : 0);
        }
}

tu_builder tu_builder_new(int nin, const char *const *names)
{
    tu_builder g = {0};
    g.m = lt_module_new();
    assert_non_null(g.m);
    g.m->path = "test";
    g.b = lt_block_new(g.m, NULL, "main");
    g.m->main = g.b;
    lt_block_set_params(g.m, g.b, nin);
    g.m->input_default = lt_ir_alloc(g.m, sizeof(int) * (size_t)(nin ? nin : 1));
    for (int i = 0; i < nin; i++) {
        g.m->input_default[i] = -1;
        g.b->params[i] = lt_ival_new(g.m, g.b, names[i]);
    }
    return g;
}

lt_ival *tu_out(tu_builder *g, lt_node *n, int i)
{
    char nm[32];
    snprintf(nm, sizeof nm, "v%d", g->nv++);
    n->out[i] = lt_ival_new(g->m, g->b, nm);
    n->out[i]->def = n;
    return n->out[i];
}

int tu_check_pass(lt_model *before, lt_model *after, const lt_value *x, double tol, int64_t every, const char *what,
                  int *nout)
{
    lt_value *a[TU_MAX_OUTPUTS] = {0}, *b[TU_MAX_OUTPUTS] = {0};
    int n = tu_run_x(before, x, a);
    assert_int_equal(tu_run_x(after, x, b), n);
    tu_assert_same_outputs(a, b, n, tol, what);
    int checked = every > 0 ? tu_fd_check_grads(after, x, b, n, every, what) : 0;
    for (int i = 0; i < n; i++) {
        lt_value_free(a[i]);
        lt_value_free(b[i]);
    }
    *nout = n;
    return checked;
}

/* element (i, j) of op(X) for the matrix of v starting at base, stored with cols columns */
static double mat_at(const lt_value *v, int64_t base, int64_t cols, bool t, int64_t i, int64_t j)
{
    return tu_get(v, base + (t ? j * cols + i : i * cols + j));
}

void tu_matmul_trans_case(lt_dtype dt, bool ta, bool tb, float alpha, int ra, const int64_t *da, int rb,
                          const int64_t *db, uint64_t seed)
{
    tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
    tu_attr_int(&g, "transA", ta);
    tu_attr_int(&g, "transB", tb);
    if (alpha != 1)
        tu_attr_float(&g, "alpha", alpha);
    lt_value *in[2] = {tu_rand(dt, ra, da, -1, 1, seed), tu_rand(dt, rb, db, -1, 1, seed + 1)}, *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* the shapes: op(A) is [M, K], op(B) [K, N]; batch dims broadcast */
    int64_t M = ta ? da[ra - 1] : da[ra - 2], K = ta ? da[ra - 2] : da[ra - 1];
    int64_t N = tb ? db[rb - 2] : db[rb - 1];
    assert_int_equal(tb ? db[rb - 1] : db[rb - 2], K);
    const lt_tensor *y = lt_value_tensor(out[0]);
    int orank = ra > rb ? ra : rb;
    assert_int_equal(y->rank, orank);
    assert_int_equal(y->dims[orank - 2], M);
    assert_int_equal(y->dims[orank - 1], N);
    int64_t nb = y->numel / (M * N);
    double *want = malloc(sizeof *want * (size_t)y->numel);
    assert_non_null(want);
    for (int64_t bi = 0; bi < nb; bi++) {
        /* the batch index of each operand: y's batch coordinates, 0 where the operand has 1 */
        int64_t rem = bi, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = orank - 3; d >= 0; d--) {
            int64_t yd = y->dims[d], c = rem % yd;
            rem /= yd;
            int a = d - (orank - ra), b = d - (orank - rb);
            if (a >= 0) {
                ia += (da[a] == 1 ? 0 : c) * sa;
                sa *= da[a];
            }
            if (b >= 0) {
                ib += (db[b] == 1 ? 0 : c) * sb;
                sb *= db[b];
            }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t x = 0; x < K; x++)
                    s += mat_at(in[0], ia * M * K, ta ? M : K, ta, i, x) *
                         mat_at(in[1], ib * K * N, tb ? K : N, tb, x, j);
                want[(bi * M + i) * N + j] = (double)alpha * s;
            }
    }
    tu_assert_close(out[0], want, y->numel, dt == LT_F32 ? 1e-5 : 1e-12, dt == LT_F32 ? 1e-5 : 1e-12, seed);
    free(want);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(out[0]);
    tu_free(&g);
}

void tu_assert_refused(tu_graph *g, lt_value **in, int nin, const char *says, const char *what)
{
    lt_value *out[TU_MAX_OUTPUTS] = {NULL};
    assert_true(g->node->nout <= TU_MAX_OUTPUTS);
    lt_err err;
    assert_int_not_equal(tu_run(g, in, out, &err), LT_OK);
    if (!strstr(err.msg, says))
        fail_msg("%s: '%s' does not say '%s'", what, err.msg, says);
    for (int i = 0; i < nin; i++)
        lt_value_free(in[i]);
    for (int i = 0; i < g->node->nout; i++)
        lt_value_free(out[i]);
    tu_free(g);
}
