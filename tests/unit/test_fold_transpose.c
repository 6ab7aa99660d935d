/* Transposes folded into matrix products (ir/fold_transpose.c and the
 * MatMulTrans kernel). The kernel against sums in double for every pair of
 * flags, batch broadcasting both ways, odd sizes and a batch of 17 (float32
 * and float64), and its refusals. The pass on an attention block
 * (tests/data/attn_fold.onnx: weights used through W^T, k^T, the transpose
 * of a product, a rank-2 Transpose without perm, head permutes that must
 * stay): no product reads a last-two-axes Transpose afterwards, the head
 * permutes are still there, the float64 program agrees with the unfolded
 * one and its parameter gradients match central finite differences. */
#include "testutil.h"
#include "ir/acc_to_add.h"
#include "ir/fold_transpose.h"
#include "ir/fuse_elementwise.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL LT_SOURCE_DIR "/tests/data/attn_fold.onnx"

/* ---- the kernel ---- */

static void kernel_against_sums(void **state)
{
    (void)state;
    for (int f = 0; f < 4; f++) {
        bool ta = f & 1, tb = f & 2;
        uint64_t seed = 100 + 10 * (uint64_t)f;
        /* attention shapes: [17, 3, 7, 5] with [17, 3, 5, 9] (stored per flag) */
        tu_matmul_trans_case(LT_F32, ta, tb, 1, 4, ta ? (int64_t[]){17, 3, 5, 7} : (int64_t[]){17, 3, 7, 5}, 4,
                             tb ? (int64_t[]){17, 3, 9, 5} : (int64_t[]){17, 3, 5, 9}, seed);
        /* one weight matrix for a batch of 17 x 11 rows (the tall product when A is not transposed) */
        tu_matmul_trans_case(LT_F32, ta, tb, 1, 3, ta ? (int64_t[]){17, 6, 11} : (int64_t[]){17, 11, 6}, 2,
                             tb ? (int64_t[]){13, 6} : (int64_t[]){6, 13}, seed + 1);
        /* broadcasting both ways, float64, wide enough for the large kernels */
        tu_matmul_trans_case(LT_F64, ta, tb, 1, 4, ta ? (int64_t[]){2, 1, 40, 33} : (int64_t[]){2, 1, 33, 40}, 3,
                             tb ? (int64_t[]){3, 37, 40} : (int64_t[]){3, 40, 37}, seed + 2);
        tu_matmul_trans_case(LT_F32, ta, tb, 1, 2, ta ? (int64_t[]){70, 65} : (int64_t[]){65, 70}, 2,
                             tb ? (int64_t[]){67, 70} : (int64_t[]){70, 67}, seed + 3);
    }
}

static void kernel_refusals(void **state)
{
    (void)state;
    struct {
        lt_dtype dt;
        int ra;
        int64_t da[2];
        bool ta;
        const char *says;
    } bad[] = {
        {LT_F32, 1, {5, 0}, true, "rank 2 or more"},
        {LT_I32, 2, {5, 5}, true, "not supported"},
        {LT_F32, 2, {4, 6}, false, "MatMulTrans"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
        tu_attr_int(&g, "transA", bad[c].ta);
        lt_value *in[2] = {tu_rand(bad[c].dt, bad[c].ra, bad[c].da, -1, 1, 7),
                           tu_rand(bad[c].dt, 2, (int64_t[]){5, 3}, -1, 1, 8)};
        char what[32];
        snprintf(what, sizeof what, "case %zu", c);
        tu_assert_refused(&g, in, 2, bad[c].says, what);
    }
}

/* ---- the pass ---- */

static bool swaps_last_two(const lt_node *t)
{
    if (!t || t->op != LT_OP_TRANSPOSE)
        return false;
    int len = 0, r = t->in[0]->type.rank;
    const int64_t *p = lt_attr_ints(t, "perm", &len);
    if (!p)
        return r == 2;
    bool keep = len == r && r >= 2 && p[r - 2] == r - 1 && p[r - 1] == r - 2;
    for (int i = 0; keep && i < r - 2; i++)
        keep = p[i] == i;
    return keep;
}

static lt_model *program(bool fold, int *nfolded)
{
    lt_err err;
    lt_model *m = tu_grad_program(MODEL, true);
    *nfolded = 0;
    if (fold && (lt_ir_acc_to_add(m, NULL, &err) != LT_OK || lt_ir_fold_transpose(m, nfolded, &err) != LT_OK ||
                 lt_ir_fuse_elementwise(m, &err) != LT_OK))
        fail_msg("%s", err.msg);
    tu_verify(m);
    return m;
}

static void attention_block(void **state)
{
    (void)state;
    lt_value *x32 = tu_rand(LT_F32, 3, (int64_t[]){16, 5, 8}, -1.5, 1.5, 21);
    lt_value *x = lt_value_to_f64(x32);
    int nf;
    lt_model *plain = program(false, &nf), *folded = program(true, &nf);
    assert_true(nf >= 10);
    int heads = 0, trans = 0;
    for (int i = 0; i < folded->main->nnodes; i++) {
        const lt_node *n = folded->main->nodes[i];
        if (n->op == LT_OP_MAT_MUL || n->op == LT_OP_MAT_MUL_TRANS)
            for (int j = 0; j < 2; j++)
                if (swaps_last_two(n->in[j]->def))
                    fail_msg("%s reads a transpose of its last two axes", n->out[0]->name);
        trans += n->op == LT_OP_MAT_MUL_TRANS;
        int len = 0;
        const int64_t *p = n->op == LT_OP_TRANSPOSE ? lt_attr_ints(n, "perm", &len) : NULL;
        heads += p && len == 4 && p[1] == 2 && p[2] == 1;
    }
    assert_true(trans >= 8);
    assert_true(heads >= 6); /* split and merge, forward and backward */
    int n, checked = tu_check_pass(plain, folded, x, 1e-12, 9, MODEL, &n);
    assert_int_equal(n, 7);
    assert_true(checked >= 40);
    lt_model_free(plain);
    lt_model_free(folded);
    lt_value_free(x);
    lt_value_free(x32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_against_sums),
        cmocka_unit_test(kernel_refusals),
        cmocka_unit_test(attention_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
