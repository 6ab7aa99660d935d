/* Template body of the RNN/GRU/LSTM gradients in one compute type; included
 * by grad_rnn_f32.c and grad_rnn_f64.c after defining T (float or double),
 * CT (its lt_dtype), SFX(name) (a suffixed name) and TANH, EXP, LOG1P, FABS
 * for T.
 *
 * Per direction: the input projection X W^T + biases of all steps is one
 * GEMM into buf [rows, G] (rows = S*B, row of (t, b) = lt_rnn_xrow). The
 * forward re-run turns each visited row into its gate inputs (before clip
 * and activation) and records the states each step read; the backward pass
 * turns each row into the gradient of those gate inputs. Rows past a batch
 * entry's length are never visited and end up zero, so dX, dW, dR and dB
 * are each one GEMM (or sum) over all rows.
 *
 * A forward node the AD differentiates runs that same recording forward
 * (lt_grnn_forward) and hands gate inputs and states to its gradient in a
 * workspace output (layout: lt_grnn_ws_parts); the gradient then skips the
 * re-run and writes the gate-input gradients into a buffer of its own. */

#define WK 10 /* per-batch-entry work arrays of H values (activations and derivatives) */
#define PAR_MIN 32768
#define COLSUM_PAR 1048576.0 /* elements summed worth two threads */
#define STEP_PAR_WORK 2097152.0 /* multiply-adds of a direction's recurrent GEMMs worth two threads */
#define STEP_SLICE 32 /* batch entries a thread takes at a time (a multiple of the products' 8-row blocks) */
#define DW_THIN 64    /* float dW with at most this many input columns is made as its transpose */
#define SUMS_PAR_WORK 8388608.0 /* multiply-adds of the final sums worth two threads */
/* batch entries whose bias gradients the fast LSTM's backward sums together
 * (the steps' slices, STEP_SLICE or half of it, hold whole groups) */
#define DB_GROUP 8

#include <omp.h>
#include "cpu_features.h"

#include "grad_rnn_act_tmpl.h"

typedef struct SFX(ws) {
    const lt_grnn *g;
    const lt_rnn *r;
    int d;
    int64_t B, H, G;
    const T *Rd;   /* R of this direction [G, H] */
    T *buf;        /* [rows, G] projection -> gate inputs -> their gradients */
    const T *pre;  /* [rows, G] gate inputs the backward reads: buf, or the workspace's */
    bool fast;     /* lt_grnn_lstm_fast: pre holds activated gates, hc h(C') */
    T *hc;         /* [rows, H] the fast LSTM's h(C') */
    const T *zero; /* [H] zeros (absent peepholes) */
    T *hx;         /* [rows, H] hidden state the step read */
    T *ax;         /* [rows, H] GRU: r*h, or h R_h^T + Rb_h when lbr; LSTM: cell state the step read */
    T *cx;         /* [rows, H] LSTM: cell state the step wrote */
    T *gh;         /* [rows, H] GRU: gradient of the h gate's recurrent term */
    T *h, *c;      /* [B, H] running states */
    T *hp;         /* [B, G] products with R */
    T *dh, *dc;    /* [B, H] running state gradients */
    T *ds;         /* [B, G] gradients of this step's gate inputs */
    T *tmp;        /* [B, H] */
    T *wk;         /* [B, WK*H] */
    T *rpf, *rpb;  /* RNN, LSTM: op(R) packed for the steps' products (lt_rgemm), or NULL */
    T *rpx;        /* the fast LSTM's recording forward: [W | R]^T packed, the input projection
                    * made in each step's product (x_t W^T + h R^T); NULL: buf holds it */
    const T *xb;   /* with rpx: the biases Wb + Rb [G] (zeros without B) */
    bool full;     /* every entry runs all S steps (no sequence_lens shorter than S) */
    T *hxx;        /* [rows, H + I] hx and X side by side for the joint dR, dW product through BLAS, or NULL */
    double *dbacc; /* the fast LSTM's backward: [groups of DB_GROUP entries, G] running sums of the gate
                    * gradients (the bias gradient), or NULL: summed over buf afterwards */
} SFX(ws);

/* C = A R_d^T (forward) or A R_d (backward) for a slice of the batch */
static void SFX(rprod)(const SFX(ws) *w, bool fwd, int64_t M, int64_t N, int64_t K, const T *A, int64_t lda, T *C,
                       int64_t ldc)
{
#ifdef GRNN_WIDE
    const T *pk = fwd ? w->rpf : w->rpb;
    if (pk) {
        lt_rgemm_run(M, N, K, A, lda, pk, 0.0f, C, ldc);
        return;
    }
#endif
    lt_linalg_gemm(CT, false, fwd, M, N, K, 1.0, A, lda, w->Rd, w->H, 0.0, C, ldc);
}

/* w->rpf / w->rpb: direction d's R packed (f32 with AVX-512 or AVX2, RNN and
 * LSTM), each into its buffer when given; untouched otherwise */
static void SFX(pack_r)(SFX(ws) *w, T *fbuf, T *bbuf)
{
#ifdef GRNN_WIDE
    if (fbuf) {
        lt_rgemm_pack(true, w->G, w->H, w->Rd, w->H, fbuf);
        w->rpf = fbuf;
    }
    if (bbuf) {
        lt_rgemm_pack(false, w->H, w->G, w->Rd, w->H, bbuf);
        w->rpb = bbuf;
    }
#else
    (void)w, (void)fbuf, (void)bbuf;
#endif
}

/* room for a packed R when the product kernel runs here, else NULL */
static T *SFX(pack_buf)(lt_kctx *k, const lt_rnn *r, int64_t N, int64_t K)
{
#ifdef GRNN_WIDE
    if ((r->gates == 1 || r->gates == 4) && lt_rgemm_have())
        return lt_k_scratch(k, sizeof(T) * (size_t)lt_rgemm_packed_len(N, K));
#endif
    (void)k, (void)r, (void)N, (void)K;
    return NULL;
}

/* dh += dY[t, d, b] */
static void SFX(add_dy)(const SFX(ws) *w, int64_t t, int64_t b, T *dh)
{
    if (!w->g->dY)
        return;
    const T *dy = (const T *)w->g->dY + lt_rnn_yoff(w->r, t, w->d, b);
#pragma omp simd
    for (int64_t j = 0; j < w->H; j++)
        dh[j] += dy[j];
}

/* dh of the entries active at step st becomes tmp (the gradient reaching
 * the state the step read); the others carry theirs through unchanged */
static void SFX(carry)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    for (int64_t b = b0; b < b1; b++)
        if (lt_rnn_time(w->r, w->d, st, b) >= 0)
            memcpy(w->dh + b * w->H, w->tmp + b * w->H, sizeof(T) * (size_t)w->H);
}

/* ---- RNN: h = f(x W^T + h R^T + Wb + Rb) ---- */

static void SFX(rnn_fwd)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H, G = w->G;
    const rnn_act *f = &r->act[w->d][0];
    SFX(rprod)(w, true, b1 - b0, H, H, w->h + b0 * H, H, w->hp + b0 * H, H);
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        if (t < 0)
            continue;
        int64_t row = lt_rnn_xrow(r, t, b);
        T *a = w->buf + row * G, *hb = w->h + b * H;
        const T *hp = w->hp + b * H;
        memcpy(w->hx + row * H, hb, sizeof(T) * (size_t)H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++)
            a[j] = hp[j] + a[j];
        memcpy(hb, a, sizeof(T) * (size_t)H);
        SFX(act)(f, r->clip_on, (T)r->clip, hb, H);
        if (r->Y)
            memcpy((T *)r->Y + lt_rnn_yoff(r, t, w->d, b), hb, sizeof(T) * (size_t)H);
    }
}

static void SFX(rnn_bwd)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H, G = w->G;
    const rnn_act *f = &r->act[w->d][0];
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        T *ds = w->ds + b * G;
        if (t < 0) {
            memset(ds, 0, sizeof(T) * (size_t)G);
            continue;
        }
        int64_t row = lt_rnn_xrow(r, t, b);
        T *a = w->buf + row * G, *dh = w->dh + b * H;
        T *v = w->wk + b * WK * H, *dv = v + H;
        SFX(add_dy)(w, t, b, dh);
        SFX(act_d)(f, r->clip_on, (T)r->clip, w->pre + row * G, v, dv, H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++)
            ds[j] = a[j] = dh[j] * dv[j];
    }
    SFX(rprod)(w, false, b1 - b0, H, G, w->ds + b0 * G, G, w->tmp + b0 * H, H);
    SFX(carry)(w, st, b0, b1);
}

/* ---- GRU (gates z, r, h):
 * z = f(.z + h R_z^T), r = f(.r + h R_r^T),
 * hh = g(.h + (r*h) R_h^T + Rb_h)  or, when lbr, g(.h + r*(h R_h^T + Rb_h)),
 * h' = (1-z)*hh + z*h ---- */

static void SFX(gru_fwd)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H, G = w->G;
    bool lbr = w->g->lbr;
    const rnn_act *f = &r->act[w->d][0], *g = &r->act[w->d][1];
    T clip = (T)r->clip;
    const T *rbh = w->g->Bias ? (const T *)w->g->Bias + w->d * 2 * G + G + 2 * H : NULL;
    lt_linalg_gemm(CT, false, true, b1 - b0, lbr ? G : 2 * H, H, 1.0, w->h + b0 * H, H, w->Rd, H, 0.0, w->hp + b0 * G,
                   G);
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        if (t < 0)
            continue;
        int64_t row = lt_rnn_xrow(r, t, b);
        T *a = w->buf + row * G, *hb = w->h + b * H, *rv = w->wk + b * WK * H, *ax = w->ax + row * H;
        const T *hp = w->hp + b * G;
        memcpy(w->hx + row * H, hb, sizeof(T) * (size_t)H);
#pragma omp simd
        for (int64_t j = 0; j < 2 * H; j++)
            a[j] = hp[j] + a[j];
        memcpy(rv, a + H, sizeof(T) * (size_t)H);
        SFX(act)(f, r->clip_on, clip, rv, H);
        if (lbr) {
#pragma omp simd
            for (int64_t j = 0; j < H; j++) {
                ax[j] = hp[2 * H + j] + (rbh ? rbh[j] : 0);
                a[2 * H + j] = a[2 * H + j] + rv[j] * ax[j];
            }
        } else {
#pragma omp simd
            for (int64_t j = 0; j < H; j++)
                w->tmp[b * H + j] = ax[j] = rv[j] * hb[j];
        }
    }
    if (!lbr) {
        /* inactive entries' tmp rows are stale but only feed their own rows */
        lt_linalg_gemm(CT, false, true, b1 - b0, H, H, 1.0, w->tmp + b0 * H, H, w->Rd + 2 * H * H, H, 0.0,
                       w->hp + b0 * G + 2 * H, G);
    }
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        if (t < 0)
            continue;
        T *a = w->buf + lt_rnn_xrow(r, t, b) * G, *hb = w->h + b * H;
        T *zv = w->wk + b * WK * H, *hv = zv + H;
        if (!lbr)
#pragma omp simd
            for (int64_t j = 0; j < H; j++)
                a[2 * H + j] = w->hp[b * G + 2 * H + j] + a[2 * H + j];
        memcpy(zv, a, sizeof(T) * (size_t)H);
        memcpy(hv, a + 2 * H, sizeof(T) * (size_t)H);
        SFX(act)(f, r->clip_on, clip, zv, H);
        SFX(act)(g, r->clip_on, clip, hv, H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++)
            hb[j] = (1 - zv[j]) * hv[j] + zv[j] * hb[j];
        if (r->Y)
            memcpy((T *)r->Y + lt_rnn_yoff(r, t, w->d, b), hb, sizeof(T) * (size_t)H);
    }
}

static void SFX(gru_bwd)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H, G = w->G;
    bool lbr = w->g->lbr;
    const rnn_act *f = &r->act[w->d][0], *g = &r->act[w->d][1];
    T clip = (T)r->clip;
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        T *ds = w->ds + b * G;
        if (t < 0) {
            memset(ds, 0, sizeof(T) * (size_t)G);
            continue;
        }
        int64_t row = lt_rnn_xrow(r, t, b);
        T *a = w->buf + row * G, *dh = w->dh + b * H, *gh = w->gh + row * H, *tmp = w->tmp + b * H;
        const T *hprev = w->hx + row * H, *ax = w->ax + row * H;
        T *zv = w->wk + b * WK * H, *zd = zv + H, *rv = zv + 2 * H, *rd = zv + 3 * H, *hv = zv + 4 * H,
          *hd = zv + 5 * H;
        const T *pa = w->pre + row * G;
        SFX(add_dy)(w, t, b, dh);
        SFX(act_d)(f, r->clip_on, clip, pa, zv, zd, H);
        SFX(act_d)(f, r->clip_on, clip, pa + H, rv, rd, H);
        SFX(act_d)(g, r->clip_on, clip, pa + 2 * H, hv, hd, H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++) {
            T daz = dh[j] * (hprev[j] - hv[j]) * zd[j];
            T dah = dh[j] * (1 - zv[j]) * hd[j];
            tmp[j] = dh[j] * zv[j];
            ds[j] = a[j] = daz;
            a[2 * H + j] = dah;
            if (lbr) {
                ds[H + j] = a[H + j] = dah * ax[j] * rd[j];
                ds[2 * H + j] = gh[j] = dah * rv[j];
            } else {
                ds[2 * H + j] = gh[j] = dah;
            }
        }
    }
    if (lbr) {
        lt_linalg_gemm(CT, false, false, b1 - b0, H, G, 1.0, w->ds + b0 * G, G, w->Rd, H, 1.0, w->tmp + b0 * H, H);
    } else {
        /* gradient of r*h first: it feeds both r's gate input and h */
        lt_linalg_gemm(CT, false, false, b1 - b0, H, H, 1.0, w->ds + b0 * G + 2 * H, G, w->Rd + 2 * H * H, H, 0.0,
                       w->hp + b0 * H, H);
        for (int64_t b = b0; b < b1; b++) {
            int64_t t = lt_rnn_time(r, w->d, st, b);
            if (t < 0)
                continue;
            int64_t row = lt_rnn_xrow(r, t, b);
            T *a = w->buf + row * G, *ds = w->ds + b * G, *tmp = w->tmp + b * H;
            const T *hprev = w->hx + row * H, *drh = w->hp + b * H;
            const T *rv = w->wk + b * WK * H + 2 * H, *rd = rv + H;
#pragma omp simd
            for (int64_t j = 0; j < H; j++) {
                ds[H + j] = a[H + j] = drh[j] * hprev[j] * rd[j];
                tmp[j] += drh[j] * rv[j];
            }
        }
        lt_linalg_gemm(CT, false, false, b1 - b0, H, 2 * H, 1.0, w->ds + b0 * G, G, w->Rd, H, 1.0, w->tmp + b0 * H, H);
    }
    SFX(carry)(w, st, b0, b1);
}

/* ---- LSTM (gates i, o, f, c; peepholes i, o, f):
 * i = f(.i + P_i*C), f = f(.f + P_f*C) (or 1-i with input_forget),
 * c~ = g(.c), C' = f*C + i*c~, o = f(.o + P_o*C'), h' = o*h(C') ---- */

/* The fast LSTM's step for one batch entry, in one pass over its H
 * columns: the same formulas as lstm_fwd's and lstm_bwd's fast branches,
 * element for element. PEEP and COUPLE are constants where it is inlined. */
static inline __attribute__((always_inline)) void SFX(lstm_row_fwd_body)(int64_t H, const bool peep,
                                                                          const bool couple, const T *hp,
                                                                          const T *xa, T *a, T *hb, T *cb,
                                                                          const T *pi, const T *po, const T *pf,
                                                                          T *hx, T *cr, T *cw, T *hc)
{
#pragma omp simd
    for (int64_t j = 0; j < H; j++) {
        T hprev = hb[j], cprev = cb[j];
        hx[j] = hprev;
        cr[j] = cprev;
        T gi = hp[j] + xa[j], go = hp[H + j] + xa[H + j], gf = hp[2 * H + j] + xa[2 * H + j],
          gc = hp[3 * H + j] + xa[3 * H + j];
        if (peep) {
            gi += pi[j] * cprev;
            gf += pf[j] * cprev;
        }
        T iv = SIGMOID(gi), fv = couple ? 1 - iv : SIGMOID(gf), cv = TANH(gc);
        T c = fv * cprev + iv * cv;
        if (peep)
            go += po[j] * c;
        T ov = SIGMOID(go), hv = TANH(c);
        cb[j] = c;
        cw[j] = c;
        hb[j] = ov * hv;
        hc[j] = hv;
        a[j] = iv;
        a[H + j] = ov;
        a[2 * H + j] = fv;
        a[3 * H + j] = cv;
    }
}

static inline __attribute__((always_inline)) void SFX(lstm_row_bwd_body)(int64_t H, T own, const T *pa, const T *hc,
                                                                          const T *qi, const T *qo, const T *qf,
                                                                          const T *cprev, const T *dh, const bool has_dy,
                                                                          const T *dy, T *dc, T *a, const bool dup,
                                                                          T *ds)
{
    /* sigmoid' = v (1 - v), tanh' = 1 - v^2; absent peepholes are zeros
     * and the coupled forget gate (own = 0) has no derivative of its own,
     * so the loop has no branches */
#pragma omp simd
    for (int64_t j = 0; j < H; j++) {
        T ivj = pa[j], ovj = pa[H + j], fvj = pa[2 * H + j], cvj = pa[3 * H + j], hvj = hc[j];
        T dhj = has_dy ? dh[j] + dy[j] : dh[j]; /* the step's output's own gradient joins here */
        T dcj = dc[j] + dhj * ovj * (1 - hvj * hvj);
        T dao = dhj * hvj * (ovj * (1 - ovj));
        dcj += dao * qo[j];
        T dfv = dcj * cprev[j];
        T di = dcj * cvj - (1 - own) * dfv, dac = dcj * ivj * (1 - cvj * cvj);
        T daf = dfv * (own * (fvj * (1 - fvj))), dai = di * (ivj * (1 - ivj));
        T dcp = dcj * fvj + (dai * qi[j] + daf * qf[j]);
        a[j] = dai;
        a[H + j] = dao;
        a[2 * H + j] = daf;
        a[3 * H + j] = dac;
        if (dup) {
            ds[j] = dai;
            ds[H + j] = dao;
            ds[2 * H + j] = daf;
            ds[3 * H + j] = dac;
        }
        dc[j] = dcp;
    }
}

#define LSTM_ROW_FNS(NAME, ATTR)                                                                                   \
    ATTR static void SFX(lstm_row_fwd_##NAME)(int64_t H, bool peep, bool couple, const T *hp, const T *xa, T *a,   \
                                              T *hb, T *cb, const T *pi, const T *po, const T *pf, T *hx, T *cr,   \
                                              T *cw, T *hc)                                                        \
    {                                                                                                              \
        if (peep && couple)                                                                                        \
            SFX(lstm_row_fwd_body)(H, true, true, hp, xa, a, hb, cb, pi, po, pf, hx, cr, cw, hc);                      \
        else if (peep)                                                                                             \
            SFX(lstm_row_fwd_body)(H, true, false, hp, xa, a, hb, cb, pi, po, pf, hx, cr, cw, hc);                     \
        else if (couple)                                                                                           \
            SFX(lstm_row_fwd_body)(H, false, true, hp, xa, a, hb, cb, pi, po, pf, hx, cr, cw, hc);                     \
        else                                                                                                       \
            SFX(lstm_row_fwd_body)(H, false, false, hp, xa, a, hb, cb, pi, po, pf, hx, cr, cw, hc);                    \
    }                                                                                                              \
    ATTR static void SFX(lstm_row_bwd_##NAME)(int64_t H, T own, const T *pa, const T *hc, const T *qi, const T *qo, \
                                              const T *qf, const T *cprev, const T *dh, const T *dy, T *dc, T *a,  \
                                              T *ds)                                                               \
    {                                                                                                              \
        if (dy && ds != a)                                                                                         \
            SFX(lstm_row_bwd_body)(H, own, pa, hc, qi, qo, qf, cprev, dh, true, dy, dc, a, true, ds);              \
        else if (dy)                                                                                               \
            SFX(lstm_row_bwd_body)(H, own, pa, hc, qi, qo, qf, cprev, dh, true, dy, dc, a, false, ds);             \
        else if (ds != a)                                                                                          \
            SFX(lstm_row_bwd_body)(H, own, pa, hc, qi, qo, qf, cprev, dh, false, dy, dc, a, true, ds);             \
        else                                                                                                       \
            SFX(lstm_row_bwd_body)(H, own, pa, hc, qi, qo, qf, cprev, dh, false, dy, dc, a, false, ds);            \
    }

LSTM_ROW_FNS(base, )
#ifdef GRNN_WIDE
/* the same compiled for AVX-512 and for AVX2 with FMA (the build targets
 * baseline x86-64) */
LSTM_ROW_FNS(wide, GRNN_WIDE)
LSTM_ROW_FNS(avx2, GRNN_AVX2)
#define LSTM_ROW(dir)                                                                                                \
    (lt_cpu_avx512() ? SFX(lstm_row_##dir##_wide) : lt_cpu_avx2() ? SFX(lstm_row_##dir##_avx2) : SFX(lstm_row_##dir##_base))
#else
#define LSTM_ROW(dir) SFX(lstm_row_##dir##_base)
#endif
#undef LSTM_ROW_FNS

/* acc[j] += x[j] in double, j < n: one batch entry's gate gradients into
 * its group's bias-gradient sums */
static inline __attribute__((always_inline)) void SFX(acc_row_body)(int64_t n, const T *x, double *acc)
{
#pragma omp simd
    for (int64_t j = 0; j < n; j++)
        acc[j] += (double)x[j];
}
static void SFX(acc_row_base)(int64_t n, const T *x, double *acc) { SFX(acc_row_body)(n, x, acc); }
#ifdef GRNN_WIDE
GRNN_WIDE static void SFX(acc_row_wide)(int64_t n, const T *x, double *acc) { SFX(acc_row_body)(n, x, acc); }
GRNN_AVX2 static void SFX(acc_row_avx2)(int64_t n, const T *x, double *acc) { SFX(acc_row_body)(n, x, acc); }
#define ACC_ROW (lt_cpu_avx512() ? SFX(acc_row_wide) : lt_cpu_avx2() ? SFX(acc_row_avx2) : SFX(acc_row_base))
#else
#define ACC_ROW SFX(acc_row_base)
#endif

static void SFX(lstm_fwd)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H, G = w->G;
    bool couple = w->g->couple;
    const rnn_act *f = &r->act[w->d][0], *g = &r->act[w->d][1], *ha = &r->act[w->d][2];
    T clip = (T)r->clip;
    const T *pi = w->g->P ? (const T *)w->g->P + w->d * 3 * H : NULL, *po = pi ? pi + H : NULL,
            *pf = pi ? pi + 2 * H : NULL;
#ifdef GRNN_WIDE
    if (w->rpx) {
        /* every entry runs all S steps: the slice's x_t rows are one strided matrix */
        int64_t t0 = lt_rnn_time(r, w->d, st, b0), I = r->I;
        lt_rgemm_run2(b1 - b0, G, I, (const T *)w->g->X + lt_rnn_xrow(r, t0, b0) * I, r->layout ? r->S * I : I, H,
                      w->h + b0 * H, H, w->rpx, 0.0f, w->hp + b0 * G, G);
    } else
#endif
        SFX(rprod)(w, true, b1 - b0, G, H, w->h + b0 * H, H, w->hp + b0 * G, G);
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        if (t < 0)
            continue;
        int64_t row = lt_rnn_xrow(r, t, b);
        T *a = w->buf + row * G, *hb = w->h + b * H, *cb = w->c + b * H;
        T *gi = a, *go = a + H, *gf = a + 2 * H, *gc = a + 3 * H;
        if (w->fast) {
            LSTM_ROW(fwd)(H, pi != NULL, couple, w->hp + b * G, w->rpx ? w->xb : a, a, hb, cb, pi, po, pf,
                          w->hx + row * H, w->ax + row * H, w->cx + row * H, w->hc + row * H);
            if (r->Y)
                memcpy((T *)r->Y + lt_rnn_yoff(r, t, w->d, b), hb, sizeof(T) * (size_t)H);
            continue;
        }
        T *iv = w->wk + b * WK * H, *fv = iv + H, *cv = iv + 2 * H, *ov = iv + 3 * H, *hv = iv + 4 * H;
        const T *hp = w->hp + b * G;
        memcpy(w->hx + row * H, hb, sizeof(T) * (size_t)H);
        memcpy(w->ax + row * H, cb, sizeof(T) * (size_t)H);
#pragma omp simd
        for (int64_t j = 0; j < G; j++)
            a[j] = hp[j] + a[j];
        if (pi)
#pragma omp simd
            for (int64_t j = 0; j < H; j++) {
                gi[j] += pi[j] * cb[j];
                gf[j] += pf[j] * cb[j];
            }
        memcpy(iv, gi, sizeof(T) * (size_t)H);
        SFX(act)(f, r->clip_on, clip, iv, H);
        if (couple) {
#pragma omp simd
            for (int64_t j = 0; j < H; j++)
                fv[j] = 1 - iv[j];
        } else {
            memcpy(fv, gf, sizeof(T) * (size_t)H);
            SFX(act)(f, r->clip_on, clip, fv, H);
        }
        memcpy(cv, gc, sizeof(T) * (size_t)H);
        SFX(act)(g, r->clip_on, clip, cv, H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++)
            cb[j] = fv[j] * cb[j] + iv[j] * cv[j];
        if (po)
#pragma omp simd
            for (int64_t j = 0; j < H; j++)
                go[j] += po[j] * cb[j];
        memcpy(ov, go, sizeof(T) * (size_t)H);
        SFX(act)(f, r->clip_on, clip, ov, H);
        memcpy(hv, cb, sizeof(T) * (size_t)H);
        SFX(act)(ha, false, 0, hv, H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++)
            hb[j] = ov[j] * hv[j];
        memcpy(w->cx + row * H, cb, sizeof(T) * (size_t)H);
        if (r->Y)
            memcpy((T *)r->Y + lt_rnn_yoff(r, t, w->d, b), hb, sizeof(T) * (size_t)H);
    }
}

static void SFX(lstm_bwd)(SFX(ws) *w, int64_t st, int64_t b0, int64_t b1)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H, G = w->G;
    bool couple = w->g->couple;
    const rnn_act *f = &r->act[w->d][0], *g = &r->act[w->d][1], *ha = &r->act[w->d][2];
    T clip = (T)r->clip;
    const T *pi = w->g->P ? (const T *)w->g->P + w->d * 3 * H : NULL, *po = pi ? pi + H : NULL,
            *pf = pi ? pi + 2 * H : NULL;
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = lt_rnn_time(r, w->d, st, b);
        T *ds = w->ds + b * G;
        if (t < 0) {
            memset(ds, 0, sizeof(T) * (size_t)G);
            continue;
        }
        int64_t row = lt_rnn_xrow(r, t, b);
        T *a = w->buf + row * G, *dh = w->dh + b * H, *dc = w->dc + b * H;
        const T *cprev = w->ax + row * H, *cnew = w->cx + row * H;
        T *iv = w->wk + b * WK * H, *id = iv + H, *ov = iv + 2 * H, *od = iv + 3 * H, *fv = iv + 4 * H,
          *fd = iv + 5 * H, *cv = iv + 6 * H, *cd = iv + 7 * H, *hv = iv + 8 * H, *hd = iv + 9 * H;
        const T *pa = w->pre + row * G;
        if (w->fast) {
            /* the values the forward kept (lstm_row_bwd_body); dh of an
             * active entry is replaced after the step (carry), so dY
             * joins it inside the row */
            const T *dy = w->g->dY ? (const T *)w->g->dY + lt_rnn_yoff(r, t, w->d, b) : NULL;
            LSTM_ROW(bwd)(H, couple ? 0 : 1, pa, w->hc + row * H, pi ? pi : w->zero, po ? po : w->zero,
                          pf ? pf : w->zero, cprev, dh, dy, dc, a, w->full ? a : ds);
            /* the bias gradient while the row is in cache: each group's
             * sums run over its entries in the same order (steps from
             * the last, entries in order) whichever thread takes them */
            if (w->dbacc)
                ACC_ROW(G, a, w->dbacc + b / DB_GROUP * G);
            continue;
        }
        SFX(add_dy)(w, t, b, dh);
        SFX(act_d)(f, r->clip_on, clip, pa, iv, id, H);
        SFX(act_d)(f, r->clip_on, clip, pa + H, ov, od, H);
        if (couple) {
#pragma omp simd
            for (int64_t j = 0; j < H; j++) {
                fv[j] = 1 - iv[j];
                fd[j] = 0;
            }
        } else {
            SFX(act_d)(f, r->clip_on, clip, pa + 2 * H, fv, fd, H);
        }
        SFX(act_d)(g, r->clip_on, clip, pa + 3 * H, cv, cd, H);
        SFX(act_d)(ha, false, 0, cnew, hv, hd, H);
#pragma omp simd
        for (int64_t j = 0; j < H; j++) {
            T dcj = dc[j] + dh[j] * ov[j] * hd[j];
            T dao = dh[j] * hv[j] * od[j];
            if (po)
                dcj += dao * po[j];
            T di = dcj * cv[j], dfv = dcj * cprev[j], dcp = dcj * fv[j];
            T dac = dcj * iv[j] * cd[j];
            if (couple)
                di -= dfv;
            T daf = dfv * fd[j], dai = di * id[j];
            if (pi)
                dcp += dai * pi[j] + daf * pf[j];
            ds[j] = a[j] = dai;
            ds[H + j] = a[H + j] = dao;
            ds[2 * H + j] = a[2 * H + j] = daf;
            ds[3 * H + j] = a[3 * H + j] = dac;
            dc[j] = dcp;
        }
    }
    if (w->full && w->fast) {
        /* every entry active: the slice's gate gradients are one strided
         * block of buf, and each dh is replaced by its product */
        const lt_rnn *rr = w->r;
        int64_t t0 = lt_rnn_time(rr, w->d, st, b0);
        SFX(rprod)(w, false, b1 - b0, H, G, w->buf + lt_rnn_xrow(rr, t0, b0) * G, rr->layout ? rr->S * G : G,
                   w->dh + b0 * H, H);
        return;
    }
    SFX(rprod)(w, false, b1 - b0, H, G, w->ds + b0 * G, G, w->tmp + b0 * H, H);
    SFX(carry)(w, st, b0, b1);
}

/* ---- driver ---- */

/* Every step of direction w->d, forward or backward, for entries b0 .. b1 - 1 */
static void SFX(steps_slice)(SFX(ws) *w, bool backward, int64_t b0, int64_t b1)
{
    int gates = w->r->gates;
    int64_t n = w->r->maxlen;
    if (backward) {
        for (int64_t st = n - 1; st >= 0; st--)
            gates == 1   ? SFX(rnn_bwd)(w, st, b0, b1)
            : gates == 3 ? SFX(gru_bwd)(w, st, b0, b1)
                         : SFX(lstm_bwd)(w, st, b0, b1);
    } else {
        for (int64_t st = 0; st < n; st++)
            gates == 1   ? SFX(rnn_fwd)(w, st, b0, b1)
            : gates == 3 ? SFX(gru_fwd)(w, st, b0, b1)
                         : SFX(lstm_fwd)(w, st, b0, b1);
    }
}

/* Every step of direction w->d, forward or backward. Batch entries never
 * interact, so a slice of the batch goes through all the steps (its own
 * small GEMMs included) with no synchronization per step. The batch is cut
 * into slices of STEP_SLICE entries (half that for a batch under four
 * slices, so two threads still share it), by the batch size alone: one
 * thread runs them in turn, several take them as they finish the last (a
 * thread that shares its core with another process takes fewer). Each
 * slice's products have the same shapes whoever runs it, so results depend
 * neither on the timing nor on the thread count (a BLAS may round a
 * product of 131 rows and one of 32 differently). */
static void SFX(steps)(SFX(ws) *w, bool backward)
{
    int64_t B = w->B, n = w->r->maxlen;
    int64_t sl_len = B >= 4 * STEP_SLICE ? STEP_SLICE : STEP_SLICE / 2, nsl = (B + sl_len - 1) / sl_len;
    bool par = (double)B * (double)w->G * (double)w->H * (double)n >= STEP_PAR_WORK && nsl > 1 &&
               omp_get_max_threads() > 1 && !omp_in_parallel();
    int cpu0 = lt_par_cpu();
#pragma omp parallel if (par)
    {
        if (omp_get_thread_num() > 0)
            lt_par_leave_cpu(cpu0);
#pragma omp for schedule(dynamic, 1)
        for (int64_t sl = 0; sl < nsl; sl++)
            SFX(steps_slice)(w, backward, sl * sl_len, sl * sl_len + sl_len < B ? sl * sl_len + sl_len : B);
    }
}

/* out[j] = sum over rows of x[row, j] * (y ? y[row, j] : 1), x with row stride ldx */
static inline __attribute__((always_inline)) void SFX(colsum_body)(int64_t rows, int64_t n, const T *x, int64_t ldx,
                                                                    const T *y, int64_t ldy, double *acc, T *out)
{
    memset(acc, 0, sizeof *acc * (size_t)n);
    for (int64_t i = 0; i < rows; i++) {
        const T *xr = x + i * ldx, *yr = y ? y + i * ldy : NULL;
        if (yr) {
#pragma omp simd
            for (int64_t j = 0; j < n; j++)
                acc[j] += (double)xr[j] * (double)yr[j];
        } else {
#pragma omp simd
            for (int64_t j = 0; j < n; j++)
                acc[j] += (double)xr[j];
        }
    }
    for (int64_t j = 0; j < n; j++)
        out[j] = (T)acc[j];
}

/* buf[i, :] += bias for rows r0 .. r1 - 1 */
static inline __attribute__((always_inline)) void SFX(add_bias_body)(int64_t r0, int64_t r1, int64_t G, T *buf,
                                                                      const T *bias)
{
    for (int64_t i = r0; i < r1; i++)
#pragma omp simd
        for (int64_t j = 0; j < G; j++)
            buf[i * G + j] += bias[j];
}

#define SUM_FNS(NAME, ATTR)                                                                                        \
    ATTR static void SFX(colsum_##NAME)(int64_t rows, int64_t n, const T *x, int64_t ldx, const T *y, int64_t ldy, \
                                        double *acc, T *out)                                                       \
    {                                                                                                              \
        SFX(colsum_body)(rows, n, x, ldx, y, ldy, acc, out);                                                       \
    }                                                                                                              \
    ATTR static void SFX(add_bias_##NAME)(int64_t r0, int64_t r1, int64_t G, T *buf, const T *bias)                \
    {                                                                                                              \
        SFX(add_bias_body)(r0, r1, G, buf, bias);                                                                  \
    }
SUM_FNS(base, )
#ifdef GRNN_WIDE
SUM_FNS(wide, GRNN_WIDE)
SUM_FNS(avx2, GRNN_AVX2)
#define WIDE_OR_BASE(fn) (lt_cpu_avx512() ? SFX(fn##_wide) : lt_cpu_avx2() ? SFX(fn##_avx2) : SFX(fn##_base))
#else
#define WIDE_OR_BASE(fn) SFX(fn##_base)
#endif
#undef SUM_FNS

/* Split by columns over the threads when large: each column's sum runs in
 * the same order whatever the split. */
static void SFX(colsum)(int64_t rows, int64_t n, const T *x, int64_t ldx, const T *y, int64_t ldy, double *acc,
                        T *out)
{
    bool par = (double)rows * (double)n >= COLSUM_PAR && n >= 32 && !omp_in_parallel();
#pragma omp parallel if (par)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t j0 = n * id / nt / 16 * 16, j1 = id == nt - 1 ? n : n * (id + 1) / nt / 16 * 16;
        if (j1 > j0)
            WIDE_OR_BASE(colsum)(rows, j1 - j0, x + j0, ldx, y ? y + j0 : NULL, ldy, acc + j0, out + j0);
    }
}

static T *SFX(alloc)(lt_kctx *k, int64_t n, bool zero)
{
    size_t bytes = sizeof(T) * (size_t)(n > 0 ? n : 1);
    T *p = lt_k_scratch(k, bytes);
    if (p && zero)
        memset(p, 0, bytes);
    return p;
}

/* buf = X W_d^T plus the biases the projection carries (a GRU with
 * linear_before_reset keeps Rb_h inside the reset product) */
static void SFX(gproject)(const lt_grnn *g, int d, T *buf, T *bias)
{
    const lt_rnn *r = &g->r;
    int64_t H = r->H, G = r->gates * H, I = r->I, rows = r->S * r->B;
    const T *Wd = (const T *)g->W + d * G * I, *Bias = g->Bias;
    lt_linalg_gemm(CT, false, true, rows, G, I, 1.0, g->X, I, Wd, I, 0.0, buf, G);
    if (!Bias)
        return;
    const bool mask[4] = {true, true, !g->lbr, true};
    const T *wb = Bias + d * 2 * G, *rb = wb + G;
    for (int64_t j = 0; j < G; j++)
        bias[j] = wb[j] + (mask[j / H] ? rb[j] : 0);
#pragma omp parallel if (rows * G > PAR_MIN)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        WIDE_OR_BASE(add_bias)(rows * id / nt, rows * (id + 1) / nt, G, buf, bias);
    }
}

/* Direction d's part of a workspace: gate inputs (the fast LSTM: gates)
 * [rows, G], then [rows, H] each: h read, (GRU, LSTM) r*h or h R_h^T + Rb_h
 * / the cell read, (LSTM) the cell written, (fast LSTM) its h(C'). Absent
 * parts alias hx, as in the re-run. */
static void SFX(ws_parts)(const lt_rnn *r, T *ws, int d, SFX(ws) *w)
{
    int64_t rows = r->S * r->B, H = r->H, G = r->gates * H;
    T *p = ws + d * lt_grnn_ws_per_dir(r);
    w->pre = p;
    w->hx = p + rows * G;
    w->ax = r->gates > 1 ? w->hx + rows * H : w->hx;
    w->cx = r->gates == 4 ? w->ax + rows * H : w->hx;
    w->fast = lt_grnn_lstm_fast(r);
    w->hc = w->fast ? w->cx + rows * H : NULL;
}

/* h and c (and dh and dc from the cotangents) at the start of direction d */
static void SFX(init_states)(SFX(ws) *w, int d)
{
    const lt_grnn *g = w->g;
    const lt_rnn *r = w->r;
    int64_t H = w->H;
    const T *h0 = g->h0, *c0 = g->c0, *dyh = g->dYh, *dyc = g->dYc;
    for (int64_t b = 0; b < w->B; b++) {
        int64_t o = lt_rnn_hoff(r, d, b);
        for (int64_t j = 0; j < H; j++) {
            w->h[b * H + j] = h0 ? h0[o + j] : 0;
            w->c[b * H + j] = c0 ? c0[o + j] : 0;
            if (w->dh)
                w->dh[b * H + j] = dyh ? dyh[o + j] : 0;
            if (w->dc)
                w->dc[b * H + j] = dyc ? dyc[o + j] : 0;
        }
    }
}

/* Y_h and Y_c of direction d from the running states */
static void SFX(store_final)(const SFX(ws) *w, int d)
{
    const lt_rnn *r = w->r;
    int64_t H = w->H;
    for (int64_t b = 0; b < w->B; b++) {
        int64_t o = lt_rnn_hoff(r, d, b);
        if (r->Yh)
            memcpy((T *)r->Yh + o, w->h + b * H, sizeof(T) * (size_t)H);
        if (r->Yc)
            memcpy((T *)r->Yc + o, w->c + b * H, sizeof(T) * (size_t)H);
    }
}

lt_status SFX(lt_grnn_forward)(lt_kctx *k, const lt_grnn *g, void *wsv)
{
    const lt_rnn *r = &g->r;
    int gates = r->gates;
    int64_t S = r->S, B = r->B, H = r->H, G = gates * H;
    SFX(ws) w = {.g = g, .r = r, .B = B, .H = H, .G = G};
    w.h = SFX(alloc)(k, B * H, false);
    w.c = SFX(alloc)(k, B * H, false);
    w.hp = SFX(alloc)(k, B * G, true);
    w.tmp = SFX(alloc)(k, B * H, true);
    w.wk = SFX(alloc)(k, B * WK * H, false);
    w.zero = SFX(alloc)(k, H, true);
    T *bias = SFX(alloc)(k, G, false);
    if (!w.h || !w.c || !w.hp || !w.tmp || !w.wk || !w.zero || !bias)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    T *pf = SFX(pack_buf)(k, r, G, H);
#ifdef GRNN_WIDE
    T *px = NULL;
    /* the fast LSTM with every entry running all steps: the input
     * projection joins each step's product, so the gate inputs are not
     * written out, biased and read back */
    bool full = true;
    for (int64_t b = 0; b < B; b++)
        full = full && r->len[b] == S;
    if (pf && full && lt_grnn_lstm_fast(r) && lt_linalg_blas_ok(B, G, r->I + H)) {
        px = SFX(alloc)(k, lt_rgemm_packed_len(G, r->I + H), false);
        if (!px)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
#endif
    for (int d = 0; d < r->D; d++) {
        w.d = d;
        w.Rd = (const T *)g->R + d * G * H;
        SFX(ws_parts)(r, wsv, d, &w);
        w.buf = (T *)w.pre;
#ifdef GRNN_WIDE
        if (px) {
            lt_rgemm_pack2(true, G, r->I, (const T *)g->W + d * G * r->I, r->I, H, w.Rd, H, px);
            w.rpx = px;
            const T *wb = g->Bias ? (const T *)g->Bias + d * 2 * G : NULL;
            for (int64_t j = 0; j < G; j++)
                bias[j] = wb ? wb[j] + wb[G + j] : 0;
            w.xb = bias;
            SFX(init_states)(&w, d);
            SFX(steps)(&w, false);
            SFX(store_final)(&w, d);
            continue;
        }
#endif
        SFX(pack_r)(&w, pf, NULL);
        /* rows no step visits must read as zero in the gradient's per-row products */
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = r->len[b]; t < S; t++) {
                int64_t row = lt_rnn_xrow(r, t, b);
                memset(w.hx + row * H, 0, sizeof(T) * (size_t)H);
                memset(w.ax + row * H, 0, sizeof(T) * (size_t)H);
                memset(w.cx + row * H, 0, sizeof(T) * (size_t)H);
            }
        SFX(gproject)(g, d, w.buf, bias);
        SFX(init_states)(&w, d);
        SFX(steps)(&w, false);
        SFX(store_final)(&w, d);
    }
    return LT_OK;
}

/* columns c0 .. c1 - 1 of the float dW [G, I] with few input columns: X^T
 * buf [I, G] (the GEMM runs the wide orientation about twice as fast as
 * [G, I]) into dwt, then those columns transposed into dW */
static void SFX(dw_thin)(const SFX(ws) *w, int d, T *dwt, int64_t c0, int64_t c1)
{
    const lt_rnn *r = w->r;
    int64_t G = w->G, I = r->I, rows = r->S * r->B;
    T *dWd = (T *)w->g->dW + d * G * I;
    lt_linalg_gemm(CT, true, false, I, c1 - c0, rows, 1.0, w->g->X, I, w->buf + c0, G, 0.0, dwt + c0, G);
    for (int64_t j = c0; j < c1; j++)
        for (int64_t i = 0; i < I; i++)
            dWd[j * I + i] = dwt[i * G + j];
}

/* Rows [r0, r1) of dR and dW together, buf^T [hx | X] in one product into
 * dcat [G, H + I] (op(A) = buf^T packed once for both, no packing of buf
 * for a thin dW): by the AVX-512 kernel (or the AVX2 one without it)
 * reading hx and X where they are, or through BLAS from w->hxx; then
 * copied out. false when neither is
 * there. */
static bool SFX(rows_cat)(const SFX(ws) *w, int d, T *dcat, int64_t r0, int64_t r1)
{
    const lt_grnn *g = w->g;
    int64_t G = w->G, H = w->H, I = w->r->I, rows = w->r->S * w->r->B, n = H + I;
    T *c = dcat + r0 * n;
    if (w->hxx) {
        lt_linalg_gemm(CT, true, false, r1 - r0, n, rows, 1.0, w->buf + r0, G, w->hxx, n, 0.0, c, n);
    } else {
#ifdef GRNN_WIDE
        if (!lt_sgemm_avx512_cat(true, r1 - r0, H, I, rows, 1.0f, w->buf + r0, G, w->hx, H, (const T *)g->X, I,
                                 0.0f, c, n) &&
            (!lt_sgemm_avx2_here() ||
             !lt_sgemm_avx2_cat(true, r1 - r0, H, I, rows, 1.0f, w->buf + r0, G, w->hx, H, (const T *)g->X, I, 0.0f,
                                c, n)))
            return false;
#else
        return false;
#endif
    }
    T *dR = (T *)g->dR + d * G * H, *dW = (T *)g->dW + d * G * I;
    for (int64_t j = r0; j < r1; j++) {
        memcpy(dR + j * H, c + (j - r0) * n, sizeof(T) * (size_t)H);
        memcpy(dW + j * I, c + (j - r0) * n + H, sizeof(T) * (size_t)I);
    }
    return true;
}

/* The RNN's and LSTM's sums over all rows of direction d once the steps
 * are done: dW = buf^T X, dR = buf^T hx, dB = column sums of buf. They go
 * as pieces (row blocks of dR, one a thread; column blocks of dW and dB;
 * fixed by the sizes and the thread count) that the threads take as they
 * finish the last, in one parallel region rather than one per product, so
 * a thread that another process holds up costs one wait, not three; every
 * piece is one GEMM or column sum, so results do not depend on which
 * thread ran it. */
static void SFX(sums)(SFX(ws) *w, int d, T *dwt, T *dcat, double *acc)
{
    const lt_grnn *g = w->g;
    const lt_rnn *r = w->r;
    int64_t G = w->G, H = w->H, I = r->I, rows = r->S * r->B;
    enum { NW_ = 4, NB_ = 4 }; /* pieces of dW and dB */
    bool worth = (double)rows * (double)G * (double)(H + I) >= SUMS_PAR_WORK;
    /* dR in one piece a planned thread (par.h), as the GEMM would split
     * it: each piece packs all of hx. The pieces follow from the sizes,
     * never from the threads that run them: their products, so the
     * bits, stay the same. */
    int nr = worth ? LT_PAR_PLAN : 1, nt = lt_par_threads(nr + NW_ + NB_, worth);
    int64_t rstep = (G + nr - 1) / nr, cstep = ((G + NW_ - 1) / NW_ + 15) / 16 * 16;
    T *dwb = g->dB ? (T *)g->dB + d * 2 * G : NULL;
    int cpu0 = nt > 1 ? lt_par_cpu() : -1;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        if (omp_get_thread_num() > 0)
            lt_par_leave_cpu(cpu0);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < nr + NW_ + NB_; task++) {
            if (task < nr) { /* dR rows [r0, r1) (with dcat: and dW's) */
                int64_t r0 = task * rstep, r1 = r0 + rstep < G ? r0 + rstep : G;
                if (dcat && r1 > r0 && SFX(rows_cat)(w, d, dcat, r0, r1))
                    continue;
                if (g->dR && r1 > r0)
                    lt_linalg_gemm(CT, true, false, r1 - r0, H, rows, 1.0, w->buf + r0, G, w->hx, H, 0.0,
                                   (T *)g->dR + d * G * H + r0 * H, H);
                if (dcat && g->dW && r1 > r0)
                    lt_linalg_gemm(CT, true, false, r1 - r0, I, rows, 1.0, w->buf + r0, G, g->X, I, 0.0,
                                   (T *)g->dW + d * G * I + r0 * I, I);
            } else if (task < nr + NW_) { /* dW columns (thin) or rows [c0, c1) of G */
                int64_t c0 = (task - nr) * cstep, c1 = c0 + cstep < G ? c0 + cstep : G;
                if (!g->dW || c1 <= c0 || dcat)
                    continue;
                if (dwt)
                    SFX(dw_thin)(w, d, dwt, c0, c1);
                else
                    lt_linalg_gemm(CT, true, false, c1 - c0, I, rows, 1.0, w->buf + c0, G, g->X, I, 0.0,
                                   (T *)g->dW + d * G * I + c0 * I, I);
            } else { /* dB columns [c0, c1) */
                int64_t c0 = (task - nr - NW_) * cstep, c1 = c0 + cstep < G ? c0 + cstep : G;
                if (dwb && c1 > c0 && !w->dbacc)
                    WIDE_OR_BASE(colsum)(rows, c1 - c0, w->buf + c0, G, NULL, 0, acc + c0, dwb + c0);
            }
        }
    }
    if (dwb && w->dbacc) {
        /* the groups' sums added in group order */
        int64_t ng = (w->B + DB_GROUP - 1) / DB_GROUP;
        for (int64_t j = 0; j < G; j++) {
            double v = 0;
            for (int64_t q = 0; q < ng; q++)
                v += w->dbacc[q * G + j];
            dwb[j] = (T)v;
        }
    }
    if (dwb)
        memcpy(dwb + G, dwb, sizeof(T) * (size_t)G);
}

lt_status SFX(lt_grnn_run)(lt_kctx *k, const lt_grnn *g)
{
    const lt_rnn *r = &g->r;
    int gates = r->gates;
    int64_t S = r->S, B = r->B, I = r->I, H = r->H, G = gates * H, rows = S * B;
    SFX(ws) w = {.g = g, .r = r, .B = B, .H = H, .G = G, .full = true};
    for (int64_t b = 0; b < B; b++)
        w.full = w.full && r->len[b] == S;
    w.buf = SFX(alloc)(k, rows * G, false);
    if (!g->ws) {
        /* rows no step visits must read as zero in the per-row products */
        w.hx = SFX(alloc)(k, rows * H, true);
        w.ax = gates > 1 ? SFX(alloc)(k, rows * H, true) : w.hx;
        w.cx = gates == 4 ? SFX(alloc)(k, rows * H, true) : w.hx;
        w.pre = w.buf;
        if (!w.hx || !w.ax || !w.cx)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    w.gh = gates == 3 ? SFX(alloc)(k, rows * H, true) : w.hx;
    w.h = SFX(alloc)(k, B * H, false);
    w.c = SFX(alloc)(k, B * H, false);
    w.hp = SFX(alloc)(k, B * G, true);
    w.dh = SFX(alloc)(k, B * H, false);
    w.dc = SFX(alloc)(k, B * H, false);
    w.ds = SFX(alloc)(k, B * G, true);
    w.tmp = SFX(alloc)(k, B * H, true);
    w.wk = SFX(alloc)(k, B * WK * H, false);
    w.zero = SFX(alloc)(k, H, true);
    T *bias = SFX(alloc)(k, G, false);
    double *acc = lt_k_scratch(k, sizeof *acc * (size_t)(G > 0 ? G : 1));
    T *dwt = NULL, *dcat = NULL;
#ifdef GRNN_WIDE
    /* RNN, LSTM in float with AVX-512 (or AVX2): a thin dW made with dR,
     * one product */
    if (gates != 3 && g->dW && g->dR && I <= DW_THIN && H + I >= 32 &&
        (lt_cpu_avx512_gemm() || lt_sgemm_avx2_here()) && !(dcat = SFX(alloc)(k, G * (H + I), false)))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
#endif
    /* otherwise the RNN's and LSTM's float thin dW joins dR through BLAS:
     * one product over [hx | X] side by side packs buf once, not twice */
    T *hxx = NULL;
    if (CT == LT_F32 && !dcat && gates != 3 && g->dW && g->dR && I <= DW_THIN &&
        (!(dcat = SFX(alloc)(k, G * (H + I), false)) || !(hxx = SFX(alloc)(k, rows * (H + I), false))))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    if (CT == LT_F32 && !dcat && g->dW && I <= DW_THIN && I < G && !(dwt = SFX(alloc)(k, I * G, false)))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    if (!bias || !w.buf || (gates == 3 && !w.gh) || !w.h || !w.c || !w.hp || !w.dh || !w.dc || !w.ds || !w.tmp ||
        !w.wk || !w.zero || !acc)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    T *pf = g->ws ? NULL : SFX(pack_buf)(k, r, G, H), *pb = SFX(pack_buf)(k, r, H, G);
    /* the fast LSTM's bias gradient summed during its backward steps */
    int64_t ngroups = (B + DB_GROUP - 1) / DB_GROUP;
    double *dbacc = NULL;
    if (gates == 4 && g->ws && g->dB && lt_grnn_lstm_fast(r) && w.full &&
        !(dbacc = lt_k_scratch(k, sizeof(double) * (size_t)(ngroups * G + 1))))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    const T *X = g->X, *W = g->W;
    for (int d = 0; d < r->D; d++) {
        w.d = d;
        w.Rd = (const T *)g->R + d * G * H;
        SFX(pack_r)(&w, pf, pb);
        const T *Wd = W + d * G * I;
        SFX(init_states)(&w, d);
        if (g->ws) {
            /* the forward recorded gate inputs and states; the backward only reads them */
            SFX(ws_parts)(r, (T *)g->ws, d, &w);
            if (dbacc && w.fast && w.full) {
                memset(dbacc, 0, sizeof(double) * (size_t)(ngroups * G));
                w.dbacc = dbacc;
            }
        } else {
            SFX(gproject)(g, d, w.buf, bias);
            SFX(steps)(&w, false);
        }
        SFX(steps)(&w, true);
        for (int64_t b = 0; b < B; b++) {
            int64_t o = lt_rnn_hoff(r, d, b);
            if (g->dh0)
                memcpy((T *)g->dh0 + o, w.dh + b * H, sizeof(T) * (size_t)H);
            if (g->dc0)
                memcpy((T *)g->dc0 + o, w.dc + b * H, sizeof(T) * (size_t)H);
            /* rows past the length still hold their projection (or nothing) */
            for (int64_t t = r->len[b]; t < S; t++)
                memset(w.buf + lt_rnn_xrow(r, t, b) * G, 0, sizeof(T) * (size_t)G);
        }
        if (g->dX)
            lt_linalg_gemm(CT, false, false, rows, I, G, 1.0, w.buf, G, Wd, I, d ? 1.0 : 0.0, g->dX, I);
        if (gates != 3) {
            /* RNN, LSTM: dW, dR and dB in one parallel region */
            if (hxx) {
#pragma omp parallel for if (rows * (H + I) > 8 * PAR_MIN)
                for (int64_t q = 0; q < rows; q++) {
                    memcpy(hxx + q * (H + I), w.hx + q * H, sizeof(T) * (size_t)H);
                    memcpy(hxx + q * (H + I) + H, X + q * I, sizeof(T) * (size_t)I);
                }
                w.hxx = hxx;
            }
            SFX(sums)(&w, d, dwt, dcat, acc);
        } else if (g->dW && dwt) {
            SFX(dw_thin)(&w, d, dwt, 0, G);
        } else if (g->dW) {
            lt_linalg_gemm(CT, true, false, G, I, rows, 1.0, w.buf, G, X, I, 0.0, (T *)g->dW + d * G * I, I);
        }
        if (g->dR && gates == 3) {
            T *dR = (T *)g->dR + d * G * H;
            lt_linalg_gemm(CT, true, false, 2 * H, H, rows, 1.0, w.buf, G, w.hx, H, 0.0, dR, H);
            lt_linalg_gemm(CT, true, false, H, H, rows, 1.0, w.gh, H, g->lbr ? w.hx : w.ax, H, 0.0, dR + 2 * H * H,
                           H);
        }
        if (g->dB && gates == 3) {
            T *dwb = (T *)g->dB + d * 2 * G, *drb = dwb + G;
            SFX(colsum)(rows, G, w.buf, G, NULL, 0, acc, dwb);
            memcpy(drb, dwb, sizeof(T) * (size_t)(2 * H));
            SFX(colsum)(rows, H, w.gh, H, NULL, 0, acc, drb + 2 * H);
        }
        if (g->dP) {
            T *dp = (T *)g->dP + d * 3 * H;
            SFX(colsum)(rows, H, w.buf, G, w.ax, H, acc, dp);                 /* i: C read */
            SFX(colsum)(rows, H, w.buf + H, G, w.cx, H, acc, dp + H);         /* o: C written */
            SFX(colsum)(rows, H, w.buf + 2 * H, G, w.ax, H, acc, dp + 2 * H); /* f: C read */
        }
    }
    return LT_OK;
}

#undef WK
#undef WIDE_OR_BASE
#undef LSTM_ROW
#undef PAR_MIN
#undef COLSUM_PAR
#undef STEP_PAR_WORK
#undef STEP_SLICE
#undef DW_THIN
#undef SUMS_PAR_WORK
#undef DB_GROUP
#undef ACC_ROW
