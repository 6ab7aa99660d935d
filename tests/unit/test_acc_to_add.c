/* Accumulation cells turned into Add chains (ir/acc_to_add.c): on models
 * whose gradient sums several contributions per value, the rewritten
 * float64 program's parameter gradients match central finite differences
 * of its own loss, and equal the cell program's; the cells qualifying go
 * (on the chain model, all but the loss seed's cell, whose contribution
 * has no static shape), the verifier accepts the result, and elementwise fusion
 * still runs on it. Cells the rewrite must leave alone (passed into the
 * AD's loop functions) stay cells, and those programs still agree with the
 * cell program. */
#include "testutil.h"
#include "ir/acc_to_add.h"
#include "ir/fuse_elementwise.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

static int count_ops(const lt_block *b, lt_op op)
{
    int c = 0;
    for (int i = 0; i < b->nnodes; i++) {
        c += b->nodes[i]->op == op;
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            c += count_ops(b->nodes[i]->regions[r], op);
    }
    return c;
}

static int count_module(const lt_model *m, lt_op op)
{
    int c = count_ops(m->main, op);
    for (int i = 0; i < m->nfuncs; i++)
        c += count_ops(m->funcs[i]->body, op);
    return c;
}

/* the float64 gradient program of file, cells folded or not (and fused) */
static lt_model *program(const char *file, bool fold, bool fuse, int *nfolded)
{
    lt_err err;
    lt_model *m = tu_grad_program(file, true);
    *nfolded = 0;
    if (fold && lt_ir_acc_to_add(m, nfolded, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (fuse && lt_ir_fuse_elementwise(m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    tu_verify(m);
    return m;
}

static void check(const char *file, int rank, const int64_t *dims, uint64_t seed, bool expect_all)
{
    lt_value *x32 = tu_rand(LT_F32, rank, dims, -1.5, 1.5, seed);
    lt_value *x = lt_value_to_f64(x32);
    int nf_cells, nf;
    lt_model *cells = program(file, false, false, &nf_cells);
    lt_model *sums = program(file, true, false, &nf);
    int before = count_module(cells, LT_OP_ACC_ZEROS_LIKE), after = count_module(sums, LT_OP_ACC_ZEROS_LIKE);
    assert_true(before > 0);
    assert_int_equal(after, before - nf);
    if (expect_all) {
        assert_true(nf > 0);
        /* every cell goes; the loss seed's, whose one contribution (an
         * Expand to a shape computed at run time) has no static size, is
         * read through a Reshape to the shape of the value it was made like */
        assert_int_equal(count_ops(sums->main, LT_OP_ACC_ZEROS_LIKE), 0);
        assert_int_equal(count_ops(sums->main, LT_OP_ACC_ADD), 0);
        assert_true(count_ops(sums->main, LT_OP_ADD) > count_ops(cells->main, LT_OP_ADD));
        assert_true(count_ops(sums->main, LT_OP_RESHAPE) > count_ops(cells->main, LT_OP_RESHAPE));
        assert_true(count_ops(sums->main, LT_OP_SHAPE) > count_ops(cells->main, LT_OP_SHAPE));
    } else {
        assert_int_equal(nf, 0);
    }
    /* the same additions in the same order: equal; gradients against
     * central differences of the folded program's loss */
    int n;
    assert_true(tu_check_pass(cells, sums, x, 0, 7, file, &n) > 0);
    lt_model_free(cells);
    lt_model_free(sums);
    /* the fused float32-shaped pipeline accepts the folded program too */
    lt_model *fused = program(file, true, true, &nf);
    lt_model_free(fused);
    lt_value_free(x);
    lt_value_free(x32);
}

static void chain_model_cells_fold(void **state)
{
    (void)state;
    check(DATA "fuse_chain.onnx", 3, (int64_t[]){4, 5, 24}, 3, true);
}

/* BERT as torch's TorchScript exporter writes it (models/zoo): its head
 * split reshapes to sizes computed from Shape, so the types leave the batch
 * sizes of its token-type embedding open; every cell with a contribution
 * becomes a sum (the second output's gets none under a loss on the first),
 * those of unknown size checked by a Reshape, and elementwise fusion runs
 * on the result. */
static void unknown_sizes_fold(void **state)
{
    (void)state;
    const char *file = LT_SOURCE_DIR "/models/zoo/bert_ts/model.onnx";
    int nf_cells, nf;
    lt_model *cells = program(file, false, false, &nf_cells);
    lt_model *sums = program(file, true, false, &nf);
    int before = count_module(cells, LT_OP_ACC_ZEROS_LIKE);
    int guards = count_module(sums, LT_OP_RESHAPE) - count_module(cells, LT_OP_RESHAPE);
    printf("bert_ts: %d cells, %d folded, %d of them checked by a Reshape\n", before, nf, guards);
    assert_true(before > 0);
    assert_int_equal(nf, before - 1);
    assert_true(guards > 0);
    lt_model *fused = program(file, true, true, &nf);
    lt_model_free(fused);
    lt_model_free(cells);
    lt_model_free(sums);
}

static void loop_cells_stay(void **state)
{
    (void)state;
    check(DATA "ad_loop_both.onnx", 2, (int64_t[]){2, 4}, 5, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_model_cells_fold),
        cmocka_unit_test(unknown_sizes_fold),
        cmocka_unit_test(loop_cells_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
