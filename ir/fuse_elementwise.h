/* Elementwise fusion: chains of float32 elementwise nodes of one shape
 * (Add, Sub, Mul, Div, Neg, Exp, Erf, Tanh, Sigmoid, Sqrt, Reciprocal,
 * Softplus)
 * become one FusedElementwise node that computes them tile by tile, so the
 * values only the chain reads never reach memory and the rest are written
 * once. The operands of a chain are full tensors of its shape, single
 * elements, or rows along its last axis (a bias).
 *
 * FusedElementwise(x0, x1, ...) -> (y0, y1, ...) has two attributes:
 *   program: 3 ints per step, (code, a, b): register nin + s = code(reg a,
 *            reg b) for step s (b is -1 for a unary code); registers 0 ..
 *            nin - 1 are the inputs;
 *   outputs: the register each output is.
 * Input 0 is a full tensor: every output has its shape. */
#ifndef LT_IR_FUSE_ELEMENTWISE_H
#define LT_IR_FUSE_ELEMENTWISE_H

#include "ir.h"

typedef enum lt_fe_code {
    LT_FE_ADD,
    LT_FE_SUB,
    LT_FE_MUL,
    LT_FE_DIV,
    LT_FE_NEG,
    LT_FE_EXP,
    LT_FE_ERF,
    LT_FE_TANH,
    LT_FE_SIGMOID,
    LT_FE_SQRT,
    LT_FE_RECIPROCAL,
    LT_FE_SOFTPLUS,
    LT_FE_COUNT
} lt_fe_code;

/* the most steps one FusedElementwise node holds */
#define LT_FE_MAX_STEPS 24

/* Whether a code takes two registers. */
static inline bool lt_fe_binary(int code) { return code >= LT_FE_ADD && code <= LT_FE_DIV; }

/* Fuses every block of the module (main graph, functions, regions). The
 * program's meaning is unchanged; only float32 chains of two or more nodes
 * are touched. */
lt_status lt_ir_fuse_elementwise(lt_module *m, lt_err *err);

#endif
