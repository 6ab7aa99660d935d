/* Private to the elementwise family (runtime/cpu/elementwise*.c): the numpy
 * broadcasting iterator, the generic unary/binary drivers with their dtype
 * promotion, and the macros that stamp out per-dtype row loops. */
#ifndef LT_ELEMENTWISE_BCAST_H
#define LT_ELEMENTWISE_BCAST_H

/* Nothing here reads floating-point exception flags; without this, GCC
 * will not if-convert (and so not vectorize) loops whose selects guard
 * float arithmetic (Relu, Max, the clamps inside exp/tanh). It applies to
 * every function the including file defines after this point. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "../runtime.h"
#include "par.h"
#include <math.h>
#include <string.h>

#define LT_EW_MAX_IN 4
/* Elements below which a loop stays on one thread; cheap ops need more work
 * per thread to win back the fork/join cost than transcendental ones. */
#define LT_EW_PAR_LIGHT LT_PAR_ELEMS
#define LT_EW_PAR_HEAVY (LT_PAR_ELEMS / 8)

/* One row of the iteration: n contiguous output elements; input j starts at
 * in[j] and advances step[j] elements per output element (0 = broadcast).
 * par carries the op's attributes. */
typedef void (*lt_ew_row)(const void *par, int64_t n, void *out, const void *const *in, const int64_t *step);

/* Broadcast of nin inputs onto one output. Size-1 output dims are dropped
 * and neighbours whose strides chain are merged, so equal shapes become one
 * row of numel elements and a per-channel operand becomes rows with step 0. */
typedef struct lt_ew_bcast {
    int nin;
    int rank; /* coalesced, >= 1 */
    int64_t dims[LT_MAX_RANK];
    int64_t st[LT_EW_MAX_IN][LT_MAX_RANK]; /* element strides, 0 where broadcast */
    size_t es[LT_EW_MAX_IN];               /* input element sizes */
    int64_t numel;
    int out_rank; /* the output shape, uncoalesced */
    int64_t out_dims[LT_MAX_RANK];
} lt_ew_bcast;

/* rank < 0: the output shape is the numpy broadcast of the inputs (fails the
 * kernel on a mismatch). Otherwise every input must broadcast to (rank,
 * dims) one-directionally. */
lt_status lt_ew_bcast_init(lt_kctx *k, lt_ew_bcast *bc, int nin, const lt_tensor *const *in, int rank,
                           const int64_t *dims);
/* Runs row over the whole output (out_es bytes per output element), split
 * across OpenMP threads when numel >= par_min. */
void lt_ew_bcast_run(const lt_ew_bcast *bc, void *out, size_t out_es, const void *const *in, lt_ew_row row,
                     const void *par, int64_t par_min);

/* Converts n elements between any two numeric dtypes (incl. bool, float16,
 * bfloat16): float -> int truncates toward zero and saturates (NaN -> 0),
 * int -> narrower int wraps, anything -> bool is "!= 0". */
void lt_ew_cast(void *dst, lt_dtype dt, const void *src, lt_dtype st, int64_t n);
bool lt_ew_cast_supported(lt_dtype t);

/* A copy of src converted to dtype cd in kernel scratch memory. */
lt_status lt_ew_promote(lt_kctx *k, const lt_tensor *src, lt_dtype cd, lt_tensor *dst);

/* Which dtype a row table computes dtype dt in: dt itself, float32 for
 * float16/bfloat16, float64 for ints (and bool) when via_f64; else
 * LT_UNDEFINED. */
lt_dtype lt_ew_compute_dtype(const lt_ew_row *rows, lt_dtype dt, bool via_f64);

enum { LT_EW_OUT_SAME = 0, LT_EW_OUT_BOOL = 1 };

typedef struct lt_ew_op {
    const lt_ew_row *rows; /* by input dtype (LT_DTYPE_COUNT entries) */
    int out;               /* LT_EW_OUT_SAME or LT_EW_OUT_BOOL */
    bool via_f64;          /* integer inputs may be computed in float64 */
    int64_t par_min;
} lt_ew_op;

/* Unary: output = f(input 0), same shape. */
lt_status lt_ew_unary(lt_kctx *k, const lt_ew_op *op, const void *par);
/* Binary with numpy broadcasting (and the opset < 7 broadcast/axis
 * attributes); both inputs must have the same dtype. */
lt_status lt_ew_binary(lt_kctx *k, const lt_ew_op *op, const void *par);
/* Opset < 7 binary ops broadcast only when attribute broadcast=1, aligning
 * B with A's dims from `axis` on: then *b becomes tmp, a view of B with
 * trailing 1s, which numpy broadcasting handles. */
lt_status lt_ew_legacy_bcast(lt_kctx *k, const lt_tensor *a, const lt_tensor **b, lt_tensor *tmp);
/* The engine under both: converts the nin inputs to compute dtype cd (which
 * must have a row), runs it, and writes output 0 as dtype odt (converted
 * from cd unless the op's output is bool). rank < 0: numpy broadcast shape;
 * else the fixed output shape (one-directional broadcast, PRelu). */
lt_status lt_ew_run(lt_kctx *k, const lt_ew_op *op, const void *par, int nin, const lt_tensor *const *in,
                    lt_dtype cd, lt_dtype odt, int rank, const int64_t *dims);
/* Fails the kernel: op not defined for dtype t. */
lt_status lt_ew_fail_dtype(lt_kctx *k, lt_dtype t);

/* Attributes the activation and clip rows read. */
typedef struct lt_ew_par {
    float alpha, beta, gamma, lambd, bias;
    int flag_a, flag_b;
    _Alignas(8) unsigned char lo[8]; /* Clip bounds in the input's own dtype */
    _Alignas(8) unsigned char hi[8];
} lt_ew_par;

void lt_cpu_register_elementwise_unary(lt_kernel_fn *tab);
void lt_cpu_register_elementwise_act(lt_kernel_fn *tab);
void lt_cpu_register_elementwise_arith(lt_kernel_fn *tab);
void lt_cpu_register_elementwise_logic(lt_kernel_fn *tab);
void lt_cpu_register_elementwise_variadic(lt_kernel_fn *tab);
void lt_cpu_register_elementwise_cast(lt_kernel_fn *tab);

/* ---- row generators ----
 * EXPR reads the current elements as x (and y) and may use `p` (the op's
 * lt_ew_par, possibly unused), ti_t (the input C type) and ut_t: an
 * unsigned type wide enough that integer +,-,* wrap instead of overflowing
 * (the float type itself for floats). The result is converted to TO. */
#define LT_EW_UNARY_ROW(name, TI, TO, UT, EXPR)                                                            \
    static void name(const void *par_, int64_t n, void *out_, const void *const *in_, const int64_t *step_) \
    {                                                                                                      \
        /* a local copy: loads from it may be if-converted, loads through par_ not */                     \
        const lt_ew_par pv_ = par_ ? *(const lt_ew_par *)par_ : (lt_ew_par){0};                            \
        const lt_ew_par *p = &pv_;                                                                         \
        typedef TI ti_t;                                                                                   \
        typedef UT ut_t;                                                                                   \
        (void)p;                                                                                           \
        (void)step_;                                                                                       \
        (void)sizeof(ti_t);                                                                                \
        (void)sizeof(ut_t);                                                                                \
        const TI *a_ = in_[0];                                                                             \
        TO *o_ = out_;                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                                \
        {                                                                                                  \
            TI x = a_[i];                                                                                  \
            o_[i] = (TO)(EXPR);                                                                            \
        }                                                                                                  \
    }

#define LT_EW_BINARY_ROW(name, TI, TO, UT, EXPR)                                                           \
    static void name(const void *par_, int64_t n, void *out_, const void *const *in_, const int64_t *step_) \
    {                                                                                                      \
        /* a local copy: loads from it may be if-converted, loads through par_ not */                     \
        const lt_ew_par pv_ = par_ ? *(const lt_ew_par *)par_ : (lt_ew_par){0};                            \
        const lt_ew_par *p = &pv_;                                                                         \
        typedef TI ti_t;                                                                                   \
        typedef UT ut_t;                                                                                   \
        (void)p;                                                                                           \
        (void)sizeof(ti_t);                                                                                \
        (void)sizeof(ut_t);                                                                                \
        const TI *a_ = in_[0], *b_ = in_[1];                                                               \
        TO *o_ = out_;                                                                                     \
        int64_t sa_ = step_[0], sb_ = step_[1];                                                            \
        if (sa_ == 1 && sb_ == 1) {                                                                        \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                            \
            {                                                                                              \
                TI x = a_[i], y = b_[i];                                                                   \
                (void)y;                                                                                   \
                o_[i] = (TO)(EXPR);                                                                        \
            }                                                                                              \
        } else if (sa_ == 1 && sb_ == 0) {                                                                 \
            const TI y = b_[0];                                                                            \
            (void)y;                                                                                       \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                            \
            {                                                                                              \
                TI x = a_[i];                                                                              \
                o_[i] = (TO)(EXPR);                                                                        \
            }                                                                                              \
        } else if (sa_ == 0 && sb_ == 1) {                                                                 \
            const TI x = a_[0];                                                                            \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                            \
            {                                                                                              \
                TI y = b_[i];                                                                              \
                (void)y;                                                                                   \
                o_[i] = (TO)(EXPR);                                                                        \
            }                                                                                              \
        } else {                                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                              \
                TI x = a_[i * sa_], y = b_[i * sb_];                                                       \
                (void)y;                                                                                   \
                o_[i] = (TO)(EXPR);                                                                        \
            }                                                                                              \
        }                                                                                                  \
    }

/* Stamps GEN(name_sfx, C type, wrap type, ...) for every dtype of a class. */
#define LT_EW_FLOATS(GEN, op, TOB, EXPR) \
    GEN(op##_f32, float, TOB(float), float, EXPR) GEN(op##_f64, double, TOB(double), double, EXPR)
#define LT_EW_SINTS(GEN, op, TOB, EXPR)                              \
    GEN(op##_i8, int8_t, TOB(int8_t), uint32_t, EXPR)                \
    GEN(op##_i16, int16_t, TOB(int16_t), uint32_t, EXPR)             \
    GEN(op##_i32, int32_t, TOB(int32_t), uint32_t, EXPR)             \
    GEN(op##_i64, int64_t, TOB(int64_t), uint64_t, EXPR)
#define LT_EW_UINTS(GEN, op, TOB, EXPR)                              \
    GEN(op##_u8, uint8_t, TOB(uint8_t), uint32_t, EXPR)              \
    GEN(op##_u16, uint16_t, TOB(uint16_t), uint32_t, EXPR)           \
    GEN(op##_u32, uint32_t, TOB(uint32_t), uint32_t, EXPR)           \
    GEN(op##_u64, uint64_t, TOB(uint64_t), uint64_t, EXPR)
#define LT_EW_INTS(GEN, op, TOB, EXPR) LT_EW_SINTS(GEN, op, TOB, EXPR) LT_EW_UINTS(GEN, op, TOB, EXPR)
#define LT_EW_NUMS(GEN, op, TOB, EXPR) LT_EW_FLOATS(GEN, op, TOB, EXPR) LT_EW_INTS(GEN, op, TOB, EXPR)

/* Output-type selectors for the stampers. */
#define LT_EW_SAME(T) T
#define LT_EW_BOOL(T) uint8_t

/* Table entries matching the stampers. */
#define LT_EW_TAB_FLOATS(op) [LT_F32] = op##_f32, [LT_F64] = op##_f64,
#define LT_EW_TAB_SINTS(op) [LT_I8] = op##_i8, [LT_I16] = op##_i16, [LT_I32] = op##_i32, [LT_I64] = op##_i64,
#define LT_EW_TAB_UINTS(op) [LT_U8] = op##_u8, [LT_U16] = op##_u16, [LT_U32] = op##_u32, [LT_U64] = op##_u64,
#define LT_EW_TAB_INTS(op) LT_EW_TAB_SINTS(op) LT_EW_TAB_UINTS(op)
#define LT_EW_TAB_NUMS(op) LT_EW_TAB_FLOATS(op) LT_EW_TAB_INTS(op)

#endif
