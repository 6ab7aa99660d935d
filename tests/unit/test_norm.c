/* Norm family kernels against straightforward double-precision loops:
 * BatchNormalization (inference, training, old opsets), Instance/Layer/Group
 * normalization, LRN, Dropout. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runs g on inputs (NULL entries omitted), asserting success. */
static void run_ok(tu_graph *g, lt_value *const *in, lt_value **out)
{
    lt_err err = {{0}};
    lt_status s = tu_run(g, in, out, &err);
    if (s != LT_OK)
        fail_msg("run failed: %s", err.msg);
}

static lt_status run_status(tu_graph *g, lt_value *const *in, lt_value **out, lt_err *err)
{
    return tu_run(g, in, out, err);
}

static void free_all(lt_value **v, int n)
{
    for (int i = 0; i < n; i++)
        lt_value_free(v[i]);
}

/* ---- BatchNormalization ---- */

/* y[n, c, s] with given per-channel mean/var. */
static void bn_ref(const lt_value *x, int64_t n, int64_t c, int64_t s, const double *g, const double *b,
                   const double *m, const double *v, double eps, double *y)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < c; j++)
            for (int64_t e = 0; e < s; e++) {
                int64_t q = (i * c + j) * s + e;
                y[q] = (tu_get(x, q) - m[j]) / sqrt(v[j] + eps) * g[j] + b[j];
            }
}

static void vals(const lt_value *v, double *out)
{
    for (int64_t i = 0; i < v->t.numel; i++)
        out[i] = tu_get(v, i);
}

static void batchnorm_inference(void **state)
{
    (void)state;
    const uint64_t seed = 11;
    int64_t xd[4] = {2, 3, 4, 5}, cd[1] = {3};
    lt_dtype types[3] = {LT_F32, LT_F64, LT_F16};
    for (int ti = 0; ti < 3; ti++) {
        tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 1);
        tu_attr_float(&g, "epsilon", 1e-2f);
        lt_value *in[5] = {
            tu_rand(types[ti], 4, xd, -2, 3, seed), tu_rand(LT_F32, 1, cd, 0.5, 2, seed + 1),
            tu_rand(LT_F32, 1, cd, -1, 1, seed + 2), tu_rand(types[ti], 1, cd, -0.5, 0.5, seed + 3),
            tu_rand(types[ti], 1, cd, 0.2, 1.5, seed + 4)};
        double p[4][3], want[120];
        for (int i = 0; i < 4; i++)
            vals(in[i + 1], p[i]);
        bn_ref(in[0], 2, 3, 20, p[0], p[1], p[2], p[3], (double)1e-2f, want);
        lt_value *out[1] = {0};
        run_ok(&g, in, out);
        assert_int_equal(out[0]->t.dtype, types[ti]);
        tu_assert_close(out[0], want, 120, types[ti] == LT_F16 ? 4e-3 : 1e-5, 1e-5, seed);
        free_all(in, 5);
        free_all(out, 1);
        tu_free(&g);
    }
}

static void batchnorm_training(void **state)
{
    (void)state;
    const uint64_t seed = 12;
    int64_t xd[3] = {4, 3, 6}, cd[1] = {3};
    tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 3);
    tu_attr_int(&g, "training_mode", 1);
    tu_attr_float(&g, "momentum", 0.7f);
    lt_value *in[5] = {tu_rand(LT_F32, 3, xd, -2, 5, seed), tu_rand(LT_F32, 1, cd, 0.5, 2, seed + 1),
                       tu_rand(LT_F32, 1, cd, -1, 1, seed + 2), tu_rand(LT_F32, 1, cd, -0.5, 0.5, seed + 3),
                       tu_rand(LT_F32, 1, cd, 0.2, 1.5, seed + 4)};
    double p[4][3], bm[3] = {0}, bv[3] = {0}, want[72], rm[3], rv[3];
    for (int i = 0; i < 4; i++)
        vals(in[i + 1], p[i]);
    for (int j = 0; j < 3; j++) {
        for (int i = 0; i < 4; i++)
            for (int e = 0; e < 6; e++)
                bm[j] += tu_get(in[0], (i * 3 + j) * 6 + e) / 24;
        for (int i = 0; i < 4; i++)
            for (int e = 0; e < 6; e++)
                bv[j] += pow(tu_get(in[0], (i * 3 + j) * 6 + e) - bm[j], 2) / 24;
        double mom = (double)0.7f;
        rm[j] = p[2][j] * mom + bm[j] * (1 - mom);
        rv[j] = p[3][j] * mom + bv[j] * (1 - mom);
    }
    bn_ref(in[0], 4, 3, 6, p[0], p[1], bm, bv, 1e-5, want);
    lt_value *out[3] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 72, 1e-5, 1e-5, seed);
    tu_assert_close(out[1], rm, 3, 1e-5, 1e-6, seed);
    tu_assert_close(out[2], rv, 3, 1e-5, 1e-6, seed);
    free_all(in, 5);
    free_all(out, 3);
    tu_free(&g);
}

/* Opset 9 asks for training through its extra outputs; saved_mean and
 * saved_var are the batch statistics. */
static void batchnorm_opset9_saved_stats(void **state)
{
    (void)state;
    const uint64_t seed = 13;
    int64_t xd[2] = {5, 2}, cd[1] = {2};
    tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 9, 5, 5);
    lt_value *in[5] = {tu_rand(LT_F64, 2, xd, -2, 5, seed), tu_rand(LT_F64, 1, cd, 0.5, 2, seed + 1),
                       tu_rand(LT_F64, 1, cd, -1, 1, seed + 2), tu_rand(LT_F64, 1, cd, -0.5, 0.5, seed + 3),
                       tu_rand(LT_F64, 1, cd, 0.2, 1.5, seed + 4)};
    double bm[2] = {0}, bv[2] = {0};
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < 5; i++)
            bm[j] += tu_get(in[0], i * 2 + j) / 5;
        for (int i = 0; i < 5; i++)
            bv[j] += pow(tu_get(in[0], i * 2 + j) - bm[j], 2) / 5;
    }
    lt_value *out[5] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[3], bm, 2, 1e-12, 1e-12, seed);
    tu_assert_close(out[4], bv, 2, 1e-12, 1e-12, seed);
    free_all(in, 5);
    free_all(out, 5);
    tu_free(&g);
}

/* spatial = 0 (opset 7): statistics per activation, params shaped (C, D). */
static void batchnorm_spatial0(void **state)
{
    (void)state;
    const uint64_t seed = 14;
    int64_t xd[3] = {3, 2, 4}, pd[2] = {2, 4};
    tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 7, 5, 1);
    tu_attr_int(&g, "spatial", 0);
    lt_value *in[5] = {tu_rand(LT_F32, 3, xd, -2, 5, seed), tu_rand(LT_F32, 2, pd, 0.5, 2, seed + 1),
                       tu_rand(LT_F32, 2, pd, -1, 1, seed + 2), tu_rand(LT_F32, 2, pd, -0.5, 0.5, seed + 3),
                       tu_rand(LT_F32, 2, pd, 0.2, 1.5, seed + 4)};
    double p[4][8], want[24];
    for (int i = 0; i < 4; i++)
        vals(in[i + 1], p[i]);
    bn_ref(in[0], 3, 8, 1, p[0], p[1], p[2], p[3], 1e-5, want);
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 24, 1e-5, 1e-5, seed);
    free_all(in, 5);
    free_all(out, 1);
    tu_free(&g);
}

static void batchnorm_bad_params(void **state)
{
    (void)state;
    int64_t xd[2] = {2, 3}, cd[1] = {3}, bad[1] = {4};
    tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 1);
    lt_value *in[5] = {tu_rand(LT_F32, 2, xd, -1, 1, 1), tu_rand(LT_F32, 1, bad, 1, 2, 2),
                       tu_rand(LT_F32, 1, cd, 1, 2, 3), tu_rand(LT_F32, 1, cd, 1, 2, 4),
                       tu_rand(LT_F32, 1, cd, 1, 2, 5)};
    lt_value *out[1] = {0};
    lt_err err = {{0}};
    assert_int_equal(run_status(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "scale"));
    free_all(in, 5);
    tu_free(&g);
}

/* ---- Instance / Layer / Group ---- */

/* Normalizes rows of length d of x in place of y with eps; no affine. */
static void rows_ref(const lt_value *x, int64_t rows, int64_t d, double eps, double *y, double *mean, double *inv)
{
    for (int64_t r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < d; j++)
            m += tu_get(x, r * d + j);
        m /= (double)d;
        for (int64_t j = 0; j < d; j++)
            v += pow(tu_get(x, r * d + j) - m, 2);
        v /= (double)d;
        for (int64_t j = 0; j < d; j++)
            y[r * d + j] = (tu_get(x, r * d + j) - m) / sqrt(v + eps);
        if (mean)
            mean[r] = m;
        if (inv)
            inv[r] = 1 / sqrt(v + eps);
    }
}

static void instancenorm(void **state)
{
    (void)state;
    const uint64_t seed = 21;
    int64_t xd[4] = {2, 3, 2, 5}, cd[1] = {3};
    lt_dtype types[2] = {LT_F32, LT_F64};
    for (int ti = 0; ti < 2; ti++) {
        tu_graph g = tu_single(LT_OP_INSTANCE_NORMALIZATION, 6, 3, 1);
        tu_attr_float(&g, "epsilon", 1e-3f);
        lt_value *in[3] = {tu_rand(types[ti], 4, xd, -3, 3, seed), tu_rand(types[ti], 1, cd, 0.5, 2, seed + 1),
                           tu_rand(types[ti], 1, cd, -1, 1, seed + 2)};
        double want[60];
        rows_ref(in[0], 6, 10, (double)1e-3f, want, NULL, NULL);
        for (int q = 0; q < 60; q++)
            want[q] = want[q] * tu_get(in[1], (q / 10) % 3) + tu_get(in[2], (q / 10) % 3);
        lt_value *out[1] = {0};
        run_ok(&g, in, out);
        tu_assert_close(out[0], want, 60, 1e-5, 1e-5, seed);
        free_all(in, 3);
        free_all(out, 1);
        tu_free(&g);
    }
}

static void layernorm_axis_and_stats(void **state)
{
    (void)state;
    const uint64_t seed = 31;
    int64_t xd[3] = {2, 3, 4}, sd[2] = {3, 4};
    tu_graph g = tu_single(LT_OP_LAYER_NORMALIZATION, 17, 3, 3);
    tu_attr_int(&g, "axis", 1);
    tu_attr_float(&g, "epsilon", 1e-2f);
    lt_value *in[3] = {tu_rand(LT_F32, 3, xd, -3, 3, seed), tu_rand(LT_F32, 2, sd, 0.5, 2, seed + 1),
                       tu_rand(LT_F32, 2, sd, -1, 1, seed + 2)};
    double want[24], mean[2], inv[2];
    rows_ref(in[0], 2, 12, (double)1e-2f, want, mean, inv);
    for (int q = 0; q < 24; q++)
        want[q] = want[q] * tu_get(in[1], q % 12) + tu_get(in[2], q % 12);
    lt_value *out[3] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 24, 1e-5, 1e-5, seed);
    tu_assert_close(out[1], mean, 2, 1e-5, 1e-6, seed);
    tu_assert_close(out[2], inv, 2, 1e-5, 1e-6, seed);
    assert_int_equal(out[1]->t.rank, 3);
    assert_int_equal(out[1]->t.dims[0], 2);
    assert_int_equal(out[1]->t.dims[1], 1);
    assert_int_equal(out[1]->t.dims[2], 1);
    assert_int_equal(out[2]->t.dtype, LT_F32);
    free_all(in, 3);
    free_all(out, 3);
    tu_free(&g);
}

/* float32 with one Scale row (and one B row or none): the one-visit row
 * kernel, serial and split over the threads (more than LT_PAR_ELEMS
 * elements), odd widths past the 16-lane vectors, rows offset by a large
 * mean; the Mean and InvStdDev outputs too. A Scale that repeats over an
 * outer axis ([3, 4] above, layernorm_broadcast_params) keeps the general
 * path. */
static void layernorm_rows_f32(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{16, 28, 32}, {3, 5, 33}, {2, 7, 1}, {64, 128, 72}};
    for (int c = 0; c < 4; c++) {
        uint64_t seed = 60 + (uint64_t)c * 5;
        int64_t rows = shapes[c][0] * shapes[c][1], d = shapes[c][2], sd[1] = {d};
        bool with_bias = c != 1;
        tu_graph g = tu_single(LT_OP_LAYER_NORMALIZATION, 17, with_bias ? 3 : 2, 3);
        tu_attr_float(&g, "epsilon", 1e-3f);
        lt_value *in[3] = {tu_rand(LT_F32, 3, shapes[c], -2, 2, seed), tu_rand(LT_F32, 1, sd, 0.5, 2, seed + 1),
                           with_bias ? tu_rand(LT_F32, 1, sd, -1, 1, seed + 2) : NULL};
        /* a large common offset in one row: the two-pass variance */
        for (int64_t j = 0; j < d; j++)
            lt_tensor_set_f64(&in[0]->t, 3 * d + j, 100.0 + tu_get(in[0], 3 * d + j));
        double *want = malloc(sizeof(double) * (size_t)(rows * d)), *mean = malloc(sizeof(double) * (size_t)rows);
        double *inv = malloc(sizeof(double) * (size_t)rows);
        assert_non_null(want);
        assert_non_null(mean);
        assert_non_null(inv);
        rows_ref(in[0], rows, d, (double)1e-3f, want, mean, inv);
        for (int64_t q = 0; q < rows * d; q++)
            want[q] = want[q] * tu_get(in[1], q % d) + (with_bias ? tu_get(in[2], q % d) : 0.0);
        lt_value *out[3] = {0};
        run_ok(&g, in, out);
        tu_assert_close(out[0], want, rows * d, 1e-5, 1e-5, seed);
        tu_assert_close(out[1], mean, rows, 1e-6, 1e-6, seed);
        tu_assert_close(out[2], inv, rows, 1e-5, 1e-6, seed);
        assert_int_equal(out[1]->t.rank, 3);
        assert_int_equal(out[1]->t.dims[2], 1);
        free(want);
        free(mean);
        free(inv);
        free_all(in, with_bias ? 3 : 2);
        free_all(out, 3);
        tu_free(&g);
    }
}

/* Scale broadcasting over an outer dim too ([3, 4] with axis -1), bias
 * only over the normalized dim, double precision. */
static void layernorm_broadcast_params(void **state)
{
    (void)state;
    const uint64_t seed = 32;
    int64_t xd[3] = {2, 3, 4}, sd[2] = {3, 4}, bd[1] = {4};
    tu_graph g = tu_single(LT_OP_LAYER_NORMALIZATION, 17, 3, 1);
    lt_value *in[3] = {tu_rand(LT_F64, 3, xd, -3, 3, seed), tu_rand(LT_F64, 2, sd, 0.5, 2, seed + 1),
                       tu_rand(LT_F64, 1, bd, -1, 1, seed + 2)};
    double want[24];
    rows_ref(in[0], 6, 4, (double)1e-5f, want, NULL, NULL);
    for (int q = 0; q < 24; q++)
        want[q] = want[q] * tu_get(in[1], q % 12) + tu_get(in[2], q % 4);
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 24, 1e-12, 1e-12, seed);
    free_all(in, 3);
    free_all(out, 1);
    tu_free(&g);
}

static void layernorm_errors(void **state)
{
    (void)state;
    int64_t xd[2] = {2, 3}, sd[1] = {5};
    tu_graph g = tu_single(LT_OP_LAYER_NORMALIZATION, 17, 2, 1);
    lt_value *in[2] = {tu_rand(LT_F32, 2, xd, -3, 3, 1), tu_rand(LT_F32, 1, sd, 0.5, 2, 2)};
    lt_value *out[1] = {0};
    lt_err err = {{0}};
    assert_int_equal(run_status(&g, in, out, &err), LT_ERR_INVALID); /* scale of 5 vs 3 */
    tu_free(&g);
    g = tu_single(LT_OP_LAYER_NORMALIZATION, 17, 2, 1);
    tu_attr_int(&g, "axis", 2);
    assert_int_equal(run_status(&g, in, out, &err), LT_ERR_INVALID); /* axis out of range */
    assert_non_null(strstr(err.msg, "axis"));
    free_all(in, 2);
    tu_free(&g);
}

static void groupnorm(void **state)
{
    (void)state;
    const uint64_t seed = 41;
    int64_t xd[3] = {2, 6, 3};
    for (int v21 = 0; v21 < 2; v21++) {
        int64_t pd[1] = {v21 ? 6 : 3};
        tu_graph g = tu_single(LT_OP_GROUP_NORMALIZATION, v21 ? 21 : 18, 3, 1);
        tu_attr_int(&g, "num_groups", 3);
        lt_value *in[3] = {tu_rand(LT_F32, 3, xd, -3, 3, seed), tu_rand(LT_F32, 1, pd, 0.5, 2, seed + 1),
                           tu_rand(LT_F32, 1, pd, -1, 1, seed + 2)};
        double want[36];
        rows_ref(in[0], 6, 6, (double)1e-5f, want, NULL, NULL);
        for (int q = 0; q < 36; q++) {
            int ch = (q / 3) % 6, p = v21 ? ch : ch / 2;
            want[q] = want[q] * tu_get(in[1], p) + tu_get(in[2], p);
        }
        lt_value *out[1] = {0};
        run_ok(&g, in, out);
        tu_assert_close(out[0], want, 36, 1e-5, 1e-5, seed);
        free_all(in, 3);
        free_all(out, 1);
        tu_free(&g);
    }
}

static void groupnorm_errors(void **state)
{
    (void)state;
    int64_t xd[3] = {2, 6, 3}, pd[1] = {4};
    tu_graph g = tu_single(LT_OP_GROUP_NORMALIZATION, 18, 3, 1);
    tu_attr_int(&g, "num_groups", 4); /* does not divide 6 */
    lt_value *in[3] = {tu_rand(LT_F32, 3, xd, -3, 3, 1), tu_rand(LT_F32, 1, pd, 0.5, 2, 2),
                       tu_rand(LT_F32, 1, pd, -1, 1, 3)};
    lt_value *out[1] = {0};
    lt_err err = {{0}};
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "num_groups"));
    tu_free(&g);
    g = tu_single(LT_OP_GROUP_NORMALIZATION, 18, 3, 1);
    tu_attr_int(&g, "num_groups", 3); /* scale of 4 fits neither 3 groups nor 6 channels */
    assert_int_equal(tu_run(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "scale"));
    free_all(in, 3);
    tu_free(&g);
}

/* ---- LRN ---- */
static void lrn_even_size(void **state)
{
    (void)state;
    const uint64_t seed = 51;
    int64_t xd[4] = {2, 5, 2, 3};
    tu_graph g = tu_single(LT_OP_LRN, 13, 1, 1);
    tu_attr_int(&g, "size", 4);
    tu_attr_float(&g, "alpha", 0.01f);
    tu_attr_float(&g, "beta", 0.6f);
    tu_attr_float(&g, "bias", 1.5f);
    lt_value *in[1] = {tu_rand(LT_F32, 4, xd, -3, 3, seed)};
    double want[60];
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 5; c++)
            for (int s = 0; s < 6; s++) {
                double sq = 0;
                /* channels c - 1 .. c + 2 for size 4 */
                for (int q = c - 1; q <= c + 2; q++)
                    if (q >= 0 && q < 5)
                        sq += pow(tu_get(in[0], (n * 5 + q) * 6 + s), 2);
                int64_t i = (n * 5 + c) * 6 + s;
                want[i] = tu_get(in[0], i) / pow(1.5 + (double)0.01f / 4 * sq, (double)0.6f);
            }
    lt_value *out[1] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 60, 1e-5, 1e-6, seed);
    free_all(in, 1);
    free_all(out, 1);
    tu_free(&g);
}

/* ---- Dropout ---- */
static void dropout_inference(void **state)
{
    (void)state;
    int64_t xd[2] = {3, 4}, sd[1] = {1};
    int opsets[3] = {7, 10, 13};
    for (int oi = 0; oi < 3; oi++) {
        tu_graph g = tu_single(LT_OP_DROPOUT, opsets[oi], opsets[oi] >= 12 ? 2 : 1, 2);
        tu_attr_float(&g, "ratio", 0.3f);
        lt_value *in[2] = {tu_rand(LT_F32, 2, xd, -3, 3, 61), tu_rand(LT_F32, 1, sd, 0.4, 0.5, 62)};
        double want[12], ones[12];
        for (int i = 0; i < 12; i++) {
            want[i] = tu_get(in[0], i);
            ones[i] = 1;
        }
        lt_value *out[2] = {0};
        run_ok(&g, in, out);
        tu_assert_close(out[0], want, 12, 0, 0, 61);
        tu_assert_close(out[1], ones, 12, 0, 0, 61);
        assert_int_equal(out[1]->t.dtype, opsets[oi] >= 10 ? LT_BOOL : LT_F32);
        free_all(in, 2);
        free_all(out, 2);
        tu_free(&g);
    }
}

/* With a seed the mask is numpy's: RandomState(0).uniform(size=10) >= 0.5. */
static void dropout_training_seeded(void **state)
{
    (void)state;
    const double u[10] = {0.5488135, 0.71518937, 0.60276338, 0.54488318, 0.4236548,
                          0.64589411, 0.43758721, 0.891773, 0.96366276, 0.38344152};
    int64_t xd[2] = {2, 5}, sd[1] = {1};
    tu_graph g = tu_single(LT_OP_DROPOUT, 13, 3, 2);
    tu_attr_int(&g, "seed", 0);
    double one = 1, r = 0.5;
    lt_value *in[3] = {tu_rand(LT_F32, 2, xd, -3, 3, 63), tu_from(LT_F32, 0, sd, &r), tu_from(LT_BOOL, 0, sd, &one)};
    double want[10], mask[10];
    for (int i = 0; i < 10; i++) {
        mask[i] = u[i] >= 0.5;
        want[i] = mask[i] * tu_get(in[0], i) * 2;
    }
    lt_value *out[2] = {0};
    run_ok(&g, in, out);
    tu_assert_close(out[0], want, 10, 1e-7, 0, 63);
    tu_assert_close(out[1], mask, 10, 0, 0, 63);
    free_all(in, 3);
    free_all(out, 2);
    tu_free(&g);
}

static void dropout_training_random(void **state)
{
    (void)state;
    int64_t xd[1] = {20000}, sd[1] = {1};
    tu_graph g = tu_single(LT_OP_DROPOUT, 12, 3, 2);
    double one = 1, r = 0.3;
    lt_value *in[3] = {tu_rand(LT_F32, 1, xd, 0.5, 3, 64), tu_from(LT_F64, 0, sd, &r), tu_from(LT_BOOL, 0, sd, &one)};
    lt_value *out[2] = {0};
    run_ok(&g, in, out);
    int64_t kept = 0;
    for (int64_t i = 0; i < 20000; i++) {
        double y = tu_get(out[0], i), m = tu_get(out[1], i);
        if (m) {
            kept++;
            assert_true(fabs(y - tu_get(in[0], i) / 0.7) < 1e-5);
        } else {
            assert_true(y == 0);
        }
    }
    /* 20000 draws at p = 0.7: 7 standard deviations is about 0.02 */
    assert_true(fabs((double)kept / 20000 - 0.7) < 0.02);
    free_all(in, 3);
    free_all(out, 2);
    tu_free(&g);
}

static void dropout_bad_ratio(void **state)
{
    (void)state;
    int64_t xd[1] = {4}, sd[1] = {1};
    tu_graph g = tu_single(LT_OP_DROPOUT, 13, 3, 1);
    double one = 1, r = 1.5;
    lt_value *in[3] = {tu_rand(LT_F32, 1, xd, 0.5, 3, 65), tu_from(LT_F32, 0, sd, &r), tu_from(LT_BOOL, 0, sd, &one)};
    lt_value *out[1] = {0};
    lt_err err = {{0}};
    assert_int_equal(run_status(&g, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "ratio"));
    free_all(in, 3);
    tu_free(&g);
}

/* ---- shape inference ---- */
static void infer_shapes(void **state)
{
    (void)state;
    lt_err err = {{0}};
    int64_t xd[3] = {2, 3, 4};
    tu_graph g = tu_single(LT_OP_LAYER_NORMALIZATION, 17, 2, 3);
    tu_attr_int(&g, "axis", -2);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F64, 3, xd);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    const lt_type *t = &g.node->out[1]->type;
    assert_int_equal(t->dtype, LT_F32);
    assert_int_equal(t->rank, 3);
    assert_int_equal(t->dims[0].v, 2);
    assert_int_equal(t->dims[1].v, 1);
    assert_int_equal(g.node->out[0]->type.dtype, LT_F64);
    tu_free(&g);

    g = tu_single(LT_OP_DROPOUT, 13, 1, 2);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 3, xd);
    assert_int_equal(lt_infer_module(g.m, &err), LT_OK);
    assert_int_equal(g.node->out[1]->type.dtype, LT_BOOL);
    assert_int_equal(g.node->out[1]->type.dims[2].v, 4);
    tu_free(&g);

    g = tu_single(LT_OP_GROUP_NORMALIZATION, 18, 3, 1);
    tu_attr_int(&g, "num_groups", 2);
    lt_type_tensor(&g.m->main->params[0]->type, LT_F32, 3, xd);
    assert_int_equal(lt_infer_module(g.m, &err), LT_ERR_INVALID); /* 2 does not divide 3 */
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batchnorm_inference),
        cmocka_unit_test(batchnorm_training),
        cmocka_unit_test(batchnorm_opset9_saved_stats),
        cmocka_unit_test(batchnorm_spatial0),
        cmocka_unit_test(batchnorm_bad_params),
        cmocka_unit_test(instancenorm),
        cmocka_unit_test(layernorm_axis_and_stats),
        cmocka_unit_test(layernorm_rows_f32),
        cmocka_unit_test(layernorm_broadcast_params),
        cmocka_unit_test(layernorm_errors),
        cmocka_unit_test(groupnorm),
        cmocka_unit_test(groupnorm_errors),
        cmocka_unit_test(lrn_even_size),
        cmocka_unit_test(dropout_inference),
        cmocka_unit_test(dropout_training_seeded),
        cmocka_unit_test(dropout_training_random),
        cmocka_unit_test(dropout_bad_ratio),
        cmocka_unit_test(infer_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
