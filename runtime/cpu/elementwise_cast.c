/* CPU kernels: Cast and CastLike, and the any-to-any numeric conversion the
 * other elementwise kernels use to promote float16/bfloat16/int inputs. */
#include "elementwise_bcast.h"
#include "elementwise_vmath.h"
#include "misc_string.h"
#include "../../ir/shape_elementwise.h"
#include <omp.h>
#include <string.h>

/* Every value is loaded into one of three carriers, double (floats),
 * int64_t (signed ints) or uint64_t (unsigned ints, bool), and stored from
 * it; double holds every float16/bfloat16/float32 exactly. */
#define LD_F32(x) ((double)(x))
#define LD_F64(x) ((double)(x))
#define LD_F16(x) ((double)lt_ew_h2f(x))
#define LD_BF16(x) ((double)lt_ew_bf2f(x))
#define LD_I8(x) ((int64_t)(x))
#define LD_I16(x) ((int64_t)(x))
#define LD_I32(x) ((int64_t)(x))
#define LD_I64(x) ((int64_t)(x))
#define LD_U8(x) ((uint64_t)(x))
#define LD_U16(x) ((uint64_t)(x))
#define LD_U32(x) ((uint64_t)(x))
#define LD_U64(x) ((uint64_t)(x))
#define LD_BOOL(x) ((uint64_t)((x) != 0))

#define CT_F32 float
#define CT_F64 double
#define CT_F16 uint16_t
#define CT_BF16 uint16_t
#define CT_I8 int8_t
#define CT_I16 int16_t
#define CT_I32 int32_t
#define CT_I64 int64_t
#define CT_U8 uint8_t
#define CT_U16 uint16_t
#define CT_U32 uint32_t
#define CT_U64 uint64_t
#define CT_BOOL uint8_t

/* Round-to-odd to float: a later rounding to a format with at most 11
 * significant bits (float16, bfloat16) then equals rounding v directly,
 * with no double-rounding error. */
static inline float f64_to_f32_odd(double v)
{
    float f = (float)v;
    if (v != v || isinf(f) || (double)f == v)
        return f;
    uint32_t b;
    memcpy(&b, &f, 4);
    if (fabs((double)f) > fabs(v))
        b -= 1; /* step the magnitude toward zero: truncation */
    b |= 1;
    memcpy(&f, &b, 4);
    return f;
}

static inline float st_f32_f(double v) { return (float)v; }
static inline float st_f32_i(int64_t v) { return (float)v; }
static inline float st_f32_u(uint64_t v) { return (float)v; }
static inline double st_f64_f(double v) { return v; }
static inline double st_f64_i(int64_t v) { return (double)v; }
static inline double st_f64_u(uint64_t v) { return (double)v; }
static inline uint16_t st_f16_f(double v) { return lt_ew_f2h(f64_to_f32_odd(v)); }
static inline uint16_t st_f16_i(int64_t v) { return st_f16_f((double)v); }
static inline uint16_t st_f16_u(uint64_t v) { return st_f16_f((double)v); }
static inline uint16_t st_bf16_f(double v) { return lt_ew_f2bf(f64_to_f32_odd(v)); }
static inline uint16_t st_bf16_i(int64_t v) { return st_bf16_f((double)v); }
static inline uint16_t st_bf16_u(uint64_t v) { return st_bf16_f((double)v); }
static inline uint8_t st_bool_f(double v) { return v != 0; }
static inline uint8_t st_bool_i(int64_t v) { return v != 0; }
static inline uint8_t st_bool_u(uint64_t v) { return v != 0; }

/* float -> int: truncate toward zero, saturate out of range, NaN -> 0 (the
 * spec leaves overflow undefined; C would too, so pick the safe answer) */
#define INT_STORES(sfx, T, MINV, MAXV)                                 \
    static inline T st_##sfx##_f(double v)                             \
    {                                                                  \
        if (v != v)                                                    \
            return 0;                                                  \
        if (v <= (double)(MINV))                                       \
            return MINV;                                               \
        if (v >= (double)(MAXV))                                       \
            return MAXV;                                               \
        return (T)v;                                                   \
    }                                                                  \
    static inline T st_##sfx##_i(int64_t v) { return (T)v; }           \
    static inline T st_##sfx##_u(uint64_t v) { return (T)v; }
INT_STORES(i8, int8_t, INT8_MIN, INT8_MAX)
INT_STORES(i16, int16_t, INT16_MIN, INT16_MAX)
INT_STORES(i32, int32_t, INT32_MIN, INT32_MAX)
INT_STORES(i64, int64_t, INT64_MIN, INT64_MAX)
INT_STORES(u8, uint8_t, 0, UINT8_MAX)
INT_STORES(u16, uint16_t, 0, UINT16_MAX)
INT_STORES(u32, uint32_t, 0, UINT32_MAX)
INT_STORES(u64, uint64_t, 0, UINT64_MAX)

#define ST_F32(v) _Generic((v), double: st_f32_f, int64_t: st_f32_i, uint64_t: st_f32_u)(v)
#define ST_F64(v) _Generic((v), double: st_f64_f, int64_t: st_f64_i, uint64_t: st_f64_u)(v)
#define ST_F16(v) _Generic((v), double: st_f16_f, int64_t: st_f16_i, uint64_t: st_f16_u)(v)
#define ST_BF16(v) _Generic((v), double: st_bf16_f, int64_t: st_bf16_i, uint64_t: st_bf16_u)(v)
#define ST_BOOL(v) _Generic((v), double: st_bool_f, int64_t: st_bool_i, uint64_t: st_bool_u)(v)
#define ST_I8(v) _Generic((v), double: st_i8_f, int64_t: st_i8_i, uint64_t: st_i8_u)(v)
#define ST_I16(v) _Generic((v), double: st_i16_f, int64_t: st_i16_i, uint64_t: st_i16_u)(v)
#define ST_I32(v) _Generic((v), double: st_i32_f, int64_t: st_i32_i, uint64_t: st_i32_u)(v)
#define ST_I64(v) _Generic((v), double: st_i64_f, int64_t: st_i64_i, uint64_t: st_i64_u)(v)
#define ST_U8(v) _Generic((v), double: st_u8_f, int64_t: st_u8_i, uint64_t: st_u8_u)(v)
#define ST_U16(v) _Generic((v), double: st_u16_f, int64_t: st_u16_i, uint64_t: st_u16_u)(v)
#define ST_U32(v) _Generic((v), double: st_u32_f, int64_t: st_u32_i, uint64_t: st_u32_u)(v)
#define ST_U64(v) _Generic((v), double: st_u64_f, int64_t: st_u64_i, uint64_t: st_u64_u)(v)

typedef void (*cast_fn)(void *dst, const void *src, int64_t n);

#define CAST_FN(S, D)                                                        \
    static void cast_##S##_##D(void *dst, const void *src, int64_t n)        \
    {                                                                        \
        const CT_##S *s = src;                                               \
        CT_##D *d = dst;                                                     \
        for (int64_t i = 0; i < n; i++)                                      \
            d[i] = ST_##D(LD_##S(s[i]));                                     \
    }

/* X-macro over destinations (with a fixed source), and a copy over sources
 * (a macro cannot expand itself while nested). */
#define EACH_D(X, S)                                                                                     \
    X(S, F32) X(S, F64) X(S, F16) X(S, BF16) X(S, I8) X(S, I16) X(S, I32) X(S, I64) X(S, U8) X(S, U16) \
        X(S, U32) X(S, U64) X(S, BOOL)
#define EACH_S(X)                                                                                        \
    X(_, F32) X(_, F64) X(_, F16) X(_, BF16) X(_, I8) X(_, I16) X(_, I32) X(_, I64) X(_, U8) X(_, U16) \
        X(_, U32) X(_, U64) X(_, BOOL)

#define DEF_FROM(_, S) EACH_D(CAST_FN, S)
EACH_S(DEF_FROM)

#define TAB_ENT(S, D) [LT_##D] = cast_##S##_##D,
#define TAB_ROW(_, S) [LT_##S] = {EACH_D(TAB_ENT, S)},
static const cast_fn cast_tab[LT_DTYPE_COUNT][LT_DTYPE_COUNT] = {EACH_S(TAB_ROW)};

/* The conversions models run most, without the trip through double. */
static void f32_to_f16(void *dst, const void *src, int64_t n)
{
    const float *s = src;
    uint16_t *d = dst;
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        d[i] = lt_ew_f2h(s[i]);
}

static void f32_to_bf16(void *dst, const void *src, int64_t n)
{
    const float *s = src;
    uint16_t *d = dst;
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        d[i] = lt_ew_f2bf(s[i]);
}

static void f16_to_f32(void *dst, const void *src, int64_t n)
{
    const uint16_t *s = src;
    float *d = dst;
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        d[i] = lt_ew_h2f(s[i]);
}

static void bf16_to_f32(void *dst, const void *src, int64_t n)
{
    const uint16_t *s = src;
    uint32_t *d = dst;
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        d[i] = (uint32_t)s[i] << 16;
}

bool lt_ew_cast_supported(lt_dtype t)
{
    return (unsigned)t < LT_DTYPE_COUNT && cast_tab[t][t] != NULL;
}

void lt_ew_cast(void *dst, lt_dtype dt, const void *src, lt_dtype st, int64_t n)
{
    if (n <= 0 || !lt_ew_cast_supported(dt) || !lt_ew_cast_supported(st))
        return;
    size_t des = lt_dtype_size(dt), ses = lt_dtype_size(st);
    if (dt == st) {
        memcpy(dst, src, (size_t)n * des);
        return;
    }
    cast_fn fn = cast_tab[st][dt];
    if (st == LT_F32 && dt == LT_F16)
        fn = f32_to_f16;
    else if (st == LT_F32 && dt == LT_BF16)
        fn = f32_to_bf16;
    else if (st == LT_F16 && dt == LT_F32)
        fn = f16_to_f32;
    else if (st == LT_BF16 && dt == LT_F32)
        fn = bf16_to_f32;
    if (n < LT_EW_PAR_LIGHT || omp_get_max_threads() == 1 || omp_in_parallel()) {
        fn(dst, src, n);
        return;
    }
#pragma omp parallel
    {
        int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t chunk = ((n + nt - 1) / nt + 63) & ~(int64_t)63;
        int64_t s = t * chunk, e = s + chunk < n ? s + chunk : n;
        if (s < e)
            fn((char *)dst + s * (int64_t)des, (const char *)src + s * (int64_t)ses, e - s);
    }
}

/* Before opset 19 the reference Cast to bfloat16 goes through float32 and
 * then drops the low 16 bits (truncation, NaN kept quiet); opset 19 made it
 * round to nearest even like every other conversion here. A model torch
 * exported rounds to nearest at every opset: PyTorch (whose model it is)
 * and onnxruntime do, and truncating would bias every bfloat16 value of an
 * autocast export toward zero. */
static bool bf16_truncates(lt_kctx *k)
{
    return k->node->opset < 19 && !lt_k_from_pytorch(k);
}

static lt_status cast_bf16_truncating(lt_kctx *k, const lt_tensor *x, lt_tensor *y)
{
    lt_tensor f = *x;
    if (x->dtype != LT_F32) {
        lt_status s = lt_ew_promote(k, x, LT_F32, &f);
        if (s != LT_OK)
            return s;
    }
    const uint32_t *src = f.data;
    uint16_t *dst = y->data;
    int64_t n = x->numel;
#pragma omp parallel for if (n >= LT_EW_PAR_LIGHT) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        uint32_t b = src[i];
        dst[i] = (b & 0x7fffffff) > 0x7f800000 ? (uint16_t)((b >> 16) | 0x40) : (uint16_t)(b >> 16);
    }
    return LT_OK;
}

static bool narrow(lt_dtype t) { return lt_dtype_is_narrow_float(t) || lt_dtype_is_narrow_int(t); }

/* Casts to or from a narrow type, element by element through double (every
 * float8/float4 value and every float16/float32 one is a double exactly)
 * or int64 (integers, so int64 -> int4 keeps its low bits). */
static void cast_narrow(lt_tensor *y, const lt_tensor *x, bool saturate, lt_round_mode rm)
{
    lt_dtype xt = x->dtype, yt = y->dtype;
    bool via_f64 = lt_dtype_is_float(xt) || lt_dtype_is_narrow_float(xt) ||
                   (xt == LT_U64 && lt_dtype_is_narrow_float(yt)); /* beyond int64 */
    int64_t n = x->numel;
    uint8_t *d = y->data;
#pragma omp parallel for if (n >= LT_EW_PAR_LIGHT) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        if (narrow(yt)) {
            if (via_f64)
                d[i] = lt_f64_to_narrow(yt, lt_tensor_get_f64(x, i), saturate, rm);
            else
                d[i] = lt_narrow_from_i64(yt, lt_tensor_get_i64(x, i));
        } else if (via_f64) {
            lt_tensor_set_f64(y, i, lt_tensor_get_f64(x, i));
        } else {
            lt_tensor_set_i64(y, i, lt_tensor_get_i64(x, i));
        }
    }
}

static lt_status cast_to(lt_kctx *k, const lt_tensor *x, lt_dtype to)
{
    if (to == x->dtype && narrow(to))
        return lt_k_out_view(k, 0, x, x->rank, x->dims);
    if ((narrow(x->dtype) || narrow(to)) && x->dtype != LT_STRING && to != LT_STRING && x->dtype != LT_C64 &&
        x->dtype != LT_C128 && to != LT_C64 && to != LT_C128) {
        const char *rm = lt_attr_str(k->node, "round_mode", "up");
        lt_round_mode mode = !strcmp(rm, "up") ? LT_ROUND_UP : !strcmp(rm, "down") ? LT_ROUND_DOWN
                             : !strcmp(rm, "nearest") ? LT_ROUND_NEAREST : (lt_round_mode)-1;
        if ((int)mode < 0)
            return lt_k_fail(k, LT_ERR_INVALID, "round_mode '%s' (expected up, down or nearest)", rm);
        lt_tensor *y;
        lt_status s = lt_k_out(k, 0, to, x->rank, x->dims, &y);
        if (s != LT_OK)
            return s;
        cast_narrow(y, x, lt_attr_int(k->node, "saturate", 1) != 0, mode);
        return LT_OK;
    }
    if (x->dtype == LT_STRING && to == LT_STRING)
        return lt_k_out_view(k, 0, x, x->rank, x->dims);
    if (x->dtype == LT_STRING || to == LT_STRING) {
        lt_tensor *y;
        lt_status s = lt_k_out(k, 0, to, x->rank, x->dims, &y);
        return s == LT_OK ? lt_cpu_cast_string(k, x, to, y) : s;
    }
    if (!lt_ew_cast_supported(x->dtype) || !lt_ew_cast_supported(to))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "cast from %s to %s is not supported", lt_dtype_name(x->dtype),
                         lt_dtype_name(to));
    if (to == x->dtype)
        return lt_k_out_view(k, 0, x, x->rank, x->dims);
    lt_tensor *y;
    lt_status s = lt_k_out(k, 0, to, x->rank, x->dims, &y);
    if (s != LT_OK)
        return s;
    if (to == LT_BF16 && bf16_truncates(k))
        return cast_bf16_truncating(k, x, y);
    lt_ew_cast(y->data, to, x->data, x->dtype, x->numel);
    return LT_OK;
}

static lt_status k_cast(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    lt_dtype to = lt_cast_to_dtype(k->node);
    if (to == LT_UNDEFINED)
        return lt_k_fail(k, LT_ERR_INVALID, "attribute 'to' is missing or names no element type");
    return cast_to(k, x, to);
}

static lt_status k_cast_like(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *like = lt_k_in(k, 1);
    if (!x || !like)
        return lt_k_fail(k, LT_ERR_INVALID, "needs two inputs");
    return cast_to(k, x, like->dtype);
}

void lt_cpu_register_elementwise_cast(lt_kernel_fn *tab)
{
    tab[LT_OP_CAST] = k_cast;
    tab[LT_OP_CAST_LIKE] = k_cast_like;
}
