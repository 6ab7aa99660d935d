/* The float32 fast paths of the training kernels against the general
 * float64 code they bypass, on shapes that reach them: Conv, ConvGradData
 * and ConvGradFilter over blocks of images (several blocks, a short last
 * one, strides, dilations, pads; serial and parallel), 2-D MaxPool and
 * MaxPoolGrad (2x2 stride 2 and other plain windows, ties), Where with a
 * scalar branch, Gemm with a bias and with few columns, ReduceSum /
 * ReduceMean over every axis but the channels, the rank-2 MatMul gradient
 * (Gemm flags instead of transposes) against finite differences, and the
 * AVX-512 float GEMM against sums in double (every transpose, alpha and
 * beta, edges of its blocks, leading dimensions past the matrices). */
#include "runtime/cpu/linalg_util.h"
#include "test_grad_nn.h"
#include "ir/infer.h"
#include <omp.h>
#include <string.h>

typedef struct conv_case {
    const char *name;
    int64_t n, c, m, h, w, kh, kw, sh, sw, dh, dw;
    int64_t pads[4];
} conv_case;

static void conv_attrs(tu_graph *g, const conv_case *f)
{
    tu_attr_ints(g, "strides", 2, (int64_t[]){f->sh, f->sw});
    tu_attr_ints(g, "dilations", 2, (int64_t[]){f->dh, f->dw});
    tu_attr_ints(g, "pads", 4, f->pads);
}

/* Conv and both gradients in float32 (blocked paths) against float64
 * (general) */
static void conv_case_run(const conv_case *f, uint64_t seed)
{
    int64_t xd[4] = {f->n, f->c, f->h, f->w}, wd[4] = {f->m, f->c, f->kh, f->kw};
    lt_value *x = tu_rand(LT_F64, 4, xd, -1, 1, seed), *w = tu_rand(LT_F64, 4, wd, -1, 1, seed + 1);
    tu_graph fwd = tu_single(LT_OP_CONV, 11, 2, 1);
    conv_attrs(&fwd, f);
    lt_value *fin[2] = {x, w};
    lt_value *y = gn_run(&fwd, fin, 1, 0);
    lt_value *dy = tu_rand(LT_F64, 4, y->t.dims, -1, 1, seed + 2);
    tu_graph gd = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1), gf = tu_single(LT_OP_CONV_GRAD_FILTER, 11, 3, 1);
    conv_attrs(&gd, f);
    conv_attrs(&gf, f);
    lt_value *din[3] = {dy, w, x}, *fin2[3] = {dy, x, w};
    lt_value *dx = gn_run(&gd, din, 1, 0), *dw = gn_run(&gf, fin2, 1, 0);
    print_message("%s\n", f->name);
    /* adjoint identities in float64 first: <dy, conv(x, W)> = <dx, x> = <dW, W> */
    double l = gn_dot(dy, y);
    assert_true(fabs(gn_dot(dx, x) - l) <= 1e-10 * (1 + fabs(l)));
    assert_true(fabs(gn_dot(dw, w) - l) <= 1e-10 * (1 + fabs(l)));
    gn_f32_matches("  float32 dx", &gd, din, 3, 1, 0, dx, 1e-4);
    gn_f32_matches("  float32 dW", &gf, fin2, 3, 1, 0, dw, 1e-4);
    /* the forward over blocks of images too, with a bias */
    lt_value *bias = tu_rand(LT_F64, 1, &f->m, -1, 1, seed + 3);
    tu_graph fb = tu_single(LT_OP_CONV, 11, 3, 1);
    conv_attrs(&fb, f);
    lt_value *bin[3] = {x, w, bias};
    lt_value *yb = gn_run(&fb, bin, 1, 0);
    gn_f32_matches("  float32 y", &fb, bin, 3, 1, 0, yb, 1e-4);
    lt_value_free(bias);
    lt_value_free(yb);
    tu_free(&fb);
    lt_value *vals[] = {x, w, y, dy, dx, dw};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        lt_value_free(vals[i]);
    tu_free(&fwd);
    tu_free(&gd);
    tu_free(&gf);
}

static void conv_blocks(void **state)
{
    (void)state;
    static const conv_case cases[] = {
        /* L = 16: blocks of 32 images, the last one short */
        {"blocks of 32, short last block", 70, 3, 4, 6, 6, 3, 3, 1, 1, 1, 1, {0, 0, 0, 0}},
        {"strides, dilations, asymmetric pads", 9, 2, 3, 9, 11, 3, 2, 2, 3, 2, 1, {1, 0, 2, 1}},
        {"pads past the image", 5, 2, 2, 4, 5, 3, 3, 1, 1, 1, 1, {2, 2, 2, 2}},
        /* the shipped CNN's second layer, a few images */
        {"CNN layer 2 shape", 10, 32, 64, 12, 12, 5, 5, 1, 1, 1, 1, {0, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        conv_case_run(&cases[i], 300 + 10 * i);
    /* one thread: the serial blocked path */
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    conv_case_run(&cases[0], 390);
    omp_set_num_threads(nt);
}

/* MaxPool and MaxPoolGrad in float32 against float64; inputs of few
 * distinct values, so that windows hold ties (the first maximum wins) */
static void pool_case(const int64_t *xd, const int64_t *k, const int64_t *s, uint64_t seed)
{
    lt_value *x = tu_rand(LT_F64, 4, xd, -2, 2, seed);
    for (int64_t i = 0; i < x->t.numel; i++)
        lt_tensor_set_f64(&x->t, i, floor(tu_get(x, i) * 2) / 2);
    tu_graph fwd = tu_single(LT_OP_MAX_POOL, 12, 1, 1);
    tu_attr_ints(&fwd, "kernel_shape", 2, k);
    tu_attr_ints(&fwd, "strides", 2, s);
    lt_value *fin[1] = {x};
    lt_value *y = gn_run(&fwd, fin, 1, 0);
    lt_value *x32 = gn_cast(x, LT_F32), *fin32[1] = {x32};
    lt_value *y32 = gn_run(&fwd, fin32, 1, 0);
    assert_int_equal(y32->t.numel, y->t.numel);
    for (int64_t i = 0; i < y->t.numel; i++)
        assert_true(tu_get(y32, i) == tu_get(y, i));
    lt_value *dy = tu_rand(LT_F64, 4, y->t.dims, -1, 1, seed + 1);
    tu_graph gr = tu_single(LT_OP_MAX_POOL_GRAD, 12, 2, 1);
    tu_attr_ints(&gr, "kernel_shape", 2, k);
    tu_attr_ints(&gr, "strides", 2, s);
    lt_value *gin[2] = {dy, x};
    lt_value *dx = gn_run(&gr, gin, 1, 0);
    gn_f32_matches("  float32 MaxPoolGrad", &gr, gin, 2, 1, 0, dx, 1e-6);
    lt_value *vals[] = {x, y, x32, y32, dy, dx};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        lt_value_free(vals[i]);
    tu_free(&fwd);
    tu_free(&gr);
}

static void max_pool_2d(void **state)
{
    (void)state;
    pool_case((int64_t[]){3, 4, 8, 10}, (int64_t[]){2, 2}, (int64_t[]){2, 2}, 11);
    pool_case((int64_t[]){2, 3, 9, 7}, (int64_t[]){2, 2}, (int64_t[]){2, 2}, 12); /* odd sizes: edges unused */
    pool_case((int64_t[]){2, 3, 9, 8}, (int64_t[]){3, 2}, (int64_t[]){2, 1}, 13); /* overlapping windows */
    /* big enough for the parallel loops */
    pool_case((int64_t[]){8, 32, 24, 24}, (int64_t[]){2, 2}, (int64_t[]){2, 2}, 14);
}

/* Where(cond, x, scalar) and Where(cond, scalar, y) */
static void where_scalar(void **state)
{
    (void)state;
    int64_t d[2] = {7, 33};
    lt_value *a = tu_rand(LT_F32, 2, d, -1, 1, 21), *x = tu_rand(LT_F32, 2, d, -1, 1, 22);
    lt_value *s = tu_from(LT_F32, 0, NULL, (double[]){0.25});
    lt_value *cond = lt_value_new_tensor();
    lt_err err;
    assert_int_equal(lt_tensor_alloc(&cond->t, LT_BOOL, 2, d, &err), LT_OK);
    for (int64_t i = 0; i < cond->t.numel; i++)
        ((uint8_t *)cond->t.data)[i] = tu_get(a, i) > 0;
    for (int side = 0; side < 2; side++) {
        tu_graph g = tu_single(LT_OP_WHERE, 16, 3, 1);
        lt_value *in[3] = {cond, side ? s : x, side ? x : s};
        lt_value *o = gn_run(&g, in, 1, 0);
        for (int64_t i = 0; i < o->t.numel; i++) {
            bool c = ((uint8_t *)cond->t.data)[i];
            double want = side ? (c ? 0.25 : tu_get(x, i)) : (c ? tu_get(x, i) : 0.25);
            assert_true(tu_get(o, i) == want);
        }
        lt_value_free(o);
        tu_free(&g);
    }
    lt_value_free(a);
    lt_value_free(x);
    lt_value_free(s);
    lt_value_free(cond);
}

/* Gemm's bias copy: a row, a column and a full matrix, float32 and float64 */
static void gemm_bias(void **state)
{
    (void)state;
    int64_t ad[2] = {5, 4}, bd[2] = {3, 4};
    int64_t cds[3][2] = {{1, 3}, {5, 1}, {5, 3}};
    int crank[3] = {1, 2, 2};
    for (int dt = 0; dt < 2; dt++)
        for (int c = 0; c < 3; c++) {
            lt_dtype t = dt ? LT_F64 : LT_F32;
            lt_value *A = tu_rand(t, 2, ad, -1, 1, 31), *B = tu_rand(t, 2, bd, -1, 1, 32);
            lt_value *C = tu_rand(t, crank[c], crank[c] == 1 ? cds[c] + 1 : cds[c], -1, 1, 33);
            tu_graph g = tu_single(LT_OP_GEMM, 13, 3, 1);
            tu_attr_int(&g, "transB", 1);
            tu_attr_float(&g, "beta", 0.5f);
            lt_value *in[3] = {A, B, C};
            lt_value *o = gn_run(&g, in, 1, 0);
            for (int64_t i = 0; i < 5; i++)
                for (int64_t j = 0; j < 3; j++) {
                    double want = 0;
                    for (int64_t q = 0; q < 4; q++)
                        want += tu_get(A, i * 4 + q) * tu_get(B, j * 4 + q);
                    int64_t ci = c == 0 ? j : c == 1 ? i : i * 3 + j;
                    want += 0.5 * tu_get(C, ci);
                    assert_true(fabs(tu_get(o, i * 3 + j) - want) <= 1e-5 * (1 + fabs(want)));
                }
            lt_value *vals[] = {A, B, C, o};
            for (size_t i = 0; i < 4; i++)
                lt_value_free(vals[i]);
            tu_free(&g);
        }
}

/* A Gemm with fewer columns than the AVX-512 tile but many rows (a
 * weight gradient against a narrow input) goes through C^T = B^T A^T:
 * every transpose, with a bias, against double sums */
static void gemm_narrow(void **state)
{
    (void)state;
    const int64_t M = 40, N = 7, K = 19;
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t >> 1 & 1;
        int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N}, cd[2] = {M, N};
        lt_value *A = tu_rand(LT_F32, 2, ad, -1, 1, 70 + t), *B = tu_rand(LT_F32, 2, bd, -1, 1, 80 + t);
        lt_value *C = tu_rand(LT_F32, 2, cd, -1, 1, 90 + t);
        tu_graph g = tu_single(LT_OP_GEMM, 13, 3, 1);
        tu_attr_int(&g, "transA", ta);
        tu_attr_int(&g, "transB", tb);
        tu_attr_float(&g, "alpha", 0.5f);
        tu_attr_float(&g, "beta", 2.0f);
        lt_value *in[3] = {A, B, C};
        lt_value *o = gn_run(&g, in, 1, 0);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double want = 0;
                for (int64_t q = 0; q < K; q++)
                    want += tu_get(A, ta ? q * M + i : i * K + q) * tu_get(B, tb ? j * K + q : q * N + j);
                want = 0.5 * want + 2.0 * tu_get(C, i * N + j);
                assert_true(fabs(tu_get(o, i * N + j) - want) <= 1e-5 * (1 + fabs(want)));
            }
        lt_value *vals[] = {A, B, C, o};
        for (size_t i = 0; i < 4; i++)
            lt_value_free(vals[i]);
        tu_free(&g);
    }
}

/* ReduceSum / ReduceMean of [N, C, H, W] over (0, 2, 3) and of [N, C, 1, W]
 * over (0, 3), against sums in double */
static void reduce_channels(void **state)
{
    (void)state;
    int64_t shapes[2][4] = {{5, 7, 6, 9}, {4, 3, 1, 33}};
    int64_t axes[2][3] = {{0, 2, 3}, {0, 3, 0}};
    int nax[2] = {3, 2};
    for (int c = 0; c < 2; c++)
        for (int mean = 0; mean < 2; mean++)
            for (int keep = 0; keep < 2; keep++) {
                const int64_t *d = shapes[c];
                lt_value *x = tu_rand(LT_F32, 4, d, -1, 1, 50 + c);
                tu_graph g = tu_single(mean ? LT_OP_REDUCE_MEAN : LT_OP_REDUCE_SUM, 13, 1, 1);
                tu_attr_ints(&g, "axes", nax[c], axes[c]);
                tu_attr_int(&g, "keepdims", keep);
                lt_value *in[1] = {x};
                lt_value *y = gn_run(&g, in, 1, 0);
                assert_int_equal(y->t.numel, d[1]);
                assert_int_equal(y->t.rank, keep ? 4 : 4 - nax[c]);
                for (int64_t ch = 0; ch < d[1]; ch++) {
                    double want = 0;
                    for (int64_t n = 0; n < d[0]; n++)
                        for (int64_t i = 0; i < d[2] * d[3]; i++)
                            want += tu_get(x, (n * d[1] + ch) * d[2] * d[3] + i);
                    if (mean)
                        want /= (double)(d[0] * d[2] * d[3]);
                    assert_true(fabs(tu_get(y, ch) - want) <= 1e-5 * (1 + fabs(want)));
                }
                lt_value_free(x);
                lt_value_free(y);
                tu_free(&g);
            }
}

/* a float32 parameter of the given shape, seeded uniform in [-1, 1) */
static lt_ival *param(lt_module *m, const char *name, int64_t r0, int64_t r1, uint64_t seed, bool trainable)
{
    int p = lt_module_add_param(m, name);
    lt_tensor *t = &m->params[p].data;
    int64_t d[2] = {r0, r1};
    lt_value *v = tu_rand(LT_F32, 2, d, -1, 1, seed);
    *t = v->t;
    t->data = malloc(sizeof(float) * (size_t)t->numel);
    memcpy(t->data, v->t.data, sizeof(float) * (size_t)t->numel);
    t->buf = NULL;
    lt_value_free(v);
    lt_ival *iv = lt_ival_new(m, m->main, name);
    iv->param = p;
    lt_type_tensor(&iv->type, LT_F32, 2, d);
    m->params[p].value = iv;
    m->params[p].trainable = trainable;
    return iv;
}

static lt_node *node2(lt_module *m, lt_op op, lt_ival *a, lt_ival *b, const char *out)
{
    lt_node *n = lt_node_new(m, m->main, op, 2, 1);
    n->opset = 13;
    n->in[0] = a;
    n->in[1] = b;
    n->out[0] = lt_ival_new(m, m->main, out);
    n->out[0]->def = n;
    return n;
}

/* loss = sum(MatMul(A, B) * R): the rank-2 rule's Gemm flags */
static lt_status build_matmul(void *ctx, lt_model **out, lt_err *err)
{
    (void)ctx;
    tu_graph g = tu_single(LT_OP_IDENTITY, 13, 0, 1);
    lt_module *m = g.m;
    m->main->nnodes = 0;
    lt_ival *a = param(m, "A", 3, 4, 41, true), *b = param(m, "B", 4, 5, 42, true);
    lt_ival *r = param(m, "R", 3, 5, 43, false);
    lt_node *mm = node2(m, LT_OP_MAT_MUL, a, b, "ab");
    lt_node *mul = node2(m, LT_OP_MUL, mm->out[0], r, "weighted");
    m->main->results[0] = mul->out[0];
    lt_status s = lt_infer_module(m, err);
    if (s == LT_OK)
        s = lt_ir_verify(m, err);
    *out = m;
    return s;
}

static void matmul_rank2_grad(void **state)
{
    (void)state;
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check_built(build_matmul, NULL, &o, 0, NULL, NULL, 50, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(nrows, 2);
    for (int i = 0; i < nrows; i++) {
        print_message("  MatMul d%s: rel err %.3g\n", rows[i].name, rows[i].err64);
        assert_true(rows[i].err64 < 1e-6 && rows[i].max_grad > 0);
    }
    free(rows);
}

/* one product of lt_sgemm_avx512 against double sums; skipped (true)
 * when it declines the shape or the CPU */
static void sgemm_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta, uint64_t seed)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    int64_t ad[1] = {(ta ? K : M) * lda}, bd[1] = {(tb ? N : K) * ldb}, cd[1] = {M * ldc};
    lt_value *a = tu_rand(LT_F32, 1, ad, -1, 1, seed), *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 1);
    lt_value *c = tu_rand(LT_F32, 1, cd, -1, 1, seed + 2);
    float *cf = c->t.data;
    if (beta == 0) /* beta 0 must not read C: NaNs there stay out */
        for (int64_t i = 0; i < cd[0]; i += 7)
            cf[i] = NAN;
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t q = 0; q < K; q++)
                s += tu_get(a, ta ? q * lda + i : i * lda + q) * tu_get(b, tb ? j * ldb + q : q * ldb + j);
            want[i * N + j] = alpha * s + (beta != 0 ? beta * (double)cf[i * ldc + j] : 0);
        }
    float pad = cf[ldc - 1];
    if (lt_sgemm_avx512(ta, tb, M, N, K, alpha, a->t.data, lda, b->t.data, ldb, beta, cf, ldc)) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                if (!(fabs(cf[i * ldc + j] - want[i * N + j]) <= 1e-5 * (double)(K + 1)))
                    fail_msg("sgemm ta %d tb %d %lldx%lldx%lld: C[%lld,%lld] = %g, expected %g", ta, tb, (long long)M,
                             (long long)N, (long long)K, (long long)i, (long long)j, cf[i * ldc + j], want[i * N + j]);
        assert_true(memcmp(&pad, &cf[ldc - 1], sizeof pad) == 0); /* past N in a row: untouched */
    }
    free(want);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(c);
}

static void sgemm_avx512(void **state)
{
    (void)state;
    /* small and ragged; past MR, NR, KC, MC; a wide one past NC */
    static const int64_t shapes[][3] = {{4, 32, 1},   {5, 33, 7},    {9, 47, 17},    {8, 64, 16},  {17, 40, 300},
                                        {130, 70, 33}, {33, 100, 513}, {129, 257, 64}, {6, 2100, 20}};
    uint64_t seed = 600;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) {
            float alpha = t == 1 ? -0.5f : 1.0f, beta = t == 2 ? 0.75f : t == 3 ? 1.0f : 0.0f;
            sgemm_case(t & 1, t >> 1 & 1, shapes[i][0], shapes[i][1], shapes[i][2], alpha, beta, seed);
            sgemm_case(!(t & 1), t >> 1 & 1, shapes[i][0], shapes[i][1], shapes[i][2], beta ? 2.0f : 1.0f, beta,
                       seed + 10);
            seed += 20;
        }
}

int main(void)
{
    (void)gn_fd; /* the finite-difference helper of the shared header is not needed here */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_blocks),
        cmocka_unit_test(max_pool_2d),
        cmocka_unit_test(where_scalar),
        cmocka_unit_test(gemm_bias),
        cmocka_unit_test(gemm_narrow),
        cmocka_unit_test(reduce_channels),
        cmocka_unit_test(matmul_rank2_grad),
        cmocka_unit_test(sgemm_avx512),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
