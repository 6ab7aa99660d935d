/* Shared by the grad_misc suites: run one op, and check a gradient kernel
 * against central finite differences of L(x) = sum(dy * f(x)) computed
 * through the forward kernel in float64. */
#ifndef LT_TEST_GRAD_MISC_H
#define LT_TEST_GRAD_MISC_H

#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds a case's attributes to a freshly built node (forward and gradient
 * nodes carry the same ones). */
typedef void (*gm_attrs_fn)(tu_graph *g, const void *ctx);

/* Runs op on in[0..nin) (NULL entries omitted) and returns output 0; the
 * status goes to *st when st is given, else it must be LT_OK. */
static inline lt_value *gm_run(lt_op op, int opset, int nin, lt_value *const *in, gm_attrs_fn attrs, const void *ctx,
                        lt_status *st)
{
    tu_graph g = tu_single(op, opset, nin, 1);
    for (int i = 0; i < nin; i++)
        if (!in[i])
            tu_omit_input(&g, i);
    if (attrs)
        attrs(&g, ctx);
    lt_value *out[1] = {NULL};
    lt_err err = {{0}};
    lt_status s = tu_run(&g, in, out, &err);
    tu_free(&g);
    if (st)
        *st = s;
    else if (s != LT_OK)
        fail_msg("%s failed: %s", lt_op_names[op], err.msg);
    return out[0];
}

/* The status (and message, into msg) of a run that is expected to fail. */
static inline lt_status gm_run_status(lt_op op, int opset, int nin, lt_value *const *in, gm_attrs_fn attrs,
                                      const void *ctx, char *msg, size_t len)
{
    tu_graph g = tu_single(op, opset, nin, 1);
    for (int i = 0; i < nin; i++)
        if (!in[i])
            tu_omit_input(&g, i);
    if (attrs)
        attrs(&g, ctx);
    lt_value *out[1] = {NULL};
    lt_err err = {{0}};
    lt_status s = tu_run(&g, in, out, &err);
    if (out[0])
        lt_value_free(out[0]);
    tu_free(&g);
    if (msg)
        snprintf(msg, len, "%s", err.msg);
    return s;
}

static inline double gm_dot(const lt_value *a, const lt_value *b)
{
    assert_int_equal(a->t.numel, b->t.numel);
    double s = 0;
    for (int64_t i = 0; i < a->t.numel; i++)
        s += lt_tensor_get_f64(&a->t, i) * lt_tensor_get_f64(&b->t, i);
    return s;
}

static inline uint64_t gm_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A forward op with its inputs; the gradient is taken with respect to
 * in[wrt] (a float64 tensor the check perturbs in place and restores). */
typedef struct {
    const char *name; /* the case, for messages */
    lt_op fwd;
    int opset, nin, wrt;
    lt_value **in;
    gm_attrs_fn attrs;
    const void *ctx;
} gm_fd;

/* Compares grad against (L(x + h e_i) - L(x - h e_i)) / 2h for every i, or
 * for maxn seeded random i when x is larger. The error of one entry is
 * |fd - g| / max(|fd|, |g|, 1e-2); fails above tol, else returns the worst. */
static inline double gm_fd_check(const gm_fd *f, const lt_value *dy, const lt_value *grad, int maxn, double tol,
                          uint64_t seed)
{
    lt_tensor *x = &f->in[f->wrt]->t;
    assert_int_equal(x->dtype, LT_F64);
    assert_int_equal(grad->t.numel, x->numel);
    int64_t n = x->numel, count = n <= maxn ? n : maxn;
    uint64_t rs = seed;
    double worst = 0;
    const double h = 1e-5;
    for (int64_t c = 0; c < count; c++) {
        int64_t i = n <= maxn ? c : (int64_t)(gm_next(&rs) % (uint64_t)n);
        double x0 = lt_tensor_get_f64(x, i), l[2];
        for (int side = 0; side < 2; side++) {
            lt_tensor_set_f64(x, i, x0 + (side ? -h : h));
            lt_value *y = gm_run(f->fwd, f->opset, f->nin, f->in, f->attrs, f->ctx, NULL);
            l[side] = gm_dot(dy, y);
            lt_value_free(y);
        }
        lt_tensor_set_f64(x, i, x0);
        double fd = (l[0] - l[1]) / (2 * h), g = lt_tensor_get_f64(&grad->t, i);
        double den = fmax(fmax(fabs(fd), fabs(g)), 1e-2), err = fabs(fd - g) / den;
        if (!(err <= tol))
            fail_msg("%s (seed %llu): d/dx[%lld]: kernel %.10g, finite differences %.10g", f->name,
                     (unsigned long long)seed, (long long)i, g, fd);
        if (err > worst)
            worst = err;
    }
    print_message("  %-44s worst rel err %.2e over %lld entries\n", f->name, worst, (long long)count);
    return worst;
}

/* An int64 tensor with the given values (indices, shapes, pads). */
static inline lt_value *gm_ints(int rank, const int64_t *dims, const int64_t *v)
{
    lt_value *t = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&t->t, LT_I64, rank, dims, &err), LT_OK);
    if (t->t.numel)
        memcpy(t->t.data, v, sizeof *v * (size_t)t->t.numel);
    return t;
}

static inline lt_value *gm_vec(int n, const int64_t *v) { return gm_ints(1, (int64_t[]){n}, v); }

/* Element-by-element comparison of got with want (any float dtypes). */
static inline void gm_assert_same(const lt_value *got, const lt_value *want, double rtol, double atol, const char *what)
{
    assert_int_equal(got->t.rank, want->t.rank);
    for (int d = 0; d < got->t.rank; d++)
        assert_int_equal(got->t.dims[d], want->t.dims[d]);
    for (int64_t i = 0; i < got->t.numel; i++) {
        double a = lt_tensor_get_f64(&got->t, i), b = lt_tensor_get_f64(&want->t, i);
        if (!(fabs(a - b) <= atol + rtol * fabs(b)))
            fail_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i, a, b);
    }
}

/* Shape inference of one node whose inputs have the given types (NULL:
 * omitted); returns its output 0 type, or fails the test when inference
 * does not return want. */
static inline lt_type gm_infer(lt_op op, int opset, int nin, const lt_type *const *types, gm_attrs_fn attrs,
                               const void *ctx, lt_status want)
{
    tu_graph g = tu_single(op, opset, nin, 1);
    for (int i = 0; i < nin; i++) {
        if (!types[i])
            tu_omit_input(&g, i);
        else
            g.m->main->params[i]->type = *types[i];
    }
    if (attrs)
        attrs(&g, ctx);
    lt_err err = {{0}};
    lt_status s = lt_infer_module(g.m, &err);
    if (s != want)
        fail_msg("shape inference of %s returned %d (%s), expected %d", lt_op_names[op], (int)s, err.msg, (int)want);
    lt_type t = g.node->out[0]->type;
    tu_free(&g);
    return t;
}

static inline lt_type gm_type(lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type t;
    lt_type_tensor(&t, dt, rank, dims);
    return t;
}

static inline void gm_assert_type(const lt_type *t, lt_dtype dt, int rank, const int64_t *dims)
{
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int d = 0; d < rank; d++) {
        assert_int_equal(t->dims[d].sym, -1);
        assert_int_equal(t->dims[d].v, dims[d]);
    }
}

/* An independent reference for gradients of ops that move elements (the
 * gathers, Slice, Pad): the forward op run on x = (1, 2, 3, ...) says which
 * element of x each output position read (other values: none, e.g. a pad
 * constant), and the gradient adds dy there. Returns x->numel doubles. */
static inline double *gm_probe_ref(const gm_fd *f, const lt_value *dy)
{
    lt_value *orig = f->in[f->wrt], *probe = lt_value_new_tensor();
    lt_err err;
    int64_t n = orig->t.numel;
    assert_int_equal(lt_tensor_alloc(&probe->t, LT_F64, orig->t.rank, orig->t.dims, &err), LT_OK);
    for (int64_t i = 0; i < n; i++)
        ((double *)probe->t.data)[i] = (double)(i + 1);
    f->in[f->wrt] = probe;
    lt_value *y = gm_run(f->fwd, f->opset, f->nin, f->in, f->attrs, f->ctx, NULL);
    f->in[f->wrt] = orig;
    assert_int_equal(y->t.numel, dy->t.numel);
    double *ref = calloc((size_t)(n ? n : 1), sizeof(double));
    for (int64_t p = 0; p < y->t.numel; p++) {
        double v = lt_tensor_get_f64(&y->t, p);
        if (v == floor(v) && v >= 1 && v <= (double)n)
            ref[(int64_t)v - 1] += lt_tensor_get_f64(&dy->t, p);
    }
    lt_value_free(y);
    lt_value_free(probe);
    return ref;
}

/* Checks the gradient op of an element-moving forward f: gin holds the
 * gradient node's inputs with gin[0] left for dy, drawn here in dtype dt.
 * The result must match the probe reference, and for float64 also the
 * finite differences (at most maxn entries). */
static inline void gm_check_move(const gm_fd *f, lt_op op, int gnin, lt_value **gin, lt_dtype dt, int maxn,
                                 uint64_t seed)
{
    const lt_tensor *x = &f->in[f->wrt]->t;
    lt_value *y = gm_run(f->fwd, f->opset, f->nin, f->in, f->attrs, f->ctx, NULL);
    lt_value *dy = tu_rand(dt, y->t.rank, y->t.dims, -1, 1, seed);
    gin[0] = dy;
    lt_value *grad = gm_run(op, f->opset, gnin, gin, f->attrs, f->ctx, NULL);
    assert_int_equal(grad->t.dtype, dt);
    assert_int_equal(grad->t.rank, x->rank);
    for (int d = 0; d < x->rank; d++)
        assert_int_equal(grad->t.dims[d], x->dims[d]);
    double *ref = gm_probe_ref(f, dy);
    bool wide = dt == LT_F64, half = dt == LT_F16 || dt == LT_BF16;
    tu_assert_close(grad, ref, x->numel, wide ? 1e-12 : half ? 1e-2 : 1e-5, wide ? 1e-12 : half ? 1e-2 : 1e-5,
                    seed);
    free(ref);
    if (wide)
        gm_fd_check(f, dy, grad, maxn, 1e-6, seed);
    lt_value_free(grad);
    lt_value_free(dy);
    lt_value_free(y);
}

#endif
