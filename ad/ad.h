/* Reverse-mode AD as a CPS transform over the IR (the paper's sections 3-4).
 * Internal to lantern: the transform, the rule interface and the IR builder
 * the rules use. */
#ifndef LT_AD_H
#define LT_AD_H

#include "../ir/ir.h"

typedef enum lt_ad_loss {
    LT_AD_LOSS_SUM = 0, /* sum of the first output */
    LT_AD_LOSS_MEAN,    /* mean of the first output */
    LT_AD_LOSS_SCE,     /* mean softmax cross-entropy of the first output against int64 labels */
    LT_AD_LOSS_SEEDS,   /* sum over seeded outputs of output * seed (a vector-Jacobian product) */
    LT_AD_LOSS_NLL,     /* mean negative log-likelihood of log-probabilities against int64 labels */
    LT_AD_LOSS_MSE,     /* mean squared error against float "targets" shaped like the output */
    LT_AD_LOSS_BCE_LOGITS, /* mean binary cross-entropy of logits against float "targets" */
    LT_AD_LOSS_MODEL    /* the output is the loss already (one element) */
} lt_ad_loss;

/* The node that gives MSE's and BCE's targets the output's computed shape
 * where the output's dims are not all known (ad/loss.c). */
#define LT_AD_TARGETS_NODE "loss_targets_as_output"

typedef struct lt_ad_spec {
    lt_ad_loss loss;
    int nseeds;
    const char *const *seed_outputs; /* LT_AD_LOSS_SEEDS: names of the seeded outputs */
    bool wrt_inputs;                 /* also differentiate with respect to float graph inputs */
    const char *output;              /* the output the loss is attached to (NULL: the first) */
    int64_t ignore_index;            /* softmax-cross-entropy, nll: labels of this value count for nothing */
    int class_axis;                  /* softmax-cross-entropy, nll on scores of rank >= 3: 1 reads the classes
                                        on axis 1 ([N, C, d1, ...], PyTorch's layout), anything else on the last */
} lt_ad_spec;

/* Which class axes labels of dims[0..rank) (the batch first; -1 where not
 * known) fit for class scores of type t: bit 0 the last axis (labels
 * [N, d1, ...] for scores [N, d1, ..., C]), bit 1 axis 1 (labels
 * [N, d1, ...] for scores [N, C, d1, ...]); an unknown dim fits any size.
 * Scores of rank 2 fit both. */
int lt_ad_class_axes_fit(const lt_type *t, int rank, const int64_t *dims);

/* Replaces the module's main block with the combined forward/backward
 * program. New main: parameters = the original inputs, then "labels" (SCE,
 * NLL), "targets" (MSE, BCE) or one "<output>_seed" per seeded output; results = "loss", then one
 * gradient per trainable float parameter (named "<param>_grad", in module
 * parameter order), then with wrt_inputs one per float input. The original
 * outputs are no longer returned. */
lt_status lt_ad_transform(lt_module *m, const lt_ad_spec *spec, lt_err *err);

/* ---- what rules see ---- */
typedef struct lt_ad lt_ad;

/* A gradient rule for one forward op: in[] and out[] are the node's inputs
 * and outputs as emitted in the new program (NULL where omitted), dout[] the
 * adjoints of the outputs (NULL where an output has none). The rule emits
 * backward nodes with the builder and hands each input's contribution to
 * lt_ad_accum. */
typedef lt_status (*lt_ad_rule)(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                                lt_ival *const *dout);

extern lt_ad_rule lt_ad_rules[LT_OP_COUNT];
/* Inputs (bit i = input i) that carry no gradient even when they are float
 * (shapes, indices, scales...): nothing is accumulated and no rule is needed
 * for them. */
extern uint32_t lt_ad_nondiff[LT_OP_COUNT];
/* Whether input i of n takes no gradient: lt_ad_nondiff's bit, but an
 * inference-mode BatchNormalization's computed mean and variance do. */
bool lt_ad_input_nondiff(const lt_node *n, int i);
/* Whether a BatchNormalization computes batch statistics (training_mode,
 * or before opset 14 its statistics outputs asked for). */
bool lt_ad_bn_training(const lt_node *n);
void lt_ad_rules_init(void);
void lt_ad_register_elementwise(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_tensor(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_nn(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_unary(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_movement(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_norm(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_linalg(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_sampling(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_signal(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_quant(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_generate(lt_ad_rule *tab, uint32_t *nondiff);

/* Whether input i of the forward node needs a gradient (active and
 * differentiable): rules skip work for inputs that do not. */
bool lt_ad_wants(lt_ad *c, const lt_node *n, int i);
/* Adds v to the adjoint of the forward node's input i (no-op when that input
 * needs no gradient). v must have the input's shape (use lt_ad_unbroadcast). */
lt_status lt_ad_accum(lt_ad *c, const lt_node *n, int i, lt_ival *v);
/* For a gradient node k whose output i is the gradient of n's input i
 * (i < m): drops the outputs want[i] declines and accumulates the rest. */
lt_status lt_ad_accum_wanted(lt_ad *c, const lt_node *n, lt_node *k, const bool *want, int m);
lt_status lt_ad_fail(lt_ad *c, const lt_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- builder: emits into the block being written ---- */
lt_node *lt_ad_node(lt_ad *c, lt_op op, int nin, int nout);
lt_ival *lt_ad_op1(lt_ad *c, lt_op op, lt_ival *a);
lt_ival *lt_ad_op2(lt_ad *c, lt_op op, lt_ival *a, lt_ival *b);
lt_ival *lt_ad_op3(lt_ad *c, lt_op op, lt_ival *a, lt_ival *b, lt_ival *d);
/* the output value of a node made with lt_ad_node */
lt_ival *lt_ad_out(lt_ad *c, lt_node *n, int i);
void lt_ad_attr_int(lt_ad *c, lt_node *n, const char *name, int64_t v);
void lt_ad_attr_float(lt_ad *c, lt_node *n, const char *name, float v);
void lt_ad_attr_ints(lt_ad *c, lt_node *n, const char *name, int k, const int64_t *v);
/* copies every attribute of src (and its opset) onto n */
void lt_ad_copy_attrs(lt_ad *c, lt_node *n, const lt_node *src);
/* The gradient op of forward node n: inputs the ndy adjoints dy, then n's
 * first nfwd inputs (those n lacks omitted), with n's attributes and its
 * output types inferred. NULL when out of memory. */
lt_node *lt_ad_grad_node(lt_ad *c, const lt_node *n, lt_op op, int ndy, lt_ival *const *dy, int nfwd,
                         lt_ival *const *in, int nout);
/* scalar constant of the given dtype */
lt_ival *lt_ad_scalar(lt_ad *c, lt_dtype dt, double v);
/* the float type of the backward values derived from v: v's own when it is
 * float16, bfloat16, float32 or float64 (a constant combined with v must
 * match it, as binary ops do not promote), float32 when v is not a float */
lt_dtype lt_ad_float_dtype(const lt_ival *v);
/* a scalar constant of like's float type, to combine with like */
lt_ival *lt_ad_scalar_like(lt_ad *c, const lt_ival *like, double v);
/* zeros shaped and typed like v */
lt_ival *lt_ad_zeros_like(lt_ad *c, lt_ival *v);
/* 1-D int64 constant */
lt_ival *lt_ad_ints(lt_ad *c, int k, const int64_t *v);
/* g summed down to like's shape (identity when shapes already agree) */
lt_ival *lt_ad_unbroadcast(lt_ad *c, lt_ival *g, lt_ival *like);
/* nodes emitted run at the ai.onnx opset the rules are written against */
#define LT_AD_OPSET 18

#endif
