/* Private helpers shared by the norm and image kernel families: element
 * data in a working precision (float for float32 tensors, double for every
 * other type), stores back with rounding and saturation, the numeric cores
 * instantiated for both working types, and numpy's MT19937 stream. */
#ifndef LT_CPU_NORM_UTIL_H
#define LT_CPU_NORM_UTIL_H

#include "../runtime.h"
#include "par.h"

/* Work above this many elements is split across OpenMP threads. */
#define LT_NU_PAR LT_PAR_ELEMS

/* t's elements as float / double: t's own memory when the dtype already
 * matches, else a converted copy in kernel scratch. NULL (after lt_k_fail)
 * when t holds no numbers or scratch runs out. */
const float *lt_nu_as_f32(lt_kctx *k, const lt_tensor *t);
const double *lt_nu_as_f64(lt_kctx *k, const lt_tensor *t);
/* Copies n = t->numel values into t, converting to its dtype (integers are
 * rounded to nearest and saturated, bool is v != 0). */
void lt_nu_store_f32(lt_tensor *t, const float *src);
void lt_nu_store_f64(lt_tensor *t, const double *src);
/* Scratch for n elements of size es with an overflow check; fails the kernel
 * on overflow or OOM. */
void *lt_nu_scratch(lt_kctx *k, int64_t n, size_t es);

/* Working-type views for kernels that run one code path for float32 (float)
 * and another for every other dtype (double): wide == !f32. */
const void *lt_nu_work_in(lt_kctx *k, const lt_tensor *t, bool f32);
/* Where to compute output o: its own data when o's dtype is the working
 * type, else scratch that lt_nu_work_store converts into o. */
void *lt_nu_work_out(lt_kctx *k, lt_tensor *o, bool f32);
void lt_nu_work_store(lt_tensor *o, const void *w, bool f32);
/* Allocates output i with tmpl's dtype and shape and fills it from vals. */
lt_status lt_nu_out_like(lt_kctx *k, int i, const lt_tensor *tmpl, const double *vals);

/* Expands p to the trailing shape dims[0..rank) by unidirectional numpy
 * broadcasting, as float / double. Returns NULL (after lt_k_fail naming
 * what) when p does not broadcast. */
const float *lt_nu_expand_f32(lt_kctx *k, const lt_tensor *p, int rank, const int64_t *dims, const char *what);
const double *lt_nu_expand_f64(lt_kctx *k, const lt_tensor *p, int rank, const int64_t *dims, const char *what);

/* A per-channel parameter vector of exactly n elements as double (any float
 * or integer dtype). NULL (after lt_k_fail) on a size mismatch. */
const double *lt_nu_vec(lt_kctx *k, const lt_tensor *p, int64_t n, const char *what);

/* A scalar input (any numeric dtype) as double; dflt when p is NULL. Fails
 * the kernel when p has more than one element. */
lt_status lt_nu_scalar(lt_kctx *k, const lt_tensor *p, double dflt, const char *what, double *out);

/* numpy.random.RandomState(seed).random_sample(): MT19937 with init_genrand
 * seeding and 53-bit doubles, so a seeded Dropout matches the ONNX
 * reference's mask bit for bit. */
typedef struct lt_mt19937 {
    uint32_t mt[624];
    int idx;
} lt_mt19937;
void lt_mt19937_seed(lt_mt19937 *g, uint32_t seed);
double lt_mt19937_double(lt_mt19937 *g);

/* ---- numeric cores (norm_core.c), one instance per working type ---- */
#define LT_NU_DECLARE(T, S)                                                                                \
    /* mean and biased variance of each of rows contiguous rows of length d */                             \
    void lt_nu_row_stats_##S(const T *x, int64_t rows, int64_t d, double *mean, double *var);              \
    /* mean and biased variance per channel of x viewed as [n, c, s] */                                    \
    void lt_nu_chan_stats_##S(const T *x, int64_t n, int64_t c, int64_t s, double *mean, double *var);     \
    /* y[i, j, k] = x[i, j, k] * a[q] + b[q] for x viewed as [n, c, s], with                              \
     * q = j (per_n false) or i * c + j (per_n true) */                                                     \
    void lt_nu_chan_affine_##S(const T *x, T *y, int64_t n, int64_t c, int64_t s, const double *a,         \
                               const double *b, int per_n);                                                \
    /* y[r, j] = (x[r, j] - mean[r]) * inv[r] * scale[(r % srows) * d + j] + bias[(r % brows) * d + j]     \
     * (bias may be NULL) */                                                                                \
    void lt_nu_row_norm_##S(const T *x, T *y, int64_t rows, int64_t d, const double *mean,                 \
                            const double *inv, const T *scale, int64_t srows, const T *bias, int64_t brows);

LT_NU_DECLARE(float, f32)
LT_NU_DECLARE(double, f64)
#undef LT_NU_DECLARE

/* ---- BatchNormalization in training mode on float32 (norm_batch.c) ---- */
/* Whether x viewed as [n, c, s] (not empty) takes these kernels. */
bool lt_nu_bn_fits(int64_t n, int64_t c, int64_t s);
/* Batch mean and biased variance per channel into bm, bv (c each) and
 * y = (x - bm) / sqrt(bv + eps) * g + b as y = x * a + (b - bm * a); y may
 * be x itself. */
lt_status lt_nu_bn_train_fwd_f32(lt_kctx *k, const float *x, float *y, int64_t n, int64_t c, int64_t s,
                                 const double *g, const double *b, double eps, double *bm, double *bv);
/* The gradient with the batch's statistics: ds = sum dy * xhat, db = sum dy
 * per channel, and (dx not NULL) dx = istd * (g dy - mean(g dy) - xhat *
 * mean(g dy xhat)); dx may be dy itself. */
lt_status lt_nu_bn_train_grad_f32(lt_kctx *k, const float *x, const float *dy, float *dx, int64_t n, int64_t c,
                                  int64_t s, const double *g, double eps, double *ds, double *db);

#endif
