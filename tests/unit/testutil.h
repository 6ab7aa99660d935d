/* Helpers for the cmocka suites: build a one-node module (or one node by
 * node), run it, fill tensors with seeded random values, compare a pass's
 * program with the one without it, reference sums for the GEMM kernels. */
#ifndef LT_TESTUTIL_H
#define LT_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "runtime/backend.h"
#include "runtime/runtime.h"

typedef struct tu_graph {
    lt_module *m;
    lt_node *node;
} tu_graph;

/* A module whose main graph has nin inputs feeding one node with nout
 * outputs; opset is the ai.onnx version the node sees. Omitted inputs: pass
 * nin inputs and mark absent ones later with tu_omit_input. */
tu_graph tu_single(lt_op op, int opset, int nin, int nout);
void tu_omit_input(tu_graph *g, int i);
void tu_attr_int(tu_graph *g, const char *name, int64_t v);
void tu_attr_float(tu_graph *g, const char *name, float v);
void tu_attr_str(tu_graph *g, const char *name, const char *s);
void tu_attr_strings(tu_graph *g, const char *name, int n, const char *const *s);
void tu_attr_ints(tu_graph *g, const char *name, int n, const int64_t *v);
void tu_attr_floats(tu_graph *g, const char *name, int n, const float *v);
/* a tensor attribute of one element of dt holding v (ConstantOfShape's value) */
void tu_attr_tensor1(tu_graph *g, const char *name, lt_dtype dt, double v);
/* Runs the graph; outputs[i] must be freed with lt_value_free. Returns the
 * status; err->msg holds the message. */
lt_status tu_run(tu_graph *g, lt_value *const *inputs, lt_value **outputs, lt_err *err);
/* The copies and nodes on each side of the backend in tu_run's last run,
 * and whether tests run behind a device path (LANTERN_BACKEND). */
extern lt_copy_stats tu_last_copies;
/* Runs g on in[0..nin-1], which must fail with a message holding says
 * (else the test fails naming what); frees the inputs, any outputs and g. */
void tu_assert_refused(tu_graph *g, lt_value **in, int nin, const char *says, const char *what);
bool tu_device_path(void);
void tu_free(tu_graph *g);

/* A module built node by node: m (path "test"), its main block b, and the
 * count of values named so far. */
typedef struct tu_builder {
    lt_module *m;
    lt_block *b;
    int nv;
} tu_builder;

/* A builder whose main block has nin graph inputs named names[i], none
 * with a default; their types are the caller's to set. */
tu_builder tu_builder_new(int nin, const char *const *names);
/* Output i of n: a new value named "v<count>" that n defines. */
lt_ival *tu_out(tu_builder *g, lt_node *n, int i);

/* A tensor value with the given shape, uniform in [lo, hi) from seed. */
lt_value *tu_rand(lt_dtype dtype, int rank, const int64_t *dims, double lo, double hi, uint64_t seed);
/* Fills t's elements uniform in [lo, hi) from *seed (advanced): the
 * sequence tu_rand uses. */
void tu_fill(lt_tensor *t, double lo, double hi, uint64_t *seed);
/* A tensor value filled from a double array. */
lt_value *tu_from(lt_dtype dtype, int rank, const int64_t *dims, const double *vals);
double tu_get(const lt_value *v, int64_t i);
/* The trainer's notes (lt_train_opts.on_note = tu_keep_note) appended to
 * tu_notes, one a line; tu_notes[0] = 0 clears them. */
extern char tu_notes[8192];
void tu_keep_note(const char *msg, void *user);
/* A trainer of model with the default options, its notes (only) in
 * tu_notes; fails the test when it cannot be made. */
lt_trainer *tu_trainer_noting(const char *model);
/* A .npy / .pb file as a value; fails the test with the message. */
lt_value *tu_load(const char *path);
/* max |got - want| over max |want| (a floor of 1e-12), element counts equal */
double tu_max_rel_err(const lt_tensor *got, const lt_tensor *want);
/* the model's parameter of that name (fails the test when there is none) */
const lt_tensor *tu_param(lt_model *m, const char *name);
/* its IR record (trainable, what it was folded or computed from) */
const lt_param *tu_ir_param(const lt_model *m, const char *name);
/* the model at path (fails the test when it does not load) */
lt_model *tu_model(const char *path);
/* Largest |a-b|/(atol+|b|)-style mismatch check; fails the test with the seed. */
void tu_assert_close(const lt_value *got, const double *want, int64_t n, double rtol, double atol, uint64_t seed);

/* The gradients of model file (one float input "x" of the given shape,
 * uniform in [lo, hi) from seed, loss the sum of the output) against
 * central finite differences in float64 (lt_grad_check, on the backend
 * LANTERN_BACKEND names): fails the test where a parameter's relative
 * error passes 1e-5 in float64 or 1e-3 in float32, or where
 * must_be_nonzero (a parameter name, or NULL) got no gradient. */
void tu_grad_check_model(const char *file, int rank, const int64_t *dims, double lo, double hi, uint64_t seed,
                         const char *must_be_nonzero);

/* ---- whole models: a pass's program against the program without it ---- */

/* The most outputs tu_loss_of takes from a model. */
#define TU_MAX_OUTPUTS 64

/* The gradient program of the model file path (loss the sum of its first
 * output), converted to float64 first when f64; fails the test on error. */
lt_model *tu_grad_program(const char *path, bool f64);
/* lt_ir_verify on m; fails the test with its message. */
void tu_verify(lt_model *m);
/* Runs m in a fresh session on its one input "x" (x stays the caller's);
 * outs[i] gets output i, to be freed with lt_value_free. Returns the
 * number of outputs; fails the test on error. */
int tu_run_x(lt_model *m, const lt_value *x, lt_value **outs);
/* Output 0's first element of m run on x: the loss of a gradient program. */
double tu_loss_of(lt_model *m, const lt_value *x);
/* Outputs a[i] and b[i], i < n, of the same size and each element within
 * tol * max(1, |a|) (tol 0: equal); fails the test naming what, the output
 * and the element. */
void tu_assert_same_outputs(lt_value *const *a, lt_value *const *b, int n, double tol, const char *what);
/* The parameter gradients outs[1..n-1] (outputs named <param>_grad, as
 * m ran them on x) against central differences (h = 1e-6) of m's float64
 * loss, every (1 + numel / every)-th element of each parameter: fails the
 * test where |fd - analytic| > 1e-5 max(1, |fd|). Returns the number of
 * elements checked. m's parameters are moved and put back. */
int tu_fd_check_grads(lt_model *m, const lt_value *x, lt_value *const *outs, int n, int64_t every,
                      const char *what);
/* Runs before and after (a program without and with a pass) on x, checks
 * their outputs agree (tu_assert_same_outputs with tol) and, where every
 * > 0, after's parameter gradients against central differences
 * (tu_fd_check_grads). *nout gets the number of outputs; returns the
 * number of gradient elements checked. */
int tu_check_pass(lt_model *before, lt_model *after, const lt_value *x, double tol, int64_t every, const char *what,
                  int *nout);

/* One MatMulTrans node (transA ta, transB tb, alpha where it is not 1) on
 * operands of shapes da, db (batch axes broadcasting) uniform in [-1, 1)
 * from seed and seed + 1, against sums in double: fails the test past
 * 1e-5 (float32) or 1e-12 (float64). */
void tu_matmul_trans_case(lt_dtype dt, bool ta, bool tb, float alpha, int ra, const int64_t *da, int rb,
                          const int64_t *db, uint64_t seed);

/* want[i * ldw + j] = alpha sum_q op(A)[i, q] op(B)[q, j] + beta C[i, j] in
 * double for i < M, j < N (C not read where beta is 0), the float matrices
 * stored row-major with leading dimensions lda, ldb, ldc (op(A) = A^T when
 * ta, op(B) = B^T when tb): the reference for the GEMM kernels. */
void tu_gemm_ref(double *want, int64_t ldw, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, double beta, const float *c, int64_t ldc);

/* dir/<prefix>-images-idx3-ubyte.gz and -labels-idx1-ubyte.gz holding n
 * seeded 28x28 images and labels, uncompressed (zlib reads them as they
 * are), with a little signal per class: a small dataset for training runs
 * (--data mnist=DIR). Returns 0, or -1 when a file cannot be written. */
int tu_write_idx_split(const char *dir, const char *prefix, uint32_t n, unsigned seed);

/* The bytes of the file at path (free them), *len their count; fails the
 * test when it cannot be opened. */
uint8_t *tu_slurp(const char *path, size_t *len);
/* Runs the shell command cmd with its stdout and stderr captured into out
 * and err (NUL-terminated, cut at olen - 1 and elen - 1 bytes); returns its
 * exit status, -1 when it did not exit. */
int tu_sh(const char *cmd, char *out, size_t olen, char *err, size_t elen);

#endif
