/* ir/fuse_gelu.c: exporters' erf chains become one Gelu node before the
 * AD. Each written form fuses, near misses are left alone, the fused
 * model's outputs match the chain's within float32 rounding, and the
 * gradients of a model with the chain (fused inside the AD) match central
 * finite differences in float64. */
#include "testutil.h"
#include "ir/fuse_gelu.h"
#include "ir/infer.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* how the constants are written */
enum { K_TENSOR, K_VALUE_FLOAT, K_INIT_FROZEN, K_INIT_TRAINABLE };
/* where the 1/2 goes: (x a) * 0.5, 0.5 * (a x), (x a) / 2, (x * 0.5) a, a (x / 2), a (0.5 * x) */
enum { T_MUL_HALF, T_HALF_MUL, T_DIV_TWO, T_HALF_X_FIRST, T_X_DIV_TWO_FIRST, T_HALF_TIMES_X_FIRST };
/* how x / sqrt 2 is written: Div(x, sqrt 2), Mul(x, 1/sqrt 2), Mul(1/sqrt 2, x) */
enum { S_DIV, S_MUL, S_MUL_SWAPPED };

typedef struct form {
    int scale, tail, konst;
    bool add_swapped;  /* Add(1, erf) */
    double sqrt2;      /* the Div's constant (0: float32 sqrt 2); Mul forms use its inverse */
    double one, half;  /* 0: 1 and 0.5 (a Div tail uses 1 / half) */
    int also_read;     /* 0, or 1 + which intermediate (t, erf, 1 + erf, the product) is an output too */
    bool tanh_form;    /* the tanh approximation instead */
    lt_dtype dt;       /* 0: float32 */
    int const_rank;    /* rank of the constants that are tensors (1: shape [1]) */
} form;

typedef struct gb {
    lt_module *m;
    lt_block *b;
    const form *f;
    int nv;
    lt_ival *inter[4];
} gb;

static lt_ival *out_of(gb *g, lt_node *n)
{
    char nm[32];
    snprintf(nm, sizeof nm, "v%d", g->nv++);
    n->out[0] = lt_ival_new(g->m, g->b, nm);
    n->out[0]->def = n;
    return n->out[0];
}

static lt_ival *op1(gb *g, lt_op op, lt_ival *a)
{
    lt_node *n = lt_node_new(g->m, g->b, op, 1, 1);
    n->opset = 13;
    n->in[0] = a;
    return out_of(g, n);
}

static lt_ival *op2(gb *g, lt_op op, lt_ival *a, lt_ival *b)
{
    lt_node *n = lt_node_new(g->m, g->b, op, 2, 1);
    n->opset = 13;
    n->in[0] = a;
    n->in[1] = b;
    return out_of(g, n);
}

static lt_dtype dtype(const form *f) { return f->dt ? f->dt : LT_F32; }

/* an initializer of shape dims filled with v (or nothing when v is NULL) */
static lt_ival *param(lt_module *m, const char *nm, lt_dtype dt, int rank, const int64_t *dims, bool trainable)
{
    int p = lt_module_add_param(m, nm);
    lt_tensor *t = &m->params[p].data;
    t->dtype = dt;
    t->rank = rank;
    for (int d = 0; d < rank; d++)
        t->dims[d] = dims[d];
    t->numel = lt_shape_numel(rank, dims);
    t->data = calloc((size_t)(t->numel ? t->numel : 1), lt_dtype_size(dt));
    assert_non_null(t->data);
    lt_ival *v = lt_ival_new(m, m->main, nm);
    v->param = p;
    lt_type_tensor(&v->type, dt, rank, dims);
    m->params[p].value = v;
    m->params[p].trainable = trainable;
    return v;
}

static lt_ival *konst(gb *g, double v)
{
    const form *f = g->f;
    const int64_t ones[3] = {1, 1, 1};
    if (f->konst == K_INIT_FROZEN || f->konst == K_INIT_TRAINABLE) {
        char nm[32];
        snprintf(nm, sizeof nm, "c%d", g->nv++);
        lt_ival *p = param(g->m, nm, dtype(f), f->const_rank, ones, f->konst == K_INIT_TRAINABLE);
        lt_tensor_set_f64(&g->m->params[p->param].data, 0, v);
        return p;
    }
    lt_node *n = lt_node_new(g->m, g->b, LT_OP_CONSTANT, 0, 1);
    n->opset = 13;
    lt_node_set_attrs(g->m, n, 1);
    lt_attr *a = &n->attrs[0];
    if (f->konst == K_VALUE_FLOAT && dtype(f) == LT_F32) {
        a->name = "value_float";
        a->kind = LT_ATTR_FLOAT;
        a->f = (float)v;
    } else {
        a->name = "value";
        a->kind = LT_ATTR_TENSOR;
        lt_tensor *t = lt_ir_alloc(g->m, sizeof *t);
        assert_non_null(t);
        t->dtype = dtype(f);
        t->rank = f->const_rank;
        for (int d = 0; d < f->const_rank; d++)
            t->dims[d] = 1;
        t->numel = 1;
        t->data = lt_ir_alloc(g->m, 8);
        lt_tensor_set_f64(t, 0, v);
        a->t = t;
    }
    return out_of(g, n);
}

/* y = gelu(x) written the way f says */
static lt_ival *chain(gb *g, lt_ival *x)
{
    const form *f = g->f;
    double s2 = f->sqrt2 ? f->sqrt2 : (float)M_SQRT2, one = f->one ? f->one : 1.0, half = f->half ? f->half : 0.5;
    lt_ival *a;
    if (f->tanh_form) {
        lt_ival *x3 = op2(g, LT_OP_MUL, op2(g, LT_OP_MUL, x, x), x);
        lt_ival *u = op2(g, LT_OP_ADD, x, op2(g, LT_OP_MUL, x3, konst(g, 0.044715)));
        lt_ival *t = op1(g, LT_OP_TANH, op2(g, LT_OP_MUL, u, konst(g, 0.7978845608028654)));
        a = op2(g, LT_OP_ADD, t, konst(g, one));
    } else {
        lt_ival *t = f->scale == S_DIV   ? op2(g, LT_OP_DIV, x, konst(g, s2))
                     : f->scale == S_MUL ? op2(g, LT_OP_MUL, x, konst(g, 1.0 / s2))
                                         : op2(g, LT_OP_MUL, konst(g, 1.0 / s2), x);
        lt_ival *e = op1(g, LT_OP_ERF, t);
        a = f->add_swapped ? op2(g, LT_OP_ADD, konst(g, one), e) : op2(g, LT_OP_ADD, e, konst(g, one));
        g->inter[0] = t;
        g->inter[1] = e;
    }
    g->inter[2] = a;
    lt_ival *p, *y;
    switch (f->tail) {
    case T_MUL_HALF:
        p = op2(g, LT_OP_MUL, x, a);
        y = op2(g, LT_OP_MUL, p, konst(g, half));
        break;
    case T_HALF_MUL:
        p = op2(g, LT_OP_MUL, a, x);
        y = op2(g, LT_OP_MUL, konst(g, half), p);
        break;
    case T_DIV_TWO:
        p = op2(g, LT_OP_MUL, x, a);
        y = op2(g, LT_OP_DIV, p, konst(g, 1.0 / half));
        break;
    case T_HALF_X_FIRST:
        p = op2(g, LT_OP_MUL, x, konst(g, half));
        y = op2(g, LT_OP_MUL, p, a);
        break;
    case T_X_DIV_TWO_FIRST:
        p = op2(g, LT_OP_DIV, x, konst(g, 1.0 / half));
        y = op2(g, LT_OP_MUL, a, p);
        break;
    default:
        p = op2(g, LT_OP_MUL, konst(g, half), x);
        y = op2(g, LT_OP_MUL, a, p);
        break;
    }
    g->inter[3] = p;
    return y;
}

static const int64_t xdims[2] = {5, 9};

/* graph input x [5, 9] -> chain -> output (plus the intermediate f names) */
static lt_module *build_plain(const form *f, gb *g)
{
    memset(g, 0, sizeof *g);
    g->f = f;
    g->m = lt_module_new();
    assert_non_null(g->m);
    g->m->path = "test";
    g->b = lt_block_new(g->m, NULL, "main");
    g->m->main = g->b;
    lt_block_set_params(g->m, g->b, 1);
    g->m->input_default = lt_ir_alloc(g->m, sizeof(int));
    g->m->input_default[0] = -1;
    lt_ival *x = g->b->params[0] = lt_ival_new(g->m, g->b, "x");
    lt_type_tensor(&x->type, dtype(f), 2, xdims);
    lt_ival *y = chain(g, x);
    lt_block_set_results(g->m, g->b, f->also_read ? 2 : 1);
    g->b->results[0] = y;
    if (f->also_read)
        g->b->results[1] = g->inter[f->also_read - 1];
    lt_err err;
    lt_status s = lt_infer_module(g->m, &err);
    if (s == LT_OK)
        s = lt_ir_verify(g->m, &err);
    if (s != LT_OK)
        fail_msg("building: %s", err.msg);
    return g->m;
}

static int count_op(const lt_block *b, lt_op op)
{
    int c = 0;
    for (int i = 0; i < b->nnodes; i++) {
        c += b->nodes[i]->op == op;
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            c += count_op(b->nodes[i]->regions[r], op);
    }
    return c;
}

/* the form fuses into one Gelu, nothing of the chain is left, and the
 * outputs match the unfused model's within float32 rounding */
static void check_fuses(const form *f, uint64_t seed)
{
    gb g0, g1;
    lt_module *ref = build_plain(f, &g0), *m = build_plain(f, &g1);
    int n = -1;
    lt_err err;
    assert_int_equal(lt_ir_fuse_gelu(m, &n, &err), LT_OK);
    assert_int_equal(n, 1);
    assert_int_equal(m->main->nnodes, 1);
    const lt_node *k = m->main->nodes[0];
    assert_int_equal(k->op, LT_OP_GELU);
    assert_int_equal(k->nin, 1);
    assert_ptr_equal(k->in[0], m->main->params[0]);
    assert_string_equal(lt_attr_str(k, "approximate", "?"), "none");
    assert_ptr_equal(k->out[0], m->main->results[0]);
    assert_int_equal(m->main->params[0]->uses, 1);
    assert_int_equal(lt_infer_module(m, &err), LT_OK);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);

    lt_value *x = tu_rand(dtype(f), 2, xdims, -3.5, 3.5, seed);
    lt_value *a = NULL, *b = NULL;
    assert_int_equal(tu_run_x(ref, x, &a), 1);
    assert_int_equal(tu_run_x(m, x, &b), 1);
    const lt_tensor *ta = lt_value_tensor(a), *tb = lt_value_tensor(b);
    assert_int_equal(ta->numel, 45);
    assert_int_equal(tb->numel, 45);
    /* a float64 model's constants may be float32's roundings (widened):
     * the chain then differs from the exact function by that much */
    double eps = dtype(f) == LT_F64 ? 1e-14 : FLT_EPSILON, ceps = FLT_EPSILON;
    for (int64_t i = 0; i < ta->numel; i++) {
        double xi = tu_get(x, i), ya = lt_tensor_get_f64(ta, i), yb = lt_tensor_get_f64(tb, i);
        double exact = 0.5 * xi * erfc(-xi / M_SQRT2);
        /* the chain rounds t, erf, 1 + erf and the products: a few
         * roundings of x's size; the fused kernel is closer to exact */
        if (fabs(ya - yb) > 8 * ceps * (1 + fabs(xi)) || fabs(yb - exact) > 8 * eps * (1 + fabs(xi)))
            fail_msg("element %lld: x %.9g, chain %.9g, fused %.9g, exact %.9g", (long long)i, xi, ya, yb, exact);
    }
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(x);
    lt_module_free(ref);
    lt_module_free(m);
}

static void check_left_alone(const form *f)
{
    gb g;
    lt_module *m = build_plain(f, &g);
    int before = m->main->nnodes, n = -1;
    lt_err err;
    assert_int_equal(lt_ir_fuse_gelu(m, &n, &err), LT_OK);
    assert_int_equal(n, 0);
    assert_int_equal(m->main->nnodes, before);
    assert_int_equal(count_op(m->main, LT_OP_GELU), 0);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    lt_module_free(m);
}

static void torch_form(void **s)
{
    (void)s;
    check_fuses(&(form){.scale = S_DIV, .tail = T_MUL_HALF}, 1);
}

static void every_written_form(void **s)
{
    (void)s;
    uint64_t seed = 10;
    for (int sc = S_DIV; sc <= S_MUL_SWAPPED; sc++)
        for (int tl = T_MUL_HALF; tl <= T_HALF_TIMES_X_FIRST; tl++)
            for (int sw = 0; sw < 2; sw++)
                check_fuses(&(form){.scale = sc, .tail = tl, .add_swapped = sw}, seed++);
}

static void every_kind_of_constant(void **s)
{
    (void)s;
    check_fuses(&(form){.scale = S_MUL, .tail = T_DIV_TWO, .konst = K_VALUE_FLOAT}, 30);
    check_fuses(&(form){.scale = S_DIV, .tail = T_HALF_X_FIRST, .konst = K_INIT_FROZEN}, 31);
    check_fuses(&(form){.scale = S_DIV, .tail = T_MUL_HALF, .konst = K_INIT_FROZEN, .const_rank = 1}, 32);
    check_fuses(&(form){.scale = S_DIV, .tail = T_MUL_HALF, .const_rank = 2}, 33);
    /* float64 models: the exact values, and float32's rounded ones widened */
    check_fuses(&(form){.scale = S_DIV, .tail = T_MUL_HALF, .dt = LT_F64, .sqrt2 = M_SQRT2}, 34);
    check_fuses(&(form){.scale = S_MUL_SWAPPED, .tail = T_HALF_MUL, .dt = LT_F64}, 35);
}

static void near_misses(void **s)
{
    (void)s;
    float sq = (float)M_SQRT2;
    /* constants off by one float32 step, or plainly wrong */
    check_left_alone(&(form){.sqrt2 = nextafterf(sq, 2.0f)});
    check_left_alone(&(form){.sqrt2 = nextafterf(sq, 1.0f)});
    check_left_alone(&(form){.scale = S_MUL, .sqrt2 = 1.5});
    check_left_alone(&(form){.one = 1.0 + FLT_EPSILON});
    check_left_alone(&(form){.one = 2.0});
    check_left_alone(&(form){.half = 0.25});
    check_left_alone(&(form){.tail = T_DIV_TWO, .half = 0.5 + FLT_EPSILON});
    check_left_alone(&(form){.tail = T_HALF_X_FIRST, .half = -0.5});
    /* each intermediate read by something else too (here: an output) */
    for (int r = 1; r <= 4; r++)
        for (int tl = T_MUL_HALF; tl <= T_HALF_X_FIRST; tl += 3)
            check_left_alone(&(form){.tail = tl, .also_read = r});
    /* the tanh approximation is another function */
    check_left_alone(&(form){.tanh_form = true});
    /* a trainable initializer is a parameter, not a constant */
    check_left_alone(&(form){.konst = K_INIT_TRAINABLE});
    /* a one-element constant of higher rank than x broadcasts the shape */
    check_left_alone(&(form){.const_rank = 3});
}

/* two chains where one reads x through the other: both fuse, in order */
static void chained_chains(void **s)
{
    (void)s;
    form f = {.scale = S_DIV, .tail = T_MUL_HALF};
    gb g;
    build_plain(&f, &g);
    lt_module *m = g.m;
    lt_ival *y2 = chain(&g, m->main->results[0]);
    m->main->results[0] = y2;
    lt_err err;
    assert_int_equal(lt_infer_module(m, &err), LT_OK);
    int n = 0;
    assert_int_equal(lt_ir_fuse_gelu(m, &n, &err), LT_OK);
    assert_int_equal(n, 2);
    assert_int_equal(m->main->nnodes, 2);
    assert_int_equal(count_op(m->main, LT_OP_GELU), 2);
    assert_ptr_equal(m->main->nodes[1]->in[0], m->main->nodes[0]->out[0]);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    lt_module_free(m);
}

/* ---- gradients: X W + B through the chain, loss sum(y * R) ---- */

static void fill(lt_module *m, lt_ival *v, double lo, double hi, uint64_t *seed)
{
    tu_fill(&m->params[v->param].data, lo, hi, seed);
}

static lt_status build_mlp(void *ctx, lt_model **out, lt_err *err)
{
    const form *f = ctx;
    gb g = {.f = f};
    g.m = lt_module_new();
    if (!g.m)
        return LT_ERR_NOMEM;
    g.m->path = "gelu-mlp";
    g.b = lt_block_new(g.m, NULL, "main");
    g.m->main = g.b;
    lt_block_set_params(g.m, g.b, 0);
    uint64_t seed = 77;
    const int64_t xd[2] = {17, 6}, wd[2] = {6, 5}, bd[1] = {5}, rd[2] = {17, 5};
    lt_ival *X = param(g.m, "X", LT_F32, 2, xd, true), *W = param(g.m, "W", LT_F32, 2, wd, true);
    lt_ival *B = param(g.m, "B", LT_F32, 1, bd, true), *R = param(g.m, "R", LT_F32, 2, rd, false);
    fill(g.m, X, -1.5, 1.5, &seed);
    fill(g.m, W, -1, 1, &seed);
    fill(g.m, B, -0.5, 0.5, &seed);
    fill(g.m, R, -1, 1, &seed);
    lt_ival *h = op2(&g, LT_OP_ADD, op2(&g, LT_OP_MAT_MUL, X, W), B);
    lt_ival *y = op2(&g, LT_OP_MUL, chain(&g, h), R);
    lt_block_set_results(g.m, g.b, 1);
    g.b->results[0] = y;
    *out = g.m;
    lt_status s = lt_infer_module(g.m, err);
    return s == LT_OK ? lt_ir_verify(g.m, err) : s;
}

static void gradients_match_finite_differences(void **s)
{
    (void)s;
    const form forms[3] = {{.scale = S_DIV, .tail = T_MUL_HALF},
                           {.scale = S_MUL_SWAPPED, .tail = T_X_DIV_TWO_FIRST, .add_swapped = true},
                           {.scale = S_MUL, .tail = T_DIV_TWO, .konst = K_VALUE_FLOAT}};
    for (int k = 0; k < 3; k++) {
        /* the AD sees one Gelu: no Erf is left in the gradient program */
        lt_model *m = NULL;
        lt_err err;
        assert_int_equal(build_mlp((void *)&forms[k], &m, &err), LT_OK);
        lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
        assert_int_equal(lt_model_grad(m, &o, &err), LT_OK);
        int gelus = count_op(m->main, LT_OP_GELU), erfs = count_op(m->main, LT_OP_ERF);
        for (int i = 0; i < m->nfuncs; i++) {
            gelus += count_op(m->funcs[i]->body, LT_OP_GELU);
            erfs += count_op(m->funcs[i]->body, LT_OP_ERF);
        }
        assert_int_equal(gelus, 1);
        assert_int_equal(erfs, 1); /* the Gelu rule's own Phi(x) */
        lt_model_free(m);

        lt_gradcheck_row *rows = NULL;
        int nrows = 0;
        lt_status st = lt_grad_check_built(build_mlp, (void *)&forms[k], &o, 0, NULL, NULL, 200, &rows, &nrows, &err);
        if (st != LT_OK)
            fail_msg("grad check: %s", err.msg);
        assert_int_equal(nrows, 3);
        for (int r = 0; r < nrows; r++) {
            printf("  form %d %-3s rel.err %.3g (float32 AD %.3g), %d checked, max |grad| %.3g\n", k, rows[r].name,
                   rows[r].err64, rows[r].err32, rows[r].checked, rows[r].max_grad);
            assert_true(rows[r].checked > 0);
            assert_true(rows[r].max_grad > 0);
            assert_true(rows[r].err64 < 1e-6);
            assert_true(rows[r].err32 < 1e-3);
        }
        free(rows);
    }
}

/* ---- the Gelu kernel the fused node runs: float32 rows through the
 * array form (SIMD loop, its tail, and the parallel split above 65536
 * elements) against 0.5 x erfc(-x / sqrt 2) in float64 ---- */
static void gelu_kernel_against_float64(void **s)
{
    (void)s;
    const int64_t shapes[3][3] = {{1, 1, 7}, {1, 17, 61}, {3, 23, 1001}};
    for (int k = 0; k < 3; k++) {
        tu_graph g = tu_single(LT_OP_GELU, 20, 1, 1);
        uint64_t seed = 500 + (uint64_t)k;
        lt_value *x = tu_rand(LT_F32, 3, shapes[k], -12, 12, seed);
        lt_tensor *t = (lt_tensor *)lt_value_tensor(x);
        const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1.41421354f, -1.41421354f, -9.5f, 6.0f};
        for (int i = 0; i < 8 && i < t->numel; i++)
            lt_tensor_set_f64(t, i, special[i]);
        lt_value *y = NULL;
        lt_err err;
        if (tu_run(&g, &x, &y, &err) != LT_OK)
            fail_msg("%s", err.msg);
        double *want = malloc(sizeof *want * (size_t)t->numel);
        assert_non_null(want);
        for (int64_t i = 0; i < t->numel; i++) {
            double xi = lt_tensor_get_f64(t, i);
            want[i] = 0.5 * xi * erfc(-xi / M_SQRT2);
        }
        /* the erfc approximation behind x < -sqrt 2 is good to ~1e-5 relative */
        tu_assert_close(y, want, t->numel, 2e-5, 0, seed);
        free(want);
        lt_value_free(x);
        lt_value_free(y);
        tu_free(&g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(torch_form),
        cmocka_unit_test(every_written_form),
        cmocka_unit_test(every_kind_of_constant),
        cmocka_unit_test(near_misses),
        cmocka_unit_test(chained_chains),
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(gelu_kernel_against_float64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
