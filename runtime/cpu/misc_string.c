/* ONNX Cast to and from string tensors: numbers print as the shortest text
 * that reads back to the same value (numpy's scalar layout, which the ONNX
 * test data uses); text parses as floats, integers or bools. */
#include "misc_string.h"
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- numbers to text ---- */

/* Whether the decimal text s reads back to exactly v in type t. */
static bool reads_back(const char *s, double v, lt_dtype t)
{
    switch (t) {
    case LT_F32:
        return strtof(s, NULL) == (float)v;
    case LT_F16:
        return lt_f32_to_f16(strtof(s, NULL)) == lt_f32_to_f16((float)v);
    case LT_BF16: {
        /* round to nearest even, as lt_f32_to_bf16 does for finite values */
        return lt_f32_to_bf16(strtof(s, NULL)) == lt_f32_to_bf16((float)v);
    }
    default:
        return strtod(s, NULL) == v;
    }
}

/* Shortest significant digits of finite a > 0 that identify it in type t:
 * fills digits (no dot, no trailing zeros) and the decimal exponent of the
 * first digit. At each length, %.*e gives the closest digit string; when it
 * does not read back, its upper or lower neighbour still may (the rounding
 * interval is lopsided at powers of two), and at most one of them can. */
static void shortest_digits(double a, lt_dtype t, char *digits, int *exp10)
{
    int maxp = t == LT_F32 ? 9 : t == LT_F16 ? 5 : t == LT_BF16 ? 4 : 17;
    char buf[48];
    uint64_t best = 0;
    int scale = 0; /* a ~ best * 10^scale */
    for (int p = 1; p <= maxp && !best; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, a);
        uint64_t m = 0;
        const char *c = buf;
        for (; *c && *c != 'e'; c++)
            if (*c != '.')
                m = m * 10 + (uint64_t)(*c - '0');
        int sc = (*c == 'e' ? atoi(c + 1) : 0) - (p - 1);
        const uint64_t cand[3] = {m, m + 1, m - 1};
        for (int q = 0; q < 3 && !best; q++) {
            if (cand[q] == 0)
                continue;
            snprintf(buf, sizeof buf, "%" PRIu64 "e%d", cand[q], sc);
            if (reads_back(buf, a, t) || p == maxp) {
                best = cand[q];
                scale = sc;
            }
        }
    }
    int n = snprintf(digits, 24, "%" PRIu64, best);
    *exp10 = scale + n - 1;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = 0;
}

int lt_misc_format_float(double v, lt_dtype t, char *buf, size_t len)
{
    if (isnan(v))
        return snprintf(buf, len, "nan");
    if (isinf(v))
        return snprintf(buf, len, v < 0 ? "-inf" : "inf");
    char digits[24], tmp[64];
    int e = 0, o = 0;
    if (signbit(v))
        tmp[o++] = '-';
    double a = fabs(v);
    if (a == 0) {
        digits[0] = '0';
        digits[1] = 0;
    } else {
        shortest_digits(a, t, digits, &e);
    }
    int nd = (int)strlen(digits);
    if (a == 0 || (a >= 1e-4 && a < 1e16)) {
        /* positional: at least one digit on each side of the point */
        if (e >= 0) {
            for (int i = 0; i <= e; i++)
                tmp[o++] = i < nd ? digits[i] : '0';
            tmp[o++] = '.';
            if (nd > e + 1)
                for (int i = e + 1; i < nd; i++)
                    tmp[o++] = digits[i];
            else
                tmp[o++] = '0';
        } else {
            tmp[o++] = '0';
            tmp[o++] = '.';
            for (int i = 0; i < -e - 1; i++)
                tmp[o++] = '0';
            for (int i = 0; i < nd; i++)
                tmp[o++] = digits[i];
        }
        tmp[o] = 0;
    } else {
        tmp[o++] = digits[0];
        if (nd > 1) {
            tmp[o++] = '.';
            for (int i = 1; i < nd; i++)
                tmp[o++] = digits[i];
        }
        snprintf(tmp + o, sizeof tmp - (size_t)o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    return snprintf(buf, len, "%s", tmp);
}

/* Element i of a numeric tensor as text. */
static int format_elem(const lt_tensor *t, int64_t i, char *buf, size_t len)
{
    const void *d = t->data;
    switch (t->dtype) {
    case LT_F32:
        return lt_misc_format_float(((const float *)d)[i], LT_F32, buf, len);
    case LT_F64:
        return lt_misc_format_float(((const double *)d)[i], LT_F64, buf, len);
    case LT_F16:
        return lt_misc_format_float(lt_f16_to_f32(((const uint16_t *)d)[i]), LT_F16, buf, len);
    case LT_BF16:
        return lt_misc_format_float(lt_bf16_to_f32(((const uint16_t *)d)[i]), LT_BF16, buf, len);
    case LT_BOOL:
        return snprintf(buf, len, "%s", ((const uint8_t *)d)[i] ? "True" : "False");
    case LT_U64:
        return snprintf(buf, len, "%" PRIu64, ((const uint64_t *)d)[i]);
    case LT_U32:
        return snprintf(buf, len, "%" PRIu32, ((const uint32_t *)d)[i]);
    case LT_U16:
        return snprintf(buf, len, "%" PRIu16, ((const uint16_t *)d)[i]);
    case LT_U8:
        return snprintf(buf, len, "%" PRIu8, ((const uint8_t *)d)[i]);
    case LT_I64:
        return snprintf(buf, len, "%" PRId64, ((const int64_t *)d)[i]);
    case LT_I32:
        return snprintf(buf, len, "%" PRId32, ((const int32_t *)d)[i]);
    case LT_I16:
        return snprintf(buf, len, "%" PRId16, ((const int16_t *)d)[i]);
    case LT_I8:
        return snprintf(buf, len, "%" PRId8, ((const int8_t *)d)[i]);
    default:
        return -1;
    }
}

/* ---- text to numbers ---- */

/* s without leading and trailing white space, as [*b, *e). */
static void trim(const char *s, const char **b, const char **e)
{
    while (isspace((unsigned char)*s))
        s++;
    const char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    *b = s;
    *e = end;
}

/* Parses [b, e) completely as a double (strtod takes "nan", "inf" and
 * "infinity" in any case, with a sign). b points into a NUL-terminated
 * string and [b, e) has no surrounding white space, so strtod stops at e
 * exactly when the whole range is a number. */
static bool parse_double(const char *b, const char *e, double *v)
{
    if (b == e)
        return false;
    char *end;
    *v = strtod(b, &end);
    return end == e;
}

static bool parse_float(const char *b, const char *e, float *v)
{
    if (b == e)
        return false;
    char *end;
    *v = strtof(b, &end); /* direct, so no double rounding through double */
    return end == e;
}

/* Integer text: decimal digits with a sign, else a float form truncated
 * toward zero. Sets *neg and the magnitude; false when not a number or
 * beyond 64 bits. */
static bool parse_int(const char *b, const char *e, bool *neg, uint64_t *mag)
{
    const char *p = b;
    *neg = false;
    if (p < e && (*p == '+' || *p == '-'))
        *neg = *p++ == '-';
    const char *digits = p;
    uint64_t m = 0;
    while (p < e && isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (m > (UINT64_MAX - d) / 10)
            return false;
        m = m * 10 + d;
        p++;
    }
    if (p == e && p > digits) {
        *mag = m;
        return true;
    }
    double v;
    if (!parse_double(b, e, &v) || !isfinite(v))
        return false;
    v = trunc(v);
    *neg = v < 0;
    double a = fabs(v);
    if (a >= 18446744073709551616.0)
        return false;
    *mag = (uint64_t)a;
    return true;
}

/* Stores the integer (neg, mag) into out[i]; false when out of range. */
static bool store_int(lt_tensor *out, int64_t i, bool neg, uint64_t mag)
{
    void *d = out->data;
    if (!lt_dtype_is_signed(out->dtype)) {
        if (neg && mag != 0)
            return false;
        uint64_t lim = out->dtype == LT_U8 ? UINT8_MAX : out->dtype == LT_U16 ? UINT16_MAX
                     : out->dtype == LT_U32 ? UINT32_MAX : UINT64_MAX;
        if (mag > lim)
            return false;
        switch (out->dtype) {
        case LT_U8: ((uint8_t *)d)[i] = (uint8_t)mag; break;
        case LT_U16: ((uint16_t *)d)[i] = (uint16_t)mag; break;
        case LT_U32: ((uint32_t *)d)[i] = (uint32_t)mag; break;
        default: ((uint64_t *)d)[i] = mag; break;
        }
        return true;
    }
    int64_t lo = out->dtype == LT_I8 ? INT8_MIN : out->dtype == LT_I16 ? INT16_MIN
               : out->dtype == LT_I32 ? INT32_MIN : INT64_MIN;
    int64_t hi = -(lo + 1);
    int64_t v;
    if (neg) {
        if (mag > (uint64_t)hi + 1)
            return false;
        v = mag == (uint64_t)hi + 1 ? lo : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)hi)
            return false;
        v = (int64_t)mag;
    }
    switch (out->dtype) {
    case LT_I8: ((int8_t *)d)[i] = (int8_t)v; break;
    case LT_I16: ((int16_t *)d)[i] = (int16_t)v; break;
    case LT_I32: ((int32_t *)d)[i] = (int32_t)v; break;
    default: ((int64_t *)d)[i] = v; break;
    }
    return true;
}

/* Parses text s into out[i]; false when it is not a number of that type. */
static bool parse_elem(const char *s, lt_tensor *out, int64_t i)
{
    const char *b, *e;
    trim(s ? s : "", &b, &e);
    void *d = out->data;
    switch (out->dtype) {
    case LT_F32:
        return parse_float(b, e, &((float *)d)[i]);
    case LT_F16:
    case LT_BF16: {
        float f;
        if (!parse_float(b, e, &f))
            return false;
        ((uint16_t *)d)[i] = out->dtype == LT_F16 ? lt_f32_to_f16(f) : lt_f32_to_bf16(f);
        return true;
    }
    case LT_F64:
        return parse_double(b, e, &((double *)d)[i]);
    case LT_BOOL: {
        size_t n = (size_t)(e - b);
        if (n == 4 && strncasecmp(b, "true", 4) == 0) {
            ((uint8_t *)d)[i] = 1;
            return true;
        }
        if (n == 5 && strncasecmp(b, "false", 5) == 0) {
            ((uint8_t *)d)[i] = 0;
            return true;
        }
        double v;
        if (!parse_double(b, e, &v))
            return false;
        ((uint8_t *)d)[i] = v != 0;
        return true;
    }
    default: {
        bool neg;
        uint64_t mag;
        return parse_int(b, e, &neg, &mag) && store_int(out, i, neg, mag);
    }
    }
}

static bool numeric_dtype(lt_dtype t)
{
    return lt_dtype_is_float(t) || lt_dtype_is_int(t) || t == LT_BOOL;
}

lt_status lt_cpu_cast_string(lt_kctx *k, const lt_tensor *in, lt_dtype to, lt_tensor *out)
{
    if (out->dtype != to || out->numel != in->numel)
        return lt_k_fail(k, LT_ERR_INTERNAL, "cast output does not match its input");
    const char **src = in->data;
    if (in->dtype == LT_STRING && to == LT_STRING) {
        memcpy(out->data, in->data, sizeof(char *) * (size_t)in->numel);
        return LT_OK;
    }
    if (to == LT_STRING) {
        if (!numeric_dtype(in->dtype))
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "cast from %s to string is not supported",
                             lt_dtype_name(in->dtype));
        const char **dst = out->data;
        for (int64_t i = 0; i < in->numel; i++) {
            char buf[64];
            int n = format_elem(in, i, buf, sizeof buf);
            const char *s = n >= 0 ? lt_str_intern(buf, (size_t)n) : NULL;
            if (!s)
                return lt_k_fail(k, LT_ERR_NOMEM, "out of memory interning a string");
            dst[i] = s;
        }
        return LT_OK;
    }
    if (in->dtype != LT_STRING)
        return lt_k_fail(k, LT_ERR_INTERNAL, "string cast with neither side a string");
    if (!numeric_dtype(to))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "cast from string to %s is not supported", lt_dtype_name(to));
    for (int64_t i = 0; i < in->numel; i++)
        if (!parse_elem(src[i], out, i))
            return lt_k_fail(k, LT_ERR_RUNTIME, "element %lld \"%.64s\" is not a valid %s", (long long)i,
                             src[i] ? src[i] : "", lt_dtype_name(to));
    return LT_OK;
}
