/* Accumulation cells (runtime/cpu/control_cells.c): AccGemm products of
 * small rank kept pending in a large matrix cell and summed in at AccRead
 * or when the pending buffers fill, AccAdd between them, products of
 * larger rank added at once, the same through Calls, and a cell that
 * another op reads keeping every product immediate; each against float64
 * sums of the same products. */
#include "testutil.h"
#include "runtime/cpu/control_cells.h"
#include "runtime/memplan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CM 67   /* cell rows */
#define CN 1031 /* cell columns: CM * CN is above the deferral threshold */
#define MAXIN 128

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

static void attrs(lt_module *m, lt_node *n, int ta, int tb, float alpha, int64_t callee)
{
    lt_attr *a = lt_ir_alloc(m, sizeof *a * 3);
    int k = 0;
    if (callee >= 0) {
        a[k++] = (lt_attr){.name = "callee", .kind = LT_ATTR_INT, .i = callee};
    } else {
        a[k++] = (lt_attr){.name = "transA", .kind = LT_ATTR_INT, .i = ta};
        a[k++] = (lt_attr){.name = "transB", .kind = LT_ATTR_INT, .i = tb};
        a[k++] = (lt_attr){.name = "alpha", .kind = LT_ATTR_FLOAT, .f = alpha};
    }
    n->attrs = a;
    n->nattr = k;
}

/* appends v to b's parameters */
static void add_param(lt_module *m, lt_block *b, lt_ival *v)
{
    lt_ival **old = b->params;
    int n = b->nparams;
    lt_block_set_params(m, b, n + 1);
    if (n)
        memcpy(b->params, old, sizeof *old * (size_t)n);
    b->params[n] = v;
}

/* the module's inputs and their values */
typedef struct ins {
    int n;
    const char *names[MAXIN];
    lt_value *vals[MAXIN];
    char buf[MAXIN][16];
} ins;

static lt_ival *input(lt_module *m, ins *in, int rank, const int64_t *dims, uint64_t seed)
{
    assert_true(in->n < MAXIN);
    snprintf(in->buf[in->n], sizeof in->buf[0], "in%d", in->n);
    lt_block *b = m->main;
    lt_ival *v = val(m, b, NULL, in->buf[in->n]);
    add_param(m, b, v);
    in->names[in->n] = in->buf[in->n];
    in->vals[in->n] = tu_rand(LT_F32, rank, dims, -1, 1, seed);
    in->n++;
    return v;
}

/* ref [CM, CN] += alpha op(A) op(B) in float64 */
static void ref_gemm(double *ref, const lt_value *a, const lt_value *b, bool ta, bool tb, int64_t K, double alpha)
{
    for (int64_t i = 0; i < CM; i++)
        for (int64_t j = 0; j < CN; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += tu_get(a, ta ? k * CM + i : i * K + k) * tu_get(b, tb ? j * K + k : k * CN + j);
            ref[i * CN + j] += alpha * s;
        }
}

/* A [K, CM] or [CM, K] and B [CN, K] or [K, CN] as inputs; AccGemm(cell, A, B) in block b */
static void product(lt_module *m, lt_block *b, ins *in, lt_ival *cell, int64_t K, int ta, int tb, float alpha,
                    uint64_t seed, double *ref)
{
    int64_t ad[2] = {ta ? K : CM, ta ? CM : K}, bd[2] = {tb ? CN : K, tb ? K : CN};
    lt_ival *a = input(m, in, 2, ad, seed), *bv = input(m, in, 2, bd, seed + 1000);
    lt_node *g = node(m, b, LT_OP_ACC_GEMM, 3, 0, NULL);
    g->in[0] = cell;
    g->in[1] = a;
    g->in[2] = bv;
    attrs(m, g, ta, tb, alpha, -1);
    ref_gemm(ref, in->vals[in->n - 2], in->vals[in->n - 1], ta, tb, K, alpha);
}

static lt_session *open_session(lt_module *m)
{
    lt_err err;
    m->input_default = lt_ir_alloc(m, sizeof(int) * MAXIN);
    for (int i = 0; i < MAXIN; i++)
        m->input_default[i] = -1;
    if (lt_infer_module(m, &err) != LT_OK || lt_ir_verify(m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session *s;
    if (lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return s;
}

static void free_ins(ins *in)
{
    for (int i = 0; i < in->n; i++)
        lt_value_free(in->vals[i]);
}

/* c = 0; 40 products of rank 1..8 (more pending ranks than the buffers
 * hold), one of rank 13 and an AccAdd between them; read halfway and at the end */
static void deferred_products(void **state)
{
    (void)state;
    lt_module *m = lt_module_new();
    m->path = "cells";
    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    ins in = {0};
    int64_t wd[2] = {CM, CN};
    lt_ival *w = input(m, &in, 2, wd, 1);
    lt_node *z = node(m, b, LT_OP_ACC_ZEROS_LIKE, 1, 1, "c");
    z->in[0] = w;
    double *ref = calloc(CM * CN, sizeof *ref), *mid = calloc(CM * CN, sizeof *mid);
    assert_non_null(ref);
    assert_non_null(mid);
    lt_node *rd1 = NULL;
    for (int p = 0; p < 40; p++) {
        int64_t K = 1 + p % 8;
        product(m, b, &in, z->out[0], K, p % 2, (p / 2) % 2, p % 3 ? 1.0f : -0.75f, 100 + 7 * (uint64_t)p, ref);
        if (p == 9) {
            lt_node *add = node(m, b, LT_OP_ACC_ADD, 2, 0, NULL);
            add->in[0] = z->out[0];
            add->in[1] = w;
            for (int i = 0; i < CM * CN; i++)
                ref[i] += tu_get(in.vals[0], i);
        }
        if (p == 17)
            product(m, b, &in, z->out[0], 13, 1, 0, 1.0f, 900, ref);
        if (p == 31) {
            rd1 = node(m, b, LT_OP_ACC_READ, 1, 1, "r1");
            rd1->in[0] = z->out[0];
            memcpy(mid, ref, sizeof *ref * CM * CN);
        }
    }
    lt_node *rd2 = node(m, b, LT_OP_ACC_READ, 1, 1, "r2");
    rd2->in[0] = z->out[0];
    lt_block_set_results(m, b, 2);
    b->results[0] = rd1->out[0];
    b->results[1] = rd2->out[0];
    lt_session *s = open_session(m);
    uint64_t before = lt_cells_deferred();
    lt_value *out[2] = {0};
    lt_err err;
    if (lt_session_run(s, in.n, in.names, in.vals, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* on the host every product of rank <= 8 waits (40 of them); behind
     * the device path the cell is the device's and none does */
    if (!tu_device_path())
        assert_int_equal(lt_cells_deferred() - before, 40);
    tu_assert_close(out[0], mid, CM * CN, 1e-5, 1e-5, 100);
    tu_assert_close(out[1], ref, CM * CN, 1e-5, 1e-5, 100);
    /* a second run: fresh cell, same sums */
    lt_value_free(out[0]);
    lt_value_free(out[1]);
    if (lt_session_run(s, in.n, in.names, in.vals, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    tu_assert_close(out[1], ref, CM * CN, 1e-5, 1e-5, 101);
    lt_value_free(out[0]);
    lt_value_free(out[1]);
    lt_session_free(s);
    free_ins(&in);
    free(ref);
    free(mid);
    lt_module_free(m);
}

/* f(cell, A, B): AccGemm(cell, A^T, B); main calls it five times, then reads */
static void products_through_calls(void **state)
{
    (void)state;
    lt_module *m = lt_module_new();
    m->path = "cells_calls";
    lt_func *f = lt_module_add_func(m, "f");
    lt_block *fb = f->body;
    lt_block_set_params(m, fb, 3);
    fb->params[0] = val(m, fb, NULL, "cell");
    fb->params[1] = val(m, fb, NULL, "a");
    fb->params[2] = val(m, fb, NULL, "b");
    lt_node *g = node(m, fb, LT_OP_ACC_GEMM, 3, 0, NULL);
    g->in[0] = fb->params[0];
    g->in[1] = fb->params[1];
    g->in[2] = fb->params[2];
    attrs(m, g, 1, 0, 1.0f, -1);
    lt_block_set_results(m, fb, 0);

    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    ins in = {0};
    int64_t wd[2] = {CM, CN};
    lt_ival *w = input(m, &in, 2, wd, 2);
    lt_node *z = node(m, b, LT_OP_ACC_ZEROS_LIKE, 1, 1, "c");
    z->in[0] = w;
    double *ref = calloc(CM * CN, sizeof *ref);
    assert_non_null(ref);
    for (int p = 0; p < 5; p++) {
        int64_t K = p == 3 ? 2 : 1, ad[2] = {K, CM}, bd[2] = {K, CN};
        lt_ival *a = input(m, &in, 2, ad, 300 + (uint64_t)p), *bv = input(m, &in, 2, bd, 400 + (uint64_t)p);
        lt_node *call = node(m, b, LT_OP_CALL, 3, 0, NULL);
        attrs(m, call, 0, 0, 0, 0);
        call->in[0] = z->out[0];
        call->in[1] = a;
        call->in[2] = bv;
        ref_gemm(ref, in.vals[in.n - 2], in.vals[in.n - 1], true, false, K, 1.0);
    }
    lt_node *rd = node(m, b, LT_OP_ACC_READ, 1, 1, "r");
    rd->in[0] = z->out[0];
    lt_block_set_results(m, b, 1);
    b->results[0] = rd->out[0];
    lt_session *s = open_session(m);
    uint64_t before = lt_cells_deferred();
    lt_value *out = NULL;
    lt_err err;
    if (lt_session_run(s, in.n, in.names, in.vals, &out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    if (!tu_device_path())
        assert_int_equal(lt_cells_deferred() - before, 5);
    tu_assert_close(out, ref, CM * CN, 1e-5, 1e-5, 300);
    lt_value_free(out);
    lt_session_free(s);
    free_ins(&in);
    free(ref);
    lt_module_free(m);
}

/* a [3, 30011] cell: a product of rank 1 is half the cell's size, so it
 * goes in at once (pending buffers would outgrow what they save) */
static void thin_cell(void **state)
{
    (void)state;
    const int64_t M = 3, N = 30011;
    lt_module *m = lt_module_new();
    m->path = "cells_thin";
    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    ins in = {0};
    int64_t wd[2] = {M, N}, ad[2] = {1, M}, bd[2] = {1, N};
    lt_ival *w = input(m, &in, 2, wd, 4);
    lt_node *z = node(m, b, LT_OP_ACC_ZEROS_LIKE, 1, 1, "c");
    z->in[0] = w;
    double *ref = calloc((size_t)(M * N), sizeof *ref);
    assert_non_null(ref);
    for (int p = 0; p < 3; p++) {
        lt_ival *a = input(m, &in, 2, ad, 700 + (uint64_t)p), *bv = input(m, &in, 2, bd, 800 + (uint64_t)p);
        lt_node *g = node(m, b, LT_OP_ACC_GEMM, 3, 0, NULL);
        g->in[0] = z->out[0];
        g->in[1] = a;
        g->in[2] = bv;
        attrs(m, g, 1, 0, 1.0f, -1);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                ref[i * N + j] += tu_get(in.vals[in.n - 2], i) * tu_get(in.vals[in.n - 1], j);
    }
    lt_node *rd = node(m, b, LT_OP_ACC_READ, 1, 1, "r");
    rd->in[0] = z->out[0];
    lt_block_set_results(m, b, 1);
    b->results[0] = rd->out[0];
    lt_session *s = open_session(m);
    uint64_t before = lt_cells_deferred();
    lt_value *out = NULL;
    lt_err err;
    if (lt_session_run(s, in.n, in.names, in.vals, &out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_cells_deferred() - before, 0);
    tu_assert_close(out, ref, M * N, 1e-5, 1e-5, 700);
    lt_value_free(out);
    lt_session_free(s);
    free_ins(&in);
    free(ref);
    lt_module_free(m);
}

/* a Gather reads the cell itself between two rank-1 products: nothing may
 * wait in buffers it does not see */
static void cell_read_by_other_op(void **state)
{
    (void)state;
    lt_module *m = lt_module_new();
    m->path = "cells_gather";
    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    ins in = {0};
    int64_t wd[2] = {CM, CN};
    lt_ival *w = input(m, &in, 2, wd, 3);
    lt_node *z = node(m, b, LT_OP_ACC_ZEROS_LIKE, 1, 1, "c");
    z->in[0] = w;
    double *ref = calloc(CM * CN, sizeof *ref);
    assert_non_null(ref);
    product(m, b, &in, z->out[0], 1, 1, 0, 1.0f, 500, ref);
    double rows[2] = {5, CM - 1};
    int64_t two = 2;
    lt_value *idx = tu_from(LT_I64, 1, &two, rows);
    lt_ival *iv = val(m, b, NULL, "idx");
    add_param(m, b, iv);
    in.names[in.n] = "idx";
    in.vals[in.n++] = idx;
    lt_node *ga = node(m, b, LT_OP_GATHER, 2, 1, "g");
    ga->in[0] = z->out[0];
    ga->in[1] = iv;
    double *want = calloc(2 * CN, sizeof *want);
    assert_non_null(want);
    for (int r = 0; r < 2; r++)
        memcpy(want + r * CN, ref + (int64_t)rows[r] * CN, sizeof *want * CN);
    product(m, b, &in, z->out[0], 1, 1, 0, 1.0f, 600, ref);
    lt_node *rd = node(m, b, LT_OP_ACC_READ, 1, 1, "r");
    rd->in[0] = z->out[0];
    lt_block_set_results(m, b, 2);
    b->results[0] = ga->out[0];
    b->results[1] = rd->out[0];
    lt_session *s = open_session(m);
    uint64_t before = lt_cells_deferred();
    lt_value *out[2] = {0};
    lt_err err;
    if (lt_session_run(s, in.n, in.names, in.vals, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_cells_deferred() - before, 0);
    tu_assert_close(out[0], want, 2 * CN, 1e-5, 1e-5, 500);
    tu_assert_close(out[1], ref, CM * CN, 1e-5, 1e-5, 600);
    lt_value_free(out[0]);
    lt_value_free(out[1]);
    lt_session_free(s);
    free_ins(&in);
    free(ref);
    free(want);
    lt_module_free(m);
}

/* AccAdd of contributions that are mostly zero rows (a gather's gradient)
 * and of dense ones, sizes that end inside a 64-float block; the read at
 * the cell's last use, in place once the memory is planned */
static void acc_add_sparse_rows(void **state)
{
    (void)state;
    const int64_t rows = 41, cols = 151; /* odd: the tail is partial */
    lt_module *m = lt_module_new();
    m->path = "cells_add";
    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    ins in = {0};
    int64_t d[2] = {rows, cols};
    lt_ival *dense = input(m, &in, 2, d, 7);
    lt_value *sp = tu_rand(LT_F32, 2, d, -1, 1, 8);
    float *spd = (float *)lt_value_tensor(sp)->data;
    for (int64_t i = 0; i < rows * cols; i++)
        if (i / cols != 3 && i / cols != rows - 1 && i != 700)
            spd[i] = 0;
    lt_ival *spv = val(m, b, NULL, "sparse");
    add_param(m, b, spv);
    in.names[in.n] = "sparse";
    in.vals[in.n++] = sp;
    lt_node *z = node(m, b, LT_OP_ACC_ZEROS_LIKE, 1, 1, "c");
    z->in[0] = dense;
    lt_ival *seq[4] = {spv, dense, spv, spv};
    double *ref = calloc((size_t)(rows * cols), sizeof *ref);
    assert_non_null(ref);
    for (int j = 0; j < 4; j++) {
        lt_node *add = node(m, b, LT_OP_ACC_ADD, 2, 0, NULL);
        add->in[0] = z->out[0];
        add->in[1] = seq[j];
        for (int64_t i = 0; i < rows * cols; i++)
            ref[i] += tu_get(seq[j] == spv ? sp : in.vals[0], i);
    }
    /* the read's value is used inside the block (a block result stays on
     * the pool): out = -read */
    lt_node *rd = node(m, b, LT_OP_ACC_READ, 1, 1, "r");
    rd->in[0] = z->out[0];
    lt_node *neg = node(m, b, LT_OP_NEG, 1, 1, "out");
    neg->in[0] = rd->out[0];
    lt_block_set_results(m, b, 1);
    b->results[0] = neg->out[0];
    for (int64_t i = 0; i < rows * cols; i++)
        ref[i] = -ref[i];
    lt_session *s = open_session(m);
    lt_err err;
    /* the first run plans the memory; in the later ones the read takes
     * over the cell's storage (it dies there): same contents */
    for (int run = 0; run < 3; run++) {
        lt_mplan_stats m0, m1;
        lt_mplan_stats_get(&m0);
        lt_value *out = NULL;
        if (lt_session_run(s, in.n, in.names, in.vals, &out, &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_mplan_stats_get(&m1);
        tu_assert_close(out, ref, rows * cols, 1e-6, 1e-6, 7);
        if (run == 2 && lt_mplan_enabled() && !tu_device_path())
            assert_true(m1.inplace > m0.inplace);
        lt_value_free(out);
    }
    lt_session_free(s);
    free_ins(&in);
    free(ref);
    lt_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deferred_products),
        cmocka_unit_test(products_through_calls),
        cmocka_unit_test(cell_read_by_other_op),
        cmocka_unit_test(thin_cell),
        cmocka_unit_test(acc_add_sparse_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
