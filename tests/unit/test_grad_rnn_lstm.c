/* LSTMGrad against central finite differences (float64) over every input
 * (peepholes, input_forget, clip, activations, directions, lengths,
 * layout 1); the float32 and float16 paths against the double one on
 * larger sizes; omitted outputs; errors; the shape rules. */
#include "test_grad_rnn.h"
#include "ir/infer.h"

#define TOL 1e-5

static void run(const gcfg *c, bool through_kernel)
{
    gdata g;
    double worst[8];
    gr_init(c, &g);
    gr_check_fd(c, &g, TOL, worst);
    if (through_kernel)
        gr_check_fd_kernel(c, &g);
    gr_free(&g);
}

static void lstm_cases(void **state)
{
    (void)state;
    static const int64_t lens[3] = {3, 0, 2}, lens2[4] = {1, 4, 3, 2};
    gcfg c1 = {.name = "LSTM forward peepholes", .gates = 4, .S = 4, .B = 2, .I = 3, .H = 3, .bias = true,
               .h0 = true, .c0 = true, .peep = true, .seed = 41};
    run(&c1, true);
    gcfg c2 = {.name = "LSTM reverse lens", .gates = 4, .S = 3, .B = 3, .I = 2, .H = 3, .dir = 1, .bias = true,
               .h0 = true, .c0 = true, .peep = true, .lens = lens, .seed = 42};
    run(&c2, true);
    gcfg c3 = {.name = "LSTM bidirectional layout1 lens", .gates = 4, .S = 4, .B = 4, .I = 2, .H = 2, .dir = 2,
               .layout = 1, .bias = true, .h0 = true, .c0 = true, .peep = true, .lens = lens2, .seed = 43};
    run(&c3, true);
    gcfg c4 = {.name = "LSTM input_forget bidirectional", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 3, .dir = 2,
               .bias = true, .h0 = true, .c0 = true, .peep = true, .couple = true, .seed = 44};
    run(&c4, true);
    gcfg c5 = {.name = "LSTM clip 0.9 reverse layout1", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 3, .dir = 1,
               .layout = 1, .bias = true, .h0 = true, .c0 = true, .peep = true, .clip = 0.9f, .seed = 45};
    run(&c5, false);
    gcfg c6 = {.name = "LSTM no bias/states/peepholes", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 2, .seed = 46};
    run(&c6, false);
    gcfg c7 = {.name = "LSTM only dY_c", .gates = 4, .S = 3, .B = 3, .I = 2, .H = 2, .bias = true, .h0 = true,
               .c0 = true, .peep = true, .lens = lens, .no_dy = true, .no_dyh = true, .seed = 47};
    run(&c7, false);
    gcfg c8 = {.name = "LSTM no dY_c", .gates = 4, .S = 3, .B = 2, .I = 2, .H = 3, .dir = 2, .bias = true,
               .h0 = true, .c0 = true, .no_dyc = true, .seed = 48};
    run(&c8, false);
    /* empty sequences and batches: parameter gradients are zero, the state
     * gradients pass straight through */
    gcfg c9 = {.name = "LSTM S=0", .gates = 4, .S = 0, .B = 2, .I = 2, .H = 2, .dir = 2, .bias = true, .h0 = true,
               .c0 = true, .peep = true, .seed = 49};
    run(&c9, false);
    gcfg c10 = {.name = "LSTM B=0", .gates = 4, .S = 2, .B = 0, .I = 2, .H = 2, .bias = true, .h0 = true,
                .c0 = true, .peep = true, .seed = 50};
    run(&c10, false);
}

static void lstm_activations(void **state)
{
    (void)state;
    static const int64_t lens[2] = {3, 2};
    gcfg c1 = {.name = "LSTM HardSigmoid/Elu/Softplus", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 3, .bias = true,
               .h0 = true, .c0 = true, .peep = true, .nacts = 3, .acts = {"HardSigmoid", "Elu", "Softplus"},
               .nalpha = 2, .alist = {1.1f, 0.7f}, .nbeta = 1, .blist = {0.45f}, .seed = 51};
    run(&c1, false);
    gcfg c2 = {.name = "LSTM bidir Sigmoid/ScaledTanh/Softsign, ...", .gates = 4, .S = 3, .B = 2, .I = 2, .H = 2,
               .dir = 2, .bias = true, .h0 = true, .c0 = true, .peep = true, .lens = lens, .nacts = 6,
               .acts = {"Sigmoid", "ScaledTanh", "Softsign", "HardSigmoid", "Affine", "LeakyRelu"}, .nalpha = 4,
               .alist = {1.1f, 0.3f, 0.8f, 0.05f}, .nbeta = 3, .blist = {0.7f, 0.5f, 0.2f}, .seed = 52};
    run(&c2, false);
    gcfg c3 = {.name = "LSTM Sigmoid/Relu/ThresholdedRelu clip", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 3,
               .bias = true, .h0 = true, .c0 = true, .peep = true, .clip = 1.5f, .nacts = 3,
               .acts = {"Sigmoid", "Relu", "ThresholdedRelu"}, .nalpha = 1, .alist = {0.1f}, .seed = 53};
    run(&c3, false);
    gcfg c4 = {.name = "LSTM input_forget Sigmoid/Tanh/Tanh clip", .gates = 4, .S = 4, .B = 2, .I = 2, .H = 3,
               .bias = true, .h0 = true, .c0 = true, .peep = true, .couple = true, .clip = 0.8f, .seed = 54};
    run(&c4, false);
}

/* float32 (and float16) kernels against the double one, on sizes that take
 * the threaded paths */
static void compare_types(const gcfg *c, lt_dtype dt, double tol)
{
    gdata g;
    gr_init(c, &g);
    lt_value *ref[7], *got[7];
    gr_run_grad(c, &g, LT_F64, ref);
    gr_run_grad(c, &g, dt, got);
    int nout = c->gates == 4 ? 7 : 5;
    double worst = 0;
    for (int i = 0; i < nout; i++) {
        assert_int_equal(got[i]->t.numel, ref[i]->t.numel);
        double scale = 0;
        for (int64_t j = 0; j < ref[i]->t.numel; j++)
            scale = fmax(scale, fabs(tu_get(ref[i], j)));
        for (int64_t j = 0; j < ref[i]->t.numel; j++) {
            double e = fabs(tu_get(got[i], j) - tu_get(ref[i], j)) / fmax(scale, 1e-6);
            if (e > tol)
                fail_msg("%s %s output %d [%lld]: %.7g vs %.7g", c->name, lt_dtype_name(dt), i, (long long)j,
                         tu_get(got[i], j), tu_get(ref[i], j));
            worst = fmax(worst, e);
        }
    }
    printf("  %-44s %s vs double: worst %.1e (of each output's largest)\n", c->name, lt_dtype_name(dt), worst);
    gr_free_vals(ref, 7);
    gr_free_vals(got, 7);
    gr_free(&g);
}

/* Sizes whose final sums (dW, dR, dB) are split into pieces over threads
 * (rows x 4H x (H + I) past 8M multiply-adds), against finite differences
 * (the double reference takes H <= 8: a wide input instead) */
static void sums_in_pieces(void **state)
{
    (void)state;
    gcfg c = {.name = "LSTM sums in pieces", .gates = 4, .S = 8, .B = 128, .I = 255, .H = 8, .bias = true,
              .h0 = true, .c0 = true, .seed = 71};
    gdata g;
    double worst[8];
    gr_init(&c, &g);
    /* a loss summed over 1024 rows: central differences agree to about 2e-5 */
    gr_check_fd(&c, &g, 1e-4, worst);
    gr_free(&g);
}

static void float_paths(void **state)
{
    (void)state;
    static int64_t lens[200];
    for (int i = 0; i < 200; i++)
        lens[i] = 1 + i % 3;
    gcfg c1 = {.name = "LSTM big bidir lens", .gates = 4, .S = 3, .B = 160, .I = 24, .H = 64, .dir = 2,
               .bias = true, .h0 = true, .c0 = true, .peep = true, .lens = lens, .seed = 61};
    gcfg c2 = {.name = "GRU big lbr layout1", .gates = 3, .S = 3, .B = 200, .I = 16, .H = 64, .layout = 1,
               .bias = true, .h0 = true, .lbr = true, .seed = 62};
    gcfg c3 = {.name = "GRU big reverse", .gates = 3, .S = 3, .B = 200, .I = 16, .H = 64, .dir = 1, .bias = true,
               .h0 = true, .lens = lens, .seed = 63};
    gcfg c4 = {.name = "RNN big bidir", .gates = 1, .S = 4, .B = 700, .I = 16, .H = 64, .dir = 2, .bias = true,
               .h0 = true, .seed = 64};
    gcfg c5 = {.name = "LSTM small", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 3, .bias = true, .h0 = true,
               .c0 = true, .peep = true, .seed = 65};
    compare_types(&c1, LT_F32, 1e-4);
    compare_types(&c2, LT_F32, 1e-4);
    compare_types(&c3, LT_F32, 1e-4);
    compare_types(&c4, LT_F32, 1e-4);
    compare_types(&c5, LT_F16, 1e-2);
    /* float dR and dW made as one product buf^T [hx | X] (a thin input,
     * AVX-512): hidden 40 puts the seam of hx and X inside a 32-column
     * panel; an input of 70 columns keeps the two products apart */
    gcfg c6 = {.name = "LSTM dR with dW, seam in a panel", .gates = 4, .S = 3, .B = 64, .I = 20, .H = 40,
               .bias = true, .h0 = true, .c0 = true, .seed = 66};
    gcfg c7 = {.name = "LSTM wide input, dR and dW apart", .gates = 4, .S = 3, .B = 64, .I = 70, .H = 16,
               .bias = true, .h0 = true, .c0 = true, .seed = 67};
    compare_types(&c6, LT_F32, 1e-4);
    compare_types(&c7, LT_F32, 1e-4);
}

/* Only some results requested: the others are not computed. */
static void some_outputs(void **state)
{
    (void)state;
    gcfg c = {.name = "LSTM dW and dP only", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 2, .dir = 2, .bias = true,
              .h0 = true, .c0 = true, .peep = true, .seed = 71};
    gdata g;
    gr_init(&c, &g);
    lt_value *ref[7];
    gr_run_grad(&c, &g, LT_F64, ref);
    tu_graph gr = gr_node(&c, true);
    lt_value *vals[11];
    gr_inputs(&c, &g, &gr, LT_F64, true, vals);
    /* keep outputs 1 (dW) and 6 (dP) */
    lt_ival *keep[2] = {gr.node->out[1], gr.node->out[6]};
    for (int i = 0; i < 7; i++)
        if (i != 1 && i != 6)
            gr.node->out[i] = NULL;
    lt_block_set_results(gr.m, gr.m->main, 2);
    gr.m->main->results[0] = keep[0];
    gr.m->main->results[1] = keep[1];
    lt_value *out[2] = {NULL};
    lt_err err;
    if (tu_run(&gr, vals, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double want[64];
    for (int k = 0; k < 2; k++) {
        lt_value *r = ref[k ? 6 : 1];
        for (int64_t j = 0; j < r->t.numel; j++)
            want[j] = tu_get(r, j);
        tu_assert_close(out[k], want, r->t.numel, 1e-12, 1e-12, c.seed);
    }
    gr_free_vals(out, 2);
    gr_free_vals(vals, 11);
    gr_free_vals(ref, 7);
    tu_free(&gr);
    gr_free(&g);
}

static void errors(void **state)
{
    (void)state;
    gcfg c = {.name = "GRU errors", .gates = 3, .S = 3, .B = 2, .I = 3, .H = 2, .bias = true, .seed = 81};
    gdata g;
    gr_init(&c, &g);
    tu_graph gr = gr_node(&c, true);
    lt_value *vals[11], *out[5] = {NULL};
    gr_inputs(&c, &g, &gr, LT_F32, true, vals);
    lt_err err;
    /* dY_h with the wrong shape */
    lt_value_free(vals[7]);
    vals[7] = tu_rand(LT_F32, 3, (int64_t[]){1, 3, 2}, -1, 1, 5);
    assert_int_equal(tu_run(&gr, vals, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "dY_h"));
    /* W that disagrees with hidden_size: the forward op's own check */
    lt_value_free(vals[7]);
    vals[7] = tu_rand(LT_F32, 3, (int64_t[]){1, 2, 2}, -1, 1, 5);
    lt_value_free(vals[1]);
    vals[1] = tu_rand(LT_F32, 3, (int64_t[]){1, 9, 3}, -1, 1, 6);
    assert_int_equal(tu_run(&gr, vals, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "W must be"));
    /* integer cotangent */
    lt_value_free(vals[1]);
    vals[1] = tu_rand(LT_F32, 3, (int64_t[]){1, 6, 3}, -1, 1, 6);
    lt_value_free(vals[6]);
    vals[6] = tu_rand(LT_I32, 4, g.ydims, -3, 3, 7);
    assert_int_equal(tu_run(&gr, vals, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "dY"));
    gr_free_vals(vals, 11);
    tu_free(&gr);
    gr_free(&g);
}

static void set_in(tu_graph *g, int i, lt_dtype dt, int rank, const int64_t *dims)
{
    lt_type_tensor(&g->m->main->params[i]->type, dt, rank, dims);
}

static void expect_dims(const lt_node *n, int out, lt_dtype dt, int rank, const int64_t *dims)
{
    const lt_type *t = &n->out[out]->type;
    if (t->dtype != dt || t->rank != rank)
        fail_msg("output %d: dtype %d rank %d, expected %d and %d", out, t->dtype, t->rank, dt, rank);
    for (int i = 0; i < rank; i++)
        if (t->dims[i].sym >= 0 || t->dims[i].v != dims[i])
            fail_msg("output %d dim %d is %lld, expected %lld", out, i, (long long)t->dims[i].v, (long long)dims[i]);
}

/* forgets what the outputs said: inference refines declared types */
static lt_status infer(tu_graph *g)
{
    lt_err err;
    for (int i = 0; i < g->node->nout; i++)
        lt_type_unknown(&g->node->out[i]->type, LT_UNDEFINED, -1);
    return lt_infer_module(g->m, &err);
}

static void shapes(void **state)
{
    (void)state;
    /* LSTM, bidirectional, layout 1, B/h0/c0/P omitted */
    tu_graph g = tu_single(LT_OP_LSTM_GRAD, 14, 11, 7);
    tu_attr_str(&g, "direction", "bidirectional");
    tu_attr_int(&g, "layout", 1);
    set_in(&g, 0, LT_F32, 3, (int64_t[]){5, 7, 3});
    set_in(&g, 1, LT_F32, 3, (int64_t[]){2, 16, 3});
    set_in(&g, 2, LT_F32, 3, (int64_t[]){2, 16, 4});
    set_in(&g, 8, LT_F32, 4, (int64_t[]){5, 7, 2, 4});
    for (int i = 3; i < 8; i++)
        tu_omit_input(&g, i);
    for (int i = 9; i < 11; i++)
        tu_omit_input(&g, i);
    assert_int_equal(infer(&g), LT_OK);
    expect_dims(g.node, 0, LT_F32, 3, (int64_t[]){5, 7, 3});
    expect_dims(g.node, 1, LT_F32, 3, (int64_t[]){2, 16, 3});
    expect_dims(g.node, 2, LT_F32, 3, (int64_t[]){2, 16, 4});
    expect_dims(g.node, 3, LT_F32, 2, (int64_t[]){2, 32});
    expect_dims(g.node, 4, LT_F32, 3, (int64_t[]){5, 2, 4});
    expect_dims(g.node, 5, LT_F32, 3, (int64_t[]){5, 2, 4});
    expect_dims(g.node, 6, LT_F32, 2, (int64_t[]){2, 12});
    tu_free(&g);
    /* GRU with every input given: the gradients take their types */
    g = tu_single(LT_OP_GRU_GRAD, 14, 8, 5);
    tu_attr_int(&g, "hidden_size", 2);
    set_in(&g, 0, LT_F64, 3, (int64_t[]){4, 3, 5});
    set_in(&g, 1, LT_F64, 3, (int64_t[]){1, 6, 5});
    set_in(&g, 2, LT_F64, 3, (int64_t[]){1, 6, 2});
    set_in(&g, 3, LT_F64, 2, (int64_t[]){1, 12});
    set_in(&g, 4, LT_I32, 1, (int64_t[]){3});
    set_in(&g, 5, LT_F64, 3, (int64_t[]){1, 3, 2});
    set_in(&g, 6, LT_F64, 4, (int64_t[]){4, 1, 3, 2});
    set_in(&g, 7, LT_F64, 3, (int64_t[]){1, 3, 2});
    assert_int_equal(infer(&g), LT_OK);
    expect_dims(g.node, 0, LT_F64, 3, (int64_t[]){4, 3, 5});
    expect_dims(g.node, 3, LT_F64, 2, (int64_t[]){1, 12});
    expect_dims(g.node, 4, LT_F64, 3, (int64_t[]){1, 3, 2});
    /* X of rank 2 is a definite error */
    set_in(&g, 0, LT_F64, 2, (int64_t[]){4, 3});
    assert_int_equal(infer(&g), LT_ERR_INVALID);
    tu_free(&g);
    /* RNN, h0 omitted, layout 0, X unranked: what is known is kept */
    g = tu_single(LT_OP_RNN_GRAD, 14, 8, 5);
    tu_attr_str(&g, "direction", "reverse");
    set_in(&g, 1, LT_F32, 3, (int64_t[]){1, 3, 4});
    set_in(&g, 2, LT_F32, 3, (int64_t[]){1, 3, 3});
    for (int i = 3; i < 8; i++)
        tu_omit_input(&g, i);
    assert_int_equal(infer(&g), LT_OK);
    expect_dims(g.node, 3, LT_F32, 2, (int64_t[]){1, 6});
    const lt_type *h = &g.node->out[4]->type;
    assert_int_equal(h->rank, 3);
    assert_int_equal(h->dims[0].v, 1);
    assert_int_equal(h->dims[2].v, 3);
    tu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lstm_cases), cmocka_unit_test(lstm_activations), cmocka_unit_test(float_paths),
        cmocka_unit_test(sums_in_pieces),
        cmocka_unit_test(some_outputs), cmocka_unit_test(errors), cmocka_unit_test(shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
