/* Helpers for the cmocka suites: build a one-node module, run it, fill
 * tensors with seeded random values. */
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
/* Runs the graph; outputs[i] must be freed with lt_value_free. Returns the
 * status; err->msg holds the message. */
lt_status tu_run(tu_graph *g, lt_value *const *inputs, lt_value **outputs, lt_err *err);
/* The copies and nodes on each side of the backend in tu_run's last run,
 * and whether tests run behind a device path (LANTERN_BACKEND). */
extern lt_copy_stats tu_last_copies;
bool tu_device_path(void);
void tu_free(tu_graph *g);

/* A tensor value with the given shape, uniform in [lo, hi) from seed. */
lt_value *tu_rand(lt_dtype dtype, int rank, const int64_t *dims, double lo, double hi, uint64_t seed);
/* A tensor value filled from a double array. */
lt_value *tu_from(lt_dtype dtype, int rank, const int64_t *dims, const double *vals);
double tu_get(const lt_value *v, int64_t i);
/* A .npy / .pb file as a value; fails the test with the message. */
lt_value *tu_load(const char *path);
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

/* dir/<prefix>-images-idx3-ubyte.gz and -labels-idx1-ubyte.gz holding n
 * seeded 28x28 images and labels, uncompressed (zlib reads them as they
 * are), with a little signal per class: a small dataset for training runs
 * (--data mnist=DIR). Returns 0, or -1 when a file cannot be written. */
int tu_write_idx_split(const char *dir, const char *prefix, uint32_t n, unsigned seed);

/* Runs the shell command cmd with its stdout and stderr captured into out
 * and err (NUL-terminated, cut at olen - 1 and elen - 1 bytes); returns its
 * exit status, -1 when it did not exit. */
int tu_sh(const char *cmd, char *out, size_t olen, char *err, size_t elen);

#endif
