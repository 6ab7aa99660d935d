/* Attention's head split and merge folded into the per-head products
 * (ir/fold_heads.c and MatMulTrans's viewA / viewB / viewY). The kernel
 * against sums in double over the viewed storage for every pair of flags,
 * float32 (batch 17, 3 heads: the small per-head kernels) and float64,
 * with and without viewY, and its refusals. The pass, after the other
 * post-AD rewrites, on tests/data/heads_fold.onnx (q, k, v out of one
 * packed projection by Reshape, Transpose, Split, Squeeze, as torch
 * exports it; one product with a broadcast weight must keep its operand)
 * and heads_plain.onnx (the same without it: the gradient's Concat and
 * Transpose of dq, dk, dv become one Concat of merged pieces) and
 * tests/data/attn_fold.onnx (separate projections, the merge
 * Transpose right after P V): no product reads a head-moving Transpose
 * afterwards (but the broadcast one), the float64 program agrees with the
 * unfolded one within 1e-12 and its parameter gradients match central
 * finite differences. */
#include "testutil.h"
#include "ir/acc_to_add.h"
#include "ir/fold_heads.h"
#include "ir/fold_scale.h"
#include "ir/fold_transpose.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the kernel ---- */

/* element (b, h, r, c) of an operand stored as [B, H, R, C] matrices:
 * through view v (6 ints) in storage of per elements a sample, or plain */
static double el(const lt_value *x, const int64_t *v, int64_t per, int64_t H, int64_t R, int64_t C, int64_t b,
                 int64_t h, int64_t r, int64_t c)
{
    if (v)
        return tu_get(x, b * per + v[3] + h * v[4] + r * v[5] + c);
    return tu_get(x, ((b * H + h) * R + r) * C + c);
}

/* the product over [B, H] of op(A) [M, K] and op(B) [K, N]; A viewed in
 * storage [B, Ra, G, H, Ca] at piece ga (or plain), B likewise */
static void view_case(lt_dtype dt, bool ta, bool tb, float alpha, bool va, bool vb, bool vy, int64_t B, int64_t H,
                      int64_t M, int64_t N, int64_t K, uint64_t seed)
{
    const int64_t G = 3, ga = 1, gb = 2;
    int64_t Ra = ta ? K : M, Ca = ta ? M : K, Rb = tb ? N : K, Cb = tb ? K : N;
    int64_t viewa[6] = {H, Ra, Ca, ga * H * Ca, Ca, G * H * Ca}, viewb[6] = {H, Rb, Cb, gb * H * Cb, Cb, G * H * Cb};
    tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
    tu_attr_int(&g, "transA", ta);
    tu_attr_int(&g, "transB", tb);
    tu_attr_float(&g, "alpha", alpha);
    if (va)
        tu_attr_ints(&g, "viewA", 6, viewa);
    if (vb)
        tu_attr_ints(&g, "viewB", 6, viewb);
    if (vy)
        tu_attr_int(&g, "viewY", 1);
    lt_value *a = va ? tu_rand(dt, 3, (int64_t[]){B, Ra, G * H * Ca}, -1, 1, seed)
                     : tu_rand(dt, 4, (int64_t[]){B, H, Ra, Ca}, -1, 1, seed);
    lt_value *bb = vb ? tu_rand(dt, 3, (int64_t[]){B, Rb, G * H * Cb}, -1, 1, seed + 1)
                      : tu_rand(dt, 4, (int64_t[]){B, H, Rb, Cb}, -1, 1, seed + 1);
    lt_value *in[2] = {a, bb}, *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_tensor *y = lt_value_tensor(out[0]);
    assert_int_equal(y->rank, 4);
    int64_t want_dims[4] = {B, vy ? M : H, vy ? H : M, N};
    for (int d = 0; d < 4; d++)
        assert_int_equal(y->dims[d], want_dims[d]);
    double *want = malloc(sizeof *want * (size_t)y->numel);
    assert_non_null(want);
    int64_t pa = Ra * G * H * Ca, pb = Rb * G * H * Cb;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t x = 0; x < K; x++)
                        s += el(a, va ? viewa : NULL, pa, H, Ra, Ca, b, h, ta ? x : i, ta ? i : x) *
                             el(bb, vb ? viewb : NULL, pb, H, Rb, Cb, b, h, tb ? j : x, tb ? x : j);
                    int64_t at = vy ? ((b * M + i) * H + h) * N + j : ((b * H + h) * M + i) * N + j;
                    want[at] = (double)alpha * s;
                }
    tu_assert_close(out[0], want, y->numel, dt == LT_F32 ? 1e-5 : 1e-12, dt == LT_F32 ? 1e-5 : 1e-12, seed);
    free(want);
    lt_value_free(a);
    lt_value_free(bb);
    lt_value_free(out[0]);
    tu_free(&g);
}

static void kernel_views(void **state)
{
    (void)state;
    for (int f = 0; f < 4; f++) {
        bool ta = f & 1, tb = f & 2;
        uint64_t seed = 500 + 10 * (uint64_t)f;
        /* q k^T: both viewed, 7 x 7 of 5 */
        view_case(LT_F32, ta, tb, 0.5f, true, true, false, 17, 3, 7, 7, 5, seed);
        /* p v: v viewed, merged output */
        view_case(LT_F32, ta, tb, 1.0f, false, true, true, 17, 3, 7, 5, 7, seed + 1);
        /* gradients: the first operand viewed, 28 columns */
        view_case(LT_F32, ta, tb, -0.75f, true, false, false, 16, 2, 9, 28, 6, seed + 2);
        view_case(LT_F64, ta, tb, 1.0f, true, true, true, 5, 3, 6, 4, 5, seed + 3);
    }
}

static void kernel_refusals(void **state)
{
    (void)state;
    struct {
        int64_t view[6];
        int nview;
        const char *says;
    } bad[] = {
        {{2, 5, 4, 20, 4, 24}, 6, "leaves a sample"}, /* the third piece of 3 starts at 16 */
        {{2, 5, 4, 0, 4}, 5, "6 integers"},
        {{3, 5, 4, 0, 4, 24}, 6, "do not multiply"}, /* 3 heads against 2 */
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        tu_graph g = tu_single(LT_OP_MAT_MUL_TRANS, 1, 2, 1);
        tu_attr_ints(&g, "viewA", bad[c].nview, bad[c].view);
        lt_value *in[2] = {tu_rand(LT_F32, 3, (int64_t[]){4, 5, 24}, -1, 1, 7),
                           tu_rand(LT_F32, 4, (int64_t[]){4, 2, 4, 3}, -1, 1, 8)};
        char what[32];
        snprintf(what, sizeof what, "case %zu", c);
        tu_assert_refused(&g, in, 2, bad[c].says, what);
    }
}

/* ---- the pass ---- */

static lt_model *program(const char *path, bool fold, int *nfolded)
{
    lt_err err;
    lt_model *m = tu_grad_program(path, true);
    *nfolded = 0;
    if (lt_ir_acc_to_add(m, NULL, &err) != LT_OK || lt_ir_fold_transpose(m, NULL, &err) != LT_OK ||
        lt_ir_fold_scale(m, NULL, &err) != LT_OK || (fold && lt_ir_fold_heads(m, nfolded, &err) != LT_OK))
        fail_msg("%s", err.msg);
    tu_verify(m);
    return m;
}

static bool head_transpose(const lt_node *t)
{
    if (!t || t->op != LT_OP_TRANSPOSE)
        return false;
    int len = 0;
    const int64_t *p = lt_attr_ints(t, "perm", &len);
    return p && ((len == 4 && p[0] == 0 && p[1] == 2 && p[2] == 1 && p[3] == 3) ||
                 (len == 5 && p[0] == 2 && p[1] == 0 && p[2] == 3 && p[3] == 1 && p[4] == 4) ||
                 (len == 5 && p[0] == 1 && p[1] == 3 && p[2] == 0 && p[3] == 2 && p[4] == 4));
}

/* whether v comes from a head-moving Transpose through Split / Squeeze */
static bool from_heads(const lt_ival *v)
{
    for (int hop = 0; v && v->def && hop < 3; hop++) {
        const lt_node *d = v->def;
        if (head_transpose(d))
            return true;
        if (d->op != LT_OP_SQUEEZE && d->op != LT_OP_SPLIT)
            return false;
        v = d->in[0];
    }
    return false;
}

static void pass_case(const char *path, int want_folds, int want_kept, int want_left)
{
    lt_value *x32 = tu_rand(LT_F32, 3, (int64_t[]){16, 5, 8}, -1.5, 1.5, 41);
    lt_value *x = lt_value_to_f64(x32);
    int nf, np;
    lt_model *plain = program(path, false, &np), *folded = program(path, true, &nf);
    if (nf != want_folds)
        fail_msg("%s: %d folds, %d expected", path, nf, want_folds);
    int kept = 0, views = 0, before = 0, left = 0;
    for (int i = 0; i < plain->main->nnodes; i++)
        before += head_transpose(plain->main->nodes[i]);
    for (int i = 0; i < folded->main->nnodes; i++) {
        const lt_node *n = folded->main->nodes[i];
        left += head_transpose(n);
        if (n->op == LT_OP_MAT_MUL || n->op == LT_OP_MAT_MUL_TRANS) {
            for (int j = 0; j < 2; j++)
                kept += from_heads(n->in[j]);
            views += (lt_attr_find(n, "viewA") != NULL) + (lt_attr_find(n, "viewB") != NULL) +
                     (lt_attr_int(n, "viewY", 0) != 0);
        }
    }
    assert_int_equal(kept, want_kept);
    assert_int_equal(left, want_left);
    /* each fold is one view, but a Concat's pieces' viewY */
    assert_true(views <= nf);
    assert_true(before >= 2);
    int n;
    assert_true(tu_check_pass(plain, folded, x, 1e-12, 9, path, &n) >= 20);
    lt_model_free(plain);
    lt_model_free(folded);
    lt_value_free(x);
    lt_value_free(x32);
}

static void pass_on_packed_heads(void **state)
{
    (void)state;
    /* q k^T (2), p v's v, the gradients' products' q, k, v and dO's split
     * (4 + 3 more): 10; q times the broadcast weight, forward and in its
     * gradient, keeps q's Squeeze, and with it the packed Transpose, its
     * gradient's, and the merge's two (the sum before it is no product) */
    pass_case(LT_SOURCE_DIR "/tests/data/heads_fold.onnx", 10, 2, 4);
}

static void pass_on_plain_packed_heads(void **state)
{
    (void)state;
    /* q, k, v and the merged output forward (4), dO's two views, q, k, v
     * in the gradients' products (5), and the gradient's three pieces
     * written merged into one Concat (3): no head transpose left */
    pass_case(LT_SOURCE_DIR "/tests/data/heads_plain.onnx", 12, 0, 0);
}

static void pass_on_separate_heads(void **state)
{
    (void)state;
    /* the forward's q, k^T, v and merged output (4), the gradients' 8 head operands */
    pass_case(LT_SOURCE_DIR "/tests/data/attn_fold.onnx", 12, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernel_views),
        cmocka_unit_test(kernel_refusals),
        cmocka_unit_test(pass_on_packed_heads),
        cmocka_unit_test(pass_on_plain_packed_heads),
        cmocka_unit_test(pass_on_separate_heads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
