/* Scalar scales folded into matrix products (ir/fold_scale.c and the
 * MatMulTrans kernel's alpha). The kernel against sums in double for every
 * pair of flags on each of its paths: attention's small per-head products
 * (batch 17 x 3, 8 columns or fewer, up to 32), one weight for a tall
 * batch, float64 with broadcasting, and wide products. The pass on
 * tests/data/scale_fold.onnx after the AD: exactly the scalings it lists
 * fold (a Mul and a Div after a product, their gradients' before two
 * products, a Mul read by one product), the others stay; the program
 * computes what the unfolded one does (float64 within 1e-12, float32
 * within 1e-5) and its parameter gradients match central finite
 * differences. */
#include "testutil.h"
#include "ir/acc_to_add.h"
#include "ir/fold_scale.h"
#include "ir/fold_transpose.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODEL LT_SOURCE_DIR "/tests/data/scale_fold.onnx"

/* ---- the kernel ---- */

static void kernel_alpha(void **state)
{
    (void)state;
    for (int f = 0; f < 4; f++) {
        bool ta = f & 1, tb = f & 2;
        uint64_t seed = 300 + 10 * (uint64_t)f;
        /* per-head products: 8 columns (k in pairs when A is not transposed), 28 columns */
        tu_matmul_trans_case(LT_F32, ta, tb, 0.35355339f, 4, ta ? (int64_t[]){17, 3, 9, 28} : (int64_t[]){17, 3, 28, 9},
                             4, tb ? (int64_t[]){17, 3, 8, 9} : (int64_t[]){17, 3, 9, 8}, seed);
        tu_matmul_trans_case(LT_F32, ta, tb, -1.5f, 4, ta ? (int64_t[]){17, 3, 7, 28} : (int64_t[]){17, 3, 28, 7}, 4,
                             tb ? (int64_t[]){17, 3, 28, 7} : (int64_t[]){17, 3, 7, 28}, seed + 1);
        /* one weight for a batch of 17 x 11 rows */
        tu_matmul_trans_case(LT_F32, ta, tb, 0.5f, 3, ta ? (int64_t[]){17, 6, 11} : (int64_t[]){17, 11, 6}, 2,
                             tb ? (int64_t[]){13, 6} : (int64_t[]){6, 13}, seed + 2);
        /* float64, broadcasting both ways */
        tu_matmul_trans_case(LT_F64, ta, tb, 0.75f, 4, ta ? (int64_t[]){2, 1, 40, 33} : (int64_t[]){2, 1, 33, 40}, 3,
                             tb ? (int64_t[]){3, 37, 40} : (int64_t[]){3, 40, 37}, seed + 3);
        /* wide: the packed kernels */
        tu_matmul_trans_case(LT_F32, ta, tb, 0.125f, 2, ta ? (int64_t[]){70, 65} : (int64_t[]){65, 70}, 2,
                             tb ? (int64_t[]){97, 70} : (int64_t[]){70, 97}, seed + 4);
    }
}

static void kernel_alpha_refused_for_integers(void **state)
{
    (void)state;
    tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
    tu_attr_float(&g, "alpha", 2.0f);
    lt_value *in[2] = {tu_rand(LT_I32, 2, (int64_t[]){4, 5}, -3, 3, 5),
                       tu_rand(LT_I32, 2, (int64_t[]){5, 3}, -3, 3, 6)};
    tu_assert_refused(&g, in, 2, "alpha", "integer MatMulTrans with alpha");
}

/* ---- the pass ---- */

static lt_model *program(bool f64, bool fold, int *nfolded)
{
    lt_err err;
    lt_model *m = tu_grad_program(MODEL, f64);
    *nfolded = 0;
    if (lt_ir_acc_to_add(m, NULL, &err) != LT_OK || lt_ir_fold_transpose(m, NULL, &err) != LT_OK ||
        (fold && lt_ir_fold_scale(m, nfolded, &err) != LT_OK))
        fail_msg("%s", err.msg);
    tu_verify(m);
    return m;
}

/* scalings by a one-element constant or parameter left in m */
static int scalings(const lt_model *m, int *alphas)
{
    int n = 0;
    *alphas = 0;
    for (int i = 0; i < m->main->nnodes; i++) {
        const lt_node *k = m->main->nodes[i];
        if (k->op == LT_OP_MAT_MUL_TRANS && lt_attr_find(k, "alpha") && lt_attr_float(k, "alpha", 1) != 1)
            ++*alphas;
        if ((k->op != LT_OP_MUL && k->op != LT_OP_DIV) || k->nin != 2)
            continue;
        for (int j = 0; j < 2; j++) {
            const lt_ival *c = k->in[j];
            bool param = c->param >= 0 && c->param < m->nparams;
            bool konst = c->def && c->def->op == LT_OP_CONSTANT;
            if ((param || konst) && c->type.rank >= 0 && c->type.rank <= 4) {
                int64_t e = 1;
                for (int d = 0; d < c->type.rank; d++)
                    e *= c->type.dims[d].sym < 0 ? c->type.dims[d].v : 2;
                n += e == 1;
                break;
            }
        }
    }
    return n;
}

static void pass_on_attention(void **state)
{
    (void)state;
    lt_value *x32 = tu_rand(LT_F32, 3, (int64_t[]){16, 5, 8}, -1.5, 1.5, 31);
    lt_value *x = lt_value_to_f64(x32);
    for (int f64 = 1; f64 >= 0; f64--) {
        int nf, np, alphas_plain, alphas;
        lt_model *plain = program(f64, false, &np), *folded = program(f64, true, &nf);
        int before = scalings(plain, &alphas_plain), after = scalings(folded, &alphas);
        /* Mul(s, c1), Div(o, 2), their gradients' Mul and Div, Mul(x, 0.75) */
        assert_int_equal(nf, 5);
        assert_int_equal(before - after, 5);
        assert_int_equal(alphas_plain, 0);
        assert_int_equal(alphas, 7); /* two forward, two pairs of gradient products, x Wu */
        /* what stays: k v^T's Mul (read twice), its gradient's (read by a sum), the trainable scale's two */
        assert_true(after >= 3);
        const lt_value *in = f64 ? x : x32;
        /* in float64, the folded program's parameter gradients against central differences too */
        int n, checked = tu_check_pass(plain, folded, in, f64 ? 1e-12 : 1e-5, f64 ? 9 : 0, MODEL, &n);
        assert_int_equal(n, 6);
        if (f64)
            assert_true(checked >= 30);
        lt_model_free(plain);
        lt_model_free(folded);
    }
    lt_value_free(x);
    lt_value_free(x32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_alpha),
        cmocka_unit_test(kernel_alpha_refused_for_integers),
        cmocka_unit_test(pass_on_attention),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
