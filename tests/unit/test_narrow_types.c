/* The narrow element types (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0,
 * float4e2m1, int4/uint4/int2/uint2) against onnx 1.23's numpy helpers and
 * ml_dtypes (tests/data/narrow/make_narrow_ref.py): every code's value,
 * conversion of edge values (saturation, NaN, infinities, subnormals, ties)
 * with and without saturate, through the conversion functions and through
 * the Cast kernel; e8m0's rounding modes and the spec's table of special
 * values; packing of odd element counts in raw_data and int32_data; and an
 * exported model that keeps its packed initializers. */
#define _GNU_SOURCE
#include "test_elementwise.h"
#include <stdbool.h>
#include <unistd.h>

#define REF LT_SOURCE_DIR "/tests/data/narrow/"

static const struct {
    lt_dtype t;
    const char *name;
} floats[] = {{LT_F8E4M3FN, "e4m3fn"}, {LT_F8E4M3FNUZ, "e4m3fnuz"}, {LT_F8E5M2, "e5m2"},
              {LT_F8E5M2FNUZ, "e5m2fnuz"}, {LT_F4E2M1, "e2m1"}};
#define NFLOATS (int)(sizeof floats / sizeof *floats)

static lt_value *load(const char *fmt, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, fmt, name);
    return tu_load(path);
}

static bool same_value(double a, double b) { return isnan(b) ? isnan(a) : a == b && signbit(a) == signbit(b); }

static void decode_every_code(void **state)
{
    (void)state;
    for (int f = 0; f < NFLOATS; f++) {
        lt_value *ref = load(REF "decode_%s.npy", floats[f].name);
        assert_int_equal(ref->t.numel, floats[f].t == LT_F4E2M1 ? 16 : 256);
        for (int64_t c = 0; c < ref->t.numel; c++) {
            double want = ((float *)ref->t.data)[c], got = lt_narrow_to_f64(floats[f].t, (uint8_t)c);
            if (!same_value(got, want))
                fail_msg("%s code 0x%02llx: %g, expected %g", floats[f].name, (long long)c, got, want);
        }
        lt_value_free(ref);
    }
    /* e8m0: 2^(code-127), 0xff NaN (the spec's definition) */
    assert_true(lt_narrow_to_f64(LT_F8E8M0, 127) == 1.0);
    assert_true(lt_narrow_to_f64(LT_F8E8M0, 0) == ldexp(1, -127));
    assert_true(lt_narrow_to_f64(LT_F8E8M0, 254) == ldexp(1, 127));
    assert_true(isnan(lt_narrow_to_f64(LT_F8E8M0, 255)));
}

static void encode_vs_ml_dtypes(void **state)
{
    (void)state;
    lt_value *x = tu_load(REF "in_f32.npy");
    const float *xv = x->t.data;
    for (int f = 0; f < NFLOATS; f++)
        for (int sat = 0; sat < 2; sat++) {
            lt_value *ref = load(sat ? REF "sat_%s.npy" : REF "nosat_%s.npy", floats[f].name);
            assert_int_equal(ref->t.numel, x->t.numel);
            for (int64_t i = 0; i < x->t.numel; i++) {
                uint8_t want = ((uint8_t *)ref->t.data)[i], got = lt_f64_to_narrow(floats[f].t, xv[i], sat,
                                                                                   LT_ROUND_UP);
                if (got != want)
                    fail_msg("%s saturate=%d: %.9g gives 0x%02x, expected 0x%02x", floats[f].name, sat, xv[i], got,
                             want);
            }
            lt_value_free(ref);
        }
    lt_value_free(x);
}

/* the same through the Cast kernel (saturate attribute, float32 in) and back */
static void cast_kernel_vs_ml_dtypes(void **state)
{
    (void)state;
    for (int f = 0; f < NFLOATS; f++)
        for (int sat = 0; sat < 2; sat++) {
            lt_value *x = tu_load(REF "in_f32.npy"), *ref = load(sat ? REF "sat_%s.npy" : REF "nosat_%s.npy",
                                                                 floats[f].name);
            int64_t n = x->t.numel;
            tu_graph g = tu_single(LT_OP_CAST, 25, 1, 1);
            tu_attr_int(&g, "to", floats[f].t);
            tu_attr_int(&g, "saturate", sat);
            lt_value *in[1] = {x};
            lt_value *y = ew_exec(&g, 1, in, LT_OK);
            tu_free(&g);
            assert_int_equal(y->t.dtype, floats[f].t);
            assert_memory_equal(y->t.data, ref->t.data, (size_t)n);
            /* and back to float32: each code's value */
            g = tu_single(LT_OP_CAST, 25, 1, 1);
            tu_attr_int(&g, "to", LT_F32);
            in[0] = y;
            lt_value *back = ew_exec(&g, 1, in, LT_OK);
            tu_free(&g);
            for (int64_t i = 0; i < n; i++) {
                double want = lt_narrow_to_f64(floats[f].t, ((uint8_t *)ref->t.data)[i]);
                assert_true(same_value(((float *)back->t.data)[i], want));
            }
            lt_value_free(back);
            lt_value_free(ref);
        }
}

static void ints_wrap_like_the_reference(void **state)
{
    (void)state;
    static const struct {
        lt_dtype t;
        const char *name;
    } ints[] = {{LT_I4, "int4"}, {LT_U4, "uint4"}, {LT_I2, "int2"}, {LT_U2, "uint2"}};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        lt_value *x = tu_load(REF "in_int.npy"), *ref = load(REF "int_%s.npy", ints[k].name);
        int64_t n = x->t.numel;
        tu_graph g = tu_single(LT_OP_CAST, 25, 1, 1);
        tu_attr_int(&g, "to", ints[k].t);
        lt_value *in[1] = {x};
        lt_value *y = ew_exec(&g, 1, in, LT_OK);
        tu_free(&g);
        for (int64_t i = 0; i < n; i++)
            if (((uint8_t *)y->t.data)[i] != ((uint8_t *)ref->t.data)[i])
                fail_msg("%s element %lld: 0x%02x, expected 0x%02x", ints[k].name, (long long)i,
                         ((uint8_t *)y->t.data)[i], ((uint8_t *)ref->t.data)[i]);
        /* int64 in: the low bits, sign-extended */
        assert_int_equal((int8_t)lt_narrow_from_i64(LT_I4, 9), -7);
        assert_int_equal((int8_t)lt_narrow_from_i64(LT_I2, -3), 1);
        assert_int_equal(lt_narrow_from_i64(LT_U4, -1), 15);
        assert_int_equal(lt_narrow_from_i64(LT_U2, 6), 2);
        lt_value_free(y);
        lt_value_free(ref);
    }
}

static void e8m0_rounding_and_specials(void **state)
{
    (void)state;
    static const char *modes[] = {"up", "down", "nearest"};
    lt_value *x = tu_load(REF "e8m0_in.npy");
    for (int m = 0; m < 3; m++) {
        lt_value *ref = load(REF "e8m0_%s.npy", modes[m]);
        for (int64_t i = 0; i < x->t.numel; i++) {
            float v = ((float *)x->t.data)[i];
            uint8_t got = lt_f64_to_narrow(LT_F8E8M0, v, true, (lt_round_mode)m),
                    want = ((uint8_t *)ref->t.data)[i];
            if (got != want)
                fail_msg("e8m0 %s: %.9g gives %u, expected %u", modes[m], v, got, want);
        }
        lt_value_free(ref);
    }
    lt_value_free(x);
    /* Cast's table: saturate + up, then no saturation + nearest */
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 0.0, true, LT_ROUND_UP), 0x00);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, NAN, true, LT_ROUND_UP), 0xff);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, INFINITY, true, LT_ROUND_UP), 0xfe);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 0x1p200, true, LT_ROUND_UP), 0xfe);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 0x1p-200, true, LT_ROUND_UP), 0x00);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 0.0, false, LT_ROUND_NEAREST), 0xff);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, INFINITY, false, LT_ROUND_NEAREST), 0xff);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 0x1p200, false, LT_ROUND_NEAREST), 0xff);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 0x1p-200, false, LT_ROUND_NEAREST), 0xff);
    /* nearest: ties (1.5 * 2^k) up; up: anything above 2^k up; down: truncate */
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 1.5, true, LT_ROUND_NEAREST), 128);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 1.49, true, LT_ROUND_NEAREST), 127);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 1.01, true, LT_ROUND_UP), 128);
    assert_int_equal(lt_f64_to_narrow(LT_F8E8M0, 1.99, true, LT_ROUND_DOWN), 127);
    /* the round_mode attribute reaches the kernel */
    int64_t d[1] = {3};
    double v[3] = {1.49, 1.5, 3.0};
    tu_graph g = tu_single(LT_OP_CAST, 25, 1, 1);
    tu_attr_int(&g, "to", LT_F8E8M0);
    tu_attr_str(&g, "round_mode", "nearest");
    lt_value *in[1] = {tu_from(LT_F32, 1, d, v)};
    lt_value *y = ew_exec(&g, 1, in, LT_OK);
    tu_free(&g);
    const uint8_t want[3] = {127, 128, 129}; /* 3 = 1.5 * 2: a tie, up to 4 */
    assert_memory_equal(y->t.data, want, 3);
    lt_value_free(y);
}

/* the spec's tables at the edges, written out: largest values, what lies
 * just past them, negative zero, subnormal ties */
static void spec_edges(void **state)
{
    (void)state;
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 448, false, 0), 0x7e);
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 464, false, 0), 0x7e); /* tie: to even (448) */
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 465, false, 0), 0x7f); /* rounds past 448: NaN */
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 465, true, 0), 0x7e);
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, -INFINITY, true, 0), 0xfe);
    assert_int_equal(lt_f64_to_narrow(LT_F8E5M2, INFINITY, false, 0), 0x7c);
    assert_int_equal(lt_f64_to_narrow(LT_F8E5M2, 1e9, false, 0), 0x7c);
    assert_int_equal(lt_f64_to_narrow(LT_F8E5M2, -1e9, true, 0), 0xfb);
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FNUZ, -0.0, true, 0), 0x00); /* no -0 */
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FNUZ, NAN, true, 0), 0x80);
    assert_int_equal(lt_f64_to_narrow(LT_F8E5M2FNUZ, INFINITY, false, 0), 0x80);
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, -0.0, true, 0), 0x80);
    /* the smallest e4m3fn subnormal is 2^-9: half of it ties to 0, a bit more goes up */
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 0x1p-10, true, 0), 0x00);
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 0x1.01p-10, true, 0), 0x01);
    assert_int_equal(lt_f64_to_narrow(LT_F8E4M3FN, 3 * 0x1p-10, true, 0), 0x02); /* 1.5 ulp: to even */
    /* float4e2m1: +-0, 0.5, 1, 1.5, 2, 3, 4, 6; ties to even; saturating */
    assert_int_equal(lt_f64_to_narrow(LT_F4E2M1, 2.5, false, 0), 0x4);
    assert_int_equal(lt_f64_to_narrow(LT_F4E2M1, 5.0, false, 0), 0x6);
    assert_int_equal(lt_f64_to_narrow(LT_F4E2M1, -100, false, 0), 0xf);
    assert_int_equal(lt_f64_to_narrow(LT_F4E2M1, 0.25, false, 0), 0x0);
}

static void packing(void **state)
{
    (void)state;
    /* ONNX: two 4-bit elements a byte, first in the low nibble; four 2-bit
     * ones, first in bits 0-1; the padding of an odd tail zero */
    const uint8_t i4[7] = {(uint8_t)-8, 7, (uint8_t)-1, 0, 3, (uint8_t)-5, 6}, u2[7] = {3, 0, 1, 2, 2, 3, 1};
    const uint8_t i4_packed[4] = {0x78, 0x0f, 0xb3, 0x06}, u2_packed[2] = {0x93, 0x1e};
    uint8_t buf[8], back[8];
    assert_int_equal(lt_dtype_packed_bytes(LT_I4, 7), 4);
    assert_int_equal(lt_dtype_packed_bytes(LT_U2, 7), 2);
    assert_int_equal(lt_dtype_packed_bytes(LT_U2, 8), 2);
    assert_int_equal(lt_dtype_packed_bytes(LT_F8E5M2, 7), 7);
    memset(buf, 0xaa, sizeof buf);
    lt_narrow_pack(LT_I4, i4, 7, buf);
    assert_memory_equal(buf, i4_packed, 4);
    lt_narrow_unpack(LT_I4, buf, 7, back);
    assert_memory_equal(back, i4, 7);
    lt_narrow_pack(LT_U2, u2, 7, buf);
    assert_memory_equal(buf, u2_packed, 2);
    lt_narrow_unpack(LT_U2, buf, 7, back);
    assert_memory_equal(back, u2, 7);
    /* TensorProto files from onnx's make_tensor, raw_data and int32_data */
    static const char *files[] = {"pack4.pb", "pack4_i32.pb", "pack2.pb", "pack2_i32.pb"};
    for (int f = 0; f < 4; f++) {
        lt_value *v = load(REF "%s", files[f]);
        bool four = f < 2;
        assert_int_equal(v->t.dtype, four ? LT_I4 : LT_U2);
        assert_int_equal(v->t.numel, 7);
        assert_memory_equal(v->t.data, four ? i4 : u2, 7);
        lt_value_free(v);
    }
}

/* a model with odd-count int4, uint2 and float8 initializers: it runs, and
 * its export holds the same packed bytes and loads back to the same values */
static void export_round_trip(void **state)
{
    (void)state;
    const char *src = REF "narrow_inits.onnx";
    lt_model *m;
    lt_err err = {{0}};
    assert_int_equal(lt_model_load(src, &m, &err), LT_OK);
    char out[] = "/tmp/lt_narrow_XXXXXX.onnx";
    int fd = mkstemps(out, 5);
    assert_true(fd >= 0);
    close(fd);
    if (lt_model_export(m, src, out, &err) != LT_OK)
        fail_msg("export: %s", err.msg);
    lt_model *m2;
    if (lt_model_load(out, &m2, &err) != LT_OK)
        fail_msg("reload: %s", err.msg);
    int np = lt_model_num_params(m);
    assert_int_equal(np, lt_model_num_params(m2));
    for (int i = 0; i < np; i++) {
        const lt_tensor *a = lt_model_param(m, i), *b = lt_model_param(m2, i);
        assert_string_equal(lt_model_param_name(m, i), lt_model_param_name(m2, i));
        assert_int_equal(a->dtype, b->dtype);
        assert_int_equal(a->numel, b->numel);
        assert_memory_equal(a->data, b->data, lt_tensor_nbytes(a));
    }
    FILE *f = fopen(out, "rb");
    assert_non_null(f);
    uint8_t bytes[4096];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    const uint8_t i4_packed[4] = {0x78, 0x0f, 0xb3, 0x06}, u2_packed[2] = {0x93, 0x1e};
    assert_non_null(memmem(bytes, n, i4_packed, 4));
    assert_non_null(memmem(bytes, n, u2_packed, 2));
    lt_model_free(m);
    lt_model_free(m2);
    unlink(out);
}

/* .npy has no narrow types: int4/int2 are written as int8, uint4/uint2 as
 * uint8, the narrow floats as their float32 values */
static void npy_forms(void **state)
{
    (void)state;
    int64_t d[1] = {5};
    double v[5] = {-8, 7, -1, 0, 3}, f[5] = {448, -0.5, 0.001953125, -3.25, 0};
    struct {
        lt_dtype t, as;
        const double *vals;
    } c[] = {{LT_I4, LT_I8, v}, {LT_U2, LT_U8, (const double[]){3, 0, 1, 2, 2}}, {LT_F8E4M3FN, LT_F32, f},
             {LT_F4E2M1, LT_F32, (const double[]){6, -0.5, 1.5, -4, 0}}};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        lt_value *x = tu_from(c[k].t, 1, d, c[k].vals);
        char path[] = "/tmp/lt_narrow_XXXXXX.npy";
        int fd = mkstemps(path, 4);
        assert_true(fd >= 0);
        close(fd);
        lt_err err = {{0}};
        if (lt_value_save_npy(x, path, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_value *y = tu_load(path);
        assert_int_equal(y->t.dtype, c[k].as);
        tu_assert_close(y, c[k].vals, 5, 0, 0, k);
        lt_value_free(x);
        lt_value_free(y);
        unlink(path);
    }
}

/* QLinearMatMul (opset 21) on float8e4m3fn: (A - za) sa x (B - zb) sb / sy
 * + zy, cast back with saturation, worked by hand */
static void qlinearmatmul_float8(void **state)
{
    (void)state;
    int64_t d2[2] = {2, 2}, d0[1] = {1};
    lt_value *in[8] = {
        tu_from(LT_F8E4M3FN, 2, d2, (const double[]){1, 2, 0.5, -1}), tu_from(LT_F32, 0, d0, (const double[]){1}),
        tu_from(LT_F8E4M3FN, 0, d0, (const double[]){0}),
        tu_from(LT_F8E4M3FN, 2, d2, (const double[]){1, 0, 1.5, 256}), tu_from(LT_F32, 0, d0, (const double[]){0.5}),
        tu_from(LT_F8E4M3FN, 0, d0, (const double[]){0}),       tu_from(LT_F32, 0, d0, (const double[]){0.25}),
        tu_from(LT_F8E4M3FN, 0, d0, (const double[]){0})};
    tu_graph g = tu_single(LT_OP_Q_LINEAR_MAT_MUL, 21, 8, 1);
    lt_value *y = ew_exec(&g, 8, in, LT_OK);
    tu_free(&g);
    /* A @ B = [[4, 512], [-1, -256]], times 0.5 / 0.25: [[8, 1024 -> 448], [-2, -512 -> -448]] */
    assert_int_equal(y->t.dtype, LT_F8E4M3FN);
    const double want[4] = {8, 448, -2, -448};
    for (int i = 0; i < 4; i++)
        assert_true(lt_narrow_to_f64(LT_F8E4M3FN, ((uint8_t *)y->t.data)[i]) == want[i]);
    lt_value_free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_every_code),
        cmocka_unit_test(encode_vs_ml_dtypes),
        cmocka_unit_test(cast_kernel_vs_ml_dtypes),
        cmocka_unit_test(ints_wrap_like_the_reference),
        cmocka_unit_test(e8m0_rounding_and_specials),
        cmocka_unit_test(spec_edges),
        cmocka_unit_test(packing),
        cmocka_unit_test(export_round_trip),
        cmocka_unit_test(npy_forms),
        cmocka_unit_test(qlinearmatmul_float8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
