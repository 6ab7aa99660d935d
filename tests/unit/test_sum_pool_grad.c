/* ir/sum_pool_grad.c: ReduceSum over the spatial axes of MaxPoolGrad's dx
 * reads dy instead. Rewritten sums (tiling 2x2 windows, overlapping 3x3
 * stride-2 pad-1 windows, keepdims, the batch axis kept or summed too, an
 * Identity between) give a float64 sum of dy per plane or channel, at
 * batch 16, and the unrewritten model's sums within float32 rounding;
 * sums that must stay on dx (an axis of the plane kept, axes not constant,
 * AveragePoolGrad, a window wholly in the padding) are left alone and
 * still give dx's sums. */
#include "testutil.h"
#include "ir/infer.h"
#include "ir/sum_pool_grad.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    const char *name;
    int64_t n, c, h, w;
    int64_t k[2], s[2], d[2], pads[4];
    int nax;
    int64_t axes[4];
    int keepdims;
    bool identity;   /* an Identity between MaxPoolGrad and the sum */
    bool axes_input; /* the axes a graph input, not a Constant */
    lt_op op;        /* 0: MaxPoolGrad */
    bool rewrite;    /* what the pass must do */
    bool drops;      /* dx's sums are not dy's (windows drop dy) */
} cfg;

static int64_t grid_of(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe)
{
    return (in + pb + pe - (k - 1) * d - 1) / s + 1;
}

static void dy_dims(const cfg *f, int64_t *dd)
{
    dd[0] = f->n;
    dd[1] = f->c;
    dd[2] = grid_of(f->h, f->k[0], f->s[0], f->d[0], f->pads[0], f->pads[2]);
    dd[3] = grid_of(f->w, f->k[1], f->s[1], f->d[1], f->pads[1], f->pads[3]);
}

/* inputs dy, x (and axes): sum = ReduceSum(PoolGrad(dy, x), axes) */
static lt_module *build(const cfg *f)
{
    const char *names[3] = {"dy", "x", "axes"};
    tu_builder g = tu_builder_new(f->axes_input ? 3 : 2, names);
    int64_t xd[4] = {f->n, f->c, f->h, f->w}, dd[4], ad[1] = {f->nax};
    dy_dims(f, dd);
    lt_type_tensor(&g.b->params[0]->type, LT_F32, 4, dd);
    lt_type_tensor(&g.b->params[1]->type, LT_F32, 4, xd);
    if (f->axes_input)
        lt_type_tensor(&g.b->params[2]->type, LT_I64, 1, ad);
    lt_node *p = lt_node_new(g.m, g.b, f->op ? f->op : LT_OP_MAX_POOL_GRAD, 2, 1);
    p->opset = 1;
    p->domain_name = "ai.lantern";
    p->in[0] = g.b->params[0];
    p->in[1] = g.b->params[1];
    tu_graph t = {g.m, p};
    tu_attr_ints(&t, "kernel_shape", 2, f->k);
    tu_attr_ints(&t, "strides", 2, f->s);
    tu_attr_ints(&t, "dilations", 2, f->d);
    tu_attr_ints(&t, "pads", 4, f->pads);
    lt_ival *v = tu_out(&g, p, 0);
    if (f->identity) {
        lt_node *id = lt_node_new(g.m, g.b, LT_OP_IDENTITY, 1, 1);
        id->opset = 13;
        id->in[0] = v;
        v = tu_out(&g, id, 0);
    }
    lt_ival *axes = f->axes_input ? g.b->params[2] : NULL;
    if (!axes) {
        lt_node *k = lt_node_new(g.m, g.b, LT_OP_CONSTANT, 0, 1);
        k->opset = 13;
        lt_node_set_attrs(g.m, k, 1);
        lt_attr *a = &k->attrs[0];
        a->name = "value";
        a->kind = LT_ATTR_TENSOR;
        a->t = lt_ir_alloc(g.m, sizeof *a->t);
        a->t->dtype = LT_I64;
        a->t->rank = 1;
        a->t->dims[0] = f->nax;
        a->t->numel = f->nax;
        a->t->data = lt_ir_alloc(g.m, sizeof(int64_t) * 4);
        memcpy(a->t->data, f->axes, sizeof(int64_t) * (size_t)f->nax);
        axes = tu_out(&g, k, 0);
    }
    lt_node *s = lt_node_new(g.m, g.b, LT_OP_REDUCE_SUM, 2, 1);
    s->opset = 13;
    s->in[0] = v;
    s->in[1] = axes;
    tu_graph ts = {g.m, s};
    tu_attr_int(&ts, "keepdims", f->keepdims);
    lt_block_set_results(g.m, g.b, 1);
    g.b->results[0] = tu_out(&g, s, 0);
    lt_err err;
    lt_status st = lt_infer_module(g.m, &err);
    if (st == LT_OK)
        st = lt_ir_verify(g.m, &err);
    if (st != LT_OK)
        fail_msg("%s: building: %s", f->name, err.msg);
    return g.m;
}

static lt_value *run(lt_module *m, const cfg *f, lt_value *dy, lt_value *x)
{
    double av[4];
    for (int i = 0; i < f->nax; i++)
        av[i] = (double)f->axes[i];
    int64_t ad[1] = {f->nax};
    lt_value *axes = tu_from(LT_I64, 1, ad, av), *in[3] = {dy, x, axes}, *out = NULL;
    const char *names[3] = {"dy", "x", "axes"};
    lt_session *s = NULL;
    lt_err err;
    lt_status st = lt_session_new(m, &s, &err);
    if (st == LT_OK)
        st = lt_session_run(s, f->axes_input ? 3 : 2, names, in, &out, &err);
    lt_session_free(s);
    lt_value_free(axes);
    if (st != LT_OK)
        fail_msg("%s: running: %s", f->name, err.msg);
    return out;
}

static void check(const cfg *f, uint64_t seed)
{
    print_message("%s\n", f->name);
    lt_module *ref = build(f), *m = build(f);
    int n = -1;
    lt_err err;
    assert_int_equal(lt_ir_sum_pool_grad(m, &n, &err), LT_OK);
    assert_int_equal(n, f->rewrite ? 1 : 0);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    const lt_node *s = m->main->nodes[m->main->nnodes - 1];
    assert_int_equal(s->op, LT_OP_REDUCE_SUM);
    if (f->rewrite)
        assert_ptr_equal(s->in[0], m->main->params[0]);
    else
        assert_ptr_not_equal(s->in[0], m->main->params[0]);

    int64_t xd[4] = {f->n, f->c, f->h, f->w}, dd[4];
    dy_dims(f, dd);
    lt_value *x = tu_rand(LT_F32, 4, xd, -2, 2, seed), *dy = tu_rand(LT_F32, 4, dd, -1, 1, seed + 1);
    lt_value *a = run(m, f, dy, x), *b = run(ref, f, dy, x);
    const lt_tensor *ta = lt_value_tensor(a), *tb = lt_value_tensor(b);
    assert_int_equal(ta->rank, tb->rank);
    assert_memory_equal(ta->dims, tb->dims, sizeof(int64_t) * (size_t)ta->rank);
    /* float64 reference: the sum of dy per kept (n, c) when rewritten */
    bool keep_n = true;
    for (int i = 0; i < f->nax; i++)
        keep_n = keep_n && f->axes[i] != 0;
    int64_t plane = dd[2] * dd[3];
    double *want = calloc((size_t)(f->n * f->c), sizeof(double));
    assert_non_null(want);
    for (int64_t q = 0; q < f->n * f->c; q++)
        for (int64_t e = 0; e < plane; e++)
            want[keep_n ? q : q % f->c] += tu_get(dy, q * plane + e);
    double off = 0; /* how far dx's sums are from dy's */
    for (int64_t i = 0; i < ta->numel; i++) {
        double u = lt_tensor_get_f64(ta, i), v = lt_tensor_get_f64(tb, i);
        off = fmax(off, fabs(u - want[i]));
        if (fabs(u - v) > 1e-5 * (1 + fabs(v)))
            fail_msg("%s: sum %lld is %.9g, unrewritten %.9g", f->name, (long long)i, u, v);
        if (f->rewrite && fabs(u - want[i]) > 1e-5 * (1 + fabs(want[i])))
            fail_msg("%s: sum %lld is %.9g, float64 sum of dy %.9g", f->name, (long long)i, u, want[i]);
    }
    if (f->drops)
        assert_true(off > 0.1); /* the rewrite would have been wrong here */
    free(want);
    lt_value_free(a);
    lt_value_free(b);
    lt_value_free(x);
    lt_value_free(dy);
    lt_module_free(ref);
    lt_module_free(m);
}

static void rewritten(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"2x2 stride 2 (a CNN's bias), 16x5x12x10", 16, 5, 12, 10, {2, 2}, {2, 2}, {1, 1}, {0}, 3, {0, 2, 3}, 0, .rewrite = true},
        {"3x3 stride 2 pads 1 (overlapping), 16x4x9x8", 16, 4, 9, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 3, {0, -2, -1}, 0, .rewrite = true},
        {"2x2 stride 2 odd image, keepdims, 16x3x7x9", 16, 3, 7, 9, {2, 2}, {2, 2}, {1, 1}, {0}, 3, {3, 2, 0}, 1, .rewrite = true},
        {"per plane (N kept), 16x3x8x8", 16, 3, 8, 8, {2, 2}, {2, 2}, {1, 1}, {0}, 2, {2, 3}, 0, .rewrite = true},
        {"through an Identity, 16x2x6x6", 16, 2, 6, 6, {2, 2}, {2, 2}, {1, 1}, {0}, 3, {0, 2, 3}, 0, true, .rewrite = true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check(&cases[i], 300 + 10 * i);
}

static void left_alone(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"an axis of the plane kept, 16x3x8x8", 16, 3, 8, 8, {2, 2}, {2, 2}, {1, 1}, {0}, 2, {0, 2}, 0},
        {"axes a graph input, 16x3x8x8", 16, 3, 8, 8, {2, 2}, {2, 2}, {1, 1}, {0}, 3, {0, 2, 3}, 0, false, true},
        {"AveragePoolGrad, 16x3x8x8", 16, 3, 8, 8, {2, 2}, {2, 2}, {1, 1}, {0}, 3, {0, 2, 3}, 0, false, false,
         LT_OP_AVERAGE_POOL_GRAD},
        /* rows of one pixel and dilation 3 with pads 2: every window's
         * taps along H miss the image */
        {"windows wholly in the padding, 16x2x1x6", 16, 2, 1, 6, {2, 2}, {1, 2}, {3, 1}, {2, 0, 2, 0}, 3, {0, 2, 3}, 0,
         .drops = true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check(&cases[i], 400 + 10 * i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(rewritten), cmocka_unit_test(left_alone)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
