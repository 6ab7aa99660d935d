/* BatchNormalization in training mode on float32 (the blocked kernels of
 * norm_batch.c) at realistic sizes: batch >= 16, odd channel counts and
 * spatial sizes from 1x1 up, blocks that end mid-way and the boundary where
 * large channels go to the general kernels. The forward's output, batch
 * statistics and running statistics against the direct float64 formula;
 * the gradient's dx, dscale and dbias against float64 central finite
 * differences through the float64 forward and against the closed form in
 * float64; one thread and two give the same bits. */
#include "test_grad_nn.h"
#include <omp.h>
#include <string.h>

typedef struct shape {
    const char *name;
    int rank;
    int64_t dims[5];
} shape;

static const shape shapes[] = {
    {"16x67x1x1 (one element a channel, many a block)", 4, {16, 67, 1, 1}},
    {"17x5x7x9 (odd spatial size)", 4, {17, 5, 7, 9}},
    {"32x130x2x2 (blocks ending mid-way)", 4, {32, 130, 2, 2}},
    {"16x3x128x128 (the largest channel for the blocked path)", 4, {16, 3, 128, 128}},
    {"16x2x129x129 (a larger channel: general path)", 4, {16, 2, 129, 129}},
    {"19x11 (rank 2)", 2, {19, 11}},
    {"16x6x3x5x3 (rank 5)", 5, {16, 6, 3, 5, 3}},
};

static void attrs(tu_graph *g)
{
    tu_attr_int(g, "training_mode", 1);
    tu_attr_float(g, "epsilon", 1e-3f);
    tu_attr_float(g, "momentum", 0.8f);
}

/* x with a per-channel offset (so the mean matters) and spread */
static lt_value *make_x(lt_dtype dt, const shape *sh, uint64_t seed)
{
    lt_value *r = tu_rand(LT_F64, sh->rank, sh->dims, -1, 1, seed);
    int64_t c = sh->dims[1], s = r->t.numel / sh->dims[0] / c;
    double *v = malloc(sizeof(double) * (size_t)r->t.numel);
    for (int64_t i = 0; i < r->t.numel; i++) {
        int64_t j = i / s % c;
        v[i] = (double)(j % 5) - 2 + (0.5 + (double)(j % 3)) * tu_get(r, i);
    }
    lt_value *x = tu_from(dt, sh->rank, sh->dims, v);
    free(v);
    lt_value_free(r);
    return x;
}

typedef struct inputs {
    lt_value *x, *sc, *bi, *me, *va;
} inputs;

static inputs make_inputs(lt_dtype dt, const shape *sh, uint64_t seed)
{
    int64_t c = sh->dims[1];
    inputs in = {make_x(dt, sh, seed), tu_rand(dt, 1, &c, 0.5, 1.5, seed + 1), tu_rand(dt, 1, &c, -1, 1, seed + 2),
                 tu_rand(dt, 1, &c, -.5, .5, seed + 3), tu_rand(dt, 1, &c, 0.5, 1.5, seed + 4)};
    return in;
}

static void free_inputs(inputs *in)
{
    lt_value_free(in->x);
    lt_value_free(in->sc);
    lt_value_free(in->bi);
    lt_value_free(in->me);
    lt_value_free(in->va);
}

/* batch mean and biased variance per channel, in float64 from x's values */
static void batch_stats(const lt_value *x, int64_t n, int64_t c, int64_t s, double *mean, double *var)
{
    for (int64_t j = 0; j < c; j++) {
        double sum = 0, q = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = 0; e < s; e++)
                sum += tu_get(x, (i * c + j) * s + e);
        mean[j] = sum / (double)(n * s);
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = 0; e < s; e++) {
                double d = tu_get(x, (i * c + j) * s + e) - mean[j];
                q += d * d;
            }
        var[j] = q / (double)(n * s);
    }
}

static void forward_case(const shape *sh, uint64_t seed)
{
    print_message("forward %s\n", sh->name);
    int64_t n = sh->dims[0], c = sh->dims[1], s = 1;
    for (int d = 2; d < sh->rank; d++)
        s *= sh->dims[d];
    inputs in = make_inputs(LT_F32, sh, seed);
    tu_graph g = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 3);
    attrs(&g);
    lt_value *vin[5] = {in.x, in.sc, in.bi, in.me, in.va}, *out[3] = {NULL};
    lt_err err;
    if (tu_run(&g, vin, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double *mean = malloc(sizeof(double) * (size_t)c), *var = malloc(sizeof(double) * (size_t)c);
    double *want = malloc(sizeof(double) * (size_t)in.x->t.numel);
    batch_stats(in.x, n, c, s, mean, var);
    for (int64_t q = 0; q < in.x->t.numel; q++) {
        int64_t j = q / s % c;
        want[q] = (tu_get(in.x, q) - mean[j]) / sqrt(var[j] + 1e-3) * tu_get(in.sc, j) + tu_get(in.bi, j);
    }
    tu_assert_close(out[0], want, in.x->t.numel, 1e-5, 1e-5, seed);
    double *rm = malloc(sizeof(double) * (size_t)c), *rv = malloc(sizeof(double) * (size_t)c);
    for (int64_t j = 0; j < c; j++) {
        rm[j] = 0.8 * tu_get(in.me, j) + 0.2 * mean[j];
        rv[j] = 0.8 * tu_get(in.va, j) + 0.2 * var[j];
    }
    tu_assert_close(out[1], rm, c, 1e-6, 1e-6, seed);
    tu_assert_close(out[2], rv, c, 1e-6, 1e-6, seed);
    /* two threads give the same bits as one */
    int was = omp_get_max_threads();
    for (int t = 1; t <= 2; t++) {
        omp_set_num_threads(t);
        lt_value *o2[3] = {NULL};
        assert_int_equal(tu_run(&g, vin, o2, &err), LT_OK);
        for (int i = 0; i < 3; i++) {
            assert_memory_equal(o2[i]->t.data, out[i]->t.data, (size_t)out[i]->t.numel * sizeof(float));
            lt_value_free(o2[i]);
        }
    }
    omp_set_num_threads(was);
    for (int i = 0; i < 3; i++)
        lt_value_free(out[i]);
    free(mean);
    free(var);
    free(want);
    free(rm);
    free(rv);
    free_inputs(&in);
    tu_free(&g);
}

/* dx, dscale, dbias of the float32 kernel against float64 finite
 * differences through the float64 forward and the closed form in float64 */
static void gradient_case(const shape *sh, uint64_t seed)
{
    print_message("gradient %s\n", sh->name);
    int64_t n = sh->dims[0], c = sh->dims[1], s = 1;
    for (int d = 2; d < sh->rank; d++)
        s *= sh->dims[d];
    inputs i64 = make_inputs(LT_F64, sh, seed);
    /* the float32 run sees exactly these values */
    lt_value *x32 = gn_cast(i64.x, LT_F32), *x64 = gn_cast(x32, LT_F64);
    lt_value_free(i64.x);
    i64.x = x64;
    lt_value *dy64 = tu_rand(LT_F64, sh->rank, sh->dims, -1, 1, seed + 9);
    lt_value *dy32 = gn_cast(dy64, LT_F32), *sc32 = gn_cast(i64.sc, LT_F32), *bi32 = gn_cast(i64.bi, LT_F32);
    lt_value *me32 = gn_cast(i64.me, LT_F32), *va32 = gn_cast(i64.va, LT_F32);
    lt_value_free(dy64);
    dy64 = gn_cast(dy32, LT_F64);
    lt_value_free(i64.sc);
    i64.sc = gn_cast(sc32, LT_F64);
    tu_graph gg = tu_single(LT_OP_BATCH_NORM_GRAD, 15, 6, 3);
    attrs(&gg);
    lt_value *gin[6] = {dy32, x32, sc32, bi32, me32, va32}, *gout[3] = {NULL};
    lt_err err;
    if (tu_run(&gg, gin, gout, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int o = 0; o < 3; o++)
        assert_int_equal(gout[o]->t.dtype, LT_F32);

    /* the closed form: dx = istd (g dy - mean(g dy) - xhat mean(g dy xhat)) */
    double *mean = malloc(sizeof(double) * (size_t)c), *var = malloc(sizeof(double) * (size_t)c);
    double *sdy = calloc((size_t)c, sizeof(double)), *sdyx = calloc((size_t)c, sizeof(double));
    double *want = malloc(sizeof(double) * (size_t)x32->t.numel), M = (double)(n * s);
    batch_stats(x64, n, c, s, mean, var);
    for (int64_t q = 0; q < x64->t.numel; q++) {
        int64_t j = q / s % c;
        double xh = (tu_get(x64, q) - mean[j]) / sqrt(var[j] + 1e-3);
        sdy[j] += tu_get(dy64, q);
        sdyx[j] += tu_get(dy64, q) * xh;
    }
    for (int64_t q = 0; q < x64->t.numel; q++) {
        int64_t j = q / s % c;
        double istd = 1 / sqrt(var[j] + 1e-3), xh = (tu_get(x64, q) - mean[j]) * istd, gm = tu_get(i64.sc, j);
        want[q] = istd * gm * (tu_get(dy64, q) - sdy[j] / M - xh * sdyx[j] / M);
    }
    double scale = 0;
    for (int64_t q = 0; q < x64->t.numel; q++)
        scale = fmax(scale, fabs(want[q]));
    tu_assert_close(gout[0], want, x64->t.numel, 1e-4, 1e-4 * scale, seed);
    tu_assert_close(gout[1], sdyx, c, 1e-4, 1e-4 * sqrt(M), seed);
    tu_assert_close(gout[2], sdy, c, 1e-4, 1e-4 * sqrt(M), seed);

    /* finite differences of sum(dy * BatchNormalization(x)) in float64 */
    tu_graph fwd = tu_single(LT_OP_BATCH_NORMALIZATION, 15, 5, 1);
    attrs(&fwd);
    lt_value *fin[5] = {x64, i64.sc, i64.bi, i64.me, i64.va};
    static const char *const what[3] = {"float32 dx", "float32 dscale", "float32 dbias"};
    for (int o = 0; o < 3; o++)
        gn_fd(what[o], &fwd, fin, o, 1, 0, dy64, gout[o], seed, 2e-3);

    /* two threads give the same bits as one */
    int was = omp_get_max_threads();
    for (int t = 1; t <= 2; t++) {
        omp_set_num_threads(t);
        lt_value *o2[3] = {NULL};
        assert_int_equal(tu_run(&gg, gin, o2, &err), LT_OK);
        for (int o = 0; o < 3; o++) {
            assert_memory_equal(o2[o]->t.data, gout[o]->t.data, (size_t)gout[o]->t.numel * sizeof(float));
            lt_value_free(o2[o]);
        }
    }
    omp_set_num_threads(was);
    /* dx alone (dscale and dbias not asked for) is the same */
    tu_graph g1 = tu_single(LT_OP_BATCH_NORM_GRAD, 15, 6, 1);
    attrs(&g1);
    lt_value *o1[1] = {NULL};
    assert_int_equal(tu_run(&g1, gin, o1, &err), LT_OK);
    assert_memory_equal(o1[0]->t.data, gout[0]->t.data, (size_t)gout[0]->t.numel * sizeof(float));
    lt_value_free(o1[0]);
    tu_free(&g1);

    for (int o = 0; o < 3; o++)
        lt_value_free(gout[o]);
    free(mean);
    free(var);
    free(sdy);
    free(sdyx);
    free(want);
    lt_value *own[] = {x32, dy32, dy64, sc32, bi32, me32, va32};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        lt_value_free(own[i]);
    free_inputs(&i64);
    tu_free(&gg);
    tu_free(&fwd);
}

static void bn_forward(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        forward_case(&shapes[i], 500 + 10 * i);
}

static void bn_gradient(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        gradient_case(&shapes[i], 700 + 10 * i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bn_forward),
        cmocka_unit_test(bn_gradient),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
