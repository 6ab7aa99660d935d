/* Which single nodes the cuda backend takes, decided as at plan time
 * (lt_cuda_kernel_for: the kernel table and each op's fits rule, by the
 * IR's types); runs without a GPU. A node whose kernel could only refuse it
 * at run time, when there is no host to fall back to, must be left to the
 * host here: ConstantOfShape of a value type no device tensor has, Pow of
 * a float32 base and a float64 exponent. Nodes the kernels now compute as
 * the CPU does must still be taken: a bool ConstantOfShape (a mask), opset
 * < 7 broadcasting with an axis, GlobalAveragePool of an (N, C) input.
 * test_cuda_kernels compares their results with the CPU's on a device. */
#include "testutil.h"
#include "cuda/cuda_internal.h"
#include <stdio.h>
#include <string.h>

static bool taken(tu_graph *g)
{
    uint64_t mask;
    return lt_cuda_kernel_for(g->node, &mask) != NULL;
}

static void ty(lt_ival *v, lt_dtype dt, int rank, const int64_t *dims) { lt_type_tensor(&v->type, dt, rank, dims); }

/* ConstantOfShape(shape: int64[3]) with a value of dt (none: the float32
 * default), its output typed as the value. */
static bool constant_taken(bool has_value, lt_dtype dt)
{
    tu_graph g = tu_single(LT_OP_CONSTANT_OF_SHAPE, 20, 1, 1);
    int64_t sd[1] = {3}, od[3] = {2, 3, 4};
    ty(g.node->in[0], LT_I64, 1, sd);
    ty(g.node->out[0], has_value ? dt : LT_F32, 3, od);
    if (has_value)
        tu_attr_tensor1(&g, "value", dt, 1.0);
    bool r = taken(&g);
    tu_free(&g);
    return r;
}

static void test_constant_of_shape(void **state)
{
    (void)state;
    assert_true(constant_taken(false, LT_F32));
    assert_true(constant_taken(true, LT_F32));
    assert_true(constant_taken(true, LT_F64));
    assert_true(constant_taken(true, LT_BOOL)); /* filled on the device, not refused there */
    assert_false(constant_taken(true, LT_I64));
    assert_false(constant_taken(true, LT_F16));
}

static bool pow_taken(lt_dtype bt, lt_dtype et)
{
    tu_graph g = tu_single(LT_OP_POW, 15, 2, 1);
    int64_t d[1] = {3};
    ty(g.node->in[0], bt, 1, d);
    ty(g.node->in[1], et, 1, d);
    ty(g.node->out[0], bt, 1, d);
    bool r = taken(&g);
    tu_free(&g);
    return r;
}

static void test_pow(void **state)
{
    (void)state;
    assert_true(pow_taken(LT_F32, LT_F32));
    assert_true(pow_taken(LT_F64, LT_F64));
    assert_false(pow_taken(LT_F32, LT_F64)); /* the CPU computes it in float64 */
    assert_false(pow_taken(LT_F64, LT_F32));
}

/* Add opset 6 {broadcast: 1, axis: 1} of (2, 3, 4, 5) and (3, 4), and
 * GlobalAveragePool of (2, 3): taken, the kernels follow the CPU now. */
static void test_taken(void **state)
{
    (void)state;
    static const lt_op ops[] = {LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_DIV, LT_OP_POW, LT_OP_GREATER};
    int64_t ad[4] = {2, 3, 4, 5}, bd[2] = {3, 4};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        tu_graph g = tu_single(ops[i], 6, 2, 1);
        tu_attr_int(&g, "broadcast", 1);
        tu_attr_int(&g, "axis", 1);
        ty(g.node->in[0], LT_F32, 4, ad);
        ty(g.node->in[1], LT_F32, 2, bd);
        ty(g.node->out[0], ops[i] == LT_OP_GREATER ? LT_BOOL : LT_F32, 4, ad);
        if (!taken(&g))
            fail_msg("%s opset 6 with broadcast and axis is not taken", lt_op_names[ops[i]]);
        tu_free(&g);
    }
    int64_t xd[2] = {2, 3};
    tu_graph gp = tu_single(LT_OP_GLOBAL_AVERAGE_POOL, 13, 1, 1);
    ty(gp.node->in[0], LT_F32, 2, xd);
    ty(gp.node->out[0], LT_F32, 2, xd);
    assert_true(taken(&gp));
    tu_free(&gp);
}

/* A Conv (or one of its gradients) of a [2,3,H,H] image and a [4,3,k,k]
 * window with auto_pad and strides s, as the plan sees it (H < 0: a
 * symbolic size) */
static bool conv_taken(lt_op op, const char *auto_pad, int64_t s, int64_t H, int64_t k)
{
    bool fwd = op == LT_OP_CONV, data = op == LT_OP_CONV_GRAD_DATA;
    tu_graph g = tu_single(op, 13, fwd ? 2 : 3, 1);
    int64_t xd[4] = {2, 3, H, H}, wd[4] = {4, 3, k, k}, yd[4] = {2, 4, H, H};
    ty(g.node->in[fwd ? 0 : data ? 2 : 1], LT_F32, 4, xd);
    ty(g.node->in[fwd || data ? 1 : 2], LT_F32, 4, wd);
    if (H < 0)
        for (int i = 2; i < 4; i++)
            g.node->in[fwd ? 0 : data ? 2 : 1]->type.dims[i] = (lt_dim){.v = -1, .sym = 0};
    if (!fwd)
        ty(g.node->in[0], LT_F32, 4, yd);
    ty(g.node->out[0], LT_F32, 4, fwd ? yd : data ? xd : wd);
    tu_attr_str(&g, "auto_pad", auto_pad);
    int64_t st[2] = {s, s};
    tu_attr_ints(&g, "strides", 2, st);
    bool r = taken(&g);
    tu_free(&g);
    return r;
}

/* SAME_UPPER / SAME_LOWER pads that come out even on both sides, as cuDNN
 * takes them, are run there (Keras' convolutions); uneven ones, or ones
 * that depend on a size the plan does not know, are left to the host */
static void test_conv_same_pads(void **state)
{
    (void)state;
    const lt_op ops[3] = {LT_OP_CONV, LT_OP_CONV_GRAD_DATA, LT_OP_CONV_GRAD_FILTER};
    for (int o = 0; o < 3; o++) {
        assert_true(conv_taken(ops[o], "SAME_UPPER", 1, 32, 3));   /* pads 1 and 1 */
        assert_true(conv_taken(ops[o], "SAME_LOWER", 1, -1, 5));   /* 2 and 2, whatever the size */
        assert_false(conv_taken(ops[o], "SAME_UPPER", 1, 32, 4));  /* 1 and 2 */
        assert_false(conv_taken(ops[o], "SAME_UPPER", 2, 32, 3));  /* 0 and 1 */
        assert_true(conv_taken(ops[o], "SAME_UPPER", 2, 33, 3));   /* 1 and 1 */
        assert_false(conv_taken(ops[o], "SAME_UPPER", 2, -1, 3));  /* depends on the size */
        assert_true(conv_taken(ops[o], "VALID", 2, 32, 3));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_constant_of_shape), cmocka_unit_test(test_pow),
                                       cmocka_unit_test(test_taken), cmocka_unit_test(test_conv_same_pads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
