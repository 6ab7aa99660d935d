/* The narrow element types: float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz,
 * e8m0), float4e2m1, and int4/uint4/int2/uint2. Their values, conversion
 * from double with the rounding and saturation ONNX's Cast states, and the
 * packing of the sub-byte ones in files (memory holds one per byte:
 * include/lantern.h). */
#include "ir.h"
#include <math.h>
#include <string.h>

/* a small float: sign, ebits exponent bits, mbits mantissa bits */
typedef struct minifloat {
    int ebits, mbits, bias;
    enum { NAN_NONE, NAN_ALL_ONES /* S.1111.111 */, NAN_IEEE /* exponent all ones */, NAN_NEG_ZERO /* 0x80 */ } nan;
    double max;
} minifloat;

static const minifloat *mf_of(lt_dtype t)
{
    static const minifloat e4m3fn = {4, 3, 7, NAN_ALL_ONES, 448.0}, e4m3fnuz = {4, 3, 8, NAN_NEG_ZERO, 240.0},
                           e5m2 = {5, 2, 15, NAN_IEEE, 57344.0}, e5m2fnuz = {5, 2, 16, NAN_NEG_ZERO, 57344.0},
                           e2m1 = {2, 1, 1, NAN_NONE, 6.0};
    switch (t) {
    case LT_F8E4M3FN: return &e4m3fn;
    case LT_F8E4M3FNUZ: return &e4m3fnuz;
    case LT_F8E5M2: return &e5m2;
    case LT_F8E5M2FNUZ: return &e5m2fnuz;
    case LT_F4E2M1: return &e2m1;
    default: return NULL;
    }
}

bool lt_dtype_is_narrow_float(lt_dtype t) { return mf_of(t) != NULL || t == LT_F8E8M0; }

bool lt_dtype_is_narrow_int(lt_dtype t) { return t == LT_I4 || t == LT_U4 || t == LT_I2 || t == LT_U2; }

int lt_dtype_bits(lt_dtype t)
{
    switch (t) {
    case LT_I4: case LT_U4: case LT_F4E2M1: return 4;
    case LT_I2: case LT_U2: return 2;
    default: return 8 * (int)lt_dtype_size(t);
    }
}

size_t lt_dtype_packed_bytes(lt_dtype t, int64_t n)
{
    int bits = lt_dtype_bits(t);
    if (bits >= 8)
        return (size_t)n * (size_t)(bits / 8);
    int per = 8 / bits;
    return (size_t)((n + per - 1) / per);
}

/* int4/int2: a two's complement value of `bits` bits sign-extended; uint4,
 * uint2 and float4e2m1 codes: the low bits */
static uint8_t widen(lt_dtype t, unsigned v, int bits)
{
    v &= (1u << bits) - 1;
    if ((t == LT_I4 || t == LT_I2) && (v >> (bits - 1)))
        return (uint8_t)(int8_t)((int)v - (1 << bits));
    return (uint8_t)v;
}

void lt_narrow_unpack(lt_dtype t, const uint8_t *packed, int64_t n, uint8_t *out)
{
    int bits = lt_dtype_bits(t);
    if (bits >= 8) {
        memcpy(out, packed, (size_t)n * (size_t)(bits / 8));
        return;
    }
    int per = 8 / bits;
    for (int64_t i = 0; i < n; i++)
        out[i] = widen(t, packed[i / per] >> (bits * (i % per)), bits);
}

void lt_narrow_pack(lt_dtype t, const uint8_t *in, int64_t n, uint8_t *packed)
{
    int bits = lt_dtype_bits(t);
    if (bits >= 8) {
        memcpy(packed, in, (size_t)n * (size_t)(bits / 8));
        return;
    }
    int per = 8 / bits;
    unsigned mask = (1u << bits) - 1;
    memset(packed, 0, lt_dtype_packed_bytes(t, n)); /* the padding of an odd count is zero */
    for (int64_t i = 0; i < n; i++)
        packed[i / per] |= (uint8_t)((in[i] & mask) << (bits * (i % per)));
}

double lt_narrow_to_f64(lt_dtype t, uint8_t code)
{
    if (t == LT_F8E8M0)
        return code == 0xff ? NAN : ldexp(1.0, (int)code - 127);
    if (lt_dtype_is_narrow_int(t))
        return t == LT_I4 || t == LT_I2 ? (double)(int8_t)code : (double)code;
    const minifloat *f = mf_of(t);
    if (!f)
        return NAN;
    int sbit = f->ebits + f->mbits;
    unsigned emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;
    unsigned s = (code >> sbit) & 1, e = (code >> f->mbits) & emax, m = code & mmax;
    if (f->nan == NAN_NEG_ZERO && s && !e && !m)
        return NAN;
    if (f->nan == NAN_ALL_ONES && e == emax && m == mmax)
        return s ? -NAN : NAN;
    if (f->nan == NAN_IEEE && e == emax)
        return m ? (s ? -NAN : NAN) : (s ? -INFINITY : INFINITY);
    double v = e ? ldexp((double)(m + (1u << f->mbits)), (int)e - f->bias - f->mbits)
                 : ldexp((double)m, 1 - f->bias - f->mbits);
    return s ? -v : v;
}

/* the code of a finite, non-negative value the format holds exactly */
static unsigned mf_code(const minifloat *f, double a)
{
    if (a == 0)
        return 0;
    if (a < ldexp(1.0, 1 - f->bias)) /* subnormal */
        return (unsigned)ldexp(a, f->bias - 1 + f->mbits);
    int ex;
    frexp(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1) */
    int e = ex - 1;
    unsigned m = (unsigned)ldexp(a, f->mbits - e) - (1u << f->mbits);
    return (unsigned)(e + f->bias) << f->mbits | m;
}

static uint8_t mf_nan(const minifloat *f, bool neg)
{
    unsigned sbit = 1u << (f->ebits + f->mbits);
    switch (f->nan) {
    case NAN_ALL_ONES: return (uint8_t)((neg ? sbit : 0) | (sbit - 1));
    case NAN_IEEE: return (uint8_t)((neg ? sbit : 0) | (sbit - 1 - 1)); /* quiet: the top mantissa bit */
    case NAN_NEG_ZERO: return 0x80;
    default: return (uint8_t)(neg ? 0 : sbit); /* float4e2m1 has no NaN: ml_dtypes gives the zero of the other sign */
    }
}

static uint8_t mf_encode(const minifloat *f, double v, bool saturate)
{
    unsigned sbit = 1u << (f->ebits + f->mbits);
    bool neg = signbit(v);
    if (isnan(v))
        return mf_nan(f, neg);
    double a = fabs(v);
    bool uz = f->nan == NAN_NEG_ZERO; /* no negative zero: its code is NaN */
    unsigned sign = neg ? sbit : 0;
    if (isinf(a) || a > f->max) {
        /* rounding may bring a value just above the largest back to it */
        if (!isinf(a)) {
            int ex;
            frexp(f->max, &ex);
            double q = ldexp(1.0, ex - 1 - f->mbits); /* the spacing at the top */
            if (rint(a / q) * q <= f->max)
                return (uint8_t)(sign | mf_code(f, f->max));
        }
        if (saturate || f->nan == NAN_NONE)
            return (uint8_t)(sign | mf_code(f, f->max));
        if (f->nan == NAN_IEEE)
            return (uint8_t)(sign | ((1u << f->ebits) - 1) << f->mbits);
        return mf_nan(f, neg);
    }
    /* round to nearest even at the spacing of a's binade (or the subnormal
     * spacing): a / q is exact, and rint rounds ties to even */
    int ex;
    frexp(a, &ex);
    int e = ex - 1 < 1 - f->bias ? 1 - f->bias : ex - 1;
    double q = ldexp(1.0, e - f->mbits), r = rint(a / q) * q;
    if (r == 0)
        return (uint8_t)(uz ? 0 : sign);
    return (uint8_t)(sign | mf_code(f, r));
}

/* float8e8m0: 2^(code - 127), no sign, no zero; a negative value is taken
 * by its magnitude (the spec leaves it unspecified) */
static uint8_t e8m0_encode(double v, bool saturate, lt_round_mode rm)
{
    if (isnan(v))
        return 0xff;
    double a = fabs(v);
    if (isinf(a))
        return saturate ? 0xfe : 0xff;
    if (a == 0)
        return saturate ? 0x00 : 0xff;
    int ex;
    double fr = frexp(a, &ex); /* a = 2fr * 2^(ex-1), 2fr in [1, 2) */
    int e = ex - 1;
    if (fr != 0.5) {
        if (rm == LT_ROUND_UP || (rm == LT_ROUND_NEAREST && fr >= 0.75))
            e++;
    }
    if (e > 127)
        return saturate ? 0xfe : 0xff;
    if (e < -127)
        return saturate ? 0x00 : 0xff;
    return (uint8_t)(e + 127);
}

uint8_t lt_f64_to_narrow(lt_dtype t, double v, bool saturate, lt_round_mode rm)
{
    if (t == LT_F8E8M0)
        return e8m0_encode(v, saturate, rm);
    const minifloat *f = mf_of(t);
    if (f)
        return mf_encode(f, v, saturate);
    /* the integer ones: truncated toward zero, then the low bits kept (as a
     * wider integer would wrap; ONNX leaves out-of-range undefined and its
     * reference wraps). NaN gives 0. */
    int64_t i = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
    return lt_narrow_from_i64(t, i);
}

uint8_t lt_narrow_from_i64(lt_dtype t, int64_t v)
{
    if (lt_dtype_is_narrow_int(t))
        return widen(t, (unsigned)(v & 0xff), lt_dtype_bits(t));
    return lt_f64_to_narrow(t, (double)v, true, LT_ROUND_UP);
}
