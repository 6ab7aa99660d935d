/* GRU and LSTM: the input projection of every step is one GEMM (rnn.c);
 * each step adds one GEMM of the hidden state against R (two for a GRU
 * that resets before its linear map) and the gate arithmetic per row. */
#include "rnn_util.h"
#include "linalg_util.h"
#include <string.h>

/* Gate order in W, R, B: z, r, h. */
static lt_status gru(lt_kctx *k)
{
    lt_rnn r;
    const rnn_fn def[2] = {RNN_SIGMOID, RNN_TANH};
    lt_status s = lt_rnn_setup(k, 3, 2, def, &r);
    if (s != LT_OK)
        return s;
    bool lbr = lt_attr_int(k->node, "linear_before_reset", 0) != 0;
    int64_t H = r.H, B = r.B, G = 3 * H;
    size_t bh = (size_t)(B * H > 0 ? B * H : 1);
    float *h = lt_k_scratch(k, sizeof(float) * bh);
    float *hp = lt_k_scratch(k, sizeof(float) * bh * 3);
    float *rh = lt_k_scratch(k, sizeof(float) * bh);
    if (!h || !hp || !rh)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    memset(rh, 0, sizeof(float) * bh);
    /* Rbh stays inside the reset product when the linear map comes first */
    const bool mask[3] = {true, true, !lbr};
    for (int d = 0; d < r.D; d++) {
        float *xp;
        s = lt_rnn_project(k, &r, d, mask, &xp);
        if (s != LT_OK)
            return s;
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++)
                h[b * H + j] = r.h0 ? r.h0[lt_rnn_hoff(&r, d, b) + j] : 0.0f;
        const float *Rd = r.R + d * G * H;
        const float *rbh = r.Bias ? r.Bias + d * 2 * G + G + 2 * H : NULL;
        const rnn_act *f = &r.act[d][0], *g = &r.act[d][1];
        for (int64_t st = 0; st < r.maxlen; st++) {
            /* z and r (and h when the linear map precedes the reset) */
            lt_linalg_gemm(LT_F32, false, true, B, lbr ? G : 2 * H, H, 1.0, h, H, Rd, H, 0.0, hp, G);
#pragma omp parallel for if (B * G > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(&r, d, st, b);
                if (t < 0)
                    continue;
                float *row = hp + b * G;
                const float *x = xp + lt_rnn_xrow(&r, t, b) * G;
                for (int64_t j = 0; j < 2 * H; j++)
                    row[j] += x[j];
                lt_rnn_act(f, r.clip_on, r.clip, row, 2 * H);
                if (lbr) {
                    float *hh = row + 2 * H;
                    for (int64_t j = 0; j < H; j++)
                        hh[j] = x[2 * H + j] + row[H + j] * (hh[j] + (rbh ? rbh[j] : 0.0f));
                } else {
                    for (int64_t j = 0; j < H; j++)
                        rh[b * H + j] = row[H + j] * h[b * H + j];
                }
            }
            if (!lbr) {
                lt_linalg_gemm(LT_F32, false, true, B, H, H, 1.0, rh, H, Rd + 2 * H * H, H, 0.0, hp + 2 * H, G);
#pragma omp parallel for if (B * H > 32768)
                for (int64_t b = 0; b < B; b++) {
                    int64_t t = lt_rnn_time(&r, d, st, b);
                    if (t < 0)
                        continue;
                    const float *x = xp + lt_rnn_xrow(&r, t, b) * G;
                    float *hh = hp + b * G + 2 * H;
                    for (int64_t j = 0; j < H; j++)
                        hh[j] += x[2 * H + j];
                }
            }
#pragma omp parallel for if (B * H > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(&r, d, st, b);
                if (t < 0)
                    continue;
                float *row = hp + b * G, *hh = row + 2 * H, *hb = h + b * H;
                lt_rnn_act(g, r.clip_on, r.clip, hh, H);
                for (int64_t j = 0; j < H; j++)
                    hb[j] = (1.0f - row[j]) * hh[j] + row[j] * hb[j];
                if (r.Y)
                    memcpy(r.Y + lt_rnn_yoff(&r, t, d, b), hb, sizeof *hb * (size_t)H);
            }
        }
        if (r.Yh)
            for (int64_t b = 0; b < B; b++)
                memcpy(r.Yh + lt_rnn_hoff(&r, d, b), h + b * H, sizeof *h * (size_t)H);
    }
    lt_rnn_finish(&r);
    return LT_OK;
}

/* Gate order in W, R, B: i, o, f, c; peepholes P: i, o, f. */
static lt_status lstm(lt_kctx *k)
{
    lt_rnn r;
    const rnn_fn def[3] = {RNN_SIGMOID, RNN_TANH, RNN_TANH};
    lt_status s = lt_rnn_setup(k, 4, 3, def, &r);
    if (s != LT_OK)
        return s;
    bool couple = lt_attr_int(k->node, "input_forget", 0) != 0;
    int64_t H = r.H, B = r.B, G = 4 * H;
    size_t bh = (size_t)(B * H > 0 ? B * H : 1);
    float *h = lt_k_scratch(k, sizeof(float) * bh);
    float *c = lt_k_scratch(k, sizeof(float) * bh);
    float *hp = lt_k_scratch(k, sizeof(float) * bh * 4);
    if (!h || !c || !hp)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    const bool mask[4] = {true, true, true, true};
    for (int d = 0; d < r.D; d++) {
        float *xp;
        s = lt_rnn_project(k, &r, d, mask, &xp);
        if (s != LT_OK)
            return s;
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                h[b * H + j] = r.h0 ? r.h0[lt_rnn_hoff(&r, d, b) + j] : 0.0f;
                c[b * H + j] = r.c0 ? r.c0[lt_rnn_hoff(&r, d, b) + j] : 0.0f;
            }
        const float *Rd = r.R + d * G * H;
        const float *pi = r.P ? r.P + d * 3 * H : NULL, *po = pi ? pi + H : NULL, *pf = pi ? pi + 2 * H : NULL;
        const rnn_act *f = &r.act[d][0], *g = &r.act[d][1], *ha = &r.act[d][2];
        for (int64_t st = 0; st < r.maxlen; st++) {
            lt_linalg_gemm(LT_F32, false, true, B, G, H, 1.0, h, H, Rd, H, 0.0, hp, G);
#pragma omp parallel for if (B * G > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(&r, d, st, b);
                if (t < 0)
                    continue;
                float *row = hp + b * G, *cb = c + b * H, *hb = h + b * H;
                const float *x = xp + lt_rnn_xrow(&r, t, b) * G;
                float *gi = row, *go = row + H, *gf = row + 2 * H, *gc = row + 3 * H;
                for (int64_t j = 0; j < G; j++)
                    row[j] += x[j];
                if (pi)
                    for (int64_t j = 0; j < H; j++) {
                        gi[j] += pi[j] * cb[j];
                        gf[j] += pf[j] * cb[j];
                    }
                lt_rnn_act(f, r.clip_on, r.clip, gi, H);
                if (couple)
                    for (int64_t j = 0; j < H; j++)
                        gf[j] = 1.0f - gi[j];
                else
                    lt_rnn_act(f, r.clip_on, r.clip, gf, H);
                lt_rnn_act(g, r.clip_on, r.clip, gc, H);
                for (int64_t j = 0; j < H; j++)
                    cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
                if (po)
                    for (int64_t j = 0; j < H; j++)
                        go[j] += po[j] * cb[j];
                lt_rnn_act(f, r.clip_on, r.clip, go, H);
                /* h(C) works on a copy: C itself carries on */
                memcpy(gc, cb, sizeof *cb * (size_t)H);
                lt_rnn_act(ha, false, 0, gc, H);
                for (int64_t j = 0; j < H; j++)
                    hb[j] = go[j] * gc[j];
                if (r.Y)
                    memcpy(r.Y + lt_rnn_yoff(&r, t, d, b), hb, sizeof *hb * (size_t)H);
            }
        }
        for (int64_t b = 0; b < B; b++) {
            if (r.Yh)
                memcpy(r.Yh + lt_rnn_hoff(&r, d, b), h + b * H, sizeof *h * (size_t)H);
            if (r.Yc)
                memcpy(r.Yc + lt_rnn_hoff(&r, d, b), c + b * H, sizeof *c * (size_t)H);
        }
    }
    lt_rnn_finish(&r);
    return LT_OK;
}

void lt_rnn_register_gates(lt_kernel_fn *tab)
{
    tab[LT_OP_GRU] = gru;
    tab[LT_OP_LSTM] = lstm;
}
