/* Every cuda kernel against the CPU backend: one node at a time, on seeded
 * random inputs (never all zero), float32 with TF32 off (relative error at
 * most 1e-4) and float64 where the kernel has it (1e-10). Each case checks
 * that the node really ran on the device (no host fallback), that device
 * memory is back at its baseline afterwards, and, with every buffer guarded
 * (LANTERN_CUDA_GUARD=1), that no kernel wrote past its outputs.
 * Without a CUDA device the whole suite is skipped (exit 77; a failure under
 * LANTERN_CUDA_REQUIRED=1, cuda_suite.h). */
#include "testutil.h"
#include "cuda_suite.h"
#include "cuda/cuda_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lt_backend *cuda;

/* Runs g on the CPU and on cuda and compares every output. */
static void check(tu_graph *g, int nin, lt_value *const *in, double rtol, const char *what)
{
    lt_err err;
    lt_value *want[8] = {NULL}, *got[8] = {NULL};
    int nout = g->node->nout;
    assert_true(nout <= 8);
    /* the types shape inference would give: the backend picks nodes by them */
    for (int j = 0; j < nin && j < g->node->nin; j++)
        if (g->node->in[j] && in[j])
            lt_type_tensor(&g->node->in[j]->type, in[j]->t.dtype, in[j]->t.rank, in[j]->t.dims);
    setenv("LANTERN_BACKEND", "cpu", 1);
    if (tu_run(g, in, want, &err) != LT_OK)
        fail_msg("%s on the CPU: %s", what, err.msg);
    for (int i = 0; i < nout; i++)
        if (want[i] && g->node->out[i])
            lt_type_tensor(&g->node->out[i]->type, want[i]->t.dtype, want[i]->t.rank, want[i]->t.dims);
    size_t base = cuda->bytes_in_use(cuda), breaks = lt_cuda_guard_breaks();
    setenv("LANTERN_BACKEND", "cuda", 1);
    if (tu_run(g, in, got, &err) != LT_OK)
        fail_msg("%s on cuda: %s", what, err.msg);
    setenv("LANTERN_BACKEND", "cpu", 1);
    if (tu_last_copies.host_nodes != 0 || tu_last_copies.device_nodes != 1)
        fail_msg("%s: %llu node(s) ran on the host, %llu on cuda", what,
                 (unsigned long long)tu_last_copies.host_nodes, (unsigned long long)tu_last_copies.device_nodes);
    if (lt_cuda_guard_breaks() != breaks)
        fail_msg("%s: a kernel wrote past the end of a buffer", what);
    if (cuda->bytes_in_use(cuda) > base + (lt_cuda_of(cuda)->ws ? lt_cuda_of(cuda)->ws->size : 0))
        fail_msg("%s: %zu device bytes in use after the run, %zu before", what, cuda->bytes_in_use(cuda), base);
    for (int i = 0; i < nout; i++) {
        if (!want[i] && !got[i])
            continue;
        assert_non_null(want[i]);
        assert_non_null(got[i]);
        const lt_tensor *a = &want[i]->t, *b = &got[i]->t;
        if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel)
            fail_msg("%s output %d: %s rank %d (%lld) on cuda, %s rank %d (%lld) on the CPU", what, i,
                     lt_dtype_name(b->dtype), b->rank, (long long)b->numel, lt_dtype_name(a->dtype), a->rank,
                     (long long)a->numel);
        for (int d = 0; d < a->rank; d++)
            assert_int_equal(a->dims[d], b->dims[d]);
        /* relative error, near zero against a hundredth of the largest
         * magnitude (sums that cancel keep the rounding of their terms) */
        double worst = 0, big = 0;
        int64_t at = 0;
        for (int64_t j = 0; j < a->numel; j++)
            big = fmax(big, fabs(lt_tensor_get_f64(a, j)));
        for (int64_t j = 0; j < a->numel; j++) {
            double x = lt_tensor_get_f64(a, j), y = lt_tensor_get_f64(b, j);
            double e = fabs(x - y) / (fabs(x) + 1e-2 * big + 1e-30);
            if (isnan(x) != isnan(y)) /* a NaN on one side only, either side */
                e = INFINITY;
            else if (isnan(x))
                e = 0;
            if (e > worst) {
                worst = e;
                at = j;
            }
        }
        if (worst > rtol)
            fail_msg("%s output %d: element %lld is %.9g on cuda, %.9g on the CPU (rel %.3g)", what, i, (long long)at,
                     lt_tensor_get_f64(b, at), lt_tensor_get_f64(a, at), worst);
    }
    for (int i = 0; i < nout; i++) {
        lt_value_free(want[i]);
        lt_value_free(got[i]);
    }
}

static double tol(lt_dtype t) { return t == LT_F64 ? 1e-10 : 1e-4; }

/* Bad input that only a kernel sees (an index out of range): g fails with
 * LT_ERR_INVALID (the CLI's exit 2) on the CPU, and on the cuda kernel with
 * the same status and message. The node's types are set as check() sets
 * them, its one output dt [orank, odims], so that the backend takes it;
 * device memory is back at its baseline after the failed run. */
static void check_invalid(tu_graph *g, int nin, lt_value *const *in, lt_dtype dt, int orank, const int64_t *odims,
                          const char *what)
{
    lt_err want, got;
    for (int j = 0; j < nin && j < g->node->nin; j++)
        if (g->node->in[j] && in[j])
            lt_type_tensor(&g->node->in[j]->type, in[j]->t.dtype, in[j]->t.rank, in[j]->t.dims);
    assert_int_equal(g->node->nout, 1);
    lt_type_tensor(&g->node->out[0]->type, dt, orank, odims);
    uint64_t mask = 0;
    if (!lt_cuda_kernel_for(g->node, &mask))
        fail_msg("%s: the cuda backend does not take the node", what);
    lt_value *out[1] = {NULL};
    setenv("LANTERN_BACKEND", "cpu", 1);
    lt_status s = tu_run(g, in, out, &want);
    lt_value_free(out[0]);
    out[0] = NULL;
    if (s != LT_ERR_INVALID)
        fail_msg("%s on the CPU: status %d, not LT_ERR_INVALID (%s)", what, (int)s, s == LT_OK ? "" : want.msg);
    size_t base = cuda->bytes_in_use(cuda);
    setenv("LANTERN_BACKEND", "cuda", 1);
    s = tu_run(g, in, out, &got);
    setenv("LANTERN_BACKEND", "cpu", 1);
    lt_value_free(out[0]);
    if (s != LT_ERR_INVALID)
        fail_msg("%s on cuda: status %d, not LT_ERR_INVALID (%s)", what, (int)s, s == LT_OK ? "" : got.msg);
    if (strcmp(want.msg, got.msg) != 0)
        fail_msg("%s: cuda says \"%s\", the CPU \"%s\"", what, got.msg, want.msg);
    if (cuda->bytes_in_use(cuda) > base + (lt_cuda_of(cuda)->ws ? lt_cuda_of(cuda)->ws->size : 0))
        fail_msg("%s: %zu device bytes in use after the failed run, %zu before", what, cuda->bytes_in_use(cuda), base);
}

static lt_value *ints(int rank, const int64_t *dims, const int64_t *v)
{
    double d[64];
    int64_t n = lt_shape_numel(rank, dims);
    for (int64_t i = 0; i < n; i++)
        d[i] = (double)v[i];
    return tu_from(LT_I64, rank, dims, d);
}

static void free_all(int n, lt_value **v)
{
    for (int i = 0; i < n; i++)
        lt_value_free(v[i]);
}

/* ---- elementwise ---- */
static void test_binary(void **state)
{
    (void)state;
    static const lt_op ops[] = {LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_DIV, LT_OP_POW, LT_OP_MAX, LT_OP_MIN,
                                LT_OP_GREATER, LT_OP_LESS, LT_OP_EQUAL};
    static const lt_dtype types[] = {LT_F32, LT_F64};
    int64_t ad[3] = {2, 3, 5}, bd[2] = {3, 1};
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
            tu_graph g = tu_single(ops[i], 17, 2, 1);
            lt_value *in[2] = {tu_rand(types[t], 3, ad, 0.5, 2.0, 11 + i), tu_rand(types[t], 2, bd, 0.5, 2.0, 12 + i)};
            char what[64];
            snprintf(what, sizeof what, "%s %s", lt_op_names[ops[i]], lt_dtype_name(types[t]));
            check(&g, 2, in, tol(types[t]), what);
            free_all(2, in);
            tu_free(&g);
        }
}

static void test_unary(void **state)
{
    (void)state;
    static const lt_op ops[] = {LT_OP_RELU, LT_OP_SIGMOID, LT_OP_TANH, LT_OP_EXP, LT_OP_LOG, LT_OP_NEG,
                                LT_OP_SQRT, LT_OP_ERF,     LT_OP_ABS,  LT_OP_RECIPROCAL, LT_OP_LEAKY_RELU,
                                LT_OP_ELU,  LT_OP_SOFTPLUS, LT_OP_GELU};
    int64_t d[3] = {3, 7, 5};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            bool pos = ops[i] == LT_OP_LOG || ops[i] == LT_OP_SQRT || ops[i] == LT_OP_RECIPROCAL;
            tu_graph g = tu_single(ops[i], 20, 1, 1);
            lt_value *in[1] = {tu_rand(dt, 3, d, pos ? 0.1 : -3.0, 3.0, 40 + i)};
            char what[64];
            snprintf(what, sizeof what, "%s %s", lt_op_names[ops[i]], lt_dtype_name(dt));
            check(&g, 1, in, tol(dt), what);
            free_all(1, in);
            tu_free(&g);
        }
    /* Gelu's tanh form */
    tu_graph g = tu_single(LT_OP_GELU, 20, 1, 1);
    tu_attr_str(&g, "approximate", "tanh");
    lt_value *in[1] = {tu_rand(LT_F32, 3, d, -3, 3, 77)};
    check(&g, 1, in, 1e-4, "Gelu tanh");
    free_all(1, in);
    tu_free(&g);
}

static void test_where(void **state)
{
    (void)state;
    int64_t d[2] = {4, 6}, cd[1] = {6};
    tu_graph g1 = tu_single(LT_OP_GREATER, 13, 2, 1);
    lt_value *a = tu_rand(LT_F32, 2, d, -1, 1, 3), *b = tu_rand(LT_F32, 1, cd, -1, 1, 4);
    lt_value *in1[2] = {a, b};
    check(&g1, 2, in1, 0, "Greater");
    lt_err err;
    lt_value *cond[1] = {NULL};
    setenv("LANTERN_BACKEND", "cpu", 1);
    assert_int_equal(tu_run(&g1, in1, cond, &err), LT_OK);
    tu_graph g2 = tu_single(LT_OP_WHERE, 16, 3, 1);
    lt_value *in2[3] = {cond[0], a, b};
    check(&g2, 3, in2, 0, "Where");
    lt_value_free(cond[0]);
    free_all(2, in1);
    tu_free(&g1);
    tu_free(&g2);
}

/* ReluGrad (dy, y): dy where y > 0, y with zeros and negatives as Relu's
 * output never has them both, dy broadcast as the binary ops allow */
static void test_relu_grad(void **state)
{
    (void)state;
    static const lt_dtype types[] = {LT_F32, LT_F64};
    int64_t d[3] = {17, 3, 5}, gd[2] = {3, 5};
    for (size_t t = 0; t < 2; t++)
        for (int bc = 0; bc < 2; bc++) {
            lt_value *y = tu_rand(types[t], 3, d, -1, 1, 21 + t), *dy = tu_rand(types[t], bc ? 2 : 3, bc ? gd : d, -2, 2, 23 + t);
            for (int64_t i = 0; i < y->t.numel; i += 7)
                lt_tensor_set_f64(&y->t, i, 0);
            tu_graph g = tu_single(LT_OP_RELU_GRAD, 14, 2, 1);
            lt_value *in[2] = {dy, y};
            char what[64];
            snprintf(what, sizeof what, "ReluGrad %s%s", lt_dtype_name(types[t]), bc ? " broadcast" : "");
            check(&g, 2, in, 0, what);
            free_all(2, in);
            tu_free(&g);
        }
}

/* ---- cuBLAS ---- */
static void test_gemm(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                lt_dtype dt = t ? LT_F64 : LT_F32;
                int64_t m = 5, n = 7, k = 33;
                int64_t adims[2] = {ta ? k : m, ta ? m : k}, bdims[2] = {tb ? n : k, tb ? k : n}, cd[1] = {n};
                tu_graph g = tu_single(LT_OP_GEMM, 13, 3, 1);
                tu_attr_int(&g, "transA", ta);
                tu_attr_int(&g, "transB", tb);
                tu_attr_float(&g, "alpha", 0.75f);
                tu_attr_float(&g, "beta", 1.5f);
                lt_value *in[3] = {tu_rand(dt, 2, adims, -1, 1, 100 + ta), tu_rand(dt, 2, bdims, -1, 1, 200 + tb),
                                   tu_rand(dt, 1, cd, -1, 1, 300)};
                char what[64];
                snprintf(what, sizeof what, "Gemm %s transA %d transB %d", lt_dtype_name(dt), ta, tb);
                check(&g, 3, in, tol(dt), what);
                free_all(3, in);
                tu_free(&g);
            }
}

static void test_matmul(void **state)
{
    (void)state;
    static const struct {
        int ar, br;
        int64_t a[4], b[4];
    } cases[] = {
        {2, 2, {6, 9}, {9, 4}},          {3, 2, {3, 6, 9}, {9, 4}},       {3, 3, {3, 6, 9}, {3, 9, 4}},
        {4, 3, {2, 1, 6, 9}, {3, 9, 4}}, {1, 2, {9}, {9, 4}},             {3, 1, {3, 6, 9}, {9}},
        {2, 3, {6, 9}, {3, 9, 4}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int t = 0; t < 2; t++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            tu_graph g = tu_single(LT_OP_MAT_MUL, 13, 2, 1);
            lt_value *in[2] = {tu_rand(dt, cases[i].ar, cases[i].a, -1, 1, 500 + i),
                               tu_rand(dt, cases[i].br, cases[i].b, -1, 1, 600 + i)};
            char what[64];
            snprintf(what, sizeof what, "MatMul case %zu %s", i, lt_dtype_name(dt));
            check(&g, 2, in, tol(dt), what);
            free_all(2, in);
            tu_free(&g);
        }
}

/* ---- reductions and softmax ---- */
static void test_reduce(void **state)
{
    (void)state;
    int64_t d[3] = {4, 5, 6}, one[1] = {1}, two[1] = {2};
    int64_t axes1[1] = {1}, axes2[2] = {0, 2};
    for (int op = 0; op < 2; op++)
        for (int keep = 0; keep < 2; keep++) {
            tu_graph g = tu_single(op ? LT_OP_REDUCE_MEAN : LT_OP_REDUCE_SUM, 18, 2, 1);
            tu_attr_int(&g, "keepdims", keep);
            lt_value *in[2] = {tu_rand(LT_F32, 3, d, -1, 1, 700), keep ? ints(1, two, axes2) : ints(1, one, axes1)};
            check(&g, 2, in, 1e-4, op ? "ReduceMean" : "ReduceSum");
            free_all(2, in);
            tu_free(&g);
        }
    /* ReduceSumLike: (4, 5, 6) summed to (5, 1) */
    int64_t ld[2] = {5, 1};
    tu_graph g = tu_single(LT_OP_REDUCE_SUM_LIKE, 13, 2, 1);
    lt_value *in[2] = {tu_rand(LT_F64, 3, d, -1, 1, 701), tu_rand(LT_F64, 2, ld, -1, 1, 702)};
    check(&g, 2, in, 1e-10, "ReduceSumLike");
    free_all(2, in);
    tu_free(&g);
    /* GlobalAveragePool over (2, 3, 5, 4) */
    int64_t pd[4] = {2, 3, 5, 4};
    tu_graph gp = tu_single(LT_OP_GLOBAL_AVERAGE_POOL, 13, 1, 1);
    lt_value *pin[1] = {tu_rand(LT_F32, 4, pd, -1, 1, 703)};
    check(&gp, 1, pin, 1e-4, "GlobalAveragePool");
    free_all(1, pin);
    tu_free(&gp);
    /* Expand (3, 1) to (2, 3, 4) */
    int64_t xd[2] = {3, 1}, sd[1] = {3}, sv[3] = {2, 3, 4};
    tu_graph ge = tu_single(LT_OP_EXPAND, 13, 2, 1);
    lt_value *ein[2] = {tu_rand(LT_F64, 2, xd, -1, 1, 704), ints(1, sd, sv)};
    check(&ge, 2, ein, 0, "Expand");
    free_all(2, ein);
    tu_free(&ge);
}

static void test_softmax(void **state)
{
    (void)state;
    int64_t d[3] = {3, 10, 4};
    static const lt_op ops[] = {LT_OP_SOFTMAX, LT_OP_LOG_SOFTMAX};
    for (int i = 0; i < 2; i++)
        for (int axis = -1; axis <= 1; axis += 2) {
            tu_graph g = tu_single(ops[i], 13, 1, 1);
            tu_attr_int(&g, "axis", axis);
            lt_value *in[1] = {tu_rand(LT_F32, 3, d, -4, 4, 800 + i)};
            check(&g, 1, in, 1e-4, lt_op_names[ops[i]]);
            /* its gradient from y */
            lt_err err;
            lt_value *y[1] = {NULL};
            setenv("LANTERN_BACKEND", "cpu", 1);
            assert_int_equal(tu_run(&g, in, y, &err), LT_OK);
            tu_graph gg = tu_single(i ? LT_OP_LOG_SOFTMAX_GRAD : LT_OP_SOFTMAX_GRAD, 13, 2, 1);
            tu_attr_int(&gg, "axis", axis);
            lt_value *gin[2] = {tu_rand(LT_F32, 3, d, -1, 1, 810 + i), y[0]};
            check(&gg, 2, gin, 1e-4, i ? "LogSoftmaxGrad" : "SoftmaxGrad");
            free_all(2, gin);
            free_all(1, in);
            tu_free(&g);
            tu_free(&gg);
        }
}

static void test_losses(void **state)
{
    (void)state;
    int64_t xd[2] = {8, 10}, td[1] = {8}, one = 1;
    int64_t labels[8] = {1, 0, 9, 3, 3, 7, -100, 2};
    static const char *const reds[] = {"mean", "sum", "none"};
    for (int r = 0; r < 3; r++)
        for (int sce = 0; sce < 2; sce++) {
            lt_op op = sce ? LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS : LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS;
            tu_graph g = tu_single(op, 13, 2, 1);
            tu_attr_str(&g, "reduction", reds[r]);
            tu_attr_int(&g, "ignore_index", -100);
            lt_value *in[2] = {tu_rand(LT_F32, 2, xd, -3, 3, 900 + r), ints(1, td, labels)};
            char what[64];
            snprintf(what, sizeof what, "%s %s", lt_op_names[op], reds[r]);
            check(&g, 2, in, 1e-4, what);
            /* the gradient */
            tu_graph gg = tu_single(sce ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD, 13, 3, 1);
            tu_attr_str(&gg, "reduction", reds[r]);
            tu_attr_int(&gg, "ignore_index", -100);
            lt_value *dl = r == 2 ? tu_rand(LT_F32, 1, td, 0.5, 1.5, 950) : tu_rand(LT_F32, 0, &one, 0.5, 1.5, 951);
            lt_value *gin[3] = {dl, in[0], in[1]};
            snprintf(what, sizeof what, "%s %s", lt_op_names[gg.node->op], reds[r]);
            check(&gg, 3, gin, 1e-4, what);
            lt_value_free(dl);
            free_all(2, in);
            tu_free(&g);
            tu_free(&gg);
        }
}

/* ---- pooling ---- */
static void test_pool(void **state)
{
    (void)state;
    int64_t xd[4] = {2, 3, 9, 8}, k2[2] = {2, 2}, k3[2] = {3, 3}, s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1};
    for (int avg = 0; avg < 2; avg++)
        for (int c = 0; c < 3; c++) {
            lt_op op = avg ? LT_OP_AVERAGE_POOL : LT_OP_MAX_POOL;
            tu_graph g = tu_single(op, 19, 1, 1);
            tu_attr_ints(&g, "kernel_shape", 2, c ? k3 : k2);
            tu_attr_ints(&g, "strides", 2, s2);
            if (c >= 1)
                tu_attr_ints(&g, "pads", 4, p1);
            if (c == 2) {
                tu_attr_int(&g, "ceil_mode", 1);
                if (avg)
                    tu_attr_int(&g, "count_include_pad", 1);
            }
            lt_value *in[1] = {tu_rand(LT_F32, 4, xd, -2, 2, 1000 + c)};
            char what[64];
            snprintf(what, sizeof what, "%s case %d", lt_op_names[op], c);
            check(&g, 1, in, 1e-4, what);
            lt_err err;
            lt_value *y[1] = {NULL};
            setenv("LANTERN_BACKEND", "cpu", 1);
            assert_int_equal(tu_run(&g, in, y, &err), LT_OK);
            tu_graph gg = tu_single(avg ? LT_OP_AVERAGE_POOL_GRAD : LT_OP_MAX_POOL_GRAD, 19, 2, 1);
            tu_attr_ints(&gg, "kernel_shape", 2, c ? k3 : k2);
            tu_attr_ints(&gg, "strides", 2, s2);
            if (c >= 1)
                tu_attr_ints(&gg, "pads", 4, p1);
            if (c == 2) {
                tu_attr_int(&gg, "ceil_mode", 1);
                if (avg)
                    tu_attr_int(&gg, "count_include_pad", 1);
            }
            lt_value *gin[2] = {tu_rand(LT_F32, 4, y[0]->t.dims, -1, 1, 1100 + c), in[0]};
            snprintf(what, sizeof what, "%s case %d", lt_op_names[gg.node->op], c);
            check(&gg, 2, gin, 1e-4, what);
            lt_value_free(gin[0]);
            lt_value_free(y[0]);
            free_all(1, in);
            tu_free(&g);
            tu_free(&gg);
        }
}

/* ---- cuDNN convolution ---- */
static void conv_attrs(tu_graph *g, int nsp, int group, int stride, int pad, int dil)
{
    int64_t s[3] = {stride, stride, stride}, d[3] = {dil, dil, dil}, p[6] = {pad, pad, pad, pad, pad, pad};
    tu_attr_int(g, "group", group);
    tu_attr_ints(g, "strides", nsp, s);
    tu_attr_ints(g, "dilations", nsp, d);
    tu_attr_ints(g, "pads", 2 * nsp, p);
}

static void test_conv(void **state)
{
    (void)state;
    static const struct {
        int nsp, group, stride, pad, dil;
    } cases[] = {{2, 1, 1, 1, 1}, {2, 2, 2, 0, 1}, {2, 1, 1, 2, 2}, {1, 1, 1, 1, 1}, {3, 1, 1, 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int t = 0; t < 2; t++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            int nsp = cases[i].nsp, r = nsp + 2;
            int64_t xd[5] = {2, 4, 9, 8, 7}, wd[5] = {6, 4 / cases[i].group, 3, 3, 3}, bd[1] = {6};
            tu_graph g = tu_single(LT_OP_CONV, 11, 3, 1);
            conv_attrs(&g, nsp, cases[i].group, cases[i].stride, cases[i].pad, cases[i].dil);
            lt_value *in[3] = {tu_rand(dt, r, xd, -1, 1, 1200 + i), tu_rand(dt, r, wd, -1, 1, 1300 + i),
                               tu_rand(dt, 1, bd, -1, 1, 1400 + i)};
            char what[96];
            snprintf(what, sizeof what, "Conv case %zu %s", i, lt_dtype_name(dt));
            check(&g, 3, in, tol(dt), what);
            lt_err err;
            lt_value *y[1] = {NULL};
            setenv("LANTERN_BACKEND", "cpu", 1);
            assert_int_equal(tu_run(&g, in, y, &err), LT_OK);
            lt_value *dy = tu_rand(dt, r, y[0]->t.dims, -1, 1, 1500 + i);
            tu_graph gd = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1);
            conv_attrs(&gd, nsp, cases[i].group, cases[i].stride, cases[i].pad, cases[i].dil);
            lt_value *din[3] = {dy, in[1], in[0]};
            snprintf(what, sizeof what, "ConvGradData case %zu %s", i, lt_dtype_name(dt));
            check(&gd, 3, din, tol(dt), what);
            tu_graph gf = tu_single(LT_OP_CONV_GRAD_FILTER, 11, 3, 1);
            conv_attrs(&gf, nsp, cases[i].group, cases[i].stride, cases[i].pad, cases[i].dil);
            lt_value *fin[3] = {dy, in[0], in[1]};
            snprintf(what, sizeof what, "ConvGradFilter case %zu %s", i, lt_dtype_name(dt));
            check(&gf, 3, fin, tol(dt) * 10, what); /* sums over N x grid */
            lt_value_free(dy);
            lt_value_free(y[0]);
            free_all(3, in);
            tu_free(&g);
            tu_free(&gd);
            tu_free(&gf);
        }
}

/* ---- batch normalization ---- */
static void test_batch_norm(void **state)
{
    (void)state;
    int64_t xd[4] = {4, 3, 5, 6}, cd[1] = {3};
    for (int t = 0; t < 2; t++)
        for (int train = 0; train < 2; train++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, train ? 3 : 1);
            tu_attr_int(&g, "training_mode", train);
            tu_attr_float(&g, "momentum", 0.8f);
            lt_value *in[5] = {tu_rand(dt, 4, xd, -2, 3, 1700 + t), tu_rand(dt, 1, cd, 0.5, 1.5, 1701),
                               tu_rand(dt, 1, cd, -1, 1, 1702), tu_rand(dt, 1, cd, -1, 1, 1703),
                               tu_rand(dt, 1, cd, 0.5, 2, 1704)};
            char what[80];
            snprintf(what, sizeof what, "BatchNormalization %s training_mode %d", lt_dtype_name(dt), train);
            check(&g, 5, in, dt == LT_F64 ? 1e-9 : 1e-4, what);
            tu_graph gg = tu_single(LT_OP_BATCH_NORM_GRAD, 15, 6, 3);
            tu_attr_int(&gg, "training_mode", train);
            lt_value *gin[6] = {tu_rand(dt, 4, xd, -1, 1, 1710 + t), in[0], in[1], in[2], in[3], in[4]};
            snprintf(what, sizeof what, "BatchNormalizationGrad %s training_mode %d", lt_dtype_name(dt), train);
            check(&gg, 6, gin, dt == LT_F64 ? 1e-9 : 1e-4, what);
            lt_value_free(gin[0]);
            free_all(5, in);
            tu_free(&g);
            tu_free(&gg);
        }
    /* training with the running variance moved towards the unbiased
     * variance (LT_BN_UNBIASED_ATTR, which the trainer sets for PyTorch's
     * models): 8 values a channel, so the factor 8 / 7 shows */
    int64_t sd[4] = {2, 3, 2, 2};
    for (int t = 0; t < 2; t++) {
        lt_dtype dt = t ? LT_F64 : LT_F32;
        tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 3);
        tu_attr_int(&g, "training_mode", 1);
        tu_attr_float(&g, "momentum", 0.8f);
        tu_attr_int(&g, LT_BN_UNBIASED_ATTR, 1);
        lt_value *in[5] = {tu_rand(dt, 4, sd, -2, 3, 1720 + t), tu_rand(dt, 1, cd, 0.5, 1.5, 1721),
                           tu_rand(dt, 1, cd, -1, 1, 1722), tu_rand(dt, 1, cd, -1, 1, 1723),
                           tu_rand(dt, 1, cd, 0.5, 2, 1724)};
        char what[96];
        snprintf(what, sizeof what, "BatchNormalization %s unbiased running variance", lt_dtype_name(dt));
        check(&g, 5, in, dt == LT_F64 ? 1e-9 : 1e-4, what);
        /* the attribute reaches the kernel: the CPU's running variance is
         * not the one without it (else the case above proves nothing) */
        tu_graph g0 = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 3);
        tu_attr_int(&g0, "training_mode", 1);
        tu_attr_float(&g0, "momentum", 0.8f);
        lt_value *a[3] = {NULL}, *b[3] = {NULL};
        lt_err err;
        setenv("LANTERN_BACKEND", "cpu", 1);
        assert_int_equal(tu_run(&g, in, a, &err), LT_OK);
        assert_int_equal(tu_run(&g0, in, b, &err), LT_OK);
        double va = lt_tensor_get_f64(&a[2]->t, 0), vb = lt_tensor_get_f64(&b[2]->t, 0);
        if (fabs(va - vb) <= 1e-3 * fabs(vb))
            fail_msg("%s: running variance %.9g, %.9g without the attribute", what, va, vb);
        free_all(3, a);
        free_all(3, b);
        free_all(5, in);
        tu_free(&g);
        tu_free(&g0);
    }
}

/* Dropout in training: the same mask on both sides (drawn on the host from
 * the executor's stream), and its mask output */
static void test_dropout(void **state)
{
    (void)state;
    int64_t d[2] = {16, 33};
    double r = 0.3, on = 1;
    tu_graph g = tu_single(LT_OP_DROPOUT, 13, 3, 2);
    lt_value *in[3] = {tu_rand(LT_F32, 2, d, -1, 1, 1800), tu_from(LT_F32, 0, NULL, &r), tu_from(LT_BOOL, 0, NULL, &on)};
    check(&g, 3, in, 0, "Dropout");
    free_all(3, in);
    tu_free(&g);
}

/* ---- data movement ---- */
static void test_movement(void **state)
{
    (void)state;
    int64_t d[3] = {3, 4, 5}, perm[3] = {2, 0, 1}, id[2] = {2, 3}, idx[6] = {0, 3, -1, 2, 2, 1};
    tu_graph g = tu_single(LT_OP_TRANSPOSE, 13, 1, 1);
    tu_attr_ints(&g, "perm", 3, perm);
    lt_value *in[1] = {tu_rand(LT_F32, 3, d, -1, 1, 1600)};
    check(&g, 1, in, 0, "Transpose");
    tu_free(&g);
    int64_t d2[3] = {3, 2, 5};
    tu_graph gc = tu_single(LT_OP_CONCAT, 13, 2, 1);
    tu_attr_int(&gc, "axis", 1);
    lt_value *cin[2] = {in[0], tu_rand(LT_F32, 3, d2, -1, 1, 1601)};
    check(&gc, 2, cin, 0, "Concat");
    lt_value_free(cin[1]);
    tu_free(&gc);
    tu_graph gg = tu_single(LT_OP_GATHER, 13, 2, 1);
    tu_attr_int(&gg, "axis", 1);
    lt_value *gin[2] = {in[0], ints(2, id, idx)};
    check(&gg, 2, gin, 0, "Gather");
    /* its gradient: rows added back, a repeated index twice */
    lt_err err;
    lt_value *y[1] = {NULL};
    setenv("LANTERN_BACKEND", "cpu", 1);
    assert_int_equal(tu_run(&gg, gin, y, &err), LT_OK);
    tu_graph ggr = tu_single(LT_OP_GATHER_GRAD, 13, 3, 1);
    tu_attr_int(&ggr, "axis", 1);
    lt_value *grin[3] = {tu_rand(LT_F32, y[0]->t.rank, y[0]->t.dims, -1, 1, 1602), gin[1], in[0]};
    check(&ggr, 3, grin, 1e-4, "GatherGrad");
    lt_value_free(grin[0]);
    lt_value_free(y[0]);
    tu_free(&ggr);
    lt_value_free(gin[1]);
    tu_free(&gg);
    /* Slice: a negative step, a clamped end, a negative axis */
    int64_t three[1] = {3}, st[3] = {3, 1, 0}, en[3] = {-100, 100, 4}, ax[3] = {1, -1, 0}, sp[3] = {-2, 2, 1};
    tu_graph gs = tu_single(LT_OP_SLICE, 13, 5, 1);
    lt_value *sin[5] = {in[0], ints(1, three, st), ints(1, three, en), ints(1, three, ax), ints(1, three, sp)};
    check(&gs, 5, sin, 0, "Slice");
    /* its gradient: dy of the slice's shape written into zeros of x's */
    lt_value *sy[1] = {NULL};
    lt_err serr;
    setenv("LANTERN_BACKEND", "cpu", 1);
    if (tu_run(&gs, sin, sy, &serr) != LT_OK)
        fail_msg("Slice on the CPU: %s", serr.msg);
    tu_graph gsg = tu_single(LT_OP_SLICE_GRAD, 13, 6, 1);
    lt_value *sgin[6] = {tu_rand(LT_F32, sy[0]->t.rank, sy[0]->t.dims, -1, 1, 1801), in[0], sin[1], sin[2], sin[3],
                         sin[4]};
    check(&gsg, 6, sgin, 0, "SliceGrad");
    tu_free(&gsg);
    lt_value_free(sgin[0]);
    lt_value_free(sy[0]);
    free_all(4, sin + 1);
    tu_free(&gs);
    free_all(1, in);
}

/* GatherGrad with padding_idx (an embedding's padding row takes no
 * gradient): the row among the indices, once wrapped from a negative one;
 * on axis 0, then on axis 1 with rows before it (outer 3) */
static void test_gather_grad_padding(void **state)
{
    (void)state;
    static const struct {
        int axis, xr, ir;
        int64_t xd[3], idd[2], idx[6], pad;
    } cases[] = {
        {0, 2, 2, {6, 4}, {2, 3}, {1, 3, 0, 3, 5, -3}, 3},
        {1, 3, 1, {3, 5, 4}, {4}, {0, 2, -1, 2}, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int t = 0; t < 2; t++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            int axis = cases[c].axis, xr = cases[c].xr, ir = cases[c].ir;
            const int64_t *idd = cases[c].idd;
            /* dy: x's shape with the axis replaced by the indices' */
            int64_t dyd[LT_MAX_RANK];
            int dr = 0;
            for (int d = 0; d < axis; d++)
                dyd[dr++] = cases[c].xd[d];
            for (int d = 0; d < ir; d++)
                dyd[dr++] = idd[d];
            for (int d = axis + 1; d < xr; d++)
                dyd[dr++] = cases[c].xd[d];
            tu_graph g = tu_single(LT_OP_GATHER_GRAD, 13, 3, 1);
            tu_attr_int(&g, "axis", axis);
            tu_attr_int(&g, "padding_idx", cases[c].pad);
            lt_value *in[3] = {tu_rand(dt, dr, dyd, -1, 1, 1630 + c * 2 + (size_t)t), ints(ir, idd, cases[c].idx),
                               tu_rand(dt, xr, cases[c].xd, -1, 1, 1640 + c)};
            char what[80];
            snprintf(what, sizeof what, "GatherGrad %s axis %d padding_idx %lld", lt_dtype_name(dt), axis,
                     (long long)cases[c].pad);
            check(&g, 3, in, tol(dt), what);
            free_all(3, in);
            tu_free(&g);
        }
}

/* Gather and GatherGrad of one index (a 0-d one, as a loop's step reads
 * its time slice, and a [1] one; negative too), which cuda runs as a
 * strided copy with nothing uploaded: on every axis of a [3, 4, 5] tensor,
 * float32, float64 and int64 data; GatherGrad also with padding_idx on the
 * index and beside it */
static void test_gather_one_index(void **state)
{
    (void)state;
    int64_t xd[3] = {3, 4, 5}, one[1] = {1};
    static const lt_dtype types[] = {LT_F32, LT_F64, LT_I64};
    for (int t = 0; t < 3; t++)
        for (int axis = 0; axis < 3; axis++)
            for (int form = 0; form < 3; form++) {
                int64_t v = form == 2 ? -1 : axis + form; /* within every axis: 0..2, then -1 */
                lt_dtype dt = types[t];
                lt_value *x = dt == LT_I64 ? NULL : tu_rand(dt, 3, xd, -1, 1, 1660 + (uint64_t)(t * 9 + axis * 3 + form));
                if (!x) {
                    double d[60];
                    for (int i = 0; i < 60; i++)
                        d[i] = (double)(i * 7 % 23) - 11;
                    x = tu_from(LT_I64, 3, xd, d);
                }
                lt_value *gin[2] = {x, form == 1 ? ints(1, one, &v) : ints(0, NULL, &v)};
                tu_graph g = tu_single(LT_OP_GATHER, 13, 2, 1);
                tu_attr_int(&g, "axis", axis);
                char what[96];
                snprintf(what, sizeof what, "Gather %s axis %d index %lld (%s)", lt_dtype_name(dt), axis,
                         (long long)v, form == 1 ? "[1]" : "0-d");
                check(&g, 2, gin, 0, what);
                tu_free(&g);
                if (dt != LT_I64)
                    for (int pad = -1; pad < 2; pad++) {
                        /* dy: x's shape without the axis (0-d index) or with it of size 1 */
                        int64_t dyd[3];
                        int dr = 0;
                        for (int d = 0; d < 3; d++)
                            if (d != axis)
                                dyd[dr++] = xd[d];
                            else if (form == 1)
                                dyd[dr++] = 1;
                        tu_graph gg = tu_single(LT_OP_GATHER_GRAD, 13, 3, 1);
                        tu_attr_int(&gg, "axis", axis);
                        int64_t row = v < 0 ? v + xd[axis] : v;
                        if (pad >= 0) /* the gathered row, then another */
                            tu_attr_int(&gg, "padding_idx", pad ? (row + 1) % xd[axis] : row);
                        lt_value *grin[3] = {tu_rand(dt, dr, dyd, -1, 1, 1700 + (uint64_t)(t * 9 + axis * 3 + form)),
                                             gin[1], x};
                        snprintf(what, sizeof what, "GatherGrad %s axis %d index %lld (%s) padding %d",
                                 lt_dtype_name(dt), axis, (long long)v, form == 1 ? "[1]" : "0-d", pad);
                        check(&gg, 3, grin, 0, what);
                        lt_value_free(grin[0]);
                        tu_free(&gg);
                    }
                free_all(2, gin);
            }
}

/* An index out of range is bad input (LT_ERR_INVALID, as on the CPU, with
 * its message) in every cuda kernel that reads indices on the host: one
 * bad index each, so both sides name the same one */
static void test_index_out_of_range(void **state)
{
    (void)state;
    int64_t xd[3] = {3, 4, 5};
    lt_value *x = tu_rand(LT_F32, 3, xd, -1, 1, 1650);
    /* Gather and GatherGrad on axis 1 (size 4): 4, then -5 */
    int64_t id[2] = {2, 3}, hi[6] = {0, 3, 4, 2, 2, 1}, lo[6] = {0, 3, -1, 2, -5, 1}, gy[4] = {3, 2, 3, 5};
    for (int neg = 0; neg < 2; neg++) {
        lt_value *ix = ints(2, id, neg ? lo : hi);
        tu_graph g = tu_single(LT_OP_GATHER, 13, 2, 1);
        tu_attr_int(&g, "axis", 1);
        lt_value *gin[2] = {x, ix};
        check_invalid(&g, 2, gin, LT_F32, 4, gy, neg ? "Gather, index -5" : "Gather, index 4");
        tu_free(&g);
        tu_graph gg = tu_single(LT_OP_GATHER_GRAD, 13, 3, 1);
        tu_attr_int(&gg, "axis", 1);
        lt_value *ggin[3] = {tu_rand(LT_F32, 4, gy, -1, 1, 1651), ix, x};
        check_invalid(&gg, 3, ggin, LT_F32, 3, xd, neg ? "GatherGrad, index -5" : "GatherGrad, index 4");
        tu_free(&gg);
        lt_value_free(ggin[0]);
        lt_value_free(ix);
    }
    /* GatherElements and its gradient on axis 1: one 4 among (3, 2, 5) */
    int64_t ed[3] = {3, 2, 5}, ev[30];
    for (int i = 0; i < 30; i++)
        ev[i] = i == 17 ? 4 : (i * 5) % 7 - 3; /* -3..3 */
    lt_value *eix = ints(3, ed, ev);
    tu_graph ge = tu_single(LT_OP_GATHER_ELEMENTS, 13, 2, 1);
    tu_attr_int(&ge, "axis", 1);
    lt_value *gein[2] = {x, eix};
    check_invalid(&ge, 2, gein, LT_F32, 3, ed, "GatherElements, index 4");
    tu_free(&ge);
    tu_graph geg = tu_single(LT_OP_GATHER_ELEMENTS_GRAD, 13, 3, 1);
    tu_attr_int(&geg, "axis", 1);
    lt_value *gegin[3] = {tu_rand(LT_F32, 3, ed, -1, 1, 1652), eix, x};
    check_invalid(&geg, 3, gegin, LT_F32, 3, xd, "GatherElementsGrad, index 4");
    tu_free(&geg);
    lt_value_free(gegin[0]);
    lt_value_free(eix);
    /* GatherND: the second tuple's -5 on axis 1 (size 4) */
    int64_t nd[2] = {2, 2}, nv[4] = {0, 1, 2, -5}, ny[2] = {2, 5};
    lt_value *nin[2] = {x, ints(2, nd, nv)};
    tu_graph gn = tu_single(LT_OP_GATHER_ND, 13, 2, 1);
    check_invalid(&gn, 2, nin, LT_F32, 2, ny, "GatherND, index -5");
    tu_free(&gn);
    lt_value_free(nin[1]);
    /* ScatterND: the second tuple's 3 on dim 0 (size 3) */
    int64_t sv[4] = {0, 1, 3, 0}, ud[2] = {2, 5};
    lt_value *sin[3] = {x, ints(2, nd, sv), tu_rand(LT_F32, 2, ud, -1, 1, 1653)};
    tu_graph gs = tu_single(LT_OP_SCATTER_ND, 18, 3, 1);
    check_invalid(&gs, 3, sin, LT_F32, 3, xd, "ScatterND, index 3");
    tu_free(&gs);
    free_all(2, sin + 1);
    lt_value_free(x);
}

/* ---- indexing and padding ---- */
static void test_index(void **state)
{
    (void)state;
    /* GatherElements on axis 1, indices narrower than data on axis 2, a
     * negative index and repeats; its gradient adds the repeats up */
    int64_t d[3] = {3, 4, 5}, id[3] = {3, 6, 4}, ge[72];
    for (int i = 0; i < 72; i++)
        ge[i] = (i * 7) % 8 - 4; /* -4..3 */
    lt_value *x = tu_rand(LT_F32, 3, d, -1, 1, 1700);
    lt_value *gin[2] = {x, NULL};
    {
        double v[72];
        for (int i = 0; i < 72; i++)
            v[i] = (double)ge[i];
        gin[1] = tu_from(LT_I64, 3, id, v);
    }
    tu_graph g = tu_single(LT_OP_GATHER_ELEMENTS, 13, 2, 1);
    tu_attr_int(&g, "axis", 1);
    check(&g, 2, gin, 0, "GatherElements");
    tu_free(&g);
    tu_graph gg = tu_single(LT_OP_GATHER_ELEMENTS_GRAD, 13, 3, 1);
    tu_attr_int(&gg, "axis", 1);
    lt_value *ggin[3] = {tu_rand(LT_F32, 3, id, -1, 1, 1701), gin[1], x};
    check(&gg, 3, ggin, 1e-5, "GatherElementsGrad");
    lt_value_free(ggin[0]);
    tu_free(&gg);
    lt_value_free(gin[1]);
    /* GatherND: tuples of 2 into (3, 4, 5), then batch_dims 1 */
    int64_t nd[3] = {2, 3, 2}, ndv[12] = {0, 1, 2, -1, 1, 3, 2, 0, -3, 2, 0, 0};
    lt_value *nin[2] = {x, ints(3, nd, ndv)};
    tu_graph gn = tu_single(LT_OP_GATHER_ND, 13, 2, 1);
    check(&gn, 2, nin, 0, "GatherND");
    tu_free(&gn);
    int64_t nb[2] = {3, 1}, nbv[3] = {3, -1, 0};
    lt_value *nbin[2] = {x, ints(2, nb, nbv)};
    tu_graph gb = tu_single(LT_OP_GATHER_ND, 13, 2, 1);
    tu_attr_int(&gb, "batch_dims", 1);
    check(&gb, 2, nbin, 0, "GatherND batch_dims 1");
    tu_free(&gb);
    lt_value_free(nbin[1]);
    /* ScatterND: rows of (3, 4, 5) at tuples of 2 with a repeated tuple
     * (none: the last wins; the reductions combine both) */
    int64_t sd[2] = {4, 2}, sdv[8] = {0, 1, 2, 3, 0, 1, -1, 0}, ud[2] = {4, 5};
    lt_value *sin[3] = {x, ints(2, sd, sdv), tu_rand(LT_F32, 2, ud, 0.5, 2, 1702)};
    static const char *const reds[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++) {
        tu_graph gs = tu_single(LT_OP_SCATTER_ND, 18, 3, 1);
        tu_attr_str(&gs, "reduction", reds[i]);
        char what[64];
        snprintf(what, sizeof what, "ScatterND reduction %s", reds[i]);
        check(&gs, 3, sin, 1e-6, what);
        tu_free(&gs);
    }
    lt_value_free(sin[1]);
    lt_value_free(sin[2]);
    lt_value_free(nin[1]);
    /* Pad in every mode: pads larger than an axis (reflect and wrap go
     * around), a negative pad (a crop), axes given; then PadGrad */
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    int64_t two[1] = {2}, four[1] = {4}, axv[2] = {-1, 0}, pv[4] = {6, -1, 2, 3}, pcv[1] = {0};
    (void)pcv;
    for (int m = 0; m < 4; m++) {
        lt_value *pin[4] = {x, ints(1, four, pv), tu_from(LT_F32, 0, NULL, (const double[]){0.75}),
                            ints(1, two, axv)};
        tu_graph gp = tu_single(LT_OP_PAD, 19, 4, 1);
        tu_attr_str(&gp, "mode", modes[m]);
        char what[64];
        snprintf(what, sizeof what, "Pad %s", modes[m]);
        check(&gp, 4, pin, 0, what);
        lt_value *y[1] = {NULL};
        lt_err err;
        setenv("LANTERN_BACKEND", "cpu", 1);
        assert_int_equal(tu_run(&gp, pin, y, &err), LT_OK);
        tu_free(&gp);
        tu_graph gpg = tu_single(LT_OP_PAD_GRAD, 19, 5, 1);
        tu_attr_str(&gpg, "mode", modes[m]);
        lt_value *pgin[5] = {tu_rand(LT_F32, y[0]->t.rank, y[0]->t.dims, -1, 1, 1710 + (uint64_t)m), x, pin[1],
                             pin[2], pin[3]};
        snprintf(what, sizeof what, "PadGrad %s", modes[m]);
        check(&gpg, 5, pgin, 1e-5, what);
        tu_free(&gpg);
        lt_value_free(pgin[0]);
        lt_value_free(y[0]);
        free_all(3, pin + 1);
    }
    lt_value_free(x);
}

/* ---- accumulation cells and ConstantOfShape ---- */
static lt_ival *cell_val(lt_module *m, lt_block *b, lt_node *def, const char *name)
{
    lt_ival *v = lt_ival_new(m, b, name);
    v->def = def;
    return v;
}

/* main(x, v, a, b): c = AccZerosLike(x); AccAdd(c, v); AccGemm(c, a, b)
 * {transA=1, alpha=0.5}; AccAdd(c, v); return AccRead(c), with x, v, c and
 * the result [m, n], a [k, m], b [k, n]. */
static tu_graph cell_graph(lt_dtype dt, int64_t m, int64_t n, int64_t k)
{
    tu_graph g = tu_single(LT_OP_ACC_GEMM, 13, 4, 0);
    lt_module *mod = g.m;
    lt_block *b = mod->main;
    int64_t mn[2] = {m, n}, km[2] = {k, m}, kn[2] = {k, n};
    lt_type_tensor(&b->params[0]->type, dt, 2, mn);
    lt_type_tensor(&b->params[1]->type, dt, 2, mn);
    lt_type_tensor(&b->params[2]->type, dt, 2, km);
    lt_type_tensor(&b->params[3]->type, dt, 2, kn);
    lt_node *gemm = g.node; /* made first by tu_single: moved after the zeros and the first add */
    lt_node *z = lt_node_new(mod, b, LT_OP_ACC_ZEROS_LIKE, 1, 1);
    z->opset = 13;
    z->in[0] = b->params[0];
    z->out[0] = cell_val(mod, b, z, "cell");
    lt_type_tensor(&z->out[0]->type, dt, 2, mn);
    z->out[0]->type.kind = LT_KIND_CELL;
    lt_node *add1 = lt_node_new(mod, b, LT_OP_ACC_ADD, 2, 0), *add2 = lt_node_new(mod, b, LT_OP_ACC_ADD, 2, 0);
    add1->opset = add2->opset = 13;
    add1->in[0] = add2->in[0] = z->out[0];
    add1->in[1] = add2->in[1] = b->params[1];
    lt_node *rd = lt_node_new(mod, b, LT_OP_ACC_READ, 1, 1);
    rd->opset = 13;
    rd->in[0] = z->out[0];
    rd->out[0] = cell_val(mod, b, rd, "sum");
    lt_type_tensor(&rd->out[0]->type, dt, 2, mn);
    gemm->in[0] = z->out[0];
    gemm->in[1] = b->params[2];
    gemm->in[2] = b->params[3];
    tu_attr_int(&g, "transA", 1);
    tu_attr_float(&g, "alpha", 0.5f);
    /* the order: zeros, add, gemm, add, read */
    lt_node *order[5] = {z, add1, gemm, add2, rd};
    assert_int_equal(b->nnodes, 5);
    for (int i = 0; i < 5; i++)
        b->nodes[i] = order[i];
    lt_block_set_results(mod, b, 1);
    b->results[0] = rd->out[0];
    return g;
}

static void test_cells(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++) {
        lt_dtype dt = t ? LT_F64 : LT_F32;
        int64_t m = 37, n = 129, k = 64, mn[2] = {m, n}, km[2] = {k, m}, kn[2] = {k, n};
        tu_graph g = cell_graph(dt, m, n, k);
        lt_value *in[4] = {tu_rand(dt, 2, mn, -1, 1, 2001), tu_rand(dt, 2, mn, -1, 1, 2002),
                           tu_rand(dt, 2, km, -1, 1, 2003), tu_rand(dt, 2, kn, -1, 1, 2004)};
        lt_value *want = NULL, *got = NULL;
        lt_err err;
        setenv("LANTERN_BACKEND", "cpu", 1);
        if (tu_run(&g, in, &want, &err) != LT_OK)
            fail_msg("cells on the CPU: %s", err.msg);
        size_t base = cuda->bytes_in_use(cuda), breaks = lt_cuda_guard_breaks();
        setenv("LANTERN_BACKEND", "cuda", 1);
        if (tu_run(&g, in, &got, &err) != LT_OK)
            fail_msg("cells on cuda: %s", err.msg);
        setenv("LANTERN_BACKEND", "cpu", 1);
        /* every op on the cell ran on the device; only the sum came back */
        if (tu_last_copies.host_nodes != 0 || tu_last_copies.device_nodes != 5 || tu_last_copies.downloads != 1)
            fail_msg("cells %s: %llu node(s) on the host, %llu on cuda, %llu download(s)", lt_dtype_name(dt),
                     (unsigned long long)tu_last_copies.host_nodes, (unsigned long long)tu_last_copies.device_nodes,
                     (unsigned long long)tu_last_copies.downloads);
        if (lt_cuda_guard_breaks() != breaks)
            fail_msg("cells: a kernel wrote past the end of a buffer");
        if (cuda->bytes_in_use(cuda) > base + (lt_cuda_of(cuda)->ws ? lt_cuda_of(cuda)->ws->size : 0))
            fail_msg("cells: %zu device bytes in use after the run, %zu before", cuda->bytes_in_use(cuda), base);
        assert_int_equal(got->t.numel, m * n);
        for (int64_t i = 0; i < m * n; i++) {
            double a = lt_tensor_get_f64(&want->t, i), b = lt_tensor_get_f64(&got->t, i);
            if (fabs(a - b) > tol(dt) * (1 + fabs(a)))
                fail_msg("cells %s: element %lld is %.9g on cuda, %.9g on the CPU", lt_dtype_name(dt), (long long)i, b,
                         a);
        }
        lt_value_free(want);
        lt_value_free(got);
        free_all(4, in);
        tu_free(&g);
    }
}

static void test_constant_of_shape(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++) {
        lt_dtype dt = t ? LT_F64 : LT_F32;
        tu_graph g = tu_single(LT_OP_CONSTANT_OF_SHAPE, 20, 1, 1);
        tu_attr_tensor1(&g, "value", dt, -2.75);
        int64_t sd[1] = {3}, shape[3] = {5, 1, 77};
        lt_value *in[1] = {ints(1, sd, shape)};
        check(&g, 1, in, 0.0, t ? "ConstantOfShape float64" : "ConstantOfShape float32");
        free_all(1, in);
        tu_free(&g);
    }
}

/* ---- LSTM, GRU and RNN ---- */
/* One recurrent op: the forward with its workspace output, then the
 * gradient fed with the CPU's forward, every output of both against the
 * CPU. gates 4 (LSTM: c0 and dY_c too), 3 (GRU, with lbr) or 1 (RNN, with
 * act); extras: biases, initial states (and, LSTM, dY_c; else dY_h only
 * then). */
typedef struct rec_case {
    int gates, layout, dir, lbr;
    lt_dtype dt;
    bool extras;
    const char *act;
    int64_t S, B, I, H;
    uint64_t seed;
} rec_case;

static void check_recurrent(const rec_case *c)
{
    static const char *const dirs[3] = {"forward", "reverse", "bidirectional"};
    static const char *const names[5] = {"", "RNN", "", "GRU", "LSTM"};
    bool lstm = c->gates == 4;
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, D = c->dir == 2 ? 2 : 1, G = c->gates * H;
    int64_t xd[3] = {c->layout ? B : S, c->layout ? S : B, I}, wd[3] = {D, G, I}, rd[3] = {D, G, H},
            bd[2] = {D, 2 * G}, hd[3] = {c->layout ? B : D, c->layout ? D : B, H};
    lt_dtype dt = c->dt;
    uint64_t seed = c->seed;
    int nfin = lstm ? 7 : 6, nfout = lstm ? 4 : 3, base = lstm ? 8 : 6, ngin = lstm ? 12 : 9, ngout = lstm ? 6 : 5;
    lt_value *in[12] = {tu_rand(dt, 3, xd, -1, 1, seed), tu_rand(dt, 3, wd, -0.5, 0.5, seed + 1),
                        tu_rand(dt, 3, rd, -0.5, 0.5, seed + 2), c->extras ? tu_rand(dt, 2, bd, -0.5, 0.5, seed + 3) : NULL,
                        NULL, c->extras ? tu_rand(dt, 3, hd, -1, 1, seed + 4) : NULL,
                        lstm && c->extras ? tu_rand(dt, 3, hd, -1, 1, seed + 5) : NULL};
    char what[128];
    snprintf(what, sizeof what, "%s %s layout %d %s%s%s%s%s", names[c->gates], lt_dtype_name(dt), c->layout,
             dirs[c->dir], c->act ? " " : "", c->act ? c->act : "", c->lbr ? " linear_before_reset" : "",
             c->extras ? " with B and initial states" : "");
    lt_op ops[5] = {0, LT_OP_RNN, 0, LT_OP_GRU, LT_OP_LSTM}, gops[5] = {0, LT_OP_RNN_GRAD, 0, LT_OP_GRU_GRAD,
                                                                      LT_OP_LSTM_GRAD};
    for (int pass = 0; pass < 2; pass++) {
        tu_graph g = tu_single(pass ? gops[c->gates] : ops[c->gates], 14, pass ? ngin : nfin, pass ? ngout : nfout);
        tu_attr_int(&g, "hidden_size", H);
        tu_attr_str(&g, "direction", dirs[c->dir]);
        tu_attr_int(&g, "layout", c->layout);
        if (c->gates == 3)
            tu_attr_int(&g, "linear_before_reset", c->lbr);
        if (c->act)
            tu_attr_strings(&g, "activations", 1, &c->act);
        for (int j = 3; j < (pass ? ngin - 1 : nfin); j++)
            if (!in[j])
                tu_omit_input(&g, j);
        char label[160];
        snprintf(label, sizeof label, "%s%s", what, pass ? ", gradient" : "");
        check(&g, pass ? ngin : nfin, in, tol(dt), label);
        if (!pass) { /* the CPU's forward feeds the gradient */
            lt_value *fwd[4] = {NULL};
            lt_err err;
            setenv("LANTERN_BACKEND", "cpu", 1);
            if (tu_run(&g, in, fwd, &err) != LT_OK)
                fail_msg("%s on the CPU: %s", what, err.msg);
            in[base] = tu_rand(dt, fwd[0]->t.rank, fwd[0]->t.dims, -1, 1, seed + 6);
            in[base + 1] = lstm || c->extras ? tu_rand(dt, 3, hd, -1, 1, seed + 7) : NULL;
            if (lstm)
                in[base + 2] = c->extras ? tu_rand(dt, 3, hd, -1, 1, seed + 8) : NULL;
            in[ngin - 1] = fwd[nfout - 1];
            for (int j = 0; j < nfout - 1; j++)
                lt_value_free(fwd[j]);
        }
        tu_free(&g);
    }
    free_all(12, in);
}

/* every layout and direction, float32 and float64, with and without
 * biases and initial states; the RNN with each activation it takes, the
 * GRU with both reset forms */
static void test_recurrent(void **state)
{
    (void)state;
    static const char *const acts[3] = {NULL, "Relu", "Sigmoid"};
    for (int t = 0; t < 2; t++)
        for (int layout = 0; layout < 2; layout++)
            for (int dir = 0; dir < 3; dir++) {
                lt_dtype dt = t ? LT_F64 : LT_F32;
                uint64_t seed = 3000 + (uint64_t)(t * 100 + layout * 10 + dir) * 16;
                rec_case lstm = {4, layout, dir, 0, dt, (layout + dir) % 2 == 0, NULL, 5, 6, 7, 9, seed};
                rec_case rnn = {1, layout, dir, 0, dt, (layout + dir) % 2 == 1, acts[(t + layout + dir) % 3], 6, 5, 7,
                                11, seed + 100000};
                check_recurrent(&lstm);
                check_recurrent(&rnn);
                for (int lbr = 0; lbr < 2; lbr++) {
                    rec_case gru = {3, layout, dir, lbr, dt, (layout + dir + lbr) % 2 == 0, NULL, 5, 4, 6, 10,
                                    seed + 200000 + (uint64_t)lbr};
                    check_recurrent(&gru);
                }
            }
}

/* ---- Split ---- */
static void test_split(void **state)
{
    (void)state;
    int64_t xd[3] = {5, 12, 7}, sd[1] = {3};
    const int64_t sizes[3] = {3, 4, 5};
    for (int t = 0; t < 2; t++) {
        lt_dtype dt = t ? LT_F64 : LT_F32;
        /* the sizes as an input (opset 13) along axis 1 */
        tu_graph g = tu_single(LT_OP_SPLIT, 13, 2, 3);
        tu_attr_int(&g, "axis", 1);
        lt_value *in[2] = {tu_rand(dt, 3, xd, -1, 1, 6001 + (uint64_t)t), ints(1, sd, sizes)};
        check(&g, 2, in, 0.0, t ? "Split float64, sizes 3 4 5 on axis 1" : "Split float32, sizes 3 4 5 on axis 1");
        tu_free(&g);
        /* num_outputs (opset 18) along the last axis: chunks 3, 3, 1 */
        tu_graph g18 = tu_single(LT_OP_SPLIT, 18, 1, 3);
        tu_attr_int(&g18, "axis", -1);
        tu_attr_int(&g18, "num_outputs", 3);
        check(&g18, 1, in, 0.0, "Split num_outputs 3 on axis -1");
        tu_free(&g18);
        free_all(2, in);
    }
}

/* ---- FusedElementwise ---- */
/* every code of ir/fuse_elementwise.h over full inputs, a row (a bias
 * along the last axis) and one element, four outputs */
static void test_fused(void **state)
{
    (void)state;
    int64_t xd[2] = {37, 129}, rd[1] = {129}, sd[1] = {1};
    lt_value *in[4] = {tu_rand(LT_F32, 2, xd, -2, 2, 4001), tu_rand(LT_F32, 2, xd, 0.5, 1.5, 4002),
                       tu_rand(LT_F32, 1, rd, -1, 1, 4003), tu_rand(LT_F32, 1, sd, 1, 2, 4004)};
    /* registers 0-3 the inputs, 4.. the steps */
    const int64_t prog[] = {
        2, 0, 1,  /* 4: x0 * x1 */
        0, 4, 2,  /* 5: + row */
        7, 5, -1, /* 6: tanh */
        8, 0, -1, /* 7: sigmoid x0 */
        1, 6, 7,  /* 8: 6 - 7 */
        6, 8, -1, /* 9: erf */
        3, 9, 3,  /* 10: / scalar */
        9, 1, -1, /* 11: sqrt x1 */
        10, 11, -1, /* 12: reciprocal */
        4, 12, -1, /* 13: neg */
        5, 13, -1, /* 14: exp */
        11, 5, -1, /* 15: softplus */
    };
    const int64_t outs[4] = {10, 14, 6, 15};
    tu_graph g = tu_single(LT_OP_FUSED_ELEMENTWISE, 13, 4, 4);
    tu_attr_ints(&g, "program", (int)(sizeof prog / sizeof *prog), prog);
    tu_attr_ints(&g, "outputs", 4, outs);
    check(&g, 4, in, 1e-5, "FusedElementwise, every code");
    tu_free(&g);
    free_all(4, in);
}

/* ---- the CPU's semantics at the edges (tests for review A's findings) ---- */
/* Before opset 7, broadcast=1 lays B against A from axis on (without the
 * attribute, against A's trailing dims): each arithmetic op, Pow and two
 * comparisons, float32 and float64; an axis that does not fit is refused as
 * the CPU refuses it (lt_ew_legacy_bcast). */
static void test_legacy_broadcast(void **state)
{
    (void)state;
    static const lt_op ops[] = {LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_DIV, LT_OP_POW, LT_OP_GREATER, LT_OP_LESS};
    static const struct {
        int ar, br;
        int64_t ad[4], bd[4];
        bool has_axis;
        int axis;
    } cases[] = {
        {3, 1, {2, 3, 3}, {3}, true, 1},         /* along axis 1, not the last */
        {4, 2, {2, 3, 4, 5}, {3, 4}, true, 1},   /* numpy would not broadcast these */
        {4, 2, {2, 3, 4, 5}, {3, 4}, true, -3},  /* the same axis counted from the end */
        {4, 1, {2, 3, 4, 5}, {2}, true, 0},
        {4, 2, {2, 3, 4, 5}, {4, 5}, false, 0},  /* the default: the trailing dims */
    };
    for (int t = 0; t < 2; t++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
                lt_dtype dt = t ? LT_F64 : LT_F32;
                tu_graph g = tu_single(ops[i], 6, 2, 1);
                tu_attr_int(&g, "broadcast", 1);
                if (cases[c].has_axis)
                    tu_attr_int(&g, "axis", cases[c].axis);
                uint64_t seed = 1900 + 100 * (uint64_t)t + 10 * c + i;
                lt_value *in[2] = {tu_rand(dt, cases[c].ar, cases[c].ad, 0.5, 2.0, seed),
                                   tu_rand(dt, cases[c].br, cases[c].bd, 0.5, 2.0, seed + 1000)};
                char what[96];
                snprintf(what, sizeof what, "%s opset 6 %s, broadcast case %zu", lt_op_names[ops[i]],
                         lt_dtype_name(dt), c);
                check(&g, 2, in, tol(dt), what);
                free_all(2, in);
                tu_free(&g);
            }
    int64_t ad[2] = {2, 3}, bd[2] = {3, 4};
    tu_graph g = tu_single(LT_OP_ADD, 6, 2, 1);
    tu_attr_int(&g, "broadcast", 1);
    tu_attr_int(&g, "axis", 1);
    lt_value *in[2] = {tu_rand(LT_F32, 2, ad, -1, 1, 1990), tu_rand(LT_F32, 2, bd, -1, 1, 1991)};
    check_invalid(&g, 2, in, LT_F32, 2, ad, "Add opset 6, broadcast axis past A's rank");
    free_all(2, in);
    tu_free(&g);
}

/* NaN as the CPU treats it: Relu keeps it (as the other activations do);
 * MaxPool takes the first maximum in scan order by v > m, so a NaN wins
 * only as its window's first tap, and MaxPoolGrad sends dy where the
 * forward's maximum was. */
static void test_nan_rules(void **state)
{
    (void)state;
    static const lt_op acts[] = {LT_OP_RELU, LT_OP_LEAKY_RELU, LT_OP_ELU, LT_OP_SOFTPLUS, LT_OP_GELU, LT_OP_SIGMOID};
    int64_t d[1] = {64};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            lt_value *in[1] = {tu_rand(dt, 1, d, -2, 2, 2100 + (uint64_t)t)};
            for (int64_t j = 0; j < d[0]; j += 5)
                lt_tensor_set_f64(&in[0]->t, j, NAN);
            tu_graph g = tu_single(acts[i], 20, 1, 1);
            char what[64];
            snprintf(what, sizeof what, "%s %s with NaNs", lt_op_names[acts[i]], lt_dtype_name(dt));
            check(&g, 1, in, tol(dt), what);
            free_all(1, in);
            tu_free(&g);
        }
    int64_t xd[4] = {2, 3, 9, 8}, k2[2] = {2, 2}, k3[2] = {3, 3}, s2[2] = {2, 2}, s1[2] = {1, 1}, p1[4] = {1, 1, 1, 1};
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            /* NaNs at every 7th element: some first taps, most not */
            lt_value *in[1] = {tu_rand(dt, 4, xd, -2, 2, 2200 + (uint64_t)c)};
            for (int64_t j = 3; j < in[0]->t.numel; j += 7)
                lt_tensor_set_f64(&in[0]->t, j, NAN);
            tu_graph g = tu_single(LT_OP_MAX_POOL, 12, 1, 1), gg = tu_single(LT_OP_MAX_POOL_GRAD, 12, 2, 1);
            tu_graph *both[2] = {&g, &gg};
            for (int b = 0; b < 2; b++) {
                tu_attr_ints(both[b], "kernel_shape", 2, c ? k3 : k2);
                tu_attr_ints(both[b], "strides", 2, c == 2 ? s1 : s2);
                if (c >= 1)
                    tu_attr_ints(both[b], "pads", 4, p1);
            }
            char what[64];
            snprintf(what, sizeof what, "MaxPool %s with NaNs, case %d", lt_dtype_name(dt), c);
            check(&g, 1, in, tol(dt), what);
            lt_err err;
            lt_value *y[1] = {NULL};
            setenv("LANTERN_BACKEND", "cpu", 1);
            assert_int_equal(tu_run(&g, in, y, &err), LT_OK);
            lt_value *gin[2] = {tu_rand(dt, 4, y[0]->t.dims, -1, 1, 2250 + (uint64_t)c), in[0]};
            snprintf(what, sizeof what, "%s %s with NaNs, case %d", lt_op_names[gg.node->op], lt_dtype_name(dt), c);
            check(&gg, 2, gin, tol(dt), what);
            lt_value_free(gin[0]);
            lt_value_free(y[0]);
            free_all(1, in);
            tu_free(&g);
            tu_free(&gg);
        }
}

/* Where the naive forms lose precision, against the CPU's: Elu near 0
 * (expm1, not exp(x) - 1), Softplus float64 past 20 (x + log1p(exp(-x)),
 * no cutoff), exact Gelu for x << 0 (erfc(-t), not 1 + erf(t)). */
static void test_precise_activations(void **state)
{
    (void)state;
    static const struct {
        lt_op op;
        lt_dtype dt;
        double lo, hi, rtol;
    } cases[] = {
        {LT_OP_ELU, LT_F32, -1e-6, -1e-8, 1e-4},  {LT_OP_ELU, LT_F64, -1e-9, -1e-12, 1e-10},
        {LT_OP_SOFTPLUS, LT_F64, 18, 40, 1e-13}, {LT_OP_SOFTPLUS, LT_F32, -30, 30, 1e-4},
        {LT_OP_SOFTPLUS, LT_F64, -40, 40, 1e-10}, {LT_OP_GELU, LT_F32, -6, -3, 1e-4},
        {LT_OP_GELU, LT_F64, -9, -5, 1e-10},
    };
    int64_t d[1] = {97};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tu_graph g = tu_single(cases[i].op, 20, 1, 1);
        lt_value *in[1] = {tu_rand(cases[i].dt, 1, d, cases[i].lo, cases[i].hi, 2300 + i)};
        char what[96];
        snprintf(what, sizeof what, "%s %s on [%g, %g]", lt_op_names[cases[i].op], lt_dtype_name(cases[i].dt),
                 cases[i].lo, cases[i].hi);
        check(&g, 1, in, cases[i].rtol, what);
        free_all(1, in);
        tu_free(&g);
    }
}

/* The CPU's refusals, made by the kernels with the same status and message:
 * Gelu's approximate, two input types to Add, an axes input that is not
 * 1-D integers, GlobalAveragePool without N and C. */
static void test_refusals(void **state)
{
    (void)state;
    int64_t d[2] = {3, 4}, one[1] = {4};
    tu_graph gg = tu_single(LT_OP_GELU, 20, 1, 1);
    tu_attr_str(&gg, "approximate", "sigmoid");
    lt_value *gin[1] = {tu_rand(LT_F32, 2, d, -1, 1, 2400)};
    check_invalid(&gg, 1, gin, LT_F32, 2, d, "Gelu approximate 'sigmoid'");
    tu_free(&gg);
    tu_graph ga = tu_single(LT_OP_ADD, 14, 2, 1);
    lt_value *ain[2] = {gin[0], tu_rand(LT_F64, 2, d, -1, 1, 2401)};
    check_invalid(&ga, 2, ain, LT_F32, 2, d, "Add float32 + float64");
    lt_value_free(ain[1]);
    tu_free(&ga);
    int64_t a2[2] = {1, 1}, a1[1] = {1}, od[1] = {3};
    const int64_t ax2[1] = {1};
    for (int bad = 0; bad < 2; bad++) {
        tu_graph gr = tu_single(LT_OP_REDUCE_SUM, 13, 2, 1);
        tu_attr_int(&gr, "keepdims", 0);
        lt_value *rin[2] = {gin[0], bad ? ints(2, a2, ax2) : tu_from(LT_F32, 1, a1, (double[]){1})};
        check_invalid(&gr, 2, rin, LT_F32, 1, od, bad ? "ReduceSum, axes of rank 2" : "ReduceSum, float axes");
        lt_value_free(rin[1]);
        tu_free(&gr);
    }
    tu_graph gp = tu_single(LT_OP_GLOBAL_AVERAGE_POOL, 13, 1, 1);
    lt_value *pin[1] = {tu_rand(LT_F32, 1, one, -1, 1, 2402)};
    check_invalid(&gp, 1, pin, LT_F32, 1, one, "GlobalAveragePool of rank 1");
    free_all(1, pin);
    tu_free(&gp);
    free_all(1, gin);
}

/* Reductions over nothing, as on the CPU: ReduceMean NaN (0/0), ReduceSum
 * 0, GlobalAveragePool 0 on empty planes and a copy of an (N, C) input; the
 * losses' mean NaN when every target is ignored or there are none (sum 0),
 * their gradients 0. */
static void test_empty_reductions(void **state)
{
    (void)state;
    int64_t xd[3] = {2, 0, 3}, one[1] = {1};
    const int64_t ax1[1] = {1};
    for (int t = 0; t < 2; t++)
        for (int keep = 0; keep < 2; keep++) {
            lt_dtype dt = t ? LT_F64 : LT_F32;
            tu_graph gm = tu_single(LT_OP_REDUCE_MEAN, 13, 1, 1);
            tu_attr_ints(&gm, "axes", 1, ax1);
            tu_attr_int(&gm, "keepdims", keep);
            lt_value *in[2] = {tu_rand(dt, 3, xd, -1, 1, 2500), ints(1, one, ax1)};
            check(&gm, 1, in, 0, "ReduceMean over an empty axis");
            tu_free(&gm);
            tu_graph gs = tu_single(LT_OP_REDUCE_SUM, 13, 2, 1);
            tu_attr_int(&gs, "keepdims", keep);
            check(&gs, 2, in, 0, "ReduceSum over an empty axis");
            tu_free(&gs);
            free_all(2, in);
        }
    int64_t pd2[2] = {3, 4}, pd4[4] = {2, 3, 0, 4};
    for (int t = 0; t < 2; t++) {
        lt_dtype dt = t ? LT_F64 : LT_F32;
        tu_graph gp = tu_single(LT_OP_GLOBAL_AVERAGE_POOL, 13, 1, 1);
        lt_value *p2[1] = {tu_rand(dt, 2, pd2, -1, 1, 2510)}, *p4[1] = {tu_rand(dt, 4, pd4, -1, 1, 2511)};
        check(&gp, 1, p2, tol(dt), "GlobalAveragePool of (N, C)");
        check(&gp, 1, p4, 0, "GlobalAveragePool of empty planes");
        free_all(1, p2);
        free_all(1, p4);
        tu_free(&gp);
    }
    int64_t x4[2] = {4, 5}, t4[1] = {4}, x0[2] = {0, 5}, t0[1] = {0}, l1 = 1;
    const int64_t ign[4] = {2, 2, 2, 2};
    static const char *const reds[] = {"mean", "sum"};
    for (int none = 0; none < 2; none++) /* none: no positions, else every target ignored */
        for (int r = 0; r < 2; r++)
            for (int sce = 0; sce < 2; sce++) {
                lt_op op = sce ? LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS : LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS;
                tu_graph g = tu_single(op, 13, 2, 1);
                tu_attr_str(&g, "reduction", reds[r]);
                tu_attr_int(&g, "ignore_index", 2);
                lt_value *in[2] = {tu_rand(LT_F32, 2, none ? x0 : x4, -3, 3, 2520 + (uint64_t)r),
                                   ints(1, none ? t0 : t4, ign)};
                char what[96];
                snprintf(what, sizeof what, "%s %s, %s", lt_op_names[op], reds[r],
                         none ? "no positions" : "every target ignored");
                check(&g, 2, in, 0, what);
                tu_graph gg = tu_single(sce ? LT_OP_SCE_LOSS_GRAD : LT_OP_NLL_LOSS_GRAD, 13, 3, 1);
                tu_attr_str(&gg, "reduction", reds[r]);
                tu_attr_int(&gg, "ignore_index", 2);
                lt_value *dl = tu_rand(LT_F32, 0, &l1, 0.5, 1.5, 2530);
                lt_value *gin[3] = {dl, in[0], in[1]};
                snprintf(what, sizeof what, "%s %s, %s", lt_op_names[gg.node->op], reds[r],
                         none ? "no positions" : "every target ignored");
                check(&gg, 3, gin, 0, what);
                lt_value_free(dl);
                free_all(2, in);
                tu_free(&g);
                tu_free(&gg);
            }
}

/* A bool ConstantOfShape (a mask) is filled on the device, true and false;
 * float values are filled by their bytes (-0.0 stays negative). */
static void test_constant_of_shape_bool(void **state)
{
    (void)state;
    int64_t sd[1] = {3}, shape[3] = {2, 3, 41};
    for (int v = 0; v < 3; v++) {
        tu_graph g = tu_single(LT_OP_CONSTANT_OF_SHAPE, 20, 1, 1);
        tu_attr_tensor1(&g, "value", v < 2 ? LT_BOOL : LT_F64, v == 1 ? 1.0 : v == 2 ? -0.0 : 0.0);
        lt_value *in[1] = {ints(1, sd, shape)};
        check(&g, 1, in, 0.0, v == 0 ? "ConstantOfShape bool false" : v == 1 ? "ConstantOfShape bool true"
                                                                              : "ConstantOfShape float64 -0.0");
        if (v == 2) { /* the sign bit came through */
            lt_err err;
            lt_value *y[1] = {NULL};
            setenv("LANTERN_BACKEND", "cuda", 1);
            assert_int_equal(tu_run(&g, in, y, &err), LT_OK);
            setenv("LANTERN_BACKEND", "cpu", 1);
            assert_true(signbit(tu_get(y[0], 0)));
            lt_value_free(y[0]);
        }
        free_all(1, in);
        tu_free(&g);
    }
}

/* Pow of a float32 base and a float64 exponent (and the reverse): the cuda
 * backend leaves the node to the host, which computes it as the CPU does. */
static void test_pow_mixed(void **state)
{
    (void)state;
    int64_t d[2] = {4, 6};
    for (int r = 0; r < 2; r++) {
        lt_dtype bt = r ? LT_F64 : LT_F32, et = r ? LT_F32 : LT_F64;
        tu_graph g = tu_single(LT_OP_POW, 15, 2, 1);
        lt_value *in[2] = {tu_rand(bt, 2, d, 0.5, 2, 2600), tu_rand(et, 2, d, -2, 2, 2601)};
        for (int j = 0; j < 2; j++)
            lt_type_tensor(&g.node->in[j]->type, in[j]->t.dtype, 2, d);
        lt_type_tensor(&g.node->out[0]->type, bt, 2, d);
        uint64_t mask;
        assert_null(lt_cuda_kernel_for(g.node, &mask));
        lt_err err;
        lt_value *want[1] = {NULL}, *got[1] = {NULL};
        setenv("LANTERN_BACKEND", "cpu", 1);
        assert_int_equal(tu_run(&g, in, want, &err), LT_OK);
        setenv("LANTERN_BACKEND", "cuda", 1);
        if (tu_run(&g, in, got, &err) != LT_OK)
            fail_msg("Pow %s ^ %s under cuda: %s", lt_dtype_name(bt), lt_dtype_name(et), err.msg);
        setenv("LANTERN_BACKEND", "cpu", 1);
        assert_int_equal(tu_last_copies.host_nodes, 1);
        assert_int_equal(got[0]->t.dtype, bt);
        for (int64_t i = 0; i < got[0]->t.numel; i++)
            assert_true(tu_get(got[0], i) == tu_get(want[0], i));
        lt_value_free(want[0]);
        lt_value_free(got[0]);
        free_all(2, in);
        tu_free(&g);
    }
}

/* Concat and Split by rows: one row (outer 1, one plain copy), several
 * (a 2-D copy), bool data. With LANTERN_CUDA_BIG=1 also rows over
 * 2^31 - 1 bytes apart, past cudaMemcpy2D's largest pitch (about 13 GB of
 * host memory and 9 GB on the device). */
static void test_concat_split_rows(void **state)
{
    (void)state;
    int64_t ad[3] = {2, 3, 4}, bd[3] = {5, 3, 4}, sd[1] = {2};
    const int64_t sizes[2] = {2, 5};
    for (int t = 0; t < 3; t++) {
        lt_dtype dt = t == 0 ? LT_F32 : t == 1 ? LT_F64 : LT_BOOL;
        lt_value *in[2] = {tu_rand(dt, 3, ad, t == 2 ? 0 : -1, t == 2 ? 2 : 1, 2700),
                           tu_rand(dt, 3, bd, t == 2 ? 0 : -1, t == 2 ? 2 : 1, 2701)};
        for (int axis = 0; axis < 2; axis++) {
            tu_graph g = tu_single(LT_OP_CONCAT, 13, 2, 1);
            tu_attr_int(&g, "axis", axis);
            lt_value *cin[2] = {in[0], axis ? tu_rand(dt, 3, (int64_t[]){2, 7, 4}, 0, 2, 2702) : in[1]};
            char what[64];
            snprintf(what, sizeof what, "Concat %s on axis %d", lt_dtype_name(dt), axis);
            check(&g, 2, cin, 0, what);
            if (axis)
                lt_value_free(cin[1]);
            tu_free(&g);
        }
        lt_err err;
        lt_value *cat[1] = {NULL};
        tu_graph gc = tu_single(LT_OP_CONCAT, 13, 2, 1);
        tu_attr_int(&gc, "axis", 0);
        setenv("LANTERN_BACKEND", "cpu", 1);
        assert_int_equal(tu_run(&gc, in, cat, &err), LT_OK);
        tu_graph gs = tu_single(LT_OP_SPLIT, 13, 2, 2);
        tu_attr_int(&gs, "axis", 0);
        lt_value *sin[2] = {cat[0], ints(1, sd, sizes)};
        check(&gs, 2, sin, 0, "Split on axis 0");
        free_all(2, sin);
        tu_free(&gs);
        tu_free(&gc);
        free_all(2, in);
    }
    const char *big = getenv("LANTERN_CUDA_BIG");
    if (!big || strcmp(big, "1") != 0)
        return;
    /* bool [2, 2^31 + 64] and [2, 16] on axis 1: the output's rows are
     * over 2^31 - 1 bytes apart; the Split of it back reads such rows */
    int64_t w = ((int64_t)1 << 31) + 64, xd[2] = {2, w}, yd[2] = {2, 16}, od[2] = {2, w + 16}, two[1] = {2};
    const int64_t parts[2] = {w, 16};
    lt_err err;
    lt_value *in[2] = {lt_value_new_tensor(), tu_rand(LT_BOOL, 2, yd, 0, 2, 2710)};
    assert_int_equal(lt_tensor_alloc(&in[0]->t, LT_BOOL, 2, xd, &err), LT_OK);
    uint8_t *p = in[0]->t.data;
    for (int64_t i = 0; i < 2 * w; i++)
        p[i] = (uint8_t)(((uint64_t)i * 0x9E3779B97F4A7C15ull) >> 63);
    tu_graph g = tu_single(LT_OP_CONCAT, 13, 2, 1);
    tu_attr_int(&g, "axis", 1);
    lt_type_tensor(&g.node->in[0]->type, LT_BOOL, 2, xd);
    lt_type_tensor(&g.node->in[1]->type, LT_BOOL, 2, yd);
    lt_type_tensor(&g.node->out[0]->type, LT_BOOL, 2, od);
    lt_value *want[1] = {NULL}, *got[1] = {NULL};
    setenv("LANTERN_BACKEND", "cpu", 1);
    assert_int_equal(tu_run(&g, in, want, &err), LT_OK);
    setenv("LANTERN_BACKEND", "cuda", 1);
    if (tu_run(&g, in, got, &err) != LT_OK)
        fail_msg("Concat with rows of 2^31 + 80 bytes on cuda: %s", err.msg);
    setenv("LANTERN_BACKEND", "cpu", 1);
    assert_int_equal(tu_last_copies.device_nodes, 1);
    assert_true(memcmp(want[0]->t.data, got[0]->t.data, (size_t)(2 * (w + 16))) == 0);
    lt_value_free(got[0]);
    tu_free(&g);
    tu_graph gs = tu_single(LT_OP_SPLIT, 13, 2, 2);
    tu_attr_int(&gs, "axis", 1);
    lt_value *sin[2] = {want[0], ints(1, two, parts)}, *sout[2] = {NULL, NULL};
    lt_type_tensor(&gs.node->in[0]->type, LT_BOOL, 2, od);
    lt_type_tensor(&gs.node->in[1]->type, LT_I64, 1, two);
    lt_type_tensor(&gs.node->out[0]->type, LT_BOOL, 2, xd);
    lt_type_tensor(&gs.node->out[1]->type, LT_BOOL, 2, yd);
    setenv("LANTERN_BACKEND", "cuda", 1);
    if (tu_run(&gs, sin, sout, &err) != LT_OK)
        fail_msg("Split of rows of 2^31 + 80 bytes on cuda: %s", err.msg);
    setenv("LANTERN_BACKEND", "cpu", 1);
    assert_int_equal(tu_last_copies.device_nodes, 1);
    for (int o = 0; o < 2; o++) /* the Concat's inputs back, as the CPU's Split gives them */
        assert_true(memcmp(sout[o]->t.data, in[o]->t.data, lt_tensor_nbytes(&in[o]->t)) == 0);
    free_all(2, sout);
    free_all(2, sin);
    free_all(2, in);
    tu_free(&gs);
}

int main(void)
{
    lt_err err;
    setenv("LANTERN_CUDA_GUARD", "1", 1);
    setenv("LANTERN_CUDA_RNN", "1", 1); /* the kernels on trial */
    setenv("LANTERN_CUDA_FUSED", "1", 1);
    setenv("LANTERN_TF32", "0", 1);
    cuda = lt_backend_open("cuda", &err);
    if (!cuda)
        return cuda_suite_unopened(err.msg);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary), cmocka_unit_test(test_unary),  cmocka_unit_test(test_where), cmocka_unit_test(test_relu_grad),
        cmocka_unit_test(test_gemm),   cmocka_unit_test(test_matmul), cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_softmax), cmocka_unit_test(test_losses), cmocka_unit_test(test_pool),
        cmocka_unit_test(test_conv),   cmocka_unit_test(test_batch_norm), cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_movement), cmocka_unit_test(test_gather_grad_padding),
        cmocka_unit_test(test_gather_one_index),
        cmocka_unit_test(test_index_out_of_range), cmocka_unit_test(test_index), cmocka_unit_test(test_cells),
        cmocka_unit_test(test_constant_of_shape), cmocka_unit_test(test_recurrent), cmocka_unit_test(test_split),
        cmocka_unit_test(test_fused),  cmocka_unit_test(test_legacy_broadcast), cmocka_unit_test(test_nan_rules),
        cmocka_unit_test(test_precise_activations), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_empty_reductions), cmocka_unit_test(test_constant_of_shape_bool),
        cmocka_unit_test(test_pow_mixed), cmocka_unit_test(test_concat_split_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
