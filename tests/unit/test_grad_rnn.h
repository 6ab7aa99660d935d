/* Shared by the grad_rnn suites: a direct double-precision transcription of
 * the ONNX RNN/GRU/LSTM equations (checked against lantern's forward
 * kernels), the loss L = sum(dY*Y) + sum(dY_h*Y_h) + sum(dY_c*Y_c), and a
 * check of RNNGrad/GRUGrad/LSTMGrad against central finite differences of
 * L for every input. */
#ifndef LT_TEST_GRAD_RNN_H
#define LT_TEST_GRAD_RNN_H

#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GR_MAXH 8

typedef struct gcfg {
    const char *name;
    int gates; /* 1 RNN, 3 GRU, 4 LSTM */
    int64_t S, B, I, H;
    int dir; /* 0 forward, 1 reverse, 2 bidirectional */
    int layout;
    bool bias, h0, c0, peep, lbr, couple;
    const int64_t *lens; /* NULL: no sequence_lens */
    float clip;          /* 0: none */
    int nacts;           /* activations as handed to the node */
    const char *acts[6];
    int nalpha, nbeta;
    float alist[6], blist[6];
    bool no_dy, no_dyh, no_dyc; /* cotangents left out */
    uint64_t seed;
} gcfg;

/* forward inputs by op input index (X W R B - h0 c0 P), cotangents dY dY_h dY_c */
typedef struct gdata {
    int64_t S, B, I, H, D, G;
    double *in[8];
    int64_t n[8], dims[8][3];
    int rank[8];
    double *dy[3];
    int64_t ndy[3], ydims[4], hdims[3];
    /* activation slot d*nact+j resolved like the kernels do */
    const char *fn[6];
    double al[6], be[6];
} gdata;

static const struct {
    const char *name;
    int na, nb;
    float a, b;
} gr_acts[] = {
    {"Relu", 0, 0, 0, 0},        {"Tanh", 0, 0, 0, 0},          {"Sigmoid", 0, 0, 0, 0},
    {"Affine", 1, 1, 1, 0},      {"LeakyRelu", 1, 0, 0.01f, 0}, {"ThresholdedRelu", 1, 0, 1, 0},
    {"ScaledTanh", 1, 1, 1, 1},  {"HardSigmoid", 1, 1, 0.2f, 0.5f}, {"Elu", 1, 0, 1, 0},
    {"Softsign", 0, 0, 0, 0},    {"Softplus", 0, 0, 0, 0},
};

static double gr_act(const char *f, double a, double b, double x)
{
    if (!strcmp(f, "Tanh"))
        return tanh(x);
    if (!strcmp(f, "Sigmoid"))
        return 1 / (1 + exp(-x));
    if (!strcmp(f, "Relu"))
        return x > 0 ? x : 0;
    if (!strcmp(f, "LeakyRelu"))
        return x >= 0 ? x : a * x;
    if (!strcmp(f, "HardSigmoid"))
        return fmax(0, fmin(1, a * x + b));
    if (!strcmp(f, "ScaledTanh"))
        return a * tanh(b * x);
    if (!strcmp(f, "Affine"))
        return a * x + b;
    if (!strcmp(f, "Elu"))
        return x >= 0 ? x : a * (exp(x) - 1);
    if (!strcmp(f, "Softsign"))
        return x / (1 + fabs(x));
    if (!strcmp(f, "Softplus"))
        return log1p(exp(x));
    if (!strcmp(f, "ThresholdedRelu"))
        return x > a ? x : 0;
    fail_msg("unknown activation %s", f);
    return 0;
}

static int gr_nact(const gcfg *c) { return c->gates == 1 ? 1 : c->gates == 3 ? 2 : 3; }

/* slot j of direction d on x, clipped first unless noclip */
static double gr_A(const gcfg *c, const gdata *g, int d, int j, double x, bool noclip)
{
    if (c->clip > 0 && !noclip)
        x = fmax(-c->clip, fmin(c->clip, x));
    int s = d * gr_nact(c) + j;
    return gr_act(g->fn[s], g->al[s], g->be[s], x);
}

static void gr_fill(double *v, int64_t n, double lo, double hi, uint64_t *seed)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (*seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        v[i] = lo + (hi - lo) * (double)(z >> 11) / 9007199254740992.0;
    }
}

static void gr_init(const gcfg *c, gdata *g)
{
    memset(g, 0, sizeof *g);
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, D = c->dir == 2 ? 2 : 1, G = c->gates * H;
    g->S = S, g->B = B, g->I = I, g->H = H, g->D = D, g->G = G;
    int64_t xd[3] = {c->layout ? B : S, c->layout ? S : B, I};
    int64_t hd[3] = {c->layout ? B : D, c->layout ? D : B, H};
    int64_t all[8][3] = {{xd[0], xd[1], xd[2]}, {D, G, I}, {D, G, H}, {D, 2 * G}, {0}, {hd[0], hd[1], hd[2]},
                         {hd[0], hd[1], hd[2]}, {D, 3 * H}};
    int rank[8] = {3, 3, 3, 2, 0, 3, 3, 2};
    bool on[8] = {true, true, true, c->bias, false, c->h0, c->gates == 4 && c->c0, c->gates == 4 && c->peep};
    double lo[8] = {-1, -0.6, -0.6, -0.5, 0, -0.8, -0.8, -0.5};
    uint64_t seed = c->seed;
    for (int i = 0; i < 8; i++) {
        if (!on[i])
            continue;
        g->rank[i] = rank[i];
        g->n[i] = 1;
        for (int k = 0; k < rank[i]; k++)
            g->n[i] *= g->dims[i][k] = all[i][k];
        g->in[i] = malloc(sizeof(double) * (size_t)g->n[i]);
        gr_fill(g->in[i], g->n[i], lo[i], -lo[i], &seed);
    }
    int64_t yd[4] = {c->layout ? B : S, c->layout ? S : D, c->layout ? D : B, H};
    memcpy(g->ydims, yd, sizeof yd);
    memcpy(g->hdims, hd, sizeof hd);
    bool don[3] = {!c->no_dy, !c->no_dyh, c->gates == 4 && !c->no_dyc};
    int64_t dn[3] = {S * D * B * H, D * B * H, D * B * H};
    for (int i = 0; i < 3; i++)
        if (don[i]) {
            g->ndy[i] = dn[i];
            g->dy[i] = malloc(sizeof(double) * (size_t)dn[i]);
            gr_fill(g->dy[i], dn[i], -1, 1, &seed);
        }
    /* activations: names per slot, alphas/betas consumed in order */
    static const char *defs[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    int na = gr_nact(c), ia = 0, ib = 0;
    for (int s = 0; s < D * na; s++) {
        const char *f = c->nacts ? c->acts[c->nacts == na ? s % na : s] : defs[c->gates == 1 ? 0 : c->gates == 3 ? 1 : 2][s % na];
        size_t t;
        for (t = 0; t < sizeof gr_acts / sizeof gr_acts[0]; t++)
            if (!strcmp(f, gr_acts[t].name))
                break;
        assert_true(t < sizeof gr_acts / sizeof gr_acts[0]);
        g->fn[s] = f;
        /* the node's floats, so the reference sees exactly what the kernel does */
        g->al[s] = c->nacts && gr_acts[t].na && ia < c->nalpha ? c->alist[ia++] : gr_acts[t].a;
        g->be[s] = c->nacts && gr_acts[t].nb && ib < c->nbeta ? c->blist[ib++] : gr_acts[t].b;
    }
}

static void gr_free(gdata *g)
{
    for (int i = 0; i < 8; i++)
        free(g->in[i]);
    for (int i = 0; i < 3; i++)
        free(g->dy[i]);
}

static double gr_get(const double *v, int64_t i) { return v ? v[i] : 0.0; }

/* Y, Yh, Yc in the layout's order (Yc only for LSTM, may be NULL) */
static void gr_forward(const gcfg *c, const gdata *g, double *Y, double *Yh, double *Yc)
{
    int64_t S = g->S, B = g->B, I = g->I, H = g->H, D = g->D, G = g->G;
    const double *X = g->in[0], *W = g->in[1], *R = g->in[2], *Bv = g->in[3], *h0 = g->in[5], *c0 = g->in[6],
                 *P = g->in[7];
    assert_true(H <= GR_MAXH);
    memset(Y, 0, sizeof *Y * (size_t)(S * D * B * H));
    for (int d = 0; d < D; d++) {
        bool rev = c->dir == 1 || d == 1;
        for (int64_t b = 0; b < B; b++) {
            double h[GR_MAXH], cc[GR_MAXH], hn[GR_MAXH], cn[GR_MAXH];
            int64_t hoff = (c->layout ? b * D + d : d * B + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[j] = gr_get(h0, hoff + j);
                cc[j] = gr_get(c0, hoff + j);
            }
            int64_t len = c->lens ? c->lens[b] : S;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const double *x = X + (c->layout ? b * S + t : t * B + b) * I;
                double xw[4 * GR_MAXH], hr[4 * GR_MAXH];
                for (int64_t q = 0; q < G; q++) {
                    xw[q] = gr_get(Bv, d * 2 * G + q);
                    hr[q] = gr_get(Bv, d * 2 * G + G + q);
                    for (int64_t i = 0; i < I; i++)
                        xw[q] += x[i] * W[(d * G + q) * I + i];
                    for (int64_t i = 0; i < H; i++)
                        hr[q] += h[i] * R[(d * G + q) * H + i];
                }
                for (int64_t j = 0; j < H; j++) {
                    if (c->gates == 1) {
                        hn[j] = gr_A(c, g, d, 0, xw[j] + hr[j], false);
                    } else if (c->gates == 3) {
                        double z = gr_A(c, g, d, 0, xw[j] + hr[j], false);
                        double v = xw[2 * H + j];
                        if (c->lbr) {
                            v += gr_A(c, g, d, 0, xw[H + j] + hr[H + j], false) * hr[2 * H + j];
                        } else {
                            v += gr_get(Bv, d * 2 * G + G + 2 * H + j);
                            for (int64_t i = 0; i < H; i++)
                                v += gr_A(c, g, d, 0, xw[H + i] + hr[H + i], false) * h[i] *
                                     R[(d * G + 2 * H + j) * H + i];
                        }
                        double hh = gr_A(c, g, d, 1, v, false);
                        hn[j] = (1 - z) * hh + z * h[j];
                    } else {
                        const double *p = P ? P + d * 3 * H : NULL;
                        double ig = gr_A(c, g, d, 0, xw[j] + hr[j] + (p ? p[j] * cc[j] : 0), false);
                        double fg = c->couple ? 1 - ig
                                              : gr_A(c, g, d, 0, xw[2 * H + j] + hr[2 * H + j] +
                                                                     (p ? p[2 * H + j] * cc[j] : 0), false);
                        double cg = gr_A(c, g, d, 1, xw[3 * H + j] + hr[3 * H + j], false);
                        cn[j] = fg * cc[j] + ig * cg;
                        double og = gr_A(c, g, d, 0, xw[H + j] + hr[H + j] + (p ? p[H + j] * cn[j] : 0), false);
                        hn[j] = og * gr_A(c, g, d, 2, cn[j], true);
                    }
                }
                memcpy(h, hn, sizeof h);
                if (c->gates == 4)
                    memcpy(cc, cn, sizeof cc);
                memcpy(Y + (c->layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H, h, sizeof *h * (size_t)H);
            }
            memcpy(Yh + hoff, h, sizeof *h * (size_t)H);
            if (Yc)
                memcpy(Yc + hoff, cc, sizeof *cc * (size_t)H);
        }
    }
}

static double gr_loss(const gcfg *c, const gdata *g)
{
    int64_t ny = g->S * g->D * g->B * g->H, nh = g->D * g->B * g->H;
    double *Y = malloc(sizeof *Y * (size_t)ny), *Yh = malloc(sizeof *Yh * (size_t)nh),
           *Yc = malloc(sizeof *Yc * (size_t)nh);
    gr_forward(c, g, Y, Yh, Yc);
    double L = 0;
    double *outs[3] = {Y, Yh, Yc};
    for (int i = 0; i < 3; i++)
        for (int64_t j = 0; j < g->ndy[i]; j++)
            L += g->dy[i][j] * outs[i][j];
    free(Y);
    free(Yh);
    free(Yc);
    return L;
}

/* The forward (RNN/GRU/LSTM) or gradient node with the case's attributes. */
static tu_graph gr_node(const gcfg *c, bool grad)
{
    lt_op op = c->gates == 1 ? (grad ? LT_OP_RNN_GRAD : LT_OP_RNN)
             : c->gates == 3 ? (grad ? LT_OP_GRU_GRAD : LT_OP_GRU)
                             : (grad ? LT_OP_LSTM_GRAD : LT_OP_LSTM);
    int nfin = c->gates == 4 ? 8 : 6, ncot = c->gates == 4 ? 3 : 2;
    int nin = grad ? nfin + ncot : nfin, nout = grad ? (c->gates == 4 ? 7 : 5) : ncot;
    tu_graph gr = tu_single(op, 14, nin, nout);
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
    return gr;
}

/* Input values for the node (forward inputs, then cotangents when grad);
 * absent ones are omitted from the graph. vals gets 11 entries. */
static void gr_inputs(const gcfg *c, const gdata *g, tu_graph *gr, lt_dtype dt, bool grad, lt_value **vals)
{
    int nfin = c->gates == 4 ? 8 : 6, ncot = c->gates == 4 ? 3 : 2;
    for (int i = 0; i < 11; i++)
        vals[i] = NULL;
    for (int i = 0; i < nfin; i++) {
        if (i == 4 && c->lens) {
            double *l = malloc(sizeof *l * (size_t)g->B);
            for (int64_t b = 0; b < g->B; b++)
                l[b] = (double)c->lens[b];
            vals[4] = tu_from(LT_I32, 1, (int64_t[]){g->B}, l);
            free(l);
        } else if (g->in[i]) {
            vals[i] = tu_from(dt, g->rank[i], g->dims[i], g->in[i]);
        } else {
            tu_omit_input(gr, i);
        }
    }
    for (int i = 0; grad && i < ncot; i++) {
        if (g->dy[i])
            vals[nfin + i] = tu_from(dt, i ? 3 : 4, i ? g->hdims : g->ydims, g->dy[i]);
        else
            tu_omit_input(gr, nfin + i);
    }
}

static void gr_free_vals(lt_value **vals, int n)
{
    for (int i = 0; i < n; i++)
        lt_value_free(vals[i]);
}

/* Runs the gradient node in dt; out gets dX, dW, dR, dB, dh0 [, dc0, dP]. */
static void gr_run_grad(const gcfg *c, const gdata *g, lt_dtype dt, lt_value **out)
{
    tu_graph gr = gr_node(c, true);
    lt_value *vals[11];
    gr_inputs(c, g, &gr, dt, true, vals);
    int nout = c->gates == 4 ? 7 : 5;
    for (int i = 0; i < 7; i++)
        out[i] = NULL;
    lt_err err;
    if (tu_run(&gr, vals, out, &err) != LT_OK)
        fail_msg("%s (seed %llu): %s", c->name, (unsigned long long)c->seed, err.msg);
    for (int i = 0; i < nout; i++)
        assert_int_equal(out[i]->t.dtype, dt);
    gr_free_vals(vals, 11);
    tu_free(&gr);
}

/* The reference agrees with lantern's forward kernel (float inside). */
static void gr_check_forward(const gcfg *c, const gdata *g)
{
    tu_graph gr = gr_node(c, false);
    lt_value *vals[11], *out[3] = {NULL};
    gr_inputs(c, g, &gr, LT_F64, false, vals);
    lt_err err;
    if (tu_run(&gr, vals, out, &err) != LT_OK)
        fail_msg("%s forward: %s", c->name, err.msg);
    int64_t ny = g->S * g->D * g->B * g->H, nh = g->D * g->B * g->H;
    double *Y = malloc(sizeof *Y * (size_t)ny), *Yh = malloc(sizeof *Yh * (size_t)nh),
           *Yc = malloc(sizeof *Yc * (size_t)nh);
    gr_forward(c, g, Y, Yh, Yc);
    tu_assert_close(out[0], Y, ny, 1e-4, 1e-5, c->seed);
    tu_assert_close(out[1], Yh, nh, 1e-4, 1e-5, c->seed);
    if (c->gates == 4)
        tu_assert_close(out[2], Yc, nh, 1e-4, 1e-5, c->seed);
    free(Y);
    free(Yh);
    free(Yc);
    gr_free_vals(out, 3);
    gr_free_vals(vals, 11);
    tu_free(&gr);
}

/* |a-b| relative to the larger magnitude, floored so exact zeros compare */
static double gr_rel(double a, double b)
{
    double m = fmax(fmax(fabs(a), fabs(b)), 1e-3);
    return fabs(a - b) / m;
}

static const char *gr_in_name[8] = {"X", "W", "R", "B", "", "initial_h", "initial_c", "P"};
static const int gr_out_of_in[8] = {0, 1, 2, 3, -1, 4, 5, 6};

/* Results with B, initial_h, initial_c or P omitted equal those with the
 * input given as zeros (the gradient is still defined, at zero). */
static void gr_check_absent(const gcfg *c, gdata *g, lt_value *const *out)
{
    gcfg z = *c;
    z.bias = z.h0 = true;
    if (c->gates == 4)
        z.c0 = z.peep = true;
    if (z.bias == c->bias && z.h0 == c->h0 && z.c0 == c->c0 && z.peep == c->peep)
        return;
    gdata gz;
    gr_init(&z, &gz);
    for (int i = 0; i < 8; i++) {
        if (g->in[i]) {
            memcpy(gz.in[i], g->in[i], sizeof(double) * (size_t)g->n[i]);
        } else if (gz.in[i]) {
            memset(gz.in[i], 0, sizeof(double) * (size_t)gz.n[i]);
        }
    }
    for (int i = 0; i < 3; i++) {
        free(gz.dy[i]);
        gz.dy[i] = NULL;
        if (g->dy[i]) {
            gz.dy[i] = malloc(sizeof(double) * (size_t)g->ndy[i]);
            memcpy(gz.dy[i], g->dy[i], sizeof(double) * (size_t)g->ndy[i]);
        }
    }
    lt_value *oz[7];
    gr_run_grad(&z, &gz, LT_F64, oz);
    for (int o = 0; o < (c->gates == 4 ? 7 : 5); o++) {
        assert_int_equal(out[o]->t.numel, oz[o]->t.numel);
        for (int64_t j = 0; j < oz[o]->t.numel; j++)
            if (fabs(tu_get(out[o], j) - tu_get(oz[o], j)) > 1e-12)
                fail_msg("%s: output %d [%lld] is %.9g, with zero inputs given %.9g", c->name, o, (long long)j,
                         tu_get(out[o], j), tu_get(oz[o], j));
    }
    gr_free_vals(oz, 7);
    gr_free(&gz);
}

/* Worst relative error of each input's gradient (double kernel) against
 * central differences of the reference loss, on all elements or a seeded
 * subset of 40; worst[i] by op input index. Fails above tol. */
static void gr_check_fd(const gcfg *c, gdata *g, double tol, double *worst)
{
    gr_check_forward(c, g);
    lt_value *out[7];
    gr_run_grad(c, g, LT_F64, out);
    const double h = 1e-6;
    uint64_t seed = c->seed * 7919 + 13;
    printf("  %-44s", c->name);
    for (int i = 0; i < 8; i++) {
        worst[i] = -1;
        int o = gr_out_of_in[i];
        if (o < 0 || o >= (c->gates == 4 ? 7 : 5))
            continue;
        lt_value *gv = out[o];
        if (!g->in[i])
            continue;
        assert_int_equal(gv->t.numel, g->n[i]);
        int64_t n = g->n[i], cnt = n <= 40 ? n : 40;
        double w = 0;
        for (int64_t k = 0; k < cnt; k++) {
            int64_t e = k;
            if (n > 40) {
                double u;
                gr_fill(&u, 1, 0, (double)n, &seed);
                e = (int64_t)u;
            }
            double v = g->in[i][e];
            g->in[i][e] = v + h;
            double lp = gr_loss(c, g);
            g->in[i][e] = v - h;
            double lm = gr_loss(c, g);
            g->in[i][e] = v;
            double fd = (lp - lm) / (2 * h), an = tu_get(gv, e);
            double r = gr_rel(an, fd);
            if (r > tol)
                fail_msg("%s: d%s[%lld] = %.9g, finite differences %.9g (seed %llu)", c->name, gr_in_name[i],
                         (long long)e, an, fd, (unsigned long long)c->seed);
            w = fmax(w, r);
        }
        worst[i] = w;
        printf(" d%s %.1e", i == 5 ? "h0" : i == 6 ? "c0" : gr_in_name[i], w);
    }
    printf("\n");
    gr_check_absent(c, g, out);
    gr_free_vals(out, 7);
}

/* L through lantern's forward kernel (double tensors, float inside) */
static double gr_kernel_loss(const gcfg *c, const gdata *g)
{
    tu_graph gr = gr_node(c, false);
    lt_value *vals[11], *out[3] = {NULL};
    gr_inputs(c, g, &gr, LT_F64, false, vals);
    lt_err err;
    if (tu_run(&gr, vals, out, &err) != LT_OK)
        fail_msg("%s forward: %s", c->name, err.msg);
    double L = 0;
    for (int i = 0; i < (c->gates == 4 ? 3 : 2); i++)
        for (int64_t j = 0; j < g->ndy[i]; j++)
            L += g->dy[i][j] * tu_get(out[i], j);
    gr_free_vals(out, 3);
    gr_free_vals(vals, 11);
    tu_free(&gr);
    return L;
}

/* A coarser check straight through the forward kernel: a few seeded
 * elements of every input, step 1e-2 (the kernel computes in float). */
static void gr_check_fd_kernel(const gcfg *c, gdata *g)
{
    lt_value *out[7];
    gr_run_grad(c, g, LT_F64, out);
    const double h = 1e-2;
    uint64_t seed = c->seed * 31 + 7;
    double worst = 0;
    for (int i = 0; i < 8; i++) {
        int o = gr_out_of_in[i];
        if (o < 0 || o >= (c->gates == 4 ? 7 : 5) || !g->in[i])
            continue;
        for (int k = 0; k < 6; k++) {
            double u;
            gr_fill(&u, 1, 0, (double)g->n[i], &seed);
            int64_t e = (int64_t)u;
            double v = g->in[i][e];
            g->in[i][e] = v + h;
            double lp = gr_kernel_loss(c, g);
            g->in[i][e] = v - h;
            double lm = gr_kernel_loss(c, g);
            g->in[i][e] = v;
            double fd = (lp - lm) / (2 * h), an = tu_get(out[o], e);
            double err = fabs(an - fd) / fmax(1, fabs(an));
            if (err > 5e-3)
                fail_msg("%s through the forward kernel: d%s[%lld] = %.6g, finite differences %.6g", c->name,
                         gr_in_name[i], (long long)e, an, fd);
            worst = fmax(worst, err);
        }
    }
    printf("  %-44s through the forward kernel: worst %.1e\n", c->name, worst);
    gr_free_vals(out, 7);
}

#endif
