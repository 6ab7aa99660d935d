/* The model the gradient-rule suites (test_ad_rules_fd.c,
 * test_ad_rules_math_movement.c, test_ad_rules_sampling_signal.c) check by finite
 * differences, and the check: one node whose inputs are parameters filled
 * from a seed, the loss sum(op(x) * R) with a fixed random R. */
#ifndef LT_RULE_FD_H
#define LT_RULE_FD_H

#include "testutil.h"

/* One input of the node: its shape and type, and how it is filled. */
typedef struct tu_fd_in {
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_dtype dt;     /* LT_UNDEFINED means float32 */
    double lo, hi;   /* uniform range */
    bool signed_mag; /* random sign, magnitude in [lo, hi] */
    bool frozen;     /* not differentiated (indices, shapes, running stats) */
    int nvals;       /* fixed values instead, repeated (ints, axes, scales) */
    double vals[16];
    bool absent;
} tu_fd_in;

typedef struct tu_fd_model {
    const char *name;
    lt_op op;
    int opset, nin, nout;
    const tu_fd_in *in;         /* nin of them */
    void (*attrs)(tu_graph *g); /* may be NULL */
    uint64_t seed;              /* of the inputs' values and of R */
    /* the output's shape where inference cannot tell it (0: inferred):
     * used for R, then made unknown again so the rule must manage without */
    int out_rank;
    const int64_t *out_dims;
} tu_fd_model;

/* Builds the model, as lt_grad_check_built wants a builder to. */
lt_status tu_fd_build(const tu_fd_model *fm, lt_model **out, lt_err *err);

/* What one model's check must show. */
typedef struct tu_fd_expect {
    double tol;          /* relative error allowed (0: 1e-6) */
    int checks;          /* elements checked per input (0: 200) */
    bool zero_grad;      /* the gradient is zero almost everywhere: exactly 0 */
    const char *refusal; /* the transform must fail with a message containing this */
    bool verbose;        /* print every (input, error) row */
} tu_fd_expect;

/* The suite's running totals (start with worst_at = ""). */
typedef struct tu_fd_tally {
    int pairs, failures;
    double worst; /* largest relative error where tol < 1e-3 */
    const char *worst_at;
    double worst_loose; /* the same where tol >= 1e-3 (float32-bound kernels) */
} tu_fd_tally;

/* Checks every differentiable input (present, not frozen, float32) of the
 * model against central finite differences in float64, printing a FAIL
 * line for each failure and adding to t. */
void tu_fd_check(const tu_fd_model *fm, const tu_fd_expect *ex, tu_fd_tally *t);

#endif
