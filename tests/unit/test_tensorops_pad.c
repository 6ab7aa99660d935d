/* Tensor family, part 2: Pad (every mode and opset form), CenterCropPad,
 * ReverseSequence, DepthToSpace and SpaceToDepth. Pad results were derived
 * with numpy.pad; the others are checked through index maps written from
 * the ONNX definitions (reshape-transpose-reshape). */
#include "test_tensorops_util.h"

static const double x23[6] = {1, 2, 3, 4, 5, 6};

static lt_value *pad11(const char *mode, lt_value *x, int n, const int64_t *pads, lt_value *cval, lt_value *axes,
                       int opset, lt_status want)
{
    tu_graph g = tu_single(LT_OP_PAD, opset, 4, 1);
    if (mode)
        tu_attr_str(&g, "mode", mode);
    if (!cval)
        tu_omit_input(&g, 2);
    if (!axes)
        tu_omit_input(&g, 3);
    lt_value *p = to_ints(n, pads), *out[1] = {0};
    to_run(&g, (lt_value *[]){x, p, cval, axes}, out, want);
    lt_value_free(p);
    tu_free(&g);
    return out[0];
}

static void pad_modes(void **state)
{
    (void)state;
    lt_value *x = tu_from(LT_F32, 2, (int64_t[]){2, 3}, x23), *y;
    const int64_t pads[4] = {1, 2, 1, 3};
    static const double reflect[32] = {6, 5, 4, 5, 6, 5, 4, 5, 3, 2, 1, 2, 3, 2, 1, 2,
                                       6, 5, 4, 5, 6, 5, 4, 5, 3, 2, 1, 2, 3, 2, 1, 2};
    static const double edge[32] = {1, 1, 1, 2, 3, 3, 3, 3, 1, 1, 1, 2, 3, 3, 3, 3,
                                    4, 4, 4, 5, 6, 6, 6, 6, 4, 4, 4, 5, 6, 6, 6, 6};
    static const double wrap[32] = {5, 6, 4, 5, 6, 4, 5, 6, 2, 3, 1, 2, 3, 1, 2, 3,
                                    5, 6, 4, 5, 6, 4, 5, 6, 2, 3, 1, 2, 3, 1, 2, 3};
    static const double cons[32] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9,
                                    9, 9, 4, 5, 6, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
    y = pad11("reflect", x, 4, pads, NULL, NULL, 13, LT_OK);
    to_dims(y, 2, (int64_t[]){4, 8});
    tu_assert_close(y, reflect, 32, 0, 0, 0);
    lt_value_free(y);
    y = pad11("edge", x, 4, pads, NULL, NULL, 13, LT_OK);
    tu_assert_close(y, edge, 32, 0, 0, 0);
    lt_value_free(y);
    y = pad11("wrap", x, 4, pads, NULL, NULL, 19, LT_OK);
    tu_assert_close(y, wrap, 32, 0, 0, 0);
    lt_value_free(y);
    lt_value *nine = tu_from(LT_F32, 0, NULL, (double[]){9});
    y = pad11(NULL, x, 4, pads, nine, NULL, 13, LT_OK);
    tu_assert_close(y, cons, 32, 0, 0, 0);
    lt_value_free(y);
    /* opset 18 axes: pad only axis -1 by (2, 3) */
    lt_value *ax = to_ints(1, (int64_t[]){-1});
    y = pad11(NULL, x, 2, (int64_t[]){2, 3}, nine, ax, 18, LT_OK);
    to_dims(y, 2, (int64_t[]){2, 8});
    tu_assert_close(y, cons + 8, 16, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(ax);
    /* negative pads crop: drop row 0 and the last column, then add a zero column in front */
    y = pad11(NULL, x, 4, (int64_t[]){-1, 1, 0, -1}, NULL, NULL, 13, LT_OK);
    to_dims(y, 2, (int64_t[]){1, 3});
    tu_assert_close(y, (double[]){0, 4, 5}, 3, 0, 0, 0);
    lt_value_free(y);
    /* wrong pads length; unknown mode */
    pad11(NULL, x, 2, pads, NULL, NULL, 13, LT_ERR_INVALID);
    pad11("mirror", x, 4, pads, NULL, NULL, 13, LT_ERR_INVALID);
    lt_value_free(x);
    lt_value_free(nine);

    /* reflect and wrap further than the axis is long */
    lt_value *v = tu_from(LT_I64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    y = pad11("reflect", v, 2, (int64_t[]){5, 5}, NULL, NULL, 13, LT_OK);
    tu_assert_close(y, (double[]){2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}, 13, 0, 0, 0);
    lt_value_free(y);
    y = pad11("wrap", v, 2, (int64_t[]){5, 4}, NULL, NULL, 19, LT_OK);
    tu_assert_close(y, (double[]){2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1}, 12, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(v);

    /* Pad-2: pads and value as attributes, on float16 */
    lt_value *h = tu_from(LT_F16, 2, (int64_t[]){2, 3}, x23), *out[1];
    tu_graph g = tu_single(LT_OP_PAD, 2, 1, 1);
    tu_attr_ints(&g, "pads", 4, pads);
    tu_attr_float(&g, "value", 9.0f);
    to_run(&g, (lt_value *[]){h}, out, LT_OK);
    tu_assert_close(out[0], cons, 32, 0, 0, 0);
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value_free(h);
}

/* Constant padding of a large 4-D tensor (threads, segments) against a map. */
typedef struct {
    int64_t xd[4], pb[4];
} padc;

static int64_t pad_map(const int64_t *idx, const void *ctx)
{
    const padc *c = ctx;
    int64_t s[4];
    for (int a = 0; a < 4; a++) {
        s[a] = idx[a] - c->pb[a];
        if (s[a] < 0 || s[a] >= c->xd[a])
            return -1;
    }
    return to_lin(4, c->xd, s);
}

static void pad_large(void **state)
{
    (void)state;
    padc c = {{2, 8, 30, 33}, {0, 1, 2, 3}};
    lt_value *x = to_bytes(LT_F64, 4, c.xd, 77);
    lt_value *cv = to_bytes(LT_F64, 0, NULL, 78);
    lt_value *y = pad11(NULL, x, 8, (int64_t[]){0, 1, 2, 3, 1, 0, 2, 1}, cv, NULL, 13, LT_OK);
    to_dims(y, 4, (int64_t[]){3, 9, 34, 37});
    to_check_map(y, x, pad_map, &c, cv->t.data, 77);
    lt_value_free(y);
    lt_value_free(x);
    lt_value_free(cv);
}

static void center_crop_pad(void **state)
{
    (void)state;
    lt_value *out[1];
    /* [20,10,3] to [10,7,3]: x[5:15, 1:8, :] */
    lt_value *x = tu_rand(LT_F32, 3, (int64_t[]){20, 10, 3}, -1, 1, 50);
    lt_value *s = to_ints(3, (int64_t[]){10, 7, 3});
    tu_graph g = tu_single(LT_OP_CENTER_CROP_PAD, 18, 2, 1);
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){10, 7, 3});
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 3; k++)
                assert_true(tu_get(out[0], (i * 7 + j) * 3 + k) == tu_get(x, ((i + 5) * 10 + j + 1) * 3 + k));
    lt_value_free(out[0]);
    lt_value_free(s);
    tu_free(&g);
    lt_value_free(x);
    /* axes [1, 2] of [3,20,8] to [10, 9]: crop 20 to x[5:15], pad 8 with one zero column at the end */
    x = tu_rand(LT_F32, 3, (int64_t[]){3, 20, 8}, 1, 2, 51);
    s = to_ints(2, (int64_t[]){10, 9});
    g = tu_single(LT_OP_CENTER_CROP_PAD, 18, 2, 1);
    tu_attr_ints(&g, "axes", 2, (int64_t[]){1, -1});
    to_run(&g, (lt_value *[]){x, s}, out, LT_OK);
    to_dims(out[0], 3, (int64_t[]){3, 10, 9});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 10; j++)
            for (int k = 0; k < 9; k++) {
                double want = k < 8 ? tu_get(x, (i * 20 + j + 5) * 8 + k) : 0.0;
                assert_true(tu_get(out[0], (i * 10 + j) * 9 + k) == want);
            }
    lt_value_free(out[0]);
    lt_value_free(s);
    tu_free(&g);
    lt_value_free(x);
}

typedef struct {
    int64_t dims[3];
    const int64_t *lens;
    int time_axis;
} rs_ctx;

static int64_t rs_map(const int64_t *idx, const void *ctx)
{
    const rs_ctx *c = ctx;
    int64_t s[3] = {idx[0], idx[1], idx[2]};
    int ta = c->time_axis, ba = 1 - ta;
    int64_t l = c->lens[idx[ba]];
    if (idx[ta] < l)
        s[ta] = l - 1 - idx[ta];
    return to_lin(3, c->dims, s);
}

static void reverse_sequence(void **state)
{
    (void)state;
    const int64_t lens[4] = {4, 0, 2, 1};
    for (int ta = 0; ta < 2; ta++) {
        rs_ctx c = {{ta ? 4 : 5, ta ? 5 : 4, 3}, lens, ta};
        lt_value *x = to_bytes(LT_I32, 3, c.dims, 60 + ta), *out[1];
        lt_value *l = to_ints(4, lens);
        tu_graph g = tu_single(LT_OP_REVERSE_SEQUENCE, 10, 2, 1);
        tu_attr_int(&g, "time_axis", ta);
        tu_attr_int(&g, "batch_axis", 1 - ta);
        to_run(&g, (lt_value *[]){x, l}, out, LT_OK);
        to_dims(out[0], 3, c.dims);
        to_check_map(out[0], x, rs_map, &c, NULL, 60 + ta);
        lt_value_free(out[0]);
        lt_value_free(l);
        l = to_ints(4, (int64_t[]){1, 2, 9, 1}); /* longer than the time axis */
        to_run(&g, (lt_value *[]){x, l}, out, LT_ERR_INVALID);
        lt_value_free(l);
        tu_free(&g);
        lt_value_free(x);
    }
}

typedef struct {
    int64_t n, c, h, w, b;
    bool crd;
} ds_ctx;

/* DepthToSpace: y[n, c, h*b+i, w*b+j] = x[n, channel(c, i, j), h, w] */
static int64_t d2s_map(const int64_t *idx, const void *ctx)
{
    const ds_ctx *p = ctx;
    int64_t cp = p->c / (p->b * p->b);
    int64_t h = idx[2] / p->b, i = idx[2] % p->b, w = idx[3] / p->b, j = idx[3] % p->b;
    int64_t ch = p->crd ? idx[1] * p->b * p->b + i * p->b + j : (i * p->b + j) * cp + idx[1];
    return ((idx[0] * p->c + ch) * p->h + h) * p->w + w;
}

/* SpaceToDepth: y[n, (i*b + j)*C + c, h, w] (DCR) or y[n, c*b*b + i*b + j, h, w]
 * (CRD) = x[n, c, h*b+i, w*b+j] */
static int64_t s2d_map(const int64_t *idx, const void *ctx)
{
    const ds_ctx *p = ctx;
    int64_t bb = p->b * p->b;
    int64_t c = p->crd ? idx[1] / bb : idx[1] % p->c, blk = p->crd ? idx[1] % bb : idx[1] / p->c;
    int64_t i = blk / p->b, j = blk % p->b;
    return ((idx[0] * p->c + c) * p->h + idx[2] * p->b + i) * p->w + idx[3] * p->b + j;
}

static void depth_space(void **state)
{
    (void)state;
    lt_value *out[1];
    for (int crd = 0; crd < 2; crd++) {
        ds_ctx c = {2, 18, 4, 5, 3, crd};
        lt_value *x = to_bytes(LT_F32, 4, (int64_t[]){2, 18, 4, 5}, 70 + crd);
        tu_graph g = tu_single(LT_OP_DEPTH_TO_SPACE, 13, 1, 1);
        tu_attr_int(&g, "blocksize", 3);
        if (crd)
            tu_attr_str(&g, "mode", "CRD");
        to_run(&g, (lt_value *[]){x}, out, LT_OK);
        to_dims(out[0], 4, (int64_t[]){2, 2, 12, 15});
        to_check_map(out[0], x, d2s_map, &c, NULL, 70 + crd);
        lt_value_free(out[0]);
        tu_free(&g);
        lt_value_free(x);
    }
    ds_ctx c = {2, 3, 6, 8, 2, false};
    lt_value *x = to_bytes(LT_U16, 4, (int64_t[]){2, 3, 6, 8}, 72);
    tu_graph g = tu_single(LT_OP_SPACE_TO_DEPTH, 13, 1, 1);
    tu_attr_int(&g, "blocksize", 2);
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    to_dims(out[0], 4, (int64_t[]){2, 12, 3, 4});
    to_check_map(out[0], x, s2d_map, &c, NULL, 72);
    lt_value_free(out[0]);
    tu_free(&g);
    /* blocksize that does not divide */
    g = tu_single(LT_OP_SPACE_TO_DEPTH, 13, 1, 1);
    tu_attr_int(&g, "blocksize", 5);
    to_run(&g, (lt_value *[]){x}, out, LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
    /* opset 28 adds mode: DCR (the default) and CRD, blocksize 3 */
    for (int crd = 0; crd < 2; crd++) {
        ds_ctx c3 = {2, 2, 6, 9, 3, crd};
        x = to_bytes(LT_F32, 4, (int64_t[]){2, 2, 6, 9}, 73 + crd);
        g = tu_single(LT_OP_SPACE_TO_DEPTH, 28, 1, 1);
        tu_attr_int(&g, "blocksize", 3);
        tu_attr_str(&g, "mode", crd ? "CRD" : "DCR");
        to_run(&g, (lt_value *[]){x}, out, LT_OK);
        to_dims(out[0], 4, (int64_t[]){2, 18, 2, 3});
        to_check_map(out[0], x, s2d_map, &c3, NULL, 73 + crd);
        lt_value_free(out[0]);
        tu_free(&g);
        lt_value_free(x);
    }
    /* a mode of neither kind */
    x = to_bytes(LT_F32, 4, (int64_t[]){1, 1, 2, 2}, 75);
    g = tu_single(LT_OP_SPACE_TO_DEPTH, 28, 1, 1);
    tu_attr_int(&g, "blocksize", 2);
    tu_attr_str(&g, "mode", "RCD");
    to_run(&g, (lt_value *[]){x}, out, LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
}

/* String tensors move as interned pointers; the default pad is "". */
static void strings_move(void **state)
{
    (void)state;
    static const char *words[4] = {"a", "bb", "ccc", "dddd"};
    lt_value *x = lt_value_new_tensor(), *out[1];
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&x->t, LT_STRING, 2, (int64_t[]){2, 2}, &err), LT_OK);
    for (int i = 0; i < 4; i++)
        ((const char **)x->t.data)[i] = lt_str_intern(words[i], strlen(words[i]));
    tu_graph g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    to_run(&g, (lt_value *[]){x}, out, LT_OK);
    const char **t = out[0]->t.data;
    assert_string_equal(t[0], "a");
    assert_string_equal(t[1], "ccc");
    assert_string_equal(t[2], "bb");
    assert_string_equal(t[3], "dddd");
    lt_value_free(out[0]);
    tu_free(&g);
    lt_value *y = pad11(NULL, x, 4, (int64_t[]){0, 1, 0, 0}, NULL, NULL, 13, LT_OK);
    to_dims(y, 2, (int64_t[]){2, 3});
    const char **p = y->t.data;
    assert_ptr_equal(p[0], lt_str_intern("", 0));
    assert_string_equal(p[1], "a");
    assert_string_equal(p[5], "dddd");
    lt_value_free(y);
    lt_value_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pad_modes),        cmocka_unit_test(pad_large),   cmocka_unit_test(center_crop_pad),
        cmocka_unit_test(reverse_sequence), cmocka_unit_test(depth_space), cmocka_unit_test(strings_move),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
