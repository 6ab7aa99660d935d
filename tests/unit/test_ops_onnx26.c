/* Ops of opsets 20-26 beside Attention: CumProd against products written
 * out in double (zeros included, every exclusive/reverse combination),
 * BitCast against the bytes, AffineGrid against the spec's base grid times
 * theta, the string ops against Python's str.split and hand-made cases,
 * DeformConv against Conv (zero offsets) and a bilinear sample written out,
 * block (De)QuantizeLinear against the per-block formula, ai.onnx.ml's
 * Binarizer, ArrayFeatureExtractor, LabelEncoder and TreeEnsemble and
 * ImageDecoder on hand-made cases;
 * the gradients of CumProd, AffineGrid and DeformConv (every input:
 * X, W, offsets, B, mask) against central finite differences in float64. */
#include "rule_fd.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- CumProd ---- */
static void cumprod_forward(void **state)
{
    (void)state;
    int64_t d[3] = {2, 5, 3}, ad[1] = {1};
    for (int excl = 0; excl < 2; excl++)
        for (int rev = 0; rev < 2; rev++)
            for (int it = 0; it < 2; it++) {
                uint64_t seed = 500 + excl * 2 + rev + it * 10;
                lt_dtype dt = it ? LT_I32 : LT_F32;
                lt_value *x = tu_rand(dt, 3, d, it ? -3 : -2, it ? 4 : 2, seed);
                lt_tensor_set_f64(&x->t, 4, 0); /* a zero inside a line */
                double w[30];
                for (int64_t o = 0; o < 2; o++)
                    for (int64_t i = 0; i < 3; i++)
                        for (int64_t t = 0; t < 5; t++) {
                            double p = 1;
                            for (int64_t u = 0; u < 5; u++) {
                                bool in = rev ? (excl ? u > t : u >= t) : (excl ? u < t : u <= t);
                                if (in)
                                    p *= tu_get(x, (o * 5 + u) * 3 + i);
                            }
                            w[(o * 5 + t) * 3 + i] = p;
                        }
                const double axis = -2;
                lt_value *in[2] = {x, tu_from(LT_I64, 0, ad, &axis)};
                tu_graph g = tu_single(LT_OP_CUM_PROD, 26, 2, 1);
                tu_attr_int(&g, "exclusive", excl);
                tu_attr_int(&g, "reverse", rev);
                lt_value *out[1] = {NULL};
                lt_err err;
                if (tu_run(&g, in, out, &err) != LT_OK)
                    fail_msg("%s", err.msg);
                tu_assert_close(out[0], w, 30, it ? 0 : 1e-6, it ? 0 : 1e-7, seed);
                lt_value_free(out[0]);
                lt_value_free(in[0]);
                lt_value_free(in[1]);
                tu_free(&g);
            }
}

/* ---- BitCast ---- */
static void bitcast(void **state)
{
    (void)state;
    int64_t d[2] = {3, 4};
    lt_value *x = tu_rand(LT_F32, 2, d, -3, 3, 61);
    tu_graph g = tu_single(LT_OP_BIT_CAST, 26, 1, 1);
    tu_attr_int(&g, "to", LT_I32);
    lt_value *in[1] = {x}, *out[1] = {NULL};
    lt_err err;
    if (tu_run(&g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(out[0]->t.dtype, LT_I32);
    assert_int_equal(out[0]->t.rank, 2);
    assert_memory_equal(out[0]->t.data, x->t.data, 12 * sizeof(float));
    lt_value_free(out[0]);
    tu_free(&g);
    /* widths must agree */
    g = tu_single(LT_OP_BIT_CAST, 26, 1, 1);
    tu_attr_int(&g, "to", LT_F64);
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    assert_non_null(strstr(err.msg, "BitCast"));
    assert_non_null(strstr(err.msg, "width"));
    tu_free(&g);
    lt_value_free(x);
}

/* ---- AffineGrid ---- */
static double coord(int64_t i, int64_t n, int align)
{
    if (align)
        return n > 1 ? -1 + 2.0 * (double)i / (double)(n - 1) : -1;
    return ((double)i + 0.5) * 2 / (double)n - 1; /* pixel centres */
}

static void affine_grid(void **state)
{
    (void)state;
    for (int k = 2; k <= 3; k++)
        for (int align = 0; align < 2; align++) {
            uint64_t seed = 70 + (uint64_t)(k * 2 + align);
            int64_t td[3] = {2, k, k + 1}, sd[1] = {k + 2};
            const double size2[4] = {2, 3, 3, 4}, size3[5] = {2, 1, 2, 3, 4};
            lt_value *in[2] = {tu_rand(LT_F32, 3, td, -1, 1, seed), tu_from(LT_I64, 1, sd, k == 2 ? size2 : size3)};
            int64_t D = k == 3 ? 2 : 1, H = 3, W = 4, pts = D * H * W;
            double *w = malloc(sizeof(double) * (size_t)(2 * pts * k));
            for (int64_t n = 0; n < 2; n++)
                for (int64_t z = 0; z < D; z++)
                    for (int64_t y = 0; y < H; y++)
                        for (int64_t x = 0; x < W; x++) {
                            double b[4] = {coord(x, W, align), coord(y, H, align), k == 3 ? coord(z, D, align) : 1, 1};
                            for (int r = 0; r < k; r++) {
                                double v = 0;
                                for (int c = 0; c <= k; c++)
                                    v += tu_get(in[0], (n * k + r) * (k + 1) + c) * b[c];
                                w[(((n * D + z) * H + y) * W + x) * k + r] = v;
                            }
                        }
            tu_graph g = tu_single(LT_OP_AFFINE_GRID, 20, 2, 1);
            tu_attr_int(&g, "align_corners", align);
            lt_value *out[1] = {NULL};
            lt_err err;
            if (tu_run(&g, in, out, &err) != LT_OK)
                fail_msg("%s", err.msg);
            assert_int_equal(out[0]->t.rank, k + 2);
            tu_assert_close(out[0], w, 2 * pts * k, 1e-6, 1e-7, seed);
            free(w);
            lt_value_free(out[0]);
            lt_value_free(in[0]);
            lt_value_free(in[1]);
            tu_free(&g);
        }
}

/* ---- string ops ---- */
static lt_value *strs(int rank, const int64_t *dims, const char *const *v)
{
    lt_value *x = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&x->t, LT_STRING, rank, dims, &err), LT_OK);
    for (int64_t i = 0; i < x->t.numel; i++)
        ((const char **)x->t.data)[i] = lt_str_intern(v[i], strlen(v[i]));
    return x;
}

static const char *str_of(const lt_value *v, int64_t i) { return ((const char *const *)v->t.data)[i]; }

static void string_ops(void **state)
{
    (void)state;
    lt_err err;
    /* StringSplit as Python's str.split: None splits on runs of white space
     * and drops the ends, a delimiter keeps empty pieces; maxsplit caps the
     * splits; Y is padded with "" to the most pieces */
    {
        int64_t d[1] = {3};
        const char *in[3] = {"  a b\tc ", "x", ""};
        lt_value *x[1] = {strs(1, d, in)}, *out[2] = {NULL};
        tu_graph g = tu_single(LT_OP_STRING_SPLIT, 20, 1, 2);
        tu_attr_int(&g, "maxsplit", 1);
        if (tu_run(&g, x, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(out[0]->t.rank, 2);
        assert_int_equal(out[0]->t.dims[1], 2);
        const char *want[6] = {"a", "b\tc", "x", "", "", ""};
        const int64_t cnt[3] = {2, 1, 0};
        for (int i = 0; i < 6; i++)
            assert_string_equal(str_of(out[0], i), want[i]);
        for (int i = 0; i < 3; i++)
            assert_int_equal(((int64_t *)out[1]->t.data)[i], cnt[i]);
        lt_value_free(out[0]);
        lt_value_free(out[1]);
        tu_free(&g);
        g = tu_single(LT_OP_STRING_SPLIT, 20, 1, 2);
        tu_attr_str(&g, "delimiter", "--");
        const char *in2[3] = {"a----b--", "--", "ab"};
        lt_value *x2[1] = {strs(1, d, in2)};
        if (tu_run(&g, x2, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        const char *want2[12] = {"a", "", "b", "", "", "", "", "", "ab", "", "", ""};
        for (int i = 0; i < 12; i++)
            assert_string_equal(str_of(out[0], i), want2[i]);
        lt_value_free(out[0]);
        lt_value_free(out[1]);
        lt_value_free(x[0]);
        lt_value_free(x2[0]);
        tu_free(&g);
    }
    /* StringConcat and Equal broadcast (2, 1) against (3) */
    {
        int64_t da[2] = {2, 1}, db[1] = {3};
        const char *a[2] = {"ab", ""}, *b[3] = {"", "c", "ab"};
        lt_value *in[2] = {strs(2, da, a), strs(1, db, b)}, *out[1] = {NULL};
        tu_graph g = tu_single(LT_OP_STRING_CONCAT, 20, 2, 1);
        if (tu_run(&g, in, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        const char *want[6] = {"ab", "abc", "abab", "", "c", "ab"};
        for (int i = 0; i < 6; i++)
            assert_string_equal(str_of(out[0], i), want[i]);
        lt_value_free(out[0]);
        tu_free(&g);
        g = tu_single(LT_OP_EQUAL, 19, 2, 1);
        if (tu_run(&g, in, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        const uint8_t eq[6] = {0, 0, 1, 1, 0, 0};
        assert_memory_equal(out[0]->t.data, eq, 6);
        lt_value_free(out[0]);
        lt_value_free(in[0]);
        lt_value_free(in[1]);
        tu_free(&g);
    }
    /* RegexFullMatch: RE2's \d, \w in and out of [], \- in [], (?:), whole-string match */
    {
        int64_t d[1] = {5};
        const char *in[5] = {"ab-12", "ab-1x", "xab-12", "a_b.-3", "ab-12 "};
        lt_value *x[1] = {strs(1, d, in)}, *out[1] = {NULL};
        tu_graph g = tu_single(LT_OP_REGEX_FULL_MATCH, 20, 1, 1);
        tu_attr_str(&g, "pattern", "(?:[\\w.\\-]+)-\\d+");
        if (tu_run(&g, x, out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        const uint8_t want[5] = {1, 0, 1, 1, 0};
        assert_memory_equal(out[0]->t.data, want, 5);
        lt_value_free(out[0]);
        tu_free(&g);
        g = tu_single(LT_OP_REGEX_FULL_MATCH, 20, 1, 1);
        tu_attr_str(&g, "pattern", "a(?=b)");
        assert_int_not_equal(tu_run(&g, x, out, &err), LT_OK);
        assert_non_null(strstr(err.msg, "RegexFullMatch"));
        lt_value_free(x[0]);
        tu_free(&g);
    }
}

/* ---- DeformConv ---- */
static lt_value *run1(tu_graph *g, lt_value **in)
{
    lt_value *out[1] = {NULL};
    lt_err err;
    if (tu_run(g, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return out[0];
}

static void deform_conv(void **state)
{
    (void)state;
    const uint64_t seed = 91;
    /* zero offsets, unit mask: Conv with the same pads, strides, dilations, group */
    int64_t xd[4] = {2, 4, 6, 5}, wd[4] = {6, 2, 2, 3}, od[4] = {2, 2 * 6 * 2, 3, 1}, md[4] = {2, 2 * 6, 3, 1}, bd[1] = {6};
    const int64_t pads[4] = {1, 0, 0, 1}, strides[2] = {2, 2}, dil[2] = {1, 2};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, seed), *w = tu_rand(LT_F32, 4, wd, -1, 1, seed + 1);
    lt_value *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 2), *off = tu_rand(LT_F32, 4, od, 0, 0, seed);
    lt_value *mask = tu_rand(LT_F32, 4, md, 1, 1, seed);
    tu_graph gc = tu_single(LT_OP_CONV, 11, 3, 1), gd = tu_single(LT_OP_DEFORM_CONV, 19, 5, 1);
    tu_graph *gs[2] = {&gc, &gd};
    for (int i = 0; i < 2; i++) {
        tu_attr_ints(gs[i], "pads", 4, pads);
        tu_attr_ints(gs[i], "strides", 2, strides);
        tu_attr_ints(gs[i], "dilations", 2, dil);
        tu_attr_int(gs[i], "group", 2);
    }
    tu_attr_int(&gd, "offset_group", 2);
    lt_value *cin[3] = {x, w, b}, *din[5] = {x, w, off, b, mask};
    lt_value *yc = run1(&gc, cin), *yd = run1(&gd, din);
    double want[2 * 6 * 3 * 1];
    for (int i = 0; i < 36; i++)
        want[i] = tu_get(yc, i);
    tu_assert_close(yd, want, 36, 1e-5, 1e-6, seed);
    lt_value_free(yc);
    lt_value_free(yd);
    tu_free(&gc);
    tu_free(&gd);
    /* one channel, a 1x1 kernel, every output moved by (0.5, -0.25) and masked by 0.5:
     * y = 0.5 w bilinear(x, i + 0.5, j - 0.25), zero outside */
    int64_t x1[4] = {1, 1, 3, 4}, w1[4] = {1, 1, 1, 1}, o1[4] = {1, 2, 3, 4}, m1[4] = {1, 1, 3, 4};
    lt_value *xx = tu_rand(LT_F32, 4, x1, -1, 1, seed + 5), *ww = tu_rand(LT_F32, 4, w1, 0.5, 1.5, seed + 6);
    double ov[24], mv[12];
    for (int p = 0; p < 12; p++) {
        ov[p] = 0.5;
        ov[12 + p] = -0.25;
        mv[p] = 0.5;
    }
    lt_value *in2[5] = {xx, ww, tu_from(LT_F32, 4, o1, ov), NULL, tu_from(LT_F32, 4, m1, mv)};
    gd = tu_single(LT_OP_DEFORM_CONV, 19, 5, 1);
    tu_omit_input(&gd, 3);
    lt_value *y2 = run1(&gd, in2);
    double w2[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double yy = i + 0.5, zz = j - 0.25, v = 0;
            for (int a = 0; a < 2; a++)
                for (int c = 0; c < 2; c++) {
                    int r = (int)floor(yy) + a, q = (int)floor(zz) + c;
                    double wt = (a ? yy - floor(yy) : 1 - (yy - floor(yy))) * (c ? zz - floor(zz) : 1 - (zz - floor(zz)));
                    if (r >= 0 && r < 3 && q >= 0 && q < 4)
                        v += wt * tu_get(xx, r * 4 + q);
                }
            w2[i * 4 + j] = 0.5 * tu_get(ww, 0) * v;
        }
    tu_assert_close(y2, w2, 12, 1e-6, 1e-7, seed);
    lt_value_free(y2);
    tu_free(&gd);
    lt_value *all[9] = {x, w, b, off, mask, xx, ww, in2[2], in2[4]};
    for (int i = 0; i < 9; i++)
        lt_value_free(all[i]);
}

/* ---- block quantization (opset 21): blocks of 3 along axis 0 of a (5, 2)
 * tensor, the last block short ---- */
static void block_quantization(void **state)
{
    (void)state;
    const uint64_t seed = 95;
    int64_t xd[2] = {5, 2}, sd[2] = {2, 2};
    const double zpv[4] = {3, -2, 0, 5};
    lt_value *x = tu_rand(LT_F32, 2, xd, -20, 20, seed), *sc = tu_rand(LT_F32, 2, sd, 0.2, 0.6, seed + 1);
    lt_value *zp = tu_from(LT_I8, 2, sd, zpv);
    double want[10], back[10];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++) {
            int b = (i / 3) * 2 + j;
            double s = (float)tu_get(sc, b), q = nearbyint((float)tu_get(x, i * 2 + j) / (float)s) + zpv[b];
            want[i * 2 + j] = q < -128 ? -128 : q > 127 ? 127 : q;
            back[i * 2 + j] = (want[i * 2 + j] - zpv[b]) * s;
        }
    tu_graph g = tu_single(LT_OP_QUANTIZE_LINEAR, 21, 3, 1);
    tu_attr_int(&g, "axis", 0);
    tu_attr_int(&g, "block_size", 3);
    tu_attr_int(&g, "output_dtype", LT_I8);
    lt_value *in[3] = {x, sc, zp};
    lt_value *q = run1(&g, in);
    assert_int_equal(q->t.dtype, LT_I8);
    tu_assert_close(q, want, 10, 0, 0, seed);
    tu_free(&g);
    g = tu_single(LT_OP_DEQUANTIZE_LINEAR, 21, 3, 1);
    tu_attr_int(&g, "axis", 0);
    tu_attr_int(&g, "block_size", 3);
    lt_value *in2[3] = {q, sc, zp};
    lt_value *y = run1(&g, in2);
    tu_assert_close(y, back, 10, 1e-6, 1e-6, seed);
    tu_free(&g);
    /* a scale that does not fit the blocks is refused by name */
    g = tu_single(LT_OP_DEQUANTIZE_LINEAR, 21, 3, 1);
    tu_attr_int(&g, "axis", 0);
    tu_attr_int(&g, "block_size", 2);
    lt_value *out[1] = {NULL};
    lt_err err;
    assert_int_not_equal(tu_run(&g, in2, out, &err), LT_OK);
    assert_non_null(strstr(err.msg, "blocks of 2"));
    tu_free(&g);
    lt_value *all[5] = {x, sc, zp, q, y};
    for (int i = 0; i < 5; i++)
        lt_value_free(all[i]);
}

/* ---- ai.onnx.ml ---- */
static void ml_ops(void **state)
{
    (void)state;
    /* LabelEncoder int64 -> string with a default; float keys -> int64 */
    int64_t d[1] = {4};
    const double xv[4] = {7, -1, 3, 7};
    lt_value *x = tu_from(LT_I64, 1, d, xv);
    tu_graph g = tu_single(LT_OP_LABEL_ENCODER, 4, 1, 1);
    const int64_t keys[2] = {3, 7};
    const char *const vals[2] = {"three", "seven"};
    tu_attr_ints(&g, "keys_int64s", 2, keys);
    tu_attr_strings(&g, "values_strings", 2, vals);
    tu_attr_str(&g, "default_string", "none");
    lt_value *in[1] = {x};
    lt_value *y = run1(&g, in);
    const char *want[4] = {"seven", "none", "three", "seven"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(str_of(y, i), want[i]);
    lt_value_free(y);
    tu_free(&g);
    lt_value_free(x);
    const double fv[4] = {0.5, 2.5, -1, 0.5};
    lt_value *xf = tu_from(LT_F32, 1, d, fv);
    g = tu_single(LT_OP_LABEL_ENCODER, 2, 1, 1);
    const float fk[2] = {0.5f, -1};
    const int64_t iv[2] = {10, 20};
    tu_attr_floats(&g, "keys_floats", 2, fk);
    tu_attr_ints(&g, "values_int64s", 2, iv);
    lt_value *in2[1] = {xf};
    y = run1(&g, in2);
    assert_int_equal(y->t.dtype, LT_I64);
    const int64_t wi[4] = {10, -1, 20, 10};
    assert_memory_equal(y->t.data, wi, sizeof wi);
    lt_value_free(y);
    tu_free(&g);
    /* Binarizer: 1 above the threshold, else 0 */
    g = tu_single(LT_OP_BINARIZER, 1, 1, 1);
    tu_attr_float(&g, "threshold", 0.5f);
    y = run1(&g, in2);
    const double wb[4] = {0, 1, 0, 0};
    tu_assert_close(y, wb, 4, 0, 0, 1);
    lt_value_free(y);
    tu_free(&g);
    /* ArrayFeatureExtractor of a 1-D X: (1, n), indices repeated */
    int64_t id[1] = {3};
    const double ix[3] = {3, 0, 3};
    lt_value *in3[2] = {xf, tu_from(LT_I64, 1, id, ix)};
    g = tu_single(LT_OP_ARRAY_FEATURE_EXTRACTOR, 1, 2, 1);
    y = run1(&g, in3);
    assert_int_equal(y->t.rank, 2);
    assert_int_equal(y->t.dims[0], 1);
    const double wa[3] = {0.5, 0.5, 0.5};
    tu_assert_close(y, wa, 3, 0, 0, 1);
    lt_value_free(y);
    tu_free(&g);
    lt_value_free(in3[1]);
    lt_value_free(xf);
}

/* a tensor attribute on the graph's node */
static void attr_tensor(tu_graph *g, const char *name, lt_dtype dt, int64_t n, const double *v)
{
    lt_node *nd = g->node;
    lt_attr *a = lt_ir_alloc(g->m, sizeof *a * (size_t)(nd->nattr + 1));
    if (nd->nattr)
        memcpy(a, nd->attrs, sizeof *a * (size_t)nd->nattr);
    nd->attrs = a;
    lt_attr *x = &a[nd->nattr++];
    *x = (lt_attr){.name = lt_ir_strdup(g->m, name), .kind = LT_ATTR_TENSOR};
    x->t = lt_ir_alloc(g->m, sizeof *x->t);
    *x->t = (lt_tensor){.dtype = dt, .rank = 1, .dims = {n}, .numel = n};
    x->t->data = lt_ir_alloc(g->m, lt_dtype_size(dt) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        lt_tensor_set_f64(x->t, i, v[i]);
}

/* TreeEnsemble, averaged over two trees: tree 0 splits x0 < 1 (true: leaf 0,
 * false: node 1, a membership test of x1 in {2, 5} with NaN going true to
 * leaf 1, else leaf 2); tree 1 is one leaf, read at its root's index (2) */
static void tree_ensemble(void **state)
{
    (void)state;
    int64_t xd[2] = {4, 2};
    const double xv[8] = {0.5, 9, 3, 5, 3, NAN, 3, 4};
    lt_value *x = tu_from(LT_F32, 2, xd, xv);
    tu_graph g = tu_single(LT_OP_TREE_ENSEMBLE, 5, 1, 1);
    const int64_t feat[3] = {0, 1, 0}, tid[3] = {0, 1, 3}, fid[3] = {1, 2, 3}, tl[3] = {1, 1, 1}, fl[3] = {0, 1, 1};
    const int64_t miss[3] = {0, 1, 0}, lt_[4] = {0, 1, 0, 1}, roots[2] = {0, 2};
    const double splits[3] = {1, 0, 0}, modes[3] = {1, 6, 0}, w[4] = {10, 20, 30, 4}, mem[3] = {2, 5, NAN};
    tu_attr_ints(&g, "nodes_featureids", 3, feat);
    tu_attr_ints(&g, "nodes_truenodeids", 3, tid);
    tu_attr_ints(&g, "nodes_falsenodeids", 3, fid);
    tu_attr_ints(&g, "nodes_trueleafs", 3, tl);
    tu_attr_ints(&g, "nodes_falseleafs", 3, fl);
    tu_attr_ints(&g, "nodes_missing_value_tracks_true", 3, miss);
    tu_attr_ints(&g, "leaf_targetids", 4, lt_);
    tu_attr_ints(&g, "tree_roots", 2, roots);
    tu_attr_int(&g, "n_targets", 2);
    tu_attr_int(&g, "aggregate_function", 0);
    attr_tensor(&g, "nodes_splits", LT_F32, 3, splits);
    attr_tensor(&g, "nodes_modes", LT_U8, 3, modes);
    attr_tensor(&g, "leaf_weights", LT_F32, 4, w);
    attr_tensor(&g, "membership_values", LT_F32, 3, mem);
    lt_value *in[1] = {x};
    lt_value *y = run1(&g, in);
    /* tree 0 per row: leaf 0 | leaf 1 (5 in the set) | leaf 1 (NaN tracks true) | leaf 2;
     * tree 1 adds leaf 2 (30 to target 0) to every row; the average halves */
    const double want[8] = {20, 0, 15, 10, 15, 10, 30, 0};
    tu_assert_close(y, want, 8, 1e-6, 1e-7, 1);
    lt_value_free(y);
    lt_value_free(x);
    tu_free(&g);
}

/* ImageDecoder: a 2x2 grey PNM in RGB and BGR, a 2x1 bottom-up BMP, and
 * truncated or foreign streams refused with one line */
static void image_decoder(void **state)
{
    (void)state;
    const uint8_t pgm[] = {'P', '5', '\n', '#', ' ', 'c', '\n', '2', ' ', '2', '\n', '2', '5', '5', '\n', 10, 20, 30, 40};
    uint8_t bmp[62] = {'B', 'M'};
    bmp[10] = 54;               /* pixels at 54 */
    bmp[14] = 40;               /* BITMAPINFOHEADER */
    bmp[18] = 1;                /* width 1 */
    bmp[22] = 2;                /* height 2: bottom-up */
    bmp[26] = 1;
    bmp[28] = 24;               /* 24 bits, rows padded to 4 bytes */
    const uint8_t rows[8] = {1, 2, 3, 0, 4, 5, 6, 0}; /* bottom row BGR (1,2,3), top row (4,5,6) */
    memcpy(bmp + 54, rows, 8);
    struct {
        const uint8_t *d;
        int64_t n;
        const char *fmt;
        int64_t h, w, c;
        uint8_t want[12];
    } cases[] = {
        {pgm, sizeof pgm, "RGB", 2, 2, 3, {10, 10, 10, 20, 20, 20, 30, 30, 30, 40, 40, 40}},
        {bmp, sizeof bmp, "RGB", 2, 1, 3, {6, 5, 4, 3, 2, 1}},
        {bmp, sizeof bmp, "BGR", 2, 1, 3, {4, 5, 6, 1, 2, 3}},
        {bmp, sizeof bmp - 4, "RGB", 0, 0, 0, {0}},
        {pgm, 12, "RGB", 0, 0, 0, {0}},
        {bmp + 40, 8, "RGB", 0, 0, 0, {0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t d[1] = {cases[c].n};
        double v[64];
        for (int64_t i = 0; i < cases[c].n; i++)
            v[i] = cases[c].d[i];
        lt_value *in[1] = {tu_from(LT_U8, 1, d, v)}, *out[1] = {NULL};
        tu_graph g = tu_single(LT_OP_IMAGE_DECODER, 20, 1, 1);
        tu_attr_str(&g, "pixel_format", cases[c].fmt);
        lt_err err;
        lt_status s = tu_run(&g, in, out, &err);
        if (!cases[c].h) {
            if (s == LT_OK || !strstr(err.msg, "ImageDecoder"))
                fail_msg("case %zu: expected a refusal, got %s", c, s == LT_OK ? "success" : err.msg);
        } else {
            if (s != LT_OK)
                fail_msg("case %zu: %s", c, err.msg);
            assert_int_equal(out[0]->t.dims[0], cases[c].h);
            assert_int_equal(out[0]->t.dims[1], cases[c].w);
            assert_memory_equal(out[0]->t.data, cases[c].want, (size_t)(cases[c].h * cases[c].w * cases[c].c));
            lt_value_free(out[0]);
        }
        lt_value_free(in[0]);
        tu_free(&g);
    }
}

/* ---- gradients by finite differences ---- */
/* fixed values with zeros, two to some lines, so the division-free
 * gradient is exercised where x / y would divide by zero */
#define ZX(r, ...)                                                                                                 \
    {.rank = r, .dims = {__VA_ARGS__}, .nvals = 13,                                                               \
     .vals = {0.9, -1.3, 0, 1.2, 0.7, -0.8, 1.4, 0, -1.1, 0.6, 1.5, -0.9, 0}}
#define AXIS(v) {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {v}}

static void a_excl(tu_graph *g) { tu_attr_int(g, "exclusive", 1); }
static void a_rev(tu_graph *g) { tu_attr_int(g, "reverse", 1); }
static void a_excl_rev(tu_graph *g)
{
    tu_attr_int(g, "exclusive", 1);
    tu_attr_int(g, "reverse", 1);
}

static void a_align(tu_graph *g) { tu_attr_int(g, "align_corners", 1); }
#define SIZE4(...) {.rank = 1, .dims = {4}, .dt = LT_I64, .frozen = true, .nvals = 4, .vals = {__VA_ARGS__}}
#define SIZE5(...) {.rank = 1, .dims = {5}, .dt = LT_I64, .frozen = true, .nvals = 5, .vals = {__VA_ARGS__}}

/* DeformConv with groups, offset groups, strides, uneven pads and a mask;
 * and a plain 3x3 one without B and mask */
static void a_deform(tu_graph *g)
{
    const int64_t pads[4] = {1, 0, 0, 1}, strides[2] = {1, 2};
    tu_attr_ints(g, "pads", 4, pads);
    tu_attr_ints(g, "strides", 2, strides);
    tu_attr_int(g, "group", 2);
    tu_attr_int(g, "offset_group", 2);
}
static void a_deform_plain(tu_graph *g)
{
    const int64_t pads[4] = {1, 1, 1, 1}, dil[2] = {1, 2};
    tu_attr_ints(g, "pads", 4, pads);
    tu_attr_ints(g, "dilations", 2, dil);
}
#define RND(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = -1, .hi = 1}
#define OFFS(r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = -1.4, .hi = 1.4}

static const struct gcase {
    const char *name;
    lt_op op;
    int opset, nin;
    tu_fd_in in[5];
    void (*attrs)(tu_graph *g);
} gcases[] = {
    {"CumProd", LT_OP_CUM_PROD, 26, 2, {ZX(2, 3, 6), AXIS(1)}},
    {"CumProd.exclusive", LT_OP_CUM_PROD, 26, 2, {ZX(3, 2, 5, 3), AXIS(-2)}, a_excl},
    {"CumProd.reverse", LT_OP_CUM_PROD, 26, 2, {ZX(2, 7, 2), AXIS(0)}, a_rev},
    {"CumProd.exclusive_reverse", LT_OP_CUM_PROD, 26, 2, {ZX(3, 2, 3, 5), AXIS(2)}, a_excl_rev},
    {"AffineGrid.2d", LT_OP_AFFINE_GRID, 20, 2, {{.rank = 3, .dims = {2, 2, 3}, .lo = -1, .hi = 1}, SIZE4(2, 1, 3, 4)}},
    {"AffineGrid.3d_align", LT_OP_AFFINE_GRID, 20, 2, {{.rank = 3, .dims = {2, 3, 4}, .lo = -1, .hi = 1},
     SIZE5(2, 2, 2, 3, 2)}, a_align},
    {"DeformConv.groups_mask", LT_OP_DEFORM_CONV, 19, 5,
     {RND(4, 2, 4, 5, 6), RND(4, 4, 2, 2, 3), OFFS(4, 2, 24, 5, 3), RND(1, 4), {.rank = 4, .dims = {2, 12, 5, 3}, .lo = 0.2, .hi = 1.2}},
     a_deform},
    {"DeformConv.plain", LT_OP_DEFORM_CONV, 19, 3, {RND(4, 1, 2, 4, 4), RND(4, 3, 2, 3, 3), OFFS(4, 1, 18, 4, 2)},
     a_deform_plain},
};

static void gradients(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof gcases / sizeof *gcases; k++) {
        const struct gcase *gc = &gcases[k];
        tu_fd_model fm = {.name = gc->name,
                          .op = gc->op,
                          .opset = gc->opset,
                          .nin = gc->nin,
                          .nout = 1,
                          .in = gc->in,
                          .attrs = gc->attrs,
                          .seed = 8300 + k * 11};
        tu_fd_check(&fm, &(tu_fd_expect){.verbose = true}, &t);
    }
    printf("opset 20-26 op gradients: %d (case, input) pairs checked by finite differences in float64, worst "
           "relative error %.3g (%s)\n",
           t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.pairs, 14);
    assert_int_equal(t.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cumprod_forward),
        cmocka_unit_test(bitcast),
        cmocka_unit_test(affine_grid),
        cmocka_unit_test(string_ops),
        cmocka_unit_test(deform_conv),
        cmocka_unit_test(block_quantization),
        cmocka_unit_test(ml_ops),
        cmocka_unit_test(tree_ensemble),
        cmocka_unit_test(image_decoder),
        cmocka_unit_test(gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
