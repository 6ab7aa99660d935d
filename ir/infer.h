/* Shape inference: one rule per op, grouped by family in ir/shape_<family>.c.
 * A rule sets the types of its node's outputs from its inputs' types (and
 * from constant inputs where the op needs values, e.g. Reshape's shape).
 * Rules are conservative: where they cannot tell, they leave dims unknown
 * (v = -1) or the rank unknown (-1); they fail only on definite errors. */
#ifndef LT_INFER_H
#define LT_INFER_H

#include "ir.h"

typedef struct lt_infer_ctx {
    lt_module *m;
    lt_err *err;
} lt_infer_ctx;

typedef lt_status (*lt_infer_fn)(lt_infer_ctx *c, lt_node *n);

/* The constant tensor behind v (initializer that no graph input overrides,
 * or a Constant node's output), else NULL. */
const lt_tensor *lt_infer_const(lt_infer_ctx *c, const lt_ival *v);
/* Fails with "file: node 'name' (Op): <message>". */
lt_status lt_infer_fail(lt_infer_ctx *c, const lt_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Numpy-style broadcast of a and b into out; false on a definite mismatch. */
bool lt_infer_broadcast(const lt_type *a, const lt_type *b, lt_type *out);
/* Output i gets input j's type (Relu, Identity...). */
void lt_infer_same(lt_node *n, int i, int j);

/* Types region parameters (Loop/Scan/SequenceMap bodies) from the node's
 * inputs where the model left them undeclared. */
void lt_infer_region_params(lt_node *n);

extern lt_infer_fn lt_infer_rules[LT_OP_COUNT];
void lt_infer_rules_init(void);

void lt_infer_register_elementwise(lt_infer_fn *tab);
void lt_infer_register_reduce(lt_infer_fn *tab);
void lt_infer_register_nn(lt_infer_fn *tab);
void lt_infer_register_tensor(lt_infer_fn *tab);
void lt_infer_register_linalg(lt_infer_fn *tab);
void lt_infer_register_rnn(lt_infer_fn *tab);
void lt_infer_register_control(lt_infer_fn *tab);
void lt_infer_register_norm(lt_infer_fn *tab);
void lt_infer_register_index(lt_infer_fn *tab);
void lt_infer_register_image(lt_infer_fn *tab);
void lt_infer_register_misc(lt_infer_fn *tab);
void lt_infer_register_grad_nn(lt_infer_fn *tab);
void lt_infer_register_grad_misc(lt_infer_fn *tab);
void lt_infer_register_grad_rnn(lt_infer_fn *tab);
void lt_infer_register_grad_sampling(lt_infer_fn *tab);
void lt_infer_register_attention(lt_infer_fn *tab);
void lt_infer_register_onnx26(lt_infer_fn *tab);

/* A gradient op's outputs 0..m-1 typed like its inputs k..k+m-1 (the
 * forward inputs after its k adjoints); an absent input leaves it unknown. */
lt_status lt_infer_outputs_like_inputs(lt_node *n, int m, int k);

#endif
