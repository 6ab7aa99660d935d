/* RNN, GRU and LSTM on double inputs: every feature against the double
 * transcription in test_rnn.h to 1e-12, results that are not float values
 * in disguise, and central differences at h = 1e-6 (what the gradient
 * checker takes) that match the reference's. */
#include "test_rnn.h"

static void rnn_f64(void **state)
{
    (void)state;
    cfg c = {.op = LT_OP_RNN, .gates = 1, .S = 4, .B = 3, .I = 3, .H = 5, .bias = true, .init = true, .dt = LT_F64};
    rnn_check(&c, 101);
    static const int64_t lens[3] = {3, 1, 0};
    cfg c2 = {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 3, .I = 2, .H = 4, .dir = 2, .layout = 1, .bias = true,
              .seqlens = true, .lens = lens, .dt = LT_F64, .nacts = 2, .acts = {"Softplus", "LeakyRelu"},
              .alpha = {0, 0.15}, .nalpha = 1, .alist = {0.15f}};
    rnn_check(&c2, 102);
    /* Y left out */
    cfg c3 = {.op = LT_OP_RNN, .gates = 1, .S = 4, .B = 2, .I = 3, .H = 3, .dir = 1, .init = true, .clip = 0.6f,
              .dt = LT_F64, .nacts = 1, .acts = {"ThresholdedRelu"}, .alpha = {0.05}, .nalpha = 1,
              .alist = {0.05f}, .omit = 1};
    rnn_check(&c3, 103);
    /* one activation list for both directions; Y_h left out */
    cfg c4 = {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 2, .I = 2, .H = 3, .dir = 2, .bias = true, .clip = 1.5f,
              .dt = LT_F64, .nacts = 1, .acts = {"Softsign"}, .omit = 2};
    rnn_check(&c4, 104);
    /* large enough for the threaded step and bias loops */
    cfg c5 = {.op = LT_OP_RNN, .gates = 1, .S = 2, .B = 180, .I = 16, .H = 190, .bias = true, .init = true,
              .dt = LT_F64};
    rnn_check(&c5, 105);
}

static void gru_f64(void **state)
{
    (void)state;
    static const int64_t lens[3] = {2, 3, 1};
    cfg c = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 3, .I = 3, .H = 4, .bias = true, .init = true,
             .seqlens = true, .lens = lens, .dt = LT_F64};
    rnn_check(&c, 201);
    cfg c2 = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 2, .layout = 1, .bias = true,
              .init = true, .lbr = true, .clip = 0.7f, .dt = LT_F64, .nacts = 4,
              .acts = {"HardSigmoid", "Elu", "Sigmoid", "Affine"}, .alpha = {0.25, 0.6, 0, 0.9},
              .beta = {0.55, 0, 0, 0.1}, .nalpha = 3, .alist = {0.25f, 0.6f, 0.9f}, .nbeta = 2,
              .blist = {0.55f, 0.1f}};
    rnn_check(&c2, 202);
    cfg c3 = {.op = LT_OP_GRU, .gates = 3, .S = 4, .B = 2, .I = 2, .H = 3, .dir = 1, .init = true, .lbr = true,
              .dt = LT_F64, .nacts = 2, .acts = {"Sigmoid", "ScaledTanh"}, .alpha = {0, 1.3}, .beta = {0, 0.7},
              .nalpha = 1, .alist = {1.3f}, .nbeta = 1, .blist = {0.7f}, .omit = 1};
    rnn_check(&c3, 203);
    static const int64_t lens2[2] = {0, 2};
    cfg c4 = {.op = LT_OP_GRU, .gates = 3, .S = 2, .B = 2, .I = 3, .H = 3, .dir = 2, .layout = 1, .bias = true,
              .seqlens = true, .lens = lens2, .dt = LT_F64, .nacts = 4,
              .acts = {"Softsign", "Tanh", "Sigmoid", "Softplus"}, .omit = 2};
    rnn_check(&c4, 204);
    cfg c5 = {.op = LT_OP_GRU, .gates = 3, .S = 2, .B = 64, .I = 16, .H = 180, .bias = true, .init = true,
              .dt = LT_F64};
    rnn_check(&c5, 205);
    c5.lbr = true;
    rnn_check(&c5, 206);
}

static void lstm_f64(void **state)
{
    (void)state;
    static const int64_t lens[3] = {1, 4, 2};
    cfg c = {.op = LT_OP_LSTM, .gates = 4, .S = 4, .B = 3, .I = 3, .H = 5, .dir = 2, .bias = true, .seqlens = true,
             .lens = lens, .init = true, .peep = true, .dt = LT_F64};
    rnn_check(&c, 301);
    cfg c2 = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 2, .H = 3, .bias = true, .couple = true,
              .clip = 0.9f, .dt = LT_F64, .nacts = 3, .acts = {"HardSigmoid", "ScaledTanh", "Elu"},
              .alpha = {0.3, 0.8, 0.9}, .beta = {0.4, 1.2}, .nalpha = 3, .alist = {0.3f, 0.8f, 0.9f}, .nbeta = 2,
              .blist = {0.4f, 1.2f}};
    rnn_check(&c2, 302);
    /* only Y_h */
    cfg c3 = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 3, .H = 2, .dir = 1, .layout = 1, .init = true,
              .peep = true, .clip = 0.5f, .dt = LT_F64, .omit = 5};
    rnn_check(&c3, 303);
    static const int64_t lens2[2] = {3, 1};
    cfg c4 = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 2, .H = 3, .dir = 2, .layout = 1, .bias = true,
              .init = true, .peep = true, .couple = true, .seqlens = true, .lens = lens2, .dt = LT_F64, .nacts = 6,
              .acts = {"Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Softsign", "ThresholdedRelu"},
              .alpha = {0, 0, 0, 0.35, 0, 0.02}, .beta = {0, 0, 0, 0.45}, .nalpha = 2, .alist = {0.35f, 0.02f},
              .nbeta = 1, .blist = {0.45f}, .omit = 1};
    rnn_check(&c4, 304);
    int64_t lens3[64];
    for (int b = 0; b < 64; b++)
        lens3[b] = b * 5 % 4;
    cfg c5 = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 64, .I = 16, .H = 136, .bias = true, .init = true,
              .seqlens = true, .lens = lens3, .dt = LT_F64};
    rnn_check(&c5, 305);
}

/* The same float-valued inputs through both paths: the double results agree
 * with the float ones to float accuracy and with the reference to double
 * accuracy, and most of them are not float values (so no float rounding
 * sits anywhere in between). */
static void both_paths(void **state)
{
    (void)state;
    static const int64_t lens[2] = {3, 2};
    const cfg cases[3] = {
        {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 2, .bias = true, .init = true},
        {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .bias = true, .lbr = true, .seqlens = true,
         .lens = lens},
        {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 3, .H = 4, .layout = 1, .bias = true, .init = true,
         .peep = true},
    };
    for (int n = 0; n < 3; n++) {
        const cfg *c = &cases[n];
        uint64_t seed = 400 + (uint64_t)n;
        ins in32, in64 = {{NULL}};
        rnn_make_inputs(c, LT_F32, seed, &in32);
        for (int i = 0; i < 8; i++) {
            lt_value *v = in32.v[i];
            if (!v)
                continue;
            double *vals = malloc(sizeof *vals * (size_t)(v->t.numel ? v->t.numel : 1));
            assert_non_null(vals);
            for (int64_t j = 0; j < v->t.numel; j++)
                vals[j] = tu_get(v, j);
            in64.v[i] = tu_from(v->t.dtype == LT_F32 ? LT_F64 : v->t.dtype, v->t.rank, v->t.dims, vals);
            free(vals);
        }
        lt_value *o32[3], *o64[3];
        rnn_run_node(c, &in32, o32, seed);
        rnn_run_node(c, &in64, o64, seed);
        int64_t ny = o64[0]->t.numel, non_float = 0;
        double *Y = malloc(sizeof *Y * (size_t)ny), *Yh = malloc(sizeof *Yh * (size_t)ny),
               *Yc = malloc(sizeof *Yc * (size_t)ny);
        assert_true(Y && Yh && Yc);
        rnn_reference(c, &in64, Y, Yh, c->gates == 4 ? Yc : NULL);
        assert_int_equal(o64[0]->t.dtype, LT_F64);
        tu_assert_close(o64[0], Y, ny, 1e-12, 1e-12, seed);
        tu_assert_close(o32[0], Y, ny, 2e-5, 2e-5, seed);
        for (int64_t j = 0; j < ny; j++) {
            double y = tu_get(o64[0], j);
            assert_true(fabs(y - tu_get(o32[0], j)) <= 2e-5 * (1 + fabs(y)));
            non_float += y != 0 && (double)(float)y != y;
        }
        /* sequences shorter than S leave zeros; every other value is a true double */
        assert_true(non_float >= ny / 2);
        free(Y);
        free(Yh);
        free(Yc);
        for (int i = 0; i < 3; i++) {
            lt_value_free(o32[i]);
            lt_value_free(o64[i]);
        }
        rnn_free_inputs(&in32);
        rnn_free_inputs(&in64);
    }
}

static double sum_y(const lt_value *y)
{
    double s = 0;
    for (int64_t j = 0; j < y->t.numel; j++)
        s += tu_get(y, j);
    return s;
}

/* d sum(Y) / d v[e] by central differences at h = 1e-6, through the kernel
 * and through the reference: the two agree to what double rounding leaves
 * (a float computation would leave differences of order 1e-1). */
static void finite_differences(void **state)
{
    (void)state;
    static const int64_t lens[2] = {4, 3};
    const cfg cases[3] = {
        {.op = LT_OP_RNN, .gates = 1, .S = 4, .B = 2, .I = 3, .H = 4, .bias = true, .init = true, .dt = LT_F64},
        {.op = LT_OP_GRU, .gates = 3, .S = 4, .B = 2, .I = 3, .H = 4, .dir = 2, .bias = true, .seqlens = true,
         .lens = lens, .dt = LT_F64},
        {.op = LT_OP_LSTM, .gates = 4, .S = 4, .B = 2, .I = 3, .H = 4, .bias = true, .init = true, .peep = true,
         .dt = LT_F64},
    };
    for (int n = 0; n < 3; n++) {
        const cfg *c = &cases[n];
        uint64_t seed = 500 + (uint64_t)n;
        int64_t D = c->dir == 2 ? 2 : 1, ny = c->S * D * c->B * c->H;
        ins in;
        rnn_make_inputs(c, LT_F64, seed, &in);
        double *Y = malloc(sizeof *Y * (size_t)ny), *Yh = malloc(sizeof *Yh * (size_t)ny),
               *Yc = malloc(sizeof *Yc * (size_t)ny);
        assert_true(Y && Yh && Yc);
        /* an entry of W, of R and of X */
        const int which[3] = {1, 2, 0};
        for (int q = 0; q < 3; q++) {
            lt_value *v = in.v[which[q]];
            int64_t e = (int64_t)(seed * 7 + (uint64_t)q * 13) % v->t.numel;
            double orig = tu_get(v, e), h = 1e-6, k[2], r[2];
            for (int side = 0; side < 2; side++) {
                lt_tensor_set_f64(&v->t, e, orig + (side ? -h : h));
                lt_value *out[3];
                rnn_run_node(c, &in, out, seed);
                k[side] = sum_y(out[0]);
                for (int i = 0; i < 3; i++)
                    lt_value_free(out[i]);
                rnn_reference(c, &in, Y, Yh, c->gates == 4 ? Yc : NULL);
                r[side] = 0;
                for (int64_t j = 0; j < ny; j++)
                    r[side] += Y[j];
            }
            lt_tensor_set_f64(&v->t, e, orig);
            double fk = (k[0] - k[1]) / (2 * h), fr = (r[0] - r[1]) / (2 * h);
            if (!(fabs(fk - fr) <= 1e-7 * fmax(1, fabs(fr))))
                fail_msg("op %d input %d element %lld: kernel %.12g, reference %.12g", c->gates, which[q],
                         (long long)e, fk, fr);
        }
        free(Y);
        free(Yh);
        free(Yc);
        rnn_free_inputs(&in);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_f64),
        cmocka_unit_test(gru_f64),
        cmocka_unit_test(lstm_f64),
        cmocka_unit_test(both_paths),
        cmocka_unit_test(finite_differences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
