/* Element types and the tensor's elements: names and sizes, half-precision
 * conversions, element counts, and reading or writing one element of any
 * type through double or int64 (the IR's constant folding and the kernels'
 * slow paths). No storage here: buffers are the runtime's (runtime/tensor.c). */
#include "ir.h"
#include <math.h>
#include <string.h>

/* ---- dtypes ---- */
static const struct {
    const char *name;
    size_t size;
} dtypes[LT_DTYPE_COUNT] = {
    [LT_UNDEFINED] = {"undefined", 0}, [LT_F32] = {"float32", 4},  [LT_U8] = {"uint8", 1},
    [LT_I8] = {"int8", 1},             [LT_U16] = {"uint16", 2},   [LT_I16] = {"int16", 2},
    [LT_I32] = {"int32", 4},           [LT_I64] = {"int64", 8},    [LT_STRING] = {"string", sizeof(char *)},
    [LT_BOOL] = {"bool", 1},           [LT_F16] = {"float16", 2},  [LT_F64] = {"float64", 8},
    [LT_U32] = {"uint32", 4},          [LT_U64] = {"uint64", 8},   [LT_C64] = {"complex64", 8},
    [LT_C128] = {"complex128", 16},    [LT_BF16] = {"bfloat16", 2},
    /* one byte each in memory; 4- and 2-bit types are packed in files */
    [LT_F8E4M3FN] = {"float8e4m3fn", 1},     [LT_F8E4M3FNUZ] = {"float8e4m3fnuz", 1},
    [LT_F8E5M2] = {"float8e5m2", 1},         [LT_F8E5M2FNUZ] = {"float8e5m2fnuz", 1},
    [LT_U4] = {"uint4", 1},                  [LT_I4] = {"int4", 1},
    [LT_F4E2M1] = {"float4e2m1", 1},         [LT_F8E8M0] = {"float8e8m0", 1},
    [LT_U2] = {"uint2", 1},                  [LT_I2] = {"int2", 1},
};

const char *lt_dtype_name(lt_dtype t)
{
    return (unsigned)t < LT_DTYPE_COUNT ? dtypes[t].name : "invalid";
}

size_t lt_dtype_size(lt_dtype t)
{
    return (unsigned)t < LT_DTYPE_COUNT ? dtypes[t].size : 0;
}

bool lt_dtype_is_float(lt_dtype t)
{
    return t == LT_F32 || t == LT_F64 || t == LT_F16 || t == LT_BF16;
}

bool lt_dtype_is_int(lt_dtype t)
{
    switch (t) {
    case LT_U8: case LT_I8: case LT_U16: case LT_I16: case LT_I32:
    case LT_I64: case LT_U32: case LT_U64:
        return true;
    default:
        return false;
    }
}

bool lt_dtype_is_signed(lt_dtype t)
{
    return t == LT_I8 || t == LT_I16 || t == LT_I32 || t == LT_I64 || lt_dtype_is_float(t);
}


int64_t lt_shape_numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n))
            return -1;
    }
    return n;
}

size_t lt_tensor_nbytes(const lt_tensor *t)
{
    return (size_t)t->numel * lt_dtype_size(t->dtype);
}

/* ---- half precision ---- */
float lt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalize */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t lt_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (x >> 16) & 0x8000;
    uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff)
        return sign | 0x7c00 | (man ? 0x200 : 0);
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f)
        return sign | 0x7c00;
    if (e <= 0) {
        if (e < -10)
            return sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return sign | (uint16_t)half;
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* may carry into the exponent, which is the right rounding */
    return sign | (uint16_t)half;
}

float lt_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t lt_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1;
    x += 0x7fff + lsb;
    return (uint16_t)(x >> 16);
}

/* ---- generic element access ---- */
double lt_tensor_get_f64(const lt_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case LT_F32: return ((const float *)p)[i];
    case LT_F64: return ((const double *)p)[i];
    case LT_F16: return lt_f16_to_f32(((const uint16_t *)p)[i]);
    case LT_BF16: return lt_bf16_to_f32(((const uint16_t *)p)[i]);
    case LT_I8: return ((const int8_t *)p)[i];
    case LT_U8: return ((const uint8_t *)p)[i];
    case LT_I16: return ((const int16_t *)p)[i];
    case LT_U16: return ((const uint16_t *)p)[i];
    case LT_I32: return ((const int32_t *)p)[i];
    case LT_U32: return ((const uint32_t *)p)[i];
    case LT_I64: return (double)((const int64_t *)p)[i];
    case LT_U64: return (double)((const uint64_t *)p)[i];
    case LT_BOOL: return ((const uint8_t *)p)[i] != 0;
    default:
        if (lt_dtype_is_narrow_float(t->dtype) || lt_dtype_is_narrow_int(t->dtype))
            return lt_narrow_to_f64(t->dtype, ((const uint8_t *)p)[i]);
        return NAN;
    }
}

/* A double to an integer type, defined for every input: truncated toward
 * zero, saturated at the type's range (-inf and +inf give its minimum and
 * maximum), NaN gives 0. C leaves an out-of-range conversion undefined and
 * ONNX's Cast leaves it unspecified. The bounds are compared as the exact
 * doubles -2^(bits-1), 2^(bits-1) and 2^bits. */
static int64_t sat_signed(double v, int bits)
{
    double top = ldexp(1.0, bits - 1); /* 2^(bits-1), exact */
    if (v != v)
        return 0;
    if (v >= top)
        return (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    if (v <= -top)
        return -(int64_t)(((uint64_t)1 << (bits - 1)) - 1) - 1;
    return (int64_t)v;
}

static uint64_t sat_unsigned(double v, int bits)
{
    double top = ldexp(1.0, bits); /* 2^bits, exact */
    if (v != v || v <= -1.0)
        return 0;
    if (v >= top)
        return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    return (uint64_t)v;
}

void lt_tensor_set_f64(lt_tensor *t, int64_t i, double v)
{
    void *p = t->data;
    switch (t->dtype) {
    case LT_F32: ((float *)p)[i] = (float)v; break;
    case LT_F64: ((double *)p)[i] = v; break;
    case LT_F16: ((uint16_t *)p)[i] = lt_f32_to_f16((float)v); break;
    case LT_BF16: ((uint16_t *)p)[i] = lt_f32_to_bf16((float)v); break;
    case LT_I8: ((int8_t *)p)[i] = (int8_t)sat_signed(v, 8); break;
    case LT_U8: ((uint8_t *)p)[i] = (uint8_t)sat_unsigned(v, 8); break;
    case LT_I16: ((int16_t *)p)[i] = (int16_t)sat_signed(v, 16); break;
    case LT_U16: ((uint16_t *)p)[i] = (uint16_t)sat_unsigned(v, 16); break;
    case LT_I32: ((int32_t *)p)[i] = (int32_t)sat_signed(v, 32); break;
    case LT_U32: ((uint32_t *)p)[i] = (uint32_t)sat_unsigned(v, 32); break;
    case LT_I64: ((int64_t *)p)[i] = sat_signed(v, 64); break;
    case LT_U64: ((uint64_t *)p)[i] = sat_unsigned(v, 64); break;
    case LT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default:
        if (lt_dtype_is_narrow_float(t->dtype) || lt_dtype_is_narrow_int(t->dtype))
            ((uint8_t *)p)[i] = lt_f64_to_narrow(t->dtype, v, true, LT_ROUND_UP);
        break;
    }
}

int64_t lt_tensor_get_i64(const lt_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->dtype) {
    case LT_I64: return ((const int64_t *)p)[i];
    case LT_I32: return ((const int32_t *)p)[i];
    case LT_U64: return (int64_t)((const uint64_t *)p)[i];
    case LT_I8: return ((const int8_t *)p)[i];
    case LT_U8: return ((const uint8_t *)p)[i];
    case LT_I16: return ((const int16_t *)p)[i];
    case LT_U16: return ((const uint16_t *)p)[i];
    case LT_U32: return ((const uint32_t *)p)[i];
    case LT_BOOL: return ((const uint8_t *)p)[i] != 0;
    case LT_I4: case LT_I2: return ((const int8_t *)p)[i];
    case LT_U4: case LT_U2: return ((const uint8_t *)p)[i];
    default: return (int64_t)lt_tensor_get_f64(t, i);
    }
}

void lt_tensor_set_i64(lt_tensor *t, int64_t i, int64_t v)
{
    void *p = t->data;
    switch (t->dtype) {
    case LT_I64: ((int64_t *)p)[i] = v; break;
    case LT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case LT_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case LT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case LT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case LT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case LT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case LT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case LT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case LT_I4: case LT_U4: case LT_I2: case LT_U2: ((uint8_t *)p)[i] = lt_narrow_from_i64(t->dtype, v); break;
    default: lt_tensor_set_f64(t, i, (double)v); break;
    }
}
