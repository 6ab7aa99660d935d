/* Helpers for the tensor-family suites (test_tensorops*.c): running one
 * node, byte-pattern tensors of any element size, and checking an output
 * element by element against an index map computed by the test. */
#ifndef TEST_TENSOROPS_UTIL_H
#define TEST_TENSOROPS_UTIL_H

#include "testutil.h"
#include <stdio.h>
#include <string.h>

/* Runs g on ins (one per graph input, NULL for omitted ones); outputs go to
 * outs. Fails the test with the message when the status is not `want`. */
static inline void to_run(tu_graph *g, lt_value **ins, lt_value **outs, lt_status want)
{
    lt_err err = {{0}};
    /* an omitted input's graph parameter still wants a value: any will do */
    lt_value *all[16], *dummy = lt_value_new_tensor();
    int np = g->m->main->nparams;
    assert_true(np <= 16);
    for (int i = 0; i < np; i++)
        all[i] = ins[i] ? ins[i] : dummy;
    lt_status s = tu_run(g, all, outs, &err);
    lt_value_free(dummy);
    if (s != want)
        fail_msg("status %s (expected %s): %s", lt_status_str(s), lt_status_str(want), err.msg);
}

static inline uint64_t to_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A tensor whose bytes are random: element identity survives any copy. */
static inline lt_value *to_bytes(lt_dtype dt, int rank, const int64_t *dims, uint64_t seed)
{
    lt_value *v = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&v->t, dt, rank, dims, &err), LT_OK);
    unsigned char *p = v->t.data;
    for (size_t i = 0; i < lt_tensor_nbytes(&v->t); i++)
        p[i] = (unsigned char)(to_next(&seed) >> 56);
    return v;
}

static inline lt_value *to_ints(int n, const int64_t *v)
{
    int64_t d = n;
    lt_value *t = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&t->t, LT_I64, 1, &d, &err), LT_OK);
    if (n)
        memcpy(t->t.data, v, sizeof *v * n);
    return t;
}

static inline lt_value *to_scalar_i64(int64_t v)
{
    lt_value *t = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&t->t, LT_I64, 0, NULL, &err), LT_OK);
    *(int64_t *)t->t.data = v;
    return t;
}

static inline void to_dims(const lt_value *v, int rank, const int64_t *dims)
{
    assert_int_equal(v->kind, LT_VAL_TENSOR);
    if (v->t.rank != rank)
        fail_msg("rank %d, expected %d", v->t.rank, rank);
    for (int i = 0; i < rank; i++)
        if (v->t.dims[i] != dims[i])
            fail_msg("dim %d is %lld, expected %lld", i, (long long)v->t.dims[i], (long long)dims[i]);
}

/* out element o (multi-index idx) must equal in element map(idx), or the
 * element at pad when map returns -1. */
typedef int64_t (*to_map_fn)(const int64_t *idx, const void *ctx);

static inline void to_check_map(const lt_value *out, const lt_value *in, to_map_fn map, const void *ctx,
                                const void *pad, uint64_t seed)
{
    size_t es = lt_dtype_size(in->t.dtype);
    assert_int_equal(out->t.dtype, in->t.dtype);
    int64_t idx[LT_MAX_RANK] = {0};
    for (int64_t o = 0; o < out->t.numel; o++) {
        int64_t rem = o;
        for (int a = out->t.rank - 1; a >= 0; a--) {
            idx[a] = rem % out->t.dims[a];
            rem /= out->t.dims[a];
        }
        int64_t i = map(idx, ctx);
        const void *want = i < 0 ? pad : (const char *)in->t.data + (size_t)i * es;
        if (memcmp((const char *)out->t.data + (size_t)o * es, want, es) != 0)
            fail_msg("seed %llu: output element %lld differs (source %lld)", (unsigned long long)seed, (long long)o,
                     (long long)i);
    }
}

/* Row-major linear index of idx in dims. */
static inline int64_t to_lin(int rank, const int64_t *dims, const int64_t *idx)
{
    int64_t l = 0;
    for (int a = 0; a < rank; a++)
        l = l * dims[a] + idx[a];
    return l;
}

/* A view op copies nothing. On the host its output shares the input's
 * bytes; behind a device path the only copies are the input's upload and the
 * output's download, and the bytes arrive unchanged. */
static inline void to_assert_view(const lt_value *out, const lt_value *in)
{
    if (!tu_device_path()) {
        assert_ptr_equal(out->t.data, in->t.data);
        return;
    }
    assert_int_equal(tu_last_copies.uploads, 1);
    assert_int_equal(tu_last_copies.downloads, 1);
    assert_int_equal(out->t.numel, in->t.numel);
    assert_int_equal(out->t.dtype, in->t.dtype);
    assert_memory_equal(out->t.data, in->t.data, lt_tensor_nbytes(&in->t));
}

#endif
