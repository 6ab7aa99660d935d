/* Transposes folded into matrix products, after the AD: a Transpose that
 * swaps only the last two axes (the AD's transposes around MatMul
 * gradients, K^T in attention, a weight's W^T) feeding a float MatMul
 * becomes a flag of the product, MatMulTrans(A, B) {transA, transB}, that
 * reads the operand where it lies; a Transpose of a MatMul's output (read
 * by nothing else) becomes the product of the swapped operands, since
 * (A B)^T = B^T A^T, and so does one of a Gemm without C (the AD's
 * weight gradients) with its flags swapped. Transposes left without readers are removed. The
 * values computed are those of the unfolded program (the same products of
 * the same elements). Operands of rank below 2 are left alone. */
#ifndef LT_IR_FOLD_TRANSPOSE_H
#define LT_IR_FOLD_TRANSPOSE_H

#include "ir.h"

/* Rewrites every block of the module; *nfolded (may be NULL) receives the
 * number of transposes folded. */
lt_status lt_ir_fold_transpose(lt_module *m, int *nfolded, lt_err *err);

#endif
