/* Shape inference rules: elementwise family (unary math, activations,
 * broadcasting binary and variadic ops, Where, Clip, Cast). */
#include "infer.h"
#include "shape_elementwise.h"
#include <string.h>

lt_dtype lt_cast_to_dtype(const lt_node *n)
{
    static const char *const names[LT_DTYPE_COUNT] = {
        [LT_F32] = "FLOAT",   [LT_U8] = "UINT8",     [LT_I8] = "INT8",         [LT_U16] = "UINT16",
        [LT_I16] = "INT16",   [LT_I32] = "INT32",    [LT_I64] = "INT64",       [LT_STRING] = "STRING",
        [LT_BOOL] = "BOOL",   [LT_F16] = "FLOAT16",  [LT_F64] = "DOUBLE",      [LT_U32] = "UINT32",
        [LT_U64] = "UINT64",  [LT_C64] = "COMPLEX64", [LT_C128] = "COMPLEX128", [LT_BF16] = "BFLOAT16",
        [LT_F8E4M3FN] = "FLOAT8E4M3FN", [LT_F8E4M3FNUZ] = "FLOAT8E4M3FNUZ", [LT_F8E5M2] = "FLOAT8E5M2",
        [LT_F8E5M2FNUZ] = "FLOAT8E5M2FNUZ", [LT_U4] = "UINT4", [LT_I4] = "INT4", [LT_F4E2M1] = "FLOAT4E2M1",
        [LT_F8E8M0] = "FLOAT8E8M0", [LT_U2] = "UINT2", [LT_I2] = "INT2",
    };
    const lt_attr *a = lt_attr_find(n, "to");
    if (!a)
        return LT_UNDEFINED;
    if (a->kind == LT_ATTR_STRING && a->s) {
        for (int t = 1; t < LT_DTYPE_COUNT; t++)
            if (names[t] && strcmp(a->s, names[t]) == 0)
                return (lt_dtype)t;
        return LT_UNDEFINED;
    }
    if (a->kind == LT_ATTR_INT && a->i > 0 && a->i < LT_DTYPE_COUNT)
        return (lt_dtype)a->i;
    return LT_UNDEFINED;
}

/* The tensor type of input i, NULL when omitted or not a tensor. */
static const lt_type *in_type(const lt_node *n, int i)
{
    if (i >= n->nin || !n->in[i] || n->in[i]->type.kind != LT_KIND_TENSOR)
        return NULL;
    return &n->in[i]->type;
}

static void set_out(lt_node *n, const lt_type *t)
{
    if (n->nout > 0 && n->out[0])
        n->out[0]->type = *t;
}

static lt_status same(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    if (in_type(n, 0))
        lt_infer_same(n, 0, 0);
    return LT_OK;
}

static lt_status same_bool(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *x = in_type(n, 0);
    if (x) {
        lt_type t = *x;
        t.dtype = LT_BOOL;
        set_out(n, &t);
    }
    return LT_OK;
}

/* Numpy broadcast of inputs [first, nin); dtype from input dt_from. */
static lt_status bcast(lt_infer_ctx *c, lt_node *n, int first, int dt_from, lt_dtype force)
{
    lt_type acc;
    bool have = false;
    for (int i = first; i < n->nin; i++) {
        const lt_type *t = in_type(n, i);
        if (!t)
            return LT_OK; /* cannot tell */
        if (!have) {
            acc = *t;
            have = true;
        } else {
            lt_type prev = acc; /* the helper writes out before reading a */
            if (!lt_infer_broadcast(&prev, t, &acc))
                return lt_infer_fail(c, n, "input %d does not broadcast with the inputs before it", i);
        }
    }
    if (!have)
        return LT_OK;
    const lt_type *d = in_type(n, dt_from);
    acc.dtype = force != LT_UNDEFINED ? force : d ? d->dtype : LT_UNDEFINED;
    set_out(n, &acc);
    return LT_OK;
}

/* Binary ops: opset < 7 only broadcast B onto A when asked (output = A). */
static lt_status binary_as(lt_infer_ctx *c, lt_node *n, lt_dtype force)
{
    if (n->opset < 7 && lt_attr_int(n, "broadcast", 0)) {
        const lt_type *a = in_type(n, 0);
        if (a) {
            lt_type t = *a;
            if (force != LT_UNDEFINED)
                t.dtype = force;
            set_out(n, &t);
        }
        return LT_OK;
    }
    return bcast(c, n, 0, 0, force);
}

static lt_status binary(lt_infer_ctx *c, lt_node *n) { return binary_as(c, n, LT_UNDEFINED); }
static lt_status binary_bool(lt_infer_ctx *c, lt_node *n) { return binary_as(c, n, LT_BOOL); }
static lt_status variadic(lt_infer_ctx *c, lt_node *n) { return bcast(c, n, 0, 0, LT_UNDEFINED); }
static lt_status where(lt_infer_ctx *c, lt_node *n) { return bcast(c, n, 0, 1, LT_UNDEFINED); }

static lt_status cast(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    lt_dtype to = lt_cast_to_dtype(n);
    if (!x || to == LT_UNDEFINED)
        return LT_OK;
    lt_type t = *x;
    t.dtype = to;
    set_out(n, &t);
    return LT_OK;
}

static lt_status cast_like(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *x = in_type(n, 0), *like = in_type(n, 1);
    if (!x || !like)
        return LT_OK;
    lt_type t = *x;
    t.dtype = like->dtype;
    set_out(n, &t);
    return LT_OK;
}

/* SwiGLU: A and B of one shape (no broadcasting), Y like A */
static lt_status swiglu(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *a = in_type(n, 0), *b = in_type(n, 1);
    if (!a)
        return LT_OK;
    if (b && a->rank >= 0 && b->rank >= 0) {
        bool same = a->rank == b->rank;
        for (int i = 0; same && i < a->rank; i++)
            same = !(a->dims[i].sym < 0 && b->dims[i].sym < 0 && a->dims[i].v >= 0 && b->dims[i].v >= 0 &&
                     a->dims[i].v != b->dims[i].v);
        if (!same)
            return lt_infer_fail(c, n, "A and B must have the same shape (SwiGLU does not broadcast)");
    }
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

void lt_infer_register_elementwise(lt_infer_fn *tab)
{
    static const lt_op same_ops[] = {
        LT_OP_ABS, LT_OP_ACOS, LT_OP_ACOSH, LT_OP_ASIN, LT_OP_ASINH, LT_OP_ATAN, LT_OP_ATANH, LT_OP_COS,
        LT_OP_COSH, LT_OP_SIN, LT_OP_SINH, LT_OP_TAN, LT_OP_TANH, LT_OP_EXP, LT_OP_LOG, LT_OP_SQRT,
        LT_OP_RECIPROCAL, LT_OP_NEG, LT_OP_FLOOR, LT_OP_CEIL, LT_OP_ROUND, LT_OP_SIGN, LT_OP_ERF, LT_OP_NOT,
        LT_OP_BITWISE_NOT, LT_OP_SIGMOID, LT_OP_RELU, LT_OP_ELU, LT_OP_SELU, LT_OP_CELU, LT_OP_LEAKY_RELU,
        LT_OP_HARD_SIGMOID, LT_OP_HARD_SWISH, LT_OP_SOFTPLUS, LT_OP_SOFTSIGN, LT_OP_THRESHOLDED_RELU,
        LT_OP_GELU, LT_OP_MISH, LT_OP_SHRINK, LT_OP_P_RELU, LT_OP_CLIP, LT_OP_SWISH,
    };
    static const lt_op binary_ops[] = {
        LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_DIV, LT_OP_POW, LT_OP_MOD, LT_OP_BIT_SHIFT,
        LT_OP_BITWISE_AND, LT_OP_BITWISE_OR, LT_OP_BITWISE_XOR, LT_OP_RELU_GRAD,
    };
    static const lt_op bool_ops[] = {
        LT_OP_AND, LT_OP_OR, LT_OP_XOR, LT_OP_EQUAL, LT_OP_GREATER, LT_OP_GREATER_OR_EQUAL,
        LT_OP_LESS, LT_OP_LESS_OR_EQUAL,
    };
    for (size_t i = 0; i < sizeof same_ops / sizeof *same_ops; i++)
        tab[same_ops[i]] = same;
    for (size_t i = 0; i < sizeof binary_ops / sizeof *binary_ops; i++)
        tab[binary_ops[i]] = binary;
    for (size_t i = 0; i < sizeof bool_ops / sizeof *bool_ops; i++)
        tab[bool_ops[i]] = binary_bool;
    tab[LT_OP_IS_INF] = same_bool;
    tab[LT_OP_IS_NA_N] = same_bool;
    tab[LT_OP_MAX] = variadic;
    tab[LT_OP_MIN] = variadic;
    tab[LT_OP_SUM] = variadic;
    tab[LT_OP_MEAN] = variadic;
    tab[LT_OP_WHERE] = where;
    tab[LT_OP_SWI_GLU] = swiglu;
    tab[LT_OP_CAST] = cast;
    tab[LT_OP_CAST_LIKE] = cast_like;
}
