/* The elementwise family's vectorizable float32 math (exp, expm1, tanh,
 * sigmoid, erf, softplus, mish) against libm in double, and its
 * float16/bfloat16 conversions against the runtime's reference converters,
 * bit for bit; the array forms of exp and erf (the widest loop the CPU
 * runs) against libm over every tail length. */
#include "test_elementwise.h"
#include "runtime/cpu/elementwise_vmath.h"
#include "runtime/cpu/vact.h"

/* |got - want| in units of float's spacing at want */
static double ulps(float got, double want)
{
    if (isnan(want))
        return isnan(got) ? 0 : 1e9;
    float w = (float)want;
    if (isinf(w))
        return got == w ? 0 : 1e9;
    double u = (double)nextafterf(fabsf(w), INFINITY) - fabsf(w);
    return fabs((double)got - want) / u;
}

typedef struct {
    const char *name;
    float (*f)(float);
    double (*ref)(double);
    double lo, hi, max_ulp;
} vcase;

static float v_exp(float x) { return lt_ew_expf(x); }
static float v_tanh(float x) { return lt_ew_tanhf(x); }
static float v_sigmoid(float x) { return lt_ew_sigmoidf(x); }
static float v_erf(float x) { return lt_ew_erff(x); }
static float v_erf1p(float x) { return lt_ew_erf1pf(x); }
static float v_expm1(float x) { return lt_ew_expm1f(x); }
static float v_softplus(float x) { return lt_ew_softplusf(x); }
static float v_mish(float x) { return lt_ew_mishf(x); }
static double r_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double r_mish(double x) { return x * tanh(r_softplus(x)); }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_erf1p(double x) { return x < 0 ? erfc(-x) : 1 + erf(x); }

static void accuracy(void **state)
{
    (void)state;
    const vcase cases[] = {
        {"exp", v_exp, exp, -105, 90, 1.5},         {"tanh", v_tanh, tanh, -12, 12, 2},
        {"tanh", v_tanh, tanh, -1e-3, 1e-3, 2},     {"sigmoid", v_sigmoid, r_sigmoid, -100, 40, 2.5},
        {"erf", v_erf, erf, -6, 6, 3},              {"erf", v_erf, erf, -1e-4, 1e-4, 3},
        /* 1 + erf(x) just above x = -1 cancels about 3 bits */
        {"erf1p", v_erf1p, r_erf1p, -9, 4, 10},       {"expm1", v_expm1, expm1, -20, 20, 2},
        {"expm1", v_expm1, expm1, -1e-3, 1e-3, 2},  {"softplus", v_softplus, r_softplus, -80, 80, 3},
        {"mish", v_mish, r_mish, -30, 30, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const vcase *v = &cases[c];
        double worst = 0, at = 0;
        for (int i = 0; i <= 400000; i++) {
            float x = (float)(v->lo + (v->hi - v->lo) * i / 400000.0);
            double e = ulps(v->f(x), v->ref(x));
            if (e > worst) {
                worst = e;
                at = x;
            }
        }
        if (worst > v->max_ulp)
            fail_msg("%s: %.2f ulp at %.9g (allowed %.1f)", v->name, worst, at, v->max_ulp);
    }
    /* special values */
    assert_true(isnan(lt_ew_expf(NAN)) && isnan(lt_ew_tanhf(NAN)) && isnan(lt_ew_erff(NAN)));
    assert_true(lt_ew_expf(INFINITY) == INFINITY && lt_ew_expf(-INFINITY) == 0);
    assert_true(lt_ew_tanhf(INFINITY) == 1 && lt_ew_tanhf(-INFINITY) == -1);
    assert_true(lt_ew_erff(INFINITY) == 1 && lt_ew_erff(-INFINITY) == -1);
    assert_true(lt_ew_sigmoidf(-INFINITY) == 0 && lt_ew_sigmoidf(INFINITY) == 1);
    assert_true(lt_ew_expf(0) == 1 && lt_ew_tanhf(-0.0f) == 0 && signbit(lt_ew_tanhf(-0.0f)));
    assert_true(lt_ew_expf(-100) > 0 && lt_ew_expf(-100) < 1e-43f); /* subnormal, not flushed */
}

/* the array forms (vact.c: AVX-512, AVX2 or baseline loops by cpuid) over
 * lengths that leave every kind of tail, in place and not */
static void array_forms(void **state)
{
    (void)state;
    int64_t lens[] = {1, 7, 16, 17, 255, 4099};
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        int64_t n = lens[l];
        float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
        assert_non_null(x);
        assert_non_null(y);
        for (int f = 0; f < 2; f++) {
            for (int64_t i = 0; i < n; i++)
                x[i] = (float)(-6 + 12.0 * (double)((i * 7919) % n) / (double)n) * (f ? 15 : 1);
            x[n - 1] = f ? -104.5f : 0.375f;
            if (f)
                lt_vexpf(x, y, n);
            else
                lt_verff(x, y, n);
            for (int64_t i = 0; i < n; i++) {
                double want = f ? exp((double)x[i]) : erf((double)x[i]);
                double e = ulps(y[i], want);
                if (e > 3)
                    fail_msg("%s[%lld] of %lld: %.2f ulp at %.9g", f ? "exp" : "erf", (long long)i, (long long)n, e,
                             x[i]);
            }
            memcpy(y, x, sizeof *x * (size_t)n);
            if (f)
                lt_vexpf(y, y, n);
            else
                lt_verff(y, y, n);
            for (int64_t i = 0; i < n; i++)
                assert_true(ulps(y[i], f ? exp((double)x[i]) : erf((double)x[i])) <= 3);
        }
        free(x);
        free(y);
    }
}

/* erf and Gelu's array forms skip the large-argument piece for a block of
 * 16 whose arguments all lie in (-1, 1): activations of mostly small
 * values with one large lane, a NaN or an infinity (erf) in a few blocks, every
 * tail length; each element within 3 ulp of libm's in double (Gelu 12:
 * 1 + erf(t) loses bits to cancellation as t nears -1, x near -sqrt 2, in
 * the full formula as much; NaN stays NaN), in place and not */
static double r_gelu(double x) { return 0.5 * x * (x < 0 ? erfc(-x * M_SQRT1_2) : 1 + erf(x * M_SQRT1_2)); }

static void array_small_blocks(void **state)
{
    (void)state;
    int64_t lens[] = {15, 16, 33, 100, 4099};
    uint64_t seed = 77;
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        int64_t n = lens[l];
        float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
        assert_non_null(x);
        assert_non_null(y);
        for (int gelu = 0; gelu < 2; gelu++) {
            for (int64_t i = 0; i < n; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                double u = (double)(seed >> 11) / 9007199254740992.0;
                x[i] = (float)((2 * u - 1) * (gelu ? 1.4 : 0.99)); /* inside (-1, 1) after Gelu's 1 / sqrt 2 */
            }
            for (int64_t i = 5; i < n; i += 53)
                x[i] = (i / 53) % 3 == 0 ? 2.5f : (i / 53) % 3 == 1 ? -1.0f : 7.0f;
            if (n > 40) {
                x[40] = NAN;
                x[n - 2] = gelu ? -3.0f : -INFINITY;
            }
            for (int inplace = 0; inplace < 2; inplace++) {
                float *out = inplace ? x : y;
                float *keep = malloc(sizeof *keep * (size_t)n);
                assert_non_null(keep);
                memcpy(keep, x, sizeof *x * (size_t)n);
                if (gelu)
                    lt_vgeluf(x, out, n);
                else
                    lt_verff(x, out, n);
                for (int64_t i = 0; i < n; i++) {
                    double want = gelu ? r_gelu((double)keep[i]) : erf((double)keep[i]);
                    double e = ulps(out[i], want);
                    if (e > (gelu ? 12 : 3))
                        fail_msg("%s[%lld] of %lld: %.2f ulp at %.9g (got %.9g, want %.9g)", gelu ? "gelu" : "erf",
                                 (long long)i, (long long)n, e, keep[i], out[i], want);
                }
                memcpy(x, keep, sizeof *x * (size_t)n);
                free(keep);
            }
        }
        free(x);
        free(y);
    }
}

static void half_conversions(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float a = lt_ew_h2f((uint16_t)h), b = lt_f16_to_f32((uint16_t)h);
        if (memcmp(&a, &b, 4) != 0)
            fail_msg("half %04x: %08x vs %08x", h, lt_ew_bits(a), lt_ew_bits(b));
        assert_int_equal(lt_ew_bits(lt_ew_bf2f((uint16_t)h)), lt_ew_bits(lt_bf16_to_f32((uint16_t)h)));
    }
    /* every 251st float bit pattern (all exponents, signs, NaNs, ties) */
    for (uint64_t u = 0; u < 0x100000000ull; u += 251) {
        float f = lt_ew_float((uint32_t)u);
        uint16_t a = lt_ew_f2h(f), b = lt_f32_to_f16(f);
        if (a != b)
            fail_msg("float %08x -> half %04x, expected %04x", (unsigned)u, a, b);
        a = lt_ew_f2bf(f);
        b = lt_f32_to_bf16(f);
        if (a != b)
            fail_msg("float %08x -> bfloat16 %04x, expected %04x", (unsigned)u, a, b);
    }
    /* the exact ties of the half format round to even */
    assert_int_equal(lt_ew_f2h(1.0f + ldexpf(1, -11)), 0x3c00);
    assert_int_equal(lt_ew_f2h(1.0f + 3 * ldexpf(1, -11)), 0x3c02);
    assert_int_equal(lt_ew_f2h(65520.0f), 0x7c00);
    assert_int_equal(lt_ew_f2h(ldexpf(1, -25)), 0x0000);
    assert_int_equal(lt_ew_f2h(3 * ldexpf(1, -25)), 0x0002);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accuracy),
        cmocka_unit_test(array_forms),
        cmocka_unit_test(array_small_blocks),
        cmocka_unit_test(half_conversions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
