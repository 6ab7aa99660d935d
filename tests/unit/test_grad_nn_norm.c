/* BatchNormalizationGrad, InstanceNormalizationGrad, GroupNormalizationGrad,
 * LayerNormalizationGrad and LRNGrad: central finite differences through
 * the forward kernels in float64 (fixed seeds), for every input that has a
 * gradient output, plus float32 against float64. */
#include "test_grad_nn.h"
#include <string.h>

typedef void (*attrs_fn)(tu_graph *g, const void *ctx);

/* A forward node over fin[0..nfin) and its gradient node over gin[0..ngin)
 * with outputs (dx, dparam...); grad output o is checked against forward
 * input map[o]. */
typedef struct check {
    const char *name;
    lt_op fop, gop;
    int opset, nfin, ngin, ngout;
    attrs_fn attrs;
    const void *ctx;
    int map[3];
} check;

static void run_check(const check *c, lt_value **fin, lt_value **gin_tail, int ntail, uint64_t seed)
{
    print_message("%s\n", c->name);
    tu_graph fwd = tu_single(c->fop, c->opset, c->nfin, 1);
    c->attrs(&fwd, c->ctx);
    for (int i = 0; i < c->nfin; i++)
        if (!fin[i])
            tu_omit_input(&fwd, i);
    lt_value *y = gn_run(&fwd, fin, 1, 0);
    lt_value *dy = tu_rand(LT_F64, y->t.rank, y->t.dims, -1, 1, seed);
    /* gradient inputs: dy, then the tail the caller gives */
    lt_value *gin[8] = {dy};
    for (int i = 0; i < ntail; i++)
        gin[i + 1] = gin_tail[i];
    tu_graph gg = tu_single(c->gop, c->opset, c->ngin, c->ngout);
    c->attrs(&gg, c->ctx);
    for (int i = 0; i < c->ngin; i++)
        if (!gin[i])
            tu_omit_input(&gg, i);
    for (int o = 0; o < c->ngout; o++) {
        lt_value *g = gn_run(&gg, gin, c->ngout, o);
        assert_memory_equal(g->t.dims, fin[c->map[o]]->t.dims, sizeof(int64_t) * g->t.rank);
        assert_int_equal(g->t.rank, fin[c->map[o]]->t.rank);
        char what[96];
        snprintf(what, sizeof what, "%s d%s", lt_op_names[c->gop], o == 0 ? "x" : o == 1 ? "scale" : "bias");
        gn_fd(what, &fwd, fin, c->map[o], 1, 0, dy, g, seed, 1e-5);
        gn_f32_matches("  float32", &gg, gin, c->ngin, c->ngout, o, g, 1e-4);
        lt_value_free(g);
    }
    lt_value_free(dy);
    lt_value_free(y);
    tu_free(&fwd);
    tu_free(&gg);
}

/* ---- BatchNormalization ---- */

typedef struct bn_cfg {
    int training, spatial0;
    float eps;
} bn_cfg;

static void bn_attrs(tu_graph *g, const void *ctx)
{
    const bn_cfg *b = ctx;
    if (b->training)
        tu_attr_int(g, "training_mode", 1);
    if (b->spatial0)
        tu_attr_int(g, "spatial", 0);
    if (b->eps > 0)
        tu_attr_float(g, "epsilon", b->eps);
}

static void bn_case(const char *name, int opset, const bn_cfg *b, int rank, const int64_t *xd, uint64_t seed)
{
    int64_t c = xd[1], pd[LT_MAX_RANK] = {c};
    int prank = 1;
    if (b->spatial0) {
        /* per activation: parameters of shape [C, D...] */
        prank = rank - 1;
        memcpy(pd, xd + 1, sizeof(int64_t) * prank);
    }
    lt_value *x = tu_rand(LT_F64, rank, xd, -1, 1, seed), *sc = tu_rand(LT_F64, prank, pd, 0.5, 1.5, seed + 1);
    lt_value *bi = tu_rand(LT_F64, prank, pd, -1, 1, seed + 2), *me = tu_rand(LT_F64, prank, pd, -.5, .5, seed + 3);
    lt_value *va = tu_rand(LT_F64, prank, pd, 0.5, 1.5, seed + 4);
    check ck = {name, LT_OP_BATCH_NORMALIZATION, LT_OP_BATCH_NORM_GRAD, opset, 5, 6, 3, bn_attrs, b, {0, 1, 2}};
    lt_value *fin[5] = {x, sc, bi, me, va}, *tail[5] = {x, sc, bi, me, va};
    run_check(&ck, fin, tail, 5, seed + 5);
    lt_value_free(x);
    lt_value_free(sc);
    lt_value_free(bi);
    lt_value_free(me);
    lt_value_free(va);
}

static void batch_norm_grad(void **state)
{
    (void)state;
    int64_t x4[4] = {3, 4, 3, 2}, x2[2] = {5, 3}, x5[5] = {2, 3, 2, 2, 3}, big[4] = {8, 16, 16, 16};
    bn_cfg train = {1, 0, 0}, infer = {0, 0, 0}, train_eps = {1, 0, 1e-2f}, sp0 = {0, 1, 0};
    bn_case("batch norm, training", 15, &train, 4, x4, 10);
    bn_case("batch norm, training, epsilon 1e-2, rank 2", 15, &train_eps, 2, x2, 20);
    bn_case("batch norm, training, rank 5", 14, &train, 5, x5, 30);
    bn_case("batch norm, inference", 15, &infer, 4, x4, 40);
    bn_case("batch norm, inference, opset 9", 9, &infer, 4, x4, 50);
    bn_case("batch norm, spatial 0 (opset 7)", 7, &sp0, 4, x4, 60);
    bn_case("batch norm, training, parallel", 15, &train, 4, big, 70);
}

/* ---- InstanceNormalization ---- */

static void eps_attr(tu_graph *g, const void *ctx)
{
    const float *eps = ctx;
    if (eps && *eps > 0)
        tu_attr_float(g, "epsilon", *eps);
}

static void instance_norm_grad(void **state)
{
    (void)state;
    int64_t shapes[3][5] = {{2, 3, 4, 3}, {3, 2, 7}, {2, 16, 32, 32}};
    int ranks[3] = {4, 3, 4};
    float eps[3] = {0, 1e-3f, 0};
    for (int i = 0; i < 3; i++) {
        uint64_t seed = 100 + 10 * (uint64_t)i;
        int64_t cd[1] = {shapes[i][1]};
        lt_value *x = tu_rand(LT_F64, ranks[i], shapes[i], -1, 1, seed);
        lt_value *sc = tu_rand(LT_F64, 1, cd, 0.5, 1.5, seed + 1), *bi = tu_rand(LT_F64, 1, cd, -1, 1, seed + 2);
        char name[64];
        snprintf(name, sizeof name, "instance norm, rank %d%s", ranks[i], i == 2 ? ", parallel" : "");
        check ck = {name, LT_OP_INSTANCE_NORMALIZATION, LT_OP_INSTANCE_NORM_GRAD, 6, 3, 3, 3, eps_attr, &eps[i],
                    {0, 1, 2}};
        lt_value *fin[3] = {x, sc, bi}, *tail[2] = {x, sc};
        run_check(&ck, fin, tail, 2, seed + 3);
        lt_value_free(x);
        lt_value_free(sc);
        lt_value_free(bi);
    }
}

/* ---- GroupNormalization ---- */

typedef struct gn_cfg {
    int64_t groups;
    float eps;
} gn_cfg;

static void gn_attrs(tu_graph *g, const void *ctx)
{
    const gn_cfg *c = ctx;
    tu_attr_int(g, "num_groups", c->groups);
    if (c->eps > 0)
        tu_attr_float(g, "epsilon", c->eps);
}

static void group_norm_case(const char *name, int opset, int64_t groups, bool per_channel, int rank,
                            const int64_t *xd, uint64_t seed)
{
    gn_cfg cfg = {groups, 1e-3f};
    int64_t pd[1] = {per_channel ? xd[1] : groups};
    lt_value *x = tu_rand(LT_F64, rank, xd, -1, 1, seed);
    lt_value *sc = tu_rand(LT_F64, 1, pd, 0.5, 1.5, seed + 1), *bi = tu_rand(LT_F64, 1, pd, -1, 1, seed + 2);
    check ck = {name, LT_OP_GROUP_NORMALIZATION, LT_OP_GROUP_NORM_GRAD, opset, 3, 4, 3, gn_attrs, &cfg, {0, 1, 2}};
    lt_value *fin[3] = {x, sc, bi}, *tail[3] = {x, sc, bi};
    run_check(&ck, fin, tail, 3, seed + 3);
    lt_value_free(x);
    lt_value_free(sc);
    lt_value_free(bi);
}

static void group_norm_grad(void **state)
{
    (void)state;
    int64_t x4[4] = {2, 6, 3, 2}, x3[3] = {3, 4, 5}, big[4] = {4, 32, 16, 16};
    group_norm_case("group norm, 3 groups (opset 18, per group)", 18, 3, false, 4, x4, 200);
    group_norm_case("group norm, 1 group", 18, 1, false, 3, x3, 210);
    group_norm_case("group norm, one channel per group", 18, 4, false, 3, x3, 220);
    group_norm_case("group norm, opset 21 (per channel)", 21, 2, true, 4, x4, 230);
    group_norm_case("group norm, parallel", 18, 8, false, 4, big, 240);
}

/* ---- LayerNormalization ---- */

typedef struct ln_cfg {
    int64_t axis;
    float eps;
} ln_cfg;

static void ln_attrs(tu_graph *g, const void *ctx)
{
    const ln_cfg *c = ctx;
    tu_attr_int(g, "axis", c->axis);
    if (c->eps > 0)
        tu_attr_float(g, "epsilon", c->eps);
}

static void layer_norm_case(const char *name, int rank, const int64_t *xd, int64_t axis, int prank,
                            const int64_t *pd, bool with_bias, uint64_t seed)
{
    ln_cfg cfg = {axis, 1e-3f};
    lt_value *x = tu_rand(LT_F64, rank, xd, -1, 1, seed);
    lt_value *sc = tu_rand(LT_F64, prank, pd, 0.5, 1.5, seed + 1);
    lt_value *bi = with_bias ? tu_rand(LT_F64, prank, pd, -1, 1, seed + 2) : NULL;
    /* without B the forward has no bias gradient to compare with */
    check ck = {name,    LT_OP_LAYER_NORMALIZATION, LT_OP_LAYER_NORM_GRAD, 17, 3, 3, with_bias ? 3 : 2, ln_attrs,
                &cfg,    {0, 1, 2}};
    lt_value *fin[3] = {x, sc, bi}, *tail[2] = {x, sc};
    run_check(&ck, fin, tail, 2, seed + 3);
    lt_value_free(x);
    lt_value_free(sc);
    if (bi)
        lt_value_free(bi);
}

static void layer_norm_grad(void **state)
{
    (void)state;
    int64_t x3[3] = {2, 3, 5}, x4[4] = {2, 3, 4, 3}, big[3] = {64, 32, 64};
    int64_t p5[1] = {5}, p43[2] = {4, 3}, p13[2] = {1, 3}, p35[2] = {3, 5}, p345[3] = {3, 4, 3}, p64[1] = {64};
    layer_norm_case("layer norm, axis -1", 3, x3, -1, 1, p5, true, 300);
    layer_norm_case("layer norm, axis 2 of 4", 4, x4, 2, 2, p43, true, 310);
    layer_norm_case("layer norm, scale broadcast over an axis", 4, x4, 2, 2, p13, true, 320);
    layer_norm_case("layer norm, scale over more dims than axis", 3, x3, 2, 2, p35, true, 330);
    layer_norm_case("layer norm, axis 1, no bias", 4, x4, 1, 3, p345, false, 340);
    layer_norm_case("layer norm, parallel", 3, big, -1, 1, p64, true, 350);
    /* float32 with the scale spanning exactly the normalized axis: the
     * one-sweep rows (odd width, a batch of 17, serial and parallel) */
    int64_t odd[3] = {17, 7, 33}, tf[3] = {16, 28, 32}, p33[1] = {33}, p32[1] = {32};
    layer_norm_case("layer norm, float32 rows, odd width", 3, odd, -1, 1, p33, true, 360);
    layer_norm_case("layer norm, float32 rows, transformer width, no bias", 3, tf, 2, 1, p32, false, 370);
}

/* ---- LRN ---- */

typedef struct lrn_cfg {
    int64_t size;
    float alpha, beta, bias;
} lrn_cfg;

static void lrn_attrs(tu_graph *g, const void *ctx)
{
    const lrn_cfg *c = ctx;
    tu_attr_int(g, "size", c->size);
    if (c->alpha > 0) {
        tu_attr_float(g, "alpha", c->alpha);
        tu_attr_float(g, "beta", c->beta);
        tu_attr_float(g, "bias", c->bias);
    }
}

static void lrn_grad(void **state)
{
    (void)state;
    int64_t x4[4] = {2, 7, 3, 4}, x3[3] = {2, 5, 3}, big[4] = {2, 16, 40, 40};
    const struct {
        const char *name;
        lrn_cfg c;
        int rank;
        const int64_t *dims;
    } cases[] = {
        {"lrn size 3, defaults", {3, 0, 0, 0}, 4, x4},
        {"lrn size 4 (even), strong alpha", {4, 0.5f, 0.75f, 1.5f}, 4, x4},
        {"lrn size 5, beta 1.3, rank 3", {5, 0.8f, 1.3f, 2.0f}, 3, x3},
        {"lrn size 1", {1, 0.3f, 0.5f, 1.0f}, 3, x3},
        {"lrn parallel", {5, 0.5f, 0.75f, 1.0f}, 4, big},
    };
    for (int i = 0; i < 5; i++) {
        lt_value *x = tu_rand(LT_F64, cases[i].rank, cases[i].dims, -2, 2, 400 + (uint64_t)i);
        check ck = {cases[i].name, LT_OP_LRN, LT_OP_LRN_GRAD, 13, 1, 2, 1, lrn_attrs, &cases[i].c, {0}};
        lt_value *fin[1] = {x}, *tail[1] = {x};
        run_check(&ck, fin, tail, 1, 410 + (uint64_t)i);
        lt_value_free(x);
    }
}

/* the statistics and parameter checks answer with a status */
static void norm_grad_errors(void **state)
{
    (void)state;
    int64_t xd[4] = {2, 3, 2, 2}, sd[1] = {4}, bad[4] = {2, 3, 2, 3};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 1), *s = tu_rand(LT_F32, 1, sd, -1, 1, 2);
    lt_value *dy = tu_rand(LT_F32, 4, bad, -1, 1, 3);
    lt_value *out[3] = {NULL};
    lt_err err;
    tu_graph g = tu_single(LT_OP_INSTANCE_NORM_GRAD, 6, 3, 3);
    lt_value *in[3] = {x, x, s};
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK); /* 4 scales for 3 channels */
    in[0] = dy;
    assert_int_not_equal(tu_run(&g, in, out, &err), LT_OK); /* dy's shape */
    tu_free(&g);
    g = tu_single(LT_OP_GROUP_NORM_GRAD, 18, 4, 3);
    tu_attr_int(&g, "num_groups", 2);
    lt_value *in2[4] = {x, x, s, s};
    assert_int_not_equal(tu_run(&g, in2, out, &err), LT_OK); /* 2 groups do not divide 3 channels */
    tu_free(&g);
    g = tu_single(LT_OP_BATCH_NORM_GRAD, 15, 6, 3);
    lt_value *in3[6] = {x, x, s, s, NULL, NULL};
    tu_omit_input(&g, 4);
    tu_omit_input(&g, 5);
    assert_int_not_equal(tu_run(&g, in3, out, &err), LT_OK);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(s);
    lt_value_free(dy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batch_norm_grad), cmocka_unit_test(instance_norm_grad),
        cmocka_unit_test(group_norm_grad), cmocka_unit_test(layer_norm_grad),
        cmocka_unit_test(lrn_grad),        cmocka_unit_test(norm_grad_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
