/* Scalar scales folded into matrix products, after the AD (on the CPU,
 * after fold_transpose.h): attention's Mul by 1/sqrt(d) on the scores
 * Q K^T, and the AD's Mul of the scores' gradient by the same constant
 * before the two products that read it, each cost a pass over a tensor of
 * batch x heads x tokens x tokens floats. Here
 *   - Mul(P, c), Mul(c, P) or Div(P, c), P a MatMul / MatMulTrans output
 *     read by nothing else, becomes that product with alpha * c (1 / c);
 *   - Mul(X, c), Mul(c, X) or Div(X, c) whose every reader is a MatMul /
 *     MatMulTrans of the same block (neither a block result nor a region
 *     reads it) is dropped: each product reads X and takes c into its
 *     alpha (c^2 when it reads X twice).
 * c is a constant (a Constant node or a frozen initializer) of X's float
 * type holding one finite element, of rank at most X's (the factor is 1 / c
 * for Div). alpha is a float32 attribute: with float64 operands only
 * factors whose alphas are exact in float32 fold (powers of two, the
 * float32 model's constants), with float32 ones the alpha is rounded.
 * MatMulTrans(A, B) {transA, transB, alpha} computes alpha op(A) op(B):
 * the same value up to the rounding of one multiplication. */
#ifndef LT_IR_FOLD_SCALE_H
#define LT_IR_FOLD_SCALE_H

#include "ir.h"

/* Rewrites every block of the module; *nfolded (may be NULL) receives the
 * number of scaling nodes removed. */
lt_status lt_ir_fold_scale(lt_module *m, int *nfolded, lt_err *err);

#endif
