/* The workspace path of the recurrent gradients: an RNN/GRU/LSTM node with
 * the extra output the AD adds runs the recording forward, whose Y, Y_h and
 * Y_c must match the plain forward kernel's, and RNNGrad/GRUGrad/LSTMGrad
 * fed that workspace must give what they give when they re-run the
 * recurrence themselves (double and float, with lengths, directions,
 * layouts, clip, peepholes and other activations); a workspace of the
 * wrong size is an error; with threads, the batch cut into slices gives
 * what one thread gives. */
#include "test_grad_rnn.h"
#include <omp.h>

static int nfin(const gcfg *c) { return c->gates == 4 ? 8 : 6; }
static int ncot(const gcfg *c) { return c->gates == 4 ? 3 : 2; }

/* gr_node's attributes on a node with extra inputs or outputs */
static tu_graph ws_node(const gcfg *c, bool grad, int nin, int nout)
{
    tu_graph ref = gr_node(c, grad);
    tu_graph g = tu_single(ref.node->op, 14, nin, nout);
    g.node->nattr = ref.node->nattr;
    g.node->attrs = lt_ir_alloc(g.m, sizeof(lt_attr) * (size_t)(ref.node->nattr ? ref.node->nattr : 1));
    for (int i = 0; i < ref.node->nattr; i++) {
        lt_attr a = ref.node->attrs[i];
        a.name = lt_ir_strdup(g.m, a.name);
        if (a.kind == LT_ATTR_STRING)
            a.s = lt_ir_strdup(g.m, a.s);
        if (a.kind == LT_ATTR_FLOATS) {
            float *f = lt_ir_alloc(g.m, sizeof(float) * (size_t)a.n);
            memcpy(f, a.floats, sizeof(float) * (size_t)a.n);
            a.floats = f;
        }
        if (a.kind == LT_ATTR_STRINGS) {
            const char **s = lt_ir_alloc(g.m, sizeof(char *) * (size_t)a.n);
            for (int j = 0; j < a.n; j++)
                s[j] = lt_ir_strdup(g.m, a.strings[j]);
            a.strings = s;
        }
        g.node->attrs[i] = a;
    }
    tu_free(&ref);
    return g;
}

/* the largest |a - b| / (atol + rtol |b|) */
static double mismatch(const lt_value *a, const lt_value *b, double atol, double rtol)
{
    assert_int_equal(a->t.numel, b->t.numel);
    double m = 0;
    for (int64_t j = 0; j < a->t.numel; j++)
        m = fmax(m, fabs(tu_get(a, j) - tu_get(b, j)) / (atol + rtol * fabs(tu_get(b, j))));
    return m;
}

/* Float sums may be split differently (the batch over threads), so float
 * results agree to rounding, double ones nearly exactly. */
static void check(const gcfg *c, lt_dtype dt)
{
    double atol = dt == LT_F64 ? 1e-13 : 1e-6, rtol = dt == LT_F64 ? 1e-11 : 1e-4;
    gdata g;
    gr_init(c, &g);
    int nf = nfin(c), nc = ncot(c), nres = c->gates == 4 ? 7 : 5;
    lt_err err;

    /* plain forward */
    tu_graph pf = gr_node(c, false);
    lt_value *vals[12], *py[3] = {NULL};
    gr_inputs(c, &g, &pf, dt, false, vals);
    if (tu_run(&pf, vals, py, &err) != LT_OK)
        fail_msg("%s forward: %s", c->name, err.msg);
    gr_free_vals(vals, 11);
    tu_free(&pf);

    /* recording forward: the ONNX outputs, then the workspace */
    tu_graph rf = ws_node(c, false, nf, nc + 1);
    lt_value *ry[4] = {NULL};
    gr_inputs(c, &g, &rf, dt, false, vals);
    if (tu_run(&rf, vals, ry, &err) != LT_OK)
        fail_msg("%s recording forward: %s", c->name, err.msg);
    gr_free_vals(vals, 11);
    tu_free(&rf);
    for (int i = 0; i < nc; i++) {
        double d = mismatch(ry[i], py[i], atol, rtol);
        if (d > 1)
            fail_msg("%s (%s): recording forward output %d differs from the forward kernel's (%.3g)", c->name,
                     lt_dtype_name(dt), i, d);
    }
    lt_value *ws = ry[nc];
    assert_int_equal(ws->t.dtype, dt == LT_F64 ? LT_F64 : LT_F32);

    /* gradient re-running the recurrence, then fed the workspace */
    lt_value *ga[7], *gb[7] = {NULL};
    gr_run_grad(c, &g, dt, ga);
    tu_graph gw = ws_node(c, true, nf + nc + 1, nres);
    gr_inputs(c, &g, &gw, dt, true, vals);
    vals[nf + nc] = ws;
    if (tu_run(&gw, vals, gb, &err) != LT_OK)
        fail_msg("%s gradient with workspace: %s", c->name, err.msg);
    vals[nf + nc] = NULL;
    gr_free_vals(vals, 11);
    tu_free(&gw);
    for (int o = 0; o < nres; o++) {
        double d = mismatch(gb[o], ga[o], atol, rtol);
        if (d > 1)
            fail_msg("%s (%s): gradient output %d differs with the workspace (%.3g)", c->name, lt_dtype_name(dt),
                     o, d);
    }

    /* a workspace of another node's size is refused */
    if (c->S > 1) {
        gcfg c2 = *c;
        c2.S = c->S - 1;
        c2.lens = NULL;
        gdata g2;
        gr_init(&c2, &g2);
        tu_graph bad = ws_node(&c2, true, nf + nc + 1, nres);
        lt_value *bv[12], *bo[7] = {NULL};
        gr_inputs(&c2, &g2, &bad, dt, true, bv);
        bv[nf + nc] = ws;
        assert_int_not_equal(tu_run(&bad, bv, bo, &err), LT_OK);
        assert_non_null(strstr(err.msg, "workspace"));
        bv[nf + nc] = NULL;
        gr_free_vals(bv, 11);
        tu_free(&bad);
        gr_free(&g2);
    }

    gr_free_vals(ga, nres);
    gr_free_vals(gb, nres);
    gr_free_vals(ry, nc + 1);
    gr_free_vals(py, nc);
    gr_free(&g);
}

/* Y, Y_h (Y_c) of the recording forward and every gradient fed its
 * workspace (out: nc results, then 7 gradients) */
static void ws_run(const gcfg *c, gdata *g, lt_dtype dt, lt_value **out)
{
    int nf = nfin(c), nc = ncot(c), nres = c->gates == 4 ? 7 : 5;
    lt_err err;
    lt_value *vals[12], *ry[4] = {NULL};
    tu_graph rf = ws_node(c, false, nf, nc + 1);
    gr_inputs(c, g, &rf, dt, false, vals);
    if (tu_run(&rf, vals, ry, &err) != LT_OK)
        fail_msg("%s recording forward: %s", c->name, err.msg);
    gr_free_vals(vals, 11);
    tu_free(&rf);
    tu_graph gw = ws_node(c, true, nf + nc + 1, nres);
    gr_inputs(c, g, &gw, dt, true, vals);
    vals[nf + nc] = ry[nc];
    for (int o = 0; o < 7; o++)
        out[nc + o] = NULL;
    if (tu_run(&gw, vals, out + nc, &err) != LT_OK)
        fail_msg("%s gradient with workspace: %s", c->name, err.msg);
    vals[nf + nc] = NULL;
    gr_free_vals(vals, 11);
    lt_value_free(ry[nc]);
    tu_free(&gw);
    for (int i = 0; i < nc; i++)
        out[i] = ry[i];
}

/* The steps cut the batch into slices of 32 entries (an odd last one
 * here) that one thread runs in turn and several take as they finish:
 * everything is as with one thread, bit for bit within rounding of the
 * BLAS's products (on a CPU without AVX-512 a BLAS product of the whole
 * batch rounds differently from one of a slice) */
static void slices(const gcfg *c)
{
    int nc = ncot(c), nres = c->gates == 4 ? 7 : 5, saved = omp_get_max_threads();
    gdata g;
    gr_init(c, &g);
    lt_value *one[10], *two[10];
    omp_set_num_threads(1);
    ws_run(c, &g, LT_F32, one);
    lt_value *one_re[7], *two_re[7];
    gr_run_grad(c, &g, LT_F32, one_re);
    omp_set_num_threads(saved > 2 ? saved : 2);
    ws_run(c, &g, LT_F32, two);
    gr_run_grad(c, &g, LT_F32, two_re);
    omp_set_num_threads(saved);
    for (int i = 0; i < nc + nres; i++) {
        double d = mismatch(two[i], one[i], 1e-6, 1e-4);
        if (d > 1)
            fail_msg("%s: result %d differs between one thread and two (%.3g)", c->name, i, d);
    }
    for (int i = 0; i < nres; i++) {
        double d = mismatch(two_re[i], one_re[i], 1e-6, 1e-4);
        if (d > 1)
            fail_msg("%s: re-run gradient %d differs between one thread and two (%.3g)", c->name, i, d);
    }
    gr_free_vals(one, nc + 7);
    gr_free_vals(two, nc + 7);
    gr_free_vals(one_re, 7);
    gr_free_vals(two_re, 7);
    gr_free(&g);
}

static void batch_slices(void **state)
{
    (void)state;
    static int64_t lens[131];
    for (int i = 0; i < 131; i++)
        lens[i] = 1 + (i * 7) % 5;
    gcfg c1 = {.name = "LSTM B=131 fused bidirectional layout1", .gates = 4, .S = 5, .B = 131, .I = 6, .H = 32,
               .dir = 2, .layout = 1, .bias = true, .h0 = true, .c0 = true, .seed = 101};
    slices(&c1);
    gcfg c2 = {.name = "LSTM B=131 lens peepholes", .gates = 4, .S = 5, .B = 131, .I = 6, .H = 32, .bias = true,
               .h0 = true, .c0 = true, .peep = true, .lens = lens, .seed = 102};
    slices(&c2);
    gcfg c3 = {.name = "GRU B=131 reverse", .gates = 3, .S = 6, .B = 131, .I = 5, .H = 32, .dir = 1, .bias = true,
               .h0 = true, .seed = 103};
    slices(&c3);
    gcfg c4 = {.name = "RNN B=131", .gates = 1, .S = 8, .B = 131, .I = 5, .H = 48, .bias = true, .h0 = true,
               .seed = 104};
    slices(&c4);
}

static void both(const gcfg *c)
{
    check(c, LT_F64);
    check(c, LT_F32);
}

static void rnn_ws(void **state)
{
    (void)state;
    static const int64_t lens[3] = {3, 0, 2};
    gcfg c1 = {.name = "RNN", .gates = 1, .S = 4, .B = 2, .I = 3, .H = 4, .bias = true, .h0 = true, .seed = 71};
    both(&c1);
    gcfg c2 = {.name = "RNN bidirectional layout1 lens clip", .gates = 1, .S = 3, .B = 3, .I = 2, .H = 3, .dir = 2,
               .layout = 1, .bias = true, .h0 = true, .lens = lens, .clip = 0.7f, .seed = 72};
    both(&c2);
    gcfg c3 = {.name = "RNN reverse Relu/Softsign", .gates = 1, .S = 3, .B = 2, .I = 3, .H = 3, .dir = 2,
               .nacts = 2, .acts = {"Relu", "Softsign"}, .seed = 73};
    both(&c3);
}

static void gru_ws(void **state)
{
    (void)state;
    static const int64_t lens[4] = {1, 4, 3, 2};
    gcfg c1 = {.name = "GRU", .gates = 3, .S = 4, .B = 2, .I = 3, .H = 3, .bias = true, .h0 = true, .seed = 81};
    both(&c1);
    gcfg c2 = {.name = "GRU lbr bidirectional lens", .gates = 3, .S = 4, .B = 4, .I = 2, .H = 2, .dir = 2,
               .bias = true, .h0 = true, .lbr = true, .lens = lens, .seed = 82};
    both(&c2);
    gcfg c3 = {.name = "GRU reverse layout1 clip no bias", .gates = 3, .S = 3, .B = 2, .I = 2, .H = 3, .dir = 1,
               .layout = 1, .clip = 0.9f, .seed = 83};
    both(&c3);
    /* large enough for the steps to split the batch over threads */
    gcfg c4 = {.name = "GRU B=64 H=48", .gates = 3, .S = 6, .B = 64, .I = 5, .H = 48, .bias = true, .h0 = true,
               .seed = 84};
    both(&c4);
}

static void lstm_ws(void **state)
{
    (void)state;
    static const int64_t lens[3] = {3, 0, 2};
    gcfg c1 = {.name = "LSTM peepholes", .gates = 4, .S = 4, .B = 2, .I = 3, .H = 3, .bias = true, .h0 = true,
               .c0 = true, .peep = true, .seed = 91};
    both(&c1);
    gcfg c2 = {.name = "LSTM bidirectional layout1 lens", .gates = 4, .S = 3, .B = 3, .I = 2, .H = 2, .dir = 2,
               .layout = 1, .bias = true, .h0 = true, .c0 = true, .peep = true, .lens = lens, .seed = 92};
    both(&c2);
    gcfg c3 = {.name = "LSTM input_forget clip", .gates = 4, .S = 4, .B = 2, .I = 2, .H = 3, .bias = true,
               .h0 = true, .c0 = true, .peep = true, .couple = true, .clip = 0.8f, .seed = 93};
    both(&c3);
    gcfg c4 = {.name = "LSTM HardSigmoid/Elu/Softplus no states", .gates = 4, .S = 3, .B = 2, .I = 3, .H = 3,
               .bias = true, .nacts = 3, .acts = {"HardSigmoid", "Elu", "Softplus"}, .nalpha = 2,
               .alist = {1.1f, 0.7f}, .nbeta = 1, .blist = {0.45f}, .seed = 94};
    both(&c4);
    /* large enough for the steps to split the batch over threads */
    gcfg c5 = {.name = "LSTM B=64 H=48", .gates = 4, .S = 5, .B = 64, .I = 7, .H = 48, .bias = true, .h0 = true,
               .c0 = true, .seed = 95};
    both(&c5);
    /* the recording forward's fused input projection (float, AVX-512:
     * x_t W^T in each step's product): both directions, layout 1 (x_t rows
     * S * I apart), no bias, coupled gates with peepholes, odd sizes */
    gcfg c6 = {.name = "LSTM fused bidirectional layout1 input_forget no bias", .gates = 4, .S = 5, .B = 19, .I = 9,
               .H = 37, .dir = 2, .layout = 1, .h0 = true, .c0 = true, .peep = true, .couple = true, .seed = 96};
    both(&c6);
    /* sequence_lens given, every entry the full length: fused too */
    static const int64_t full[17] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
    gcfg c7 = {.name = "LSTM fused reverse full lens", .gates = 4, .S = 4, .B = 17, .I = 5, .H = 21, .dir = 1,
               .bias = true, .h0 = true, .lens = full, .seed = 97};
    both(&c7);
}

/* The largest |a - b| over b's largest |value| (at least 1e-6) */
static double rel_to_max(const lt_value *a, const lt_value *b)
{
    assert_int_equal(a->t.numel, b->t.numel);
    double scale = 1e-6, m = 0;
    for (int64_t j = 0; j < b->t.numel; j++)
        scale = fmax(scale, fabs(tu_get(b, j)));
    for (int64_t j = 0; j < a->t.numel; j++)
        m = fmax(m, fabs(tu_get(a, j) - tu_get(b, j)));
    return m / scale;
}

/* The float LSTM with default activations and no clip records activated
 * gates and runs each step's gate arithmetic in one pass per batch entry
 * (AVX-512 where the CPU has it, lstm_row_fwd/bwd in grad_rnn_tmpl.h):
 * its recording forward and its gradient fed that workspace against the
 * double kernels' forward and re-running gradient (finite-difference
 * checked in test_grad_rnn_lstm). */
static void fast_f32(const gcfg *c)
{
    gdata g;
    gr_init(c, &g);
    int nf = nfin(c), nc = ncot(c);
    lt_err err;
    tu_graph pf = gr_node(c, false);
    lt_value *vals[12], *py[3] = {NULL};
    gr_inputs(c, &g, &pf, LT_F64, false, vals);
    if (tu_run(&pf, vals, py, &err) != LT_OK)
        fail_msg("%s forward: %s", c->name, err.msg);
    gr_free_vals(vals, 11);
    tu_free(&pf);
    lt_value *ref[7];
    gr_run_grad(c, &g, LT_F64, ref);

    tu_graph rf = ws_node(c, false, nf, nc + 1);
    lt_value *ry[4] = {NULL};
    gr_inputs(c, &g, &rf, LT_F32, false, vals);
    if (tu_run(&rf, vals, ry, &err) != LT_OK)
        fail_msg("%s recording forward: %s", c->name, err.msg);
    gr_free_vals(vals, 11);
    tu_free(&rf);
    for (int i = 0; i < nc; i++) {
        double e = rel_to_max(ry[i], py[i]);
        if (e > 1e-5)
            fail_msg("%s: float recording forward output %d off by %.3g of its largest", c->name, i, e);
    }
    tu_graph gw = ws_node(c, true, nf + nc + 1, 7);
    lt_value *got[7] = {NULL};
    gr_inputs(c, &g, &gw, LT_F32, true, vals);
    vals[nf + nc] = ry[nc];
    if (tu_run(&gw, vals, got, &err) != LT_OK)
        fail_msg("%s gradient with workspace: %s", c->name, err.msg);
    vals[nf + nc] = NULL;
    gr_free_vals(vals, 11);
    tu_free(&gw);
    for (int o = 0; o < 7; o++) {
        double e = rel_to_max(got[o], ref[o]);
        if (e > 1e-4)
            fail_msg("%s: float gradient output %d off by %.3g of its largest", c->name, o, e);
    }
    gr_free_vals(got, 7);
    gr_free_vals(ref, 7);
    gr_free_vals(ry, nc + 1);
    gr_free_vals(py, nc);
    gr_free(&g);
}

static void lstm_fast_rows(void **state)
{
    (void)state;
    static int64_t lens[40];
    for (int i = 0; i < 40; i++)
        lens[i] = i % 7 == 3 ? 0 : 1 + (i * 3) % 5;
    /* odd H past a 16-lane vector, batch >= 16; every direction, both layouts */
    gcfg c1 = {.name = "LSTM fast forward", .gates = 4, .S = 6, .B = 19, .I = 11, .H = 37, .bias = true,
               .h0 = true, .c0 = true, .seed = 101};
    gcfg c2 = {.name = "LSTM fast reverse layout1 peepholes lens", .gates = 4, .S = 6, .B = 21, .I = 5, .H = 19,
               .dir = 1, .layout = 1, .bias = true, .h0 = true, .c0 = true, .peep = true, .lens = lens, .seed = 102};
    gcfg c3 = {.name = "LSTM fast bidirectional input_forget peepholes lens", .gates = 4, .S = 5, .B = 17, .I = 9,
               .H = 33, .dir = 2, .bias = true, .h0 = true, .c0 = true, .peep = true, .couple = true, .lens = lens,
               .seed = 103};
    gcfg c4 = {.name = "LSTM fast bidirectional layout1 input_forget no bias/states", .gates = 4, .S = 4, .B = 16,
               .I = 3, .H = 7, .dir = 2, .layout = 1, .couple = true, .seed = 104};
    /* large enough for the steps to split the batch over threads */
    gcfg c5 = {.name = "LSTM fast B=33 H=64", .gates = 4, .S = 4, .B = 33, .I = 13, .H = 64, .bias = true,
               .h0 = true, .c0 = true, .peep = true, .seed = 105};
    fast_f32(&c1);
    fast_f32(&c2);
    fast_f32(&c3);
    fast_f32(&c4);
    /* no dY: only Y_h and Y_c carry gradient in */
    gcfg c6 = {.name = "LSTM fast bidirectional no dY", .gates = 4, .S = 5, .B = 18, .I = 6, .H = 21, .dir = 2,
               .bias = true, .h0 = true, .c0 = true, .no_dy = true, .lens = lens, .seed = 106};
    fast_f32(&c5);
    fast_f32(&c6);
}

/* The fast LSTM's bias gradient is summed during its backward steps, per
 * group of 8 batch entries (the steps' slices are whole groups), the
 * groups added in order at the end: the same bits with 1, 2 and 3 threads,
 * and against the double kernels as every other result (fast_f32); both
 * directions, layout 1, and a batch whose last group is short. */
static void fused_bias_threads(void **state)
{
    (void)state;
    gcfg cs[2] = {{.name = "LSTM fast B=40 H=64 bias sums", .gates = 4, .S = 6, .B = 40, .I = 5, .H = 64, .bias = true,
                   .h0 = true, .c0 = true, .seed = 111},
                  {.name = "LSTM fast B=45 bidirectional layout1 bias sums", .gates = 4, .S = 6, .B = 45, .I = 7,
                   .H = 48, .dir = 2, .layout = 1, .bias = true, .h0 = true, .c0 = true, .peep = true, .seed = 112}};
    int saved = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        const gcfg *c = &cs[k];
        fast_f32(c);
        gdata g;
        gr_init(c, &g);
        int nc = ncot(c);
        lt_value *res[3][10];
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            ws_run(c, &g, LT_F32, res[t]);
        }
        omp_set_num_threads(saved);
        const lt_value *db1 = res[0][nc + 3];
        for (int t = 1; t < 3; t++) {
            const lt_value *db = res[t][nc + 3];
            assert_int_equal(db->t.numel, db1->t.numel);
            if (memcmp(db->t.data, db1->t.data, sizeof(float) * (size_t)db1->t.numel) != 0)
                fail_msg("%s: dB with %d threads differs from one thread's", c->name, t + 1);
        }
        for (int t = 0; t < 3; t++)
            gr_free_vals(res[t], nc + 7);
        gr_free(&g);
    }
}

int main(void)
{
    (void)gr_check_fd; /* the shared header's finite-difference checks are the other suites' */
    (void)gr_check_fd_kernel;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_ws),
        cmocka_unit_test(gru_ws),
        cmocka_unit_test(lstm_ws),
        cmocka_unit_test(lstm_fast_rows),
        cmocka_unit_test(batch_slices),
        cmocka_unit_test(fused_bias_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
