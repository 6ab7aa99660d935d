/* Tensor family, part 1: the view ops (Reshape, Flatten, Squeeze, Unsqueeze,
 * Identity, Shape, Size) and the copies (Transpose, Concat, Split, Slice,
 * Expand, Tile), checked against hand-derived shapes and index maps. */
#include "test_tensorops_util.h"
#include <math.h>

/* ---- views ---- */
static void reshape_views(void **state)
{
    (void)state;
    int64_t d[3] = {2, 3, 4};
    lt_value *x = tu_rand(LT_F32, 3, d, -1, 1, 11), *out[1];
    /* 0 copies dim 0, -1 takes the rest */
    tu_graph g = tu_single(LT_OP_RESHAPE, 13, 2, 1);
    lt_value *in[2] = {x, to_ints(2, (int64_t[]){0, -1})};
    to_run(&g, in, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){2, 12});
    to_assert_view(out[0], x);
    lt_value_free(out[0]);
    lt_value_free(in[1]);
    /* -1 first, explicit sizes after */
    in[1] = to_ints(3, (int64_t[]){-1, 2, 2});
    to_run(&g, in, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){6, 2, 2});
    lt_value_free(out[0]);
    lt_value_free(in[1]);
    /* bad: two -1, and a size that does not fit */
    in[1] = to_ints(2, (int64_t[]){-1, -1});
    to_run(&g, in, out, LT_ERR_INVALID);
    lt_value_free(in[1]);
    in[1] = to_ints(2, (int64_t[]){5, 5});
    to_run(&g, in, out, LT_ERR_INVALID);
    lt_value_free(in[1]);
    tu_free(&g);

    /* allowzero: a 0 is a real 0-sized dim */
    int64_t dz[2] = {0, 3};
    lt_value *z = tu_rand(LT_F32, 2, dz, 0, 1, 1);
    g = tu_single(LT_OP_RESHAPE, 14, 2, 1);
    tu_attr_int(&g, "allowzero", 1);
    in[0] = z;
    in[1] = to_ints(3, (int64_t[]){3, 0, 7});
    to_run(&g, in, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){3, 0, 7});
    lt_value_free(out[0]);
    lt_value_free(in[1]);
    tu_free(&g);
    lt_value_free(z);

    /* Reshape-1: the shape is an attribute */
    g = tu_single(LT_OP_RESHAPE, 1, 1, 1);
    tu_attr_ints(&g, "shape", 2, (int64_t[]){4, 6});
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){4, 6});
    assert_true(tu_get(out[0], 23) == tu_get(x, 23));
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(x);
}

static void flatten_axes(void **state)
{
    (void)state;
    int64_t d[4] = {2, 3, 4, 5};
    lt_value *x = tu_rand(LT_F16, 4, d, -1, 1, 3), *out[1];
    const int64_t axes[] = {0, 1, 2, 4, -1, -4};
    const int64_t want[][2] = {{1, 120}, {2, 60}, {6, 20}, {120, 1}, {24, 5}, {1, 120}};
    for (int i = 0; i < 6; i++) {
        tu_graph g = tu_single(LT_OP_FLATTEN, 13, 1, 1);
        tu_attr_int(&g, "axis", axes[i]);
        to_run(&g, (lt_value *[]){x}, out, LT_OK);
        to_dims(out[0], 2, want[i]);
        lt_value_free(out[0]);
        tu_free(&g);
    }
    tu_graph g = tu_single(LT_OP_FLATTEN, 13, 1, 1);
    tu_attr_int(&g, "axis", 5);
    to_run(&g, (lt_value *[]){x}, out, LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
}

static void squeeze_unsqueeze(void **state)
{
    (void)state;
    int64_t d[4] = {1, 3, 1, 5};
    lt_value *x = tu_rand(LT_I32, 4, d, -9, 9, 5), *out[1];
    /* opset 11: axes attribute, negative allowed */
    tu_graph g = tu_single(LT_OP_SQUEEZE, 11, 1, 1);
    tu_attr_ints(&g, "axes", 1, (int64_t[]){-2});
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){1, 3, 5});
    lt_value_free(out[0]);
    tu_free(&g);
    /* opset 13: axes input; omitted squeezes every 1 */
    g = tu_single(LT_OP_SQUEEZE, 13, 2, 1);
    tu_omit_input(&g, 1);
    to_run(&g, (lt_value *[]){x, NULL}, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){3, 5});
    lt_value_free(out[0]);
    tu_free(&g);
    /* squeezing a dim that is not 1 fails */
    g = tu_single(LT_OP_SQUEEZE, 13, 2, 1);
    lt_value *ax = to_ints(1, (int64_t[]){1});
    to_run(&g, (lt_value *[]){x, ax}, out, LT_ERR_INVALID);
    lt_value_free(ax);
    tu_free(&g);

    /* Unsqueeze-13: axes index the output, unsorted and negative */
    int64_t d2[2] = {3, 4};
    lt_value *y = tu_rand(LT_F64, 2, d2, -1, 1, 6);
    g = tu_single(LT_OP_UNSQUEEZE, 13, 2, 1);
    ax = to_ints(3, (int64_t[]){-1, 0, 2});
    to_run(&g, (lt_value *[]){y, ax}, out, LT_OK);
    to_dims(out[0], 5, (int64_t[]){1, 3, 1, 4, 1});
    to_assert_view(out[0], y);
    lt_value_free(out[0]);
    lt_value_free(ax);
    ax = to_ints(2, (int64_t[]){1, -3}); /* the same axis twice */
    to_run(&g, (lt_value *[]){y, ax}, out, LT_ERR_INVALID);
    lt_value_free(ax);
    tu_free(&g);
    /* Unsqueeze-1: attribute */
    g = tu_single(LT_OP_UNSQUEEZE, 1, 1, 1);
    tu_attr_ints(&g, "axes", 2, (int64_t[]){0, 3});
    to_run(&g, (lt_value *[]){y}, out, LT_OK);
    to_dims(out[0], 4, (int64_t[]){1, 3, 4, 1});
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(y);
}

static void identity_shape_size(void **state)
{
    (void)state;
    int64_t d[3] = {2, 3, 5};
    lt_value *x = tu_rand(LT_U8, 3, d, 0, 200, 8), *out[1];
    tu_graph g = tu_single(LT_OP_IDENTITY, 16, 1, 1);
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    to_dims(out[0], 3, d);
    /* Identity hands its input on where it is, behind a device path too:
     * no copy either way, the input's own bytes */
    assert_ptr_equal(out[0]->t.data, x->t.data);
    if (tu_device_path()) {
        assert_int_equal(tu_last_copies.uploads, 0);
        assert_int_equal(tu_last_copies.downloads, 0);
    }
    lt_value_free(out[0]);
    /* a sequence passes through */
    lt_value *seq = lt_value_new_seq(LT_U8);
    lt_err err;
    assert_int_equal(lt_seq_append(seq, &x->t, &err), LT_OK);
    assert_int_equal(lt_seq_append(seq, &x->t, &err), LT_OK);
    g.m->main->params[0]->type.kind = LT_KIND_SEQUENCE;
    to_run(&g, (lt_value *[]){seq}, out, LT_OK);
    assert_int_equal(out[0]->kind, LT_VAL_SEQUENCE);
    assert_int_equal(out[0]->nseq, 2);
    lt_value_free(out[0]);
    lt_value_free(seq);
    tu_free(&g);

    struct {
        int64_t start, end;
        bool has_start, has_end;
        int n;
        int64_t want[3];
    } cases[] = {
        {0, 0, false, false, 3, {2, 3, 5}}, {1, 0, true, false, 2, {3, 5}}, {0, -1, false, true, 2, {2, 3}},
        {-10, 10, true, true, 3, {2, 3, 5}}, {2, 1, true, true, 0, {0}}, {-1, 0, true, false, 1, {5}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        g = tu_single(LT_OP_SHAPE, 15, 1, 1);
        if (cases[c].has_start)
            tu_attr_int(&g, "start", cases[c].start);
        if (cases[c].has_end)
            tu_attr_int(&g, "end", cases[c].end);
        to_run(&g, (lt_value *[]){x}, out, LT_OK);
        assert_int_equal(out[0]->t.dtype, LT_I64);
        to_dims(out[0], 1, (int64_t[]){cases[c].n});
        for (int i = 0; i < cases[c].n; i++)
            assert_int_equal(((int64_t *)out[0]->t.data)[i], cases[c].want[i]);
        lt_value_free(out[0]);
        tu_free(&g);
    }
    g = tu_single(LT_OP_SIZE, 13, 1, 1);
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    assert_int_equal(out[0]->t.rank, 0);
    assert_int_equal(*(int64_t *)out[0]->t.data, 30);
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(x);
}

/* ---- Transpose ---- */
typedef struct {
    int rank;
    int64_t perm[LT_MAX_RANK], in_dims[LT_MAX_RANK];
} perm_ctx;

static int64_t perm_map(const int64_t *idx, const void *ctx)
{
    const perm_ctx *p = ctx;
    int64_t src[LT_MAX_RANK];
    for (int i = 0; i < p->rank; i++)
        src[p->perm[i]] = idx[i];
    return to_lin(p->rank, p->in_dims, src);
}

static void transpose_one(int rank, const int64_t *dims, const int64_t *perm, lt_dtype dt, uint64_t seed)
{
    perm_ctx c = {rank};
    if (rank)
        memcpy(c.in_dims, dims, sizeof *dims * rank);
    for (int i = 0; i < rank; i++)
        c.perm[i] = perm ? perm[i] : rank - 1 - i;
    lt_value *x = to_bytes(dt, rank, dims, seed), *out[1];
    tu_graph g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    if (perm)
        tu_attr_ints(&g, "perm", rank, perm);
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    for (int i = 0; i < rank; i++)
        assert_int_equal(out[0]->t.dims[i], dims[c.perm[i]]);
    to_check_map(out[0], x, perm_map, &c, NULL, seed);
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(x);
}

static void transpose_all(void **state)
{
    (void)state;
    const lt_dtype types[] = {LT_F32, LT_U8, LT_F16, LT_F64, LT_C128};
    uint64_t seed = 100;
    /* every dtype size through the 2-D tiled path and a generic 3-D one */
    for (int t = 0; t < 5; t++) {
        transpose_one(2, (int64_t[]){37, 70}, NULL, types[t], seed++);
        transpose_one(3, (int64_t[]){3, 5, 7}, (int64_t[]){1, 2, 0}, types[t], seed++);
    }
    /* big enough for threads and several tiles, odd sizes for edge tiles */
    transpose_one(2, (int64_t[]){301, 257}, NULL, LT_F32, seed++);
    /* the common 4-D permutations */
    const int64_t p4[][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}};
    for (int i = 0; i < 5; i++)
        transpose_one(4, (int64_t[]){2, 16, 9, 40}, p4[i], LT_F32, seed++);
    /* random permutations of random shapes, ranks 1..6 */
    for (int rep = 0; rep < 40; rep++) {
        uint64_t s = seed++;
        int rank = 1 + (int)(to_next(&s) % 6);
        int64_t dims[6], perm[6];
        for (int i = 0; i < rank; i++) {
            dims[i] = 1 + (int64_t)(to_next(&s) % 6);
            perm[i] = i;
        }
        for (int i = rank - 1; i > 0; i--) {
            int j = (int)(to_next(&s) % (uint64_t)(i + 1));
            int64_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        transpose_one(rank, dims, perm, rep % 2 ? LT_I64 : LT_F32, s);
    }
    /* scalars and empty tensors */
    transpose_one(0, NULL, NULL, LT_F32, seed++);
    transpose_one(3, (int64_t[]){2, 0, 3}, (int64_t[]){2, 0, 1}, LT_F32, seed++);
    /* a repeated axis is an error */
    lt_value *x = to_bytes(LT_F32, 2, (int64_t[]){2, 2}, 1), *out[1];
    tu_graph g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    tu_attr_ints(&g, "perm", 2, (int64_t[]){0, 0});
    to_run(&g, (lt_value *[]){x}, out, LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
}

/* ---- Concat and Split ---- */
typedef struct {
    int axis, n;
    int64_t dims[3][3], start[3];
} cat_ctx;

static void concat_axes(void **state)
{
    (void)state;
    /* [2,a,3] pieces along axis 1 (given as 1 and as -2), one piece empty */
    const int64_t a[3] = {2, 0, 3};
    for (int neg = 0; neg < 2; neg++) {
        lt_value *x[3], *out[1];
        for (int i = 0; i < 3; i++)
            x[i] = to_bytes(LT_F32, 3, (int64_t[]){2, a[i], 3}, 20 + i);
        tu_graph g = tu_single(LT_OP_CONCAT, 13, 3, 1);
        tu_attr_int(&g, "axis", neg ? -2 : 1);
        to_run(&g, x, out, LT_OK);
        to_dims(out[0], 3, (int64_t[]){2, 5, 3});
        const float *y = out[0]->t.data;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 5; j++)
                for (int k = 0; k < 3; k++) {
                    const lt_value *src = j < 2 ? x[0] : x[2];
                    int jj = j < 2 ? j : j - 2;
                    float want = ((const float *)src->t.data)[(i * a[j < 2 ? 0 : 2] + jj) * 3 + k];
                    assert_memory_equal(&y[(i * 5 + j) * 3 + k], &want, 4);
                }
        lt_value_free(out[0]);
        tu_free(&g);
        for (int i = 0; i < 3; i++)
            lt_value_free(x[i]);
    }
    /* mismatched other dims fail */
    lt_value *p = to_bytes(LT_F32, 2, (int64_t[]){2, 3}, 1), *q = to_bytes(LT_F32, 2, (int64_t[]){3, 3}, 2), *out[1];
    tu_graph g = tu_single(LT_OP_CONCAT, 13, 2, 1);
    tu_attr_int(&g, "axis", 1);
    to_run(&g, (lt_value *[]){p, q}, out, LT_ERR_INVALID);
    tu_free(&g);
    /* a large concat along the last axis runs threaded */
    lt_value *big[2] = {to_bytes(LT_F32, 2, (int64_t[]){300, 200}, 3), to_bytes(LT_F32, 2, (int64_t[]){300, 100}, 4)};
    g = tu_single(LT_OP_CONCAT, 13, 2, 1);
    tu_attr_int(&g, "axis", -1);
    to_run(&g, big, out, LT_OK);
    for (int i = 0; i < 300; i++) {
        assert_memory_equal((float *)out[0]->t.data + i * 300, (float *)big[0]->t.data + i * 200, 200 * 4);
        assert_memory_equal((float *)out[0]->t.data + i * 300 + 200, (float *)big[1]->t.data + i * 100, 100 * 4);
    }
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(big[0]);
    lt_value_free(big[1]);
    lt_value_free(p);
    lt_value_free(q);
}

/* Checks Split's outputs are consecutive pieces of x along axis 1 of [3, n, 2]. */
static void check_pieces(lt_value *x, lt_value **outs, int nout, const int64_t *sizes)
{
    int64_t n = x->t.dims[1], off = 0;
    for (int o = 0; o < nout; o++) {
        to_dims(outs[o], 3, (int64_t[]){3, sizes[o], 2});
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < sizes[o]; j++)
                for (int k = 0; k < 2; k++)
                    assert_true(tu_get(outs[o], (i * sizes[o] + j) * 2 + k) == tu_get(x, (i * n + off + j) * 2 + k));
        off += sizes[o];
        lt_value_free(outs[o]);
    }
}

static void split_forms(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 3, (int64_t[]){3, 5, 2}, -1, 1, 30), *outs[3];
    /* opset 13: sizes as input, one of them 0 */
    tu_graph g = tu_single(LT_OP_SPLIT, 13, 2, 3);
    tu_attr_int(&g, "axis", 1);
    lt_value *sp = to_ints(3, (int64_t[]){2, 0, 3});
    to_run(&g, (lt_value *[]){x, sp}, outs, LT_OK);
    check_pieces(x, outs, 3, (int64_t[]){2, 0, 3});
    lt_value_free(sp);
    sp = to_ints(3, (int64_t[]){2, 2, 2}); /* sums to 6, not 5 */
    to_run(&g, (lt_value *[]){x, sp}, outs, LT_ERR_INVALID);
    lt_value_free(sp);
    tu_free(&g);
    /* opset 11: attribute, negative axis */
    g = tu_single(LT_OP_SPLIT, 11, 1, 2);
    tu_attr_int(&g, "axis", -2);
    tu_attr_ints(&g, "split", 2, (int64_t[]){4, 1});
    to_run(&g, (lt_value *[]){x}, outs, LT_OK);
    check_pieces(x, outs, 2, (int64_t[]){4, 1});
    tu_free(&g);
    /* opset 18: num_outputs with an uneven last chunk */
    g = tu_single(LT_OP_SPLIT, 18, 2, 3);
    tu_omit_input(&g, 1);
    tu_attr_int(&g, "axis", 1);
    tu_attr_int(&g, "num_outputs", 3);
    to_run(&g, (lt_value *[]){x, NULL}, outs, LT_OK);
    check_pieces(x, outs, 3, (int64_t[]){2, 2, 1});
    tu_free(&g);
    /* no sizes: equal parts, which 5 cannot make with 3 outputs */
    g = tu_single(LT_OP_SPLIT, 13, 1, 3);
    tu_attr_int(&g, "axis", 1);
    to_run(&g, (lt_value *[]){x}, outs, LT_ERR_INVALID);
    tu_free(&g);
    g = tu_single(LT_OP_SPLIT, 13, 1, 5);
    tu_attr_int(&g, "axis", 1);
    lt_value *five[5];
    to_run(&g, (lt_value *[]){x}, five, LT_OK);
    for (int i = 0; i < 5; i++) {
        to_dims(five[i], 3, (int64_t[]){3, 1, 2});
        assert_true(tu_get(five[i], 1) == tu_get(x, i * 2 + 1));
        lt_value_free(five[i]);
    }
    tu_free(&g);
    lt_value_free(x);
}

/* Split where every axis before the split's has length 1: the pieces are
 * views of the input's storage (one buffer, consecutive data), elsewhere
 * copies; the same elements either way. */
static void split_views(void **state)
{
    (void)state;
    lt_value *x = tu_rand(LT_F32, 4, (int64_t[]){1, 1, 6, 4}, -1, 1, 33), *outs[3];
    tu_graph g = tu_single(LT_OP_SPLIT, 11, 1, 3);
    tu_attr_int(&g, "axis", 2);
    tu_attr_ints(&g, "split", 3, (int64_t[]){1, 3, 2});
    to_run(&g, (lt_value *[]){x}, outs, LT_OK);
    int64_t off = 0, sizes[3] = {1, 3, 2};
    for (int o = 0; o < 3; o++) {
        to_dims(outs[o], 4, (int64_t[]){1, 1, sizes[o], 4});
        for (int64_t e = 0; e < sizes[o] * 4; e++)
            assert_true(tu_get(outs[o], e) == tu_get(x, off * 4 + e));
        off += sizes[o];
    }
    if (!tu_device_path()) {
        assert_non_null(outs[0]->t.buf);
        assert_ptr_equal(outs[1]->t.buf, outs[0]->t.buf);
        assert_ptr_equal(outs[2]->t.buf, outs[0]->t.buf);
        assert_ptr_equal((float *)outs[1]->t.data, (float *)outs[0]->t.data + 4);
        assert_ptr_equal((float *)outs[2]->t.data, (float *)outs[0]->t.data + 16);
    }
    for (int o = 0; o < 3; o++)
        lt_value_free(outs[o]);
    tu_free(&g);
    lt_value_free(x);
    /* an axis of 2 before the split's: copies, each its own buffer */
    x = tu_rand(LT_F32, 3, (int64_t[]){2, 6, 4}, -1, 1, 34);
    g = tu_single(LT_OP_SPLIT, 11, 1, 2);
    tu_attr_int(&g, "axis", 1);
    to_run(&g, (lt_value *[]){x}, outs, LT_OK);
    for (int o = 0; o < 2; o++) {
        to_dims(outs[o], 3, (int64_t[]){2, 3, 4});
        for (int i = 0; i < 2; i++)
            for (int64_t e = 0; e < 12; e++)
                assert_true(tu_get(outs[o], i * 12 + e) == tu_get(x, i * 24 + o * 12 + e));
    }
    if (!tu_device_path())
        assert_ptr_not_equal(outs[0]->t.buf, outs[1]->t.buf);
    for (int o = 0; o < 2; o++)
        lt_value_free(outs[o]);
    tu_free(&g);
    lt_value_free(x);
}

/* tests/data/split_view.onnx: pieces of a planned buffer, as views, read
 * by kernels that may write over their input; the same answer on every
 * run (the first runs on the pool, the later ones on the planned arena) */
static void split_views_in_a_program(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    if (lt_model_load(LT_SOURCE_DIR "/tests/data/split_view.onnx", &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session *s;
    if (lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const int64_t N = 37;
    lt_value *x = tu_rand(LT_F32, 3, (int64_t[]){3, N, 4}, -2, 2, 35);
    double want[3 * 37 * 4];
    for (int64_t e = 0; e < N * 4; e++) {
        double a = tu_get(x, e), b = tu_get(x, N * 4 + e), c = tu_get(x, 2 * N * 4 + e);
        want[e] = 1 / (1 + exp(-a * a));
        want[N * 4 + e] = -b * b;
        want[2 * N * 4 + e] = c * c + a * a;
    }
    for (int run = 0; run < 3; run++) {
        const char *names[1] = {"x"};
        lt_value *ins[1] = {lt_value_ref(x)}, *outs[1] = {NULL};
        if (lt_session_run(s, 1, names, ins, outs, &err) != LT_OK)
            fail_msg("run %d: %s", run, err.msg);
        to_dims(outs[0], 3, (int64_t[]){3, N, 4});
        tu_assert_close(outs[0], want, 3 * N * 4, 1e-6, 1e-6, 35 + (uint64_t)run);
        lt_value_free(ins[0]);
        lt_value_free(outs[0]);
    }
    lt_session_free(s);
    lt_model_free(m);
    lt_value_free(x);
}

/* ---- Slice ---- */
static lt_value *slice10(lt_value *x, int n, const int64_t *s, const int64_t *e, const int64_t *a, const int64_t *st,
                         lt_status want)
{
    tu_graph g = tu_single(LT_OP_SLICE, 13, 5, 1);
    lt_value *in[5] = {x, to_ints(n, s), to_ints(n, e), a ? to_ints(n, a) : NULL, st ? to_ints(n, st) : NULL}, *out[1] = {0};
    if (!a)
        tu_omit_input(&g, 3);
    if (!st)
        tu_omit_input(&g, 4);
    to_run(&g, in, out, want);
    for (int i = 1; i < 5; i++)
        lt_value_free(in[i]);
    tu_free(&g);
    return out[0];
}

static void expect_f(const lt_value *v, int n, const double *want)
{
    tu_assert_close(v, want, n, 0, 0, 0);
}

static void slice_cases(void **state)
{
    (void)state;
    double r10[10];
    for (int i = 0; i < 10; i++)
        r10[i] = i;
    lt_value *x = tu_from(LT_F32, 1, (int64_t[]){10}, r10), *y;
    /* [8:2:-2] */
    y = slice10(x, 1, (int64_t[]){8}, (int64_t[]){2}, NULL, (int64_t[]){-2}, LT_OK);
    expect_f(y, 3, (double[]){8, 6, 4});
    lt_value_free(y);
    /* whole axis reversed with the INT64_MIN sentinel */
    y = slice10(x, 1, (int64_t[]){-1}, (int64_t[]){INT64_MIN}, (int64_t[]){0}, (int64_t[]){-1}, LT_OK);
    expect_f(y, 10, (double[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
    lt_value_free(y);
    /* ends past the end clamp; starts past the end give nothing */
    y = slice10(x, 1, (int64_t[]){7}, (int64_t[]){INT64_MAX}, NULL, NULL, LT_OK);
    expect_f(y, 3, (double[]){7, 8, 9});
    lt_value_free(y);
    y = slice10(x, 1, (int64_t[]){1000}, (int64_t[]){1001}, NULL, NULL, LT_OK);
    to_dims(y, 1, (int64_t[]){0});
    lt_value_free(y);
    /* negative start and end, step 3 */
    y = slice10(x, 1, (int64_t[]){-9}, (int64_t[]){-1}, NULL, (int64_t[]){3}, LT_OK);
    expect_f(y, 3, (double[]){1, 4, 7});
    lt_value_free(y);
    /* extreme steps take one element (no stride overflow: UBSan watches);
     * the [5,2] view makes the sliced axis' stride 2 */
    lt_value *x52 = tu_from(LT_F32, 2, (int64_t[]){5, 2}, r10);
    y = slice10(x52, 1, (int64_t[]){4}, (int64_t[]){INT64_MIN}, (int64_t[]){0}, (int64_t[]){INT64_MIN}, LT_OK);
    expect_f(y, 2, (double[]){8, 9});
    lt_value_free(y);
    y = slice10(x52, 1, (int64_t[]){2}, (int64_t[]){INT64_MAX}, (int64_t[]){0}, (int64_t[]){INT64_MAX}, LT_OK);
    expect_f(y, 2, (double[]){4, 5});
    lt_value_free(y);
    lt_value_free(x52);
    /* errors: step 0, axis out of range */
    slice10(x, 1, (int64_t[]){0}, (int64_t[]){5}, NULL, (int64_t[]){0}, LT_ERR_INVALID);
    slice10(x, 1, (int64_t[]){0}, (int64_t[]){5}, (int64_t[]){1}, NULL, LT_ERR_INVALID);
    lt_value_free(x);

    /* 2-D: rows 1.. reversed columns 4:0:-2 on a [3,5] matrix, axes given negative */
    double m[15];
    for (int i = 0; i < 15; i++)
        m[i] = i;
    x = tu_from(LT_F64, 2, (int64_t[]){3, 5}, m);
    y = slice10(x, 2, (int64_t[]){4, 1}, (int64_t[]){0, 100}, (int64_t[]){-1, -2}, (int64_t[]){-2, 1}, LT_OK);
    to_dims(y, 2, (int64_t[]){2, 2});
    expect_f(y, 4, (double[]){9, 7, 14, 12});
    lt_value_free(y);
    /* Slice-1: attributes, axes omitted */
    tu_graph g = tu_single(LT_OP_SLICE, 1, 1, 1);
    tu_attr_ints(&g, "starts", 2, (int64_t[]){1, -2});
    tu_attr_ints(&g, "ends", 2, (int64_t[]){2, 1000});
    lt_value *out[1];
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){1, 2});
    expect_f(out[0], 2, (double[]){8, 9});
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(x);
}

/* ---- Expand and Tile ---- */
typedef struct {
    int rank, xrank;
    int64_t xdims[LT_MAX_RANK];
} bc_ctx;

static int64_t bc_map(const int64_t *idx, const void *ctx)
{
    const bc_ctx *c = ctx;
    int64_t l = 0;
    for (int i = 0; i < c->xrank; i++) {
        int64_t d = c->xdims[i], o = idx[i + c->rank - c->xrank];
        l = l * d + (d == 1 ? 0 : o);
    }
    return l;
}

static int64_t tile_map(const int64_t *idx, const void *ctx)
{
    const bc_ctx *c = ctx;
    int64_t l = 0;
    for (int i = 0; i < c->xrank; i++)
        l = l * c->xdims[i] + idx[i] % c->xdims[i];
    return l;
}

static void expand_tile(void **state)
{
    (void)state;
    lt_value *out[1];
    /* [3,1] to [2,1,6] gives [2,3,6]; [3,1] to [1] keeps [3,1] */
    bc_ctx c = {3, 2, {3, 1}};
    lt_value *x = to_bytes(LT_I16, 2, c.xdims, 40), *s = to_ints(3, (int64_t[]){2, 1, 6});
    tu_graph g = tu_single(LT_OP_EXPAND, 13, 2, 1);
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){2, 3, 6});
    to_check_map(out[0], x, bc_map, &c, NULL, 40);
    lt_value_free(out[0]);
    lt_value_free(s);
    s = to_ints(1, (int64_t[]){1});
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){3, 1});
    lt_value_free(out[0]);
    lt_value_free(s);
    s = to_ints(2, (int64_t[]){2, 4}); /* 3 cannot become 2 */
    to_run(&g, (lt_value *[]){x, s}, out, LT_ERR_INVALID);
    lt_value_free(s);
    lt_value_free(x);
    /* a large broadcast of a row */
    bc_ctx c2 = {2, 1, {300}};
    x = to_bytes(LT_F32, 1, c2.xdims, 41);
    s = to_ints(2, (int64_t[]){400, 1});
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 2, (int64_t[]){400, 300});
    to_check_map(out[0], x, bc_map, &c2, NULL, 41);
    lt_value_free(out[0]);
    lt_value_free(s);
    lt_value_free(x);
    tu_free(&g);

    bc_ctx t = {3, 3, {2, 3, 4}};
    x = to_bytes(LT_U8, 3, t.xdims, 42);
    g = tu_single(LT_OP_TILE, 13, 2, 1);
    s = to_ints(3, (int64_t[]){2, 1, 3});
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){4, 3, 12});
    to_check_map(out[0], x, tile_map, &t, NULL, 42);
    lt_value_free(out[0]);
    lt_value_free(s);
    s = to_ints(3, (int64_t[]){2, 0, 1});
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){4, 0, 4});
    lt_value_free(out[0]);
    lt_value_free(s);
    s = to_ints(2, (int64_t[]){2, 2}); /* wrong length */
    to_run(&g, (lt_value *[]){x, s}, out, LT_ERR_INVALID);
    lt_value_free(s);
    tu_free(&g);
    lt_value_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reshape_views),   cmocka_unit_test(flatten_axes), cmocka_unit_test(squeeze_unsqueeze),
        cmocka_unit_test(identity_shape_size), cmocka_unit_test(transpose_all), cmocka_unit_test(concat_axes),
        cmocka_unit_test(split_forms),     cmocka_unit_test(split_views),  cmocka_unit_test(split_views_in_a_program),
        cmocka_unit_test(slice_cases),     cmocka_unit_test(expand_tile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
