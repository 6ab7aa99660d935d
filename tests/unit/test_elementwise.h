/* Helpers shared by the elementwise suites (test_elementwise_*.c): running
 * a one-node graph, and an independent numpy-broadcast index reference. */
#ifndef LT_TEST_ELEMENTWISE_H
#define LT_TEST_ELEMENTWISE_H

#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs g on nin inputs, expecting status want; returns output 0 (NULL when
 * the run failed as expected). The inputs are freed. */
static inline lt_value *ew_exec(tu_graph *g, int nin, lt_value **in, lt_status want)
{
    lt_value *out[4] = {0};
    lt_err err = {{0}};
    lt_status s = tu_run(g, in, out, &err);
    if (s != want)
        fail_msg("status %d (%s), expected %d", (int)s, err.msg, (int)want);
    if (s != LT_OK)
        assert_true(strlen(err.msg) > 0);
    for (int i = 0; i < nin; i++)
        lt_value_free(in[i]);
    return s == LT_OK ? out[0] : NULL;
}

/* One-node graph of op with nin inputs and one output; run it, free the
 * graph. For ops without attributes. */
static inline lt_value *ew_run(lt_op op, int opset, int nin, lt_value **in, lt_status want)
{
    tu_graph g = tu_single(op, opset, nin, 1);
    lt_value *r = ew_exec(&g, nin, in, want);
    tu_free(&g);
    return r;
}

/* numpy broadcast of two shapes; false when they do not broadcast */
static inline bool ew_bshape(int na, const int64_t *da, int nb, const int64_t *db, int *nr, int64_t *dr)
{
    int r = na > nb ? na : nb;
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - na) >= 0 ? da[i - (r - na)] : 1;
        int64_t b = i - (r - nb) >= 0 ? db[i - (r - nb)] : 1;
        if (a != b && a != 1 && b != 1)
            return false;
        dr[i] = a == 1 ? b : a;
    }
    *nr = r;
    return true;
}

/* The element of a tensor of shape (n, d) that output element i of shape
 * (nr, dr) reads under broadcasting. */
static inline int64_t ew_bidx(int nr, const int64_t *dr, int64_t i, int n, const int64_t *d)
{
    int64_t idx[LT_MAX_RANK], src = 0;
    for (int k = nr - 1; k >= 0; k--) {
        idx[k] = i % dr[k];
        i /= dr[k];
    }
    for (int k = 0; k < n; k++) {
        int64_t c = d[k] == 1 ? 0 : idx[k + (nr - n)];
        src = src * d[k] + c;
    }
    return src;
}

static inline void ew_assert_shape(const lt_value *v, int rank, const int64_t *dims)
{
    assert_non_null(v);
    assert_int_equal(v->t.rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(v->t.dims[i], dims[i]);
}

#endif
