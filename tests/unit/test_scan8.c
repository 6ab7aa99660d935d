/* Scan at opset 8 (tests/data/scan8/make_scan8.py): a batch axis 0 and a
 * sequence axis 1, with sequence_lens.
 * - run: batch 32 with lengths 0..6 (0 and 6 present), one scan input
 *   read forward and one in reverse: each entry runs its first lens[b]
 *   steps (the reversed input from step lens[b] - 1 down), its state is
 *   the one after them and its scan outputs are zero past them, against
 *   numpy's step-by-step values (which onnxruntime also gives for the
 *   nonzero lengths); lengths outside 0..T are refused by value;
 * - grad: Scan-8 is not differentiated, and says so, where its inputs'
 *   gradients were silently zero. */
#include "testutil.h"
#include <string.h>

#define DIR LT_SOURCE_DIR "/tests/data/scan8/"

static lt_status run_scan8(lt_model *m, lt_value *lens, lt_value **outs, lt_err *err)
{
    lt_value *ins[4] = {lens, tu_load(DIR "s0.npy"), tu_load(DIR "x.npy"), tu_load(DIR "r.npy")};
    const char *names[4] = {"lens", "s0", "x", "r"};
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, err), LT_OK);
    lt_status st = lt_session_run(s, 4, names, ins, outs, err);
    lt_session_free(s);
    for (int i = 1; i < 4; i++)
        lt_value_free(ins[i]);
    return st;
}

static void lengths_cut_and_pad(void **state)
{
    (void)state;
    lt_model *m = tu_model(DIR "lens.onnx");
    lt_value *lens = tu_load(DIR "lens.npy"), *outs[2] = {0};
    lt_err err;
    if (run_scan8(m, lens, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    static const char *const want_files[2] = {DIR "sN.npy", DIR "ys.npy"};
    for (int i = 0; i < 2; i++) {
        lt_value *want = tu_load(want_files[i]);
        double e = tu_max_rel_err(lt_value_tensor(outs[i]), &want->t);
        print_message("%s: max rel err %.2g\n", i ? "ys" : "sN", e);
        assert_true(e < 1e-5);
        lt_value_free(want);
        lt_value_free(outs[i]);
    }
    /* entry 0 has length 0: its state is s0, its outputs all zero */
    assert_int_equal(tu_get(lens, 0), 0);
    lt_value_free(lens);
    lt_model_free(m);
}

static void length_out_of_range(void **state)
{
    (void)state;
    lt_model *m = tu_model(DIR "lens.onnx");
    lt_value *lens = tu_load(DIR "lens.npy"), *outs[2] = {0};
    ((int64_t *)lens->t.data)[5] = 7;
    lt_err err;
    assert_int_not_equal(run_scan8(m, lens, outs, &err), LT_OK);
    assert_non_null(strstr(err.msg, "sequence_lens[5] is 7, outside 0..6"));
    lt_value_free(lens);
    lt_model_free(m);
}

static void gradient_refused(void **state)
{
    (void)state;
    lt_model *m = tu_model(DIR "lens.onnx");
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 1};
    lt_err err;
    assert_int_not_equal(lt_model_grad(m, &o, &err), LT_OK);
    assert_non_null(strstr(err.msg, "differentiating Scan-8 (with its batch axis) is not supported"));
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lengths_cut_and_pad),
        cmocka_unit_test(length_out_of_range),
        cmocka_unit_test(gradient_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
