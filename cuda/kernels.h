/* Launchers of lantern's own CUDA kernels (kernels.cu), callable from C.
 * Only CUDA's runtime header and the C standard's: kernels.cu includes it
 * without the rest of lantern. */
#ifndef LT_CUDA_KERNELS_H
#define LT_CUDA_KERNELS_H

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- our kernels (kernels.cu); every launcher returns cudaGetLastError ---- */
#define LT_CU_MAX_RANK 8

typedef struct lt_cu_shape {
    int rank;
    int64_t n;                    /* output elements */
    int64_t dims[LT_CU_MAX_RANK]; /* output dims */
    int64_t st[3][LT_CU_MAX_RANK]; /* element strides of up to three inputs (0 where broadcast) */
} lt_cu_shape;

enum {
    LT_CU_ADD, LT_CU_SUB, LT_CU_MUL, LT_CU_DIV, LT_CU_POW, LT_CU_MAX, LT_CU_MIN, LT_CU_RELU_GRAD, LT_CU_COPY,
    LT_CU_GREATER, LT_CU_LESS, LT_CU_EQUAL, LT_CU_GREATER_EQ, LT_CU_LESS_EQ /* bool outputs */
};
enum {
    LT_CU_RELU, LT_CU_SIGMOID, LT_CU_TANH, LT_CU_EXP, LT_CU_LOG, LT_CU_NEG, LT_CU_SQRT, LT_CU_ERF, LT_CU_ABS,
    LT_CU_RECIPROCAL, LT_CU_LEAKY_RELU, LT_CU_ELU, LT_CU_SOFTPLUS, LT_CU_GELU, LT_CU_GELU_TANH, LT_CU_IDENT,
    LT_CU_SIN, LT_CU_COS, LT_CU_FLOOR, LT_CU_CEIL
};

/* One LSTM or RNN time step (rnn.cu): direction d of D, time t of S,
 * batch B, hidden H, layout 0 ([S, B, ..]) or 1 ([B, S, ..]). pre holds
 * the rows' gate inputs ([S*B, G], row of (t, b) as X's; G = 4H for the
 * LSTM, which the forward step activates in place, H for the RNN, which
 * keeps them); hp the step's recurrent products [B, G]; h, c (and dh, dc
 * backward) the running states [B, H]. hx (and, LSTM, cr, cw, hc): the
 * workspace's [S*B, H] records (NULL forward: none kept); Y the output
 * (NULL: not wanted). Backward: g gets the gate-input gradients [S*B, G],
 * dY (NULL: none) joins dh. act: the RNN's activation (LT_CU_RNN_*). */
enum { LT_CU_RNN_TANH, LT_CU_RNN_RELU, LT_CU_RNN_SIGMOID };
typedef struct lt_cu_rnn_step {
    int64_t S, B, D, H, t;
    int d, layout, act;
    /* the GRU (G = 3H, gates z, r, h): lbr (linear_before_reset), rbh its
     * Rb_h (NULL: none), ax the workspace's record (r*h, or h R_h^T + Rb_h
     * when lbr), tmp [B, H] r*h forward and the gradient reaching h
     * backward, hph [B, H] (r*h) R_h^T, ds [B, G] the step's gate-input
     * gradients as the recurrent products read them, gh [S*B, H] the
     * gradient of the h gate's recurrent term, drh [B, H] that of r*h */
    int lbr;
    const void *rbh;
    void *ax, *tmp, *hph, *ds, *gh, *drh;
    void *pre;
    const void *hp;
    void *h, *c, *hx, *cr, *cw, *hc, *Y;
    const void *dY;
    void *dh, *dc, *g;
} lt_cu_rnn_step;

/* FusedElementwise (fused.cu): the codes of ir/fuse_elementwise.h, inputs
 * full (as many elements as the output), one element, or a row along the
 * last axis; per step its code and registers (inputs first, then the
 * steps; b -1 for unary codes) and where its value goes (NULL: nowhere). */
#define LT_CU_FE_MAX_IN 48
#define LT_CU_FE_MAX_STEPS 24
enum {
    LT_CU_FE_ADD, LT_CU_FE_SUB, LT_CU_FE_MUL, LT_CU_FE_DIV, LT_CU_FE_NEG, LT_CU_FE_EXP, LT_CU_FE_ERF, LT_CU_FE_TANH,
    LT_CU_FE_SIGMOID, LT_CU_FE_SQRT, LT_CU_FE_RECIPROCAL, LT_CU_FE_SOFTPLUS, LT_CU_FE_CODES
};
enum { LT_CU_FE_FULL, LT_CU_FE_SCALAR, LT_CU_FE_ROW };
typedef struct lt_cu_fused {
    int nin, nsteps;
    int64_t n, last; /* output elements; the last axis' length */
    signed char kind[LT_CU_FE_MAX_IN];
    const float *in[LT_CU_FE_MAX_IN];
    signed char prog[LT_CU_FE_MAX_STEPS][3];
    float *out_of[LT_CU_FE_MAX_STEPS];
} lt_cu_fused;

#ifdef __cplusplus
extern "C" {
#endif
cudaError_t lt_cu_binary(cudaStream_t s, int op, bool f64, const void *a, const void *b, void *y,
                         const lt_cu_shape *sh);
cudaError_t lt_cu_where(cudaStream_t s, bool f64, const void *c, const void *a, const void *b, void *y,
                        const lt_cu_shape *sh);
cudaError_t lt_cu_unary(cudaStream_t s, int op, bool f64, const void *x, void *y, int64_t n, double alpha);
/* y[o] = scale * sum over the reduced index space; sh->dims/st[0] walk the
 * outputs, red->dims/st[0] the reduced positions of one output. */
cudaError_t lt_cu_reduce_sum(cudaStream_t s, bool f64, const void *x, void *y, const lt_cu_shape *sh,
                             const lt_cu_shape *red, double scale);
/* Softmax over c in an (outer, c, inner) layout: mode 0 softmax, 1 log. */
cudaError_t lt_cu_softmax(cudaStream_t s, bool f64, const void *x, void *y, int64_t outer, int64_t c,
                          int64_t inner, int mode);
cudaError_t lt_cu_softmax_grad(cudaStream_t s, bool f64, const void *dy, const void *y, void *dx, int64_t outer,
                               int64_t c, int64_t inner, int mode);
/* Loss of log-probabilities lp (n, c, d) at classes cls (-1: ignored) with
 * coefficients coef: per position (none) -coef*lp, else their sum over div
 * into y[0] (div: the total weight for mean, whose 0 gives 0/0 = NaN as on
 * the CPU; else 1). */
cudaError_t lt_cu_nll(cudaStream_t s, bool f64, const void *lp, const int64_t *cls, const double *coef, void *y,
                      int64_t n, int64_t c, int64_t d, bool none, double div);
/* dx = coef * (softmax(x) - onehot(cls)) in place on p = softmax(x) (sce),
 * or dx = -coef * onehot(cls) (nll: p is only written). */
cudaError_t lt_cu_sce_grad(cudaStream_t s, bool f64, void *p, const int64_t *cls, const double *coef, int64_t n,
                           int64_t c, int64_t d, bool sce);
/* 2-D pooling on (N*C, H, W) planes. */
typedef struct lt_cu_pool {
    int64_t planes, h, w, oh, ow;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int peh, pew; /* end pads */
    bool count_pad; /* AveragePool's count_include_pad */
} lt_cu_pool;
cudaError_t lt_cu_maxpool(cudaStream_t s, bool f64, const void *x, void *y, const lt_cu_pool *p);
cudaError_t lt_cu_avgpool(cudaStream_t s, bool f64, const void *x, void *y, const lt_cu_pool *p);
cudaError_t lt_cu_maxpool_grad(cudaStream_t s, bool f64, const void *dy, const void *x, void *dx,
                               const lt_cu_pool *p);
cudaError_t lt_cu_avgpool_grad(cudaStream_t s, bool f64, const void *dy, void *dx, const lt_cu_pool *p);
/* y[i] = x[src(i)], src from sh: a permutation/slice walk (st[0] strides,
 * base offset off). */
cudaError_t lt_cu_gather_strided(cudaStream_t s, size_t es, const void *x, void *y, const lt_cu_shape *sh,
                                 int64_t off);
/* the inverse: y[off + sh's strided offset of i] = x[i] */
cudaError_t lt_cu_scatter_strided(cudaStream_t s, size_t es, const void *x, void *y, const lt_cu_shape *sh,
                                  int64_t off);
/* y += bias per channel: y is (n, c, inner). */
cudaError_t lt_cu_add_bias(cudaStream_t s, bool f64, void *y, const void *bias, int64_t n, int64_t c,
                           int64_t inner);
/* Gather along an axis: x (outer, ax, inner), idx (m) already in range. */
cudaError_t lt_cu_gather(cudaStream_t s, size_t es, const void *x, const int64_t *idx, void *y, int64_t outer,
                         int64_t ax, int64_t inner, int64_t m);
/* Batch normalization over x (n, c, s): per channel j, mean[j] and the
 * biased variance var[j] (two passes, in double); sdy[j] = sum dy and
 * sdyx[j] = sum dy (x - mu[j]); y = x a[j] + off[j]; and
 * dx = A[j] dy + B[j] (x - mu[j]) + C[j]. The per-channel arrays are
 * doubles on the device. */
cudaError_t lt_cu_chan_stats(cudaStream_t s, bool f64, const void *x, int64_t n, int64_t c, int64_t sp, double *mean,
                             double *var);
cudaError_t lt_cu_chan_sums(cudaStream_t s, bool f64, const void *x, const void *dy, const double *mu, int64_t n,
                            int64_t c, int64_t sp, double *sdy, double *sdyx);
cudaError_t lt_cu_chan_affine(cudaStream_t s, bool f64, const void *x, void *y, int64_t n, int64_t c, int64_t sp,
                              const double *a, const double *off);
cudaError_t lt_cu_bn_dx(cudaStream_t s, bool f64, const void *dy, const void *x, void *dx, int64_t n, int64_t c,
                        int64_t sp, const double *mu, const double *A, const double *B, const double *C);
/* The per-channel coefficients of BatchNormalization on the device, in
 * double with the CPU kernel's operations in its order (no contraction):
 * vectors are given as (pointer, whether float64, else float32). Forward:
 * a = g / sqrt(bv + eps), off = b - bm a, and when training the running
 * statistics m mom + bm (1 - mom) (likewise v, bv vs: vs = cnt / (cnt - 1)
 * for the unbiased variance, else 1), else m and v passed
 * on; rm, rv, om, ov (the outputs: running then saved statistics; NULL
 * where not wanted) are written in their own types. Gradient: with
 * istd = 1 / sqrt(var + eps): ds = sdyx istd, A = g istd, and when
 * training B = -g istd istd istd sdyx / cnt and C = -g istd sdy / cnt
 * (else 0); ds and db (= sdy) written in their own types (NULL: not
 * wanted). lt_cu_vec_f64 widens a vector into doubles. */
typedef struct lt_cu_vec {
    const void *p;
    bool f64;
} lt_cu_vec;
typedef struct lt_cu_out {
    void *p;
    bool f64;
} lt_cu_out;
cudaError_t lt_cu_vec_f64(cudaStream_t s, lt_cu_vec v, double *out, int64_t c);
cudaError_t lt_cu_bn_coeffs(cudaStream_t s, int64_t c, bool training, double eps, double mom, double vs, lt_cu_vec g,
                            lt_cu_vec b,
                            lt_cu_vec m, lt_cu_vec v, const double *bm, const double *bv, double *a, double *off,
                            lt_cu_out rm, lt_cu_out rv, lt_cu_out om, lt_cu_out ov);
cudaError_t lt_cu_bn_grad_coeffs(cudaStream_t s, int64_t c, bool training, double eps, double cnt, lt_cu_vec g,
                                 const double *var, const double *sdy, const double *sdyx, double *A, double *B,
                                 double *C, lt_cu_out ds, lt_cu_out db);
/* GatherGrad: dx (outer, ax, inner) += dy (outer, m, inner) at rows idx
 * (in range; dx zeroed by the caller). */
cudaError_t lt_cu_scatter_add(cudaStream_t s, bool f64, const void *dy, const int64_t *idx, void *dx, int64_t outer,
                              int64_t ax, int64_t inner, int64_t m);
/* Dropout: y = keep ? x sc : 0 (keep one byte per element). */
cudaError_t lt_cu_dropout(cudaStream_t s, bool f64, const void *x, const uint8_t *keep, void *y, int64_t n, double sc);
/* y[0..n) = v. */
cudaError_t lt_cu_fill(cudaStream_t s, bool f64, void *y, int64_t n, double v);
/* y[0..n) = the es bytes at elem (host memory; es 1, 2, 4 or 8), copied as
 * they are, whatever the type. */
cudaError_t lt_cu_fill_elem(cudaStream_t s, size_t es, void *y, int64_t n, const void *elem);

/* ---- indexing and padding (index.cu); offsets and indices checked and
 * normalized on the host ---- */
/* GatherElements: y[i] = x[walk(i) + idx[i] axstride], sh walking the
 * indices' shape with data's strides in st[0] (0 on the axis); the
 * gradient adds dy[i] there into dx (zeroed by the caller). */
cudaError_t lt_cu_gather_elements(cudaStream_t s, size_t es, const void *x, const int64_t *idx, void *y,
                                  const lt_cu_shape *sh, int64_t axstride);
cudaError_t lt_cu_gather_elements_grad(cudaStream_t s, bool f64, const void *dy, const int64_t *idx, void *dx,
                                       const lt_cu_shape *sh, int64_t axstride);
/* GatherND: y[j slice + e] = x[off[j] + e] for j < nt. */
cudaError_t lt_cu_gather_slices(cudaStream_t s, size_t es, const void *x, const int64_t *off, void *y, int64_t nt,
                                int64_t slice);
/* ScatterND onto y (a copy of data already): y[off[j] + e] (red)=
 * u[src[j] slice + e] for j < nt. */
enum { LT_CU_RED_NONE, LT_CU_RED_ADD, LT_CU_RED_MUL, LT_CU_RED_MAX, LT_CU_RED_MIN };
cudaError_t lt_cu_scatter_slices(cudaStream_t s, bool f64, void *y, const int64_t *off, const int64_t *src,
                                 const void *u, int64_t nt, int64_t slice, int red);
/* Pad through per-axis maps (map + off[a]: the input index of each output
 * index along axis a, -1 for the constant); sh walks the output (dims) with
 * the input's strides (st[0]). The gradient adds dy into dx (zeroed by the
 * caller) through the same maps. */
typedef struct lt_cu_pad_maps {
    int64_t off[LT_CU_MAX_RANK];
} lt_cu_pad_maps;
cudaError_t lt_cu_pad(cudaStream_t s, bool f64, const void *x, void *y, const int64_t *map, const lt_cu_shape *sh,
                      const lt_cu_pad_maps *mp, double cval);
cudaError_t lt_cu_pad_grad(cudaStream_t s, bool f64, const void *dy, void *dx, const int64_t *map,
                           const lt_cu_shape *sh, const lt_cu_pad_maps *mp);

/* ---- training (optim.cu) ---- */
/* the optimizers, numbered as lantern.h's lt_optim_kind */
enum { LT_CU_OPT_SGD, LT_CU_OPT_MOMENTUM, LT_CU_OPT_NESTEROV, LT_CU_OPT_ADAGRAD, LT_CU_OPT_ADAM, LT_CU_OPT_ADAMW };
/* One step over n elements of p (device pointers; s1, s2 NULL when the
 * optimizer has no such state), the scalars as backend.h's lt_optim_update
 * has them (wd 0 for AdamW, whose decay is 1 - lr wd; 1 for the others). */
typedef struct lt_cu_optim {
    int kind;
    bool f64;
    int64_t n;
    void *p;
    const void *g;
    void *s1, *s2;
    double lr, scale, wd, mu, b1, b2, eps, adam_step, inv_sqrt_bc2, decay;
    double one_b1, one_b2; /* 1 - b1, 1 - b2 in double */
} lt_cu_optim;
cudaError_t lt_cu_optim_step(cudaStream_t s, const lt_cu_optim *o);
/* out[0] (device) = sum of x[i]^2 in double. */
cudaError_t lt_cu_sum_squares(cudaStream_t s, bool f64, const void *x, int64_t n, double *out);
/* dst[i] += src[i]. */
cudaError_t lt_cu_add_into(cudaStream_t s, bool f64, void *dst, const void *src, int64_t n);

cudaError_t lt_cu_fused_run(cudaStream_t s, const lt_cu_fused *f);

/* ---- the LSTM (rnn.cu) ---- */
/* buf [rows, G] += bias[0..G) (W's) + bias[G..2G) (R's, its first rb_cols only) per row */
cudaError_t lt_cu_rnn_bias(cudaStream_t s, bool f64, void *buf, const void *bias, int64_t rows, int64_t G,
                           int64_t rb_cols);
/* direction d's slice of a [D, B, H] / [B, D, H] state (by layout) and a
 * contiguous [B, H]: into the slice when to_slice, else out of it (src
 * NULL: zeros) */
cudaError_t lt_cu_rnn_state(cudaStream_t s, bool f64, void *dst, const void *src, bool to_slice, int layout,
                            int64_t B, int64_t D, int d, int64_t H);
cudaError_t lt_cu_lstm_fwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p);
cudaError_t lt_cu_lstm_bwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p);
cudaError_t lt_cu_rnn_fwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p);
cudaError_t lt_cu_rnn_bwd_step(cudaStream_t s, bool f64, const lt_cu_rnn_step *p);
/* the GRU's steps in two parts each: forward a (z, r and r's use) then,
 * after the (r*h) R_h^T product where not lbr, b (h and the new state);
 * backward a (every gate-input gradient but r's where not lbr) then b (r's,
 * after the product of the h part with R_h, not lbr only) */
cudaError_t lt_cu_gru_step(cudaStream_t s, bool f64, bool backward, int part, const lt_cu_rnn_step *p);
/* out[j] = sum over rows r of x[r * n + j]; out2 (when given) gets it too */
cudaError_t lt_cu_colsum(cudaStream_t s, bool f64, const void *x, int64_t rows, int64_t n, void *out, void *out2);
#ifdef __cplusplus
}
#endif

#endif
