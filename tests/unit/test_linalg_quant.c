/* Quantized ops: hand-derived values (ties to even, saturation, per-axis
 * parameters) and integer products against loops. */
#include "testutil.h"
#include <math.h>
#include <string.h>

static lt_value *run(lt_op op, int opset, int nin, lt_value **in, int nout, lt_value **out, int64_t axis)
{
    tu_graph g = tu_single(op, opset, nin, nout);
    if (axis != 99)
        tu_attr_int(&g, "axis", axis);
    /* an omitted input still is a graph input: feed it a dummy */
    lt_value *dummy = tu_from(LT_F32, 0, NULL, (double[]){0}), *vals[8];
    for (int i = 0; i < nin; i++) {
        vals[i] = in[i] ? in[i] : dummy;
        if (!in[i])
            tu_omit_input(&g, i);
    }
    lt_value *o[4] = {NULL};
    lt_err err;
    lt_status s = tu_run(&g, vals, out ? out : o, &err);
    lt_value_free(dummy);
    if (s != LT_OK)
        fail_msg("run failed: %s", err.msg);
    tu_free(&g);
    return out ? out[0] : o[0];
}

static void quantize_rounding(void **state)
{
    (void)state;
    double xv[8] = {0, 2.5, 3.5, -2.5, 1000, -1000, 5.0, 0.49};
    lt_value *in[3] = {tu_from(LT_F32, 1, (int64_t[]){8}, xv), tu_from(LT_F32, 0, NULL, (double[]){1.0}),
                       tu_from(LT_U8, 0, NULL, (double[]){10})};
    lt_value *y = run(LT_OP_QUANTIZE_LINEAR, 13, 3, in, 1, NULL, 99);
    /* 2.5 -> 2 and 3.5 -> 4 (ties to even), -2.5 -> -2, saturated ends */
    double want[8] = {10, 12, 14, 8, 255, 0, 15, 10};
    assert_int_equal(y->t.dtype, LT_U8);
    tu_assert_close(y, want, 8, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(in[2]);
    /* int8 zero point, no zero point -> uint8 */
    in[2] = tu_from(LT_I8, 0, NULL, (double[]){-3});
    y = run(LT_OP_QUANTIZE_LINEAR, 13, 3, in, 1, NULL, 99);
    double want8[8] = {-3, -1, 1, -5, 127, -128, 2, -3};
    assert_int_equal(y->t.dtype, LT_I8);
    tu_assert_close(y, want8, 8, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(in[2]);
    in[2] = NULL;
    y = run(LT_OP_QUANTIZE_LINEAR, 10, 3, in, 1, NULL, 99);
    double wantu[8] = {0, 2, 4, 0, 255, 0, 5, 0};
    assert_int_equal(y->t.dtype, LT_U8);
    tu_assert_close(y, wantu, 8, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

static void quantize_per_axis(void **state)
{
    (void)state;
    /* x [2,3,2], per-channel along axis 1 (and -2) */
    lt_value *x = tu_rand(LT_F32, 3, (int64_t[]){2, 3, 2}, -10, 10, 3);
    double sc[3] = {0.5, 1.0, 2.0}, zp[3] = {100, 128, 7};
    lt_value *in[3] = {x, tu_from(LT_F32, 1, (int64_t[]){3}, sc), tu_from(LT_U8, 1, (int64_t[]){3}, zp)};
    double want[12];
    for (int i = 0; i < 12; i++) {
        int c = (i / 2) % 3;
        double v = nearbyint((float)tu_get(x, i) / (float)sc[c]) + zp[c];
        want[i] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
    for (int pass = 0; pass < 2; pass++) {
        lt_value *y = run(LT_OP_QUANTIZE_LINEAR, 13, 3, in, 1, NULL, pass ? -2 : 99);
        tu_assert_close(y, want, 12, 0, 0, 3);
        /* and back: (q - zp) * scale */
        lt_value *din[3] = {y, in[1], in[2]};
        lt_value *d = run(LT_OP_DEQUANTIZE_LINEAR, 13, 3, din, 1, NULL, pass ? -2 : 99);
        double back[12];
        for (int i = 0; i < 12; i++) {
            int c = (i / 2) % 3;
            back[i] = (want[i] - zp[c]) * sc[c];
        }
        tu_assert_close(d, back, 12, 1e-6, 1e-6, 3);
        lt_value_free(d);
        lt_value_free(y);
    }
    for (int i = 0; i < 3; i++)
        lt_value_free(in[i]);
}

static void dequantize_scalar(void **state)
{
    (void)state;
    double xv[4] = {0, 3, 128, 255};
    lt_value *in[3] = {tu_from(LT_U8, 1, (int64_t[]){4}, xv), tu_from(LT_F32, 0, NULL, (double[]){2}),
                       tu_from(LT_U8, 0, NULL, (double[]){128})};
    lt_value *y = run(LT_OP_DEQUANTIZE_LINEAR, 13, 3, in, 1, NULL, 99);
    double want[4] = {-256, -250, 0, 254};
    assert_int_equal(y->t.dtype, LT_F32);
    tu_assert_close(y, want, 4, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(in[0]);
    lt_value_free(in[2]);
    in[2] = NULL;
    double xi[3] = {-5, 0, 1000};
    in[0] = tu_from(LT_I32, 1, (int64_t[]){3}, xi);
    y = run(LT_OP_DEQUANTIZE_LINEAR, 10, 3, in, 1, NULL, 99);
    double wanti[3] = {-10, 0, 2000};
    tu_assert_close(y, wanti, 3, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

static void dynamic_quantize(void **state)
{
    (void)state;
    double xv[6] = {0, 2, -3, -2.5, 1.34, 0.5};
    lt_value *in[1] = {tu_from(LT_F32, 1, (int64_t[]){6}, xv)};
    lt_value *out[3] = {NULL};
    run(LT_OP_DYNAMIC_QUANTIZE_LINEAR, 11, 1, in, 3, out, 99);
    /* range [-3, 2]: scale 5/255, zero point round(3/scale) = 153 */
    float scale = 5.0f / 255.0f;
    assert_true(fabs(tu_get(out[1], 0) - scale) < 1e-9);
    assert_int_equal((int)tu_get(out[2], 0), 153);
    double want[6];
    for (int i = 0; i < 6; i++) {
        double v = nearbyintf((float)xv[i] / scale) + 153;
        want[i] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
    tu_assert_close(out[0], want, 6, 0, 0, 0);
    for (int i = 0; i < 3; i++)
        lt_value_free(out[i]);
    lt_value_free(in[0]);
}

static void matmul_integer(void **state)
{
    (void)state;
    /* the ONNX example: A - 12 times B */
    double a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, b[6] = {1, 4, 2, 5, 3, 6};
    lt_value *in[4] = {tu_from(LT_U8, 2, (int64_t[]){4, 3}, a), tu_from(LT_U8, 2, (int64_t[]){3, 2}, b),
                       tu_from(LT_U8, 1, (int64_t[]){1}, (double[]){12}),
                       tu_from(LT_U8, 1, (int64_t[]){1}, (double[]){0})};
    lt_value *y = run(LT_OP_MAT_MUL_INTEGER, 10, 4, in, 1, NULL, 99);
    double want[8] = {-38, -83, -44, -98, -50, -113, -56, -128};
    assert_int_equal(y->t.dtype, LT_I32);
    tu_assert_close(y, want, 8, 0, 0, 0);
    lt_value_free(y);
    for (int i = 0; i < 4; i++)
        lt_value_free(in[i]);

    /* batched int8 x uint8 with per-row / per-column zero points */
    lt_value *A = tu_rand(LT_I8, 3, (int64_t[]){2, 3, 5}, -128, 128, 7);
    lt_value *B = tu_rand(LT_U8, 2, (int64_t[]){5, 4}, 0, 256, 8);
    lt_value *za = tu_rand(LT_I8, 1, (int64_t[]){3}, -10, 10, 9);
    lt_value *zb = tu_rand(LT_U8, 1, (int64_t[]){4}, 100, 150, 10);
    lt_value *in2[4] = {A, B, za, zb};
    y = run(LT_OP_MAT_MUL_INTEGER, 10, 4, in2, 1, NULL, 99);
    double w2[24];
    for (int bt = 0; bt < 2; bt++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double s = 0;
                for (int x = 0; x < 5; x++)
                    s += (tu_get(A, (bt * 3 + i) * 5 + x) - tu_get(za, i)) * (tu_get(B, x * 4 + j) - tu_get(zb, j));
                w2[(bt * 3 + i) * 4 + j] = s;
            }
    tu_assert_close(y, w2, 24, 0, 0, 7);
    lt_value_free(y);
    for (int i = 0; i < 4; i++)
        lt_value_free(in2[i]);
}

static void qlinear_matmul(void **state)
{
    (void)state;
    double a[8] = {208, 236, 0, 238, 3, 214, 255, 29};
    double b[12] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
    lt_value *in[8] = {
        tu_from(LT_U8, 2, (int64_t[]){2, 4}, a),           tu_from(LT_F32, 1, (int64_t[]){1}, (double[]){0.0066}),
        tu_from(LT_U8, 1, (int64_t[]){1}, (double[]){113}), tu_from(LT_U8, 2, (int64_t[]){4, 3}, b),
        tu_from(LT_F32, 1, (int64_t[]){1}, (double[]){0.00705}), tu_from(LT_U8, 1, (int64_t[]){1}, (double[]){114}),
        tu_from(LT_F32, 1, (int64_t[]){1}, (double[]){0.0107}), tu_from(LT_U8, 1, (int64_t[]){1}, (double[]){118}),
    };
    lt_value *y = run(LT_OP_Q_LINEAR_MAT_MUL, 10, 8, in, 1, NULL, 99);
    double want[6] = {168, 115, 255, 1, 66, 151};
    assert_int_equal(y->t.dtype, LT_U8);
    tu_assert_close(y, want, 6, 0, 0, 0);
    lt_value_free(y);
    for (int i = 0; i < 8; i++)
        lt_value_free(in[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantize_rounding), cmocka_unit_test(quantize_per_axis), cmocka_unit_test(dequantize_scalar),
        cmocka_unit_test(dynamic_quantize),  cmocka_unit_test(matmul_integer),    cmocka_unit_test(qlinear_matmul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
