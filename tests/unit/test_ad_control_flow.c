/* The AD through control flow, against central finite differences of the
 * same model in float64: If (each branch, outer captures, an initializer in
 * a branch), Loop (trip count, condition, both, carried values, scan
 * outputs, captured parameters, Loop in Loop, If in Loop, scan outputs made
 * by an If or after an inner Loop in the body, whose adjoints come back out
 * of the body's continuations), Scan (forward,
 * reverse, non-zero axes), sequences (SplitToSequence read by SequenceAt in
 * its three forms; a list a Loop appends to, stacked after it or
 * concatenated on an axis, from a loop without a trip count; a sequence
 * the AD cannot follow is refused), and FlexAttention's score_mod and
 * prob_mod graphs (their own initializers, an outer capture, GQA;
 * tests/data/make_flex_models.py): the AD writes FlexAttention out as
 * ordinary ops while the finite differences run its kernel, so the two must
 * agree on the values too. */
#include "testutil.h"
#include <stdlib.h>
#include <string.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

static const int64_t d24[2] = {2, 4}, d34[2] = {3, 4}, d324[3] = {3, 2, 4}, d234[3] = {2, 3, 4};

static void if_then_branch(void **s) { (void)s; tu_grad_check_model(DATA "ad_if.onnx", 2, d34, -0.8, 1.4, 1, "A"); }
static void if_else_branch(void **s) { (void)s; tu_grad_check_model(DATA "ad_if.onnx", 2, d34, -1.0, -0.1, 2, "B"); }
static void loop_trip_count(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_trip.onnx", 2, d24, -1, 1, 3, "V"); }
static void loop_condition(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_cond.onnx", 2, d24, -1, 1, 4, "W"); }
static void loop_both(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_both.onnx", 2, d24, -1, 1, 5, "h0"); }
static void loop_in_loop(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_nested.onnx", 2, d24, -1, 1, 6, "U"); }
static void if_in_loop(void **s) { (void)s; tu_grad_check_model(DATA "ad_if_in_loop.onnx", 2, d24, -1, 1, 7, "W1"); }
static void scan_forward(void **s) { (void)s; tu_grad_check_model(DATA "ad_scan_fwd.onnx", 3, d324, -1, 1, 8, "W"); }
static void scan_reverse_axis1(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_scan_rev_axis1.onnx", 3, d234, -1, 1, 9, "s0");
}

static const int64_t d37[2] = {3, 7};
static void seq_split_at(void **s) { (void)s; tu_grad_check_model(DATA "ad_seq_split.onnx", 2, d37, -1, 1, 11, "P"); }
static void seq_unbind_at(void **s) { (void)s; tu_grad_check_model(DATA "ad_seq_unbind.onnx", 2, d37, -1, 1, 12, "P"); }
static const int64_t d423[3] = {4, 2, 3};
static void unbind_loop(void **s) { (void)s; tu_grad_check_model(DATA "ad_unbind_loop.onnx", 3, d423, -1, 1, 13, "W"); }
static void unbind_loop_in3(void **s) { (void)s; tu_grad_check_model(DATA "ad_unbind_loop_in3.onnx", 3, d423, -1, 1, 14, "W"); }
static void scan_declared_rank(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_scan_declared_rank.onnx", 3, d423, -1, 1, 20, "W");
    tu_grad_check_model(DATA "ad_scan_declared_rank.onnx", 3, d423, -1, 1, 21, "h0");
}
/* a Loop's and a Scan's body states declared with an element type but no
 * shape: their rank comes from the start (was "MatMul with an operand of
 * unknown rank cannot be differentiated") */
static void undeclared_states(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_loop_undeclared.onnx", 3, d423, -1, 1, 22, "U");
    tu_grad_check_model(DATA "ad_loop_undeclared.onnx", 3, d423, -1, 1, 23, "h0");
    tu_grad_check_model(DATA "ad_scan_undeclared.onnx", 3, d423, -1, 1, 24, "W");
    tu_grad_check_model(DATA "ad_scan_undeclared.onnx", 3, d423, -1, 1, 25, "O");
}
/* The gradient of loss kind (seeded with ones where seeds) of W at x. */
static lt_value *stack_grad(lt_value *x, bool seeds)
{
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(lt_model_load(DATA "ad_loop_stack_declared.onnx", &m, &err), LT_OK);
    const char *outs[1] = {"y"};
    lt_grad_opts o = {seeds ? LT_LOSS_SEEDS : LT_LOSS_SUM, seeds ? 1 : 0, seeds ? outs : NULL, seeds ? 1 : 0};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const int64_t *xd = lt_value_tensor(x)->dims;
    lt_value *ones = tu_from(LT_F32, 3, xd, (double[24]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                         1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
    const char *names[2] = {"x", "y_seed"};
    lt_value *in[2] = {x, ones}, *outv[16] = {0};
    int nout = lt_model_num_outputs(m);
    assert_true(nout <= 16);
    lt_session *sess = NULL;
    if (lt_session_new(m, &sess, &err) != LT_OK || lt_session_run(sess, seeds ? 2 : 1, names, in, outv, &err) != LT_OK)
        fail_msg("%s", err.msg); /* was: input 'y_seed' expects float32[a,b,c,3], got float32[2,4,3] */
    lt_value *g = NULL;
    for (int i = 0; i < nout; i++) {
        if (!strcmp(lt_model_output_name(m, i), "W_grad"))
            g = outv[i];
        else
            lt_value_free(outv[i]);
    }
    assert_non_null(g);
    lt_value_free(ones);
    lt_session_free(sess);
    lt_model_free(m);
    return g;
}

/* torch.stack of a TorchScript loop's states (SequenceInsert in the loop,
 * ConcatFromSequence after it), the output declared one rank too many: the
 * stack's rank comes from the states, so a seed of the true shape [2,4,3]
 * fits; against finite differences, and a seed of ones gives the sum's
 * gradient */
static void stack_declared_rank(void **s)
{
    (void)s;
    static const int64_t d243[3] = {2, 4, 3};
    tu_grad_check_model(DATA "ad_loop_stack_declared.onnx", 3, d243, -1, 1, 26, "U");
    lt_value *x = tu_rand(LT_F32, 3, d243, -1, 1, 27);
    lt_value *a = stack_grad(x, true), *b = stack_grad(x, false);
    assert_true(tu_max_rel_err(lt_value_tensor(a), lt_value_tensor(b)) < 1e-6);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(x);
}

static void loop_list_stacked(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_loop_list.onnx", 2, d24, -1, 1, 12, "V");
}

static void if_in_loop_scan(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_if_in_loop_scan.onnx", 2, d24, -1, 1, 15, "W1");
    tu_grad_check_model(DATA "ad_if_in_loop_scan.onnx", 2, d24, -1, 1, 16, "V");
}

static void loop_in_loop_scan(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_loop_in_loop_scan.onnx", 2, d24, -1, 1, 17, "U");
    tu_grad_check_model(DATA "ad_loop_in_loop_scan.onnx", 2, d24, -1, 1, 18, "V");
}

static void loop_list_concatenated(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_loop_concat.onnx", 2, d24, -1, 1, 19, "P");
}

/* a gradient that would have to pass through SequenceConstruct and
 * ConcatFromSequence: one clear refusal naming the node */
static void seq_refused(void **state)
{
    (void)state;
    lt_model *m;
    lt_err err;
    assert_int_equal(lt_model_load(DATA "ad_seq_refused.onnx", &m, &err), LT_OK);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    assert_int_not_equal(lt_model_grad(m, &o, &err), LT_OK);
    assert_non_null(strstr(err.msg, "SequenceConstruct"));
    assert_non_null(strstr(err.msg, "only from SplitToSequence to SequenceAt"));
    lt_model_free(m);
}

/* the shipped Loop-written RNN: parameters captured from outside the loop
 * (W, b) and one inside its body (U) */
static void loop_rnn_model(void **state)
{
    (void)state;
    int64_t d[3] = {2, 28, 28};
    tu_grad_check_model(LT_SOURCE_DIR "/models/rnn_loop.onnx", 3, d, 0, 1, 10, "U");
}

static const int64_t flex_gqa[4] = {2, 4, 3, 4}, flex_mha[4] = {2, 2, 3, 4};

static void flex_attention_mods(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "flex_mods.onnx", 4, flex_gqa, -1, 1, 11, "relbias");
    tu_grad_check_model(DATA "flex_mods.onnx", 4, flex_gqa, -1, 1, 12, "kw");
    tu_grad_check_model(DATA "flex_mods.onnx", 4, flex_gqa, -1, 1, 13, "cap");
}
static void flex_attention_plain(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "flex_plain.onnx", 4, flex_mha, -1, 1, 14, "Kp");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(if_then_branch),  cmocka_unit_test(if_else_branch), cmocka_unit_test(loop_trip_count),
        cmocka_unit_test(loop_condition),  cmocka_unit_test(loop_both),      cmocka_unit_test(loop_in_loop),
        cmocka_unit_test(if_in_loop),      cmocka_unit_test(scan_forward),   cmocka_unit_test(scan_reverse_axis1),
        cmocka_unit_test(loop_rnn_model),  cmocka_unit_test(flex_attention_mods), cmocka_unit_test(flex_attention_plain),
        cmocka_unit_test(seq_split_at),    cmocka_unit_test(seq_unbind_at),  cmocka_unit_test(loop_list_stacked),
        cmocka_unit_test(seq_refused),     cmocka_unit_test(unbind_loop),
        cmocka_unit_test(unbind_loop_in3), cmocka_unit_test(scan_declared_rank), cmocka_unit_test(undeclared_states),
        cmocka_unit_test(stack_declared_rank),
        cmocka_unit_test(if_in_loop_scan), cmocka_unit_test(loop_in_loop_scan), cmocka_unit_test(loop_list_concatenated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
