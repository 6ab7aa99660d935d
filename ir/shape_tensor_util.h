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

/* One element of a folded integer value: a constant v (sym < 0), the
 * symbolic dim sym, or unknown (known false). */
typedef struct lt_ti_val {
    bool known;
    int64_t v;
    int sym;
} lt_ti_val;

/* The elements of the 0-D/1-D integer value v (at most max) when import can
 * tell them: an initializer or Constant (any value_* form), Shape (symbolic
 * dims as such), Size of a static shape, and Add, Sub, Mul, Div, Mod, Equal,
 * Where, Concat, Slice, Gather, Cast, Identity, Reshape, Squeeze, Unsqueeze
 * and Flatten of such values (ir/shape_values.c). Elements may be unknown. */
bool lt_ti_values(lt_infer_ctx *c, const lt_ival *v, lt_ti_val *out, int max, int *len);
/* The integer values behind v when every element folds to a constant. */
bool lt_ti_const_ints(lt_infer_ctx *c, const lt_ival *v, int64_t *out, int max, int *len);
/* A scalar constant (any numeric type) as a double. */
bool lt_ti_const_f64(lt_infer_ctx *c, const lt_ival *v, double *out);
/* The length of a 1-D value when its type tells it, else -1. */
int64_t lt_ti_len(const lt_ival *v);

void lt_ti_register_ops(lt_infer_fn *tab);

#endif
