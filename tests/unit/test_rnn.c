/* RNN, GRU and LSTM against a direct double-precision transcription of the
 * ONNX equations, batch entry by batch entry and step by step. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    lt_op op;
    int gates;
    int64_t S, B, I, H;
    int dir; /* 0 forward, 1 reverse, 2 bidirectional */
    int layout;
    bool bias, seqlens, init, peep, lbr, couple;
    float clip; /* 0: none */
    lt_dtype dt;
    int nacts;
    const char *acts[6];
    /* per activation slot: the alpha/beta the reference applies */
    double alpha[6], beta[6];
    /* the lists handed to the node (consumed in order) */
    int nalpha, nbeta;
    float alist[6], blist[6];
    const int64_t *lens;
} cfg;

static double act(const char *name, double a, double b, double x)
{
    if (!strcmp(name, "Tanh"))
        return tanh(x);
    if (!strcmp(name, "Sigmoid"))
        return 1 / (1 + exp(-x));
    if (!strcmp(name, "Relu"))
        return x > 0 ? x : 0;
    if (!strcmp(name, "LeakyRelu"))
        return x >= 0 ? x : a * x;
    if (!strcmp(name, "HardSigmoid"))
        return fmax(0, fmin(1, a * x + b));
    if (!strcmp(name, "ScaledTanh"))
        return a * tanh(b * x);
    if (!strcmp(name, "Affine"))
        return a * x + b;
    if (!strcmp(name, "Elu"))
        return x >= 0 ? x : a * (exp(x) - 1);
    if (!strcmp(name, "Softsign"))
        return x / (1 + fabs(x));
    if (!strcmp(name, "Softplus"))
        return log(1 + exp(x));
    if (!strcmp(name, "ThresholdedRelu"))
        return x > a ? x : 0;
    fail_msg("unknown activation %s", name);
    return 0;
}

/* activation slot j (0 f, 1 g, 2 h) of direction d applied to a clipped x */
static double A(const cfg *c, int d, int j, double x)
{
    int per = c->gates == 1 ? 1 : c->gates == 3 ? 2 : 3;
    if (c->clip > 0)
        x = fmax(-c->clip, fmin(c->clip, x));
    int slot = d * per + j;
    if (c->nacts == 0) {
        static const char *def[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
        return act(def[c->gates == 1 ? 0 : c->gates == 3 ? 1 : 2][j], 0, 0, x);
    }
    return act(c->acts[slot], c->alpha[slot], c->beta[slot], x);
}

typedef struct ins {
    lt_value *v[8];
} ins;

static double g(lt_value *v, int64_t i) { return v ? tu_get(v, i) : 0.0; }

/* The reference: fills Y [S,D,B,H]-or-layout-1 and Yh, Yc. */
static void reference(const cfg *c, const ins *in, double *Y, double *Yh, double *Yc)
{
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, D = c->dir == 2 ? 2 : 1, G = c->gates * H;
    lt_value *X = in->v[0], *W = in->v[1], *R = in->v[2], *Bv = in->v[3], *SL = in->v[4], *h0 = in->v[5];
    lt_value *c0 = c->gates == 4 ? in->v[6] : NULL, *P = c->gates == 4 ? in->v[7] : NULL;
    memset(Y, 0, sizeof *Y * (size_t)(S * D * B * H));
    double h[64], cc[64], hn[64], gate[256];
    for (int d = 0; d < D; d++) {
        bool rev = c->dir == 1 || d == 1;
        for (int64_t b = 0; b < B; b++) {
            int64_t hoff = (c->layout ? b * D + d : d * B + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[j] = g(h0, hoff + j);
                cc[j] = g(c0, hoff + j);
            }
            int64_t len = SL ? (int64_t)tu_get(SL, b) : S;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                int64_t xoff = (c->layout ? b * S + t : t * B + b) * I;
                /* xw[q] = x.W_q + Wb_q, hr[q] = h.R_q + Rb_q for every gate row q */
                double xw[256], hr[256];
                for (int64_t q = 0; q < G; q++) {
                    xw[q] = g(Bv, d * 2 * G + q);
                    hr[q] = g(Bv, d * 2 * G + G + q);
                    for (int64_t i = 0; i < I; i++)
                        xw[q] += tu_get(X, xoff + i) * tu_get(W, (d * G + q) * I + i);
                    for (int64_t i = 0; i < H; i++)
                        hr[q] += h[i] * tu_get(R, (d * G + q) * H + i);
                }
                if (c->gates == 1) {
                    for (int64_t j = 0; j < H; j++)
                        hn[j] = A(c, d, 0, xw[j] + hr[j]);
                } else if (c->gates == 3) {
                    double z[64], r[64];
                    for (int64_t j = 0; j < H; j++) {
                        z[j] = A(c, d, 0, xw[j] + hr[j]);
                        r[j] = A(c, d, 0, xw[H + j] + hr[H + j]);
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double v;
                        if (c->lbr) {
                            v = xw[2 * H + j] + r[j] * hr[2 * H + j];
                        } else {
                            v = xw[2 * H + j] + g(Bv, d * 2 * G + G + 2 * H + j);
                            for (int64_t i = 0; i < H; i++)
                                v += r[i] * h[i] * tu_get(R, (d * G + 2 * H + j) * H + i);
                        }
                        double hh = A(c, d, 1, v);
                        hn[j] = (1 - z[j]) * hh + z[j] * h[j];
                    }
                } else {
                    for (int64_t j = 0; j < H; j++) {
                        double pi = g(P, d * 3 * H + j), po = g(P, d * 3 * H + H + j), pf = g(P, d * 3 * H + 2 * H + j);
                        double ig = A(c, d, 0, xw[j] + hr[j] + pi * cc[j]);
                        double fg = c->couple ? 1 - ig : A(c, d, 0, xw[2 * H + j] + hr[2 * H + j] + pf * cc[j]);
                        double cg = A(c, d, 1, xw[3 * H + j] + hr[3 * H + j]);
                        double cn = fg * cc[j] + ig * cg;
                        double og = A(c, d, 0, xw[H + j] + hr[H + j] + po * cn);
                        /* h(C) is not clipped */
                        double hc = c->nacts ? act(c->acts[d * 3 + 2], c->alpha[d * 3 + 2], c->beta[d * 3 + 2], cn)
                                             : tanh(cn);
                        gate[j] = cn;
                        hn[j] = og * hc;
                    }
                    for (int64_t j = 0; j < H; j++)
                        cc[j] = gate[j];
                }
                memcpy(h, hn, sizeof *h * (size_t)H);
                int64_t yoff = (c->layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
                memcpy(Y + yoff, h, sizeof *h * (size_t)H);
            }
            memcpy(Yh + hoff, h, sizeof *h * (size_t)H);
            if (Yc)
                memcpy(Yc + hoff, cc, sizeof *cc * (size_t)H);
        }
    }
}

static void run_case(const cfg *c, uint64_t seed)
{
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, D = c->dir == 2 ? 2 : 1, G = c->gates * H;
    int nin = c->gates == 4 ? 8 : 6, nout = c->gates == 4 ? 3 : 2;
    tu_graph gr = tu_single(c->op, 14, nin, nout);
    tu_attr_int(&gr, "hidden_size", H);
    static const char *dirs[3] = {"forward", "reverse", "bidirectional"};
    if (c->dir)
        tu_attr_str(&gr, "direction", dirs[c->dir]);
    if (c->layout)
        tu_attr_int(&gr, "layout", 1);
    if (c->lbr)
        tu_attr_int(&gr, "linear_before_reset", 1);
    if (c->couple)
        tu_attr_int(&gr, "input_forget", 1);
    if (c->clip > 0)
        tu_attr_float(&gr, "clip", c->clip);
    if (c->nalpha)
        tu_attr_floats(&gr, "activation_alpha", c->nalpha, c->alist);
    if (c->nbeta)
        tu_attr_floats(&gr, "activation_beta", c->nbeta, c->blist);
    if (c->nacts) {
        /* a STRINGS attribute built by hand: testutil has no helper for it */
        tu_attr_str(&gr, "activations", c->acts[0]);
        lt_attr *a = &gr.node->attrs[gr.node->nattr - 1];
        a->kind = LT_ATTR_STRINGS;
        a->n = c->nacts;
        a->strings = lt_ir_alloc(gr.m, sizeof(char *) * (size_t)c->nacts);
        for (int i = 0; i < c->nacts; i++)
            a->strings[i] = lt_ir_strdup(gr.m, c->acts[i]);
    }
    ins in = {{NULL}};
    int64_t xd[3] = {c->layout ? B : S, c->layout ? S : B, I}, hd[3] = {c->layout ? B : D, c->layout ? D : B, H};
    in.v[0] = tu_rand(c->dt, 3, xd, -1, 1, seed);
    in.v[1] = tu_rand(c->dt, 3, (int64_t[]){D, G, I}, -0.7, 0.7, seed + 1);
    in.v[2] = tu_rand(c->dt, 3, (int64_t[]){D, G, H}, -0.7, 0.7, seed + 2);
    if (c->bias)
        in.v[3] = tu_rand(c->dt, 2, (int64_t[]){D, 2 * G}, -0.5, 0.5, seed + 3);
    if (c->seqlens) {
        double l[16];
        for (int64_t b = 0; b < B; b++)
            l[b] = (double)c->lens[b];
        in.v[4] = tu_from(LT_I32, 1, (int64_t[]){B}, l);
    }
    if (c->init) {
        in.v[5] = tu_rand(c->dt, 3, hd, -1, 1, seed + 5);
        if (c->gates == 4)
            in.v[6] = tu_rand(c->dt, 3, hd, -1, 1, seed + 6);
    }
    if (c->peep)
        in.v[7] = tu_rand(c->dt, 2, (int64_t[]){D, 3 * H}, -0.5, 0.5, seed + 7);
    lt_value *dummy = tu_from(LT_F32, 0, NULL, (double[]){0}), *vals[8];
    for (int i = 0; i < nin; i++) {
        vals[i] = in.v[i] ? in.v[i] : dummy;
        if (!in.v[i])
            tu_omit_input(&gr, i);
    }
    lt_value *out[3] = {NULL};
    lt_err err;
    lt_status st = tu_run(&gr, vals, out, &err);
    if (st != LT_OK)
        fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
    int64_t ny = S * D * B * H, nh = D * B * H;
    double *Y = malloc(sizeof *Y * (size_t)ny), *Yh = malloc(sizeof *Yh * (size_t)nh),
           *Yc = malloc(sizeof *Yc * (size_t)nh);
    reference(c, &in, Y, Yh, c->gates == 4 ? Yc : NULL);
    double tol = c->dt == LT_F64 ? 1e-6 : 2e-5;
    assert_int_equal(out[0]->t.rank, 4);
    assert_int_equal(out[0]->t.dims[c->layout ? 2 : 1], D);
    tu_assert_close(out[0], Y, ny, tol, tol, seed);
    tu_assert_close(out[1], Yh, nh, tol, tol, seed + 100);
    if (c->gates == 4)
        tu_assert_close(out[2], Yc, nh, tol, tol, seed + 200);
    free(Y);
    free(Yh);
    free(Yc);
    for (int i = 0; i < nout; i++)
        lt_value_free(out[i]);
    for (int i = 0; i < 8; i++)
        lt_value_free(in.v[i]);
    lt_value_free(dummy);
    tu_free(&gr);
}

static void rnn_cases(void **state)
{
    (void)state;
    cfg c = {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 2, .I = 3, .H = 4, .bias = true, .init = true, .dt = LT_F32};
    run_case(&c, 1);
    static const int64_t lens[3] = {3, 1, 0};
    cfg c2 = {.op = LT_OP_RNN, .gates = 1, .S = 3, .B = 3, .I = 2, .H = 5, .dir = 2, .layout = 1, .bias = true,
              .seqlens = true, .lens = lens, .dt = LT_F32, .nacts = 2, .acts = {"LeakyRelu", "Tanh"},
              .alpha = {0.2}, .nalpha = 1, .alist = {0.2f}};
    run_case(&c2, 2);
    cfg c3 = {.op = LT_OP_RNN, .gates = 1, .S = 4, .B = 1, .I = 2, .H = 3, .dir = 1, .dt = LT_F64, .clip = 0.3f};
    run_case(&c3, 3);
}

static void gru_cases(void **state)
{
    (void)state;
    static const int64_t lens[2] = {2, 3};
    cfg c = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 1, .bias = true, .seqlens = true,
             .lens = lens, .dt = LT_F32};
    run_case(&c, 10);
    cfg c2 = {.op = LT_OP_GRU, .gates = 3, .S = 3, .B = 2, .I = 3, .H = 4, .dir = 2, .bias = true, .init = true,
              .lbr = true, .clip = 0.8f, .dt = LT_F32};
    run_case(&c2, 11);
    cfg c3 = {.op = LT_OP_GRU, .gates = 3, .S = 2, .B = 3, .I = 2, .H = 3, .layout = 1, .bias = true, .init = true,
              .dt = LT_F64, .nacts = 2, .acts = {"HardSigmoid", "Softsign"}, .alpha = {0.3}, .beta = {0.45},
              .nalpha = 1, .alist = {0.3f}, .nbeta = 1, .blist = {0.45f}};
    run_case(&c3, 12);
}

static void lstm_cases(void **state)
{
    (void)state;
    static const int64_t lens[3] = {1, 4, 2};
    cfg c = {.op = LT_OP_LSTM, .gates = 4, .S = 4, .B = 3, .I = 3, .H = 5, .dir = 2, .bias = true, .seqlens = true,
             .lens = lens, .init = true, .peep = true, .dt = LT_F32};
    run_case(&c, 20);
    /* input_forget, and alphas/betas consumed by the functions that take them */
    cfg c2 = {.op = LT_OP_LSTM, .gates = 4, .S = 3, .B = 2, .I = 2, .H = 3, .bias = true, .couple = true,
              .dt = LT_F32, .nacts = 3, .acts = {"HardSigmoid", "ScaledTanh", "Tanh"}, .alpha = {0.3, 0.8},
              .beta = {0.4, 1.2}, .nalpha = 2, .alist = {0.3f, 0.8f}, .nbeta = 2, .blist = {0.4f, 1.2f}};
    run_case(&c2, 21);
    cfg c3 = {.op = LT_OP_LSTM, .gates = 4, .S = 2, .B = 2, .I = 3, .H = 2, .dir = 1, .layout = 1, .init = true,
              .clip = 0.5f, .dt = LT_F64};
    run_case(&c3, 22);
    /* large enough for the threaded GEMM paths */
    cfg c4 = {.op = LT_OP_LSTM, .gates = 4, .S = 2, .B = 16, .I = 64, .H = 16, .bias = true, .dt = LT_F32};
    run_case(&c4, 23);
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
    assert_int_equal(tu_run(&gr, in, out, &err), LT_ERR_RUNTIME);
    assert_non_null(strstr(err.msg, "sequence_lens"));
    lt_value_free(in[1]);
    in[1] = tu_rand(LT_F32, 3, (int64_t[]){1, 5, 3}, -1, 1, 2);
    assert_int_equal(tu_run(&gr, in, out, &err), LT_ERR_RUNTIME);
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
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
