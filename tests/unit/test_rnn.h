/* Shared by the rnn suites: a direct double-precision transcription of the
 * ONNX RNN, GRU and LSTM equations (batch entry by batch entry, step by
 * step, one dot product per gate row) and a runner that builds the node,
 * feeds it seeded random inputs and compares every output it asked for. */
#ifndef LT_TEST_RNN_H
#define LT_TEST_RNN_H

#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RNN_MAXH 192

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
    /* per activation slot: the alpha/beta the reference applies (rounded to
     * float, as the attribute stores them) */
    double alpha[6], beta[6];
    /* the lists handed to the node (consumed in order) */
    int nalpha, nbeta;
    float alist[6], blist[6];
    const int64_t *lens;
    int omit; /* bit i: output i is not requested */
} cfg;

typedef struct ins {
    lt_value *v[8];
} ins;

static inline double rnn_ref_act(const char *name, double a, double b, double x)
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

/* activation slot j (0 f, 1 g, 2 h) of direction d; clip applies to all but h */
static inline double rnn_ref_A(const cfg *c, int d, int j, double x)
{
    int per = c->gates == 1 ? 1 : c->gates == 3 ? 2 : 3;
    if (c->clip > 0 && j < 2)
        x = fmax(-c->clip, fmin(c->clip, x));
    if (c->nacts == 0) {
        static const char *def[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
        return rnn_ref_act(def[c->gates == 1 ? 0 : c->gates == 3 ? 1 : 2][j], 0, 0, x);
    }
    /* one list for both directions when only one direction's worth is given */
    int slot = (c->nacts == per ? 0 : d * per) + j;
    return rnn_ref_act(c->acts[slot], (float)c->alpha[slot], (float)c->beta[slot], x);
}

static inline double rnn_ref_get(lt_value *v, int64_t i) { return v ? tu_get(v, i) : 0.0; }

/* Fills Y ([S,D,B,H] or its layout-1 form), Yh and Yc (LSTM). */
static inline void rnn_reference(const cfg *c, const ins *in, double *Y, double *Yh, double *Yc)
{
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, D = c->dir == 2 ? 2 : 1, G = c->gates * H;
    lt_value *X = in->v[0], *W = in->v[1], *R = in->v[2], *Bv = in->v[3], *SL = in->v[4], *h0 = in->v[5];
    lt_value *c0 = c->gates == 4 ? in->v[6] : NULL, *P = c->gates == 4 ? in->v[7] : NULL;
    assert_true(H <= RNN_MAXH);
    memset(Y, 0, sizeof *Y * (size_t)(S * D * B * H));
    double h[RNN_MAXH], cc[RNN_MAXH], hn[RNN_MAXH], cn[RNN_MAXH], xw[4 * RNN_MAXH], hr[4 * RNN_MAXH];
    for (int d = 0; d < D; d++) {
        bool rev = c->dir == 1 || d == 1;
        for (int64_t b = 0; b < B; b++) {
            int64_t hoff = (c->layout ? b * D + d : d * B + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[j] = rnn_ref_get(h0, hoff + j);
                cc[j] = rnn_ref_get(c0, hoff + j);
            }
            int64_t len = SL ? (int64_t)tu_get(SL, b) : S;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                int64_t xoff = (c->layout ? b * S + t : t * B + b) * I;
                /* xw[q] = x.W_q + Wb_q, hr[q] = h.R_q + Rb_q for every gate row q */
                for (int64_t q = 0; q < G; q++) {
                    xw[q] = rnn_ref_get(Bv, d * 2 * G + q);
                    hr[q] = rnn_ref_get(Bv, d * 2 * G + G + q);
                    for (int64_t i = 0; i < I; i++)
                        xw[q] += tu_get(X, xoff + i) * tu_get(W, (d * G + q) * I + i);
                    for (int64_t i = 0; i < H; i++)
                        hr[q] += h[i] * tu_get(R, (d * G + q) * H + i);
                }
                if (c->gates == 1) {
                    for (int64_t j = 0; j < H; j++)
                        hn[j] = rnn_ref_A(c, d, 0, xw[j] + hr[j]);
                } else if (c->gates == 3) {
                    double z[RNN_MAXH], r[RNN_MAXH];
                    for (int64_t j = 0; j < H; j++) {
                        z[j] = rnn_ref_A(c, d, 0, xw[j] + hr[j]);
                        r[j] = rnn_ref_A(c, d, 0, xw[H + j] + hr[H + j]);
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double v;
                        if (c->lbr) {
                            v = xw[2 * H + j] + r[j] * hr[2 * H + j];
                        } else {
                            v = xw[2 * H + j] + rnn_ref_get(Bv, d * 2 * G + G + 2 * H + j);
                            for (int64_t i = 0; i < H; i++)
                                v += r[i] * h[i] * tu_get(R, (d * G + 2 * H + j) * H + i);
                        }
                        double hh = rnn_ref_A(c, d, 1, v);
                        hn[j] = (1 - z[j]) * hh + z[j] * h[j];
                    }
                } else {
                    for (int64_t j = 0; j < H; j++) {
                        double pi = rnn_ref_get(P, d * 3 * H + j), po = rnn_ref_get(P, d * 3 * H + H + j),
                               pf = rnn_ref_get(P, d * 3 * H + 2 * H + j);
                        double ig = rnn_ref_A(c, d, 0, xw[j] + hr[j] + pi * cc[j]);
                        double fg =
                            c->couple ? 1 - ig : rnn_ref_A(c, d, 0, xw[2 * H + j] + hr[2 * H + j] + pf * cc[j]);
                        double cg = rnn_ref_A(c, d, 1, xw[3 * H + j] + hr[3 * H + j]);
                        cn[j] = fg * cc[j] + ig * cg;
                        double og = rnn_ref_A(c, d, 0, xw[H + j] + hr[H + j] + po * cn[j]);
                        hn[j] = og * rnn_ref_A(c, d, 2, cn[j]);
                    }
                    memcpy(cc, cn, sizeof *cc * (size_t)H);
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

/* Seeded random inputs of type dt for c (absent ones NULL). */
static inline void rnn_make_inputs(const cfg *c, lt_dtype dt, uint64_t seed, ins *in)
{
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, D = c->dir == 2 ? 2 : 1, G = c->gates * H;
    int64_t xd[3] = {c->layout ? B : S, c->layout ? S : B, I}, hd[3] = {c->layout ? B : D, c->layout ? D : B, H};
    memset(in, 0, sizeof *in);
    in->v[0] = tu_rand(dt, 3, xd, -1, 1, seed);
    in->v[1] = tu_rand(dt, 3, (int64_t[]){D, G, I}, -0.7, 0.7, seed + 1);
    in->v[2] = tu_rand(dt, 3, (int64_t[]){D, G, H}, -0.7, 0.7, seed + 2);
    if (c->bias)
        in->v[3] = tu_rand(dt, 2, (int64_t[]){D, 2 * G}, -0.5, 0.5, seed + 3);
    if (c->seqlens) {
        double l[RNN_MAXH];
        assert_true(B <= RNN_MAXH);
        for (int64_t b = 0; b < B; b++)
            l[b] = (double)c->lens[b];
        in->v[4] = tu_from(LT_I32, 1, (int64_t[]){B}, l);
    }
    if (c->init) {
        in->v[5] = tu_rand(dt, 3, hd, -1, 1, seed + 5);
        if (c->gates == 4)
            in->v[6] = tu_rand(dt, 3, hd, -1, 1, seed + 6);
    }
    if (c->peep)
        in->v[7] = tu_rand(dt, 2, (int64_t[]){D, 3 * H}, -0.5, 0.5, seed + 7);
}

static inline void rnn_free_inputs(ins *in)
{
    for (int i = 0; i < 8; i++)
        lt_value_free(in->v[i]);
}

/* Runs the node of c on in; out[i] is NULL for outputs c->omit leaves out. */
static inline void rnn_run_node(const cfg *c, const ins *in, lt_value **out, uint64_t seed)
{
    int nin = c->gates == 4 ? 8 : 6, nout = c->gates == 4 ? 3 : 2;
    tu_graph gr = tu_single(c->op, 14, nin, nout);
    tu_attr_int(&gr, "hidden_size", c->H);
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
        tu_attr_strings(&gr, "activations", c->nacts, (const char *const *)c->acts);
    }
    /* left-out outputs: no value on the node and none among the graph's results */
    int nres = 0;
    for (int i = 0; i < nout; i++) {
        if (c->omit >> i & 1)
            gr.node->out[i] = NULL;
        else
            gr.m->main->results[nres++] = gr.node->out[i];
    }
    gr.m->main->nresults = nres;
    lt_value *dummy = tu_from(LT_F32, 0, NULL, (double[]){0}), *vals[8];
    for (int i = 0; i < nin; i++) {
        vals[i] = in->v[i] ? in->v[i] : dummy;
        if (!in->v[i])
            tu_omit_input(&gr, i);
    }
    lt_value *res[3] = {NULL};
    lt_err err;
    lt_status st = tu_run(&gr, vals, res, &err);
    if (st != LT_OK)
        fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
    for (int i = 0, j = 0; i < 3; i++)
        out[i] = i < nout && !(c->omit >> i & 1) ? res[j++] : NULL;
    lt_value_free(dummy);
    tu_free(&gr);
}

/* Runs c on random inputs of its dtype and checks every requested output
 * against the reference, relative and absolute, to what the type allows:
 * double is computed in double, float and half in float. */
static inline void rnn_check(const cfg *c, uint64_t seed)
{
    double tol = c->dt == LT_F64 ? 1e-12 : c->dt == LT_F32 ? 2e-5 : 1e-2;
    int64_t S = c->S, B = c->B, H = c->H, D = c->dir == 2 ? 2 : 1;
    ins in;
    rnn_make_inputs(c, c->dt, seed, &in);
    lt_value *out[3];
    rnn_run_node(c, &in, out, seed);
    int64_t ny = S * D * B * H, nh = D * B * H;
    double *Y = malloc(sizeof *Y * (size_t)ny), *Yh = malloc(sizeof *Yh * (size_t)nh),
           *Yc = malloc(sizeof *Yc * (size_t)nh);
    assert_true(Y && Yh && Yc);
    rnn_reference(c, &in, Y, Yh, c->gates == 4 ? Yc : NULL);
    if (out[0]) {
        assert_int_equal(out[0]->t.dtype, c->dt);
        assert_int_equal(out[0]->t.rank, 4);
        assert_int_equal(out[0]->t.dims[c->layout ? 2 : 1], D);
        tu_assert_close(out[0], Y, ny, tol, tol, seed);
    }
    if (out[1])
        tu_assert_close(out[1], Yh, nh, tol, tol, seed + 100);
    if (out[2])
        tu_assert_close(out[2], Yc, nh, tol, tol, seed + 200);
    free(Y);
    free(Yh);
    free(Yc);
    for (int i = 0; i < 3; i++)
        lt_value_free(out[i]);
    rnn_free_inputs(&in);
}

#endif
