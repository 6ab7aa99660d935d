/* Private helpers of the tensor family's shape rules (ir/shape_tensor*.c). */
#ifndef LT_SHAPE_TENSOR_UTIL_H
#define LT_SHAPE_TENSOR_UTIL_H

#include "infer.h"

/* Input i's type, NULL when the input is omitted. */
const lt_type *lt_ti_in(const lt_node *n, int i);
/* Sets output i's type when the output is present. */
void lt_ti_set(lt_node *n, int i, const lt_type *t);
/* Whether d is a known constant size. */
bool lt_ti_static(lt_dim d);
lt_dim lt_ti_dim(int64_t v); /* a constant dim; v < 0 gives unknown */

/* The integer values behind v when import can know them: an initializer or
 * Constant (any value_* form) holding a 0-D/1-D integer tensor of at most max
 * values, or Shape of a tensor whose dims are all static. */
bool lt_ti_const_ints(lt_infer_ctx *c, const lt_ival *v, int64_t *out, int max, int *len);
/* A scalar constant (any numeric type) as a double. */
bool lt_ti_const_f64(lt_infer_ctx *c, const lt_ival *v, double *out);
/* The length of a 1-D value when its type tells it, else -1. */
int64_t lt_ti_len(const lt_ival *v);

void lt_ti_register_ops(lt_infer_fn *tab);

#endif
