/* MaxPoolGrad, AveragePoolGrad and LpPoolGrad: central finite differences
 * through the pool kernels in float64 over every attribute variant (fixed
 * seeds), float32 against float64, ties, and bad shapes. */
#include "test_grad_nn.h"
#include <string.h>

typedef enum { MAXP, AVGP, LPP } kind;

typedef struct cfg {
    const char *name;
    kind kind;
    int nsp;
    int64_t n, c;
    int64_t img[4], k[4], s[4], d[4], pads[8];
    const char *auto_pad;
    int ceil_mode, count_pad;
    double p; /* LpPool; 0 for the default */
    int opset;
} cfg;

static const lt_op fwd_op[] = {LT_OP_MAX_POOL, LT_OP_AVERAGE_POOL, LT_OP_LP_POOL};
static const lt_op grad_op[] = {LT_OP_MAX_POOL_GRAD, LT_OP_AVERAGE_POOL_GRAD, LT_OP_LP_POOL_GRAD};

static void set_attrs(tu_graph *g, const cfg *f)
{
    int nsp = f->nsp;
    tu_attr_ints(g, "kernel_shape", nsp, f->k);
    tu_attr_ints(g, "strides", nsp, f->s);
    if (f->d[0])
        tu_attr_ints(g, "dilations", nsp, f->d);
    if (f->auto_pad)
        tu_attr_str(g, "auto_pad", f->auto_pad);
    else
        tu_attr_ints(g, "pads", 2 * nsp, f->pads);
    if (f->ceil_mode)
        tu_attr_int(g, "ceil_mode", 1);
    if (f->count_pad)
        tu_attr_int(g, "count_include_pad", 1);
    if (f->p != 0) {
        if (f->opset == 1)
            tu_attr_float(g, "p", (float)f->p);
        else
            tu_attr_int(g, "p", (int64_t)f->p);
    }
}

/* distinct values (gaps of 2 / numel) in shuffled order, or for LpPool
 * values kept away from the kink of |x| at 0 */
static lt_value *pool_input(const cfg *f, int rank, const int64_t *dims, uint64_t seed)
{
    lt_value *v = tu_rand(LT_F64, rank, dims, 0, 1, seed);
    int64_t n = v->t.numel;
    double *vals = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        vals[i] = -1 + 2.0 * (double)i / (double)n;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(tu_get(v, i) * (double)(i + 1)) % (i + 1);
        double t = vals[i];
        vals[i] = vals[j];
        vals[j] = t;
    }
    for (int64_t i = 0; i < n; i++) {
        double x = vals[i];
        if (f->kind == LPP)
            x = (x < 0 ? -0.3 : 0.3) + 0.7 * x;
        lt_tensor_set_f64(&v->t, i, x);
    }
    free(vals);
    return v;
}

static void run_cfg(const cfg *f, uint64_t seed)
{
    int nsp = f->nsp, r = nsp + 2, opset = f->opset ? f->opset : 12;
    int64_t xd[6] = {f->n, f->c};
    for (int i = 0; i < nsp; i++)
        xd[i + 2] = f->img[i];
    print_message("%s\n", f->name);
    lt_value *x = pool_input(f, r, xd, seed);
    tu_graph fwd = tu_single(fwd_op[f->kind], opset, 1, 1);
    set_attrs(&fwd, f);
    lt_value *fin[1] = {x};
    lt_value *y = gn_run(&fwd, fin, 1, 0);
    lt_value *dy = tu_rand(LT_F64, r, y->t.dims, -1, 1, seed + 1);

    int nin = f->kind == LPP ? 3 : 2;
    tu_graph gg = tu_single(grad_op[f->kind], opset, nin, 1);
    set_attrs(&gg, f);
    lt_value *gin[3] = {dy, x, y};
    lt_value *dx = gn_run(&gg, gin, 1, 0);
    assert_memory_equal(dx->t.dims, x->t.dims, sizeof(int64_t) * r);
    static const char *const names[] = {"MaxPoolGrad", "AveragePoolGrad", "LpPoolGrad"};
    char what[96];
    snprintf(what, sizeof what, "%s dx", names[f->kind]);
    gn_fd(what, &fwd, fin, 0, 1, 0, dy, dx, seed, 1e-5);
    gn_f32_matches("  float32 dx", &gg, gin, nin, 1, 0, dx, 1e-4);
    if (f->kind == LPP) {
        /* without y the kernel recomputes the norms */
        tu_graph g2 = tu_single(grad_op[f->kind], opset, 3, 1);
        set_attrs(&g2, f);
        tu_omit_input(&g2, 2);
        lt_value *in2[3] = {dy, x, NULL};
        lt_value *dx2 = gn_run(&g2, in2, 1, 0);
        double *want = malloc(sizeof(double) * (size_t)dx->t.numel);
        for (int64_t i = 0; i < dx->t.numel; i++)
            want[i] = tu_get(dx, i);
        tu_assert_close(dx2, want, dx->t.numel, 1e-12, 1e-12, seed);
        free(want);
        lt_value_free(dx2);
        tu_free(&g2);
    }
    lt_value_free(dx);
    lt_value_free(dy);
    lt_value_free(y);
    lt_value_free(x);
    tu_free(&fwd);
    tu_free(&gg);
}

static void run_all(const cfg *cases, int n, uint64_t seed0)
{
    for (int i = 0; i < n; i++)
        run_cfg(&cases[i], seed0 + 10 * (uint64_t)i);
}

static void max_pool_grad(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"max 2x2 stride 2", MAXP, 2, 2, 3, {6, 8}, {2, 2}, {2, 2}, {0}, {0}},
        {"max 3x3 stride 2 pads 1 (overlapping)", MAXP, 2, 2, 2, {7, 6}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}},
        {"max ceil_mode", MAXP, 2, 1, 2, {6, 7}, {3, 2}, {2, 2}, {0}, {0, 1, 0, 0}, .ceil_mode = 1},
        {"max dilations 2", MAXP, 2, 1, 2, {7, 8}, {2, 3}, {1, 2}, {2, 2}, {1, 0, 0, 1}},
        {"max SAME_UPPER", MAXP, 2, 1, 2, {5, 6}, {3, 2}, {2, 2}, {0}, {0}, "SAME_UPPER"},
        {"max SAME_LOWER", MAXP, 2, 1, 2, {5, 6}, {3, 2}, {2, 2}, {0}, {0}, "SAME_LOWER"},
        {"max 1-d", MAXP, 1, 2, 2, {11}, {3}, {2}, {0}, {1, 1}},
        {"max 3-d", MAXP, 3, 1, 2, {4, 5, 4}, {2, 3, 2}, {2, 1, 2}, {0}, {0, 1, 0, 0, 1, 1}},
        {"max 3-d dilations, ceil_mode", MAXP, 3, 2, 2, {5, 6, 7}, {2, 2, 3}, {2, 1, 2}, {1, 2, 1},
         {1, 0, 0, 0, 1, 1}, .ceil_mode = 1},
        {"max 3-d over a batch (MaxPool3d(2))", MAXP, 3, 4, 8, {4, 8, 8}, {2, 2, 2}, {2, 2, 2}, {0}, {0}},
        {"max 3-d (1,2,2) windows", MAXP, 3, 2, 3, {3, 6, 6}, {1, 2, 2}, {1, 2, 2}, {0}, {0}},
        {"max 4-d", MAXP, 4, 1, 1, {3, 4, 3, 3}, {2, 2, 2, 2}, {1, 2, 1, 2}, {0}, {0}},
        {"max opset 8 (no dilations)", MAXP, 2, 1, 2, {6, 6}, {2, 2}, {2, 2}, {0}, {0}, .opset = 8},
        {"max parallel", MAXP, 2, 2, 16, {32, 32}, {2, 2}, {2, 2}, {0}, {0}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 1000);
}

static void average_pool_grad(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"avg pads, count_include_pad 0", AVGP, 2, 2, 2, {6, 5}, {3, 3}, {2, 1}, {0}, {1, 1, 1, 0}},
        {"avg pads, count_include_pad 1", AVGP, 2, 2, 2, {6, 5}, {3, 3}, {2, 1}, {0}, {1, 1, 1, 0},
         .count_pad = 1},
        {"avg ceil_mode, count_include_pad 1", AVGP, 2, 1, 2, {6, 7}, {3, 3}, {2, 2}, {0}, {1, 0, 1, 0},
         .ceil_mode = 1, .count_pad = 1},
        {"avg ceil_mode", AVGP, 2, 1, 2, {6, 7}, {3, 2}, {2, 2}, {0}, {0}, .ceil_mode = 1},
        {"avg SAME_LOWER", AVGP, 2, 1, 2, {5, 6}, {3, 2}, {2, 2}, {0}, {0}, "SAME_LOWER"},
        {"avg 1-d", AVGP, 1, 2, 3, {9}, {4}, {2}, {0}, {2, 1}, .count_pad = 1},
        {"avg 3-d", AVGP, 3, 1, 2, {4, 4, 5}, {2, 2, 3}, {2, 1, 2}, {0}, {1, 0, 0, 0, 1, 1}},
        {"avg opset 7", AVGP, 2, 1, 2, {5, 5}, {2, 2}, {1, 1}, {0}, {1, 1, 0, 0}, .count_pad = 1, .opset = 7},
        {"avg parallel", AVGP, 2, 2, 16, {32, 32}, {3, 3}, {2, 2}, {0}, {1, 1, 1, 1}},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 2000);
}

static void lp_pool_grad(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"lp p=2 (default)", LPP, 2, 2, 2, {6, 5}, {2, 2}, {2, 1}, {0}, {0}, .opset = 18},
        {"lp p=1", LPP, 2, 1, 2, {5, 5}, {3, 2}, {1, 2}, {0}, {1, 0, 0, 1}, .p = 1, .opset = 18},
        {"lp p=3, ceil_mode", LPP, 2, 1, 2, {6, 7}, {3, 3}, {2, 2}, {0}, {0}, .ceil_mode = 1, .p = 3,
         .opset = 18},
        {"lp p=3 dilations", LPP, 2, 1, 2, {7, 7}, {2, 2}, {1, 1}, {2, 3}, {0}, .p = 3, .opset = 18},
        {"lp opset 1 (float p)", LPP, 2, 1, 2, {5, 4}, {2, 2}, {1, 1}, {0}, {0}, .p = 3, .opset = 1},
        {"lp 1-d SAME_UPPER", LPP, 1, 2, 2, {9}, {3}, {2}, {0}, {0}, "SAME_UPPER", .p = 2, .opset = 11},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 3000);
}

/* Ties: the first maximum in scan order takes all of dy, as the forward
 * picks it; taps in the padding never do. */
static void max_pool_ties(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 1, 3, 3};
    double xv[9] = {-2, -2, -2, -2, -2, -2, -2, -2, -2};
    lt_value *x = tu_from(LT_F32, 4, xd, xv);
    int64_t k[2] = {2, 2}, s[2] = {1, 1}, pads[4] = {1, 1, 0, 0};
    tu_graph g = tu_single(LT_OP_MAX_POOL_GRAD, 12, 2, 1);
    tu_attr_ints(&g, "kernel_shape", 2, k);
    tu_attr_ints(&g, "strides", 2, s);
    tu_attr_ints(&g, "pads", 4, pads);
    /* output 3x3: window (i, j) starts at (i - 1, j - 1) */
    int64_t yd[4] = {1, 1, 3, 3};
    double dyv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    lt_value *dy = tu_from(LT_F32, 4, yd, dyv);
    lt_value *in[2] = {dy, x};
    lt_value *dx = gn_run(&g, in, 1, 0);
    /* each window's first in-image tap is its top-left clipped corner */
    double want[9] = {1 + 2 + 4 + 5, 3 + 6, 0, 7 + 8, 9, 0, 0, 0, 0};
    tu_assert_close(dx, want, 9, 0, 0, 0);
    lt_value_free(dx);
    lt_value_free(dy);
    lt_value_free(x);
    tu_free(&g);
}

static void pool_grad_errors(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 4, 4}, yd[4] = {1, 2, 3, 2}, k[2] = {2, 2}, s[2] = {2, 2};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 1), *dy = tu_rand(LT_F32, 4, yd, -1, 1, 2);
    lt_value *out[1] = {NULL}, *in[2] = {dy, x};
    lt_err err;
    for (int i = 0; i < 2; i++) {
        tu_graph g = tu_single(i ? LT_OP_AVERAGE_POOL_GRAD : LT_OP_MAX_POOL_GRAD, 12, 2, 1);
        tu_attr_ints(&g, "kernel_shape", 2, k);
        tu_attr_ints(&g, "strides", 2, s);
        assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
        assert_non_null(strstr(err.msg, "dy has shape"));
        tu_free(&g);
    }
    /* no kernel_shape */
    tu_graph g = tu_single(LT_OP_MAX_POOL_GRAD, 12, 2, 1);
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(dy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_pool_grad),  cmocka_unit_test(average_pool_grad), cmocka_unit_test(lp_pool_grad),
        cmocka_unit_test(max_pool_ties),  cmocka_unit_test(pool_grad_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
