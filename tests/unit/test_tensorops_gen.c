/* Tensor family, part 3: the generators (Constant in every attribute form,
 * ConstantOfShape, Range, EyeLike, Hann/Hamming/Blackman windows) against
 * hand-derived values. */
#include "test_tensorops_util.h"
#include <math.h>

/* Appends a tensor attribute (the test helpers have none for tensors). */
static void attr_tensor(tu_graph *g, const char *name, lt_dtype dt, int rank, const int64_t *dims, const double *v)
{
    lt_node *n = g->node;
    lt_attr *a = lt_ir_alloc(g->m, sizeof *a * (n->nattr + 1));
    if (n->nattr)
        memcpy(a, n->attrs, sizeof *a * n->nattr);
    n->attrs = a;
    lt_attr *x = &a[n->nattr++];
    x->name = lt_ir_strdup(g->m, name);
    x->kind = LT_ATTR_TENSOR;
    x->t = lt_ir_alloc(g->m, sizeof *x->t);
    x->t->dtype = dt;
    x->t->rank = rank;
    memcpy(x->t->dims, dims, sizeof *dims * rank);
    x->t->numel = lt_shape_numel(rank, dims);
    x->t->data = lt_ir_alloc(g->m, lt_dtype_size(dt) * (size_t)(x->t->numel ? x->t->numel : 1));
    for (int64_t i = 0; i < x->t->numel; i++)
        lt_tensor_set_f64(x->t, i, v[i]);
}

static void constant_forms(void **state)
{
    (void)state;
    lt_value *out[1];
    tu_graph g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    attr_tensor(&g, "value", LT_I32, 2, (int64_t[]){2, 2}, (double[]){1, -2, 3, -4});
    to_run(&g, NULL, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_I32);
    to_dims(out[0], 2, (int64_t[]){2, 2});
    tu_assert_close(out[0], (double[]){1, -2, 3, -4}, 4, 0, 0, 0);
    lt_value_free(out[0]);
    tu_free(&g);

    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_floats(&g, "value_floats", 3, (float[]){0.5f, -1.5f, 2.25f});
    to_run(&g, NULL, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_F32);
    tu_assert_close(out[0], (double[]){0.5, -1.5, 2.25}, 3, 0, 0, 0);
    lt_value_free(out[0]);
    tu_free(&g);

    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_ints(&g, "value_ints", 2, (int64_t[]){7, -(1ll << 40)});
    to_run(&g, NULL, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_I64);
    assert_int_equal(((int64_t *)out[0]->t.data)[1], -(1ll << 40));
    lt_value_free(out[0]);
    tu_free(&g);

    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_int(&g, "value_int", 42);
    to_run(&g, NULL, out, LT_OK);
    assert_int_equal(out[0]->t.rank, 0);
    assert_int_equal(*(int64_t *)out[0]->t.data, 42);
    lt_value_free(out[0]);
    tu_free(&g);

    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_float(&g, "value_float", 1.25f);
    to_run(&g, NULL, out, LT_OK);
    assert_true(*(float *)out[0]->t.data == 1.25f);
    lt_value_free(out[0]);
    tu_free(&g);

    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    tu_attr_str(&g, "value_string", "lantern");
    to_run(&g, NULL, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_STRING);
    assert_string_equal(*(char **)out[0]->t.data, "lantern");
    assert_ptr_equal(*(char **)out[0]->t.data, lt_str_intern("lantern", 7));
    lt_value_free(out[0]);
    tu_free(&g);

    g = tu_single(LT_OP_CONSTANT, 13, 0, 1);
    to_run(&g, NULL, out, LT_ERR_INVALID);
    tu_free(&g);
}

static void constant_of_shape(void **state)
{
    (void)state;
    lt_value *out[1], *s = to_ints(3, (int64_t[]){2, 3, 4});
    tu_graph g = tu_single(LT_OP_CONSTANT_OF_SHAPE, 9, 1, 1);
    to_run(&g, (lt_value *[]){s}, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_F32);
    to_dims(out[0], 3, (int64_t[]){2, 3, 4});
    for (int i = 0; i < 24; i++)
        assert_true(tu_get(out[0], i) == 0.0);
    lt_value_free(out[0]);
    tu_free(&g);
    g = tu_single(LT_OP_CONSTANT_OF_SHAPE, 9, 1, 1);
    attr_tensor(&g, "value", LT_I32, 1, (int64_t[]){1}, (double[]){-7});
    to_run(&g, (lt_value *[]){s}, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_I32);
    for (int i = 0; i < 24; i++)
        assert_true(tu_get(out[0], i) == -7.0);
    lt_value_free(out[0]);
    lt_value_free(s);
    /* an empty shape makes a scalar; a 0 dim an empty tensor */
    s = to_ints(0, NULL);
    to_run(&g, (lt_value *[]){s}, out, LT_OK);
    assert_int_equal(out[0]->t.rank, 0);
    assert_true(tu_get(out[0], 0) == -7.0);
    lt_value_free(out[0]);
    lt_value_free(s);
    s = to_ints(2, (int64_t[]){0, 3});
    to_run(&g, (lt_value *[]){s}, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){0, 3});
    lt_value_free(out[0]);
    lt_value_free(s);
    s = to_ints(1, (int64_t[]){-1});
    to_run(&g, (lt_value *[]){s}, out, LT_ERR_INVALID);
    lt_value_free(s);
    tu_free(&g);
}

static void range_types(void **state)
{
    (void)state;
    struct {
        lt_dtype dt;
        double s, l, d;
        int n;
        double want[5];
    } cases[] = {
        {LT_F32, 1, 5, 2, 2, {1, 3}},
        {LT_I32, 10, 6, -3, 2, {10, 7}},
        {LT_F64, 0, 1, 0.3, 4, {0, 0.3, 0.6, 0.9}},
        {LT_I64, -2, 3, 1, 5, {-2, -1, 0, 1, 2}},
        {LT_I16, 5, 5, 1, 0, {0}},
        {LT_I64, 0, 10, -1, 0, {0}},
        {LT_F32, 2, -0.5, -1, 3, {2, 1, 0}},
    };
    lt_value *out[1];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lt_value *in[3] = {tu_from(cases[c].dt, 0, NULL, &cases[c].s), tu_from(cases[c].dt, 0, NULL, &cases[c].l),
                           tu_from(cases[c].dt, 0, NULL, &cases[c].d)};
        tu_graph g = tu_single(LT_OP_RANGE, 11, 3, 1);
        to_run(&g, in, out, LT_OK);
        assert_int_equal(out[0]->t.dtype, cases[c].dt);
        to_dims(out[0], 1, (int64_t[]){cases[c].n});
        tu_assert_close(out[0], cases[c].want, cases[c].n, 1e-6, 1e-6, c);
        lt_value_free(out[0]);
        tu_free(&g);
        for (int i = 0; i < 3; i++)
            lt_value_free(in[i]);
    }
    double z = 0, one = 1;
    lt_value *in[3] = {tu_from(LT_I32, 0, NULL, &z), tu_from(LT_I32, 0, NULL, &one), tu_from(LT_I32, 0, NULL, &z)};
    tu_graph g = tu_single(LT_OP_RANGE, 11, 3, 1);
    to_run(&g, in, out, LT_ERR_INVALID); /* delta 0 */
    tu_free(&g);
    for (int i = 0; i < 3; i++)
        lt_value_free(in[i]);
}

static void eye_like(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_I32, 2, (int64_t[]){3, 4}, -5, 5, 90), *out[1];
    const int64_t ks[3] = {0, 1, -2};
    for (int c = 0; c < 3; c++) {
        tu_graph g = tu_single(LT_OP_EYE_LIKE, 9, 1, 1);
        tu_attr_int(&g, "k", ks[c]);
        if (c == 1)
            tu_attr_int(&g, "dtype", LT_F64);
        to_run(&g, (lt_value *[]){x}, out, LT_OK);
        assert_int_equal(out[0]->t.dtype, c == 1 ? LT_F64 : LT_I32);
        to_dims(out[0], 2, (int64_t[]){3, 4});
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                assert_true(tu_get(out[0], i * 4 + j) == (j - i == ks[c] ? 1.0 : 0.0));
        lt_value_free(out[0]);
        tu_free(&g);
    }
    lt_value_free(x);
}

static void windows(void **state)
{
    (void)state;
    lt_value *out[1];
    /* periodic Hann of 4: 0, .5, 1, .5; symmetric Hann of 5: 0, .5, 1, .5, 0 */
    lt_value *four = to_scalar_i64(4), *five = to_scalar_i64(5);
    tu_graph g = tu_single(LT_OP_HANN_WINDOW, 17, 1, 1);
    to_run(&g, (lt_value *[]){four}, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_F32);
    tu_assert_close(out[0], (double[]){0, 0.5, 1, 0.5}, 4, 1e-6, 1e-6, 0);
    lt_value_free(out[0]);
    tu_free(&g);
    g = tu_single(LT_OP_HANN_WINDOW, 17, 1, 1);
    tu_attr_int(&g, "periodic", 0);
    tu_attr_int(&g, "output_datatype", LT_F64);
    to_run(&g, (lt_value *[]){five}, out, LT_OK);
    assert_int_equal(out[0]->t.dtype, LT_F64);
    tu_assert_close(out[0], (double[]){0, 0.5, 1, 0.5, 0}, 5, 1e-12, 1e-12, 0);
    lt_value_free(out[0]);
    tu_free(&g);
    /* Hamming: 25/46 - 21/46 cos; at n = 0 that is 4/46, at N/2 it is 1 */
    g = tu_single(LT_OP_HAMMING_WINDOW, 17, 1, 1);
    to_run(&g, (lt_value *[]){four}, out, LT_OK);
    tu_assert_close(out[0], (double[]){4.0 / 46, 25.0 / 46, 1, 25.0 / 46}, 4, 1e-6, 1e-6, 0);
    lt_value_free(out[0]);
    tu_free(&g);
    /* Blackman: .42 - .5 cos + .08 cos(2x); periodic 4: 0, .34, 1, .34 */
    g = tu_single(LT_OP_BLACKMAN_WINDOW, 17, 1, 1);
    to_run(&g, (lt_value *[]){four}, out, LT_OK);
    tu_assert_close(out[0], (double[]){0, 0.34, 1, 0.34}, 4, 1e-6, 1e-6, 0);
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(four);
    lt_value_free(five);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constant_forms), cmocka_unit_test(constant_of_shape), cmocka_unit_test(range_types),
        cmocka_unit_test(eye_like),       cmocka_unit_test(windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
