/* lt_ir_to_f64 widens only what is differentiated: float arithmetic that
 * computes integers from integer sources (DeBERTa-v2's and T5's relative
 * position buckets: positions cast to float, log, divide, ceil, cast back
 * to int64, a Gather with the result) keeps float32, as PyTorch computes
 * it in float32 in a float64 model. Widened, the bucket at |i - j| = 63 of
 * tests/data/f64_bucket.onnx comes out one higher and the float64 model
 * gathers another row of the bias table. The float64 model must give the
 * float32 buckets and, with them, the float32 gradients to float32
 * rounding; the float masks made from the integer mask stay float32 and
 * are cast where they meet the widened activations. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL LT_SOURCE_DIR "/tests/data/f64_bucket.onnx"
#define L 64

static const char *const names[2] = {"x", "mask"};

/* x in [-1, 1) and a mask with the last 14 positions off */
static void make_inputs(lt_value **in32, lt_value **in64)
{
    int64_t d2[2] = {L, L}, d1[1] = {L};
    double mk[L];
    for (int i = 0; i < L; i++)
        mk[i] = i < 50;
    in32[0] = tu_rand(LT_F32, 2, d2, -1, 1, 31);
    in32[1] = tu_from(LT_I64, 1, d1, mk);
    in64[0] = lt_value_to_f64(in32[0]);
    in64[1] = lt_value_ref(in32[1]);
    assert_non_null(in64[0]);
}

static lt_model *load(bool f64, bool grad)
{
    lt_err err;
    lt_model *m;
    if (lt_model_load(MODEL, &m, &err) != LT_OK || (f64 && lt_model_to_f64(m, &err) != LT_OK))
        fail_msg("%s", err.msg);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    if (grad && lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s", err.msg);
    tu_verify(m);
    return m;
}

static int run(lt_model *m, lt_value **in, lt_value **outs)
{
    lt_err err;
    lt_session *s;
    if (lt_session_new(m, &s, &err) != LT_OK || lt_session_run(s, 2, names, in, outs, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    return lt_model_num_outputs(m);
}

static const lt_ival *value_named(const lt_model *m, const char *name)
{
    for (int i = 0; i < m->nvalues; i++)
        if (m->values[i]->name && !strcmp(m->values[i]->name, name))
            return m->values[i];
    fail_msg("no value %s", name);
    return NULL;
}

static void free_all(lt_value **v, int n)
{
    for (int i = 0; i < n; i++)
        lt_value_free(v[i]);
}

/* the forward model: the same buckets, the outputs to float32 rounding */
static void buckets_stay_float32(void **state)
{
    (void)state;
    lt_value *in32[2], *in64[2], *o32[2] = {0}, *o64[2] = {0};
    make_inputs(in32, in64);
    lt_model *m32 = load(false, false), *m64 = load(true, false);
    /* the integer arithmetic and the masks made from `mask` keep float32;
     * the parameters and what they reach widen */
    const char *kept[] = {"abs_f", "ratio", "log", "frac", "scaled", "ceil", "log_pos", "bucket_f", "m", "madd"};
    for (size_t k = 0; k < sizeof kept / sizeof *kept; k++)
        if (value_named(m64, kept[k])->type.dtype != LT_F32)
            fail_msg("%s widened", kept[k]);
    const char *wide[] = {"bias", "xw", "z0", "z", "t", "y"};
    for (size_t k = 0; k < sizeof wide / sizeof *wide; k++)
        if (value_named(m64, wide[k])->type.dtype != LT_F64)
            fail_msg("%s kept float32", wide[k]);
    assert_int_equal(tu_param(m64, "rel_bias")->dtype, LT_F64);
    assert_int_equal(tu_param(m64, "w")->dtype, LT_F64);
    assert_int_equal(run(m32, in32, o32), 2);
    assert_int_equal(run(m64, in64, o64), 2);
    const lt_tensor *b32 = lt_value_tensor(o32[1]), *b64 = lt_value_tensor(o64[1]);
    assert_int_equal(b64->dtype, LT_I64);
    assert_int_equal(b32->numel, L * L);
    assert_int_equal(b64->numel, L * L);
    for (int64_t i = 0; i < b32->numel; i++)
        if (((const int64_t *)b32->data)[i] != ((const int64_t *)b64->data)[i])
            fail_msg("bucket %lld: %lld in float64, %lld in float32", (long long)i,
                     (long long)((const int64_t *)b64->data)[i], (long long)((const int64_t *)b32->data)[i]);
    /* the boundary the float64 arithmetic gets wrong: |i - j| = 63 */
    assert_int_equal(((const int64_t *)b64->data)[L - 1], 31);
    assert_int_equal(((const int64_t *)b64->data)[(L - 1) * L], -31);
    assert_int_equal(lt_value_tensor(o64[0])->dtype, LT_F64);
    double e = tu_max_rel_err(lt_value_tensor(o64[0]), lt_value_tensor(o32[0]));
    if (!(e < 1e-6))
        fail_msg("y: float64 and float32 differ by %.3g", e);
    free_all(o32, 2);
    free_all(o64, 2);
    free_all(in32, 2);
    free_all(in64, 2);
    lt_model_free(m32);
    lt_model_free(m64);
}

/* the gradient program: every gradient of the float64 model is the
 * float32 one to float32 rounding */
static void gradients_match_float32(void **state)
{
    (void)state;
    lt_value *in32[2], *in64[2], *o32[8] = {0}, *o64[8] = {0};
    make_inputs(in32, in64);
    lt_model *m32 = load(false, true), *m64 = load(true, true);
    int n = lt_model_num_outputs(m32);
    assert_int_equal(n, 3); /* the loss, rel_bias's and w's gradients */
    assert_int_equal(lt_model_num_outputs(m64), n);
    run(m32, in32, o32);
    run(m64, in64, o64);
    for (int i = 0; i < n; i++) {
        const char *name = lt_model_output_name(m64, i);
        assert_string_equal(name, lt_model_output_name(m32, i));
        const lt_tensor *g64 = lt_value_tensor(o64[i]), *g32 = lt_value_tensor(o32[i]);
        assert_int_equal(g64->dtype, LT_F64);
        double e = tu_max_rel_err(g64, g32);
        if (!(e < 1e-5))
            fail_msg("%s: float64 and float32 differ by %.3g of the largest", name, e);
    }
    free_all(o32, n);
    free_all(o64, n);
    free_all(in32, 2);
    free_all(in64, 2);
    lt_model_free(m32);
    lt_model_free(m64);
}

/* lt_grad_check on it: the float64 gradients against finite differences
 * of the float64 model */
static void grad_check_passes(void **state)
{
    (void)state;
    lt_value *in32[2], *in64[2];
    make_inputs(in32, in64);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check(MODEL, &o, 2, names, in32, 65, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nrows, 2);
    for (int r = 0; r < nrows; r++)
        if (!(rows[r].err64 < 1e-6) || !(rows[r].err32 < 1e-2))
            fail_msg("%s: rel.err %.3g in float64, %.3g in float32", rows[r].name, rows[r].err64, rows[r].err32);
    free(rows);
    free_all(in32, 2);
    free_all(in64, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(buckets_stay_float32), cmocka_unit_test(gradients_match_float32),
                                       cmocka_unit_test(grad_check_passes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
