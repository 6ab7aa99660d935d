/* Executor: IR functions and recursive calls through If, accumulation
 * cells, and memory returning to where it started when the session goes. */
#include "testutil.h"
#include "runtime/memplan.h"
#include <stdlib.h>
#include <string.h>

static lt_ival *val(lt_module *m, lt_block *b, lt_node *def, const char *name)
{
    lt_ival *v = lt_ival_new(m, b, name);
    v->def = def;
    return v;
}

static lt_node *node(lt_module *m, lt_block *b, lt_op op, int nin, int nout, const char *out)
{
    lt_node *n = lt_node_new(m, b, op, nin, nout);
    n->opset = 13;
    if (nout)
        n->out[0] = val(m, b, n, out);
    return n;
}

static void attr_int(lt_module *m, lt_node *n, const char *name, int64_t v)
{
    lt_attr *a = lt_ir_alloc(m, sizeof *a * (n->nattr + 1));
    if (n->nattr)
        memcpy(a, n->attrs, sizeof *a * n->nattr);
    a[n->nattr].name = name;
    a[n->nattr].kind = LT_ATTR_INT;
    a[n->nattr].i = v;
    n->attrs = a;
    n->nattr++;
}

/* f(k, x) = k > 0 ? f(k - 1, x + x) : x, called as f(depth, x) */
static void recursive_call(void **state)
{
    (void)state;
    lt_module *m = lt_module_new();
    m->path = "recursion";
    lt_func *f = lt_module_add_func(m, "f");
    lt_block *fb = f->body;
    lt_block_set_params(m, fb, 2);
    fb->params[0] = val(m, fb, NULL, "k");
    fb->params[1] = val(m, fb, NULL, "x");
    int zero_p = lt_module_add_param(m, "zero"), one_p = lt_module_add_param(m, "one");
    lt_err err;
    for (int p = 0; p < 2; p++) {
        lt_param *pp = &m->params[p == 0 ? zero_p : one_p];
        lt_tensor t;
        assert_int_equal(lt_tensor_alloc(&t, LT_I64, 0, NULL, &err), LT_OK);
        pp->data = t;
        pp->data.data = malloc(8);
        *(int64_t *)pp->data.data = p;
        lt_tensor_release(&t);
        pp->data.buf = NULL;
        pp->value = val(m, m->main ? m->main : fb, NULL, pp->name);
        pp->value->param = p == 0 ? zero_p : one_p;
    }
    lt_node *gt = node(m, fb, LT_OP_GREATER, 2, 1, "pos");
    gt->in[0] = fb->params[0];
    gt->in[1] = m->params[zero_p].value;
    lt_node *iff = node(m, fb, LT_OP_IF, 1, 1, "r");
    iff->in[0] = gt->out[0];
    lt_node_set_regions(m, iff, 2);
    lt_node_set_attrs(m, iff, 2);
    iff->attrs[0] = (lt_attr){.name = "then_branch", .kind = LT_ATTR_GRAPH, .region = 0};
    iff->attrs[1] = (lt_attr){.name = "else_branch", .kind = LT_ATTR_GRAPH, .region = 1};
    lt_block *th = lt_block_new(m, fb, "then"), *el = lt_block_new(m, fb, "else");
    iff->regions[0] = th;
    iff->regions[1] = el;
    th->owner = el->owner = iff;
    lt_node *sub = node(m, th, LT_OP_SUB, 2, 1, "k1");
    sub->in[0] = fb->params[0];
    sub->in[1] = m->params[one_p].value;
    lt_node *dbl = node(m, th, LT_OP_ADD, 2, 1, "x2");
    dbl->in[0] = dbl->in[1] = fb->params[1];
    lt_node *call = node(m, th, LT_OP_CALL, 2, 1, "y");
    attr_int(m, call, "callee", 0);
    call->in[0] = sub->out[0];
    call->in[1] = dbl->out[0];
    lt_block_set_results(m, th, 1);
    th->results[0] = call->out[0];
    lt_node *id = node(m, el, LT_OP_IDENTITY, 1, 1, "same");
    id->in[0] = fb->params[1];
    lt_block_set_results(m, el, 1);
    el->results[0] = id->out[0];
    lt_block_set_results(m, fb, 1);
    fb->results[0] = iff->out[0];

    lt_block *mb = m->main = lt_block_new(m, NULL, "main");
    lt_block_set_params(m, mb, 2);
    mb->params[0] = val(m, mb, NULL, "depth");
    mb->params[1] = val(m, mb, NULL, "x0");
    m->input_default = lt_ir_alloc(m, sizeof(int) * 2);
    m->input_default[0] = m->input_default[1] = -1;
    lt_node *top = node(m, mb, LT_OP_CALL, 2, 1, "out");
    attr_int(m, top, "callee", 0);
    top->in[0] = mb->params[0];
    top->in[1] = mb->params[1];
    lt_block_set_results(m, mb, 1);
    mb->results[0] = top->out[0];
    for (int p = 0; p < 2; p++)
        m->params[p].value->block = mb;
    if (lt_ir_verify(m, &err) != LT_OK)
        fail_msg("%s", err.msg);

    int64_t d3[1] = {3};
    lt_value *x = tu_rand(LT_F32, 1, d3, -1, 1, 5);
    double depth_v = 20;
    lt_value *depth = tu_from(LT_I64, 0, NULL, &depth_v);
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    const char *names[2] = {"depth", "x0"};
    lt_value *ins[2] = {depth, x}, *out = NULL;
    if (lt_session_run(s, 2, names, ins, &out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double want[3];
    for (int i = 0; i < 3; i++)
        want[i] = tu_get(x, i) * (double)(1 << 20);
    tu_assert_close(out, want, 3, 1e-6, 0, 5);
    lt_value_free(out);
    lt_session_free(s);
    lt_value_free(x);
    lt_value_free(depth);
    lt_module_free(m);
}

/* c = 0; c += x; c += x * x; read c */
static void accumulation_cells(void **state)
{
    (void)state;
    lt_module *m = lt_module_new();
    m->path = "cells";
    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    lt_block_set_params(m, b, 1);
    b->params[0] = val(m, b, NULL, "x");
    m->input_default = lt_ir_alloc(m, sizeof(int));
    m->input_default[0] = -1;
    lt_node *z = node(m, b, LT_OP_ACC_ZEROS_LIKE, 1, 1, "c");
    z->in[0] = b->params[0];
    lt_node *a1 = node(m, b, LT_OP_ACC_ADD, 2, 0, NULL);
    a1->in[0] = z->out[0];
    a1->in[1] = b->params[0];
    lt_node *sq = node(m, b, LT_OP_MUL, 2, 1, "xx");
    sq->in[0] = sq->in[1] = b->params[0];
    lt_node *a2 = node(m, b, LT_OP_ACC_ADD, 2, 0, NULL);
    a2->in[0] = z->out[0];
    a2->in[1] = sq->out[0];
    lt_node *rd = node(m, b, LT_OP_ACC_READ, 1, 1, "r");
    rd->in[0] = z->out[0];
    lt_block_set_results(m, b, 1);
    b->results[0] = rd->out[0];
    lt_err err;
    assert_int_equal(lt_infer_module(m, &err), LT_OK);
    assert_int_equal(z->out[0]->type.kind, LT_KIND_CELL);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    int64_t d[2] = {4, 5};
    lt_value *x = tu_rand(LT_F32, 2, d, -2, 2, 11), *out = NULL;
    lt_session *s;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    const char *name = "x";
    lt_mplan_stats m0, m1;
    lt_mplan_stats_get(&m0);
    size_t before = lt_pool_bytes_in_use();
    if (lt_session_run(s, 1, &name, &x, &out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_mplan_stats_get(&m1);
    double want[20];
    for (int i = 0; i < 20; i++)
        want[i] = tu_get(x, i) + tu_get(x, i) * tu_get(x, i);
    tu_assert_close(out, want, 20, 1e-6, 1e-7, 11);
    lt_value_free(out);
    /* everything the run allocated has gone back to the pool but for the
     * session's planned arenas, and they go with the session */
    assert_true(lt_pool_bytes_in_use() >= before);
    assert_true(lt_pool_bytes_in_use() - before <= m1.arena_bytes - m0.arena_bytes);
    lt_session_free(s);
    assert_int_equal(lt_pool_bytes_in_use(), before);
    lt_value_free(x);
    lt_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recursive_call),
        cmocka_unit_test(accumulation_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
