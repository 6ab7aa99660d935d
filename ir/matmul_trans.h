/* MatMulTrans nodes as the post-AD rewrites read and write them
 * (fold_transpose, fold_scale): a product Y = alpha * op(A) op(B), where
 * op transposes the last two axes when transA / transB is set. A MatMul is
 * the same product with neither flag and alpha 1. */
#ifndef LT_IR_MATMUL_TRANS_H
#define LT_IR_MATMUL_TRANS_H

#include "ir.h"

/* n is a MatMul or MatMulTrans of two float32 or float64 tensors of rank
 * >= 2, with one output and no regions */
bool lt_ir_is_float_product(const lt_node *n);
/* n's transA or transB (name) as 0 or 1; 0 for a MatMul */
int64_t lt_ir_product_trans(const lt_node *n, const char *name);
/* n's alpha; 1 for a MatMul */
float lt_ir_product_alpha(const lt_node *n);
/* n becomes MatMulTrans(a, b) {transA ta, transB tb, alpha where it is not
 * 1}; its attributes are replaced, its inputs reused where it has two */
lt_status lt_ir_set_product(lt_module *m, lt_node *n, lt_ival *a, lt_ival *b, int64_t ta, int64_t tb, float alpha);

#endif
