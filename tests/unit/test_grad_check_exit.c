/* lantern grad --check's exit status: 0 where every gradient agrees with
 * float64 central finite differences (a parameter its op takes no gradient
 * for by design, BatchNormalization's running statistics, is marked and
 * excepted, as is one that reaches such an input only over other ops), 1
 * where one differs (Relu at its kink, where the differences
 * see a slope of 1/2 and the gradient takes 0: tests/data/ad_relu_kink.onnx),
 * with a last line saying which. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define DATA LT_SOURCE_DIR "/tests/data/"

static char out[16384], errs[4096];

/* lantern grad MODEL --input x=X --check, X a float32 .npy of the shape,
 * uniform in [-1, 1) from seed or all zero; its output in out, and its exit
 * status must be want */
static void check_model(const char *model, int rank, const int64_t *dims, uint64_t seed, bool zero, int want)
{
    char x[256], cmd[1024];
    snprintf(x, sizeof x, "/tmp/lt_gcx_%d.npy", (int)getpid());
    lt_value *v = tu_rand(LT_F32, rank, dims, -1, 1, seed);
    if (zero)
        memset(v->t.data, 0, lt_tensor_nbytes(&v->t));
    lt_err err;
    assert_int_equal(lt_value_save_npy(v, x, &err), LT_OK);
    lt_value_free(v);
    snprintf(cmd, sizeof cmd, "%s grad %s%s --input x=%s --check", LANTERN, DATA, model, x);
    int rc = tu_sh(cmd, out, sizeof out, errs, sizeof errs);
    unlink(x);
    if (rc != want)
        fail_msg("%s: exit %d (want %d): %s%s", model, rc, want, out, errs);
}

static void agreeing_with_by_design(void **state)
{
    (void)state;
    check_model("bn_model.onnx", 2, (int64_t[]){6, 4}, 3, false, 0);
    assert_non_null(strstr(out, "(excepted: no gradient through BatchNormalization input 3)"));
    assert_non_null(strstr(out, "(excepted: no gradient through BatchNormalization input 4)"));
    assert_non_null(strstr(out, "gradient check: 4 parameters agree with finite differences within 0.0001 (float64); "
                                "the others are excepted"));
    assert_null(strstr(out, "FAILED"));
}

/* a parameter that reaches such an input over other ops: boxes scaled
 * before RoiAlign's rois (FAILED before, as a TorchScript roi_align's
 * boxes buffer was) */
static void reaching_by_design_over_ops(void **state)
{
    (void)state;
    check_model("ad_roi_scaled.onnx", 4, (int64_t[]){1, 1, 5, 5}, 7, false, 0);
    const char *rows[2] = {"\nB ", "\nS "};
    for (int r = 0; r < 2; r++) {
        const char *at = strstr(out, rows[r]), *nl = at ? strchr(at + 1, '\n') : NULL;
        if (!at || !nl || !strstr(at, "(excepted: no gradient through RoiAlign input 1)") ||
            strstr(at, "(excepted: no gradient through RoiAlign input 1)") > nl)
            fail_msg("row %s not excepted: %s", rows[r] + 1, out);
    }
    assert_non_null(strstr(out, "gradient check: 1 parameters agree with finite differences within 0.0001 (float64); "
                                "the others are excepted"));
    assert_null(strstr(out, "FAILED"));
}

/* an inference-mode BatchNormalization whose mean and variance are
 * computed from its input (tf2onnx's LayerNormalization): the gradient
 * through them was left out (p 0.52 off); and single-valued weights of
 * their own names (a fresh scale of ones, a bias of zeros) are checked,
 * not excepted as graph constants (every one-valued parameter was) */
static void computed_statistics_checked(void **state)
{
    (void)state;
    check_model("ad_bn_computed_stats.onnx", 4, (int64_t[]){6, 3, 4, 1}, 8, false, 0);
    assert_null(strstr(out, "excepted"));
    assert_non_null(strstr(out, "gradient check: 4 parameters agree with finite differences within 0.0001 (float64)"));
}

static void differing_fails(void **state)
{
    (void)state;
    check_model("ad_relu_kink.onnx", 1, (int64_t[]){3}, 4, true, 1);
    assert_non_null(strstr(out, "FAILED"));
    assert_non_null(strstr(out, "gradient check: 1 of 1 parameters differ from finite differences by more than "
                                "0.0001 (float64)"));
    /* the gradients are printed all the same */
    assert_non_null(strstr(out, "W: float32[3]"));
}

/* --f64 takes a float64 seed; --check's float32 program reads it in
 * float32 (it was refused: "expects float32[2,4,3], got float64") */
static void f64_seed_checks(void **state)
{
    (void)state;
    char x[256], sd[256], cmd[1024];
    int64_t d[3] = {2, 4, 3};
    snprintf(x, sizeof x, "/tmp/lt_gcx_x_%d.npy", (int)getpid());
    snprintf(sd, sizeof sd, "/tmp/lt_gcx_s_%d.npy", (int)getpid());
    lt_value *xv = tu_rand(LT_F32, 3, d, -1, 1, 5), *sv = tu_rand(LT_F64, 3, d, -1, 1, 6);
    lt_err err;
    assert_int_equal(lt_value_save_npy(xv, x, &err), LT_OK);
    assert_int_equal(lt_value_save_npy(sv, sd, &err), LT_OK);
    lt_value_free(xv);
    lt_value_free(sv);
    snprintf(cmd, sizeof cmd, "%s grad %sad_loop_stack_declared.onnx --input x=%s --f64 --seed y=%s --check", LANTERN,
             DATA, x, sd);
    int rc = tu_sh(cmd, out, sizeof out, errs, sizeof errs);
    unlink(x);
    unlink(sd);
    if (rc != 0)
        fail_msg("exit %d: %s%s", rc, out, errs);
    assert_non_null(strstr(out, "gradient check: 4 parameters agree with finite differences"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(agreeing_with_by_design),
                                       cmocka_unit_test(reaching_by_design_over_ops),
                                       cmocka_unit_test(computed_statistics_checked),
                                       cmocka_unit_test(differing_fails), cmocka_unit_test(f64_seed_checks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
