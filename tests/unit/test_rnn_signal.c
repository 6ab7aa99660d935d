/* DFT, STFT and MelWeightMatrix against the defining sums in double and a
 * hand-checked mel matrix. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static lt_value *run(tu_graph *g, int nin, lt_value **in)
{
    lt_value *dummy = tu_from(LT_F32, 0, NULL, (double[]){0}), *vals[8];
    for (int i = 0; i < nin; i++) {
        vals[i] = in[i] ? in[i] : dummy;
        if (!in[i])
            tu_omit_input(g, i);
    }
    lt_value *out[1] = {NULL};
    lt_err err;
    lt_status s = tu_run(g, vals, out, &err);
    lt_value_free(dummy);
    if (s != LT_OK)
        fail_msg("run failed: %s", err.msg);
    return out[0];
}

/* x [outer, n_in, inner, c] -> direct DFT of length n along axis 1 */
static void ref_dft(const lt_value *x, int64_t outer, int64_t nin, int64_t inner, int64_t c, int64_t n, bool inv,
                    int64_t nout, double *y)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            for (int64_t k = 0; k < nout; k++) {
                double sr = 0, si = 0;
                for (int64_t j = 0; j < n && j < nin; j++) {
                    int64_t e = ((o * nin + j) * inner + i) * c;
                    double xr = tu_get(x, e), xi = c == 2 ? tu_get(x, e + 1) : 0;
                    double a = (inv ? 2 : -2) * M_PI * (double)((j * k) % n) / (double)n;
                    sr += xr * cos(a) - xi * sin(a);
                    si += xr * sin(a) + xi * cos(a);
                }
                int64_t e = ((o * nout + k) * inner + i) * 2;
                y[e] = inv ? sr / n : sr;
                y[e + 1] = inv ? si / n : si;
            }
}

/* x [outer, n_in, inner, c], the first bins of a Hermitian spectrum along
 * axis 1 -> the real signal of length n: y_j = (1/n) sum over k < n/2 + 1
 * of w_k Re(X_k e^(2 pi i jk / n)), w_k = 2 for the bins that stand for
 * their mirror image n - k too, 1 for bin 0 and (n even) bin n/2 */
static void ref_irfft(const lt_value *x, int64_t outer, int64_t nin, int64_t inner, int64_t c, int64_t n, double *y)
{
    int64_t h = n / 2 + 1;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t k = 0; k < h && k < nin; k++) {
                    int64_t e = ((o * nin + k) * inner + i) * c;
                    double xr = tu_get(x, e), xi = c == 2 ? tu_get(x, e + 1) : 0;
                    double a = 2 * M_PI * (double)((j * k) % n) / (double)n, w = k == 0 || 2 * k == n ? 1 : 2;
                    s += w * (xr * cos(a) - xi * sin(a));
                }
                y[(o * n + j) * inner + i] = s / (double)n;
            }
}

static void check_dft(int64_t outer, int64_t nin, int64_t inner, int64_t c, int64_t len, bool inv, bool onesided,
                      lt_dtype dt, uint64_t seed)
{
    /* shape [outer, nin, inner, c] with axis 1 (or [outer, nin, c] when inner is 1 and axis -2) */
    tu_graph g = tu_single(LT_OP_DFT, 17, 2, 1);
    bool use_neg = inner == 1 && seed % 2;
    tu_attr_int(&g, "axis", use_neg ? -2 : 1);
    if (inv)
        tu_attr_int(&g, "inverse", 1);
    if (onesided)
        tu_attr_int(&g, "onesided", 1);
    lt_value *in[2] = {use_neg ? tu_rand(dt, 3, (int64_t[]){outer, nin, c}, -1, 1, seed)
                               : tu_rand(dt, 4, (int64_t[]){outer, nin, inner, c}, -1, 1, seed),
                       len > 0 ? tu_from(LT_I64, 0, NULL, (double[]){(double)len}) : NULL};
    /* inverse and onesided: an irfft to a real signal of length n */
    bool irfft = inv && onesided;
    int64_t n = len > 0 ? len : irfft ? 2 * (nin - 1) : nin, nout = onesided && !inv ? n / 2 + 1 : n;
    int64_t oc = irfft ? 1 : 2;
    lt_value *y = run(&g, 2, in);
    double *want = malloc(sizeof *want * (size_t)(outer * nout * inner * oc));
    if (irfft)
        ref_irfft(in[0], outer, nin, inner, c, n, want);
    else
        ref_dft(in[0], outer, nin, inner, c, n, inv, nout, want);
    double tol = dt == LT_F64 ? 1e-9 : 1e-4 * sqrt((double)n);
    assert_int_equal(y->t.dims[1], nout);
    assert_int_equal(y->t.dims[y->t.rank - 1], oc);
    tu_assert_close(y, want, outer * nout * inner * oc, tol, tol, seed);
    free(want);
    lt_value_free(y);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    tu_free(&g);
}

static void dft_lengths(void **state)
{
    (void)state;
    check_dft(2, 8, 3, 1, 0, false, false, LT_F32, 1);   /* radix-2 */
    check_dft(2, 10, 1, 2, 0, false, false, LT_F32, 2);  /* direct */
    check_dft(1, 100, 2, 2, 0, false, false, LT_F64, 3); /* Bluestein */
    check_dft(1, 128, 1, 1, 0, false, true, LT_F32, 4);  /* onesided */
    check_dft(3, 7, 2, 2, 0, true, false, LT_F64, 5);    /* inverse */
    check_dft(1, 12, 1, 1, 20, false, false, LT_F32, 6); /* zero padded */
    check_dft(2, 12, 2, 2, 5, false, false, LT_F32, 7);  /* truncated */
    check_dft(1, 151, 1, 2, 0, true, true, LT_F64, 9);   /* irfft, Bluestein (300) */
    check_dft(2, 5, 3, 2, 0, true, true, LT_F32, 12);    /* irfft, length 8 */
    check_dft(2, 4, 1, 2, 7, true, true, LT_F32, 13);    /* irfft, odd length, bins cut */
    check_dft(1, 3, 2, 2, 10, true, true, LT_F64, 14);   /* irfft, bins zero-padded */
    check_dft(1, 6, 1, 1, 0, true, true, LT_F32, 15);    /* irfft of real bins */
    check_dft(1, 1, 1, 1, 0, false, false, LT_F32, 11);
}

/* inverse and onesided by hand: the half spectrum of [1, 2, 3, 4] is
 * [10, -2 + 2i, -2]; imaginary parts on bins 0 and n/2 cannot belong to a
 * real signal and drop out. Three bins of an impulse with dft_length 5 give
 * the impulse back. Opset 20 takes the axis as an input. */
static void dft_irfft_hand(void **state)
{
    (void)state;
    for (int opset = 17; opset <= 20; opset += 3) {
        tu_graph g = tu_single(LT_OP_DFT, opset, opset >= 20 ? 3 : 2, 1);
        tu_attr_int(&g, "inverse", 1);
        tu_attr_int(&g, "onesided", 1);
        if (opset < 20)
            tu_attr_int(&g, "axis", 1);
        double xv[6] = {10, 5, -2, 2, -2, 7}, want[4] = {1, 2, 3, 4};
        lt_value *in[3] = {tu_from(LT_F32, 3, (int64_t[]){1, 3, 2}, xv), NULL,
                           opset >= 20 ? tu_from(LT_I64, 0, NULL, (double[]){1}) : NULL};
        lt_value *y = run(&g, opset >= 20 ? 3 : 2, in);
        assert_int_equal(y->t.rank, 3);
        assert_int_equal(y->t.dims[1], 4);
        assert_int_equal(y->t.dims[2], 1);
        tu_assert_close(y, want, 4, 1e-6, 1e-6, 0);
        lt_value_free(y);
        tu_free(&g);
        lt_value_free(in[0]);
        lt_value_free(in[2]);
    }
    tu_graph g = tu_single(LT_OP_DFT, 17, 2, 1);
    tu_attr_int(&g, "inverse", 1);
    tu_attr_int(&g, "onesided", 1);
    double xv[6] = {1, 0, 1, 0, 1, 0}, want[5] = {1, 0, 0, 0, 0};
    lt_value *in[2] = {tu_from(LT_F32, 3, (int64_t[]){1, 3, 2}, xv), tu_from(LT_I64, 0, NULL, (double[]){5})};
    lt_value *y = run(&g, 2, in);
    assert_int_equal(y->t.dims[1], 5);
    assert_int_equal(y->t.dims[2], 1);
    tu_assert_close(y, want, 5, 1e-6, 1e-6, 0);
    lt_value_free(y);
    tu_free(&g);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

static void stft_windowed(void **state)
{
    (void)state;
    int64_t L = 40, fl = 12, step = 5, frames = (L - fl) / step + 1, bins = fl / 2 + 1;
    lt_value *in[4] = {tu_rand(LT_F32, 3, (int64_t[]){2, L, 1}, -1, 1, 30), tu_from(LT_I64, 0, NULL, (double[]){5}),
                       tu_rand(LT_F32, 1, (int64_t[]){fl}, 0, 1, 31), NULL};
    tu_graph g = tu_single(LT_OP_STFT, 17, 4, 1);
    lt_value *y = run(&g, 4, in);
    double *want = malloc(sizeof *want * (size_t)(2 * frames * bins * 2));
    for (int64_t b = 0; b < 2; b++)
        for (int64_t f = 0; f < frames; f++)
            for (int64_t k = 0; k < bins; k++) {
                double sr = 0, si = 0;
                for (int64_t j = 0; j < fl; j++) {
                    double v = tu_get(in[0], b * L + f * step + j) * tu_get(in[2], j);
                    sr += v * cos(2 * M_PI * j * k / fl);
                    si -= v * sin(2 * M_PI * j * k / fl);
                }
                int64_t e = ((b * frames + f) * bins + k) * 2;
                want[e] = sr;
                want[e + 1] = si;
            }
    assert_int_equal(y->t.dims[1], frames);
    assert_int_equal(y->t.dims[2], bins);
    tu_assert_close(y, want, 2 * frames * bins * 2, 1e-4, 1e-4, 30);
    free(want);
    lt_value_free(y);
    tu_free(&g);
    /* no window: frame_length given, two-sided */
    lt_value_free(in[2]);
    in[2] = NULL;
    in[3] = tu_from(LT_I64, 0, NULL, (double[]){(double)fl});
    g = tu_single(LT_OP_STFT, 17, 4, 1);
    tu_attr_int(&g, "onesided", 0);
    y = run(&g, 4, in);
    assert_int_equal(y->t.dims[2], fl);
    /* bin 0 of frame 1 of batch 1 is the plain sum */
    double s = 0;
    for (int64_t j = 0; j < fl; j++)
        s += tu_get(in[0], L + step + j);
    assert_true(fabs(tu_get(y, ((1 * frames + 1) * fl) * 2) - s) < 1e-4);
    lt_value_free(y);
    tu_free(&g);
    for (int i = 0; i < 4; i++)
        lt_value_free(in[i]);
}

static void mel_matrix(void **state)
{
    (void)state;
    lt_value *in[5] = {tu_from(LT_I32, 0, NULL, (double[]){8}), tu_from(LT_I32, 0, NULL, (double[]){16}),
                       tu_from(LT_I32, 0, NULL, (double[]){8192}), tu_from(LT_F32, 0, NULL, (double[]){0}),
                       tu_from(LT_F32, 0, NULL, (double[]){4096})};
    tu_graph g = tu_single(LT_OP_MEL_WEIGHT_MATRIX, 17, 5, 1);
    lt_value *y = run(&g, 5, in);
    /* bins 0,1,2,3,4,5,6,7,8,9 after flooring: every triangle is one-sided */
    double want[9 * 8] = {0};
    int ones[8][2] = {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}, {5, 3}, {6, 4}, {7, 5}};
    for (int i = 0; i < 8; i++)
        want[ones[i][1] * 8 + ones[i][0]] = 1;
    assert_int_equal(y->t.dims[0], 9);
    assert_int_equal(y->t.dims[1], 8);
    tu_assert_close(y, want, 72, 0, 1e-6, 0);
    lt_value_free(y);
    tu_free(&g);
    for (int i = 0; i < 5; i++)
        lt_value_free(in[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dft_lengths),
        cmocka_unit_test(dft_irfft_hand),
        cmocka_unit_test(stft_windowed),
        cmocka_unit_test(mel_matrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
