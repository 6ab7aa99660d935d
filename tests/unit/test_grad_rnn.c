/* RNNGrad and GRUGrad against central finite differences (float64) of
 * sum(dY*Y) + sum(dY_h*Y_h) over every input: directions, sequence_lens,
 * layout 1, clip, linear_before_reset and every activation function. */
#include "test_grad_rnn.h"

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

static void rnn_basic(void **state)
{
    (void)state;
    static const int64_t lens[4] = {4, 2, 0, 3}, lens2[3] = {1, 3, 2};
    gcfg c1 = {.name = "RNN forward", .gates = 1, .S = 4, .B = 2, .I = 3, .H = 4, .bias = true, .h0 = true,
               .seed = 11};
    run(&c1, true);
    gcfg c2 = {.name = "RNN reverse lens", .gates = 1, .S = 4, .B = 4, .I = 2, .H = 3, .dir = 1, .bias = true,
               .h0 = true, .lens = lens, .seed = 12};
    run(&c2, true);
    gcfg c3 = {.name = "RNN bidirectional layout1 lens", .gates = 1, .S = 3, .B = 3, .I = 3, .H = 3, .dir = 2,
               .layout = 1, .bias = true, .h0 = true, .lens = lens2, .seed = 13};
    run(&c3, true);
    gcfg c4 = {.name = "RNN forward layout1 no bias/h0", .gates = 1, .S = 3, .B = 2, .I = 4, .H = 2, .layout = 1,
               .seed = 14};
    run(&c4, false);
    gcfg c5 = {.name = "RNN bidirectional clip 0.6", .gates = 1, .S = 4, .B = 2, .I = 3, .H = 3, .dir = 2,
               .bias = true, .h0 = true, .clip = 0.6f, .seed = 15};
    run(&c5, false);
    gcfg c6 = {.name = "RNN only dY_h", .gates = 1, .S = 3, .B = 3, .I = 2, .H = 3, .dir = 2, .bias = true,
               .h0 = true, .lens = lens2, .no_dy = true, .seed = 16};
    run(&c6, false);
    gcfg c7 = {.name = "RNN only dY", .gates = 1, .S = 3, .B = 2, .I = 2, .H = 3, .dir = 1, .bias = true,
               .h0 = true, .no_dyh = true, .seed = 17};
    run(&c7, false);
}

/* every activation, two per bidirectional RNN (one per direction) */
static void rnn_activations(void **state)
{
    (void)state;
    static const int64_t lens[3] = {3, 2, 3};
    gcfg c = {.gates = 1, .S = 3, .B = 3, .I = 3, .H = 3, .dir = 2, .bias = true, .h0 = true, .lens = lens,
              .nacts = 2};
    struct {
        const char *a, *b;
        int na, nb;
        float al[2], be[2];
    } pairs[] = {
        {"Relu", "LeakyRelu", 1, 0, {0.3f}, {0}},
        {"Affine", "ThresholdedRelu", 2, 1, {0.7f, 0.1f}, {0.2f}},
        {"ScaledTanh", "HardSigmoid", 2, 2, {1.3f, 0.4f}, {0.6f, 0.45f}},
        {"Elu", "Softsign", 1, 0, {0.8f}, {0}},
        {"Softplus", "Sigmoid", 0, 0, {0}, {0}},
        {"LeakyRelu", "Elu", 0, 0, {0}, {0}}, /* default alphas */
        {"HardSigmoid", "ScaledTanh", 0, 0, {0}, {0}},
        {"HardSigmoid", "Relu", 1, 1, {1.7f}, {0.4f}}, /* steep: saturates often */
    };
    char names[8][64];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        snprintf(names[i], sizeof names[i], "RNN %s/%s", pairs[i].a, pairs[i].b);
        c.name = names[i];
        c.acts[0] = pairs[i].a;
        c.acts[1] = pairs[i].b;
        c.nalpha = pairs[i].na;
        c.nbeta = pairs[i].nb;
        memcpy(c.alist, pairs[i].al, sizeof pairs[i].al);
        memcpy(c.blist, pairs[i].be, sizeof pairs[i].be);
        c.seed = 100 + i;
        c.layout = (int)(i & 1);
        run(&c, false);
    }
    /* clip together with a non-default activation */
    gcfg cc = {.name = "RNN Softsign clip 0.5 reverse", .gates = 1, .S = 4, .B = 2, .I = 3, .H = 3, .dir = 1,
               .bias = true, .h0 = true, .clip = 0.5f, .nacts = 1, .acts = {"Softsign"}, .seed = 120};
    run(&cc, false);
}

static void gru_cases(void **state)
{
    (void)state;
    static const int64_t lens[3] = {2, 4, 0}, lens2[2] = {3, 1};
    gcfg c1 = {.name = "GRU forward", .gates = 3, .S = 4, .B = 2, .I = 3, .H = 3, .bias = true, .h0 = true,
               .seed = 21};
    run(&c1, true);
    gcfg c2 = {.name = "GRU forward lbr", .gates = 3, .S = 4, .B = 2, .I = 3, .H = 3, .bias = true, .h0 = true,
               .lbr = true, .seed = 22};
    run(&c2, true);
    gcfg c3 = {.name = "GRU reverse lens", .gates = 3, .S = 4, .B = 3, .I = 2, .H = 3, .dir = 1, .bias = true,
               .h0 = true, .lens = lens, .seed = 23};
    run(&c3, true);
    gcfg c4 = {.name = "GRU bidirectional layout1 lbr lens", .gates = 3, .S = 3, .B = 2, .I = 3, .H = 2, .dir = 2,
               .layout = 1, .bias = true, .h0 = true, .lbr = true, .lens = lens2, .seed = 24};
    run(&c4, true);
    gcfg c5 = {.name = "GRU bidirectional clip 0.7", .gates = 3, .S = 3, .B = 2, .I = 3, .H = 3, .dir = 2,
               .bias = true, .h0 = true, .clip = 0.7f, .seed = 25};
    run(&c5, false);
    gcfg c6 = {.name = "GRU lbr no bias/h0 layout1", .gates = 3, .S = 3, .B = 2, .I = 2, .H = 3, .layout = 1,
               .lbr = true, .seed = 26};
    run(&c6, false);
    gcfg c7 = {.name = "GRU HardSigmoid/Softsign lbr clip", .gates = 3, .S = 4, .B = 2, .I = 3, .H = 3,
               .bias = true, .h0 = true, .lbr = true, .clip = 1.2f, .nacts = 2, .acts = {"HardSigmoid", "Softsign"},
               .nalpha = 1, .alist = {0.3f}, .nbeta = 1, .blist = {0.55f}, .seed = 27};
    run(&c7, false);
    gcfg c8 = {.name = "GRU bidir Sigmoid/Elu, ScaledTanh/Affine", .gates = 3, .S = 4, .B = 3, .I = 2, .H = 2,
               .dir = 2, .bias = true, .h0 = true, .lens = lens, .nacts = 4,
               .acts = {"Sigmoid", "Elu", "ScaledTanh", "Affine"}, .nalpha = 3, .alist = {0.9f, 0.5f, 0.6f},
               .nbeta = 2, .blist = {1.5f, 0.1f}, .seed = 28};
    run(&c8, false);
    gcfg c9 = {.name = "GRU Softplus/LeakyRelu only dY_h", .gates = 3, .S = 3, .B = 2, .I = 3, .H = 3,
               .bias = true, .h0 = true, .nacts = 2, .acts = {"Softplus", "LeakyRelu"}, .nalpha = 1,
               .alist = {0.2f}, .no_dy = true, .seed = 29};
    run(&c9, false);
    gcfg c10 = {.name = "GRU Relu/ThresholdedRelu lbr", .gates = 3, .S = 3, .B = 2, .I = 3, .H = 3, .bias = true,
                .h0 = true, .lbr = true, .nacts = 2, .acts = {"Sigmoid", "ThresholdedRelu"}, .nalpha = 1,
                .alist = {0.15f}, .seed = 30};
    run(&c10, false);
    gcfg c11 = {.name = "GRU Relu candidate", .gates = 3, .S = 3, .B = 2, .I = 3, .H = 3, .bias = true, .h0 = true,
                .nacts = 2, .acts = {"Sigmoid", "Relu"}, .seed = 31};
    run(&c11, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_basic),
        cmocka_unit_test(rnn_activations),
        cmocka_unit_test(gru_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
