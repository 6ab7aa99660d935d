/* Fake quantization (QuantizeLinear then DequantizeLinear, as torch's
 * quantization-aware training exports it) takes the straight-through
 * gradient torch's fake_quantize gives: dy passes to what was quantized
 * where round(x / scale) + zero_point lies in the type's range, and is cut
 * where the quantization clips; per tensor (x, uint8) and per channel (W,
 * int8, axis 1), against torch's gradients saved as files
 * (tests/data/fake_quant/make_fake_quant.py). Training keeps the
 * QuantizeLinear's float scales fixed, with a note, as PyTorch keeps its
 * observers' buffers. Block quantization (opset 21's block_size, along axis
 * 1 and -1, 10 indices in blocks of 4) cuts the same way, int8 and uint4,
 * the scale an initializer or a Constant; a DequantizeLinear's blocked
 * scale takes its exact gradient, and a pair through float8, which has no
 * straight-through gradient here, fails rather than give none. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FQ LT_SOURCE_DIR "/tests/data/fake_quant/"

static lt_value *npy(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, FQ "%s.npy", name);
    lt_value *v = NULL;
    lt_err err;
    if (lt_value_load(path, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return v;
}

static void close_to(const lt_value *got, const lt_value *want, const char *what)
{
    char why[256];
    if (!lt_value_close(got, want, 1e-5, 1e-6, why, sizeof why))
        fail_msg("%s: %s", what, why);
}

static void straight_through_as_torch(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = NULL;
    if (lt_model_load(FQ "fq.onnx", &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *seeds[1] = {"y"};
    lt_grad_opts o = {.loss = LT_LOSS_SEEDS, .nseeds = 1, .seed_outputs = seeds, .wrt_inputs = 1};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session *s = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    lt_value *in[2] = {npy("x"), npy("dy")}, *out[8] = {0};
    const char *names[2] = {"x", "y_seed"};
    if (lt_session_run(s, 2, names, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int seen = 0, zeros = 0;
    for (int i = 1; i < lt_model_num_outputs(m); i++) {
        const char *name = lt_model_output_name(m, i);
        const char *want = !strcmp(name, "x_grad") ? "dx" : !strcmp(name, "W_grad") ? "dW" : NULL;
        if (want) {
            lt_value *ref = npy(want);
            close_to(out[i], ref, name);
            for (int64_t k = 0; k < ref->t.numel; k++)
                zeros += tu_get(ref, k) == 0;
            lt_value_free(ref);
            seen++;
        }
        lt_value_free(out[i]);
    }
    assert_int_equal(seen, 2);
    assert_true(zeros > 0); /* the clipped entries are among those checked */
    lt_value_free(out[0]);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_session_free(s);
    lt_model_free(m);
}

/* The gradients of model (input "x" from xf, the seed of "y" from dyf) of
 * the parameters named in want[2k] against the files want[2k+1], within
 * 1e-5 relative and 1e-6 of the largest reference entry; counts the
 * references' zeros (clipped) and other entries (passed) into *cut and
 * *passed. */
static void grads_as(const char *model, const char *xf, const char *dyf, const char *const *want, int nwant, int *cut,
                     int *passed)
{
    lt_err err;
    lt_model *m = tu_model(model);
    const char *seeds[1] = {"y"};
    lt_grad_opts o = {.loss = LT_LOSS_SEEDS, .nseeds = 1, .seed_outputs = seeds};
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session *s = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    lt_value *in[2] = {npy(xf), npy(dyf)}, *out[16] = {0};
    const char *names[2] = {"x", "y_seed"};
    assert_true(lt_model_num_outputs(m) <= 16);
    if (lt_session_run(s, 2, names, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int seen = 0;
    for (int k = 0; k < nwant; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s_grad", want[2 * k]);
        for (int i = 1; i < lt_model_num_outputs(m); i++) {
            if (strcmp(lt_model_output_name(m, i), name))
                continue;
            lt_value *ref = npy(want[2 * k + 1]);
            double big = 1;
            for (int64_t j = 0; j < ref->t.numel; j++) {
                *cut += tu_get(ref, j) == 0;
                *passed += tu_get(ref, j) != 0;
                big = fmax(big, fabs(tu_get(ref, j)));
            }
            /* a block's sum of dy' q (q up to 127) cancels: float32's
             * error goes with the largest terms */
            char why[256];
            if (!lt_value_close(out[i], ref, 1e-5, 1e-6 * big, why, sizeof why))
                fail_msg("%s: %s", name, why);
            lt_value_free(ref);
            seen++;
        }
    }
    assert_int_equal(seen, nwant);
    for (int i = 0; i < lt_model_num_outputs(m); i++)
        lt_value_free(out[i]);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_session_free(s);
    lt_model_free(m);
}

/* A, int8 with zero points, scale an initializer: torch's cut; C, quantized
 * by scq and dequantized by a scale of its own, scd: that cut times scd /
 * scq; sb and scd, blocked DequantizeLinear scales: the sums over their
 * blocks of dy' (q - zero point) */
static void block_straight_through(void **state)
{
    (void)state;
    static const char *const want[] = {"A", "bdA", "C", "bdC"};
    int cut = 0, passed = 0;
    grads_as(FQ "fq_block.onnx", "bx", "bdy", want, 2, &cut, &passed);
    assert_true(cut > 0 && passed > 0);
    static const char *const scales[] = {"sb", "bdsb", "scd", "bdscd"};
    cut = passed = 0;
    grads_as(FQ "fq_block.onnx", "bx", "bdy", scales, 2, &cut, &passed);
    assert_int_equal(passed, 2 * 8 * 3);
}

/* uint4 along axis -1, the scale and zero point Constants: the gradient
 * was silently zero before, with nothing to refuse */
static void block_constant_scale(void **state)
{
    (void)state;
    static const char *const want[] = {"W", "bdW"};
    int cut = 0, passed = 0;
    grads_as(FQ "fq_block_const.onnx", "bx", "bdy", want, 1, &cut, &passed);
    assert_true(cut > 0 && passed > 0);
}

/* float8 has no straight-through gradient here: grad fails and says so */
static void float8_refused(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = tu_model(FQ "fq_f8.onnx");
    lt_grad_opts o = {.loss = LT_LOSS_SUM};
    assert_int_not_equal(lt_model_grad(m, &o, &err), LT_OK);
    assert_non_null(strstr(err.msg, "float8e4m3fn has no straight-through gradient"));
    lt_model_free(m);
}

/* A Transpose between the pair (QuantizeLinear, Transpose of its integers,
 * DequantizeLinear): refused by name, where W's gradient was silently
 * zero (integers carry no gradient). */
static void op_between_refused(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = tu_model(FQ "fq_between.onnx");
    lt_grad_opts o = {.loss = LT_LOSS_SUM};
    assert_int_not_equal(lt_model_grad(m, &o, &err), LT_OK);
    assert_non_null(strstr(err.msg, "of the QuantizeLinear making 'Wq' is taken only where a DequantizeLinear "
                                    "reads its output directly; here a Transpose making 'Wt' lies between them"));
    lt_model_free(m);
}

/* A DequantizeLinear of a float64 program (grad --check, --f64)
 * multiplies in float64: the blocked scales' gradients agree with central
 * finite differences to float64 precision (they were 3e-3 off, from a
 * float32 product). */
static void float64_dequantize_checks(void **state)
{
    (void)state;
    lt_value *x = tu_load(FQ "bx.npy");
    const char *names[1] = {"x"};
    lt_grad_opts o = {.loss = LT_LOSS_SUM};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0, seen = 0;
    lt_err err;
    if (lt_grad_check(FQ "fq_block.onnx", &o, 1, names, &x, 64, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int r = 0; r < nrows; r++)
        if (!strcmp(rows[r].name, "sb") || !strcmp(rows[r].name, "scd")) {
            print_message("%s: rel.err %.3g in float64\n", rows[r].name, rows[r].err64);
            assert_true(rows[r].err64 < 1e-6);
            seen++;
        }
    assert_int_equal(seen, 2);
    free(rows);
    lt_value_free(x);
}

static void observer_scales_fixed(void **state)
{
    (void)state;
    lt_trainer *t = tu_trainer_noting(FQ "fq.onnx");
    assert_non_null(strstr(tu_notes, "2 initializer(s) are the scales or zero points of QuantizeLinear nodes"));
    assert_non_null(strstr(tu_notes, "'xs'"));
    assert_non_null(strstr(tu_notes, "'s'"));
    lt_trainer_free(t);
    /* blocked: the QuantizeLinear scales are fixed; the DequantizeLinear
     * scales of their own (sb, scd) train */
    t = tu_trainer_noting(FQ "fq_block.onnx");
    assert_non_null(strstr(tu_notes, "2 initializer(s) are the scales or zero points of QuantizeLinear nodes"));
    assert_non_null(strstr(tu_notes, "'sa'"));
    assert_non_null(strstr(tu_notes, "'scq'"));
    assert_null(strstr(tu_notes, "'sb'"));
    assert_null(strstr(tu_notes, "'scd'"));
    lt_trainer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(straight_through_as_torch),
                                       cmocka_unit_test(block_straight_through),
                                       cmocka_unit_test(block_constant_scale), cmocka_unit_test(float8_refused), cmocka_unit_test(op_between_refused),
                                       cmocka_unit_test(float64_dequantize_checks),
                                       cmocka_unit_test(observer_scales_fixed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
