/* Gradient rules at the points where a naive rule breaks, against central
 * finite differences in float64 (rule_fd.h), each on inputs written out so
 * that the point is hit exactly:
 * - ReduceProd over a slice holding one zero (that element's gradient is
 *   the product of the others) and two zeros (none), not ye / x = nan;
 * - ReduceL2 over a slice of zeros (F.normalize of a zero row): zero, not
 *   0 / 0;
 * - GlobalMaxPool with two equal maxima: each gets half, as ReduceMax's
 *   ties (and the central difference) do;
 * - Clip with trainable min and max (a learned clipping threshold);
 * - reductions with noop_with_empty_axes and no axes: the op's elementwise
 *   part (|x|, x^2, log x) is differentiated, not passed through;
 * - LayerNormalization whose Mean and InvStdDev outputs the loss reads, and
 *   InvStdDev alone (the mean taken again). */
#include "rule_fd_inputs.h"

#define DATA LT_SOURCE_DIR "/tests/data/"
#define UNPAREN(...) __VA_ARGS__
/* fixed values (repeated over the tensor): V(rank, (dims), count, values...) */
#define V(r, D, n, ...) {.rank = r, .dims = {UNPAREN D}, .nvals = n, .vals = {__VA_ARGS__}}
#define EMPTY_AXES {.rank = 1, .dims = {0}, .dt = LT_I64, .frozen = true}

static void a_axes1(tu_graph *g) { tu_attr_ints(g, "axes", 1, (int64_t[]){1}); }
static void a_noop(tu_graph *g) { tu_attr_int(g, "noop_with_empty_axes", 1); }

static void check(const char *name, lt_op op, int opset, int nin, const tu_fd_in *in, void (*attrs)(tu_graph *),
                  tu_fd_tally *t)
{
    tu_fd_model fm = {.name = name, .op = op, .opset = opset, .nin = nin, .nout = 1, .in = in, .attrs = attrs,
                      .seed = 77};
    tu_fd_check(&fm, &(tu_fd_expect){0}, t);
}

static void reductions_at_zeros(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    /* row 0 one zero, row 1 none */
    const tu_fd_in one[1] = {V(2, (2, 3), 6, 0.5, 0, 1.5, -0.7, 0.9, 1.2)};
    check("ReduceProd.one_zero", LT_OP_REDUCE_PROD, 13, 1, one, a_axes1, &t);
    /* row 0 two zeros, row 1 none */
    const tu_fd_in two[1] = {V(2, (2, 3), 6, 0, 0.4, 0, 0.8, -1.1, 0.6)};
    check("ReduceProd.two_zeros", LT_OP_REDUCE_PROD, 13, 1, two, a_axes1, &t);
    /* the same with the axes as an input (opset 18) */
    const tu_fd_in two18[2] = {V(2, (2, 3), 6, 0, 0.4, 0, 0.8, -1.1, 0.6), I64(1, 1, 1)};
    check("ReduceProd.two_zeros.18", LT_OP_REDUCE_PROD, 18, 2, two18, NULL, &t);
    /* row 0 all zeros */
    const tu_fd_in l2[1] = {V(2, (2, 3), 6, 0, 0, 0, 0.3, -0.8, 0.5)};
    check("ReduceL2.zero_slice", LT_OP_REDUCE_L2, 13, 1, l2, a_axes1, &t);
    printf("reductions at zeros: %d pairs, worst %.3g (%s)\n", t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.failures, 0);
    assert_int_equal(t.pairs, 4);
}

static void global_max_pool_ties(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    /* N=1, C=2, 2x2: each channel's maximum twice */
    const tu_fd_in x[1] = {V(4, (1, 2, 2, 2), 8, 0.5, 0.9, 0.9, -0.2, 0.3, 0.1, 0.7, 0.7)};
    check("GlobalMaxPool.two_ties", LT_OP_GLOBAL_MAX_POOL, 1, 1, x, NULL, &t);
    assert_int_equal(t.failures, 0);
    assert_int_equal(t.pairs, 1);
}

static void clip_trainable_bounds(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    const tu_fd_in in[3] = {F(3, 2, 4, 5), V(0, (0), 1, -0.3), V(0, (0), 1, 0.4)};
    check("Clip.bounds", LT_OP_CLIP, 13, 3, in, NULL, &t);
    const tu_fd_in lo_only[2] = {F(3, 2, 4, 5), V(0, (0), 1, 0.1)};
    check("Clip.min_only", LT_OP_CLIP, 13, 2, lo_only, NULL, &t);
    assert_int_equal(t.failures, 0);
    assert_int_equal(t.pairs, 5);
}

static void reductions_noop(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    const tu_fd_in kink[2] = {KINK(3, 2, 3, 4), EMPTY_AXES}, pos[2] = {POS(3, 2, 3, 4), EMPTY_AXES},
                   any[2] = {F(3, 2, 3, 4), EMPTY_AXES};
    check("ReduceL1.noop", LT_OP_REDUCE_L1, 18, 2, kink, a_noop, &t);
    check("ReduceL2.noop", LT_OP_REDUCE_L2, 18, 2, kink, a_noop, &t);
    check("ReduceSumSquare.noop", LT_OP_REDUCE_SUM_SQUARE, 18, 2, any, a_noop, &t);
    check("ReduceLogSum.noop", LT_OP_REDUCE_LOG_SUM, 18, 2, pos, a_noop, &t);
    check("ReduceLogSumExp.noop", LT_OP_REDUCE_LOG_SUM_EXP, 18, 2, any, a_noop, &t);
    check("ReduceProd.noop", LT_OP_REDUCE_PROD, 18, 2, any, a_noop, &t);
    check("ReduceMax.noop", LT_OP_REDUCE_MAX, 18, 2, any, a_noop, &t);
    assert_int_equal(t.failures, 0);
    assert_int_equal(t.pairs, 7);
}

static const int64_t d34[2] = {3, 4};
static void layer_norm_statistics(void **state)
{
    (void)state;
    tu_grad_check_model(DATA "ad_ln_stats.onnx", 2, d34, -1, 1, 31, "W");
    tu_grad_check_model(DATA "ad_ln_inv_only.onnx", 2, d34, -1, 1, 32, "W");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reductions_at_zeros), cmocka_unit_test(global_max_pool_ties),
        cmocka_unit_test(clip_trainable_bounds), cmocka_unit_test(reductions_noop),
        cmocka_unit_test(layer_norm_statistics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
