/* Shape values folded at import (ir/shape_values.c) and Transpose's rank
 * from perm: the graph a TorchScript export writes for x.unflatten(-1,
 * (3, E)) (Shape, Size, Add, Mod, Slice, Concat into a Reshape) keeps its
 * rank and symbolic dims, and its gradient matches finite differences. */
#include "testutil.h"
#include "ir/shape_tensor_util.h"
#include <stdlib.h>
#include <string.h>

enum { E = 4 };

typedef struct gb {
    tu_graph g;
    lt_module *m;
} gb;

static gb gb_new(int nin)
{
    gb b;
    b.g = tu_single(LT_OP_IDENTITY, 15, nin, 1);
    b.m = b.g.m;
    b.m->main->nnodes = 0;
    return b;
}

static lt_ival *node(gb *b, lt_op op, int nin, lt_ival *const *ins, const char *out)
{
    lt_node *n = lt_node_new(b->m, b->m->main, op, nin, 1);
    n->opset = 15;
    n->name = out;
    for (int i = 0; i < nin; i++)
        n->in[i] = ins[i];
    n->out[0] = lt_ival_new(b->m, b->m->main, out);
    n->out[0]->def = n;
    b->g.node = n; /* the tu_attr_* helpers set attributes on the last node */
    return n->out[0];
}
#define N1(op, a, o) node(&b, LT_OP_##op, 1, (lt_ival *[]){a}, o)
#define N2(op, a, c, o) node(&b, LT_OP_##op, 2, (lt_ival *[]){a, c}, o)
#define N3(op, a, c, d, o) node(&b, LT_OP_##op, 3, (lt_ival *[]){a, c, d}, o)

/* an initializer: int64 values (rank 0 or 1), or float32 seeded values */
static lt_ival *param(gb *b, const char *name, lt_dtype dt, int rank, const int64_t *dims, const int64_t *iv,
                      uint64_t seed)
{
    lt_module *m = b->m;
    int p = lt_module_add_param(m, name);
    lt_tensor *t = &m->params[p].data;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        numel *= dims[i];
    t->dtype = dt;
    t->rank = rank;
    if (rank > 0)
        memcpy(t->dims, dims, sizeof *dims * (size_t)rank);
    t->numel = numel;
    t->data = malloc(8 * (size_t)(numel ? numel : 1));
    if (dt == LT_I64) {
        memcpy(t->data, iv, sizeof *iv * (size_t)numel);
    } else {
        lt_value *v = tu_rand(LT_F32, rank, dims, -1, 1, seed);
        memcpy(t->data, v->t.data, sizeof(float) * (size_t)numel);
        lt_value_free(v);
    }
    lt_ival *x = lt_ival_new(m, m->main, name);
    x->param = p;
    lt_type_tensor(&x->type, dt, rank, dims);
    m->params[p].value = x;
    m->params[p].trainable = dt != LT_I64;
    return x;
}
#define I1(name, ...)                                                                                              \
    param(&b, name, LT_I64, 1, (int64_t[]){sizeof((int64_t[]){__VA_ARGS__}) / 8},                                 \
          (int64_t[]){__VA_ARGS__}, 0)
#define I0(name, v) param(&b, name, LT_I64, 0, NULL, (int64_t[]){v}, 0)

/* x [L, N, E] -> MatMul W [E, 3E] -> unflatten(-1, (3, E)) as TorchScript
 * exports it at opset 13+ -> Transpose [2, 0, 1, 3] -> q * k + v. With
 * reshape_shape, the Reshape's shape is a graph input of unknown rank
 * instead, so only Transpose's perm tells the rank. */
static lt_ival *unflatten_graph(gb *b_, bool shape_input)
{
    gb b = *b_;
    lt_ival *x = b.m->main->params[0];
    lt_type_tensor(&x->type, LT_F32, 3, (int64_t[]){1, 1, E});
    x->type.dims[0] = (lt_dim){-1, lt_module_sym(b.m, "L")};
    x->type.dims[1] = (lt_dim){-1, lt_module_sym(b.m, "N")};
    lt_ival *w = param(&b, "W", LT_F32, 2, (int64_t[]){E, 3 * E}, NULL, 7);
    lt_ival *proj = N2(MAT_MUL, x, w, "proj"), *fs;
    if (shape_input) {
        fs = b.m->main->params[1];
        lt_type_unknown(&fs->type, LT_I64, -1);
    } else {
        lt_ival *s0 = N1(SHAPE, proj, "s0"), *rank = N1(SIZE, s0, "rank");
        lt_ival *d2 = N2(MOD, N2(ADD, I0("dim", -1), rank, "d1"), rank, "d2");
        lt_ival *head = N3(SLICE, s0, I1("zero", 0), N2(RESHAPE, d2, I1("one1", 1), "hend"), "head");
        lt_ival *tstart = N2(RESHAPE, N2(ADD, d2, I0("one", 1), "dp1"), I1("one1b", 1), "tstart");
        lt_ival *tail = N3(SLICE, s0, tstart, I1("big", INT64_MAX), "tail");
        fs = N3(CONCAT, head, I1("usz", 3, E), tail, "fs");
        tu_attr_int(&b.g, "axis", 0);
    }
    lt_ival *p4 = N2(RESHAPE, proj, fs, "p4");
    lt_ival *p6 = N1(TRANSPOSE, p4, "p6");
    tu_attr_ints(&b.g, "perm", 4, (int64_t[]){2, 0, 1, 3});
    lt_ival *q = N2(GATHER, p6, I0("i0", 0), "q"), *k = N2(GATHER, p6, I0("i1", 1), "k");
    lt_ival *v = N2(GATHER, p6, I0("i2", 2), "v");
    lt_ival *y = N2(ADD, N2(MUL, q, k, "qk"), v, "y");
    b.m->main->results[0] = y;
    *b_ = b;
    return p4;
}

static void assert_dim(lt_dim d, int64_t v, int sym)
{
    if (sym >= 0)
        assert_int_equal(d.sym, sym);
    else {
        assert_true(d.sym < 0);
        assert_int_equal(d.v, v);
    }
}

static void unflatten_keeps_shape(void **state)
{
    (void)state;
    gb b = gb_new(1);
    lt_ival *p4 = unflatten_graph(&b, false);
    lt_err err;
    if (lt_infer_module(b.m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* [L, N, 3E] unflattened to [L, N, 3, E] */
    assert_int_equal(p4->type.rank, 4);
    assert_dim(p4->type.dims[0], -1, lt_module_sym(b.m, "L"));
    assert_dim(p4->type.dims[1], -1, lt_module_sym(b.m, "N"));
    assert_dim(p4->type.dims[2], 3, -1);
    assert_dim(p4->type.dims[3], E, -1);
    const lt_type *y = &b.m->main->results[0]->type;
    assert_int_equal(y->rank, 3);
    assert_dim(y->dims[2], E, -1);
    tu_free(&b.g);
}

typedef struct gctx {
    bool shape_input;
} gctx;

static lt_status build(void *ctx, lt_model **out, lt_err *err)
{
    const gctx *g = ctx;
    gb b = gb_new(g->shape_input ? 2 : 1);
    unflatten_graph(&b, g->shape_input);
    lt_status s = lt_infer_module(b.m, err);
    if (s == LT_OK)
        s = lt_ir_verify(b.m, err);
    *out = b.m;
    return s;
}

static void grad_matches(bool shape_input)
{
    gctx g = {shape_input};
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_value *x = tu_rand(LT_F32, 3, (int64_t[]){5, 2, E}, -1, 1, 11);
    lt_value *shape = tu_from(LT_I64, 1, (int64_t[]){4}, (double[]){5, 2, 3, E});
    const char *names[2] = {"in0", "in1"};
    lt_value *inputs[2] = {x, shape};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check_built(build, &g, &o, shape_input ? 2 : 1, names, inputs, 50, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nrows, 1);
    print_message("  d%s: rel err %.3g over %d elements\n", rows[0].name, rows[0].err64, rows[0].checked);
    assert_true(rows[0].err64 < 1e-6 && rows[0].max_grad > 0);
    free(rows);
    lt_value_free(x);
    lt_value_free(shape);
}

static void unflatten_grad(void **state)
{
    (void)state;
    grad_matches(false);
}

/* Reshape to a shape of unknown length: the Transpose's input rank is
 * unknown, its perm still gives the output rank and the gradient */
static void transpose_rank_from_perm(void **state)
{
    (void)state;
    gb b = gb_new(2);
    unflatten_graph(&b, true);
    lt_err err;
    if (lt_infer_module(b.m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_ival *p4 = NULL, *p6 = NULL;
    for (int i = 0; i < b.m->main->nnodes; i++) {
        const char *nm = b.m->main->nodes[i]->out[0]->name;
        if (!strcmp(nm, "p4"))
            p4 = b.m->main->nodes[i]->out[0];
        if (!strcmp(nm, "p6"))
            p6 = b.m->main->nodes[i]->out[0];
    }
    assert_non_null(p6);
    assert_int_equal(p4->type.rank, -1);
    assert_int_equal(p6->type.rank, 4);
    tu_free(&b.g);
    grad_matches(true);
}

/* lt_ti_values on hand-checked folds: x [L, 6] */
static void fold_values(void **state)
{
    (void)state;
    gb b = gb_new(1);
    lt_ival *x = b.m->main->params[0];
    int sl = lt_module_sym(b.m, "L");
    lt_type_tensor(&x->type, LT_F32, 2, (int64_t[]){1, 6});
    x->type.dims[0] = (lt_dim){-1, sl};
    lt_ival *s = N1(SHAPE, x, "s");
    lt_ival *six = N2(GATHER, s, I0("i1", -1), "six");
    lt_ival *three = N2(DIV, six, I0("two", 2), "three");
    lt_ival *l = N2(GATHER, s, I1("i0", 0), "l");
    lt_ival *lsub = N2(SUB, l, I1("zero", 0), "lsub");
    lt_ival *eq = N2(EQUAL, l, lsub, "eq");
    lt_ival *wh = N3(WHERE, eq, three, I0("ninety", 90), "wh");
    lt_ival *m1 = N2(MOD, I0("m7", -7), I0("m3", 3), "m1");
    lt_ival *m2 = N2(MOD, I0("m7b", -7), I0("m3b", 3), "m2");
    tu_attr_int(&b.g, "fmod", 1);
    lt_ival *us = N2(UNSQUEEZE, three, I1("ax", 0), "us");
    lt_ival *cat = N3(CONCAT, s, wh, N2(MUL, l, I0("one", 1), "lmul"), "cat");
    tu_attr_int(&b.g, "axis", 0);
    lt_ival *sl2 = N3(SLICE, cat, I1("st", -1), I1("en", -100), "rev");
    lt_ival *ins[5] = {cat, I1("st2", -1), I1("en2", -100), I1("axes2", 0), I1("steps2", -2)};
    lt_ival *rev = node(&b, LT_OP_SLICE, 5, ins, "rev2");
    b.m->main->results[0] = rev;
    lt_err err;
    if (lt_infer_module(b.m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_infer_ctx c = {b.m, &err};
    lt_ti_val v[8];
    int n;
    int64_t iv[8];
    assert_true(lt_ti_const_ints(&c, three, iv, 8, &n) && n == 1 && iv[0] == 3);
    assert_true(lt_ti_const_ints(&c, wh, iv, 8, &n) && n == 1 && iv[0] == 3); /* L == L - 0 */
    assert_true(lt_ti_const_ints(&c, us, iv, 8, &n) && n == 1 && iv[0] == 3);
    assert_true(lt_ti_const_ints(&c, m1, iv, 8, &n) && n == 1 && iv[0] == 2);   /* Python's % */
    assert_true(lt_ti_const_ints(&c, m2, iv, 8, &n) && n == 1 && iv[0] == -1);  /* C's fmod */
    /* [L, 6, 3, L]: a symbolic element is no constant */
    assert_false(lt_ti_const_ints(&c, cat, iv, 8, &n));
    assert_true(lt_ti_values(&c, cat, v, 8, &n));
    assert_int_equal(n, 4);
    assert_true(v[0].known && v[0].sym == sl && v[3].known && v[3].sym == sl);
    assert_true(v[1].known && v[1].sym < 0 && v[1].v == 6 && v[2].v == 3);
    /* Slice with start past the end on an empty range, and a negative step */
    assert_true(lt_ti_values(&c, sl2, v, 8, &n));
    assert_int_equal(n, 0);
    assert_true(lt_ti_values(&c, rev, v, 8, &n));
    assert_int_equal(n, 2); /* elements 3 and 1 */
    assert_true(v[0].sym == sl && v[1].v == 6);
    tu_free(&b.g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fold_values),
        cmocka_unit_test(unflatten_keeps_shape),
        cmocka_unit_test(unflatten_grad),
        cmocka_unit_test(transpose_rank_from_perm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
