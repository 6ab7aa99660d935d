/* RNN, GRU and LSTM in float (and half) against the double-precision
 * transcription of the ONNX equations in test_rnn.h; the double path is in
 * test_rnn_f64.c. */
#include "test_rnn.h"

static void rnn_cases(void **state)
{
    (void)state;
    cfg c = {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 2, .I = 3, .H = 4, .bias = true, .init = true, .dt = LT_F32};
    rnn_check(&c, 1);
    static const int64_t lens[3] = {3, 1, 0};
    cfg c2 = {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 3, .I = 2, .H = 5, .dir = 2, .layout = 1, .bias = true,
              .seqlens = true, .lens = lens, .dt = LT_F32, .nacts = 2, .acts = {"LeakyRelu", "Tanh"},
              .alpha = {0.2}, .nalpha = 1, .alist = {0.2f}};
    rnn_check(&c2, 2);
    cfg c3 = {.op = LT_OP_RNN, .gates = 1, .S = 4, .B = 1, .I = 2, .H = 3, .dir = 1, .dt = LT_F32, .clip = 0.3f};
    rnn_check(&c3, 3);
}

static void gru_cases(void **state)
{
    (void)state;
    static const int64_t lens[2] = {2, 3};
    cfg c = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 1, .bias = true, .seqlens = true,
             .lens = lens, .dt = LT_F32};
    rnn_check(&c, 10);
    cfg c2 = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 2, .bias = true, .init = true,
              .lbr = true, .clip = 0.8f, .dt = LT_F32};
    rnn_check(&c2, 11);
    cfg c3 = {.op = LT_OP_GRU, .gates = 3, .S = 2, .B = 3, .I = 2, .H = 3, .layout = 1, .bias = true, .init = true,
              .dt = LT_F32, .nacts = 2, .acts = {"HardSigmoid", "Softsign"}, .alpha = {0.3}, .beta = {0.45},
              .nalpha = 1, .alist = {0.3f}, .nbeta = 1, .blist = {0.45f}};
    rnn_check(&c3, 12);
}

static void lstm_cases(void **state)
{
    (void)state;
    static const int64_t lens[3] = {1, 4, 2};
    cfg c = {.op = LT_OP_LSTM, .gates = 4, .S = 4, .B = 3, .I = 3, .H = 5, .dir = 2, .bias = true, .seqlens = true,
             .lens = lens, .init = true, .peep = true, .dt = LT_F32};
    rnn_check(&c, 20);
    /* input_forget, and alphas/betas consumed by the functions that take them */
    cfg c2 = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 2, .H = 3, .bias = true, .couple = true,
              .dt = LT_F32, .nacts = 3, .acts = {"HardSigmoid", "ScaledTanh", "Tanh"}, .alpha = {0.3, 0.8},
              .beta = {0.4, 1.2}, .nalpha = 2, .alist = {0.3f, 0.8f}, .nbeta = 2, .blist = {0.4f, 1.2f}};
    rnn_check(&c2, 21);
    cfg c3 = {.op = LT_OP_LSTM, .gates = 4, .S = 2, .B = 2, .I = 3, .H = 2, .dir = 1, .layout = 1, .init = true,
              .clip = 0.5f, .dt = LT_F32};
    rnn_check(&c3, 22);
    /* large enough for the threaded GEMM paths */
    cfg c4 = {.op = LT_OP_LSTM, .gates = 4, .S = 2, .B = 16, .I = 64, .H = 16, .bias = true, .dt = LT_F32};
    rnn_check(&c4, 23);
}

/* half inputs compute in float and round on the way out */
static void half_cases(void **state)
{
    (void)state;
    static const int64_t lens[2] = {3, 2};
    cfg c = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 2, .bias = true, .init = true,
             .peep = true, .seqlens = true, .lens = lens, .dt = LT_F16};
    rnn_check(&c, 30);
    cfg c2 = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .layout = 1, .bias = true, .init = true,
              .dt = LT_BF16, .omit = 1};
    rnn_check(&c2, 31);
    cfg c3 = {.op = LT_OP_RNN, .gates = 1, .S = 2, .B = 3, .I = 2, .H = 3, .dir = 1, .bias = true, .dt = LT_F16};
    rnn_check(&c3, 32);
}

static void errors(void **state)
{
    (void)state;
    tu_graph gr = tu_single(LT_OP_GRU, 14, 5, 2);
    tu_attr_int(&gr, "hidden_size", 2);
    lt_value *in[5] = {tu_rand(LT_F32, 3, (int64_t[]){2, 1, 3}, -1, 1, 1),
                       tu_rand(LT_F32, 3, (int64_t[]){1, 6, 3}, -1, 1, 2),
                       tu_rand(LT_F32, 3, (int64_t[]){1, 6, 2}, -1, 1, 3),
                       tu_rand(LT_F32, 2, (int64_t[]){1, 12}, -1, 1, 4),
                       tu_from(LT_I32, 1, (int64_t[]){1}, (double[]){3})};
    lt_value *out[2] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&gr, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "sequence_lens"));
    lt_value_free(in[1]);
    in[1] = tu_rand(LT_F32, 3, (int64_t[]){1, 5, 3}, -1, 1, 2);
    assert_int_equal(tu_run(&gr, in, out, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "W must be"));
    for (int i = 0; i < 5; i++)
        lt_value_free(in[i]);
    tu_free(&gr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_cases),
        cmocka_unit_test(gru_cases),
        cmocka_unit_test(lstm_cases),
        cmocka_unit_test(half_cases),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
