/* Template: the GRU and LSTM recurrences in one compute type; included by
 * rnn_f32.c and rnn_f64.c after rnn_tmpl.h (same parameters, and its act,
 * project, scratch, load_state and store_state). Each step is one GEMM of
 * the hidden state against R (two for a GRU that resets before its linear
 * map) and the gate arithmetic per batch row. */

/* Gate order in W, R, B: z, r, h.
 * z = f(.z + h R_z^T), r = f(.r + h R_r^T),
 * hh = g(.h + (r*h) R_h^T + Rb_h), or with lbr g(.h + r*(h R_h^T + Rb_h)),
 * h' = (1-z)*hh + z*h */
lt_status SFX(lt_rnn_gru)(lt_kctx *k, const lt_rnn *r, bool lbr)
{
    int64_t H = r->H, B = r->B, G = 3 * H;
    T *h = SFX(scratch)(k, B * H), *hp = SFX(scratch)(k, B * G), *rh = SFX(scratch)(k, B * H);
    if (!h || !hp || !rh)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    memset(rh, 0, sizeof(T) * (size_t)(B * H));
    /* Rb_h stays inside the reset product when the linear map comes first */
    const bool mask[3] = {true, true, !lbr};
    for (int d = 0; d < r->D; d++) {
        T *xp;
        lt_status s = SFX(project)(k, r, d, mask, &xp);
        if (s != LT_OK)
            return s;
        SFX(load_state)(r, d, r->h0, h);
        const T *Rd = (const T *)r->R + d * G * H;
        const T *rbh = r->Bias ? (const T *)r->Bias + d * 2 * G + G + 2 * H : NULL;
        const rnn_act *f = &r->act[d][0], *g = &r->act[d][1];
        T clip = (T)r->clip;
        for (int64_t st = 0; st < r->maxlen; st++) {
            /* z and r (and h when the linear map precedes the reset) */
            lt_linalg_gemm(CT, false, true, B, lbr ? G : 2 * H, H, 1.0, h, H, Rd, H, 0.0, hp, G);
#pragma omp parallel for if (B * G > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(r, d, st, b);
                if (t < 0)
                    continue;
                T *row = hp + b * G;
                const T *x = xp + lt_rnn_xrow(r, t, b) * G;
                for (int64_t j = 0; j < 2 * H; j++)
                    row[j] += x[j];
                SFX(act)(f, r->clip_on, clip, row, 2 * H);
                if (lbr) {
                    T *hh = row + 2 * H;
                    for (int64_t j = 0; j < H; j++)
                        hh[j] = x[2 * H + j] + row[H + j] * (hh[j] + (rbh ? rbh[j] : 0));
                } else {
                    for (int64_t j = 0; j < H; j++)
                        rh[b * H + j] = row[H + j] * h[b * H + j];
                }
            }
            if (!lbr) {
                /* finished entries' rh rows are stale but only feed their own hp rows */
                lt_linalg_gemm(CT, false, true, B, H, H, 1.0, rh, H, Rd + 2 * H * H, H, 0.0, hp + 2 * H, G);
#pragma omp parallel for if (B * H > 32768)
                for (int64_t b = 0; b < B; b++) {
                    int64_t t = lt_rnn_time(r, d, st, b);
                    if (t < 0)
                        continue;
                    const T *x = xp + lt_rnn_xrow(r, t, b) * G;
                    T *hh = hp + b * G + 2 * H;
                    for (int64_t j = 0; j < H; j++)
                        hh[j] += x[2 * H + j];
                }
            }
#pragma omp parallel for if (B * H > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(r, d, st, b);
                if (t < 0)
                    continue;
                T *row = hp + b * G, *hh = row + 2 * H, *hb = h + b * H;
                SFX(act)(g, r->clip_on, clip, hh, H);
                for (int64_t j = 0; j < H; j++)
                    hb[j] = (1 - row[j]) * hh[j] + row[j] * hb[j];
                if (r->Y)
                    memcpy((T *)r->Y + lt_rnn_yoff(r, t, d, b), hb, sizeof(T) * (size_t)H);
            }
        }
        SFX(store_state)(r, d, h, r->Yh);
    }
    return LT_OK;
}

/* Gate order in W, R, B: i, o, f, c; peepholes P: i, o, f.
 * i = f(.i + P_i*C), f = f(.f + P_f*C) (or 1-i with input_forget),
 * c~ = g(.c), C' = f*C + i*c~, o = f(.o + P_o*C'), h' = o*h(C') */
lt_status SFX(lt_rnn_lstm)(lt_kctx *k, const lt_rnn *r, bool couple)
{
    int64_t H = r->H, B = r->B, G = 4 * H;
    T *h = SFX(scratch)(k, B * H), *c = SFX(scratch)(k, B * H), *hp = SFX(scratch)(k, B * G);
    if (!h || !c || !hp)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    const bool mask[4] = {true, true, true, true};
    for (int d = 0; d < r->D; d++) {
        T *xp;
        lt_status s = SFX(project)(k, r, d, mask, &xp);
        if (s != LT_OK)
            return s;
        SFX(load_state)(r, d, r->h0, h);
        SFX(load_state)(r, d, r->c0, c);
        const T *Rd = (const T *)r->R + d * G * H;
        const T *pi = r->P ? (const T *)r->P + d * 3 * H : NULL, *po = pi ? pi + H : NULL,
                *pf = pi ? pi + 2 * H : NULL;
        const rnn_act *f = &r->act[d][0], *g = &r->act[d][1], *ha = &r->act[d][2];
        T clip = (T)r->clip;
        for (int64_t st = 0; st < r->maxlen; st++) {
            lt_linalg_gemm(CT, false, true, B, G, H, 1.0, h, H, Rd, H, 0.0, hp, G);
#pragma omp parallel for if (B * G > 32768)
            for (int64_t b = 0; b < B; b++) {
                int64_t t = lt_rnn_time(r, d, st, b);
                if (t < 0)
                    continue;
                T *row = hp + b * G, *cb = c + b * H, *hb = h + b * H;
                const T *x = xp + lt_rnn_xrow(r, t, b) * G;
                T *gi = row, *go = row + H, *gf = row + 2 * H, *gc = row + 3 * H;
                for (int64_t j = 0; j < G; j++)
                    row[j] += x[j];
                if (pi)
                    for (int64_t j = 0; j < H; j++) {
                        gi[j] += pi[j] * cb[j];
                        gf[j] += pf[j] * cb[j];
                    }
                SFX(act)(f, r->clip_on, clip, gi, H);
                if (couple)
                    for (int64_t j = 0; j < H; j++)
                        gf[j] = 1 - gi[j];
                else
                    SFX(act)(f, r->clip_on, clip, gf, H);
                SFX(act)(g, r->clip_on, clip, gc, H);
                for (int64_t j = 0; j < H; j++)
                    cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
                if (po)
                    for (int64_t j = 0; j < H; j++)
                        go[j] += po[j] * cb[j];
                SFX(act)(f, r->clip_on, clip, go, H);
                /* h(C) works on a copy, unclipped: C itself carries on */
                memcpy(gc, cb, sizeof(T) * (size_t)H);
                SFX(act)(ha, false, 0, gc, H);
                for (int64_t j = 0; j < H; j++)
                    hb[j] = go[j] * gc[j];
                if (r->Y)
                    memcpy((T *)r->Y + lt_rnn_yoff(r, t, d, b), hb, sizeof(T) * (size_t)H);
            }
        }
        SFX(store_state)(r, d, h, r->Yh);
        SFX(store_state)(r, d, c, r->Yc);
    }
    return LT_OK;
}
