/* The strided copy's short contiguous rows (runtime/cpu/tensor_util.c):
 * Transposes that keep the last axis and move runs of 16, 32 or 64 bytes
 * (attention's head split [N,T,H,D] -> [N,H,T,D] and merge, D = 4, 8, 16
 * floats, D = 2, 4, 8 doubles, the 5-D qkv split), serial and split over
 * threads (batch 16 and 128), against the index formula element for
 * element; runs of other sizes (12 and 24 bytes, and bytes) take the
 * general row copy and must agree too. */
#include "testutil.h"
#include <string.h>

/* y = Transpose(x, perm) checked against y[idx] = x[perm-mapped idx] */
static void check(lt_dtype dt, int rank, const int64_t *dims, const int64_t *perm, uint64_t seed)
{
    tu_graph g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    tu_attr_ints(&g, "perm", rank, perm);
    lt_value *in[1] = {tu_rand(dt, rank, dims, -100, 100, seed)}, *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const lt_tensor *x = lt_value_tensor(in[0]), *y = lt_value_tensor(out[0]);
    assert_int_equal(y->rank, rank);
    int64_t xs[8], od[8];
    for (int i = rank - 1, s = 1; i >= 0; i--) {
        xs[i] = s;
        s *= (int)dims[i];
    }
    for (int i = 0; i < rank; i++) {
        od[i] = dims[perm[i]];
        assert_int_equal(y->dims[i], od[i]);
    }
    size_t es = lt_dtype_size(dt);
    for (int64_t e = 0; e < y->numel; e++) {
        int64_t rem = e, src = 0;
        for (int i = rank - 1; i >= 0; i--) {
            src += rem % od[i] * xs[perm[i]];
            rem /= od[i];
        }
        if (memcmp((const char *)y->data + (size_t)e * es, (const char *)x->data + (size_t)src * es, es))
            fail_msg("%s element %lld (from %lld) differs", lt_dtype_name(dt), (long long)e, (long long)src);
    }
    lt_value_free(in[0]);
    lt_value_free(out[0]);
    tu_free(&g);
}

static void head_permutes(void **state)
{
    (void)state;
    const int64_t p4[4] = {0, 2, 1, 3}, p5[5] = {2, 0, 3, 1, 4}, p5b[5] = {1, 3, 0, 2, 4};
    int64_t ds[] = {4, 8, 16};
    for (int i = 0; i < 3; i++) {
        int64_t d = ds[i];
        /* float32: 16, 32 and 64 bytes; float64: 32, 64, 128 (the last the general copy) */
        check(LT_F32, 4, (int64_t[]){16, 28, 4, d}, p4, 10 + (uint64_t)i);
        check(LT_F32, 4, (int64_t[]){128, 28, 4, d}, p4, 20 + (uint64_t)i);   /* threaded */
        check(LT_F32, 5, (int64_t[]){16, 7, 3, 4, d}, p5, 30 + (uint64_t)i);   /* the qkv split */
        check(LT_F32, 5, (int64_t[]){3, 16, 4, 7, d}, p5b, 40 + (uint64_t)i);  /* and its gradient */
        check(LT_F64, 4, (int64_t[]){17, 5, 3, d / 2}, p4, 50 + (uint64_t)i);
    }
    /* runs of 12 and 24 bytes, and of bytes: the general row copy */
    check(LT_F32, 4, (int64_t[]){16, 9, 5, 3}, p4, 60);
    check(LT_F32, 4, (int64_t[]){128, 28, 4, 6}, p4, 61);
    check(LT_I8, 4, (int64_t[]){16, 9, 5, 16}, p4, 62);
    check(LT_I16, 4, (int64_t[]){16, 9, 5, 8}, p4, 63); /* 16 bytes of int16 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(head_permutes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
