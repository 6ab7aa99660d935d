/* Private to the elementwise family: branch-free float32 exp, tanh and
 * sigmoid, and float16/bfloat16 conversions, written so that `omp simd`
 * loops vectorize them (libm's scalar calls do not). exp is Cody-Waite
 * range reduction plus the Cephes degree-5 polynomial (about 2 ulp). */
#ifndef LT_ELEMENTWISE_VMATH_H
#define LT_ELEMENTWISE_VMATH_H

#include <stdint.h>

static inline uint32_t lt_ew_bits(float f)
{
    union {
        float f;
        uint32_t u;
    } v = {.f = f};
    return v.u;
}

static inline float lt_ew_float(uint32_t u)
{
    union {
        uint32_t u;
        float f;
    } v = {.u = u};
    return v.f;
}

static inline float lt_ew_expf(float x)
{
    /* outside [-104, 89] the result is 0 or inf anyway; NaN passes through */
    float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    /* k = round(x / ln 2) via the 1.5 * 2^23 trick: k sits in t's low bits */
    float t = xc * 1.44269504088896341f + 12582912.0f;
    int32_t k = (int32_t)(lt_ew_bits(t) - 0x4b400000u);
    float kf = t - 12582912.0f;
    float r = xc - kf * 0.693359375f; /* ln 2 split in two: kf * hi is exact */
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* 2^k in two halves so k from -150 to 128 never leaves the normal range
     * of a single factor (denormal results and overflow come out right) */
    int32_t k1 = k / 2, k2 = k - k1;
    float s1 = lt_ew_float((uint32_t)(k1 + 127) << 23), s2 = lt_ew_float((uint32_t)(k2 + 127) << 23);
    return p * s1 * s2;
}

/* e^x - 1: Taylor series through x^8 / 8! where the subtraction would
 * cancel (|x| < 0.5, truncation error below 1e-8 relative) */
static inline float lt_ew_expm1f(float x)
{
    float p = 1.0f / 40320;
    p = p * x + 1.0f / 5040;
    p = p * x + 1.0f / 720;
    p = p * x + 1.0f / 120;
    p = p * x + 1.0f / 24;
    p = p * x + 1.0f / 6;
    p = p * x + 0.5f;
    p = p * x * x + x;
    float ax = x < 0 ? -x : x;
    return ax < 0.5f ? p : lt_ew_expf(x) - 1.0f;
}

/* log(1 + y) for y in [0, 1]: 2 atanh(s) with s = y / (2 + y) <= 1/3, whose
 * odd series 2 (s + s^3/3 + ... + s^17/17) is within 1e-9 there */
static inline float lt_ew_log1p_unit(float y)
{
    float s = y / (2.0f + y), z = s * s;
    float p = 1.0f / 17;
    p = p * z + 1.0f / 15;
    p = p * z + 1.0f / 13;
    p = p * z + 1.0f / 11;
    p = p * z + 1.0f / 9;
    p = p * z + 1.0f / 7;
    p = p * z + 1.0f / 5;
    p = p * z + 1.0f / 3;
    return 2.0f * (p * z * s + s);
}

/* log(1 + e^x) = max(x, 0) + log(1 + e^{-|x|}) */
static inline float lt_ew_softplusf(float x)
{
    float ax = x < 0 ? -x : x;
    return (x > 0 ? x : 0.0f) + lt_ew_log1p_unit(lt_ew_expf(-ax));
}

/* x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2); past x = 20
 * the ratio is 1 in float (and n would overflow) */
static inline float lt_ew_mishf(float x)
{
    float e = lt_ew_expf(x < 20.0f ? x : 20.0f), n = e * (e + 2.0f);
    return x * (n / (n + 2.0f));
}

static inline float lt_ew_sigmoidf(float x)
{
    /* e^{-|x|} never overflows, so tails down to the subnormals survive */
    float e = lt_ew_expf(x < 0 ? x : -x), r = 1.0f / (1.0f + e);
    return x < 0 ? e * r : r;
}

static inline float lt_ew_tanhf(float x)
{
    float ax = x < 0 ? -x : x;
    /* small |x|: odd polynomial (Cephes tanhf), no cancellation */
    float z = x * x;
    float ps = -5.70498872745e-3f;
    ps = ps * z + 2.06390887954e-2f;
    ps = ps * z - 5.37397155531e-2f;
    ps = ps * z + 1.33314422036e-1f;
    ps = ps * z - 3.33332819422e-1f;
    ps = ps * z * x + x;
    /* large |x|: 1 - 2 / (e^{2|x|} + 1) */
    float pl = 1.0f - 2.0f / (lt_ew_expf(2.0f * ax) + 1.0f);
    /* x's sign onto either (ps already has it, except for -0) */
    return lt_ew_float(lt_ew_bits(ax < 0.625f ? ps : pl) | (lt_ew_bits(x) & 0x80000000u));
}

/* erf pieces: for |x| < 1, erf(x) = x P(x^2); for |x| >= 1, erfc(|x|) =
 * e^{-x^2} g(|x|) with g(x) = erfc(x) e^{x^2} a polynomial in 1/x fitted on
 * [1, 10] (least squares on Chebyshev nodes, relative error 2e-8; beyond
 * 10, erfc is below float's range). */
static inline float lt_ew_erf_small(float x)
{
    float z = x * x, p = 7.882500322e-05f;
    p = p * z - 8.018858979e-04f;
    p = p * z + 5.189312809e-03f;
    p = p * z - 2.685432954e-02f;
    p = p * z + 1.128359749e-01f;
    p = p * z - 3.761262691e-01f;
    p = p * z + 1.128379166e+00f;
    return p * x;
}

/* erfc(|x|) for |x| >= 1 (clamped into [1, 10]) */
static inline float lt_ew_erfc_large(float ax)
{
    float ac = ax < 1.0f ? 1.0f : (ax > 10.0f ? 10.0f : ax), u = 1.0f / ac;
    float g = -5.019818328e-02f;
    g = g * u + 3.386625944e-01f;
    g = g * u - 1.011752882e+00f;
    g = g * u + 1.740360263e+00f;
    g = g * u - 1.842321254e+00f;
    g = g * u + 1.113140629e+00f;
    g = g * u - 1.660361397e-01f;
    g = g * u - 2.560306340e-01f;
    g = g * u - 2.570774805e-03f;
    g = g * u + 5.643334160e-01f;
    g = g * u - 3.461047193e-06f;
    /* e^{-x^2} with x^2 split exactly: xh (12 significant bits) squares
     * without rounding, and the rest is small; rounding x * x instead would
     * cost up to 20 ulp near x = 10 */
    float xh = lt_ew_float(lt_ew_bits(ac) & 0xfffff000u);
    float d = (ac - xh) * (ac + xh);
    return lt_ew_expf(-xh * xh) * lt_ew_expf(-d) * g;
}

static inline float lt_ew_erff(float x)
{
    float ax = x < 0 ? -x : x;
    float big = 1.0f - lt_ew_erfc_large(ax);
    big = lt_ew_float(lt_ew_bits(big) | (lt_ew_bits(x) & 0x80000000u));
    return ax < 1.0f ? lt_ew_erf_small(x) : big;
}

/* 1 + erf(x) without the cancellation 1 + erf suffers for x << 0 (Gelu) */
static inline float lt_ew_erf1pf(float x)
{
    float ax = x < 0 ? -x : x, ec = lt_ew_erfc_large(ax);
    float big = x < 0 ? ec : 2.0f - ec;
    return ax < 1.0f ? 1.0f + lt_ew_erf_small(x) : big;
}

/* float16 -> float32, exact */
static inline float lt_ew_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, em = h & 0x7fff;
    uint32_t r = (em << 13) + 0x38000000u; /* rebias the exponent: 127 - 15 */
    r = em >= 0x7c00 ? r + 0x38000000u : r; /* inf / NaN: exponent to 0xff */
    float f = lt_ew_float(r);
    f = em < 0x400 ? (float)em * 5.9604644775390625e-8f : f; /* subnormal: em * 2^-24 */
    return lt_ew_float(lt_ew_bits(f) | sign);
}

/* float32 -> float16, round to nearest even */
static inline uint16_t lt_ew_f2h(float f)
{
    uint32_t x = lt_ew_bits(f), sign = (x >> 16) & 0x8000;
    x &= 0x7fffffffu;
    /* >= 65536 (and inf / NaN): no rounding can bring it back below inf */
    uint32_t big = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    /* below 2^-14: adding 0.5 lines the half subnormal unit (2^-24) up with
     * float's last bit and the FPU rounds to nearest even */
    uint32_t sub = lt_ew_bits(lt_ew_float(x) + 0.5f) - 0x3f000000u;
    /* normal: rebias and round on the 13 dropped bits, ties to even; a
     * carry into the exponent is the correct rounding (up to inf) */
    uint32_t nrm = (x + 0xc8000fffu + ((x >> 13) & 1)) >> 13;
    uint32_t r = x >= 0x47800000u ? big : (x < 0x38800000u ? sub : nrm);
    return (uint16_t)(r | sign);
}

/* float32 -> bfloat16, round to nearest even, NaN kept quiet */
static inline uint16_t lt_ew_f2bf(float f)
{
    uint32_t x = lt_ew_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1)) >> 16;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40 : r);
}

static inline float lt_ew_bf2f(uint16_t h) { return lt_ew_float((uint32_t)h << 16); }

#endif
