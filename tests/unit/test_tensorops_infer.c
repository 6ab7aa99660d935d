/* Tensor family, part 4: shape inference. Each case builds one node with
 * typed (possibly symbolic) inputs and constant operands as initializers,
 * runs lt_infer_module and checks the output types. */
#include "test_tensorops_util.h"
#include "ir/infer.h"
#include "ir/shape_tensor_util.h"
#include <stdlib.h>

#define SYM (-100) /* a dim written as the symbol "N" */
#define UNK (-1)

static void set_type(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type *t = &g->m->main->params[i]->type;
    lt_type_unknown(t, dt, rank);
    for (int d = 0; d < rank; d++) {
        if (dims[d] == SYM)
            t->dims[d].sym = lt_module_sym(g->m, "N");
        else
            t->dims[d].v = dims[d];
    }
}

/* Input i becomes an int64 initializer holding v. */
static void set_const(tu_graph *g, int i, int n, const int64_t *v)
{
    lt_ival *iv = g->m->main->params[i];
    int p = lt_module_add_param(g->m, iv->name);
    assert_true(p >= 0);
    lt_tensor *t = &g->m->params[p].data;
    t->dtype = LT_I64;
    t->rank = 1;
    t->dims[0] = n;
    t->numel = n;
    t->data = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (n)
        memcpy(t->data, v, sizeof *v * n);
    g->m->params[p].value = iv;
    iv->param = p;
    lt_type_tensor(&iv->type, LT_I64, 1, (int64_t[]){n});
}

static void infer(tu_graph *g, lt_status want)
{
    lt_err err = {{0}};
    lt_status s = lt_infer_module(g->m, &err);
    if (s != want)
        fail_msg("inference: %s (expected %s): %s", lt_status_str(s), lt_status_str(want), err.msg);
}

static void expect(tu_graph *g, int o, lt_dtype dt, int rank, const int64_t *dims)
{
    const lt_type *t = &g->node->out[o]->type;
    if (t->dtype != dt || t->rank != rank)
        fail_msg("output %d: %s of rank %d, expected %s of rank %d", o, lt_dtype_name(t->dtype), t->rank,
                 lt_dtype_name(dt), rank);
    for (int d = 0; d < rank; d++) {
        lt_dim x = t->dims[d];
        bool ok = dims[d] == SYM   ? x.sym == lt_module_sym(g->m, "N")
                  : dims[d] == UNK ? x.sym < 0 && x.v < 0
                                   : x.sym < 0 && x.v == dims[d];
        if (!ok)
            fail_msg("output %d dim %d: (v %lld, sym %d), expected %lld", o, d, (long long)x.v, x.sym,
                     (long long)dims[d]);
    }
}

static void reshape_rules(void **state)
{
    (void)state;
    const struct {
        int n;
        int64_t shape[4];
        int rank;
        int64_t want[4];
    } cases[] = {
        {2, {0, -1}, 2, {SYM, 12}},      {3, {-1, 3, 4}, 3, {SYM, 3, 4}}, {2, {-1, 4}, 2, {UNK, 4}},
        {3, {0, 2, -1}, 3, {SYM, 2, 6}}, {1, {-1}, 1, {UNK}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tu_graph g = tu_single(LT_OP_RESHAPE, 13, 2, 1);
        set_type(&g, 0, LT_F32, 3, (int64_t[]){SYM, 3, 4});
        set_const(&g, 1, cases[c].n, cases[c].shape);
        infer(&g, LT_OK);
        expect(&g, 0, LT_F32, cases[c].rank, cases[c].want);
        tu_free(&g);
    }
    /* static input: -1 is exact */
    tu_graph g = tu_single(LT_OP_RESHAPE, 13, 2, 1);
    set_type(&g, 0, LT_F16, 3, (int64_t[]){2, 3, 4});
    set_const(&g, 1, 2, (int64_t[]){-1, 8});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F16, 2, (int64_t[]){3, 8});
    tu_free(&g);
    /* unknown shape values, known count: rank only */
    g = tu_single(LT_OP_RESHAPE, 13, 2, 1);
    set_type(&g, 0, LT_F32, 2, (int64_t[]){2, 3});
    set_type(&g, 1, LT_I64, 1, (int64_t[]){3});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 3, (int64_t[]){UNK, UNK, UNK});
    tu_free(&g);
    /* two -1 is always wrong */
    g = tu_single(LT_OP_RESHAPE, 13, 2, 1);
    set_type(&g, 0, LT_F32, 2, (int64_t[]){2, 3});
    set_const(&g, 1, 2, (int64_t[]){-1, -1});
    infer(&g, LT_ERR_INVALID);
    tu_free(&g);
}

static void view_rules(void **state)
{
    (void)state;
    const int64_t x4[4] = {SYM, 3, 4, 5};
    const struct {
        int64_t axis;
        int64_t want[2];
    } fl[] = {{1, {SYM, 60}}, {2, {UNK, 20}}, {0, {1, UNK}}, {-1, {UNK, 5}}, {4, {UNK, 1}}};
    for (size_t c = 0; c < sizeof fl / sizeof *fl; c++) {
        tu_graph g = tu_single(LT_OP_FLATTEN, 13, 1, 1);
        tu_attr_int(&g, "axis", fl[c].axis);
        set_type(&g, 0, LT_F32, 4, x4);
        infer(&g, LT_OK);
        expect(&g, 0, LT_F32, 2, fl[c].want);
        tu_free(&g);
    }
    /* Squeeze: constant axes, no axes on static dims, no axes on a symbol */
    tu_graph g = tu_single(LT_OP_SQUEEZE, 13, 2, 1);
    set_type(&g, 0, LT_I8, 3, (int64_t[]){SYM, 1, 4});
    set_const(&g, 1, 1, (int64_t[]){-2});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I8, 2, (int64_t[]){SYM, 4});
    tu_free(&g);
    g = tu_single(LT_OP_SQUEEZE, 11, 1, 1);
    set_type(&g, 0, LT_I8, 4, (int64_t[]){1, 2, 1, 4});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I8, 2, (int64_t[]){2, 4});
    tu_free(&g);
    g = tu_single(LT_OP_SQUEEZE, 11, 1, 1);
    set_type(&g, 0, LT_I8, 2, (int64_t[]){SYM, 1});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I8, -1, NULL);
    tu_free(&g);
    g = tu_single(LT_OP_SQUEEZE, 11, 1, 1);
    tu_attr_ints(&g, "axes", 1, (int64_t[]){1});
    set_type(&g, 0, LT_I8, 2, (int64_t[]){1, 4});
    infer(&g, LT_ERR_INVALID);
    tu_free(&g);
    /* Unsqueeze */
    g = tu_single(LT_OP_UNSQUEEZE, 13, 2, 1);
    set_type(&g, 0, LT_BOOL, 2, (int64_t[]){SYM, 3});
    set_const(&g, 1, 2, (int64_t[]){-1, 0});
    infer(&g, LT_OK);
    expect(&g, 0, LT_BOOL, 4, (int64_t[]){1, SYM, 3, 1});
    tu_free(&g);
    /* Shape with start, Size, Identity */
    g = tu_single(LT_OP_SHAPE, 15, 1, 1);
    tu_attr_int(&g, "start", 1);
    set_type(&g, 0, LT_F32, 4, x4);
    infer(&g, LT_OK);
    expect(&g, 0, LT_I64, 1, (int64_t[]){3});
    tu_free(&g);
    g = tu_single(LT_OP_SIZE, 13, 1, 1);
    set_type(&g, 0, LT_F32, 4, x4);
    infer(&g, LT_OK);
    expect(&g, 0, LT_I64, 0, NULL);
    tu_free(&g);
    g = tu_single(LT_OP_IDENTITY, 16, 1, 1);
    set_type(&g, 0, LT_F64, 4, x4);
    infer(&g, LT_OK);
    expect(&g, 0, LT_F64, 4, x4);
    tu_free(&g);
}

static void copy_rules(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    tu_attr_ints(&g, "perm", 3, (int64_t[]){1, 0, 2});
    set_type(&g, 0, LT_F32, 3, (int64_t[]){SYM, 3, 4});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 3, (int64_t[]){3, SYM, 4});
    tu_free(&g);
    g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    set_type(&g, 0, LT_F32, 3, (int64_t[]){SYM, 3, 4});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 3, (int64_t[]){4, 3, SYM});
    tu_free(&g);

    g = tu_single(LT_OP_CONCAT, 13, 3, 1);
    tu_attr_int(&g, "axis", -1);
    set_type(&g, 0, LT_F32, 2, (int64_t[]){SYM, 3});
    set_type(&g, 1, LT_F32, 2, (int64_t[]){UNK, 5});
    set_type(&g, 2, LT_F32, 2, (int64_t[]){SYM, 0});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 2, (int64_t[]){SYM, 8});
    tu_free(&g);

    g = tu_single(LT_OP_SPLIT, 13, 2, 2);
    tu_attr_int(&g, "axis", 1);
    set_type(&g, 0, LT_F32, 2, (int64_t[]){SYM, 4});
    set_const(&g, 1, 2, (int64_t[]){1, 3});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 2, (int64_t[]){SYM, 1});
    expect(&g, 1, LT_F32, 2, (int64_t[]){SYM, 3});
    tu_free(&g);
    g = tu_single(LT_OP_SPLIT, 18, 1, 3);
    tu_attr_int(&g, "num_outputs", 3);
    set_type(&g, 0, LT_F32, 1, (int64_t[]){7});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 1, (int64_t[]){3});
    expect(&g, 2, LT_F32, 1, (int64_t[]){1});
    tu_free(&g);

    g = tu_single(LT_OP_SLICE, 13, 5, 1);
    set_type(&g, 0, LT_F32, 3, (int64_t[]){SYM, 10, 6});
    set_const(&g, 1, 2, (int64_t[]){1, -1});
    set_const(&g, 2, 2, (int64_t[]){INT64_MAX, INT64_MIN});
    set_const(&g, 3, 2, (int64_t[]){1, 2});
    set_const(&g, 4, 2, (int64_t[]){2, -1});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 3, (int64_t[]){SYM, 5, 6});
    tu_free(&g);
    /* the whole of a symbolic axis keeps its symbol */
    g = tu_single(LT_OP_SLICE, 13, 3, 1);
    set_type(&g, 0, LT_F32, 2, (int64_t[]){SYM, 10});
    set_const(&g, 1, 2, (int64_t[]){0, 2});
    set_const(&g, 2, 2, (int64_t[]){INT64_MAX, 4});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 2, (int64_t[]){SYM, 2});
    tu_free(&g);

    g = tu_single(LT_OP_EXPAND, 13, 2, 1);
    set_type(&g, 0, LT_I32, 2, (int64_t[]){3, 1});
    set_const(&g, 1, 3, (int64_t[]){2, 1, 4});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I32, 3, (int64_t[]){2, 3, 4});
    tu_free(&g);

    g = tu_single(LT_OP_TILE, 13, 2, 1);
    set_type(&g, 0, LT_I32, 2, (int64_t[]){SYM, 3});
    set_const(&g, 1, 2, (int64_t[]){2, 1});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I32, 2, (int64_t[]){UNK, 3});
    tu_free(&g);

    g = tu_single(LT_OP_PAD, 13, 2, 1);
    set_type(&g, 0, LT_F32, 2, (int64_t[]){SYM, 3});
    set_const(&g, 1, 4, (int64_t[]){0, 1, 0, 2});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 2, (int64_t[]){SYM, 6});
    tu_free(&g);

    g = tu_single(LT_OP_DEPTH_TO_SPACE, 13, 1, 1);
    tu_attr_int(&g, "blocksize", 2);
    set_type(&g, 0, LT_F32, 4, (int64_t[]){SYM, 8, 2, 3});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 4, (int64_t[]){SYM, 2, 4, 6});
    tu_free(&g);
    g = tu_single(LT_OP_SPACE_TO_DEPTH, 13, 1, 1);
    tu_attr_int(&g, "blocksize", 2);
    set_type(&g, 0, LT_F32, 4, (int64_t[]){SYM, 2, 4, 6});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 4, (int64_t[]){SYM, 8, 2, 3});
    tu_free(&g);
}

static void gen_rules(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_CONSTANT_OF_SHAPE, 9, 1, 1);
    set_const(&g, 0, 2, (int64_t[]){2, 3});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F32, 2, (int64_t[]){2, 3});
    tu_free(&g);
    g = tu_single(LT_OP_RANGE, 11, 3, 1);
    set_const(&g, 0, 1, (int64_t[]){0});
    set_const(&g, 1, 1, (int64_t[]){10});
    set_const(&g, 2, 1, (int64_t[]){3});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I64, 1, (int64_t[]){4});
    tu_free(&g);
    g = tu_single(LT_OP_HANN_WINDOW, 17, 1, 1);
    tu_attr_int(&g, "output_datatype", LT_F64);
    set_const(&g, 0, 1, (int64_t[]){10});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F64, 1, (int64_t[]){10});
    tu_free(&g);
    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_ints(&g, "value_ints", 3, (int64_t[]){1, 2, 3});
    infer(&g, LT_OK);
    expect(&g, 0, LT_I64, 1, (int64_t[]){3});
    tu_free(&g);
    g = tu_single(LT_OP_EYE_LIKE, 9, 1, 1);
    tu_attr_int(&g, "dtype", LT_F64);
    set_type(&g, 0, LT_I32, 2, (int64_t[]){SYM, 4});
    infer(&g, LT_OK);
    expect(&g, 0, LT_F64, 2, (int64_t[]){SYM, 4});
    tu_free(&g);
}

/* Constant operands that are not initializers: Constant value_ints and
 * Shape of a static tensor feed a Reshape. */
static void const_sources(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_SHAPE, 15, 1, 1);
    tu_attr_int(&g, "start", 1);
    set_type(&g, 0, LT_F32, 3, (int64_t[]){SYM, 6, 7});
    infer(&g, LT_OK);
    lt_infer_ctx c = {g.m, NULL};
    int64_t v[4];
    int n;
    assert_true(lt_ti_const_ints(&c, g.node->out[0], v, 4, &n));
    assert_int_equal(n, 2);
    assert_int_equal(v[0], 6);
    assert_int_equal(v[1], 7);
    tu_free(&g);
    g = tu_single(LT_OP_SHAPE, 15, 1, 1);
    set_type(&g, 0, LT_F32, 3, (int64_t[]){SYM, 6, 7});
    infer(&g, LT_OK);
    c.m = g.m;
    assert_false(lt_ti_const_ints(&c, g.node->out[0], v, 4, &n)); /* N is not known */
    tu_free(&g);
    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_ints(&g, "value_ints", 2, (int64_t[]){5, -1});
    c.m = g.m;
    assert_true(lt_ti_const_ints(&c, g.node->out[0], v, 4, &n));
    assert_int_equal(n, 2);
    assert_int_equal(v[1], -1);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reshape_rules), cmocka_unit_test(view_rules),    cmocka_unit_test(copy_rules),
        cmocka_unit_test(gen_rules),     cmocka_unit_test(const_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
