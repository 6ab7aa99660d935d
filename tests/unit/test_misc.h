/* Helpers shared by the misc-family suites: string tensors and string-list
 * attributes. */
#ifndef LT_TEST_MISC_H
#define LT_TEST_MISC_H

#include "testutil.h"
#include <string.h>

/* A string tensor value holding interned copies of s[0..numel). */
static inline lt_value *tm_strings(int rank, const int64_t *dims, const char *const *s)
{
    lt_value *v = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&v->t, LT_STRING, rank, dims, &err), LT_OK);
    for (int64_t i = 0; i < v->t.numel; i++)
        ((const char **)v->t.data)[i] = lt_str_intern(s[i], strlen(s[i]));
    return v;
}

/* Element i of a string tensor value. */
static inline const char *tm_str(const lt_value *v, int64_t i)
{
    return ((const char *const *)v->t.data)[i];
}

/* Whether a value is a tensor of the given shape. */
static inline void tm_assert_shape(const lt_value *v, lt_dtype dt, int rank, const int64_t *dims)
{
    assert_int_equal(v->kind, LT_VAL_TENSOR);
    assert_int_equal(v->t.dtype, dt);
    assert_int_equal(v->t.rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(v->t.dims[i], dims[i]);
}

#endif
