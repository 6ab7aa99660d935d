/* Gradients through If, Loop and Scan on the cuda backend, against
 * central finite differences of the same model in float64, both run on
 * the GPU (LANTERN_BACKEND=cuda: lt_grad_check's sessions run there): the
 * control-flow models of tests/data (each branch of an If, a Loop by trip
 * count, by condition and by both, a Loop in a Loop, an If in a Loop, a
 * list a Loop appends to, Scan forward and reverse over axis 1) and the
 * shipped Loop-RNN. The bodies' nodes run on the device, their counters
 * and conditions on the host, their gradient sums in device cells.
 * Skipped (exit 77) without a CUDA device (failed under
 * LANTERN_CUDA_REQUIRED=1, cuda_suite.h). An argument runs only the tests
 * whose names match it (cmocka's filter: `*` and `?`). */
#include "testutil.h"
#include "cuda_suite.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA LT_SOURCE_DIR "/tests/data/"

static const int64_t d24[2] = {2, 4}, d34[2] = {3, 4}, d324[3] = {3, 2, 4}, d234[3] = {2, 3, 4};

static void if_then(void **s) { (void)s; tu_grad_check_model(DATA "ad_if.onnx", 2, d34, -0.8, 1.4, 1, "A"); }
static void if_else(void **s) { (void)s; tu_grad_check_model(DATA "ad_if.onnx", 2, d34, -1.0, -0.1, 2, "B"); }
static void loop_trip(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_trip.onnx", 2, d24, -1, 1, 3, "V"); }
static void loop_cond(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_cond.onnx", 2, d24, -1, 1, 4, "W"); }
static void loop_both(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_both.onnx", 2, d24, -1, 1, 5, "h0"); }
static void loop_in_loop(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_nested.onnx", 2, d24, -1, 1, 6, "U"); }
static void if_in_loop(void **s) { (void)s; tu_grad_check_model(DATA "ad_if_in_loop.onnx", 2, d24, -1, 1, 7, "W1"); }
static void loop_list(void **s) { (void)s; tu_grad_check_model(DATA "ad_loop_list.onnx", 2, d24, -1, 1, 12, "V"); }
static void scan_fwd(void **s) { (void)s; tu_grad_check_model(DATA "ad_scan_fwd.onnx", 3, d324, -1, 1, 8, "W"); }
static void scan_rev_axis1(void **s)
{
    (void)s;
    tu_grad_check_model(DATA "ad_scan_rev_axis1.onnx", 3, d234, -1, 1, 9, "s0");
}

static void loop_rnn(void **s)
{
    (void)s;
    static const int64_t d[3] = {2, 28, 28};
    tu_grad_check_model(LT_SOURCE_DIR "/models/rnn_loop.onnx", 3, d, 0, 1, 10, "U");
}

int main(int argc, char **argv)
{
    lt_err err;
    if (!lt_backend_open("cuda", &err))
        return cuda_suite_unopened(err.msg);
    setenv("LANTERN_BACKEND", "cuda", 1);
    setenv("LANTERN_TF32", "0", 1);
    if (argc > 1) /* one test, or a pattern, by name */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(if_then),    cmocka_unit_test(if_else),        cmocka_unit_test(loop_trip),
        cmocka_unit_test(loop_cond),  cmocka_unit_test(loop_both),      cmocka_unit_test(loop_in_loop),
        cmocka_unit_test(if_in_loop), cmocka_unit_test(loop_list),      cmocka_unit_test(scan_fwd),
        cmocka_unit_test(scan_rev_axis1), cmocka_unit_test(loop_rnn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
