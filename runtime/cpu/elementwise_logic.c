/* CPU kernels: comparisons (Equal, Greater, Less, ...OrEqual), logical
 * And/Or/Xor, BitwiseAnd/Or/Xor, BitShift and Where, all with numpy
 * broadcasting. */
#include "elementwise_bcast.h"

#define BROW LT_EW_BINARY_ROW
#define L LT_EW_PAR_LIGHT

LT_EW_NUMS(BROW, eq, LT_EW_BOOL, x == y)
BROW(eq_b, uint8_t, uint8_t, uint32_t, (x != 0) == (y != 0))
LT_EW_NUMS(BROW, gt, LT_EW_BOOL, x > y)
LT_EW_NUMS(BROW, ge, LT_EW_BOOL, x >= y)
LT_EW_NUMS(BROW, lt, LT_EW_BOOL, x < y)
LT_EW_NUMS(BROW, le, LT_EW_BOOL, x <= y)
static const lt_ew_row eq_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(eq)[LT_BOOL] = eq_b};
static const lt_ew_row gt_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(gt)};
static const lt_ew_row ge_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(ge)};
static const lt_ew_row lt_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(lt)};
static const lt_ew_row le_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_NUMS(le)};

BROW(and_b, uint8_t, uint8_t, uint32_t, (x != 0) & (y != 0))
BROW(or_b, uint8_t, uint8_t, uint32_t, (x != 0) | (y != 0))
BROW(xor_b, uint8_t, uint8_t, uint32_t, (x != 0) ^ (y != 0))
static const lt_ew_row and_rows[LT_DTYPE_COUNT] = {[LT_BOOL] = and_b};
static const lt_ew_row or_rows[LT_DTYPE_COUNT] = {[LT_BOOL] = or_b};
static const lt_ew_row xor_rows[LT_DTYPE_COUNT] = {[LT_BOOL] = xor_b};

LT_EW_INTS(BROW, band, LT_EW_SAME, x & y)
LT_EW_INTS(BROW, bor, LT_EW_SAME, x | y)
LT_EW_INTS(BROW, bxor, LT_EW_SAME, x ^ y)
static const lt_ew_row band_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_INTS(band)};
static const lt_ew_row bor_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_INTS(bor)};
static const lt_ew_row bxor_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_INTS(bxor)};

/* Shifting by the width or more gives 0 (C leaves it undefined). */
LT_EW_UINTS(BROW, shl, LT_EW_SAME, y >= 8 * sizeof(ti_t) ? 0 : (ut_t)x << y)
LT_EW_UINTS(BROW, shr, LT_EW_SAME, y >= 8 * sizeof(ti_t) ? 0 : x >> y)
/* Signed (opset 28): a shift by a negative amount or by the width or more
 * leaves only the sign fill, -1 right of a negative x and 0 otherwise; left
 * shifts go through the unsigned type (bits past the sign are dropped), right
 * shifts of a negative x through its complement, so nothing is undefined. */
#define SHIFT_OUT(y) ((y) < 0 || (uint64_t)(y) >= 8 * sizeof(ti_t))
LT_EW_SINTS(BROW, shl_s, LT_EW_SAME, SHIFT_OUT(y) ? 0 : (ti_t)((ut_t)x << y))
LT_EW_SINTS(BROW, shr_s, LT_EW_SAME, SHIFT_OUT(y) ? (x < 0 ? -1 : 0) : x < 0 ? ~(~x >> y) : x >> y)
static const lt_ew_row shl_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_UINTS(shl) LT_EW_TAB_SINTS(shl_s)};
static const lt_ew_row shr_rows[LT_DTYPE_COUNT] = {LT_EW_TAB_UINTS(shr) LT_EW_TAB_SINTS(shr_s)};

#define BIN_KERNEL(name, rows, out)                                  \
    static lt_status name(lt_kctx *k)                                \
    {                                                                \
        static const lt_ew_op o = {rows, out, false, L};             \
        return lt_ew_binary(k, &o, NULL);                            \
    }
BIN_KERNEL(k_equal, eq_rows, LT_EW_OUT_BOOL)
BIN_KERNEL(k_greater, gt_rows, LT_EW_OUT_BOOL)
BIN_KERNEL(k_greater_eq, ge_rows, LT_EW_OUT_BOOL)
BIN_KERNEL(k_less, lt_rows, LT_EW_OUT_BOOL)
BIN_KERNEL(k_less_eq, le_rows, LT_EW_OUT_BOOL)
BIN_KERNEL(k_and, and_rows, LT_EW_OUT_SAME)
BIN_KERNEL(k_or, or_rows, LT_EW_OUT_SAME)
BIN_KERNEL(k_xor, xor_rows, LT_EW_OUT_SAME)
BIN_KERNEL(k_band, band_rows, LT_EW_OUT_SAME)
BIN_KERNEL(k_bor, bor_rows, LT_EW_OUT_SAME)
BIN_KERNEL(k_bxor, bxor_rows, LT_EW_OUT_SAME)

static lt_status k_bitshift(lt_kctx *k)
{
    static const lt_ew_op left = {shl_rows, LT_EW_OUT_SAME, false, L};
    static const lt_ew_op right = {shr_rows, LT_EW_OUT_SAME, false, L};
    const char *dir = lt_attr_str(k->node, "direction", "");
    const lt_tensor *x = lt_k_in(k, 0);
    lt_dtype dt = x ? x->dtype : LT_UNDEFINED;
    if (lt_dtype_is_int(dt) && lt_dtype_is_signed(dt) && k->node->opset < 28)
        return lt_k_fail(k, LT_ERR_INVALID, "BitShift on %s tensors needs opset 28 (the node has opset %d)",
                         lt_dtype_name(dt), k->node->opset);
    if (strcmp(dir, "LEFT") == 0)
        return lt_ew_binary(k, &left, NULL);
    if (strcmp(dir, "RIGHT") == 0)
        return lt_ew_binary(k, &right, NULL);
    return lt_k_fail(k, LT_ERR_INVALID, "direction must be LEFT or RIGHT, not '%s'", dir);
}

/* ---- Where: rows by element size, the bytes are only copied ---- */
#define WHERE_ROW(name, T)                                                                               \
    static void name(const void *par, int64_t n, void *out, const void *const *in, const int64_t *st)    \
    {                                                                                                    \
        const uint8_t *c = in[0];                                                                        \
        const T *x = in[1], *y = in[2];                                                                  \
        T *o = out;                                                                                      \
        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {                                                    \
            /* both loads unconditional, so the select vectorizes */                                   \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                          \
            {                                                                                            \
                T xv = x[i], yv = y[i];                                                                  \
                o[i] = c[i] ? xv : yv;                                                                   \
            }                                                                                            \
        } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {                                             \
            /* a scalar Y (Relu's gradient: Where(x > 0, dy, 0)) */                                     \
            const T yv = y[0];                                                                           \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                          \
            {                                                                                            \
                T xv = x[i];                                                                             \
                o[i] = c[i] ? xv : yv;                                                                   \
            }                                                                                            \
        } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {                                             \
            const T xv = x[0];                                                                           \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                          \
            {                                                                                            \
                T yv = y[i];                                                                             \
                o[i] = c[i] ? xv : yv;                                                                   \
            }                                                                                            \
        } else {                                                                                         \
            for (int64_t i = 0; i < n; i++)                                                              \
                o[i] = c[i * st[0]] ? x[i * st[1]] : y[i * st[2]];                                       \
        }                                                                                                \
    }
WHERE_ROW(where_1, uint8_t)
WHERE_ROW(where_2, uint16_t)
WHERE_ROW(where_4, uint32_t)
WHERE_ROW(where_8, uint64_t)

static lt_status k_where(lt_kctx *k)
{
    const lt_tensor *in[3] = {lt_k_in(k, 0), lt_k_in(k, 1), lt_k_in(k, 2)};
    if (!in[0] || !in[1] || !in[2])
        return lt_k_fail(k, LT_ERR_INVALID, "needs inputs condition, X and Y");
    if (in[0]->dtype != LT_BOOL)
        return lt_k_fail(k, LT_ERR_INVALID, "condition must be bool, not %s", lt_dtype_name(in[0]->dtype));
    lt_dtype dt = in[1]->dtype;
    if (dt != in[2]->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "X is %s but Y is %s", lt_dtype_name(dt), lt_dtype_name(in[2]->dtype));
    lt_ew_row row = NULL;
    switch (dt == LT_STRING ? 0 : lt_dtype_size(dt)) {
    case 1: row = where_1; break;
    case 2: row = where_2; break;
    case 4: row = where_4; break;
    case 8: row = where_8; break;
    default: return lt_k_fail(k, LT_ERR_UNSUPPORTED, "Where on %s tensors is not supported", lt_dtype_name(dt));
    }
    lt_ew_bcast bc;
    lt_status s = lt_ew_bcast_init(k, &bc, 3, in, -1, NULL);
    if (s != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, dt, bc.out_rank, bc.out_dims, &y)) != LT_OK)
        return s;
    const void *ptr[3] = {in[0]->data, in[1]->data, in[2]->data};
    lt_ew_bcast_run(&bc, y->data, lt_dtype_size(dt), ptr, row, NULL, L);
    return LT_OK;
}

void lt_cpu_register_elementwise_logic(lt_kernel_fn *tab)
{
    tab[LT_OP_EQUAL] = k_equal;
    tab[LT_OP_GREATER] = k_greater;
    tab[LT_OP_GREATER_OR_EQUAL] = k_greater_eq;
    tab[LT_OP_LESS] = k_less;
    tab[LT_OP_LESS_OR_EQUAL] = k_less_eq;
    tab[LT_OP_AND] = k_and;
    tab[LT_OP_OR] = k_or;
    tab[LT_OP_XOR] = k_xor;
    tab[LT_OP_BITWISE_AND] = k_band;
    tab[LT_OP_BITWISE_OR] = k_bor;
    tab[LT_OP_BITWISE_XOR] = k_bxor;
    tab[LT_OP_BIT_SHIFT] = k_bitshift;
    tab[LT_OP_WHERE] = k_where;
}
