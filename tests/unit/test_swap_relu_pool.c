/* ir/swap_relu_pool.c: Relu -> MaxPool becomes MaxPool -> Relu before the
 * AD. Pairs swap (chains of MaxPools included) and give the unswapped
 * model's outputs bit for bit but for the sign of zeros, at batch 16 with
 * ties, negative windows and NaNs; pairs that must not swap (the Relu's
 * output read elsewhere or a result, the Indices read, an AveragePool) are
 * left alone; and the gradients of a model with the pair (swapped inside
 * the AD) match central finite differences in float64. */
#include "testutil.h"
#include "ir/infer.h"
#include "ir/swap_relu_pool.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lt_ival *relu(tu_builder *g, lt_ival *x)
{
    lt_node *n = lt_node_new(g->m, g->b, LT_OP_RELU, 1, 1);
    n->opset = 14;
    n->name = "relu";
    n->in[0] = x;
    return tu_out(g, n, 0);
}

/* a k x k pool with stride s and pads p on every side; *node receives it */
static lt_ival *pool(tu_builder *g, lt_op op, lt_ival *x, int64_t k, int64_t s, int64_t p, int nout, lt_node **node)
{
    lt_node *n = lt_node_new(g->m, g->b, op, 1, nout);
    n->opset = 12;
    n->name = "pool";
    n->in[0] = x;
    const int64_t ks[2] = {k, k}, ss[2] = {s, s}, ps[4] = {p, p, p, p};
    tu_graph t = {g->m, n};
    tu_attr_ints(&t, "kernel_shape", 2, ks);
    tu_attr_ints(&t, "strides", 2, ss);
    tu_attr_ints(&t, "pads", 4, ps);
    for (int i = 1; i < nout; i++)
        tu_out(g, n, i);
    if (node)
        *node = n;
    return tu_out(g, n, 0);
}

static const int64_t xdims[4] = {16, 3, 9, 11};

enum { PLAIN, CHAIN, RELU_READ, RELU_RESULT, INDICES_READ, INDICES_UNREAD, AVERAGE };

/* graph input x [16, 3, 9, 11] -> Relu -> pool(s) -> output(s) */
static lt_module *build(int form)
{
    const char *names[1] = {"x"};
    tu_builder g = tu_builder_new(1, names);
    lt_ival *x = g.b->params[0];
    lt_type_tensor(&x->type, LT_F32, 4, xdims);
    lt_ival *r = relu(&g, x), *res[2] = {NULL, NULL};
    lt_node *p = NULL;
    int nres = 1;
    switch (form) {
    case PLAIN: res[0] = pool(&g, LT_OP_MAX_POOL, r, 3, 2, 1, 1, NULL); break;
    case CHAIN: res[0] = pool(&g, LT_OP_MAX_POOL, pool(&g, LT_OP_MAX_POOL, r, 2, 1, 0, 1, NULL), 3, 2, 1, 1, NULL); break;
    case RELU_READ: res[0] = relu(&g, pool(&g, LT_OP_MAX_POOL, r, 3, 2, 1, 1, NULL)); res[1] = relu(&g, r); nres = 2; break;
    case RELU_RESULT: res[0] = pool(&g, LT_OP_MAX_POOL, r, 3, 2, 1, 1, NULL); res[1] = r; nres = 2; break;
    case INDICES_READ:
    case INDICES_UNREAD:
        res[0] = pool(&g, LT_OP_MAX_POOL, r, 3, 2, 1, 2, &p);
        if (form == INDICES_READ) {
            res[1] = p->out[1];
            nres = 2;
        }
        break;
    default: res[0] = pool(&g, LT_OP_AVERAGE_POOL, r, 3, 2, 1, 1, NULL); break;
    }
    lt_block_set_results(g.m, g.b, nres);
    for (int i = 0; i < nres; i++)
        g.b->results[i] = res[i];
    lt_err err;
    lt_status s = lt_infer_module(g.m, &err);
    if (s == LT_OK)
        s = lt_ir_verify(g.m, &err);
    if (s != LT_OK)
        fail_msg("building: %s", err.msg);
    return g.m;
}

/* few distinct values (ties), whole windows of negatives, signed zeros, NaNs */
static lt_value *make_x(uint64_t seed)
{
    lt_value *r = tu_rand(LT_F64, 4, xdims, 0, 1, seed);
    int64_t n = r->t.numel;
    double *v = malloc(sizeof(double) * (size_t)n);
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) {
        double u = tu_get(r, i);
        v[i] = floor(u * 7) - 4; /* -4 .. 2: most windows' maxima are small */
        if (v[i] == 0 && (i & 1))
            v[i] = -0.0;
        if (i % 61 == 5)
            v[i] = NAN;
        if ((i / 11) % 9 == 4)
            v[i] = -1 - u; /* rows of negatives */
    }
    lt_value *x = tu_from(LT_F32, 4, xdims, v);
    free(v);
    lt_value_free(r);
    return x;
}

/* equal as numbers, NaN matching NaN (a zero of either sign matches) */
static void same_values(const lt_value *a, const lt_value *b)
{
    const lt_tensor *ta = lt_value_tensor(a), *tb = lt_value_tensor(b);
    assert_int_equal(ta->numel, tb->numel);
    assert_memory_equal(ta->dims, tb->dims, sizeof(int64_t) * (size_t)ta->rank);
    int64_t nans = 0, zeros = 0, positive = 0;
    for (int64_t i = 0; i < ta->numel; i++) {
        double u = lt_tensor_get_f64(ta, i), v = lt_tensor_get_f64(tb, i);
        if (isnan(u) || isnan(v)) {
            if (!(isnan(u) && isnan(v)))
                fail_msg("element %lld: %g swapped, %g unswapped", (long long)i, u, v);
            nans++;
        } else if (u != v) {
            fail_msg("element %lld: %g swapped, %g unswapped", (long long)i, u, v);
        }
        zeros += u == 0;
        positive += u > 0;
    }
    assert_true(nans > 0 && zeros > 0 && positive > 0); /* each case was met */
}

static int count_op(const lt_block *b, lt_op op)
{
    int c = 0;
    for (int i = 0; i < b->nnodes; i++)
        c += b->nodes[i]->op == op;
    return c;
}

static void swaps(int form, int want, uint64_t seed)
{
    lt_module *ref = build(form), *m = build(form);
    int n = -1;
    lt_err err;
    assert_int_equal(lt_ir_swap_relu_pool(m, &n, &err), LT_OK);
    assert_int_equal(n, want);
    assert_int_equal(lt_infer_module(m, &err), LT_OK);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    const lt_block *b = m->main;
    /* the MaxPool(s) first, reading x; the Relu last, writing the result */
    assert_int_equal(b->nodes[0]->op, LT_OP_MAX_POOL);
    assert_ptr_equal(b->nodes[0]->in[0], b->params[0]);
    assert_int_equal(b->nodes[want]->op, LT_OP_RELU);
    assert_ptr_equal(b->nodes[want]->out[0], b->results[0]);
    for (int i = 0; i < b->nnodes; i++)
        assert_int_equal(b->nodes[i]->index, i);
    lt_value *x = make_x(seed), *a = NULL, *c = NULL;
    assert_int_equal(tu_run_x(m, x, &a), 1);
    assert_int_equal(tu_run_x(ref, x, &c), 1);
    same_values(a, c);
    lt_value_free(a);
    lt_value_free(c);
    lt_value_free(x);
    lt_module_free(ref);
    lt_module_free(m);
}

static void pair_and_chain_swap(void **s)
{
    (void)s;
    swaps(PLAIN, 1, 11);
    swaps(CHAIN, 2, 12);
    swaps(INDICES_UNREAD, 1, 13);
}

static void left_alone(void **s)
{
    (void)s;
    const int forms[4] = {RELU_READ, RELU_RESULT, INDICES_READ, AVERAGE};
    for (int k = 0; k < 4; k++) {
        lt_module *m = build(forms[k]);
        int n = -1, before = m->main->nnodes;
        lt_op first = m->main->nodes[0]->op;
        lt_err err;
        assert_int_equal(lt_ir_swap_relu_pool(m, &n, &err), LT_OK);
        assert_int_equal(n, 0);
        assert_int_equal(m->main->nnodes, before);
        assert_int_equal(m->main->nodes[0]->op, first);
        assert_int_equal(first, LT_OP_RELU);
        assert_int_equal(lt_ir_verify(m, &err), LT_OK);
        lt_module_free(m);
    }
}

/* ---- gradients: X (trainable) -> Relu -> MaxPool -> * R, loss sum ---- */

static lt_ival *param(tu_builder *g, const char *nm, int rank, const int64_t *dims, bool trainable, double lo,
                      double hi, uint64_t *seed)
{
    int p = lt_module_add_param(g->m, nm);
    lt_tensor *t = &g->m->params[p].data;
    t->dtype = LT_F32;
    t->rank = rank;
    for (int d = 0; d < rank; d++)
        t->dims[d] = dims[d];
    t->numel = lt_shape_numel(rank, dims);
    t->data = calloc((size_t)t->numel, sizeof(float));
    assert_non_null(t->data);
    tu_fill(t, lo, hi, seed);
    lt_ival *v = lt_ival_new(g->m, g->b, nm);
    v->param = p;
    lt_type_tensor(&v->type, LT_F32, rank, dims);
    g->m->params[p].value = v;
    g->m->params[p].trainable = trainable;
    return v;
}

static lt_status build_net(void *ctx, lt_model **out, lt_err *err)
{
    (void)ctx;
    tu_builder g = {0};
    g.m = lt_module_new();
    if (!g.m)
        return LT_ERR_NOMEM;
    g.m->path = "relu-pool";
    g.b = lt_block_new(g.m, NULL, "main");
    g.m->main = g.b;
    lt_block_set_params(g.m, g.b, 0);
    uint64_t seed = 91;
    const int64_t xd[4] = {16, 2, 7, 8}, rd[4] = {16, 2, 4, 4};
    lt_ival *X = param(&g, "X", 4, xd, true, -1.5, 1, &seed), *R = param(&g, "R", 4, rd, false, -1, 1, &seed);
    lt_ival *y = pool(&g, LT_OP_MAX_POOL, relu(&g, X), 3, 2, 1, 1, NULL);
    lt_node *mul = lt_node_new(g.m, g.b, LT_OP_MUL, 2, 1);
    mul->opset = 14;
    mul->in[0] = y;
    mul->in[1] = R;
    lt_block_set_results(g.m, g.b, 1);
    g.b->results[0] = tu_out(&g, mul, 0);
    *out = g.m;
    lt_status s = lt_infer_module(g.m, err);
    return s == LT_OK ? lt_ir_verify(g.m, err) : s;
}

/* the ReluGrad the gradient program holds */
static const lt_node *find_op(const lt_module *m, lt_op op)
{
    for (int f = -1; f < m->nfuncs; f++) {
        const lt_block *b = f < 0 ? m->main : m->funcs[f]->body;
        for (int i = 0; i < b->nnodes; i++)
            if (b->nodes[i]->op == op)
                return b->nodes[i];
    }
    return NULL;
}

static void gradients_match_finite_differences(void **s)
{
    (void)s;
    lt_model *m = NULL;
    lt_err err;
    if (build_net(NULL, &m, &err) != LT_OK)
        fail_msg("building: %s", err.msg);
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    assert_int_equal(lt_model_grad(m, &o, &err), LT_OK);
    /* the AD saw the swapped pair: ReluGrad runs on the pooled shape */
    const lt_node *rg = find_op(m, LT_OP_RELU_GRAD);
    assert_non_null(rg);
    assert_non_null(find_op(m, LT_OP_MAX_POOL_GRAD));
    assert_int_equal(rg->out[0]->type.rank, 4);
    assert_int_equal(rg->out[0]->type.dims[2].v, 4);
    assert_int_equal(rg->out[0]->type.dims[3].v, 4);
    assert_int_equal(count_op(m->main, LT_OP_RELU), 1);
    lt_model_free(m);

    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_status st = lt_grad_check_built(build_net, NULL, &o, 0, NULL, NULL, 300, &rows, &nrows, &err);
    if (st != LT_OK)
        fail_msg("grad check: %s", err.msg);
    assert_int_equal(nrows, 1);
    printf("  %s rel.err %.3g (float32 AD %.3g), %d checked, max |grad| %.3g\n", rows[0].name, rows[0].err64,
           rows[0].err32, rows[0].checked, rows[0].max_grad);
    assert_true(rows[0].checked > 0);
    assert_true(rows[0].max_grad > 0);
    assert_true(rows[0].err64 < 1e-6);
    assert_true(rows[0].err32 < 1e-3);
    free(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pair_and_chain_swap),
        cmocka_unit_test(left_alone),
        cmocka_unit_test(gradients_match_finite_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
